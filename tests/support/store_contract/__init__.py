"""Helpers for the store contract and fault tests: build each transport over a throwaway home."""

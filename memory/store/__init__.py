"""The Hypatia protocol: one store interface (base.py) and its adapters."""

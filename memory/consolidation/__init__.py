"""Consolidation: transcripts, prompts, model-output parsing, cascade and work-unit rules."""

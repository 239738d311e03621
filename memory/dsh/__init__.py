"""DSH session logs: locate, decode (raw / multi-frame zstd, torn tails), normalise V0–V5."""

"""hypatia-lite's PostgreSQL backend: a shelf whose rows live in a PostgreSQL schema.

Nothing here imports psycopg at module level except :mod:`.backend` (loaded only when a
PostgreSQL shelf is opened); :mod:`.url` is pure string handling used by the shelf registry.
"""

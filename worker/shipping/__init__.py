"""Log shipping: the daemon beside DSH sends the complete bytes appended to each session log
into the state database as segments; workers on any machine read them through the same reader
(:class:`memory.dsh.source.SegmentSource`). See ``docs/shipping.md``.

- :mod:`worker.shipping.store`: the segment store interface and its records;
- :mod:`worker.shipping.sql`: the implementation on the state database (PostgreSQL, SQLite);
- :mod:`worker.shipping.shipper`: ship what a log file gained since its shipped position;
- :mod:`worker.shipping.source`: a shipped log generation as a reader source;
- :mod:`worker.shipping.prune`: what no job can still need, removed on an operator's request;
- :mod:`worker.shipping.follow`: a standalone shipping loop (tests, backfilling a home).
"""

"""The watcher: find session logs, read the bytes appended since the last scan, cut spans at turn
boundaries and hint the jobs (log → hints).

* :mod:`.watcher` — the :class:`~worker.watch.watcher.Watcher` loop (scan, schedule, reconcile);
* :mod:`.discovery` — which session directories exist; :mod:`.scan_digest` — the per-session
  scan of new bytes; :mod:`.scan_problems` — unreadable logs reported once;
* where a span ends (turn end, step fallback, idle-close) is a pure rule the jobs share:
  :mod:`memory.span_cut`;
* :mod:`.owed` — the work the state database says is still owed (the reconcile pass).
"""

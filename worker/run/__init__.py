"""The executors: three ways to run the same guarded jobs (:func:`worker.jobs.guard.run_job`).

* :mod:`.runner` — in process, a thread pool (``run`` and ``run --once``);
* :mod:`.once_parallel` and :mod:`.once_children` — ``run --once --jobs N``: sessions shared out
  to N forked processes, their totals summed;
* :mod:`.tasks` — the Celery app and one thin task per job kind (``daemon`` / ``worker``).
"""

"""The jobs (hints → store writes): every job a plain function of a
:class:`~worker.jobs.context.JobContext`, the one table of them (:mod:`.registry`) and the one
wrapper that adds lease, retry, metrics and failure records (:mod:`.guard`, ``run_job``).

Per job: :mod:`.log_span`, :mod:`.session_node`, :mod:`.consolidate`, :mod:`.cascade`,
:mod:`.retract` (with :mod:`.repair`), :mod:`.rewrite_job`, :mod:`.forget`, :mod:`.relog`;
shared: :mod:`.runtime` (the :class:`~worker.jobs.runtime.Runtime`), :mod:`.logread` (reading a
log window), :mod:`.store_writes` (get-before-create), :mod:`.storeview` (derived entries).
"""

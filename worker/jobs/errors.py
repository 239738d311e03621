"""The two ways a job fails that the guard tells apart (:mod:`worker.jobs.guard`).

Their own module so what raises or catches them (the job context, the lease keeper) does not
import the log reader they are best known from (:mod:`worker.jobs.logread` re-exports them).
"""

from __future__ import annotations


class PermanentJobError(Exception):
    """Retrying cannot help (a corrupt or unsupported log): recorded once, not retried."""


class TransientJobError(Exception):
    """Worth retrying later (the log could not be read, the watermark race was lost)."""

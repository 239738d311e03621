"""Content policy: what a message becomes before it is stored. Pure.

* :mod:`.blocks` — content blocks → plain text;
* :mod:`.caps` — the assistant-text cap and the token estimate;
* :mod:`.dates` — relative date words made absolute; UTC stamps;
* :mod:`.slugs` — slugs, scope names as hypatia stores them, one-line errors;
* :mod:`.policy` — a message body's order of operations: :func:`memory.redaction.redact` →
  :func:`~memory.content.caps.cap_assistant` → :func:`~memory.content.dates.absolutise_dates`
  (redacting before the cut means no secret survives as a short fragment).

The project scope of a session (its git top level) is the watcher's
(:mod:`worker.watch.project_scope`): it runs ``git``.
"""

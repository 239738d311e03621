"""Consolidation: transcripts, prompts, model-output parsing, cascade and work-unit rules.

Modules (pure, except three thin call helpers that take a ``memory.llm.ModelClient``):

* ``gates`` — ``turn_end_gate``, ``consolidation_span``: whether a turn end owes a run, and
  its span.
* ``transcript`` — ``build_transcript``: what the model sees.
* ``extraction`` — the summary + work-unit prompt, ``parse_extraction``, ``extract`` (call).
* ``members`` — ``summary_member_names``: the message entries a span summary points at.
* ``adjudication`` — candidate filtering, the verdict prompt and parser, ``adjudicate`` (call),
  ``adjudication_edges``.
* ``archive`` — the cascade query, ``plan_cascade_batch``, the archive prompt and parser,
  ``write_archive_text`` (call).

A consolidate job built on them::

    span = consolidation_span(last_consolidated, cut, session_end, last_logged)
    withdrawn = withdrawn_seqs(events_from_span_start_to_end_of_log)
    transcript = build_transcript(span_events, withdrawn=withdrawn, inherited_cut=cut,
                                  before=event_at_from_minus_1, max_input_tokens=..., tz=...)
    if transcript.empty: advance the watermark to span end; done
    try:
        result = extract(client, transcript.text, attempt, max_units=max_work_units_per_run)
    except ModelsNotConfigured:
        warn_models_not_configured(); done (watermark unchanged)
    covered_to = transcript.covered_to(span_end)
    summary = span_summary_name(session, span_start, covered_to)
    members = summary_member_names(span_events, session, from_seq=span_start,
                                   covered_to_seq=covered_to, base_ordinal=...,
                                   withdrawn=withdrawn, inherited_cut=cut)
    for unit in result.work_units:
        content = work_unit_content(unit.content, unit.classification)
        name = work_unit_name(unit.title, content)
        rows = store.similar(similar_query_text(unit.title, content), ...)
        candidates = filter_candidates(rows, name, dedup_max_distance)
        verdict = adjudicate(client, unit.title, content, candidates, attempt)
        if stores_unit(verdict): create it, then is_a / derivedFrom and
            adjudication_edges(verdict, name, nearest(verdict, candidates).name)

``RetryableModelError`` from ``extract`` means "retry the task" (the next attempt takes the next
route); ``PermanentModelError`` (including ``UnusableModelOutput``) means "fail it".
"""

"""Health, liveness first: which runner holds which lease, its host and heartbeat age — or "no
runner seen since …" (:mod:`worker.state.liveness`); then logging lag, failures and model calls,
or, where consolidation is off, that it is off and why instead of empty model plots."""

from __future__ import annotations

import datetime as dt
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from dsh_memory_worker.worker.console.base import Console, console_of, query_int
from dsh_memory_worker.worker.console.plots import bar_plot, buckets, dot_plot
from dsh_memory_worker.worker.consolidation_state import why_off_of
from dsh_memory_worker.worker.state.browse import BrowseRepo, Point
from dsh_memory_worker.worker.state.liveness import liveness


def age(seconds: float) -> str:
    """``42 s``, ``3 min``, ``5 h``, ``2 days`` ago."""
    if seconds < 90:
        return f"{max(0, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    if seconds < 36 * 3600:
        return f"{round(seconds / 3600)} h"
    return f"{round(seconds / 86400)} days"


def _health_rows(console: Console, hours: int) -> dict[str, Any]:
    runtime = console.runtime
    end = runtime.now()
    start = end - dt.timedelta(hours=hours)
    off = why_off_of(runtime.settings)
    with runtime.state.read() as repos:
        browse = BrowseRepo(repos.conn)
        alive = liveness(repos.conn, end, runtime.settings.lease_ttl_s)
        calls = browse.model_calls(start) if off is None else []
        audits = browse.audit_times(start)
        lags = browse.lag_by_activity(console.shelf, start)
        failures = repos.failures.list()
    count = 24
    plots = [
        dot_plot(
            "Logging lag by last activity (one dot per session)", "events behind", lags, start, end
        )
    ]
    if off is None:
        plots += [
            bar_plot(
                "Model calls",
                "calls",
                buckets([Point(p.at, 1.0) for p in calls], start, end, count),
                end,
            ),
            bar_plot(
                "Model tokens (input + output)", "tokens", buckets(calls, start, end, count), end
            ),
        ]
    plots.append(
        bar_plot(
            "Retractions, repairs and forgets",
            "audit records",
            buckets(audits, start, end, count),
            end,
        )
    )
    return {
        "runners": [
            {"runner": r, "beat": age((end - r.heartbeat_at).total_seconds())}
            for r in alive.runners
        ],
        "last_seen": alive.last_seen_at,
        "last_seen_owner": alive.last_seen_owner,
        "off": off,
        "plots": plots,
        "failures": failures,
        "hours": hours,
        "behind": sum(1 for p in lags if p.value > 0),
    }


async def health(request: Request) -> Response:
    console = console_of(request)
    hours = min(max(query_int(request.query_params.get("hours"), "hours", 24), 1), 24 * 90)
    found = await console.run(_health_rows, console, hours)
    return console.render(request, "health.html", **found)

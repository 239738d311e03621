"""Small plots as server-rendered SVG: the geometry here, the markup in ``templates/_plot.html``
(autoescaped like every page). No JavaScript and no plotting dependency, and a plot is text a test
can read: its bars and points are numbers in the page."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from dsh_memory_worker.worker.state.browse import Point

WIDTH = 560
HEIGHT = 140
PAD_LEFT = 48
PAD_BOTTOM = 22
PAD_TOP = 10


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str


@dataclass(frozen=True, slots=True)
class Dot:
    x: float
    y: float
    label: str


@dataclass(slots=True)
class Plot:
    title: str
    unit: str
    top: float
    start: str
    end: str
    bars: list[Bar] = field(default_factory=list)
    dots: list[Dot] = field(default_factory=list)
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def base(self) -> float:
        return self.height - PAD_BOTTOM

    @property
    def left(self) -> int:
        return PAD_LEFT

    @property
    def empty(self) -> bool:
        return not self.bars and not self.dots


def _label(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def buckets(
    points: Iterable[Point], start: dt.datetime, end: dt.datetime, count: int
) -> list[tuple[dt.datetime, float]]:
    """The sum of ``points``' values in each of ``count`` equal intervals of ``[start, end)``."""
    step = (end - start) / count
    sums = [0.0] * count
    for point in points:
        index = int((point.at - start) / step)
        if 0 <= index < count:
            sums[index] += point.value
    return [(start + step * i, total) for i, total in enumerate(sums)]


def bar_plot(
    title: str, unit: str, series: list[tuple[dt.datetime, float]], end: dt.datetime
) -> Plot:
    """One bar per interval of ``series`` (interval start, value)."""
    top = max([value for _, value in series] + [1.0])
    plot = Plot(title, unit, top, _label(series[0][0]) if series else "", _label(end))
    inner = WIDTH - PAD_LEFT - 4
    span = HEIGHT - PAD_BOTTOM - PAD_TOP
    slot = inner / max(len(series), 1)
    for i, (start, value) in enumerate(series):
        h = span * value / top
        plot.bars.append(
            Bar(
                round(PAD_LEFT + i * slot + 1, 1),
                round(plot.base - h, 1),
                round(max(slot - 2, 1), 1),
                round(h, 1),
                f"{_label(start)}: {value:g} {unit}",
            )
        )
    return plot


def dot_plot(
    title: str, unit: str, points: list[Point], start: dt.datetime, end: dt.datetime
) -> Plot:
    """One dot per point, time across, value up."""
    top = max([p.value for p in points] + [1.0])
    plot = Plot(title, unit, top, _label(start), _label(end))
    inner = WIDTH - PAD_LEFT - 8
    span = HEIGHT - PAD_BOTTOM - PAD_TOP
    width = (end - start).total_seconds() or 1.0
    for point in points:
        x = PAD_LEFT + 4 + inner * min(max((point.at - start).total_seconds() / width, 0.0), 1.0)
        y = plot.base - span * point.value / top
        plot.dots.append(
            Dot(round(x, 1), round(y, 1), f"{_label(point.at)}: {point.value:g} {unit}")
        )
    return plot

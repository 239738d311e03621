"""Where a scan stopped, and the sparse seq → byte-offset checkpoint index.

Both are small and JSON-able so the worker can store them next to its watermarks.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

DEFAULT_SPACING = 512


@dataclass(frozen=True, slots=True)
class ScanPosition:
    """Resume point of an incremental scan.

    ``offset`` is a frame (zstd) or line (raw) boundary; ``next_seq`` the first seq not yet
    returned. ``resume_seq`` is the seq of the first event stored at ``offset``: equal to
    ``next_seq`` except after a torn last zstd frame (or a line spanning frames), whose complete
    lines were returned but whose frame must be decoded again once it is finished.
    """

    offset: int
    next_seq: int
    resume_seq: int | None = None

    @property
    def start_seq(self) -> int:
        return self.next_seq if self.resume_seq is None else self.resume_seq

    def to_json(self) -> dict[str, int]:
        out = {"offset": self.offset, "next_seq": self.next_seq}
        if self.resume_seq is not None and self.resume_seq != self.next_seq:
            out["resume_seq"] = self.resume_seq
        return out

    @classmethod
    def from_json(cls, value: Any) -> ScanPosition:
        if not isinstance(value, dict):
            raise ValueError("a scan position must be a JSON object")
        offset, next_seq = value.get("offset"), value.get("next_seq")
        resume = value.get("resume_seq")
        if not isinstance(offset, int) or not isinstance(next_seq, int) or offset < 0:
            raise ValueError(f"not a scan position: {value!r}")
        if resume is not None and (not isinstance(resume, int) or resume > next_seq):
            raise ValueError(f"not a scan position: {value!r}")
        return cls(offset, next_seq, resume)


@dataclass(slots=True)
class CheckpointIndex:
    """Sparse checkpoints: decoding from byte ``offsets[i]`` yields ``seqs[i]`` first.

    A checkpoint is added at a frame start (zstd) or line start (raw) once at least ``spacing``
    events passed since the previous one. Rebuild it from the file whenever in doubt.
    """

    spacing: int = DEFAULT_SPACING
    seqs: list[int] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.seqs)

    def due(self, seq: int) -> bool:
        return not self.seqs or seq - self.seqs[-1] >= self.spacing

    def add(self, seq: int, offset: int) -> None:
        if not self.seqs or (seq > self.seqs[-1] and offset > self.offsets[-1]):
            self.seqs.append(seq)
            self.offsets.append(offset)

    def floor(self, seq: int) -> tuple[int, int] | None:
        """The last checkpoint ``(seq, offset)`` at or before ``seq``."""
        i = bisect.bisect_right(self.seqs, seq) - 1
        return None if i < 0 else (self.seqs[i], self.offsets[i])

    def to_json(self) -> dict[str, Any]:
        """Delta-encoded lists (small even for million-event logs)."""
        return {
            "spacing": self.spacing,
            "seqs": _deltas(self.seqs),
            "offsets": _deltas(self.offsets),
        }

    @classmethod
    def from_json(cls, value: Any) -> CheckpointIndex:
        if not isinstance(value, dict):
            raise ValueError("a checkpoint index must be a JSON object")
        spacing = value.get("spacing", DEFAULT_SPACING)
        seqs, offsets = value.get("seqs", []), value.get("offsets", [])
        ok = (
            isinstance(spacing, int)
            and spacing > 0
            and isinstance(seqs, list)
            and isinstance(offsets, list)
            and len(seqs) == len(offsets)
            and all(isinstance(v, int) and v >= 0 for v in [*seqs, *offsets])
        )
        if not ok:
            raise ValueError("malformed checkpoint index")
        return cls(spacing, _undelta(seqs), _undelta(offsets))


def _deltas(values: list[int]) -> list[int]:
    return [b - a for a, b in zip([0, *values], values, strict=False)]


def _undelta(values: list[int]) -> list[int]:
    out: list[int] = []
    total = 0
    for value in values:
        total += value
        out.append(total)
    return out

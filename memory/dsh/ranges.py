"""``sourceEventSeqs`` storage encoding (format doc §1.3): runs of three or more consecutive seqs
in a strictly increasing list are stored as ``[first, last]`` pairs."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Final


class RangeError(ValueError):
    """A ``sourceEventSeqs`` value that is not a valid (range-encoded) seq list."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class SeqRanges:
    """A decoded ``sourceEventSeqs`` list kept as its ranges: ``[[5, 8], 12]`` is the pieces
    ``(5, 8), (12, 12)``, in the order written. Membership is by comparison (a binary search when
    the pieces ascend, as range form requires), so a range costs the same whatever its width;
    iterating yields every seq in order (``len`` and ``bool`` do not expand). Equal to a tuple
    or another ``SeqRanges`` of the same seqs in the same order."""

    __slots__ = ("_ascending", "_firsts", "_pieces", "_size")

    def __init__(self, pieces: Iterable[tuple[int, int]] = ()) -> None:
        self._pieces = tuple(pieces)
        self._firsts = [first for first, _ in self._pieces]
        self._ascending = all(a[1] < b[0] for a, b in itertools.pairwise(self._pieces))
        self._size = sum(last - first + 1 for first, last in self._pieces)

    def __contains__(self, seq: object) -> bool:
        if not _is_int(seq):
            return False
        assert isinstance(seq, int)
        if self._ascending:
            at = bisect.bisect_right(self._firsts, seq) - 1
            return at >= 0 and seq <= self._pieces[at][1]
        return any(first <= seq <= last for first, last in self._pieces)

    def __iter__(self) -> Iterator[int]:
        for first, last in self._pieces:
            yield from range(first, last + 1)

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    @property
    def pieces(self) -> tuple[tuple[int, int], ...]:
        return self._pieces

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SeqRanges):
            return self._pieces == other._pieces or (
                len(self) == len(other) and tuple(self) == tuple(other)
            )
        if isinstance(other, tuple):
            return len(self) == len(other) and tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._pieces)

    def __repr__(self) -> str:
        shown = ", ".join(str(f) if f == t else f"{f}-{t}" for f, t in self._pieces)
        return f"SeqRanges({shown})"

    def __reduce__(self) -> tuple[type[SeqRanges], tuple[tuple[tuple[int, int], ...]]]:
        return (SeqRanges, (self._pieces,))


NO_SEQS: Final = SeqRanges()


def decode_seq_ranges(value: object, below: int | None = None) -> SeqRanges:
    """Expand a stored ``sourceEventSeqs`` value (plain or range form) into seqs.

    ``[[5, 8], 12]`` → the seqs ``5, 6, 7, 8, 12`` as :class:`SeqRanges` (never expanded); a
    plain list keeps its order. Raises
    :class:`RangeError` for anything malformed: a non-list, a negative or non-integer element, a
    pair with ``first > last``, or a range-form list that does not expand strictly increasing.

    ``below`` is the seq of the row that carries the list: every cited seq is ``< seq`` (the
    format, §1.3), so the log holds nothing the row could cite at or after it. A citation
    reaching there is checked *before* anything is expanded — a ~70-byte ``[[0, 10^12]]`` never
    becomes a list — and raises :class:`CitesPastRow` carrying the citation cut to the seqs
    below the row (a marker still withdraws what it cites of the log; the rest is damage).
    """
    if not isinstance(value, list):
        raise RangeError(f"sourceEventSeqs must be a list, got {type(value).__name__}")
    past = False
    pieces: list[tuple[int, int]] = []
    ranged = False
    for item in value:
        if _is_int(item):
            first = last = item
        elif isinstance(item, list) and len(item) == 2 and _is_int(item[0]) and _is_int(item[1]):
            first, last = item[0], item[1]
            if first < 0 or first > last:
                raise RangeError(f"bad range [{first}, {last}] in sourceEventSeqs")
            ranged = True
        else:
            raise RangeError(f"bad element {item!r} in sourceEventSeqs")
        if first < 0:
            raise RangeError(f"negative seq {first} in sourceEventSeqs")
        if below is not None and last >= below:
            past = True
            last = below - 1
            if first > last:
                continue
        pieces.append((first, last))
    # Strictly increasing, checked on the pieces (never expanded): each starts past the last.
    if ranged and any(a[1] >= b[0] for a, b in itertools.pairwise(pieces)):
        raise RangeError("range-encoded sourceEventSeqs do not expand strictly increasing")
    seqs = SeqRanges(pieces)
    if past:
        raise CitesPastRow(seqs)
    return seqs


class CitesPastRow(RangeError):
    """A ``sourceEventSeqs`` list citing a seq at or after its own row; ``kept`` is the citation
    cut to the seqs before the row."""

    def __init__(self, kept: SeqRanges) -> None:
        super().__init__("sourceEventSeqs cite seqs at or after the row itself (not in the log)")
        self.kept = kept


def encode_seq_ranges(seqs: Iterable[int]) -> list[int | list[int]]:
    """Store a seq list the way DSH writers do: compress runs of ≥ 3 only when the whole list is
    strictly increasing; otherwise return it verbatim."""
    values: Sequence[int] = list(seqs)
    if any(b <= a for a, b in itertools.pairwise(values)):
        return list(values)
    out: list[int | list[int]] = []
    i = 0
    n = len(values)
    while i < n:
        j = i
        while j + 1 < n and values[j + 1] == values[j] + 1:
            j += 1
        if j - i + 1 >= 3:
            out.append([values[i], values[j]])
        else:
            out.extend(values[i : j + 1])
        i = j + 1
    return out

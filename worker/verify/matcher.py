"""Leaks, and finding the fragments of the messages that must be gone in a text or in bytes."""

from __future__ import annotations

import mmap
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from dsh_memory_worker.worker.verify.fragments import anchor, bounded, phrase_pattern, words
from dsh_memory_worker.worker.verify.sources import Gone

#: Bytes read per step of a file scan, and how far a phrase may reach from its anchor word.
CHUNK = 8 << 20
_REACH = 1024

Progress = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class Leak:
    """One trace of a message that must be gone: ``where`` it was found (an entry, a statement,
    a file, a state-database column), how (``via``), whose text, which fragment, and why that
    place's legitimate sources do not explain it (``unexplained``; empty for a name that must
    not exist)."""

    where: str
    via: str
    session_id: str
    message: str
    seq: int | None
    why: str
    fragment: str
    unexplained: str = ""

    def line(self) -> str:
        seq = f"seq {self.seq}, " if self.seq is not None else ""
        what = f'"{self.fragment}"' if self.fragment else "the entry itself is still there"
        message = f", {self.message}" if self.message else ""
        because = f" — not explained: {self.unexplained}" if self.unexplained else ""
        return (
            f"leak: {self.where} ({self.via}): session {self.session_id}{message} "
            f"({seq}{self.why}): {what}{because}"
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class TextMatcher:
    """Finds phrases in texts: a text's runs of words are looked up in a table of every phrase,
    so one text costs O(its words), whatever the number of messages."""

    def __init__(self, gone: Iterable[Gone]) -> None:
        self._phrases: dict[str, list[Gone]] = {}
        for message in gone:
            for phrase in message.fragments.phrases:
                self._phrases.setdefault(phrase, []).append(message)
        #: first word of a phrase → the lengths of the phrases starting with it
        self._starts: dict[str, list[int]] = {}
        for phrase in self._phrases:
            first, *rest = phrase.split()
            sizes = self._starts.setdefault(first, [])
            if len(rest) + 1 not in sizes:
                sizes.append(len(rest) + 1)

    def __bool__(self) -> bool:
        return bool(self._phrases)

    def find(self, text: str) -> Iterator[tuple[Gone, str]]:
        """Each (message, phrase) found in ``text`` (once each)."""
        if not self._phrases or not text:
            return
        found = words(text)
        seen: set[str] = set()
        for start, word in enumerate(found):
            for size in self._starts.get(word, ()):
                phrase = " ".join(found[start : start + size])
                if phrase in seen or phrase not in self._phrases:
                    continue
                seen.add(phrase)
                for message in self._phrases[phrase]:
                    yield message, phrase


@dataclass(frozen=True, slots=True)
class _Needle:
    message: Gone
    fragment: str
    pattern: re.Pattern[bytes] | None  # None: the anchor match is the whole fragment


class ByteMatcher:
    """Finds phrases and terms in raw bytes, case-insensitively: each chunk of a file is folded
    to lowercase ASCII and searched for each anchor word with ``bytes.find`` (C speed), then each
    candidate phrase is checked around its anchor."""

    def __init__(self, gone: Iterable[Gone], *, terms: bool) -> None:
        needles: dict[str, list[_Needle]] = {}
        for message in gone:
            for phrase in message.fragments.phrases:
                pattern = re.compile(phrase_pattern(phrase))
                needles.setdefault(anchor(phrase), []).append(_Needle(message, phrase, pattern))
            for term in message.fragments.byte_terms() if terms else ():
                needles.setdefault(term, []).append(_Needle(message, term, None))
        self._needles = needles
        #: anchor word → its byte forms in a folded chunk (outside ASCII: as written, upper case
        #: and capitalised, since folding leaves those bytes alone)
        self._forms = {
            word: sorted(
                {form.encode().lower() for form in (word, word.upper(), word.capitalize())}
            )
            for word in needles
        }

    def __bool__(self) -> bool:
        return bool(self._needles)

    def scan(self, path: Path, progress: Progress | None = None) -> list[tuple[Gone, str]]:
        """Each (message, fragment) whose bytes are in the file at ``path``."""
        if not self._needles:
            return []
        with path.open("rb") as handle:
            size = path.stat().st_size
            if size == 0:
                return []
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return self._scan(data, size, progress)

    def _scan(
        self, data: mmap.mmap, size: int, progress: Progress | None
    ) -> list[tuple[Gone, str]]:
        found: dict[tuple[str, str, str], tuple[Gone, str]] = {}
        start = 0
        while start < size:
            end = min(size, start + CHUNK)
            base = max(0, start - _REACH)
            chunk = data[base : min(size, end + _REACH)].lower()
            for word, forms in self._forms.items():
                for form in forms:
                    for at in _positions(chunk, form, start - base, end - base):
                        self._check(chunk, at, at + len(form), self._needles[word], found)
            if progress is not None:
                progress(end - start)
            start = end
        return list(found.values())

    @staticmethod
    def _check(
        chunk: bytes,
        at: int,
        until: int,
        needles: list[_Needle],
        found: dict[tuple[str, str, str], tuple[Gone, str]],
    ) -> None:
        for needle in needles:
            key = (needle.message.session_id, needle.message.name, needle.fragment)
            if key in found:
                continue
            if needle.pattern is None or any(
                bounded(chunk, m.start(), m.end())
                for m in needle.pattern.finditer(chunk, max(0, at - _REACH), until + _REACH)
            ):
                found[key] = (needle.message, needle.fragment)


def _positions(chunk: bytes, form: bytes, start: int, end: int) -> Iterator[int]:
    """Where ``form`` starts in ``chunk[start:end]`` (it may run past ``end``)."""
    at = chunk.find(form, start)
    while 0 <= at < end:
        yield at
        at = chunk.find(form, at + 1)

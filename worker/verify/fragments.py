"""Distinctive fragments of a withdrawn text, and how to find them in text and in raw bytes.

The rule (README, "Proving that forgetting took effect"):

- Words are runs of letters and digits (what SQLite's ``unicode61`` tokenizer indexes), compared
  lowercased. Placeholders the content policy inserts (``[REDACTED:…]``, ``[...truncated N
  chars]``, ``[turn interrupted mid-stream]``) split the text: no fragment spans one.
- *Phrases*: consecutive runs of :data:`PHRASE_WORDS` words (the last run ends at the text's last
  word), kept when their letters total at least :data:`PHRASE_MIN_CHARS`; a text shorter than
  one run is one phrase when it has at least :data:`SHORT_MIN_WORDS` words and
  :data:`PHRASE_MIN_CHARS` letters. At most :data:`MAX_PHRASES` per message, spread evenly and
  always including the first (a fallback title is the first words of the first prompt).
- *Terms*: words of at least :data:`TERM_MIN_CHARS` characters that are not only digits, plus
  their Porter stems as the shelf's full-text index stores them (SQLite's own ``porter``
  tokenizer tells), at most :data:`MAX_TERMS` per message, longest first. Terms are searched
  only in the raw bytes of the shelf, where the index keeps single terms, not phrases.
- A fragment that also occurs in a kept (not withdrawn) message of the same session proves
  nothing and is dropped.

Byte patterns are case-insensitive (the index stores lowercased terms; ``bytes`` regexes fold
only ASCII, so a non-ASCII letter matches either case of its UTF-8 form) and let a phrase's
words be separated by any run of non-word bytes, JSON escapes (``\\n``, ``\\u0009``) included.
A phrase found in bytes must also *begin and end at word boundaries* (:func:`bounded`): the
character before it and the one after it are not letters or digits (a JSON escape before it is
a boundary too). That is the rule a phrase is found by in text (runs of whole words), so "… step
1" is not found inside "… step 12" in bytes either: a phrase that live text legitimately holds as
part of a longer one is no leak, and a copy of the phrase itself still is.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from dsh_memory_worker.memory import constants as C

PHRASE_WORDS = 5
PHRASE_MIN_CHARS = 16
SHORT_MIN_WORDS = 3
MAX_PHRASES = 8
TERM_MIN_CHARS = 8
STEM_MIN_CHARS = 6
MAX_TERMS = 6

_WORD = re.compile(r"[^\W_]+")
_PLACEHOLDER = re.compile(
    "|".join(
        (
            r"\[REDACTED:[^\]\n]*\]",
            re.escape(C.TRUNCATION_MARKER.strip()).replace(re.escape("{omitted}"), r"\d+"),
            re.escape(C.INTERRUPTED_SUFFIX),
            re.escape(C.TOOL_CALLS_ONLY),
        )
    )
)
#: non-ASCII characters that separate words, in UTF-8: Latin-1 punctuation and symbols
#: (U+0080–U+00BF, × ÷), general punctuation (U+2000–U+206F: dashes, quotes, …), symbols,
#: arrows, box drawing and dingbats (U+2100–U+2BFF: ✅ ❌), CJK punctuation (U+3000–U+303F),
#: full-width punctuation (，！？：；) and emoji (U+1F000–U+1FAFF). A letter of another script is
#: never a separator, so a phrase does not match across a word in Cyrillic or Greek.
_NON_ASCII_SEPARATORS = (
    rb"\xc2[\x80-\xbf]|\xc3[\x97\xb7]|\xe2\x80[\x80-\xbf]|\xe2\x81[\x80-\xaf]"
    rb"|\xe2[\x84-\xaf][\x80-\xbf]|\xe3\x80[\x80-\xbf]|\xef\xbc[\x81-\x8f\x9a-\xa0\xbb-\xbf]"
    rb"|\xef\xbd[\x80\x9b-\xa5]|\xf0\x9f[\x80-\xab][\x80-\xbf]"
)
#: between two words of a phrase: a JSON escape, a non-word ASCII byte or a non-ASCII
#: punctuation mark or symbol
_SEPARATOR = (
    rb"(?:\\[nrtbf\\/\"]|\\u[0-9a-fA-F]{4}|[^0-9A-Za-z\x80-\xff]|"
    + _NON_ASCII_SEPARATORS
    + rb"){1,16}"
)


@dataclass(frozen=True, slots=True)
class Fragments:
    """What to look for: ``phrases`` (space-joined lowercased words) and ``terms`` (single
    lowercased words with their stems, for raw bytes only)."""

    phrases: tuple[str, ...] = ()
    #: each ``(word,)`` or ``(word, its stem)``
    terms: tuple[tuple[str, ...], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.phrases or self.terms)

    def byte_terms(self) -> list[str]:
        """Every term and stem, as a byte scan looks for them."""
        return [t for group in self.terms for t in group]


def words(text: str) -> list[str]:
    """The lowercased words of ``text``."""
    return [w.lower() for w in _WORD.findall(text)]


def normalised(text: str) -> str:
    """``text`` as its words joined by one space, with a space at each end (for ``in``)."""
    return " " + " ".join(words(text)) + " "


def _segments(text: str) -> list[list[str]]:
    return [found for part in _PLACEHOLDER.split(text) if (found := words(part))]


def _letters(run: Iterable[str]) -> int:
    return sum(len(w) for w in run)


def _phrases(text: str) -> list[str]:
    runs: list[str] = []
    for seg in _segments(text):
        if len(seg) < PHRASE_WORDS:
            if len(seg) >= SHORT_MIN_WORDS and _letters(seg) >= PHRASE_MIN_CHARS:
                runs.append(" ".join(seg))
            continue
        starts = list(range(0, len(seg) - PHRASE_WORDS + 1, PHRASE_WORDS))
        if starts[-1] != len(seg) - PHRASE_WORDS:
            starts.append(len(seg) - PHRASE_WORDS)
        for start in starts:
            run = seg[start : start + PHRASE_WORDS]
            if _letters(run) >= PHRASE_MIN_CHARS:
                runs.append(" ".join(run))
    unique = list(dict.fromkeys(runs))
    if len(unique) <= MAX_PHRASES:
        return unique
    step = (len(unique) - 1) / (MAX_PHRASES - 1)
    return [unique[round(k * step)] for k in range(MAX_PHRASES)]


def porter_stems(terms: Iterable[str]) -> dict[str, str]:
    """term → the term SQLite's ``porter unicode61`` tokenizer indexes for it."""
    found: dict[str, str] = {}
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
        for term in terms:
            conn.execute("DELETE FROM t")
            conn.execute("INSERT INTO t(x) VALUES (?)", (term,))
            row = conn.execute("SELECT term FROM v").fetchone()
            if row is not None:
                found[term] = str(row[0])
    finally:
        conn.close()
    return found


def _terms(text: str) -> list[tuple[str, ...]]:
    candidates = {
        w for seg in _segments(text) for w in seg if len(w) >= TERM_MIN_CHARS and not w.isdigit()
    }
    chosen = sorted(candidates, key=lambda w: (-len(w), w))[:MAX_TERMS]
    stems = porter_stems(chosen)
    terms: list[tuple[str, ...]] = []
    for term in chosen:
        stem = stems.get(term, term)
        terms.append((term, stem) if stem != term and len(stem) >= STEM_MIN_CHARS else (term,))
    return terms


def fragments_of(text: str, kept: Iterable[str] = ()) -> Fragments:
    """The fragments of ``text`` by the rule above; ``kept`` are the texts of the session's
    kept messages (fragments found in them are dropped)."""
    kept_text = [normalised(k) for k in kept]
    kept_words = {w for k in kept_text for w in k.split()}
    phrases = tuple(p for p in _phrases(text) if not any(f" {p} " in k for k in kept_text))
    terms = tuple(t for t in _terms(text) if not any(k.startswith(t[-1]) for k in kept_words))
    return Fragments(phrases, terms)


def _char_pattern(char: str) -> bytes:
    if char.isascii():
        return re.escape(char.encode())
    forms = {char, char.lower(), char.upper()}
    return b"(?:" + b"|".join(re.escape(f.encode()) for f in sorted(forms)) + b")"


def word_pattern(word: str) -> bytes:
    """A bytes regex for one word, case-insensitive also outside ASCII."""
    return b"".join(_char_pattern(c) for c in word)


def phrase_pattern(phrase: str) -> bytes:
    """A bytes regex for a phrase: its words in order, separated by non-word bytes."""
    return _SEPARATOR.join(word_pattern(w) for w in phrase.split())


_WORD_CHAR = re.compile(r"[^\W_]")
_ESCAPE_BEFORE = re.compile(rb"(?:\\[nrtbf\\/\"]|\\u[0-9a-fA-F]{4})\Z")


def _is_word_char(data: bytes, at: int, backwards: bool) -> bool:
    """Whether the character ending just before (``backwards``) or starting at ``at`` is a
    letter or digit. The ends of ``data`` and bytes that are not UTF-8 count as boundaries: what
    cannot be read never hides a leak."""
    if backwards:
        if at <= 0:
            return False
        start = at - 1
        while start > 0 and at - start < 4 and 0x80 <= data[start] < 0xC0:
            start -= 1
        piece = data[start:at]
    else:
        if at >= len(data):
            return False
        lead = data[at]
        size = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        piece = data[at : at + size]
    try:
        char = piece.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return len(char) == 1 and _WORD_CHAR.match(char) is not None


def bounded(data: bytes, start: int, end: int) -> bool:
    """Whether the match ``data[start:end]`` begins and ends at word boundaries (see the module
    docstring); a JSON escape just before it (``\\n``, ``\\u2014``) is a boundary."""
    if _is_word_char(data, start, backwards=True) and not _ESCAPE_BEFORE.search(
        data, max(0, start - 6), start
    ):
        return False
    return not _is_word_char(data, end, backwards=False)


def anchor(fragment: str) -> str:
    """The longest word of a fragment (what a byte scan looks for first)."""
    return max(fragment.split(), key=len)

"""The redaction rules, read once from the package's data files (``memory/redaction/data/*.toml``),
each pattern compiled the first time it is needed.

A data file holds ``[[rules]]`` tables (fields described at the top of ``data/local.toml``) and
at most one ``[allowlist]`` applied to every rule. Files are read in :data:`RULE_FILES` order.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import tomllib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib import resources
from typing import Any, Final

import ahocorasick

DATA_PACKAGE: Final = "dsh_memory_worker.memory.redaction"
#: The rule files, in precedence order: token shapes of named providers, the chat-text rules, then
#: the credentials of configuration files (Docker, kubeconfig, .netrc).
RULE_FILES: Final = ("providers.toml", "local.toml", "config_files.toml")


@dataclass(frozen=True)
class Allowlist:
    """Findings a rule (or every rule) lets through: one of ``sources`` searched in the secret
    (or the whole match, when ``target`` is ``"match"``), or one of ``stopwords`` contained in the
    lower-cased secret."""

    sources: tuple[str, ...] = ()
    stopwords: tuple[str, ...] = ()
    target: str = "secret"

    @cached_property
    def regexes(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(source, re.ASCII) for source in self.sources)

    def allows(self, secret: str, match: str) -> bool:
        text = match if self.target == "match" else secret
        if any(p.search(text) for p in self.regexes):
            return True
        low = secret.lower()
        return any(word in low for word in self.stopwords)


@dataclass(frozen=True)
class Rule:
    """One secret shape. ``anchored``: every match starts where one of ``keywords`` starts, so the
    engine tries the pattern only at those places instead of searching the whole text."""

    id: str
    label: str
    source: str
    keywords: tuple[str, ...]
    secret_group: int = 0
    entropy: float = 0.0
    allowlists: tuple[Allowlist, ...] = field(default=())
    generic: bool = False
    anchored: bool = True
    #: A regex the secret, decoded as base64, must match (``base64Decoded``; empty: no check).
    decoded_source: str = ""

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.source, re.ASCII)

    @cached_property
    def decoded(self) -> re.Pattern[str] | None:
        return re.compile(self.decoded_source) if self.decoded_source else None

    def decodes(self, secret: str) -> bool:
        """True when the rule has no ``base64Decoded`` check or ``secret`` passes it."""
        if self.decoded is None:
            return True
        text = base64_text(secret)
        return text is not None and self.decoded.search(text) is not None


@dataclass(frozen=True)
class RuleSet:
    """Every rule in precedence order and the allowlists applied to all of them."""

    rules: tuple[Rule, ...]
    allowlists: tuple[Allowlist, ...]

    @cached_property
    def _always(self) -> frozenset[int]:
        return frozenset(rank for rank, rule in enumerate(self.rules) if not rule.keywords)

    @cached_property
    def _keyword_automaton(self) -> Any:
        by_keyword: dict[str, set[int]] = {}
        for rank, rule in enumerate(self.rules):
            for keyword in rule.keywords:
                by_keyword.setdefault(keyword, set()).add(rank)
        automaton = ahocorasick.Automaton()
        for keyword, ranks in by_keyword.items():
            automaton.add_word(keyword, (len(keyword), frozenset(ranks)))
        automaton.make_automaton()
        return automaton

    def compile(self) -> None:
        """Compile every pattern now (each is otherwise compiled the first time it is needed):
        for benchmarks, or for a parent process before it forks its children."""
        for rule in self.rules:
            _ = rule.pattern
            _ = rule.decoded
            for allowlist in rule.allowlists:
                _ = allowlist.regexes
        for allowlist in self.allowlists:
            _ = allowlist.regexes
        _ = self._keyword_automaton

    def candidates(self, low: str) -> dict[int, list[int]]:
        """The rules to run on a text whose lower-cased form is ``low`` (one Aho-Corasick pass):
        rank → the sorted offsets in ``low`` where one of the rule's keywords starts (empty for a
        rule without keywords, which always runs)."""
        starts: dict[int, set[int]] = {rank: set() for rank in self._always}
        for end, (size, ranks) in self._keyword_automaton.iter(low):
            for rank in ranks:
                starts.setdefault(rank, set()).add(end - size + 1)
        return {rank: sorted(starts[rank]) for rank in sorted(starts)}


def base64_text(value: str) -> str | None:
    """``value`` decoded as standard base64 (a lone trailing character, which carries no whole
    byte, dropped; missing padding added), the bytes read as UTF-8 with replacement; None when it
    is not base64."""
    body = value.rstrip("=")
    body = body[: len(body) - 1] if len(body) % 4 == 1 else body
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw.decode("utf-8", "replace")


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text``."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def _allowlist(raw: Mapping[str, Any]) -> Allowlist:
    return Allowlist(
        sources=tuple(str(p) for p in raw.get("regexes", ())),
        stopwords=tuple(str(w).lower() for w in raw.get("stopwords", ())),
        target=str(raw.get("regexTarget", "secret")),
    )


def _rules(raw_rules: Sequence[Mapping[str, Any]]) -> list[Rule]:
    rules: list[Rule] = []
    for raw in raw_rules:
        rule_id = str(raw["id"])
        rules.append(
            Rule(
                id=rule_id,
                label=str(raw.get("label") or rule_id.split("-", 1)[0]),
                source=str(raw["regex"]),
                keywords=tuple(str(k).lower() for k in raw.get("keywords", ())),
                secret_group=int(raw.get("secretGroup", 0)),
                entropy=float(raw.get("entropy", 0.0)),
                allowlists=tuple(_allowlist(a) for a in raw.get("allowlists", ())),
                generic=bool(raw.get("generic", False)),
                anchored=bool(raw.get("anchored", True)),
                decoded_source=str(raw.get("base64Decoded", "")),
            )
        )
    return rules


def _read(name: str) -> dict[str, Any]:
    text = resources.files(DATA_PACKAGE).joinpath("data", name).read_text(encoding="utf-8")
    return tomllib.loads(text)


@cache
def load() -> RuleSet:
    """The packaged rules in precedence order (the first rule of an overlap names the marker):
    token shapes before generic key/value rules, file order within each kind."""
    found: list[Rule] = []
    allowlists: list[Allowlist] = []
    for name in RULE_FILES:
        data = _read(name)
        found += _rules(data.get("rules", ()))
        if "allowlist" in data:
            allowlists.append(_allowlist(data["allowlist"]))
    rules = [r for r in found if not r.generic] + [r for r in found if r.generic]
    return RuleSet(tuple(rules), tuple(allowlists))

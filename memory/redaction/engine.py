"""Find secrets in a text and replace each with ``[REDACTED:secret:<label>]``.

Every rule of :func:`memory.redaction.rules.load` runs on the original text, and only when one of
its keywords occurs in the lower-cased text (one Aho-Corasick pass finds them all); an anchored rule
is tried only where one of its keywords starts (``pattern.match`` at each such offset, skipping
offsets inside its previous match, which finds exactly what ``finditer`` would). A finding is the
rule's secret group, kept unless its entropy is too low, it fails the rule's base64 check, or an
allowlist lets it through.
Overlapping findings merge into one replaced span, labelled by the first rule in precedence order.
Markers already in the text are never matched again, so ``redact(redact(t)) == redact(t)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from dsh_memory_worker.memory.redaction.rules import Allowlist, Rule, RuleSet, load, shannon_entropy

MARKER_PREFIX: Final = "[REDACTED:"
_MARKER: Final = re.compile(r"\[REDACTED:[A-Za-z0-9:._-]*\]")


@dataclass(frozen=True, order=True)
class Finding:
    """``text[start:end]`` is a secret; ``rank`` is its rule's place in precedence order."""

    start: int
    end: int
    rank: int
    rule_id: str
    label: str


def _secret_span(rule: Rule, match: re.Match[str]) -> tuple[int, int] | None:
    if rule.secret_group:
        if rule.secret_group > (match.re.groups or 0) or match.group(rule.secret_group) is None:
            return None
        return match.span(rule.secret_group)
    for index in range(1, (match.re.groups or 0) + 1):
        if match.group(index):
            return match.span(index)
    return match.span()


def _allowed(lists: tuple[Allowlist, ...], secret: str, match: re.Match[str]) -> bool:
    return any(allowlist.allows(secret, match.group(0)) for allowlist in lists)


def _matches(rule: Rule, text: str, starts: list[int] | None) -> Iterator[re.Match[str]]:
    """``rule.pattern.finditer(text)``; with ``starts``, the same matches found by trying the
    pattern only at those offsets (valid for an anchored rule)."""
    if starts is None:
        yield from rule.pattern.finditer(text)
        return
    match_at = rule.pattern.match
    after = 0
    for start in starts:
        if start < after:
            continue
        match = match_at(text, start)
        if match is not None:
            after = match.end()
            yield match


def _rule_findings(
    rank: int, rule: Rule, text: str, starts: list[int] | None, shared: tuple[Allowlist, ...]
) -> list[Finding]:
    found: list[Finding] = []
    for match in _matches(rule, text, starts):
        span = _secret_span(rule, match)
        if span is None or span[0] == span[1]:
            continue
        secret = text[span[0] : span[1]]
        if rule.entropy and shannon_entropy(secret) <= rule.entropy:
            continue
        if not rule.decodes(secret):
            continue
        if _allowed(shared, secret, match) or _allowed(rule.allowlists, secret, match):
            continue
        found.append(Finding(span[0], span[1], rank, rule.id, rule.label))
    return found


def find_secrets(
    text: str, rules: RuleSet | None = None, *, prefilter: bool = True
) -> list[Finding]:
    """Every finding in ``text``, sorted by position. ``prefilter=False`` searches the whole text
    with every rule whatever its keywords (for tests: the keyword skip and the anchored search must
    never change a result)."""
    ruleset = load() if rules is None else rules
    if not text:
        return []
    low = text.lower()
    # Offsets in ``low`` are offsets in ``text`` unless lower-casing changed the length ("İ").
    aligned = prefilter and len(low) == len(text)
    if prefilter:
        plan = ruleset.candidates(low)
    else:
        plan = {rank: [] for rank in range(len(ruleset.rules))}
    markers = [m.span() for m in _MARKER.finditer(text)] if "[redacted:" in low else []
    found: list[Finding] = []
    for rank, starts in plan.items():
        rule = ruleset.rules[rank]
        at = starts if aligned and rule.anchored and rule.keywords else None
        for finding in _rule_findings(rank, rule, text, at, ruleset.allowlists):
            if not any(s < finding.end and finding.start < e for s, e in markers):
                found.append(finding)
    return sorted(found)


def _merged(findings: list[Finding]) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    best = -1
    for f in findings:
        if spans and f.start < spans[-1][1]:
            start, end, label = spans[-1]
            if f.rank < best:
                best, label = f.rank, f.label
            spans[-1] = (start, max(end, f.end), label)
        else:
            spans.append((f.start, f.end, f.label))
            best = f.rank
    return spans


#: Operator patterns (setting ``redact_extra_patterns``), applied after the rules.
_extra_patterns: tuple[re.Pattern[str], ...] = ()
EXTRA_PLACEHOLDER: Final = "[REDACTED:custom]"


def set_extra_redactions(patterns: Iterable[str]) -> None:
    """Make :func:`redact` also replace every match of ``patterns`` with ``[REDACTED:custom]``
    (process-wide; the worker sets it from its settings when a runtime is built)."""
    global _extra_patterns
    _extra_patterns = tuple(re.compile(p) for p in patterns if p)


def redact(text: str, rules: RuleSet | None = None) -> str:
    """``text`` with every secret value replaced by ``[REDACTED:secret:<label>]``; key names,
    separators, quotes and the surrounding text stay as written; then every match of the
    operator's extra patterns becomes ``[REDACTED:custom]``."""
    out = _redact_rules(text, rules)
    for pattern in _extra_patterns:
        out = pattern.sub(EXTRA_PLACEHOLDER, out)
    return out


def _redact_rules(text: str, rules: RuleSet | None) -> str:
    findings = find_secrets(text, rules)
    if not findings:
        return text
    parts: list[str] = []
    at = 0
    for start, end, label in _merged(findings):
        parts.append(text[at:start])
        parts.append(f"{MARKER_PREFIX}secret:{label}]")
        at = end
    parts.append(text[at:])
    return "".join(parts)

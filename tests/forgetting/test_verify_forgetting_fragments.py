"""The fragment rule of ``verify-forgetting``: which phrases and terms of a withdrawn text are
looked for, that kept text and policy placeholders never make a fragment, and that the byte
patterns find a fragment through JSON escapes and case changes (also outside ASCII)."""

from __future__ import annotations

import json
import re

from dsh_memory_worker.worker.verify.fragments import (
    Fragments,
    fragments_of,
    phrase_pattern,
    porter_stems,
)
from dsh_memory_worker.worker.verify.matcher import TextMatcher
from dsh_memory_worker.worker.verify.sources import Gone, content_section


def test_phrases_are_consecutive_five_word_runs_and_terms_carry_their_index_stems() -> None:
    text = (
        "Deploy the quartermaster service behind the flamingo gateway tonight, "
        "then rotate every credential we used."
    )
    found = fragments_of(text)
    assert found.phrases == (
        "deploy the quartermaster service behind",
        "the flamingo gateway tonight then",
        "rotate every credential we used",
    )
    assert found.terms == (
        ("quartermaster", "quartermast"),
        ("credential", "credenti"),
        ("flamingo",),
    )


def test_short_texts_placeholders_and_kept_text_make_no_fragment() -> None:
    assert fragments_of("yes") == Fragments()
    assert fragments_of("Now add a /healthz endpoint.").phrases == ("now add a healthz endpoint",)
    # a placeholder splits the text: no phrase spans it, and its words are no fragment
    split = fragments_of("alpha bravo charlie [REDACTED:aws] delta echo foxtrot golf")
    assert split.phrases == ("alpha bravo charlie", "delta echo foxtrot golf")
    assert "redacted" not in " ".join(split.phrases)
    # what a kept message of the session also says proves nothing
    kept = fragments_of(
        "Ship the monitoring dashboard today please.",
        kept=["I said: ship the monitoring dashboard today."],
    )
    assert kept.phrases == ("the monitoring dashboard today please",)
    assert kept.terms == ()  # "monitoring" and "dashboard" are in the kept text


def test_at_most_eight_phrases_spread_over_the_text_starting_with_the_first() -> None:
    text = " ".join(f"word{n:03d}" for n in range(100))
    phrases = fragments_of(text).phrases
    assert len(phrases) == 8
    assert phrases[0] == "word000 word001 word002 word003 word004"
    assert phrases[-1] == "word095 word096 word097 word098 word099"


def test_byte_patterns_cross_json_escapes_and_fold_case_outside_ascii() -> None:
    stored = json.dumps({"data": "So I\ncannot EDIT -- files now"}, ensure_ascii=False).encode()
    assert re.search(phrase_pattern("so i cannot edit files"), stored, re.IGNORECASE)
    accented = "Élan vital reçu".encode()
    assert re.search(phrase_pattern("élan vital reçu"), accented, re.IGNORECASE)
    assert not re.search(
        phrase_pattern("so i cannot edit files"), b"so i can edit files", re.IGNORECASE
    )


def test_porter_stems_are_the_shelf_index_terms() -> None:
    assert porter_stems(["configured", "withdrawals", "healthz"]) == {
        "configured": "configur",
        "withdrawals": "withdraw",
        "healthz": "healthz",
    }


def test_text_matcher_finds_each_phrase_once_per_text() -> None:
    gone = Gone("s", "msg-s-1", 7, "withdrawn", fragments_of("Now add a /healthz endpoint."))
    matcher = TextMatcher([gone])
    found = list(matcher.find("## Content\nNOW add a healthz-endpoint; now add a healthz endpoint"))
    assert found == [(gone, "now add a healthz endpoint")]
    assert list(matcher.find("now add a health endpoint")) == []


def test_content_section_is_the_body_without_the_tool_ledger() -> None:
    markdown = (
        "## Role\nassistant\n\n## Timestamp\nunknown\n\n## Turn\n1\n\n## Content\n"
        "Done.\n\n## Tool Calls\n- read config.json"
    )
    assert content_section(markdown) == "Done."
    assert content_section("no sections") == ""


def test_a_forgotten_sessions_names_do_not_cover_a_longer_session_id() -> None:
    from dsh_memory_worker.worker.verify.store_scan import _of_session

    assert _of_session("msg-s-1-5", "s-1") and _of_session("sum-s-1-0-17", "s-1")
    assert not _of_session("msg-s-1-x-5", "s-1") and not _of_session("sum-s-1-x-0-17", "s-1")
    assert not _of_session("msg-s-1-", "s-1")


def test_a_word_of_another_script_is_not_a_separator() -> None:
    """Found by the property-based withdrawal test: the withdrawn "добавь тесты для разбора
    логов" matched the kept "добавь тесты для модуля разбора логов" in the shelf's bytes, since
    every non-ASCII character counted as a separator."""
    kept = "Пожалуйста, добавь тесты для модуля разбора логов.".encode()
    assert not re.search(phrase_pattern("добавь тесты для разбора логов"), kept, re.IGNORECASE)
    assert not re.search(phrase_pattern("请 检查 配置"), "请仔细检查配置".encode(), re.IGNORECASE)
    for text in (
        "добавь — тесты «для» разбора… логов",
        "добавь，тесты！для 🙂 разбора ✅ логов",
        "добавь\u00a0тесты\u3001для разбора\\nлогов",
    ):
        assert re.search(
            phrase_pattern("добавь тесты для разбора логов"), text.encode(), re.IGNORECASE
        ), text


def test_bytes_find_a_phrase_only_between_word_boundaries_like_text_does() -> None:
    """The byte scan's boundaries are the text rule's: no match inside a longer run of words
    ("step 1" in "step 12", "the" in "bathe"), a match after or before punctuation, a non-ASCII
    separator, a JSON escape, or the ends of the data."""
    from dsh_memory_worker.worker.verify.fragments import bounded, normalised

    phrase = "the parser in step 1"
    pattern = re.compile(phrase_pattern(phrase))
    cases = {
        "rewrite the parser in step 12 now": False,
        "bathe parser in step 1": False,
        "r\u00e9the parser in step 1": False,  # a letter outside ASCII joins the word
        "the parser in step 1\u00e9": False,
        "rewrite the parser in step 1 now": True,
        "\u2014the parser in step 1\u2014": True,
        "the parser in step 1": True,
        "(the parser in step 1).": True,
        json.dumps("x\nthe parser in step 1\tz"): True,
        json.dumps("\u2014the parser in step 1", ensure_ascii=True): True,
    }
    for text, expected in cases.items():
        data = text.encode().lower()
        found = any(bounded(data, m.start(), m.end()) for m in pattern.finditer(data))
        assert found is expected, text
        # The text rule agrees wherever the text is not JSON-escaped.
        if "\\" not in text:
            assert (f" {phrase} " in normalised(text)) is expected, text

"""``ContentShape``: a batch's shared Content fields printed once give exactly the Content object
and JSON text of ``make_content`` + ``content_text`` for every row, with and without the
``"embed": false`` marker of a write that asked for no embedding."""

from __future__ import annotations

import pytest

from hypatia_lite.rows import ContentShape, content_text, make_content

DATA = [
    "",
    "plain",
    '## Role\nuser\n\n"quoted", \\back\\slash\t\x00\x1f\x7f',
    "naïve — 東京 🚀",
    "lone \ud800 surrogate",
    "pair \ud83d\ude80 joined",
    "\u2028\u2029</script>",
]
SHAPES: list[tuple[tuple[str, ...], tuple[str, ...] | None]] = [
    ((), None),
    (("message",), ("project-0",)),
    (("memory", "work-unit"), ("",)),
    (("t\ud800", 'q"uote'), ()),
    ((), ("a", "b\nc")),
]


@pytest.mark.parametrize("embed", [True, False])
@pytest.mark.parametrize(("tags", "scopes"), SHAPES)
def test_make_equals_make_content_and_content_text(
    tags: tuple[str, ...], scopes: tuple[str, ...] | None, embed: bool
) -> None:
    shape = ContentShape(tags, scopes, embed)
    for data in DATA:
        content, text = shape.make(data)
        expected = make_content(data, tags=tags, scopes=scopes, embed=embed)
        assert ("embed" in content) is not embed
        assert content == expected
        assert list(content) == list(expected)  # Hypatia's field order
        assert text == content_text(expected)

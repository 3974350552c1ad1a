"""User pages say what to do, in sentences a reader takes in at once: measured over the Markdown sources.

- Every how-to page opens (its first paragraph) with when you need it; its sentences average 20 words or fewer,
  and none is over 45. Code, tables, lists, headings and directives are left out of the count: they are not
  sentences.
- No user page carries the code's history or its insides: "used to", "Before,", issue numbers, test inventories
  or pointers into the source tree belong to Architecture, Development and the changelog.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HOW_TO = sorted(p for p in (DOCS / "how-to").glob("*.md") if p.name != "index.md")
# The pages about the code itself, where its history and insides are the subject.
ABOUT_THE_CODE = {"architecture.md", "development.md", "changelog.md"}
USER_PAGES = sorted(
    p
    for p in DOCS.rglob("*.md")
    if p.name not in ABOUT_THE_CODE
    and not p.is_relative_to(DOCS / "_build")
    and not p.is_relative_to(DOCS / "measurements")
)

AVERAGE_WORDS, LONGEST_WORDS = 20, 45

FENCE = re.compile(r"^(`{3,}|~{3,})")
# A list item, a table row, a heading, a directive's option line, a colon fence, an HTML comment, a MyST target.
NOT_PROSE = re.compile(r"^\s*([-*+]\s|\d+[.)]\s|\||#|:[\w-]+:|:::|<!--|\(.*\)=$|```|\{)")
SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z`(\[*\"])")


def paragraphs(text: str) -> list[str]:
    """The page's prose paragraphs: code blocks (fenced or in directives), tables, lists and headings left out.
    A list item's continuation lines (indented) go with the list."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)  # an executed page's front matter is no prose
    kept: list[str] = []
    current: list[str] = []
    fence: str | None = None
    in_list = False
    for line in text.splitlines():
        marker = FENCE.match(line.strip())
        if fence is not None:
            if marker and line.strip().startswith(fence) and line.strip().strip(fence[0]) == "":
                fence = None
            continue
        if marker:
            fence = marker.group(1)
            current and kept.append(" ".join(current))
            current = []
            continue
        if not line.strip():
            current and kept.append(" ".join(current))
            current, in_list = [], False
            continue
        if NOT_PROSE.match(line):
            current and kept.append(" ".join(current))
            current, in_list = [], bool(re.match(r"^\s*([-*+]\s|\d+[.)]\s)", line))
            continue
        if in_list or line.startswith(("    ", "\t")):
            continue
        current.append(line.strip())
    current and kept.append(" ".join(current))
    return kept


LIST_ITEM = re.compile(r"^(\s*)([-*+]|\d+[.)])\s+(.*)")


def list_items(text: str) -> list[str]:
    """The page's list items, each with its continuation lines (outside code blocks)."""
    items: list[str] = []
    indent: int | None = None
    for line in outside_code(text).splitlines():
        item = LIST_ITEM.match(line)
        if item:
            items.append(item.group(3))
            indent = len(item.group(1)) + 1
        elif indent is not None and line.strip() and len(line) - len(line.lstrip()) >= indent:
            items[-1] += " " + line.strip()
        else:
            indent = None
    return items


def outside_code(text: str) -> str:
    """The page less its fenced blocks (code, and directives' bodies)."""
    kept, fence = [], None
    for line in text.splitlines():
        marker = FENCE.match(line.strip())
        if fence is None and marker:
            fence = marker.group(1)
        elif (
            fence is not None
            and marker
            and line.strip().strip(fence[0]) == ""
            and line.strip().startswith(fence)
        ):
            fence = None
        elif fence is None:
            kept.append(line)
    return "\n".join(kept)


def sentences(paragraph: str) -> list[str]:
    return [s for s in SENTENCE_END.split(paragraph) if s.strip()]


def words(sentence: str) -> int:
    # an inline code span, a link's target and a role's target are one word each
    sentence = re.sub(r"`[^`]*`", "X", sentence)
    sentence = re.sub(r"\]\([^)]*\)", "]", sentence)
    return len(sentence.split())


def _name(path: Path) -> str:
    return str(path.relative_to(DOCS))


def test_the_prose_counter_leaves_code_tables_and_lists_out():
    text = "# T\n\nOne two three. Four five.\n\n```python\nx = 1. Y = 2.\n```\n\n| a. | B. |\n\n- a list. Item.\n  more.\n"
    assert [words(s) for p in paragraphs(text) for s in sentences(p)] == [3, 2]
    assert list_items(text) == ["a list. Item. more."]


@pytest.mark.parametrize("page", HOW_TO, ids=_name)
def test_a_how_to_page_opens_with_when_you_need_it(page):
    first = paragraphs(page.read_text(encoding="utf-8"))[0]
    assert re.search(r"\bwhen\b", first, re.I), (
        f"{_name(page)} opens with {first[:200]!r}: say when you need it"
    )


@pytest.mark.parametrize("page", HOW_TO, ids=_name)
def test_a_how_to_page_s_sentences_are_short(page):
    text = page.read_text(encoding="utf-8")
    counted = [(words(s), s) for p in paragraphs(text) for s in sentences(p)]
    # a list's items are left out of the average (a list is not prose), not out of the longest
    listed = [(words(s), s) for item in list_items(text) for s in sentences(item)]
    longest = [f"{n} words: {s[:160]}..." for n, s in counted + listed if n > LONGEST_WORDS]
    assert not longest, f"{_name(page)}: sentences over {LONGEST_WORDS} words:\n" + "\n".join(longest)
    average = sum(n for n, _ in counted) / max(1, len(counted))
    assert average <= AVERAGE_WORDS, (
        f"{_name(page)}: {average:.1f} words a sentence (at most {AVERAGE_WORDS})"
    )


HISTORY = re.compile(
    r"\bused to\b|(?-i:\bBefore,|\(Before\b)|\bno longer\b|\bnow (?:waits|refuses|stores|reads)\b|\bissue #?\d+\b"
    r"|\btests/\w|\bjupyter_dist/[\w/]+\.py\b|\btest_\w+\b",
    re.I,
)


@pytest.mark.parametrize("page", USER_PAGES, ids=_name)
def test_a_user_page_says_what_to_do_not_how_the_code_got_here(page):
    text = outside_code(page.read_text(encoding="utf-8"))
    found = [
        f"{m.group(0)!r} in: ...{text[max(0, m.start() - 80) : m.end() + 80]}..."
        for m in HISTORY.finditer(text)
    ]
    assert not found, f"{_name(page)} tells the code's history or insides:\n" + "\n".join(found)

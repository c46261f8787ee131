"""What a reader downloads, in bytes (deterministic: what the browser asks
for, gzipped as a host would send it; scripts/page_weight.py measures it,
and with --slow-4g also the time to a readable page, which is reported
by `make bench`, not asserted).

Issue 45's budget: a chapter opened after the introduction adds under
200 KB of gzipped bytes before its first dial is on screen (the Vega
runtime a dial needs comes when it nears the screen:
_ext/vega-figures.js); the introduction, the first page, stays under
600 KB with what it prefetches for the chapters (_ext/page_weight.py).
"""

from __future__ import annotations

import sys

import pytest
from browser import CHAPTERS, INTRO, visit_all

from conftest import HTML_DIR, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import page_weight  # noqa: E402


def _after_the_intro(chromium, base: str, name: str) -> tuple[dict, dict]:
    """(the intro's weight, the chapter's) in a browser context of its own
    (an empty cache): the intro first, then the chapter."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        tab = page_weight.Tab(context)
        first = tab.open(base + f"{INTRO}.html")
        return first, tab.open(base + f"{name}.html")
    finally:
        context.close()


@pytest.fixture(scope="module")
def weights(html_build):
    """{page: weight} of the intro (empty cache) and of each chapter
    opened after it (WORKERS browsers side by side)."""
    assert html_build.returncode == 0
    page_weight.HTML = HTML_DIR
    with page_weight.served(HTML_DIR, page_weight._CachingHandler) as base:
        results = visit_all(base, CHAPTERS, _after_the_intro)
    found = {}
    for name, outcome in results.items():
        if isinstance(outcome, Exception):
            raise outcome
        found.setdefault(INTRO, outcome[0])
        found[name] = outcome[1]
    return found


def test_the_intro_stays_under_its_budget(weights):
    kb = weights[INTRO]["before_dial"] / 1e3
    assert kb < page_weight.FIRST_GOAL_KB, f"{INTRO}: {kb:.0f} KB gzipped"


@pytest.mark.parametrize("page", CHAPTERS)
def test_a_chapter_after_the_intro_stays_under_200_kb(weights, page):
    weight = weights[page]
    kb = weight["before_dial"] / 1e3
    assert kb < page_weight.FURTHER_GOAL_KB, (
        f"{page}: {kb:.0f} KB of new gzipped bytes after the intro"
    )


@pytest.mark.parametrize("page", CHAPTERS)
def test_a_chapter_typesets_its_first_screen_first(weights, page):
    """What the reader waits for is the first screen, not the whole page.
    MathJax's first pass typesets no formula off the first screen (a
    chapter has up to 450: typesetting them all first kept a reader on
    slow 4G waiting up to 4 s); the formulas on it are typeset before the
    page counts as readable (scripts/page_weight.py), the rest later
    (tests/book/test_browser_math.py checks that every one is)."""
    readable = weights[page]["readable"]
    first_pass = readable["firstPass"]
    assert not first_pass["offscreen"], (
        f"{page}: MathJax's first pass typeset {first_pass['offscreen']} of"
        f" {readable['formulas']} formulas off the first screen"
    )
    assert not readable["late"], (
        f"{page}: {readable['late']} formulas on the first screen were"
        " never typeset"
    )

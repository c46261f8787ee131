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

import functools
import sys
import threading

import pytest
from browser import CHAPTERS, CHROMIUM_ARGS, INTRO, launch

from conftest import HTML_DIR, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import page_weight  # noqa: E402


@pytest.fixture(scope="module")
def weights(html_build):
    """{page: weight} of the intro (empty cache) and of each chapter
    opened after it, in a browser of its own (a new cache) each."""
    assert html_build.returncode == 0
    assert CHROMIUM_ARGS  # the same Chromium as the other browser tests
    page_weight.HTML = HTML_DIR
    handler = functools.partial(
        page_weight._CachingHandler, directory=str(HTML_DIR)
    )
    server = page_weight._QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    found = {}
    try:
        with launch() as chromium:
            for name in CHAPTERS:
                context = chromium.new_context(
                    viewport={"width": 1280, "height": 900}
                )
                try:
                    tab = page_weight.Tab(context)
                    first = tab.open(base + f"{INTRO}.html")
                    found.setdefault(INTRO, first)
                    found[name] = tab.open(base + f"{name}.html")
                finally:
                    context.close()
    finally:
        server.shutdown()
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

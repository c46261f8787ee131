"""The interactive figures (dials) of the book, moved like a reader: every
slider of every dial at 1280 px and on a phone (what each page's visits
recorded: tests/book/dials.py and tests/book/browser.py), the registry
against the built pages, and their scripts loaded only where needed.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from browser import INTRO, PHONE, Visit, new_context
from dials import DIAL_PAGE, DIALS, NO_DIAL_PAGE

from conftest import HTML_DIR


@pytest.mark.parametrize("width", [1280, PHONE["width"]])
@pytest.mark.parametrize(
    "dial", DIALS, ids=[f"{d.page.split('/')[-1]}-{d.index}" for d in DIALS]
)
def test_dial_moves_with_its_sliders(visits, phone_visits, dial, width):
    """Each slider, found by its label, moves with the arrow keys; at every
    position what the figure shows is what the chapter's Python gives. At
    1280 px the page's visit moves them, last (in dark mode, folds open: no
    dial sits in a fold, and a figure added to one would still fail on the
    phone, where the folds stay closed); at 390 px the chapter's visit on a
    phone (touch, the viewport tag honoured) moves them."""
    visit = (visits if width == 1280 else phone_visits)(dial.page)
    assert dial.index in visit.dials, f"{dial.page}: figure not exercised"
    error = visit.dials[dial.index]
    if error is not None:
        raise error
    assert not visit.external_requests, visit.external_requests
    assert not visit.page_errors, visit.page_errors
    assert not visit.console_errors, visit.console_errors


def test_every_dial_is_in_the_registry(site):
    """A page's interactive figures are exactly the registry's: a new dial
    cannot go untested."""
    found = {}
    for path in sorted((HTML_DIR / "chapters").glob("*.html")):
        count = path.read_text("utf-8").count('<figure class="vega-figure"')
        if count:
            found[f"chapters/{path.stem}"] = count
    registered = {}
    for dial in DIALS:
        registered[dial.page] = max(
            registered.get(dial.page, 0), dial.index + 1
        )
    assert found == registered, (found, registered)


def test_dial_scripts_load_only_where_there_is_a_figure(site, browser):
    """The small drawer loads only on a page with a figure, and the large
    runtime only once the reader scrolls near the figure."""
    fetched = (
        "() => performance.getEntriesByType('resource')"
        ".map(e => e.name).filter(n => n.includes('vega-figures/'))"
    )
    loaded = {}
    recorder = Visit("vega")
    context = new_context(browser, site, recorder)
    try:
        tab = context.new_page()
        tab.set_viewport_size({"width": 1280, "height": 900})
        for page in (DIAL_PAGE, NO_DIAL_PAGE, INTRO):
            tab.goto(site + quote(f"{page}.html"), wait_until="load")
            tab.wait_for_timeout(300)
            loaded[page] = tab.evaluate(fetched)
            if page == DIAL_PAGE:
                tab.locator("figure.vega-figure").scroll_into_view_if_needed()
                tab.wait_for_selector("figure.vega-figure-ready svg")
                loaded["after scrolling"] = tab.evaluate(fetched)
    finally:
        context.close()
    assert [n.rsplit("/", 1)[-1].split("?")[0] for n in loaded[DIAL_PAGE]] == [
        "draw.js"
    ], loaded
    assert len(loaded["after scrolling"]) == 2, loaded
    assert not loaded[NO_DIAL_PAGE], loaded
    assert not loaded[INTRO], loaded
    assert not recorder.external_requests, recorder.external_requests

"""The book's search page, run in a browser like a reader: each chapter is
found by a word of its title, a word of the text finds the chapters that
use it, and a nonsense word finds nothing.
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest
from browser import CHAPTERS, Visit, new_context, watch

from conftest import HTML_DIR, ROOT


def _title_word(page_name: str) -> str:
    """The longest word of the chapter's title: a term the search must find it by."""
    cells = json.loads((ROOT / f"{page_name}.ipynb").read_text())["cells"]
    for cell in cells:
        source = (
            "".join(cell["source"])
            if isinstance(cell["source"], list)
            else cell["source"]
        )
        match = re.search(r"^# (.+)$", source, re.MULTILINE)
        if cell["cell_type"] == "markdown" and match:
            return max(
                re.findall(r"[A-Za-z]+", match.group(1)), key=len
            ).lower()
    raise AssertionError(f"{page_name} has no '# title'")


def search(browser, site: str, term: str) -> list[str]:
    """Run the book's search page for `term` and return the result links."""
    recorder = Visit(f"search {term}")
    context = new_context(browser, site, recorder)
    try:
        page = context.new_page()
        watch(page, recorder, site)
        page.goto(site + "search.html?q=" + quote(term), wait_until="load")
        # The summary line is created empty and filled in when the last result is listed.
        page.wait_for_function(
            "() => { const s = document.querySelector('#search-results .search-summary');"
            " return s && s.textContent.trim().length > 0; }"
        )
        links = page.locator("#search-results ul.search li a").evaluate_all(
            "links => links.map(a => new URL(a.href).pathname)"
        )
    finally:
        context.close()
    # Console errors of search.html are those of every page (test_page_loads_without_errors).
    assert not recorder.external_requests, (
        f"search.html requested other hosts: {recorder.external_requests}"
    )
    return links


@pytest.mark.parametrize("page", CHAPTERS)
def test_search_finds_the_chapter(site, browser, page):
    term = _title_word(page)
    links = search(browser, site, term)
    assert f"/{page}.html" in links, (
        f"searching {term!r} did not list {page}: {links}"
    )


def test_search_finds_linkage(site, browser):
    """A term from the text (not a title) finds the chapters that use it, and only pages."""
    expected = [
        page
        for page in CHAPTERS
        if re.search(
            r"\blinkage\b",
            (HTML_DIR / f"{page}.html").read_text(),
            re.IGNORECASE,
        )
    ]
    if not expected:
        pytest.skip("no chapter mentions linkage yet")
    links = search(browser, site, "linkage")
    missing = [page for page in expected if f"/{page}.html" not in links]
    assert not missing, f"searching 'linkage' did not list {missing}: {links}"
    assert not search(browser, site, "xqzvwk"), "a nonsense word found results"

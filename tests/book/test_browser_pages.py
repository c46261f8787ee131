"""Every page of the book in a browser: it loads without an error, asks no
other host, shows its math typeset, folds its hidden cells, fits its code
and displayed math at 1280 px, and each chapter offers its notebook (with
outputs); the run-it-yourself page hands out the data set.

The checks read what each page's visit at 1280 px recorded
(tests/book/browser.py, the fixture `visits`).
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest
from browser import CHAPTERS, PAGES, RUN_PAGE, Visit, new_context

from conftest import ROOT

HIDE_TAGS = ("hide-input", "hide-output", "hide-cell")
DATA_FILE = "adult_with_pii.csv"
CSV_HEADER = "Name,DOB,SSN,Zip"


@pytest.mark.parametrize("page", PAGES)
def test_page_loads_without_errors(visits, page):
    """No console error, uncaught exception or broken local resource, in light or dark mode.

    Nothing is ignored: an aborted request to another host also logs a console error
    here, on top of failing test_no_request_leaves_localhost.
    """
    seen = visits(page)
    problems = (
        [f"console: {text}" for text in seen.console_errors]
        + [f"page error: {text}" for text in seen.page_errors]
        + [f"broken: {text}" for text in seen.broken_local]
    )
    assert not problems, f"{page}:\n" + "\n".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_no_request_leaves_localhost(visits, page):
    outside = sorted(set(visits(page).external_requests))
    assert not outside, (
        f"{page} requested other hosts (the book must work offline): {outside}"
    )


# Unrendered TeX in running text: delimiters MathJax should have consumed, display $$,
# TeX commands, or an inline $...$ pair (TeX's rule: no space inside the dollars, and the
# closing one not followed by a digit, so "$5 and $10" is prose, not math).
RAW_TEX = [
    ("\\( or \\) delimiter", re.compile(r"\\[()]")),
    ("\\[ or \\] delimiter", re.compile(r"\\[\[\]]")),
    ("$$ display math", re.compile(r"\$\$")),
    ("TeX command", re.compile(r"\\(?:[A-Za-z]{2,}|[,;:!{}_^])")),
    (
        "inline $...$",
        re.compile(
            r"(?<![\\$\w])\$(?=[^\s$\d])[^$\n]*?(?<=[^\s$\\])\$(?![\d$])"
        ),
    ),
]


def find_raw_tex(lines: list[str]) -> list[str]:
    hits = []
    for line in lines:
        for name, pattern in RAW_TEX:
            for match in pattern.finditer(line):
                start = max(0, match.start() - 30)
                hits.append(f"{name}: ...{line[start : match.end() + 30]!r}")
    return hits


@pytest.mark.parametrize("page", PAGES)
def test_math_is_rendered(visits, page):
    facts = visits(page).facts
    raw = find_raw_tex(facts["lines"])
    assert not raw, f"{page}: unrendered TeX in the text:\n" + "\n".join(
        raw[:20]
    )
    if facts["math"]:
        assert facts["containers"] > 0, (
            f"{page}: {facts['math']} math elements but MathJax rendered none"
        )
        assert not facts["unrendered"], (
            f"{page}: math not typeset by MathJax: {facts['unrendered'][:10]}"
        )
    assert not facts["errors"], (
        f"{page}: MathJax errors: {facts['errors'][:10]}"
    )


def test_raw_tex_detector():
    """The detector behind test_math_is_rendered finds TeX and leaves prose with dollars alone."""
    assert find_raw_tex([r"where \(x\) is"]) and find_raw_tex([r"\[ x^2 \]"])
    assert find_raw_tex(["we have $\\varepsilon = 1$ here"]) and find_raw_tex(
        ["so $x$ and $y$"]
    )
    assert find_raw_tex(["$$a + b$$"]) and find_raw_tex(["noise \\frac{1}{2}"])
    assert find_raw_tex(["the $k$-anonymity of it"])
    assert not find_raw_tex(
        ["income above $50,000 (Target)", "costs $5 and $10 a day", "US$ 3"]
    )
    assert not find_raw_tex(
        ["a price of $5, or $5.50 in total", "C:/path and 50$"]
    )


def _source_hidden_cells(page_name: str) -> int:
    """Cells of the page's source that carry a hide-* tag."""
    notebook = ROOT / f"{page_name}.ipynb"
    if notebook.exists():
        cells = json.loads(notebook.read_text())["cells"]
        return sum(
            1
            for cell in cells
            if set(cell.get("metadata", {}).get("tags", [])) & set(HIDE_TAGS)
        )
    markdown = ROOT / f"{page_name}.md"
    if markdown.exists():
        return len(
            re.findall(
                r"^:tags:.*\bhide-(?:input|output|cell)\b",
                markdown.read_text(),
                re.MULTILINE,
            )
        )
    return 0


@pytest.mark.parametrize("page", PAGES)
def test_hidden_code_toggles_open(visits, page):
    toggles = visits(page).toggles
    expected = _source_hidden_cells(page)
    if not expected and not toggles:
        pytest.skip(f"{page} has no folded cells")
    assert len(toggles) == expected, (
        f"{page}: {expected} cells tagged {HIDE_TAGS} but {len(toggles)} folded toggles"
    )
    for toggle in toggles:
        assert (
            not toggle["before"]["open"] and not toggle["before"]["visible"]
        ), f"{page}: not folded at first: {toggle}"
        assert toggle["after"]["open"] and toggle["after"]["visible"], (
            f"{page}: a click did not open it: {toggle}"
        )
        if (
            "tag_hide-input" in toggle["cell"]
            or "tag_hide-cell" in toggle["cell"]
        ):
            assert toggle["after"]["code"], (
                f"{page}: opened, but its code is not visible: {toggle}"
            )


def test_book_has_folded_code(visits):
    """The intro promises setup cells folded away that open with a click: at least one exists."""
    folded = {page: len(visits(page).toggles) for page in PAGES}
    hide_input = sum(
        1
        for page in PAGES
        for t in visits(page).toggles
        if "tag_hide-input" in t["cell"]
    )
    assert hide_input > 0, (
        f"no page of the book has a folded (hide-input) code cell: {folded}"
    )


@pytest.mark.parametrize("page", CHAPTERS)
def test_chapter_offers_its_notebook_with_outputs(visits, page):
    seen = visits(page)
    notebooks = [
        link for link in seen.download_links if link["href"].endswith(".ipynb")
    ]
    assert notebooks, (
        f"{page}: no .ipynb link in the download menu: {seen.download_links}"
    )
    assert notebooks[0]["visible"], (
        f"{page}: the .ipynb link does not show when the menu is opened"
    )
    assert seen.notebook and seen.notebook["status"] == 200, (
        f"{page}: {notebooks[0]['href']} -> {seen.notebook}"
    )
    notebook = json.loads(seen.notebook["text"])
    code = [
        cell
        for cell in notebook.get("cells", [])
        if cell.get("cell_type") == "code"
    ]
    assert notebook.get("nbformat") == 4 and code, (
        f"{page}: the download is not a notebook with code cells"
    )
    with_outputs = [cell for cell in code if cell.get("outputs")]
    assert with_outputs, (
        f"{page}: the downloaded notebook has no stored outputs"
    )


def test_run_it_yourself_data_link_downloads_the_csv(site, browser):
    recorder = Visit(RUN_PAGE)
    context = new_context(browser, site, recorder)
    try:
        page = context.new_page()
        page.goto(site + quote(f"{RUN_PAGE}.html"), wait_until="load")
        link = page.locator(f"#main-content a[href$='{DATA_FILE}']")
        assert link.count(), f"{RUN_PAGE}: no link to {DATA_FILE}"
        with page.expect_download() as download_info:
            link.first.click()
        download = download_info.value
        assert download.suggested_filename == DATA_FILE
        with open(download.path(), encoding="utf-8") as handle:
            header = handle.readline()
    finally:
        context.close()
    assert header.startswith(CSV_HEADER), (
        f"downloaded {DATA_FILE} starts with {header[:80]!r}"
    )
    assert not recorder.external_requests, recorder.external_requests


@pytest.mark.parametrize("page", CHAPTERS)
def test_no_code_cell_scrolls_sideways(visits, page):
    """At 1280 px no code cell needs a sideways scroll (the page's visit)."""
    wide = visits(page).wide_code
    assert not wide, (
        f"{page}: {len(wide)} code cells scroll sideways, e.g. {wide[0]!r}"
    )


@pytest.mark.parametrize("page", CHAPTERS)
def test_display_math_fits_the_page(visits, page):
    """No displayed equation is clipped or scrolls at 1280 px."""
    wide = visits(page).wide_math
    assert not wide, (
        f"{page}: {len(wide)} equations too wide, e.g. {wide[0]!r}"
    )

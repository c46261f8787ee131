"""The book's search page, run in a browser like a reader: each chapter is
found by a word of its title, a word of the text finds the chapters that
use it, and a nonsense word finds nothing. Searching a chapter's subject
lists that chapter first, with snippets of prose (no TeX) whose marks are
whole words; the field's magnifier leaves the query readable; the student
edition searches its own pages and shows no solution
(_ext/book_search.py, _ext/book_search.js).
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest
from browser import CHAPTERS, PHONE, Visit, new_context, serve, watch
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from conftest import HTML_DIR, ROOT

# The chapter a reader searching a subject is looking for.
SUBJECTS = {
    "Laplace": "chapters/differential-privacy",
    "k-anonymity": "chapters/k-anonymity",
    "randomized response": "chapters/randomized-response",
    "composition": "chapters/composition",
    "Gaussian": "chapters/gaussian-and-accounting",
    "exponential mechanism": "chapters/private-selection",
    "local differential privacy": "chapters/local-dp",
    "synthetic data": "chapters/synthetic-data",
    "continual release": "chapters/continual-release",
    "membership inference": "chapters/private-ml",
}
# TeX a reader should never see: a macro, math delimiters, braces.
RAW_TEX = re.compile(r"\\[A-Za-z]+|\\[()\[\]]|\$|[{}]")


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


# Each result: its link, its snippet, and each highlighted mark with the
# characters just before and after it.
RESULTS = """() => [...document.querySelectorAll('#search-results ul.search > li')]
  .map(li => {
    const link = li.querySelector('a');
    const marks = [...li.querySelectorAll('.highlighted')].map(mark => {
      const text = mark.parentElement.textContent;
      const before = mark.previousSibling ? mark.previousSibling.textContent : '';
      const after = mark.nextSibling ? mark.nextSibling.textContent : '';
      return [before.slice(-1), mark.textContent, after.slice(0, 1)];
    });
    const context = li.querySelector('.context');
    return {href: link.href, path: new URL(link.href).pathname,
            title: link.textContent,
            snippet: context ? context.textContent : null, marks};
  })"""


def search_results(browser, site: str, term: str) -> list[dict]:
    """Run the book's search page for `term`: its results, in order, each
    with its snippet once every snippet is in."""
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
        # Snippets arrive one page fetch each, after the list.
        try:
            page.wait_for_function(
                "() => [...document.querySelectorAll("
                "'#search-results ul.search > li')]"
                ".every(li => li.querySelector('.context'))",
                timeout=10_000,
            )
        except PlaywrightTimeout:
            pass  # a result without a snippet: the tests say which
        results = page.evaluate(RESULTS)
    finally:
        context.close()
    # Console errors of search.html are those of every page (test_page_loads_without_errors).
    assert not recorder.external_requests, (
        f"search.html requested other hosts: {recorder.external_requests}"
    )
    assert not recorder.page_errors, recorder.page_errors
    return results


def search(browser, site: str, term: str) -> list[str]:
    """Run the book's search page for `term` and return the result links."""
    return [result["path"] for result in search_results(browser, site, term)]


def whole_word_marks(results: list[dict]) -> list[str]:
    """Marks that sit inside a longer word (the "k" of "risk")."""
    return [
        f"{before}[{mark}]{after} in {result['path']}"
        for result in results
        for before, mark, after in result["marks"]
        if re.match(r"\w", before + " ") or re.match(r"\w", after + " ")
    ]


def test_whole_word_marks_are_told_from_parts_of_words():
    results = [
        {
            "path": "/a.html",
            "marks": [["", "k", "-"], ["(", "composition", ")"]],
        },
        {"path": "/b.html", "marks": [["s", "k", " "], [" ", "k", "s"]]},
    ]
    assert whole_word_marks(results) == [
        "s[k]  in /b.html",
        " [k]s in /b.html",
    ]


@pytest.mark.parametrize("term", SUBJECTS)
def test_search_lists_the_chapter_of_a_subject_first(site, browser, term):
    """The chapter about the subject first (not the first of the chapters
    that use the word, alphabetically); snippets in words, not TeX; marks on
    whole words."""
    results = search_results(browser, site, term)
    paths = [result["path"] for result in results]
    assert paths and paths[0] == f"/{SUBJECTS[term]}.html", (
        f"searching {term!r} listed first {paths[:3]}"
    )
    missing = [r["path"] for r in results if not (r["snippet"] or "").strip()]
    assert not missing, f"results without a snippet: {missing[:3]}"
    tex = [
        (r["path"], r["snippet"])
        for r in results
        if RAW_TEX.search(r["snippet"] or "")
    ]
    assert not tex, f"TeX in the snippets: {tex[:2]}"
    marks = [mark for r in results for _, mark, _ in r["marks"]]
    assert marks, f"searching {term!r} marked nothing"
    inside = whole_word_marks(results)
    assert not inside, f"marks inside words: {inside[:5]}"


# Where the magnifier ends and the query's text begins in the search field
# (of the search page, and of the dialog the header's search button opens).
FIELD = """form => {
  const icon = form.querySelector('i, svg').getBoundingClientRect();
  const input = form.querySelector('input');
  const style = getComputedStyle(input);
  const box = input.getBoundingClientRect();
  return {iconRight: icon.right,
          textLeft: box.left + parseFloat(style.borderLeftWidth)
                    + parseFloat(style.paddingLeft)};
}"""


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_search_field_leaves_the_query_readable(site, browser, viewport):
    """The magnifier sits left of the text: it covered the query's first
    letter."""
    recorder = Visit(f"search field {viewport}")
    context = new_context(browser, site, recorder)
    try:
        page = context.new_page()
        if viewport == "phone":
            page.set_viewport_size(PHONE)
        page.goto(site + "search.html?q=k-anonymity", wait_until="load")
        on_page = page.locator(".bd-search-container form.bd-search")
        fields = [on_page.evaluate(FIELD)]
        page.goto(site + "intro.html", wait_until="load")
        page.locator("button.search-button__button:visible").first.click()
        dialog = page.locator("#pst-search-dialog form.bd-search")
        dialog.wait_for(state="visible")
        fields.append(dialog.evaluate(FIELD))
    finally:
        context.close()
    for field in fields:
        assert field["iconRight"] <= field["textLeft"], field


def _student_html():
    from test_editions import STUDENT_HTML  # noqa: PLC0415

    return STUDENT_HTML


@pytest.fixture(scope="module")
def student_site(student_build):
    """The student edition (built once per run: tests/conftest.py) served
    on its own."""
    with serve(student_build, _student_html()) as url:
        yield url


def test_student_edition_searches_its_own_pages_without_solutions(
    student_site, browser
):
    """The student edition's search lists its own chapters (the subject's
    first) and no snippet or title shows a solution."""
    from test_editions import solution_lines  # noqa: PLC0415

    lines = [re.sub(r"[`*$\\]", "", line) for line in solution_lines()]
    assert len(lines) >= 10, "too few solution lines to check"
    for term in ["k-anonymity", "membership inference", "solution"]:
        results = search_results(browser, student_site, term)
        assert results, term
        assert all(r["href"].startswith(student_site) for r in results)
        if term in SUBJECTS:
            assert results[0]["path"] == f"/{SUBJECTS[term]}.html", term
        shown = " ".join(f"{r['title']} {r['snippet']}" for r in results)
        assert "Solution to" not in shown, term
        leaked = [line for line in lines if line[:60] in shown]
        assert not leaked, f"solution text in the results: {leaked[:2]}"


def _index(html_dir) -> dict:
    text = (html_dir / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1 : text.rindex(")")])


def test_student_search_index_holds_no_solution(html_build, student_build):
    """The student edition's index lists no solution and no instructors'
    page; the reader edition's does list solutions (the check can see
    them)."""
    assert html_build.returncode == 0 and student_build.returncode == 0
    reader, student = _index(HTML_DIR), _index(_student_html())

    def solutions(index):
        return [t for t in index["alltitles"] if t.startswith("Solution to")]

    assert solutions(reader), "the reader edition's index lists no solution"
    assert not solutions(student), solutions(student)[:3]
    assert "instructors" in reader["docnames"]
    assert "instructors" not in student["docnames"]


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

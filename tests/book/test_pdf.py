"""The PDF edition: builds with xelatex, and carries every chapter, definition, figure and reference."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from conftest import (
    BUILD_DIR,
    HTML_DIR,
    JUPYTER_BOOK,
    ROOT,
    chapter_notebooks,
    toc_files,
)

# The PDF is built into a tree of its own (its own doctrees), so that it can
# be built while another worker builds the HTML into _build/html.
PDF_BUILD_DIR = BUILD_DIR / "pdf"
LATEX_DIR = PDF_BUILD_DIR / "_build" / "latex"
PDF = LATEX_DIR / "book.pdf"


@pytest.fixture(scope="module")
def pdf_build():
    command = [
        str(JUPYTER_BOOK),
        "build",
        str(ROOT),
        "--builder",
        "pdflatex",
        "-W",
        "-n",
        "--keep-going",
        "--path-output",
        str(PDF_BUILD_DIR),
    ]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT)


@pytest.fixture(scope="module")
def pdf_pages(pdf_build):
    """The PDF's text (pdftotext -layout), one string per page."""
    assert pdf_build.returncode == 0, (pdf_build.stdout + pdf_build.stderr)[
        -4000:
    ]
    text = subprocess.run(
        ["pdftotext", "-layout", str(PDF), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return text.split("\f")


@pytest.fixture(scope="module")
def pdf_text(pdf_pages):
    """The whole PDF's text with white space folded."""
    return re.sub(r"\s+", " ", "\f".join(pdf_pages))


def page_title(name: str) -> str:
    """The first top-level heading of a toc entry."""
    path = ROOT / f"{name}.md"
    if path.exists():
        lines = path.read_text().splitlines()
    else:
        cells = json.loads((ROOT / f"{name}.ipynb").read_text())["cells"]
        lines = [
            line
            for cell in cells
            if cell["cell_type"] == "markdown"
            for line in "".join(cell["source"]).splitlines()
        ]
    return next(line[2:].strip() for line in lines if line.startswith("# "))


def directive_count(name: str) -> int:
    """How many times a sphinx-proof directive opens across the chapters."""
    pattern = re.compile(r"^[`:]{3,}\{prf:" + name + r"\}", re.MULTILINE)
    return sum(
        len(pattern.findall(path.read_text().replace("\\n", "\n")))
        for path in chapter_notebooks()
    )


def test_pdf_builds_without_latex_errors(pdf_build):
    assert pdf_build.returncode == 0, (pdf_build.stdout + pdf_build.stderr)[
        -4000:
    ]
    assert PDF.exists() and PDF.stat().st_size > 10_000
    log = (LATEX_DIR / "book.log").read_text(errors="replace")
    assert not re.search(r"^! ", log, re.MULTILINE), "LaTeX reported an error"


def test_pdf_has_every_chapter_title(pdf_text):
    missing = [
        title
        for name in toc_files()
        if (title := page_title(name)) not in pdf_text
    ]
    assert not missing, f"titles missing from the PDF: {missing}"


def test_pdf_has_no_unresolved_references(pdf_text):
    assert "??" not in pdf_text


def test_pdf_has_bibliography_with_cited_works(pdf_text):
    assert "Bibliography" in pdf_text
    assert "Becker" in pdf_text and "Kohavi" in pdf_text


@pytest.mark.parametrize("kind", ["definition", "theorem"])
def test_pdf_numbers_definitions_and_theorems(pdf_text, kind):
    expected = directive_count(kind)
    found = len(re.findall(kind.capitalize() + r" \d+(\.\d+)*", pdf_text))
    assert found >= expected, (
        f"{expected} {kind}s in the chapters, {found} numbered ones in the PDF"
    )


def test_pdf_embeds_every_html_figure(pdf_build, html_build):
    assert pdf_build.returncode == 0 and html_build.returncode == 0
    html_pages = [HTML_DIR / f"{name}.html" for name in toc_files()]
    html_images = {
        src.rsplit("/", 1)[-1]
        for page in html_pages
        for src in re.findall(r'<img[^>]+src="([^"]+\.png)"', page.read_text())
    }
    latex_images = {path.name for path in LATEX_DIR.glob("*.png")}
    assert html_images <= latex_images, (
        f"figures missing from the PDF: {sorted(html_images - latex_images)}"
    )
    listed = subprocess.run(
        ["pdfimages", "-list", str(PDF)],
        capture_output=True,
        text=True,
        check=True,
    )
    embedded = len(listed.stdout.splitlines()) - 2
    assert embedded >= len(html_images)


def test_pdf_title_page_says_what_the_book_is(pdf_pages):
    title = re.sub(r"\s+", " ", pdf_pages[0])
    for words in [
        "Hands-On Data Privacy",
        "An interactive textbook for programmers",
        "Edition",
        "CC BY 4.0",
        "MIT",
    ]:
        assert words in title, f"the title page lacks {words!r}: {title[:300]}"


def test_pdf_back_matter_is_appendices_with_one_bibliography(
    pdf_text, pdf_pages
):
    assert "Appendix C. For instructors" in pdf_text
    assert not re.search(r"Chapter \d+\. For instructors", pdf_text)
    assert "Proof Index" not in pdf_text
    contents = pdf_pages[:6]  # the title page, the contents, the preface
    entries = [
        line.strip()
        for page in contents
        for line in page.splitlines()
        if re.match(r"^\s*(\d+\s+)?Bibliography\s+\d+\s*$", line)
    ]
    assert len(entries) == 1, (
        f"bibliography entries in the contents: {entries}"
    )
    assert entries[0].startswith("Bibliography"), (
        "the bibliography is numbered"
    )


def test_pdf_shows_no_raw_labels(pdf_text):
    raw = re.findall(
        r"\b(?:dp|rr|comp|deid|kanon|practice)-(?:def|thm)-[a-z-]+", pdf_text
    )
    assert not raw, f"raw labels in the PDF: {sorted(set(raw))[:5]}"


def test_pdf_numbers_like_the_web(pdf_text, html_build):
    """Definition 3.2 on the web is Definition 3.2 in the PDF."""
    assert html_build.returncode == 0
    kinds = r"(?:Definition|Theorem)"
    web = set()
    for page in (HTML_DIR / "chapters").glob("*.html"):
        web |= set(re.findall(kinds + r" \d+\.\d+\b(?!\.)", page.read_text()))
    pdf = set(re.findall(kinds + r" \d+\.\d+(?:\.\d+)*", pdf_text))
    assert web and web <= pdf, f"on the web only: {sorted(web - pdf)[:5]}"
    deeper = [n for n in pdf if n.count(".") > 1]
    assert not deeper, f"section-based numbers in the PDF: {deeper[:5]}"


def test_pdf_no_box_title_alone_at_a_page_foot(pdf_pages):
    title = re.compile(
        r"^\s*(Definition|Theorem|Proof|Lemma|Corollary|Exercise|Solution)"
        r"\s+\d+\.\d+\b"
    )
    alone = []
    for number, page in enumerate(pdf_pages, start=1):
        lines = [line for line in page.splitlines() if line.strip()]
        if lines and title.match(lines[-1]):
            alone.append((number, lines[-1].strip()[:60]))
    assert not alone, f"a box title ends the page: {alone}"

"""The notebook a reader downloads reads well in plain Jupyter and Colab.

The book's download button offers _sources/chapters/<chapter>.ipynb; after
the HTML build those copies carry plain Markdown (see _ext/reader_export.py):
numbers instead of glue roles, readable definitions and exercises, citations
as (Author Year), and the same code as the chapter.
"""

from __future__ import annotations

import html
import re
import sys

import nbformat
import pytest

from conftest import HTML_DIR, ROOT, chapter_notebooks

sys.path.insert(0, str(ROOT / "_ext"))
from reader_export import Context, render_markdown  # noqa: E402

ROLE = re.compile(r"\{[a-z:-]+\}`[^`]*`")
DIRECTIVE = re.compile(r"^\s*>?\s*[`:]{3,}\{[a-z:-]+\}", re.MULTILINE)


def download_of(chapter):
    return HTML_DIR / "_sources" / "chapters" / chapter.name


@pytest.fixture(scope="module")
def downloads(html_build):
    assert html_build.returncode == 0, (html_build.stdout + html_build.stderr)[
        -3000:
    ]
    return {
        chapter.stem: nbformat.read(download_of(chapter), as_version=4)
        for chapter in chapter_notebooks()
    }


def test_render_markdown_on_a_small_example():
    context = Context(
        glue={"share": "0.7311"},
        labels={"dp-def-dp": "Definition (Differential privacy)"},
        titles={"composition": "Composition"},
        bib={"dwork2014algorithmic": ("Dwork and Roth", "2014")},
    )
    source = (
        "(sec-x)=\n## A section\n\n"
        "At most {glue:text}`share:.1%` {cite:p}`dwork2014algorithmic`, by "
        "{prf:ref}`dp-def-dp`; see {doc}`composition`.\n\n"
        "```{prf:theorem} Guessing\n:label: t\n\nBody $x$.\n```\n"
    )
    text = render_markdown(source, context)
    assert (
        "At most 73.1% (Dwork and Roth 2014), by Definition (Differential "
        in text
    )
    assert "*Composition*" in text
    assert "**Theorem (Guessing).**" in text and "> Body $x$." in text
    assert not ROLE.search(text) and not DIRECTIVE.search(text)
    assert "(sec-x)=" not in text


@pytest.mark.parametrize("chapter", chapter_notebooks(), ids=lambda p: p.stem)
def test_download_has_no_unrendered_markup(downloads, chapter):
    markdown = "\n".join(
        cell.source
        for cell in downloads[chapter.stem].cells
        if cell.cell_type == "markdown"
    )
    assert not ROLE.findall(markdown), ROLE.findall(markdown)[:5]
    assert not DIRECTIVE.findall(markdown), DIRECTIVE.findall(markdown)[:5]


@pytest.mark.parametrize("chapter", chapter_notebooks(), ids=lambda p: p.stem)
def test_download_keeps_the_code_and_the_numbers(downloads, chapter):
    original = nbformat.read(chapter, as_version=4)
    exported = downloads[chapter.stem]
    code = [c.source for c in original.cells if c.cell_type == "code"]
    assert code == [c.source for c in exported.cells if c.cell_type == "code"]
    # Every glued number the page shows is in the download's text.
    page = (HTML_DIR / "chapters" / f"{chapter.stem}.html").read_text()
    shown = [
        html.unescape(value)
        for value in re.findall(
            r'<span class="pasted-text">([^<]+)</span>', page
        )
    ]
    text = "\n".join(
        c.source for c in exported.cells if c.cell_type == "markdown"
    )
    missing = [value for value in shown if value not in text]
    assert shown and not missing, missing[:5]


DOWNLOAD_LINK = re.compile(
    r'class="reference download[^"]*"[^>]*href="([^"]+)"'
)


@pytest.mark.parametrize("chapter", chapter_notebooks(), ids=lambda p: p.stem)
def test_the_box_links_files_the_site_serves_as_its_commands_name_them(
    downloads, chapter
):
    """The chapter's box on the site links its requirements file and its
    data files; the site serves each under its own name (so a browser
    saves the requirements as <chapter>.txt), and the install commands in
    the box, on the page and in the downloaded notebook, name that file."""
    page = (HTML_DIR / "chapters" / f"{chapter.stem}.html").read_text()
    served = {}
    for href in DOWNLOAD_LINK.findall(page):
        path = (HTML_DIR / "chapters" / html.unescape(href)).resolve()
        assert path.exists(), href
        served[path.name] = path
    own = f"{chapter.stem}.txt"
    assert own in served, sorted(served)
    assert served[own].read_text() == (ROOT / "requirements" / own).read_text()
    code = "\n".join(
        cell.source
        for cell in nbformat.read(chapter, as_version=4).cells
        if cell.cell_type == "code"
    )
    for name in served:
        if name.endswith(".csv"):
            assert name in code  # a data file the chapter reads
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert f".venv/bin/pip install -r {own}" in text
    assert f".venv\\Scripts\\pip install -r {own}" in text
    box = next(
        cell.source
        for cell in downloads[chapter.stem].cells
        if cell.cell_type == "markdown" and "pip install -r" in cell.source
    )
    assert f"`{own}`" in box and f"pip install -r {own}" in box

#!/usr/bin/env python3
"""Build the student edition: the book with every exercise solution removed.

Usage: python scripts/make_student_edition.py [OUTPUT_DIR]     (or `make student`)

The book's sources are copied to OUTPUT_DIR/src (default _build/student), every
``{solution}`` block (and every code cell tagged ``solution``) is cut out of
the notebooks and Markdown pages, and the
HTML is built into OUTPUT_DIR/_build/html with sphinx-exercise's
``hide_solutions`` on as a second guard. The notebooks a student downloads
from that site therefore contain no solutions either.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [
    "_config.yml",
    "_toc.yml",
    "references.bib",
    "requirements.txt",
    "requirements",
    "chapters",
    "data",
    "_latex",
    "_ext",
    "_static",
]
# Pages left out of the student edition (and out of its table of contents).
TEACHER_PAGES = ["instructors"]
NOT_BOOK_PAGES = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"]
FENCE = re.compile(r"^\s*(`{3,}|:{3,})\{solution\}")
GATED_START = re.compile(r"^\s*(`{3,}|:{3,})\{solution-start\}")
GATED_END = re.compile(r"^\s*(`{3,}|:{3,})\{solution-end\}")


def strip_solutions(markdown: str) -> str:
    """Remove every fenced ``{solution}`` directive (opening fence to matching close) from Markdown."""
    kept, closing = [], None
    for line in markdown.splitlines(keepends=True):
        if closing is None:
            opening = FENCE.match(line)
            if opening:
                closing = opening.group(1)
                continue
            kept.append(line)
        elif line.strip() == closing:
            closing = None
    if closing is not None:
        raise ValueError("a {solution} block is never closed")
    return "".join(kept)


def strip_cells(cells: list) -> list:
    """The cells without solutions.

    A gated solution (``{solution-start}`` ... ``{solution-end}``) spans
    cells: everything from its start fence to its end fence goes, code cells
    included. Code cells tagged ``solution`` go wherever they are, and
    ``{solution}`` blocks are cut out of the Markdown that is left, and
    every cell loses its ``assignment`` metadata (an exercise's checks).
    """
    kept, gated = [], False
    for cell in cells:
        # An exercise's grading (checks, hidden tests, answers) is the
        # instructors' (scripts/make_assignments.py).
        cell.metadata.pop("assignment", None)
        if cell.cell_type != "markdown":
            if not gated and "solution" not in cell.metadata.get("tags", []):
                kept.append(cell)
            continue
        text, lines = [], iter(cell.source.splitlines(keepends=True))
        for line in lines:
            if gated:
                end = GATED_END.match(line)
                if end:
                    closing = end.group(1)
                    for rest in lines:  # the end directive's own closing fence
                        if rest.strip() == closing:
                            break
                    gated = False
                continue
            if GATED_START.match(line):
                gated = True
                continue
            text.append(line)
        cell.source = strip_solutions("".join(text))
        if cell.source.strip():
            kept.append(cell)
    if gated:
        raise ValueError(
            "a {solution-start} is never closed by {solution-end}"
        )
    return kept


def strip_notebook(path: Path) -> None:
    """Remove every solution from a notebook, in place."""
    notebook = nbformat.read(path, as_version=4)
    notebook.cells = strip_cells(notebook.cells)
    nbformat.write(notebook, path)


def student_page(text: str) -> str:
    """A page's student wording: reader-only blocks cut, student-only lines shown.

    In the sources, ``% reader-only-start`` ... ``% reader-only-end`` wraps
    text only the reader's edition has, and a line ``% student-only: ...``
    (a MyST comment, invisible there) holds text only students see.
    """
    kept, skipping = [], False
    for line in text.splitlines(keepends=True):
        marker = line.strip()
        if marker == "% reader-only-start":
            skipping = True
        elif marker == "% reader-only-end":
            skipping = False
        elif not skipping:
            kept.append(
                line.replace("% student-only: ", "", 1)
                if line.startswith("% student-only: ")
                else line
            )
    if skipping:
        raise ValueError("a '% reader-only-start' is never closed")
    return "".join(kept)


def student_toc(path: Path) -> None:
    """Drop the teachers' pages from the table of contents."""
    toc = yaml.safe_load(path.read_text())
    for part in toc.get("parts", []):
        part["chapters"] = [
            entry
            for entry in part.get("chapters", [])
            if entry.get("file") not in TEACHER_PAGES
        ]
    path.write_text(yaml.safe_dump(toc, sort_keys=False))


def student_config(path: Path) -> None:
    """Retitle the book and switch on sphinx-exercise's hide_solutions."""
    config = yaml.safe_load(path.read_text())
    config["title"] = f"{config['title']} (student edition)"
    config.setdefault("sphinx", {}).setdefault("config", {})[
        "hide_solutions"
    ] = True
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def prepare_sources(source_dir: Path) -> None:
    """Copy the book into ``source_dir`` and cut every solution out of it."""
    if source_dir.exists():
        shutil.rmtree(source_dir)
    source_dir.mkdir(parents=True)
    for name in SOURCES:
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(
                origin,
                source_dir / name,
                ignore=shutil.ignore_patterns(".ipynb_checkpoints"),
            )
        elif origin.exists():
            shutil.copy2(origin, source_dir / name)
    for notebook in (source_dir / "chapters").glob("*.ipynb"):
        strip_notebook(notebook)
    for page in ROOT.glob("*.md"):
        if page.stem not in TEACHER_PAGES and page.name not in NOT_BOOK_PAGES:
            (source_dir / page.name).write_text(
                student_page(strip_solutions(page.read_text()))
            )
    student_config(source_dir / "_config.yml")
    student_toc(source_dir / "_toc.yml")


def main(argv: list[str]) -> int:
    output = Path(argv[1]) if len(argv) > 1 else ROOT / "_build" / "student"
    source_dir = output / "src"
    prepare_sources(source_dir)
    shutil.rmtree(output / "_build", ignore_errors=True)  # no stale pages
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    build = subprocess.run(
        [
            str(jupyter_book),
            "build",
            str(source_dir),
            "-W",
            "-n",
            "--keep-going",
            "--path-output",
            str(output),
        ],
        # MathJax comes from the book's own node_modules (package-lock.json).
        env={**os.environ, "BOOK_NPM_ROOT": str(ROOT)},
    )
    if build.returncode == 0:
        print(f"Student edition: {output / '_build' / 'html' / 'index.html'}")
    return build.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))

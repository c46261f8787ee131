"""Reader's edition shows solutions in dropdowns; the student edition carries no solution anywhere."""

from __future__ import annotations

import re
import sys

import nbformat
import pytest

from conftest import BUILD_DIR, HTML_DIR, ROOT, chapter_notebooks

sys.path.insert(0, str(ROOT / "scripts"))
from make_student_edition import strip_cells, strip_solutions  # noqa: E402

STUDENT_DIR = BUILD_DIR / "student"
STUDENT_HTML = STUDENT_DIR / "_build" / "html"
SOLUTION = re.compile(
    r"^(\s*)(`{3,}|:{3,})\{solution\}[^\n]*\n(.*?)^\s*\2\s*$",
    re.MULTILINE | re.DOTALL,
)


def gated_solution_text(cells) -> str:
    """The text of every gated solution's cells (start fence to end fence)."""
    parts, inside = [], False
    for cell in cells:
        if cell.cell_type == "markdown" and "{solution-start}" in cell.source:
            inside = True
        if inside:
            parts.append(cell.source)
        if cell.cell_type == "markdown" and "{solution-end}" in cell.source:
            inside = False
    return "\n".join(parts)


def solution_lines() -> list[str]:
    """Distinctive lines of every solution: long, and found nowhere else in its chapter."""
    lines = []
    for path in chapter_notebooks():
        cells = nbformat.read(path, as_version=4).cells
        outside = "\n".join(
            cell.source
            for cell in strip_cells(nbformat.read(path, as_version=4).cells)
        )
        gated = [
            line.strip()
            for line in gated_solution_text(cells).splitlines()
            if len(line.strip()) > 30
            and not line.strip().startswith((":", "`"))
            and line.strip() not in outside
        ]
        lines.extend(gated[:6])
        markdown = [
            cell.source for cell in cells if cell.cell_type == "markdown"
        ]
        elsewhere = "\n".join(
            [strip_solutions(text) for text in markdown]
            + [
                cell.source
                for cell in cells
                if cell.cell_type == "code"
                and "solution" not in cell.metadata.get("tags", [])
            ]
        )
        for text in markdown:
            for match in SOLUTION.finditer(text):
                body = [
                    line.strip()
                    for line in match.group(3).splitlines()
                    if len(line.strip()) > 30
                    and not line.strip().startswith(":")
                    and line.strip() not in elsewhere
                ]
                lines.extend(body[:3])
    return lines


# student_build: the student edition, built once per run (tests/conftest.py).


def test_strip_solutions_removes_only_solution_blocks():
    text = (
        "Before\n````{exercise} Ex\n:label: ex\n\nDo it.\n````\n\n"
        "````{solution} ex\n:class: dropdown\n\n```python\nsecret = 42\n```\n````\nAfter\n"
    )
    stripped = strip_solutions(text)
    assert "secret" not in stripped and "{solution}" not in stripped
    assert (
        "Do it." in stripped and "Before" in stripped and "After" in stripped
    )


def test_strip_cells_removes_a_gated_solution_across_cells():
    cells = [
        nbformat.v4.new_markdown_cell(
            "```{exercise} Ex\n:label: ex\n\nDo it.\n```"
        ),
        nbformat.v4.new_markdown_cell(
            "```{solution-start} ex\n:label: sol\n:class: dropdown\n```\nSecret prose"
        ),
        nbformat.v4.new_code_cell(
            "secret = 42", metadata={"tags": ["solution"]}
        ),
        nbformat.v4.new_code_cell("also_secret = 1"),  # untagged, still inside
        nbformat.v4.new_markdown_cell(
            "More secret.\n\n```{solution-end}\n```\n\nAfter"
        ),
        nbformat.v4.new_code_cell("public = 1"),
    ]
    kept = "\n".join(cell.source for cell in strip_cells(cells))
    assert "secret" not in kept.lower() and "solution" not in kept
    assert "Do it." in kept and "After" in kept and "public = 1" in kept


def test_strip_cells_rejects_an_unclosed_gated_solution():
    cells = [
        nbformat.v4.new_markdown_cell(
            "```{solution-start} ex\n```\nnever closed"
        )
    ]
    with pytest.raises(ValueError):
        strip_cells(cells)


def test_strip_solutions_rejects_an_unclosed_block():
    with pytest.raises(ValueError):
        strip_solutions(":::{solution} ex\nnever closed\n")


def test_student_edition_builds(student_build):
    assert student_build.returncode == 0, (
        student_build.stdout + student_build.stderr
    )[-4000:]


def test_student_edition_has_exercises_but_no_solutions(student_build):
    assert student_build.returncode == 0
    pages = list(STUDENT_HTML.rglob("*.html"))
    notebooks = list((STUDENT_HTML / "_sources").rglob("*.ipynb"))
    assert pages and notebooks
    student_text = "\n".join(path.read_text() for path in pages + notebooks)
    assert 'class="solution' not in student_text
    for path in notebooks:
        tags = [
            tag
            for cell in nbformat.read(path, as_version=4).cells
            for tag in cell.metadata.get("tags", [])
        ]
        assert "solution" not in tags, f"{path.name} keeps a solution cell"
    assert "{solution}" not in student_text
    leaked = [line for line in solution_lines() if line in student_text]
    assert not leaked, f"solution text in the student edition: {leaked[:3]}"
    exercises = sum(
        path.read_text().count('class="exercise') for path in pages
    )
    assert exercises >= len(chapter_notebooks()) * 4 or not solution_lines()


def test_reader_edition_has_solutions_in_collapsed_dropdowns(html_build):
    assert html_build.returncode == 0
    if not solution_lines():
        pytest.skip("no chapter has solutions yet")
    pages = "\n".join(
        path.read_text() for path in (HTML_DIR / "chapters").glob("*.html")
    )
    solutions = re.findall(r'<div class="solution[^"]*"', pages)
    assert solutions and all("dropdown" in tag for tag in solutions)


def test_student_edition_speaks_to_students(student_build):
    assert student_build.returncode == 0
    intro = (STUDENT_HTML / "intro.html").read_text()
    assert "student edition" in intro
    assert "solution opens on demand" not in intro
    assert "For instructors" not in intro
    assert not (STUDENT_HTML / "instructors.html").exists()


def test_instructors_page_links_the_student_edition(html_build):
    assert html_build.returncode == 0
    page = (HTML_DIR / "instructors.html").read_text()
    assert 'href="student/index.html"' in page


def grader_lines() -> set[str]:
    """Lines of the graded exercises' judges, exports and inputs that no
    reader or student sees elsewhere (long enough to give something
    away)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_assignments

    secret, visible = set(), set()
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        for cell in cells:  # what every reader sees anyway
            visible |= {line.strip() for line in cell.source.splitlines()}
        for exercise in make_assignments.exercises(cells):
            spec = exercise["spec"]
            for key in ("stub", "public"):
                visible |= {
                    line.strip() for line in spec.get(key, "").splitlines()
                }
            for key in ("judge", "export", "inputs", "hidden"):
                secret |= {
                    line.strip()
                    for line in spec.get(key, "").splitlines()
                    if len(line.strip()) > 30
                    and not line.strip().startswith("#")
                }
    seen = "\n".join(visible)
    return {line for line in secret if line not in seen}


def test_no_served_file_carries_the_grader_s_checks(html_build, student_build):
    """Crawl both built editions: no page, notebook, text or script file
    holds an exercise's `assignment` metadata or a line of its judge,
    export or inputs (the grader's alone; scripts/make_assignments.py)."""
    assert html_build.returncode == 0 and student_build.returncode == 0
    lines = grader_lines()
    assert lines
    for site in (HTML_DIR, STUDENT_HTML):
        for path in site.rglob("*"):
            if path.suffix not in {
                ".html",
                ".ipynb",
                ".txt",
                ".js",
                ".json",
                ".md",
            }:
                continue
            text = path.read_text(errors="replace")
            assert '"assignment"' not in text, path
            for line in lines:
                assert line not in text, f"{path}: {line}"

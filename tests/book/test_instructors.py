"""The instructors' page lists every chapter and every exercise, each with a difficulty."""

import re

import nbformat
import pytest

from conftest import ROOT, chapter_notebooks

PAGE = (ROOT / "instructors.md").read_text()
EXERCISE = re.compile(r"\{exercise\}\s*(.*?)\n:label: (\S+)")


def exercises(path):
    cells = nbformat.read(path, as_version=4).cells
    text = "\n".join(
        cell.source for cell in cells if cell.cell_type == "markdown"
    )
    return EXERCISE.findall(text)


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.stem)
def test_chapter_is_on_the_instructors_page(path):
    assert "{doc}`chapters/%s`" % path.stem in PAGE


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.stem)
def test_every_exercise_is_listed_with_its_difficulty(path):
    found = exercises(path)
    assert len(found) >= 4, "each chapter has at least four exercises"
    for title, label in found:
        assert re.search(r"\((easy|medium|hard)\)", title), (
            f"{label}: no difficulty in '{title}'"
        )
        assert f"{title} <{label}>" in PAGE, (
            f"{label} is not listed on the instructors' page"
        )


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.stem)
def test_graded_and_written_exercises_are_listed(path):
    """The table of graded assignments says, per chapter, which exercises
    are graded by code and which stay written, as the chapter's exercise
    metadata does (scripts/make_assignments.py)."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    import make_assignments

    row = make_assignments.instructors_row(path.stem)
    assert row in PAGE.splitlines(), f"expected the row\n{row}"
    assert f'href="assignments/{path.stem}.ipynb"' in PAGE

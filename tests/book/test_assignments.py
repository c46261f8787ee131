"""The graded assignments, end to end with nbgrader (scripts/make_assignments.py).

The checks of every exercise run against the book's solutions, the stubs
and typical wrong answers in each chapter's own tests (tests/assignments.py,
in the chapter's kernel). Here: the build of every chapter's assignment,
what reaches students (no hidden test, no solution), one real grading of
two submissions of one chapter, and the student notebook's public checks in
the reader's environment.
"""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
import time

import nbformat
import pytest

from conftest import CHAPTERS_DIR, ROOT, chapter_notebooks

sys.path.insert(0, str(ROOT / "scripts"))
import grade_assignment  # noqa: E402
import make_assignments  # noqa: E402
from make_student_edition import strip_cells  # noqa: E402

GRADED = "differential-privacy"  # the chapter graded end to end


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """`make assignments` for every chapter, into a fresh folder; its seconds."""
    output = tmp_path_factory.mktemp("assignments")
    stems = [path.stem for path in chapter_notebooks()]
    start = time.perf_counter()
    make_assignments.build(output, stems)
    return output, time.perf_counter() - start


def meaningful_lines(code: str) -> set[str]:
    """Lines of code long enough to give something away."""
    return {
        line.strip()
        for line in code.splitlines()
        if len(line.strip()) > 20 and not line.strip().startswith("#")
    }


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.stem)
def test_student_files_hold_no_hidden_test_and_no_solution(built, path):
    output, _ = built
    student = output / "student" / path.stem / f"{path.stem}.ipynb"
    text = student.read_text()
    for marker in [
        make_assignments.HIDDEN_START,
        make_assignments.SOLUTION_START,
        '"assignment"',
    ]:
        assert marker not in text, f"{marker} in the student notebook"
    chapter = nbformat.read(path, as_version=4)
    # What any student sees anyway: the chapter's own code and the stubs.
    visible = "\n".join(
        cell.source for cell in strip_cells(chapter.cells)
    ) + "".join(
        exercise["spec"].get("stub", "") + exercise["spec"].get("public", "")
        for exercise in make_assignments.exercises(chapter.cells)
    )
    secret = set()
    for exercise in make_assignments.exercises(chapter.cells):
        if make_assignments.graded(exercise):
            secret |= meaningful_lines(exercise["spec"].get("hidden", ""))
            secret |= meaningful_lines(make_assignments.answer_code(exercise))
    for line in sorted(secret - meaningful_lines(visible)):
        assert line not in text, f"the student notebook shows: {line}"


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.stem)
def test_student_edition_drops_the_checks(path):
    """The student edition's notebooks (make_student_edition) keep no
    exercise's checks, answers or hidden tests in their metadata."""
    chapter = nbformat.read(path, as_version=4)
    kept = strip_cells(chapter.cells)
    assert not any("assignment" in cell.metadata for cell in kept)


def test_make_assignments_is_quick(built):
    _, seconds = built
    print(
        f"make assignments, {len(chapter_notebooks())} chapters: {seconds:.1f} s"
    )
    assert seconds < 120


@pytest.fixture(scope="module")
def graded_rows(built, tmp_path_factory):
    """Two submissions of one chapter graded by nbgrader: the instructor's
    notebook (the book's solutions) and the untouched student notebook."""
    output, _ = built
    course = output / "course"
    submissions = tmp_path_factory.mktemp("submitted")
    source = course / "source" / GRADED / f"{GRADED}.ipynb"
    release = output / "student" / GRADED / f"{GRADED}.ipynb"
    shutil.copy2(source, submissions / "solutions.ipynb")
    (submissions / "untouched").mkdir()
    shutil.copy2(release, submissions / "untouched" / f"{GRADED}.ipynb")
    scores = submissions / "scores.csv"
    grade_assignment.grade(course, GRADED, submissions, scores)
    with open(scores, newline="") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def graded_labels():
    cells = nbformat.read(CHAPTERS_DIR / f"{GRADED}.ipynb", as_version=4).cells
    return [
        exercise["label"]
        for exercise in make_assignments.exercises(cells)
        if make_assignments.graded(exercise)
    ]


def test_the_book_s_solutions_get_full_marks_from_nbgrader(graded_rows):
    row = graded_rows["solutions"]
    assert float(row["total"]) == float(row["max"]) > 0, row
    for label in graded_labels():
        assert float(row[label]) > 0, f"{label}: {row}"


def test_the_untouched_student_notebook_scores_zero_in_nbgrader(graded_rows):
    row = graded_rows["untouched"]
    assert set(graded_labels()) <= set(row), row
    for label in graded_labels():
        assert float(row[label]) == 0, f"{label}: {row}"
    assert float(row["total"]) == 0


def test_the_public_checks_run_in_the_reader_s_environment(
    built, tmp_path_factory
):
    """The student notebook, each stub replaced by the book's answer, runs
    (public checks included) in a venv holding only the chapter's reader
    requirements: no nbgrader, no book machinery."""
    from test_reader_install import SUPPORTED, find_python, make_reader_venv

    python = find_python(SUPPORTED[0])
    if python is None:
        pytest.skip(f"Python {SUPPORTED[0]} is not installed")
    output, _ = built
    folder = tmp_path_factory.mktemp("student-run")
    venv = make_reader_venv(
        python, folder / "venv", [ROOT / "requirements" / f"{GRADED}.txt"]
    )
    probe = subprocess.run([str(venv / "python"), "-c", "import nbgrader"])
    assert probe.returncode != 0, "nbgrader is in the reader's venv"
    source = nbformat.read(
        output / "course" / "source" / GRADED / f"{GRADED}.ipynb", as_version=4
    )
    answers = {
        cell.metadata["nbgrader"]["grade_id"]: cell.source
        for cell in source.cells
        if cell.metadata.get("nbgrader", {}).get("solution")
    }
    release = output / "student" / GRADED
    student = nbformat.read(release / f"{GRADED}.ipynb", as_version=4)
    for cell in student.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    work = folder / "work"
    shutil.copytree(release, work)
    nbformat.write(student, work / "solved.ipynb")
    run = subprocess.run(
        [
            str(venv / "jupyter"),
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            "--ExecutePreprocessor.timeout=300",
            "--output",
            "executed.ipynb",
            "solved.ipynb",
        ],
        cwd=work,
        capture_output=True,
        text=True,
        env={"PATH": str(venv), "MPLBACKEND": "Agg", "HOME": str(folder)},
    )
    assert run.returncode == 0, run.stderr[-3000:]

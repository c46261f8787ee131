"""The graded assignments as built for students (scripts/make_assignments.py).

The checks of every exercise run against the book's solutions, the stubs
and typical wrong answers in each chapter's own tests (tests/assignments.py,
on the chapter's namespace); a class is graded end to end, in the sandbox,
in tests/book/test_grading.py. Here: the build of every chapter's
assignment, what reaches students (no judge, no solution), the written
exercises as answer cells the instructor grades, and the student
notebook's public checks in the reader's environment.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import nbformat
import pytest

from conftest import ROOT, chapter_notebooks

sys.path.insert(0, str(ROOT / "scripts"))
import make_assignments  # noqa: E402
from make_student_edition import strip_cells  # noqa: E402

GRADED = "differential-privacy"  # the chapter whose public checks run


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
    for marker in [make_assignments.SOLUTION_START, '"assignment"']:
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
            for key in ("judge", "export", "inputs"):
                secret |= meaningful_lines(exercise["spec"].get(key, ""))
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


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.stem)
def test_written_exercises_are_answer_cells_graded_by_hand(built, path):
    """Each written exercise has a Markdown answer cell that nbgrader's
    formgrader grades by hand (in the gradebook and the CSV); the grader
    gets each graded exercise's judge, students get none."""
    output, _ = built
    release = nbformat.read(
        output / "student" / path.stem / f"{path.stem}.ipynb", as_version=4
    )
    chapter = nbformat.read(path, as_version=4)
    found = make_assignments.exercises(chapter.cells)
    manual = {
        cell.metadata["nbgrader"]["grade_id"]
        for cell in release.cells
        if cell.cell_type == "markdown"
        and cell.metadata.get("nbgrader", {}).get("grade")
    }
    written = {e["label"] for e in found if not make_assignments.graded(e)}
    assert manual == written
    grading = json.loads(
        (output / "course" / "grading" / f"{path.stem}.json").read_text()
    )
    assert [e["label"] for e in grading["auto"]] == [
        e["label"] for e in found if make_assignments.graded(e)
    ]
    assert all(e["judge"].strip() for e in grading["auto"])
    assert not (output / "student" / path.stem / "grading").exists()


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

#!/usr/bin/env python3
"""Build the graded assignments: one per chapter, with nbgrader.

Usage: python scripts/make_assignments.py [OUTPUT_DIR] [CHAPTER ...]
(or `make assignments`; default OUTPUT_DIR is _build/assignments)

One source: a chapter's exercises, their solutions and their checks live in
the chapter notebook. An exercise's Markdown cell carries, in its metadata
under ``assignment`` and keyed by the exercise's label, either a graded
exercise::

    {"points": 1,
     "stub": "code the student starts from (names set to ...)",
     "public": "checks the student sees and runs: feedback before they
                submit (asserts whose messages name the mistake)",
     "inputs": "optional: code the grader runs to draw fresh inputs",
     "export": "code run in the student's kernel after their notebook:
                sets `exported`, a dict of JSON values",
     "judge": "code the grader runs outside the student's kernel on the
               exported answer (asserts with messages)",
     "answer": "optional: code run after the book's solution cells, that
                sets the names the export reads (where the solution is
                prose, or its code names the answer otherwise)"}

(scripts/judge.py says what inputs, export and judge see) or a written one
(``{"written": true, "points": 2, "rubric": ["...", ...]}``). An exercise
without metadata is written, with the book's solution as rubric. The
checks are never run by the book (its pages and stored outputs are
unchanged); ``tests/chapters`` runs them against the book's solutions, the
stubs and typical wrong answers (tests/assignments.py).

For every chapter this writes, under OUTPUT_DIR:

- ``course/``: an nbgrader course (``source/<chapter>/``, the instructor's
  notebook with solutions; ``release/<chapter>/``, what students get;
  ``gradebook.db``; ``nbgrader_config.py``) and ``course/grading/<chapter>.json``,
  what the grader (scripts/grade_assignment.py) needs and students never
  get: each exercise's points, inputs, export and judge;
- ``student/<chapter>/``: what a student gets, the student notebook
  (nbgrader's release: the chapter without solutions, a stub and public
  checks per graded exercise, an answer cell per written exercise) and the
  data files it reads;
- ``instructor/<chapter>.md``: which exercises are graded (points) and
  which are written, with the rubric for the written ones.

No hidden check exists: the student's notebook is run as submitted in a
sandbox, and judged outside it on inputs drawn at grading time.

nbgrader does not execute notebooks while generating an assignment, so the
build reads the stored chapters and takes seconds.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_student_edition import strip_cells  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
DATA_DIR = ROOT / "data"
EXERCISE = re.compile(r"\{exercise\}\s*(.*?)\n:label: (\S+)")
SOLUTION_START = "### BEGIN SOLUTION"
SOLUTION_END = "### END SOLUTION"
NBGRADER_CONFIG = """\
c = get_config()  # noqa: F821
c.CourseDirectory.root = __file__.rsplit("/", 1)[0]
# The student's stub stays above the solution region; the region itself
# becomes one comment line in the student's notebook.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE"}
c.ClearSolutions.enforce_metadata = True
# Chapters run for up to a minute; a cell may take that long.
c.ExecutePreprocessor.timeout = 300
c.Execute.timeout = 300
c.Autograde.create_student = True
"""


def exercises(cells: list) -> list[dict]:
    """Every exercise of a chapter, in order: label, title, cell index, spec.

    ``solution_code`` is the code of the cells tagged ``solution`` between
    this exercise and the next one (its gated solution).
    """
    found = []
    for index, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        specs = cell.metadata.get("assignment", {})
        for title, label in EXERCISE.findall(cell.source):
            found.append(
                {
                    "label": label,
                    "title": title.strip(),
                    "index": index,
                    "spec": specs.get(label, {"written": True}),
                }
            )
    for number, exercise in enumerate(found):
        end = (
            found[number + 1]["index"]
            if number + 1 < len(found)
            else len(cells)
        )
        exercise["solution_code"] = "\n\n".join(
            cell.source
            for cell in cells[exercise["index"] : end]
            if cell.cell_type == "code"
            and "solution" in cell.metadata.get("tags", [])
        )
    return found


@functools.cache
def reader_markdown():
    """The reader's-download rendering of Markdown (_ext/reader_export.py):
    glued numbers, citations and references as text, directives as plain
    Markdown, so the student notebook reads well in JupyterLab and Colab."""
    sys.path.insert(0, str(ROOT / "_ext"))
    import reader_export

    notebooks = {
        path: nbformat.read(path, as_version=4)
        for path in sorted(CHAPTERS.glob("*.ipynb"))
    }
    labels = reader_export.labelled_things(notebooks)
    titles = reader_export.chapter_titles(ROOT)
    bib = reader_export.citations(ROOT / "references.bib")

    def render(stem: str, source: str) -> str:
        notebook = notebooks[CHAPTERS / f"{stem}.ipynb"]
        context = reader_export.Context(
            reader_export.glued_values(notebook), labels, titles, bib
        )
        return reader_export.render_markdown(source, context)

    return render


def graded(exercise: dict) -> bool:
    return not exercise["spec"].get("written", False)


def answer_code(exercise: dict) -> str:
    """The solution as code: the book's solution cells, then the spec's
    ``answer`` (which names the answers where the book's code does not)."""
    parts = [exercise["solution_code"], exercise["spec"].get("answer", "")]
    return "\n\n".join(part.strip("\n") for part in parts if part.strip())


def check_code(exercise: dict) -> str:
    """The check cell after an answer: the public checks, the student's
    feedback (the score comes from the judge, outside the kernel)."""
    return exercise["spec"]["public"].rstrip() + "\n"


def written_points(exercise: dict) -> float:
    return exercise["spec"].get("points", 1)


def grading_file(stem: str) -> dict:
    """What the grader needs and students never get."""
    notebook = nbformat.read(CHAPTERS / f"{stem}.ipynb", as_version=4)
    found = exercises(notebook.cells)
    auto = [
        {
            "label": e["label"],
            "title": e["title"],
            "points": e["spec"].get("points", 1),
            "inputs": e["spec"].get("inputs", ""),
            "export": e["spec"]["export"],
            "judge": e["spec"]["judge"],
        }
        for e in found
        if graded(e)
    ]
    written = [
        {"label": e["label"], "title": e["title"], "points": written_points(e)}
        for e in found
        if not graded(e)
    ]
    return {"chapter": stem, "auto": auto, "written": written}


def nbgrader_metadata(grade_id: str, **flags) -> dict:
    meta = {
        "grade": False,
        "grade_id": grade_id,
        "locked": False,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    meta.update(flags)
    return {"nbgrader": meta}


def source_notebook(stem: str) -> nbformat.NotebookNode:
    """The instructor's notebook for nbgrader, made from the chapter.

    The chapter without its solutions (as in the student edition); after
    each graded exercise an answer cell (the stub, then the solution between
    nbgrader's solution markers) and a check cell (the public checks: the
    student's feedback; a grade cell whose score the judge writes); after
    each written exercise a Markdown answer cell that the instructor grades
    in formgrader.
    """
    notebook = nbformat.read(CHAPTERS / f"{stem}.ipynb", as_version=4)
    found = exercises(notebook.cells)
    by_label = {exercise["label"]: exercise for exercise in found}
    kept = strip_cells(notebook.cells)
    cells = []
    for cell in kept:
        labels = (
            [label for _, label in EXERCISE.findall(cell.source)]
            if cell.cell_type == "markdown"
            else []
        )
        cell.metadata.pop("assignment", None)
        if cell.cell_type == "markdown":
            cell.source = reader_markdown()(stem, cell.source)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cells.append(cell)
        for label in labels:
            exercise = by_label[label]
            if graded(exercise):
                spec = exercise["spec"]
                answer = nbformat.v4.new_code_cell(
                    spec["stub"].rstrip()
                    + f"\n{SOLUTION_START}\n"
                    + answer_code(exercise).rstrip()
                    + f"\n{SOLUTION_END}\n"
                )
                answer.metadata.update(
                    nbgrader_metadata(f"{label}-answer", solution=True)
                )
                check = nbformat.v4.new_code_cell(check_code(exercise))
                check.metadata.update(
                    nbgrader_metadata(
                        label,
                        grade=True,
                        locked=True,
                        points=spec.get("points", 1),
                    )
                )
                cells += [answer, check]
            else:
                written = nbformat.v4.new_markdown_cell(
                    f"**Your answer to {label}** (written, graded by your "
                    "instructor): replace this line with your answer."
                )
                written.metadata.update(
                    nbgrader_metadata(
                        label,
                        grade=True,
                        solution=True,
                        points=written_points(exercise),
                    )
                )
                cells.append(written)
    notebook.cells = cells
    return notebook


def instructor_page(stem: str) -> str:
    """Which exercises are graded and which written, with the rubrics."""
    notebook = nbformat.read(CHAPTERS / f"{stem}.ipynb", as_version=4)
    found = exercises(notebook.cells)
    lines = [f"# Assignment: {stem}", ""]
    lines += ["| exercise | graded | points |", "| --- | --- | --- |"]
    for exercise in found:
        kind = "auto" if graded(exercise) else "written"
        points = exercise["spec"].get("points", 1) if graded(exercise) else ""
        lines.append(f"| {exercise['title']} | {kind} | {points} |")
    for exercise in found:
        if graded(exercise):
            continue
        lines += ["", f"## Rubric: {exercise['title']}", ""]
        rubric = exercise["spec"].get("rubric")
        if rubric:
            lines += [f"- {item}" for item in rubric]
        else:
            lines.append(
                "Full marks for an answer that reaches the book's "
                "solution (below) with its reasoning; half for the right "
                "result without it."
            )
        lines += ["", "The book's solution:", "", "```python"]
        lines += [answer_code(exercise) or "# (prose only)", "```"]
    return "\n".join(lines) + "\n"


def instructors_row(stem: str) -> str:
    """The row of the instructors' page table for a chapter."""
    notebook = nbformat.read(CHAPTERS / f"{stem}.ipynb", as_version=4)
    found = exercises(notebook.cells)

    def refs(kind: bool) -> str:
        chosen = [e for e in found if graded(e) == kind]
        return ", ".join(f"{{ref}}`{e['label']}`" for e in chosen) or "none"

    auto, written = counts(stem)
    return (
        f"| {{doc}}`chapters/{stem}` | {auto} | {refs(True)} | {written} "
        f"| {refs(False)} |"
    )


def counts(stem: str) -> tuple[int, int]:
    """(auto-graded, written) exercises of a chapter."""
    notebook = nbformat.read(CHAPTERS / f"{stem}.ipynb", as_version=4)
    found = exercises(notebook.cells)
    auto = sum(graded(exercise) for exercise in found)
    return auto, len(found) - auto


def data_files(stem: str) -> list[Path]:
    """The files of data/ that the chapter's code reads (by name)."""
    notebook = nbformat.read(CHAPTERS / f"{stem}.ipynb", as_version=4)
    code = "\n".join(
        cell.source for cell in notebook.cells if cell.cell_type == "code"
    )
    return [
        path
        for path in sorted(DATA_DIR.glob("*.csv"))
        if path.name in code or path.name.split("-")[-1] in code
    ]


def use_venv_tools() -> None:
    """nbgrader runs ``alembic`` by name: find it beside this Python."""
    bin_dir = str(Path(sys.executable).parent)
    os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def build(output: Path, stems: list[str]) -> None:
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    use_venv_tools()
    # The gradebook and any submissions stay; what is built is replaced.
    course = output / "course"
    for stem in stems:
        for folder in (
            course / "source" / stem,
            course / "release" / stem,
            output / "student" / stem,
        ):
            shutil.rmtree(folder, ignore_errors=True)
    for folder in ("student", "instructor", "course/source", "course/grading"):
        (output / folder).mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(NBGRADER_CONFIG)
    for stem in stems:
        folder = course / "source" / stem
        folder.mkdir()
        nbformat.write(source_notebook(stem), folder / f"{stem}.ipynb")
        for path in data_files(stem):
            shutil.copy2(path, folder / path.name)
        (output / "instructor" / f"{stem}.md").write_text(
            instructor_page(stem)
        )
        (course / "grading" / f"{stem}.json").write_text(
            json.dumps(grading_file(stem), indent=1) + "\n"
        )
    config = Config()
    config.CourseDirectory.root = str(course)
    config.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE"}
    config.ClearSolutions.enforce_metadata = True
    api = NbGraderAPI(config=config)
    for stem in stems:
        result = api.generate_assignment(stem, force=True)
        if not result["success"]:
            raise RuntimeError(f"{stem}: {result['error']}\n{result['log']}")
        # What a student gets: the release (notebook and data files).
        shutil.copytree(course / "release" / stem, output / "student" / stem)


def main(argv: list[str]) -> int:
    output = (
        Path(argv[1]) if len(argv) > 1 else ROOT / "_build" / "assignments"
    )
    stems = argv[2:] or sorted(p.stem for p in CHAPTERS.glob("*.ipynb"))
    start = time.perf_counter()
    build(output.resolve(), stems)
    for stem in stems:
        auto, written = counts(stem)
        print(f"{stem}: {auto} auto-graded, {written} written")
    print(
        f"Assignments for {len(stems)} chapters in {output} "
        f"({time.perf_counter() - start:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

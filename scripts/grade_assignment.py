#!/usr/bin/env python3
"""Grade a folder of submitted notebooks with nbgrader; write scores per exercise.

Usage: python scripts/grade_assignment.py CHAPTER SUBMISSIONS [CSV]
(or `make grade CHAPTER=... SUBMISSIONS=...`)

SUBMISSIONS holds one notebook per student, named after the student
(``ada.ipynb``) or in a folder named after the student
(``ada/<chapter>.ipynb``). The course is the one `make assignments` built
(``_build/assignments/course``, or ASSIGNMENTS_COURSE). Each notebook is
copied into the course as nbgrader expects, with the data file beside it,
and autograded: nbgrader restores the checks as the instructor wrote them
(hidden tests included), runs the notebook and records every check in the
gradebook. The CSV (default ``<chapter>-scores.csv`` in the current folder)
has one row per student and one column per graded exercise, then the total
and the maximum. A notebook that fails to run scores zero where it fails.
"""

from __future__ import annotations

import csv
import os
import shutil
import sys
import time
import warnings
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_assignments import ROOT, use_venv_tools  # noqa: E402


def submissions(folder: Path, stem: str) -> dict[str, Path]:
    """{student id: notebook} for every submission in ``folder``."""
    found = {}
    for path in sorted(folder.iterdir()):
        if path.suffix == ".ipynb":
            found[path.stem] = path
        elif (path / f"{stem}.ipynb").exists():
            found[path.name] = path / f"{stem}.ipynb"
    if not found:
        raise SystemExit(f"no submitted notebook in {folder}")
    return found


def grade_ids(course: Path, stem: str) -> list[str]:
    """The graded exercises of the assignment, in notebook order."""
    notebook = nbformat.read(
        course / "source" / stem / f"{stem}.ipynb", as_version=4
    )
    return [
        cell.metadata["nbgrader"]["grade_id"]
        for cell in notebook.cells
        if cell.metadata.get("nbgrader", {}).get("grade")
    ]


def grade(course: Path, stem: str, folder: Path, output: Path) -> list[dict]:
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    use_venv_tools()
    # nbgrader 0.9.6 trips SQLAlchemy 2's autoflush warnings; harmless.
    warnings.filterwarnings("ignore", message="Object of type <Submitted")
    found = submissions(folder, stem)
    config = Config()
    config.CourseDirectory.root = str(course)
    config.Autograde.create_student = True
    config.ExecutePreprocessor.timeout = 300
    api = NbGraderAPI(config=config)
    for student, notebook in found.items():
        target = course / "submitted" / student / stem
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        shutil.copy2(notebook, target / f"{stem}.ipynb")
        for data in (course / "source" / stem).glob("*.csv"):
            shutil.copy2(data, target / data.name)
        result = api.autograde(stem, student, force=True, create=True)
        if not result["success"]:
            raise RuntimeError(f"{student}: {result['error']}")
    ids = grade_ids(course, stem)
    rows = []
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student in found:
            submitted = gradebook.find_submission_notebook(stem, stem, student)
            scores = {g.name: g.score for g in submitted.grades}
            row = {"student": student}
            row.update({grade_id: scores[grade_id] for grade_id in ids})
            row["total"] = submitted.score
            row["max"] = submitted.max_score
            rows.append(row)
    with open(output, "w", newline="") as handle:
        writer = csv.DictWriter(handle, ["student", *ids, "total", "max"])
        writer.writeheader()
        writer.writerows(rows)
    return rows


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__)
        return 2
    stem, folder = argv[1], Path(argv[2]).resolve()
    output = Path(argv[3]) if len(argv) > 3 else Path(f"{stem}-scores.csv")
    course = Path(
        os.environ.get(
            "ASSIGNMENTS_COURSE", ROOT / "_build" / "assignments" / "course"
        )
    ).resolve()
    if not (course / "source" / stem).is_dir():
        raise SystemExit(f"no assignment {stem} in {course}: make assignments")
    start = time.perf_counter()
    rows = grade(course, stem, folder, output)
    print(
        f"Graded {len(rows)} notebooks of {stem} in "
        f"{time.perf_counter() - start:.1f} s; scores per exercise: {output}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

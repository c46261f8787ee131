#!/usr/bin/env python3
"""Grade a folder of submitted notebooks: each run in a sandbox, judged
outside it; scores into nbgrader's gradebook and a CSV.

Usage: python scripts/grade_assignment.py CHAPTER SUBMISSIONS [CSV]
(or `make grade CHAPTER=... SUBMISSIONS=...`)

SUBMISSIONS holds one notebook per student, named after the student
(``ada.ipynb``) or in a folder named after the student (``ada/<chapter>.ipynb``,
or the only notebook in ``ada/``). A browser's name for a second download
(``<chapter> (1).ipynb``) is matched; a file that matches nothing is listed
in the log, never skipped silently.

The course is the one `make assignments` built (``_build/assignments/course``
or ASSIGNMENTS_COURSE); its ``grading/<chapter>.json`` holds what the grader
needs and students never get: each exercise's ``inputs``, ``export`` and
``judge`` (scripts/judge.py says what each is).

For every run:

1. the sandbox must work here (scripts/sandbox.py); if it does not, the
   grader refuses, and runs nobody's code;
2. fresh inputs for every exercise are drawn from a generator seeded by the
   operating system (not stored);
3. the book's solution runs in the sandbox on those inputs and exports the
   reference answers, which must pass their own judge;
4. each student's notebook, as submitted, runs in a fresh sandbox (no
   hidden check is in it or near it), then the export cell writes the
   student's answers as JSON; a cell that runs longer than CELL_TIMEOUT
   or a notebook longer than TOTAL_TIMEOUT is stopped; a notebook that cannot be read,
   a kernel that dies, an export that is missing or malformed all score
   0 for what they did not export, with the reason;
5. the grader judges each answer outside the sandbox, writes the scores
   into the gradebook (auto scores of the grade cells; written exercises
   stay for the instructor to grade in formgrader) and writes, fresh, the
   CSV (one row per student, one column per exercise titled
   ``label: title``, the total, the maximum and the reasons), a feedback
   file per student (each exercise's score and the judge's message, never
   a check's source) and a log.
"""

from __future__ import annotations

import csv
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import nbformat
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import judge  # noqa: E402
import sandbox  # noqa: E402
from make_assignments import ROOT, use_venv_tools  # noqa: E402

# A cell that runs longer than CELL_TIMEOUT seconds, or a notebook longer
# than TOTAL_TIMEOUT, ends the student's run (the chapters' longest cells
# take seconds, a whole chapter under a minute): the kernel is killed and
# what was not exported scores 0, with the reason.
CELL_TIMEOUT = int(os.environ.get("GRADER_CELL_TIMEOUT", "60"))
TOTAL_TIMEOUT = int(os.environ.get("GRADER_TOTAL_TIMEOUT", "600"))
ANSWERS_LIMIT = 20 * 2**20
COPY = re.compile(r"^(?P<stem>.+?) ?\(\d+\)$")


def submissions(folder: Path, stem: str) -> tuple[dict[str, Path], list[str]]:
    """({student: notebook}, [files that match no student, and why])."""
    found, unmatched = {}, []
    for path in sorted(folder.iterdir()):
        if path.is_dir():
            notebooks = sorted(path.glob("*.ipynb"))
            named = [p for p in notebooks if _chapter_name(p) == stem]
            chosen = named or notebooks
            if len(chosen) == 1:
                found[path.name] = chosen[0]
            else:
                unmatched.append(
                    f"{path.name}/: {len(chosen)} notebooks, expected one "
                    f"({stem}.ipynb)"
                )
        elif path.suffix == ".ipynb":
            student = path.stem
            copy = COPY.match(student)
            if copy:  # "ada (1).ipynb", a browser's second download
                student = copy["stem"]
            if student in found:
                unmatched.append(
                    f"{path.name}: {student} has a notebook already"
                )
            else:
                found[student] = path
        else:
            unmatched.append(f"{path.name}: not a notebook")
    if not found:
        raise SystemExit(f"no submitted notebook in {folder}")
    return found, unmatched


def _chapter_name(path: Path) -> str:
    copy = COPY.match(path.stem)
    return copy["stem"] if copy else path.stem


# What an honest answer to the book's exercises never needs; a submission
# that uses one is flagged in the CSV for the instructor to read (the
# sandbox and the judge make these attempts fail, but an attempt is worth
# a conversation).
SUSPICIOUS = {
    "get_ipython": "uses get_ipython()",
    "transform_cell": "changes how cells are transformed",
    "input_transformers": "changes how cells are transformed",
    "ast_transformers": "changes how cells are transformed",
    "events.register": "registers an IPython event hook",
    "displayhook": "touches the display hook",
    "settrace": "sets a trace function",
    "answers.json": "names the grader's answers file",
    "_grader_": "names the grader's variables",
    "gradebook": "names the gradebook",
    "sqlite3": "uses sqlite3",
    "socket": "opens sockets",
    "subprocess": "starts processes",
    "os.fork": "forks processes",
    "os._exit": "ends the kernel",
    "__builtins__": "changes builtins",
}


def suspicious(notebook: nbformat.NotebookNode) -> list[str]:
    """Why a submission's code should be read by a person, if it should."""
    code = "\n".join(
        cell.source for cell in notebook.cells if cell.cell_type == "code"
    )
    return sorted({why for word, why in SUSPICIOUS.items() if word in code})


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """The notebook, with cell ids made unique (a copied cell keeps its
    id; nbformat would refuse the file)."""
    notebook = nbformat.read(path, as_version=4)
    seen = set()
    for number, cell in enumerate(notebook.cells):
        if cell.get("id") in seen or not cell.get("id"):
            cell["id"] = f"cell-{number}"
        seen.add(cell["id"])
    return notebook


def run_sandboxed(
    notebook: nbformat.NotebookNode,
    data_files: list[Path],
    exports: list[tuple[str, str]],
    inputs: dict,
) -> tuple[dict | None, str | None]:
    """Run the notebook and the export cell in a fresh sandbox; return
    (the exported answers or None, why not)."""
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_core.utils import run_sync
    from nbclient import NotebookClient

    base = Path(tempfile.mkdtemp(prefix="book-grade-run-"))
    work, kernel_dir = base / "work", base / "kernel"
    work.mkdir()
    kernel_dir.mkdir()
    for path in data_files:
        shutil.copy2(path, work / path.name)
    notebook = nbformat.reads(nbformat.writes(notebook), as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    notebook.cells.append(
        nbformat.v4.new_code_cell(judge.export_cell(exports, inputs))
    )
    specs = KernelSpecManager(
        kernel_dirs=[str(sandbox.kernel_spec(base / "spec", work, kernel_dir))]
    )
    # Asynchronous, as nbclient expects: with a blocking manager its wait
    # for output would block the loop that notices a dead kernel.
    manager = AsyncKernelManager(
        kernel_name="sandboxed",
        kernel_spec_manager=specs,
        transport="ipc",
        ip=str(kernel_dir / "ipc"),
    )
    # Our own clocks (a cell's, the notebook's): when one runs out, the
    # sandbox is killed, and nbclient reports a dead kernel.
    clocks = {"cell": None, "ran out": None}

    def start_cell(cell, cell_index):
        clocks["cell"] = threading.Timer(CELL_TIMEOUT, ran_out, ["cell"])
        clocks["cell"].start()

    def end_cell(cell, cell_index, execute_reply):
        if clocks["cell"] is not None:
            clocks["cell"].cancel()

    def ran_out(which):
        clocks["ran out"] = which
        sandbox.cleanup(kernel_dir)

    client = NotebookClient(
        notebook,
        km=manager,
        kernel_name="sandboxed",
        timeout=None,
        allow_errors=True,
        startup_timeout=120,
        resources={"metadata": {"path": str(work)}},
        on_cell_execute=start_cell,
        on_cell_executed=end_cell,
    )
    why = None
    watchdog = threading.Timer(TOTAL_TIMEOUT, ran_out, ["notebook"])
    watchdog.start()
    try:
        client.execute()
    except Exception as error:  # a dead kernel, a cell that never ended
        why = f"the notebook stopped running ({type(error).__name__}: {error})"
    finally:
        watchdog.cancel()
        end_cell(None, None, None)
        try:
            run_sync(manager.shutdown_kernel)(now=True)
        except Exception:  # it may be gone already
            pass
        sandbox.cleanup(kernel_dir)
    if clocks["ran out"] == "cell":
        why = f"a cell ran longer than {CELL_TIMEOUT} s and was stopped"
    elif clocks["ran out"] == "notebook":
        why = f"the notebook ran longer than {TOTAL_TIMEOUT} s and was stopped"
    answers_path = work / "answers.json"
    try:
        if not answers_path.is_file():
            return None, why or "the notebook did not run to its end"
        if answers_path.stat().st_size > ANSWERS_LIMIT:
            return None, "the exported answers are too large"
        answers = json.loads(answers_path.read_text())
        if not isinstance(answers, dict):
            return None, "the exported answers are not a dict"
        return answers, why
    except (ValueError, OSError) as error:
        return None, f"the exported answers cannot be read ({error})"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def load_grading(course: Path, stem: str) -> dict:
    path = course / "grading" / f"{stem}.json"
    if not path.exists():
        raise SystemExit(f"no {path}: run `make assignments` first")
    return json.loads(path.read_text())


def reference_answers(course, stem, grading, inputs) -> dict:
    """The book's solution, exported on the inputs; it must pass."""
    source = read_notebook(course / "source" / stem / f"{stem}.ipynb")
    data = sorted((course / "source" / stem).glob("*.csv"))
    exports = [(e["label"], e["export"]) for e in grading["auto"]]
    answers, why = run_sandboxed(source, data, exports, inputs)
    if answers is None:
        raise RuntimeError(f"the book's solution did not export: {why}")
    for exercise in grading["auto"]:
        label = exercise["label"]
        message = judge.judge(
            exercise, answers.get(label), answers.get(label), inputs[label]
        )
        if message:
            raise RuntimeError(
                f"the book's solution of {label} fails its judge: {message}"
            )
    return answers


def judge_student(grading, answers, why, reference, inputs) -> dict:
    """{label: (points, message)} for every auto-graded exercise."""
    results = {}
    for exercise in grading["auto"]:
        label = exercise["label"]
        if answers is None:
            results[label] = (0.0, why)
            continue
        message = judge.judge(
            exercise, answers.get(label), reference.get(label), inputs[label]
        )
        points = 0.0 if message else float(exercise["points"])
        results[label] = (points, message)
    return results


def record_in_gradebook(
    course: Path, stem: str, student: str, results
) -> dict:
    """Write the auto scores into nbgrader's gradebook; return the manual
    scores of the written exercises given so far ({label: score})."""
    from nbgrader.api import Gradebook, MissingEntry

    warnings.filterwarnings("ignore", message="Object of type <Submitted")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_student(student)
        try:
            gradebook.find_submission(stem, student)
        except MissingEntry:
            gradebook.add_submission(stem, student)
        for label, (points, _) in results.items():
            grade = gradebook.find_grade(label, stem, stem, student)
            grade.auto_score = points
        gradebook.db.commit()
        written = {}
        submitted = gradebook.find_submission_notebook(stem, stem, student)
        for grade in submitted.grades:
            if grade.name not in results:
                written[grade.name] = grade.manual_score
        return written


def grade(
    course: Path, stem: str, folder: Path, output: Path, seed=None
) -> list[dict]:
    """Grade every submission in folder; return the CSV's rows. `seed`
    fixes the inputs (for tests only: a real run draws them from the
    operating system and keeps no seed)."""
    use_venv_tools()
    reason = sandbox.check()
    if reason:
        raise SystemExit(
            f"refusing to grade: the sandbox does not work here ({reason}). "
            "A student's notebook is never run without it."
        )
    grading = load_grading(course, stem)
    found, unmatched = submissions(folder, stem)
    rng = np.random.default_rng(
        secrets.randbits(128) if seed is None else seed
    )
    inputs = {
        exercise["label"]: judge.draw_inputs(exercise, rng)
        for exercise in grading["auto"]
    }
    reference = reference_answers(course, stem, grading, inputs)
    data = sorted((course / "source" / stem).glob("*.csv"))
    exports = [(e["label"], e["export"]) for e in grading["auto"]]
    output.parent.mkdir(parents=True, exist_ok=True)
    feedback = output.parent / f"{stem}-feedback"
    shutil.rmtree(feedback, ignore_errors=True)
    feedback.mkdir()
    log = [f"grading {stem}: {len(found)} notebooks"]
    log += [f"not graded: {line}" for line in unmatched]
    rows = []
    for student, path in found.items():
        flags = []
        try:
            notebook = read_notebook(path)
        except Exception as error:  # a truncated or foreign file
            answers, why = (
                None,
                f"the file is not a readable notebook ({error})",
            )
        else:
            flags = suspicious(notebook)
            answers, why = run_sandboxed(notebook, data, exports, inputs)
        results = judge_student(grading, answers, why, reference, inputs)
        written = record_in_gradebook(course, stem, student, results)
        rows.append(row_of(grading, student, results, written))
        rows[-1]["flags"] = "; ".join(flags)
        if flags:
            log.append(f"{student} flagged: {'; '.join(flags)}")
        write_feedback(feedback / f"{student}.md", grading, student, results)
        for label, (_, message) in results.items():
            if message:
                log.append(f"{student} {label}: {message}")
    write_csv(output, grading, rows)
    (output.parent / f"{stem}-grading.log").write_text("\n".join(log) + "\n")
    return rows


def column(exercise: dict) -> str:
    return f"{exercise['label']}: {exercise['title']}"


def row_of(grading, student, results, written) -> dict:
    row = {"student": student}
    for exercise in grading["auto"]:
        row[column(exercise)] = results[exercise["label"]][0]
    for exercise in grading["written"]:
        score = written.get(exercise["label"])
        row[column(exercise)] = "" if score is None else score
    row["total"] = sum(points for points, _ in results.values()) + sum(
        score or 0 for score in written.values()
    )
    row["max"] = sum(e["points"] for e in grading["auto"] + grading["written"])
    row["problems"] = "; ".join(
        f"{label}: {message}"
        for label, (_, message) in results.items()
        if message
    )
    return row


def write_csv(output: Path, grading: dict, rows: list[dict]) -> None:
    """Write the CSV afresh (a new file moved into place)."""
    names = ["student"]
    names += [column(e) for e in grading["auto"] + grading["written"]]
    names += ["total", "max", "problems", "flags"]
    fresh = output.with_suffix(".csv.new")
    with open(fresh, "w", newline="") as handle:
        writer = csv.DictWriter(handle, names)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(fresh, output)


def write_feedback(path: Path, grading, student, results) -> None:
    lines = [f"# {grading['chapter']}: feedback for {student}", ""]
    for exercise in grading["auto"]:
        points, message = results[exercise["label"]]
        lines.append(
            f"- **{exercise['title']}**: {points:g} of {exercise['points']:g}"
            + (f". {message}" if message else "")
        )
    for exercise in grading["written"]:
        lines.append(
            f"- **{exercise['title']}** (written): graded by your instructor"
        )
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__)
        return 2
    stem, folder = argv[1], Path(argv[2]).resolve()
    default = ROOT / "_build" / "grades" / f"{stem}-scores.csv"
    output = Path(argv[3]).resolve() if len(argv) > 3 else default
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
        f"{time.perf_counter() - start:.1f} s; scores: {output}; feedback "
        f"per student: {output.parent / (stem + '-feedback')}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

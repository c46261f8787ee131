"""Grading a class: safe against a dishonest student, fair to an honest one,
and robust to a careless one (scripts/grade_assignment.py).

One chapter is graded end to end, in the sandbox, with a class of
submissions: the book's solutions, the untouched notebook, right answers in
other accepted forms, broken notebooks, and every cheat that worked against
nbgrader's own grading (hidden checks in the student's kernel). A cheat is
a cell placed before the untouched stubs (a notebook of just those cells,
so each costs one short kernel): under the old grading each of these gave
full marks to a blank notebook; here each must score 0, and nothing it does
may change another student's score.
"""

from __future__ import annotations

import csv
import json
import socket
import sqlite3
import sys
import threading

import nbformat
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import grade_assignment  # noqa: E402
import make_assignments  # noqa: E402
import sandbox  # noqa: E402

GRADED = "reconstruction-attacks"
SEED = 20261129  # the inputs of this test's run (a real run draws them)

# Every cheat found against the old grading, as the cell a student adds.
CHEATS = {
    "reads-the-source": f"""
import json, pathlib
for _p in ["../../../source/{GRADED}/{GRADED}.ipynb",
           "{{course}}/source/{GRADED}/{GRADED}.ipynb"]:
    if pathlib.Path(_p).exists():
        for _c in json.loads(pathlib.Path(_p).read_text())["cells"]:
            if _c["cell_type"] == "code":
                exec("".join(_c["source"]))
""",
    "writes-the-gradebook": """
import sqlite3
_db = sqlite3.connect("{course}/gradebook.db")
_db.execute("update grade set auto_score = 0")
_db.execute("update grade set manual_score = 7")
_db.commit()
""",
    "asserts-become-pass": """
import ast
class _NoAssert(ast.NodeTransformer):
    def visit_Assert(self, node):
        return ast.Pass()
get_ipython().ast_transformers.append(_NoAssert())
""",
    "empties-checks": """
def _drop(lines):
    return [] if any("assert" in line for line in lines) else lines
get_ipython().input_transformers_post.append(_drop)
""",
    "blanks-every-cell": """
get_ipython().transform_cell = lambda raw: "pass\\n"
""",
    "prints-a-score": """
def _score(*args):
    get_ipython().displayhook(2.0)
    print(2.0)
get_ipython().events.register("pre_run_cell", _score)
""",
    "forges-messages": """
_k = get_ipython().kernel
_k.session.send(_k.iopub_socket, "execute_result",
                {"data": {"text/plain": "2.0"}, "metadata": {},
                 "execution_count": 1}, parent=_k.get_parent())
""",
    "forges-the-answers": """
import json
json.dump({"recon-ex-rounding": {"exact": 1.0, "coarse": 0.123,
                                  "zero base": "ValueError"}},
          open("answers.json", "w"))
get_ipython().transform_cell = lambda raw: "pass\\n"
""",
    "phones-home": """
import urllib.request
try:
    urllib.request.urlopen("http://127.0.0.1:{port}/", timeout=3)
except Exception:
    pass
""",
    "fork-bomb": """
import os
try:
    while True:
        if os.fork() == 0:
            import time; time.sleep(60); os._exit(0)
except OSError:
    pass
""",
    "memory-bomb": """
try:
    _hoard = [bytearray(2**30) for _ in range(64)]
except MemoryError:
    pass
""",
    "patches-comparisons": """
import builtins, numpy as np
np.isclose = lambda *a, **k: True
np.allclose = lambda *a, **k: True
builtins.abs = lambda x: 0
""",
    "always-equal": """
class _Equal(float):
    def __eq__(self, other):
        return True
    __hash__ = float.__hash__
eps_each, eps_total, promise = _Equal(5.0), _Equal(5.0), _Equal(0.5)
""",
    "kills-the-kernel": """
import os
os._exit(1)
""",
    "stuck-cell": """
import time
time.sleep(600)
""",
}


def stub_cells(source: nbformat.NotebookNode) -> list:
    """The untouched answer cells of the release, in order."""
    return [
        cell
        for cell in source.cells
        if cell.metadata.get("nbgrader", {}).get("solution")
        and cell.cell_type == "code"
    ]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A class graded in the sandbox: {student: CSV row}, the course, and
    what the fake server on this machine's loopback heard."""
    if sandbox.check():
        pytest.fail(f"the grading sandbox does not work: {sandbox.check()}")
    output = tmp_path_factory.mktemp("assignments")
    make_assignments.build(output, [GRADED])
    course = output / "course"
    release = nbformat.read(
        output / "student" / GRADED / f"{GRADED}.ipynb", as_version=4
    )
    source = course / "source" / GRADED / f"{GRADED}.ipynb"
    folder = tmp_path_factory.mktemp("submitted")

    heard = []
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def listen():
        try:
            connection, _ = server.accept()
            heard.append("connection")
            connection.close()
        except OSError:
            pass

    threading.Thread(target=listen, daemon=True).start()

    (folder / "solutions.ipynb").write_text(source.read_text())
    (folder / "untouched").mkdir()
    nbformat.write(release, folder / "untouched" / f"{GRADED} (1).ipynb")
    for name, code in CHEATS.items():
        notebook = nbformat.v4.new_notebook()
        cheat = code.replace("{course}", str(course)).replace(
            "{port}", str(port)
        )
        notebook.cells = [
            nbformat.v4.new_code_cell("import numpy as np"),
            nbformat.v4.new_code_cell(cheat),
        ] + stub_cells(release)
        nbformat.write(notebook, folder / f"{name}.ipynb")
    # Right answers in other forms: NumPy scalars, 3 significant figures,
    # a warning on stderr.
    forms = nbformat.v4.new_notebook()
    forms.cells = [
        nbformat.v4.new_code_cell(
            "import sys\nimport numpy as np\n"
            "print('a warning', file=sys.stderr)\n"
            "eps_each = np.float32(0.1)\n"
            "eps_total = np.int64(100)\n"
            "promise = 1.00\n"
        )
    ]
    nbformat.write(forms, folder / "other-forms.ipynb")
    # A careless class: a truncated file, a duplicated cell (same id), a
    # file that is not a notebook.
    (folder / "truncated.ipynb").write_text(source.read_text()[:5000])
    duplicated = json.loads(source.read_text())
    answer = next(
        number
        for number, cell in enumerate(duplicated["cells"])
        if cell["metadata"].get("nbgrader", {}).get("solution")
    )
    duplicated["cells"].insert(answer, duplicated["cells"][answer])
    (folder / "duplicated.ipynb").write_text(json.dumps(duplicated))
    (folder / "notes.txt").write_text("not a notebook")

    scores = output / "grades" / f"{GRADED}-scores.csv"
    grade_assignment.CELL_TIMEOUT = 20  # the stuck cell's wait
    try:
        grade_assignment.grade(course, GRADED, folder, scores, seed=SEED)
    finally:
        grade_assignment.CELL_TIMEOUT = 60
        server.close()
    with open(scores, newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    log = (scores.parent / f"{GRADED}-grading.log").read_text()
    return rows, course, heard, log, scores


def auto_columns(row) -> list[str]:
    return [
        name
        for name in row
        if name.startswith("recon-ex-") and row[name] != ""
    ]


def test_the_book_s_solutions_get_full_marks(graded):
    rows, *_ = graded
    row = rows["solutions"]
    auto = auto_columns(row)
    assert len(auto) == 3
    assert all(float(row[name]) > 0 for name in auto), row
    assert row["problems"] == "", row


def test_the_untouched_notebook_scores_zero_with_reasons(graded):
    rows, *_ = graded
    row = rows["untouched"]  # "reconstruction-attacks (1).ipynb" in its folder
    assert float(row["total"]) == 0
    assert "is still ...: set it" in row["problems"]


@pytest.mark.parametrize("cheat", list(CHEATS))
def test_every_cheat_scores_zero(graded, cheat):
    rows, *_ = graded
    row = rows[cheat]
    assert float(row["total"]) == 0, row


def test_cheats_are_flagged_for_a_person_to_read(graded):
    rows, *_ = graded
    for cheat in (
        "asserts-become-pass",
        "blanks-every-cell",
        "forges-the-answers",
    ):
        assert rows[cheat]["flags"], cheat
    assert rows["solutions"]["flags"] == ""


def test_nobody_reached_the_network_or_the_gradebook(graded):
    rows, course, heard, _, _ = graded
    assert heard == []
    with sqlite3.connect(course / "gradebook.db") as db:
        manual = db.execute(
            "select count(*) from grade where manual_score is not null"
        ).fetchone()[0]
    assert manual == 0
    # The solutions' scores, written before or after the cheats ran, stand.
    assert float(rows["solutions"]["total"]) == 4.0


def test_right_answers_in_other_forms_get_their_marks(graded):
    rows, *_ = graded
    row = rows["other-forms"]
    budget = next(n for n in row if n.startswith("recon-ex-budget"))
    assert float(row[budget]) == 1.0, row


def test_a_careless_class_is_graded_to_the_end(graded):
    rows, _, _, log, scores = graded
    assert float(rows["truncated"]["total"]) == 0
    assert "not a readable notebook" in rows["truncated"]["problems"]
    assert float(rows["duplicated"]["total"]) == 4.0, rows["duplicated"]
    assert rows["kills-the-kernel"]["problems"]
    assert rows["stuck-cell"]["problems"]
    assert "notes.txt: not a notebook" in log
    assert scores.parent.name == "grades"


def test_no_hidden_check_or_seed_is_left_where_a_student_runs(graded):
    rows, course, *_ = graded
    release = (course / "release" / GRADED / f"{GRADED}.ipynb").read_text()
    grading = json.loads((course / "grading" / f"{GRADED}.json").read_text())
    for exercise in grading["auto"]:
        for line in exercise["judge"].splitlines():
            if len(line.strip()) > 30:
                assert line.strip() not in release, line
    assert not (course / "release" / GRADED / "grading").exists()
    assert str(SEED) not in json.dumps(grading)

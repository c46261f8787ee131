"""Shared paths and fixtures for the book's tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS_DIR = ROOT / "chapters"
DATA_DIR = ROOT / "data"
BUILD_DIR = ROOT / "_build"
HTML_DIR = BUILD_DIR / "html"
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"


def toc_files() -> list[str]:
    """Every document named in _toc.yml (root first), without extension."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def glued_value(stem: str, name: str):
    """The value chapters/<stem>.ipynb glued under `name`, as stored.

    This is what a reader of the book sees (nbval checks that re-executing
    the chapter reproduces the stored outputs).
    """
    import ast

    import nbformat

    notebook = nbformat.read(CHAPTERS_DIR / f"{stem}.ipynb", as_version=4)
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook", {})
            if record.get("name") == name:
                text = output["data"][record["mime_prefix"] + "text/plain"]
                return ast.literal_eval(text)
    raise KeyError(f"{stem} glues nothing under {name!r}")


def chapter_notebooks() -> list[Path]:
    """The chapter notebooks, in file-name order."""
    return sorted(CHAPTERS_DIR.glob("*.ipynb"))


def build_book(source: Path, *extra: str) -> subprocess.CompletedProcess:
    """Run the HTML build with warnings as errors and nitpicky references."""
    command = [
        str(JUPYTER_BOOK),
        "build",
        str(source),
        "-W",
        "-n",
        "--keep-going",
        *extra,
    ]
    return subprocess.run(command, capture_output=True, text=True, cwd=source)


# Work a fixture runs as separate processes (pip's resolutions, the
# reader's chapters when their file runs alone) runs two at a time: each is
# mostly one busy core, and the CI machine has two. Under pytest-xdist the
# reader's chapters run one at a time (test_reader_install). The tests that
# run them share one fixture per module that executes everything those
# tests selected, then each test reads its own result.
PARALLEL_RUNS = int(os.environ.get("BOOK_PARALLEL_RUNS", "2"))


def run_pytest(*args: str, env=None) -> subprocess.CompletedProcess:
    """Run pytest on `args` in a process of its own (no xdist, no cache),
    from the repository's root; returns the finished process."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-q",
            "-rf",
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )


def selected_params(request, name: str) -> list:
    """The values the collected tests of this module take for parameter `name`."""
    return [
        item.callspec.params[name]
        for item in request.session.items
        if getattr(item, "module", None) is request.module
        and name in getattr(getattr(item, "callspec", None), "params", {})
    ]


def run_parallel(function, arguments) -> dict:
    """{argument: function(argument)} for each argument, PARALLEL_RUNS at a time."""
    from concurrent.futures import ThreadPoolExecutor

    unique = list(dict.fromkeys(arguments))
    with ThreadPoolExecutor(max_workers=max(1, PARALLEL_RUNS)) as pool:
        return dict(zip(unique, pool.map(function, unique), strict=True))


def once_per_run(name: str, compute, portable=None):
    """compute() once per test run, shared by the pytest-xdist workers.

    Under pytest-xdist every worker has its own session, so the first
    worker that asks computes it while holding a lock (_build/<name>.lock)
    and stores the result beside it (pickled: `portable(result)` where the
    result needs changing to be pickled); a worker that asks later (or
    waits on the lock) reads that result instead of computing it again.
    The run's id (xdist's PYTEST_XDIST_TESTRUNUID, the same in every
    worker) keeps a stale result of an earlier run from being reused.
    Without xdist, compute() is called.
    """
    import fcntl
    import pickle

    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run_id is None:
        return compute()
    BUILD_DIR.mkdir(exist_ok=True)
    record = BUILD_DIR / f"{name}.pickle"
    with open(BUILD_DIR / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if record.exists():
            with open(record, "rb") as stored:
                if pickle.load(stored) == run_id:
                    return pickle.load(stored)
        result = compute()
        partial = record.with_suffix(".partial")
        with open(partial, "wb") as stored:
            pickle.dump(run_id, stored)
            pickle.dump(portable(result) if portable else result, stored)
        partial.replace(record)  # whole or not at all
        return result


@pytest.fixture(scope="session")
def html_build() -> subprocess.CompletedProcess:
    """Build the whole book into _build/html once per test run (shared by
    the pytest-xdist workers: once_per_run)."""
    return once_per_run("html-build", lambda: build_book(ROOT))


# --- the book in a browser (tests/book/browser.py) ------------------------------------
#
# One server per session; each kind of page visit (every page at 1280 px,
# every chapter on a phone) is made once per test run, by whichever test
# file or pytest-xdist worker asks first; the others read what it recorded.
# The browser files import tests/book/browser.py themselves, so the
# fixtures below find it. Its assertions (and those of the dials it moves)
# are rewritten by pytest, as a test file's are.

pytest.register_assert_rewrite("browser", "dials", "dial_values")


@pytest.fixture(scope="session")
def site(html_build):
    """The built book served on 127.0.0.1 (a free port) for the session."""
    from browser import serve

    with serve(html_build) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    """Headless Debian chromium, for the tests that drive a page themselves
    (search, download, phone navigation)."""
    from browser import launch

    with launch() as chromium:
        yield chromium


@pytest.fixture(scope="session")
def visits(site):
    """visit(page) -> Visit; every page of the toc is visited once per run
    at 1280 px, on first use."""
    from browser import PAGES, cached_visits, visit_page

    return cached_visits("browser-visits", site, visit_page, PAGES)


@pytest.fixture(scope="session")
def phone_visits(site):
    """visit(page) -> Visit; every page is opened once per run on a
    phone, on first use."""
    from browser import PAGES, cached_visits, phone_visit

    return cached_visits("browser-phone-visits", site, phone_visit, PAGES)


STUDENT_DIR = BUILD_DIR / "student"


@pytest.fixture(scope="session")
def student_build() -> subprocess.CompletedProcess:
    """The student edition (scripts/make_student_edition.py) built into
    _build/student once per test run (shared by the pytest-xdist workers)."""
    command = [
        sys.executable,
        str(ROOT / "scripts" / "make_student_edition.py"),
        str(STUDENT_DIR),
    ]
    return once_per_run(
        "student-build",
        lambda: subprocess.run(
            command, capture_output=True, text=True, cwd=ROOT
        ),
    )


@pytest.fixture(scope="session")
def student_visits(student_build):
    """visit(page) -> Visit: every page of the student edition, served on
    its own, checked by axe-core once per run (browser.axe_visit)."""
    from browser import STUDENT_PAGES, axe_visit, cached_visits, serve

    with serve(student_build, STUDENT_DIR / "_build" / "html") as url:
        yield cached_visits(
            "browser-student-visits", url, axe_visit, STUDENT_PAGES
        )


# --- running a chapter's own functions ------------------------------------------------
#
# A chapter's code cells are executed once, in this process, in a fresh
# namespace; the tests then call the chapter's own functions there. This is
# what a reader's kernel does (top to bottom, in chapters/ so the loader finds
# ../data/), without starting a Jupyter kernel per chapter. Measured on the
# six chapters of the first edition (tests/chapters, same machine, same load):
# testbook (a Jupyter kernel per module, values passed back as JSON) 26.2 s;
# in-process 8.5 s.


class ChapterNamespace:
    """The variables and functions of a chapter executed top to bottom."""

    def __init__(self, stem: str):
        self.stem = stem
        # A registered module, so that dataclasses and pickling can find it.
        module = types.ModuleType(f"chapter_{stem.replace('-', '_')}")
        sys.modules[module.__name__] = module
        self.namespace: dict = module.__dict__

    def run_cells(self) -> None:
        """Execute every code cell in order, in chapters/, with a non-GUI backend."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import nbformat

        notebook = nbformat.read(
            CHAPTERS_DIR / f"{self.stem}.ipynb", as_version=4
        )
        previous = os.getcwd()
        os.chdir(CHAPTERS_DIR)
        try:
            for number, cell in enumerate(notebook.cells):
                if cell.cell_type != "code":
                    continue
                code = compile(
                    cell.source, f"<{self.stem}.ipynb cell {number}>", "exec"
                )
                exec(code, self.namespace)
                plt.close("all")
        finally:
            os.chdir(previous)

    def inject(self, code: str, pop: bool = True) -> None:
        """Run extra code (test fixtures) in the chapter's namespace."""
        exec(textwrap.dedent(code), self.namespace)

    def value(self, expression: str):
        """Evaluate an expression in the chapter's namespace.

        A result that JSON can carry comes back as JSON would carry it
        (tuples as lists, numpy floats as floats), as from a kernel; any
        other object comes back as it is.
        """
        result = eval(expression, self.namespace)
        try:
            return json.loads(json.dumps(result))
        except (TypeError, ValueError):
            return result

    def __getitem__(self, name: str):
        return self.namespace[name]


@contextmanager
def chapter_kernel(stem: str):
    """Execute chapters/<stem>.ipynb top to bottom and yield its namespace."""
    chapter = ChapterNamespace(stem)
    chapter.run_cells()
    yield chapter


def value_error_message(kernel, expression: str) -> str:
    """Evaluate `expression` in the chapter; it must raise ValueError. Returns the message.

    Any other exception propagates and fails the test.
    """
    try:
        kernel.value(expression)
    except ValueError as error:
        return str(error)
    raise AssertionError(f"{expression} did not raise ValueError")

"""Test layers for the whole repository (this file sits at the root so that
it also applies when pytest is given only notebooks, as `make check` does).
"""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent

# --- layers ---
# Each test gets the marker of its layer, from where it lives, so that
# `make check` and `make test` can pick layers with -m:
#   chapters   tests/chapters/: the functions each chapter teaches
#   notebooks  chapters/*.ipynb under nbval: stored outputs still hold
#   book       tests/book/: data, toc, builds, PDF, editions, browser


# A chapter whose stored outputs need a package that this Python cannot
# install (PipelineDP declares Python < 3.14): its nbval cells would
# differ there, so they skip with the reason. The chapter itself runs (it
# says in one sentence what it skips).
NEEDS = {"dp-at-scale": "pipeline_dp"}


def missing_package_reason(path: Path) -> str | None:
    import importlib.util

    module = NEEDS.get(path.stem)
    if module is None or importlib.util.find_spec(module) is not None:
        return None
    return (
        f"{module} is not installed on this Python; the stored outputs of "
        f"{path.stem} were made with it"
    )


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath)).resolve()
        param = (
            item.callspec.params.get("path")
            if hasattr(item, "callspec")
            else None
        )
        for candidate in (path, param):
            if isinstance(candidate, Path) and candidate.suffix == ".ipynb":
                reason = missing_package_reason(candidate)
                if reason:
                    item.add_marker(pytest.mark.skip(reason=reason))
        if path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebooks)
        elif (ROOT / "tests" / "chapters") in path.parents:
            item.add_marker(pytest.mark.chapters)
        else:
            item.add_marker(pytest.mark.book)
    items.sort(key=first_rank)  # stable: files keep their order otherwise


# --- nbval runs each chapter as a reader would, at the precision shown ---
# nbval starts a chapter's kernel in a folder of its own that holds only
# the CSV files the chapter names (as a reader who downloads one chapter
# has it), not in chapters/ beside ../data/. Every output of a checked cell
# is then compared with the stored one as a reader sees it
# (scripts/notebook_outputs.py): text with its numbers, floats to a
# relative 1e-9 (the last bits differ between BLAS kernels, so between
# machines), integers and words exactly, and every figure pixel for pixel
# or, where Matplotlib snapped a line or a label to the next pixel, by
# what it plots (scripts/figure_data.py: every point to half a pixel,
# against tests/figures/<chapter>.json, which `make execute` writes). The
# kernel records what each figure plots through an IPython start-up file
# (IPYTHONDIR) that leaves the chapter's namespace as a reader has it.

import copy  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

import nbval.plugin as nbval_plugin  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import figure_data  # noqa: E402
import notebook_outputs  # noqa: E402

DATA_DIR = ROOT / "data"
FIGURES_DIR = ROOT / "tests" / "figures"


def data_files_used_by(notebook: Path) -> list[Path]:
    """The CSV files of data/ that a notebook names."""
    text = notebook.read_text()
    return [p for p in sorted(DATA_DIR.glob("*.csv")) if p.name in text]


def stored_figures(notebook: Path) -> dict:
    """{cell id: [what each figure of the cell plots]} as stored."""
    path = FIGURES_DIR / f"{notebook.stem}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def setup_alone(self):
    """nbval's setup, with the kernel alone in a folder with its data,
    recording what its figures plot."""
    self.alone_in = Path(tempfile.mkdtemp(prefix=f"{self.path.stem}-"))
    for data_file in data_files_used_by(self.path):
        shutil.copy(data_file, self.alone_in)
    environment, self.figure_log = figure_data.recording_kernel()
    self.figure_offset = 0
    self.stored_figures = stored_figures(self.path)
    option = self.config.option
    before = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)
    try:
        self.kernel = nbval_plugin.RunningKernel(
            nbval_plugin.CURRENT_ENV_KERNEL_NAME
            if option.nbval_current_env
            else option.nbval_kernel_name
            or self.nb.metadata.get("kernelspec", {}).get("name", "python"),
            cwd=str(self.alone_in),
            startup_timeout=option.nbval_kernel_startup_timeout,
        )
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    self.setup_sanitize_files()


def teardown_alone(self):
    nbval_teardown(self)
    shutil.rmtree(getattr(self, "alone_in", ""), ignore_errors=True)
    log = getattr(self, "figure_log", None)
    if log is not None:
        shutil.rmtree(log.parent, ignore_errors=True)


def sanitized(self, outputs) -> list[dict]:
    """Outputs with nbval's sanitizing patterns applied to their text."""
    kept = []
    for output in outputs:
        output = copy.deepcopy(dict(output))
        for key, value in output.items():
            if isinstance(value, str):
                output[key] = self.sanitize(value)
        for mime, value in output.get("data", {}).items():
            if isinstance(value, str) and mime != "image/png":
                output["data"][mime] = self.sanitize(value)
        kept.append(output)
    return kept


def compare_as_shown(self, test, ref, skip_compare=None):
    """nbval's comparison, replaced: every output as a reader sees it."""
    self.comparison_traceback = []
    records = self.read_figures()
    detail = notebook_outputs.outputs_difference(
        sanitized(self, test),
        sanitized(self, ref),
        records,
        self.parent.stored_figures.get(self.cell.get("id"), []),
    )
    if detail is None:
        return True
    self.comparison_traceback.append(
        f"{self.name}: the output of a run alone beside its data is not "
        f"the stored one ({detail}); run `make execute` on the chapter "
        "and look at the change before storing it"
    )
    return False


def read_figures(self) -> list[dict]:
    """What the figures this cell drew plot (read once per cell)."""
    parent = self.parent
    records, parent.figure_offset = figure_data.read_new(
        parent.figure_log, parent.figure_offset
    )
    self.figures_read = True
    return records


def runtest_reading_figures(self):
    """nbval's run of a cell; a cell whose outputs were not compared (not
    checked, or failed before) still has its figures' records read, so
    the next cell gets its own."""
    self.figures_read = False
    try:
        nbval_runtest(self)
    finally:
        if not self.figures_read:
            self.read_figures()


# nbval offers no hook for these, so its methods are replaced here.
nbval_teardown = nbval_plugin.IPyNbFile.teardown
nbval_runtest = nbval_plugin.IPyNbCell.runtest
nbval_plugin.IPyNbFile.setup = setup_alone
nbval_plugin.IPyNbFile.teardown = teardown_alone
nbval_plugin.IPyNbCell.compare_outputs = compare_as_shown
nbval_plugin.IPyNbCell.read_figures = read_figures
nbval_plugin.IPyNbCell.runtest = runtest_reading_figures


# --- order ---
# `make test` runs every layer in one pytest run, two files at a time
# (pytest-xdist, --dist loadfile --no-loadscope-reorder: a file is a unit,
# units are handed out in collection order). The long files go first, so
# the two workers finish together instead of one idling at the end: the
# HTML build (which the other book files then share, see html_build), the
# PDF build, the reader's venvs, the browser: the file whose tests first ask
# for the page visits at 1280 px, the one that first asks for the visits on
# a phone (each made once per run, then shared by every browser file and
# both workers: `visits` in tests/conftest.py), the search, the lecture
# slides (built and opened on their own, about a minute). The other
# browser files only read those visits, so they need not go first.
FIRST = [
    "tests/book/test_build.py",
    "tests/book/test_pdf.py",
    "tests/book/test_reader_install.py",
    "tests/book/test_browser_pages.py",
    "tests/book/test_browser_phone.py",
    "tests/book/test_browser_search.py",
    "tests/book/test_slides.py",
    "tests/book/test_editions.py",
    "tests/book/test_assignments.py",
    "tests/book/test_grading.py",
    "tests/book/test_blas_kernels.py",
]


def first_rank(item) -> int:
    path = Path(str(item.fspath)).resolve()
    for rank, name in enumerate(FIRST):
        if path == ROOT / name:
            return rank
    return len(FIRST)


# --- where the time went ---
# At the end of a run, the test time of each layer (setup, call and
# teardown of its tests, summed over the workers) and the wall-clock time.

import time  # noqa: E402

_STARTED = time.monotonic()
# Checked in this order: a notebook's keywords also hold its folder's name,
# "chapters".
LAYERS = ("book", "notebooks", "chapters")


def pytest_terminal_summary(terminalreporter):
    seconds = dict.fromkeys(LAYERS, 0.0)
    counts = dict.fromkeys(LAYERS, 0)
    for reports in terminalreporter.stats.values():
        for report in reports:
            keywords = getattr(report, "keywords", {})
            layer = next((name for name in LAYERS if name in keywords), None)
            if layer is None or not hasattr(report, "duration"):
                continue
            seconds[layer] += report.duration
            counts[layer] += report.when == "call"
    if not any(counts.values()):
        return
    terminalreporter.section("where the time went")
    for layer in ("chapters", "notebooks", "book"):
        if counts[layer]:
            terminalreporter.write_line(
                f"{layer:>10}: {counts[layer]:5d} tests, "
                f"{seconds[layer]:7.1f} s of test time"
            )
    terminalreporter.write_line(
        f"{'wall clock':>10}: {time.monotonic() - _STARTED:7.1f} s "
        "for the whole run (test time is summed over the workers)"
    )

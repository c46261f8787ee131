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


# --- nbval runs each chapter as a reader would, and exactly ---
# nbval starts a chapter's kernel in a folder of its own that holds only
# the CSV files the chapter names (as a reader who downloads one chapter
# has it), not in chapters/ beside ../data/. After nbval's own comparison
# (text outputs, sanitized), every output of a checked cell must equal the
# stored one exactly, figures (image/png) included: the stored notebook is
# what running the chapter alone produces. One execution thus checks what
# nbval checks and what a separate standalone run checked before.

import copy  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

import nbval.plugin as nbval_plugin  # noqa: E402

DATA_DIR = ROOT / "data"


def data_files_used_by(notebook: Path) -> list[Path]:
    """The CSV files of data/ that a notebook names."""
    text = notebook.read_text()
    return [p for p in sorted(DATA_DIR.glob("*.csv")) if p.name in text]


def setup_alone(self):
    """nbval's setup, with the kernel alone in a folder with its data."""
    self.alone_in = Path(tempfile.mkdtemp(prefix=f"{self.path.stem}-"))
    for data_file in data_files_used_by(self.path):
        shutil.copy(data_file, self.alone_in)
    option = self.config.option
    self.kernel = nbval_plugin.RunningKernel(
        nbval_plugin.CURRENT_ENV_KERNEL_NAME
        if option.nbval_current_env
        else option.nbval_kernel_name
        or self.nb.metadata.get("kernelspec", {}).get("name", "python"),
        cwd=str(self.alone_in),
        startup_timeout=option.nbval_kernel_startup_timeout,
    )
    self.setup_sanitize_files()


def teardown_alone(self):
    nbval_teardown(self)
    shutil.rmtree(getattr(self, "alone_in", ""), ignore_errors=True)


def comparable(outputs) -> list[dict]:
    """Outputs as nbval sees them (streams merged), without the execution
    count (a cell's number, not its output)."""
    merged = nbval_plugin.coalesce_streams(copy.deepcopy(list(outputs)))
    kept = []
    for output in merged:
        output = dict(output)
        output.pop("execution_count", None)
        for key in ("data", "metadata"):
            if key in output:
                output[key] = dict(output[key])
        kept.append(output)
    return kept


def first_difference(now: list[dict], before: list[dict]) -> str:
    """Where two output lists first differ, in words."""
    if len(now) != len(before):
        return f"{len(now)} outputs now, {len(before)} stored"
    for number, (new, old) in enumerate(zip(now, before, strict=True)):
        keys = sorted(
            k for k in set(new) | set(old) if new.get(k) != old.get(k)
        )
        if keys:
            mimes = sorted(
                mime
                for mime in set(new.get("data", {})) | set(old.get("data", {}))
                if new.get("data", {}).get(mime)
                != old.get("data", {}).get(mime)
            )
            return f"output {number}: {', '.join(keys + mimes)} differ"
    return "no difference"


def runtest_exactly(self):
    """nbval's check, then every output compared exactly."""
    stored = copy.deepcopy(self.cell.outputs)
    nbval_runtest(self)
    checked = self.options.get("check") and self.cell.execution_count
    if not checked:
        return  # nbval-ignore-output, or a cell never run
    now, before = comparable(self.test_outputs), comparable(stored)
    if now == before:
        return
    detail = first_difference(now, before)
    raise AssertionError(
        f"{self.name}: the output of a run alone beside its data is not "
        f"the stored one ({detail}); run `make execute` on the chapter "
        "and look at the change before storing it"
    )


# nbval offers no hook for either, so its methods are wrapped here.
nbval_teardown = nbval_plugin.IPyNbFile.teardown
nbval_runtest = nbval_plugin.IPyNbCell.runtest
nbval_plugin.IPyNbFile.setup = setup_alone
nbval_plugin.IPyNbFile.teardown = teardown_alone
nbval_plugin.IPyNbCell.runtest = runtest_exactly


# --- order ---
# `make test` runs every layer in one pytest run, two files at a time
# (pytest-xdist, --dist loadfile --no-loadscope-reorder: a file is a unit,
# units are handed out in collection order). The long files go first, so
# the two workers finish together instead of one idling at the end: the
# HTML build (which the other book files then share, see html_build), the
# PDF build, the reader's venvs, the browser.
FIRST = [
    "tests/book/test_build.py",
    "tests/book/test_pdf.py",
    "tests/book/test_reader_install.py",
    "tests/book/test_browser.py",
    "tests/book/test_editions.py",
    "tests/book/test_assignments.py",
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

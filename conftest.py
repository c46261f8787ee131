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
# install (PipelineDP declares Python < 3.14): its nbval cells and its
# standalone byte-for-byte run would differ there, so they skip with the
# reason. The chapter itself runs (it says in one sentence what it skips).
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


# --- order ---
# `make test` runs every layer in one pytest run, two files at a time
# (pytest-xdist, --dist loadfile --no-loadscope-reorder: a file is a unit,
# units are handed out in collection order). The long files go first, so
# the two workers finish together instead of one idling at the end: the
# HTML build (which the other book files then share, see html_build), the
# PDF build, the reader's venvs and the standalone runs, the browser.
FIRST = [
    "tests/book/test_build.py",
    "tests/book/test_pdf.py",
    "tests/book/test_reader_install.py",
    "tests/book/test_execute.py",
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

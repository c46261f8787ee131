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


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath)).resolve()
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

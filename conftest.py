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

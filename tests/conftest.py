"""Shared paths and fixtures for the book's tests."""
from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from testbook import testbook

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


def chapter_notebooks() -> list[Path]:
    """The chapter notebooks, in file-name order."""
    return sorted(CHAPTERS_DIR.glob("*.ipynb"))


def build_book(source: Path, *extra: str) -> subprocess.CompletedProcess:
    """Run the HTML build with warnings as errors and nitpicky references."""
    command = [str(JUPYTER_BOOK), "build", str(source), "-W", "-n", "--keep-going", *extra]
    return subprocess.run(command, capture_output=True, text=True, cwd=source)


@pytest.fixture(scope="session")
def html_build() -> subprocess.CompletedProcess:
    """Build the whole book into _build/html once per test session."""
    return build_book(ROOT)


# --- running a chapter's own functions (testbook) -------------------------------------

_VALUE_ERROR_PROBE = '''
def _value_error_message(call):
    """The message of the ValueError (or subclass) that call() raises, or None."""
    try:
        call()
    except ValueError as error:
        return str(error)
    return None
'''


@contextmanager
def chapter_kernel(stem: str):
    """Execute chapters/<stem>.ipynb top to bottom with testbook and yield the live kernel.

    The kernel runs in chapters/, as a reader's would, so the chapter's loader
    finds ../data/. The tests then call the chapter's own functions in it.
    """
    notebook = CHAPTERS_DIR / f"{stem}.ipynb"
    with testbook(notebook, execute=True, timeout=300,
                  resources={"metadata": {"path": str(CHAPTERS_DIR)}}) as kernel:
        kernel.inject(_VALUE_ERROR_PROBE, pop=True)
        yield kernel


def value_error_message(kernel, expression: str) -> str:
    """Evaluate `expression` in the chapter's kernel; it must raise ValueError. Returns the message.

    Any other exception propagates (as testbook's TestbookRuntimeError) and fails the test.
    """
    message = kernel.value(f"_value_error_message(lambda: {expression})")
    assert message is not None, f"{expression} did not raise ValueError"
    return message

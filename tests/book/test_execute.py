"""A chapter runs alone beside its data, and reproduces its stored self.

Each chapter is copied alone into an empty folder with only the CSV files it
names (as a reader who downloads it would have it), executed top to bottom
as `make execute` does, and compared with the stored notebook byte for byte.
Only the outputs of cells tagged nbval-ignore-output (wall-clock timings, an
unseedable library) may differ; nbval skips the same cells.
"""

import shutil
import subprocess
import sys

import nbformat
import pytest

from conftest import (
    DATA_DIR,
    ROOT,
    chapter_notebooks,
    run_parallel,
    selected_params,
)

IGNORED = "nbval-ignore-output"
EXECUTE = ROOT / "scripts" / "execute_notebooks.py"


def without_ignored_outputs(path):
    """The notebook at `path` as text, with the outputs of nbval-ignore-output cells blanked."""
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if IGNORED in cell.metadata.get("tags", []):
            cell.outputs = []
    return nbformat.writes(notebook)


def data_files_used_by(notebook_path):
    """The data files a chapter reads: adult_with_pii.csv and any other it names."""
    text = notebook_path.read_text()
    return [
        path for path in sorted(DATA_DIR.glob("*.csv")) if path.name in text
    ]


@pytest.fixture(scope="module")
def standalone_runs(request, tmp_path_factory):
    """Each selected chapter copied alone beside its data and executed there
    (as `make execute` does, in its own process); {path: (copy, run)}."""

    def run_alone(path):
        folder = tmp_path_factory.mktemp(path.stem)
        copy = folder / path.name
        shutil.copy(path, copy)
        for data_file in data_files_used_by(path):
            shutil.copy(data_file, folder)
        run = subprocess.run(
            [sys.executable, str(EXECUTE), str(copy)],
            capture_output=True,
            text=True,
        )
        return copy, run

    return run_parallel(run_alone, selected_params(request, "path"))


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.stem)
def test_chapter_runs_alone_and_reproduces_the_stored_notebook(
    standalone_runs, path
):
    copy, run = standalone_runs[path]
    assert run.returncode == 0, run.stderr[-3000:]
    if IGNORED not in path.read_text():
        assert copy.read_bytes() == path.read_bytes()
    assert without_ignored_outputs(copy) == without_ignored_outputs(path)

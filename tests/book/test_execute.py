"""`make execute` is reproducible: re-executing a chapter reproduces the stored notebook byte for byte.

Only the outputs of cells tagged nbval-ignore-output (wall-clock timings, an
unseedable library) may differ; nbval skips the same cells.
"""

import shutil
import sys

import nbformat
import pytest
from conftest import ROOT, chapter_notebooks

sys.path.insert(0, str(ROOT / "scripts"))
from execute_notebooks import execute_in_place  # noqa: E402

IGNORED = "nbval-ignore-output"


def without_ignored_outputs(path):
    """The notebook at `path` as text, with the outputs of nbval-ignore-output cells blanked."""
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if IGNORED in cell.metadata.get("tags", []):
            cell.outputs = []
    return nbformat.writes(notebook)


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.stem)
def test_reexecution_reproduces_the_stored_notebook(tmp_path, path):
    folder = tmp_path / "chapters"
    folder.mkdir()
    shutil.copytree(ROOT / "data", tmp_path / "data")
    copy = folder / path.name
    shutil.copy(path, copy)
    execute_in_place(copy)
    if IGNORED not in path.read_text():
        assert copy.read_bytes() == path.read_bytes()
    assert without_ignored_outputs(copy) == without_ignored_outputs(path)

"""A reader downloads one chapter without its data: it says clearly where to get it.

(That a chapter runs alone beside its CSV, and reproduces its stored outputs
exactly, is checked by nbval: the root conftest.py runs each chapter's kernel
in a folder holding only its data, see test_nbval_alone.py.)
"""

import shutil

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from conftest import DATA_DIR, chapter_notebooks

DATA_FILES = sorted(DATA_DIR.glob("*.csv"))


def data_files_used_by(notebook_path):
    """The data files a chapter reads: adult_with_pii.csv and any other CSV it names."""
    text = notebook_path.read_text()
    return [path for path in DATA_FILES if path.name in text]


def run_in(folder, notebook_path):
    """Execute a copy of the notebook with ``folder`` as its working directory."""
    notebook = nbformat.read(notebook_path, as_version=4)
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(folder)}},
    ).execute()
    return notebook


@pytest.mark.parametrize(
    "notebook_path", chapter_notebooks(), ids=lambda p: p.stem
)
def test_chapter_without_data_says_where_to_get_it(tmp_path, notebook_path):
    shutil.copy(notebook_path, tmp_path)
    with pytest.raises(CellExecutionError) as failure:
        run_in(tmp_path, tmp_path / notebook_path.name)
    message = str(failure.value)
    assert "FileNotFoundError" in message
    assert "Run it yourself" in message
    assert ".csv" in message and "Download" in message

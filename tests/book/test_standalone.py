"""A reader downloads one chapter without its data: it says clearly where to get it.

(That a chapter runs alone beside its CSV, and reproduces its stored outputs
exactly, is checked by nbval: the root conftest.py runs each chapter's kernel
in a folder holding only its data, see test_nbval_alone.py. That the
download runs in Jupyter in a reader's own install: test_reader_install.py.)

The chapter's cells run here in order, in this process (as the chapter
tests run them), in an empty folder, until one raises: what a kernel would
show the reader is that exception. Without a kernel per chapter this costs
a second instead of nineteen kernel starts and imports.
"""

import os
import warnings

import nbformat
import pytest

from conftest import chapter_notebooks


def first_error(folder, notebook_path) -> BaseException | None:
    """Run the chapter's code cells in `folder` until one raises; return
    that exception (None if every cell ran)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    notebook = nbformat.read(notebook_path, as_version=4)
    namespace = {"__name__": "__main__"}
    previous = os.getcwd()
    os.chdir(folder)
    try:
        # What the cells set (warning filters) stays in here.
        with warnings.catch_warnings():
            for number, cell in enumerate(notebook.cells):
                if cell.cell_type != "code":
                    continue
                code = compile(cell.source, f"<cell {number}>", "exec")
                try:
                    exec(code, namespace)
                except Exception as error:  # the reader's first error
                    return error
    finally:
        os.chdir(previous)
        plt.close("all")
    return None


@pytest.mark.parametrize(
    "notebook_path", chapter_notebooks(), ids=lambda p: p.stem
)
def test_chapter_without_data_says_where_to_get_it(tmp_path, notebook_path):
    # The download alone in a folder of its own: neither its CSV beside it
    # nor a ../data/ folder.
    folder = tmp_path / "download"
    folder.mkdir()
    error = first_error(folder, notebook_path)
    assert isinstance(error, FileNotFoundError), repr(error)
    message = str(error)
    assert "Run it yourself" in message
    assert ".csv" in message and "Download" in message

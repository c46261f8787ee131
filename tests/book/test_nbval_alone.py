"""nbval runs each chapter alone beside its data and compares what it shows.

The root conftest.py starts nbval's kernel in a folder of its own holding
only the CSV files the notebook names, and replaces nbval's comparison by
one of every output as a reader sees it, figures included
(scripts/notebook_outputs.py; tests/book/test_output_comparison.py shows
what it accepts and what it does not). Two small notebooks show that both
can fail: one prints what its folder holds, one stores a figure that its
code no longer draws.
"""

import base64
import shutil

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from conftest import BUILD_DIR, ROOT, run_pytest

# A 1 x 1 PNG.
TINY_PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a5dd4a10"
        "0000000049454e44ae426082"
    )
).decode()
IMAGE_TEXT = "<IPython.core.display.Image object>"


def notebook(source: str, outputs: list) -> nbformat.NotebookNode:
    cell = new_code_cell(source, execution_count=1, outputs=outputs)
    book = new_notebook(cells=[cell])
    book.metadata["kernelspec"] = {"name": "python3", "language": "python"}
    return book


@pytest.fixture(scope="module")
def nbval_run():
    folder = BUILD_DIR / "nbval-alone"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    alone = notebook(
        "import os  # beside adult_with_pii.csv\nprint(sorted(os.listdir()))",
        [new_output("stream", name="stdout", text="['adult_with_pii.csv']\n")],
    )
    figure = (
        "import base64\n"
        "from IPython.display import Image, display\n"
        f"display(Image(base64.b64decode('{TINY_PNG}')))"
    )
    # The figure as an earlier version of the code drew it; its text is
    # the same, so nbval's own comparison alone would pass.
    stale_png = TINY_PNG[:-8] + "AAAAAAA="
    stale = notebook(
        figure,
        [
            new_output(
                "display_data",
                data={"image/png": stale_png, "text/plain": IMAGE_TEXT},
            )
        ],
    )
    nbformat.write(alone, folder / "alone.ipynb")
    nbformat.write(stale, folder / "stale.ipynb")
    return run_pytest(str(folder.relative_to(ROOT)))


def test_kernel_sees_only_the_notebooks_data(nbval_run):
    """The kernel's folder holds the CSV the notebook names and nothing
    else: not the notebooks beside it, not ../data/."""
    assert "FAILED _build/nbval-alone/alone.ipynb" not in nbval_run.stdout, (
        nbval_run.stdout[-3000:]
    )
    assert "1 failed, 1 passed" in nbval_run.stdout, nbval_run.stdout[-3000:]


def test_a_stale_figure_fails_with_what_differs(nbval_run):
    assert "FAILED _build/nbval-alone/stale.ipynb" in nbval_run.stdout, (
        nbval_run.stdout[-3000:]
    )
    assert "image/png: a figure that cannot be read" in nbval_run.stdout

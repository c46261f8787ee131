"""Run notebooks as Jupyter runs them, each in a fresh kernel, one process.

Usage (with a reader venv's Python): python run_in_jupyter.py NB.ipynb ...

Each notebook runs top to bottom in a kernel of its own, started in the
notebook's folder, with nbclient (the engine of `jupyter nbconvert
--execute` and of a notebook server's "Run all"), and is saved beside
itself as executed.ipynb. One process for several notebooks saves
starting Python and importing nbconvert again for each (about 2 s of CPU
a notebook). Prints one JSON line per notebook: {"notebook", "error"}.
"""

import json
import sys
import traceback
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def run(path: Path) -> str | None:
    """None if every cell ran, else the end of the traceback."""
    try:
        notebook = nbformat.read(path, as_version=4)
        NotebookClient(
            notebook,
            timeout=300,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()
        nbformat.write(notebook, path.parent / "executed.ipynb")
    except Exception:  # reported for this notebook; the next one still runs
        return traceback.format_exc()[-3000:]
    return None


if __name__ == "__main__":
    for name in sys.argv[1:]:
        error = run(Path(name).resolve())
        print(json.dumps({"notebook": name, "error": error}), flush=True)

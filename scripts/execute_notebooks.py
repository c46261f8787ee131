#!/usr/bin/env python3
"""Execute notebooks in place, top to bottom, in their own folder.

Usage: python scripts/execute_notebooks.py chapters/*.ipynb

Outputs are stored so that the book can build with execution off and nbval can
check them. Volatile metadata is not stored (timings, widget state, the
Python patch version, which would make the file differ on every other
machine), so re-executing an unchanged notebook writes a byte-identical file.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def coalesce_streams(notebook) -> None:
    """Merge consecutive stdout (or stderr) outputs of a cell into one.

    How a kernel's prints are cut into messages depends on timing, so two
    prints can arrive as one output or as two; merged, the stored file is
    the same on every run.
    """
    for cell in notebook.cells:
        merged = []
        for output in cell.get("outputs", []):
            previous = merged[-1] if merged else None
            if (
                output.get("output_type") == "stream"
                and previous is not None
                and previous.get("output_type") == "stream"
                and previous.get("name") == output.get("name")
            ):
                previous["text"] = previous["text"] + output["text"]
            else:
                merged.append(output)
        if "outputs" in cell:
            cell.outputs = merged


def normalize_metadata(notebook) -> None:
    """Drop metadata that differs between machines or runs."""
    notebook.metadata.pop("widgets", None)
    notebook.metadata.get("language_info", {}).pop("version", None)
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)


def execute_in_place(path: Path, timeout: int = 600) -> float:
    """Run every cell of the notebook at ``path`` and save it; return the seconds taken."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(path.parent.resolve())}},
    )
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    coalesce_streams(notebook)
    normalize_metadata(notebook)
    nbformat.write(notebook, path)
    return elapsed


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    for name in paths:
        seconds = execute_in_place(Path(name))
        print(f"{name}: executed in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

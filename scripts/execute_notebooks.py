#!/usr/bin/env python3
"""Execute notebooks in place, top to bottom, in their own folder.

Usage: python scripts/execute_notebooks.py chapters/*.ipynb

Outputs are stored so that the book can build with execution off and nbval can
check them. Volatile metadata is not stored (timings, widget state, the
Python patch version, which would make the file differ on every other
machine), so re-executing an unchanged notebook writes a byte-identical file.

A cell whose new outputs show what its stored outputs show (compared as
the test suite compares them: floats to a relative 1e-9, figures by what
they plot; scripts/notebook_outputs.py) keeps its stored outputs, so that
re-executing on another machine, whose BLAS rounds the last bits
differently, changes nothing. What each figure plots is written to
tests/figures/<chapter>.json (scripts/figure_data.py), the reference the
suite compares a figure with when its pixels moved.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))

import figure_data  # noqa: E402
import notebook_outputs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "tests" / "figures"


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


def figures_path(notebook_path: Path) -> Path:
    """Where the figure records of a chapter are stored."""
    return FIGURES / f"{notebook_path.stem}.json"


def read_figures(notebook_path: Path) -> dict:
    """{cell id: [figure record, ...]} as stored, or {}."""
    path = figures_path(notebook_path)
    return json.loads(path.read_text()) if path.exists() else {}


def write_figures(notebook_path: Path, figures: dict) -> None:
    FIGURES.mkdir(parents=True, exist_ok=True)
    text = json.dumps(figures, sort_keys=True, separators=(",", ":"))
    figures_path(notebook_path).write_text(text + "\n")


def keep_what_agrees(old_cells, new_cells, old_figures, new_figures):
    """Where a cell's new outputs show what its stored ones show, put the
    stored outputs (and figure records) back."""
    for old, new in zip(old_cells, new_cells, strict=True):
        if new.cell_type != "code" or old.get("id") != new.get("id"):
            continue
        if old.source != new.source or not old.execution_count:
            continue
        now = new_figures.get(new.id, [])
        before = old_figures.get(old.id, [])
        detail = notebook_outputs.outputs_difference(
            new.outputs, old.outputs, now, before
        )
        if detail is None:
            new.outputs = old.outputs
            if old.id in old_figures:
                new_figures[new.id] = before


def execute_in_place(path: Path, timeout: int = 600) -> float:
    """Run every cell of the notebook at ``path`` and save it; return the
    seconds taken."""
    stored = nbformat.read(path, as_version=4)
    notebook = nbformat.read(path, as_version=4)
    environment, log = figure_data.recording_kernel()
    offset, figures = 0, {}

    def collect(cell, cell_index, execute_reply):
        nonlocal offset
        records, offset = figure_data.read_new(log, offset)
        if records:
            figures[cell.id] = records

    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(path.parent.resolve())}},
        on_cell_executed=collect,
    )
    start = time.perf_counter()
    try:
        client.execute(env={**os.environ, **environment})
    finally:
        shutil.rmtree(log.parent, ignore_errors=True)
    elapsed = time.perf_counter() - start
    coalesce_streams(notebook)
    normalize_metadata(notebook)
    keep_what_agrees(stored.cells, notebook.cells, read_figures(path), figures)
    nbformat.write(notebook, path)
    write_figures(path, figures)
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

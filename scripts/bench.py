#!/usr/bin/env python3
"""Measure, on this machine: clean HTML and PDF builds, page weight, nbval over all chapters, each chapter's execution.
Then scripts/bench_dp_at_scale.py times one DP aggregation (pandas, PipelineDP
local and on Spark) at 1x, 10x and 100x the visits and writes
data/dp-at-scale-timings.csv.

Usage: python scripts/bench.py     (or `make bench`)

The figures are reported, not asserted: wall-clock time depends on the machine.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def timed(command: list[str]) -> float:
    """Run a command from the book's root and return its wall-clock seconds; fail loudly."""
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def execution_seconds(notebook_path: Path) -> float:
    """Execute a copy of a notebook (outputs discarded) and return the seconds taken."""
    notebook = nbformat.read(notebook_path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(notebook_path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def main() -> int:
    chapters = sorted((ROOT / "chapters").glob("*.ipynb"))
    print(
        f"machine: {platform.node()}, {platform.processor() or platform.machine()}, "
        f"python {platform.python_version()}"
    )
    with tempfile.TemporaryDirectory() as out:
        build = timed(
            [
                str(BIN / "jupyter-book"),
                "build",
                ".",
                "-W",
                "-n",
                "--keep-going",
                "--path-output",
                out,
            ]
        )
    print(f"clean HTML build:               {build:7.1f} s")
    print("page weight (scripts/page_weight.py):")
    subprocess.run(
        [str(BIN / "python"), str(ROOT / "scripts" / "page_weight.py")],
        cwd=ROOT,
        check=True,
    )
    with tempfile.TemporaryDirectory() as out:
        pdf = timed(
            [
                str(BIN / "jupyter-book"),
                "build",
                ".",
                "--builder",
                "pdflatex",
                "-W",
                "-n",
                "--keep-going",
                "--path-output",
                out,
            ]
        )
        info = subprocess.run(
            ["pdfinfo", str(Path(out) / "_build" / "latex" / "book.pdf")],
            capture_output=True,
            text=True,
        ).stdout
        pages = next(
            (
                line.split()[-1]
                for line in info.splitlines()
                if line.startswith("Pages:")
            ),
            "?",
        )
    print(f"clean PDF build:                {pdf:7.1f} s  ({pages} pages)")
    nbval = timed(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "--nbval",
            "--nbval-current-env",
            "--nbval-sanitize-with",
            "tests/sanitize.cfg",
            "-p",
            "no:cacheprovider",
            *[str(p.relative_to(ROOT)) for p in chapters],
        ]
    )
    print(f"nbval, all {len(chapters)} chapters:        {nbval:7.1f} s")
    for path in chapters:
        print(f"execute {path.name:32s}{execution_seconds(path):7.1f} s")
    print("DP at scale: pandas, PipelineDP local and Spark, 1x-100x visits")
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_dp_at_scale.py")],
        cwd=ROOT,
        check=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

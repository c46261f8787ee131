#!/usr/bin/env python3
"""Measure, on this machine: clean HTML and PDF builds, page weight, nbval over all chapters, each chapter's execution.
Then scripts/bench_dp_at_scale.py times one DP aggregation (pandas, PipelineDP
local and on Spark) at 1x and 10x the visits and writes
data/dp-at-scale-timings.csv. Last, the disk space a reader's install takes:
the core chapters, the core with OpenDP and dp-accounting, the core with
scikit-learn and diffprivlib, and every chapter (requirements.txt).

Usage: python scripts/bench.py [SECTION ...]    (or `make bench`: all)
Sections: html, weight, pdf, nbval, execute, dp-at-scale, install.

The figures are reported, not asserted: wall-clock time depends on the machine.
"""

from __future__ import annotations

import os
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


# What a reader installs, from the smallest set to the whole book: each is a
# fresh venv made by uv (as the reader-install test makes them), measured
# with du.
INSTALLS = [
    ("core (NumPy, pandas, SciPy, Matplotlib)", "randomized-response.txt"),
    ("core + OpenDP, dp-accounting", "gaussian-and-accounting.txt"),
    ("core + scikit-learn, diffprivlib", "private-ml.txt"),
    ("everything (requirements.txt)", "../requirements.txt"),
]


def install_sizes() -> None:
    """Disk space of a fresh venv holding each reader's requirements."""
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"}
    uv = str(BIN / "uv")
    with tempfile.TemporaryDirectory() as scratch:
        empty = Path(scratch) / "empty"
        subprocess.run(
            [uv, "venv", "--quiet", "--python", sys.executable, str(empty)],
            check=True,
            env=env,
        )
        base = kilobytes(empty)
        print(
            f"reader install on Python {platform.python_version()} "
            f"(JupyterLab included; an empty venv is {base / 1e3:.1f} MB):"
        )
        for number, (label, requirements) in enumerate(INSTALLS):
            folder = Path(scratch) / f"venv{number}"
            subprocess.run(
                [
                    uv,
                    "venv",
                    "--quiet",
                    "--python",
                    sys.executable,
                    str(folder),
                ],
                check=True,
                env=env,
            )
            subprocess.run(
                [
                    uv,
                    "pip",
                    "install",
                    "--quiet",
                    "--python",
                    str(folder / "bin" / "python"),
                    "--requirement",
                    str(ROOT / "requirements" / requirements),
                ],
                check=True,
                env=env,
            )
            size = kilobytes(folder)
            print(
                f"  {label:42s} {size / 1e3:6.0f} MB"
                f"  (requirements/{requirements})".replace(
                    "requirements/../", ""
                )
            )


def kilobytes(folder: Path) -> int:
    """What `du -s` counts for a folder, in kB (1,000 bytes)."""
    du = subprocess.run(
        ["du", "-s", "--block-size=1000", str(folder)],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(du.stdout.split()[0])


SECTIONS = [
    "html",
    "weight",
    "pdf",
    "nbval",
    "execute",
    "dp-at-scale",
    "install",
]


def main(sections: list[str]) -> int:
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        print(f"unknown section(s) {sorted(unknown)}; choose from {SECTIONS}")
        return 2
    sections = sections or SECTIONS
    chapters = sorted((ROOT / "chapters").glob("*.ipynb"))
    print(
        f"machine: {platform.node()}, {platform.processor() or platform.machine()}, "
        f"python {platform.python_version()}"
    )
    if "html" in sections:
        html_build()
    if "weight" in sections:
        print("page weight (scripts/page_weight.py):")
        subprocess.run(
            [str(BIN / "python"), str(ROOT / "scripts" / "page_weight.py")],
            cwd=ROOT,
            check=True,
        )
        # Issue 45: each chapter after the intro, and its time to a
        # readable page over slow 4G.
        subprocess.run(
            [
                str(BIN / "python"),
                str(ROOT / "scripts" / "page_weight.py"),
                "--slow-4g",
                "intro.html",
            ],
            cwd=ROOT,
            check=True,
        )
    if "pdf" in sections:
        pdf_build()
    if "nbval" in sections:
        nbval_run(chapters)
    if "execute" in sections:
        for path in chapters:
            print(f"execute {path.name:32s}{execution_seconds(path):7.1f} s")
    if "dp-at-scale" in sections:
        print(
            "DP at scale: pandas, PipelineDP local and Spark, 1x and 10x visits"
        )
        subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "bench_dp_at_scale.py")],
            cwd=ROOT,
            check=True,
        )
    if "install" in sections:
        install_sizes()
    return 0


def html_build() -> None:
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


def pdf_build() -> None:
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


def nbval_run(chapters: list[Path]) -> None:
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

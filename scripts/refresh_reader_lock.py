#!/usr/bin/env python3
"""Let the newest library versions into the reader lock, deliberately.

Usage: python scripts/refresh_reader_lock.py [--chapters A B ...]
                                             [--write-anyway]
(`make refresh-reader-lock`.)

requirements/reader-lock-3.13.txt pins what requirements.txt resolved to,
on Python 3.13 (Linux), the last time this ran: the test suite's reader
runs on the newest Python install exactly that (tests/book/
test_reader_install.py), so a new upstream release cannot change what they
print without anyone noticing. This script

1. resolves requirements.txt afresh on Python 3.13 (the newest versions
   the requirements allow today, with the uv the toolchain pins);
2. prints what moved: a table of every package whose version changed,
   appeared or went;
3. runs every chapter (or those named) with the new versions, in a venv of
   its own, alone in a folder beside its data, in plain Jupyter, and
   compares what it prints with the stored notebook
   (scripts/reader_outputs.py);
4. writes the new lock if every chapter prints the book's numbers; else it
   names each cell that changed and keeps the old lock (exit status 1).
   Then either bound the package in requirements/chapters.yml (and run
   scripts/make_requirements.py), or, if the new numbers are right, store
   them (`make execute` with those versions in the toolchain) and run
   this again. `--write-anyway` writes the lock regardless.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import reader_outputs  # noqa: E402

PYTHON = "3.13"
LOCK = ROOT / "requirements" / f"reader-lock-{PYTHON}.txt"
REQUIREMENTS = ROOT / "requirements.txt"
UV = Path(sys.executable).parent / "uv"
RUN_IN_JUPYTER = ROOT / "tests" / "book" / "run_in_jupyter.py"
UV_ENV = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"}
HEADER = (
    "# The newest versions requirements.txt allowed on Python {python} "
    "(Linux)\n"
    "# when this lock was last refreshed: the reader runs of the test "
    "suite\n"
    "# install exactly these on Python {python}. Written by `make "
    "refresh-reader-lock`\n"
    "# (scripts/refresh_reader_lock.py), which lets a new version in only "
    "when\n"
    "# every chapter still prints the book's numbers with it.\n"
)


find_python = reader_outputs.find_python


def pins(text: str) -> dict[str, str]:
    """{package: version} of a lock file's `name==version` lines."""
    found = {}
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        match = re.match(r"^([A-Za-z0-9._-]+)==([^\s;]+)", line)
        if match:
            found[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = (
                match.group(2)
            )
    return found


def moved(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """Lines of a table of what changed between two sets of pins."""
    rows = []
    for name in sorted(set(old) | set(new)):
        if old.get(name) != new.get(name):
            rows.append((name, old.get(name, "-"), new.get(name, "-")))
    if not rows:
        return []
    width = max(len("package"), *(len(row[0]) for row in rows))
    lines = [f"{'package':<{width}}  {'locked':<12}  newest"]
    lines += [f"{a:<{width}}  {b:<12}  {c}" for a, b, c in rows]
    return lines


def compile_lock(python: str, output: Path) -> None:
    """Resolve requirements.txt afresh for `python` into `output`."""
    done = subprocess.run(
        [
            str(UV),
            "pip",
            "compile",
            "--quiet",
            "--no-header",
            "--python",
            python,
            str(REQUIREMENTS.relative_to(ROOT)),
            "--output-file",
            str(output),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=UV_ENV,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    output.write_text(HEADER.format(python=PYTHON) + output.read_text())


def venv_from_lock(python: str, lock: Path, folder: Path) -> Path:
    """A venv at `folder` holding exactly the lock; returns its bin/."""
    for command in (
        ["venv", "--quiet", "--python", python, str(folder)],
        [
            "pip",
            "sync",
            "--quiet",
            "--python",
            str(folder / "bin" / "python"),
            str(lock),
        ],
    ):
        done = subprocess.run(
            [str(UV), *command], capture_output=True, text=True, env=UV_ENV
        )
        if done.returncode != 0:
            raise SystemExit(done.stderr)
    return folder / "bin"


def data_files_used_by(notebook: Path) -> list[Path]:
    text = notebook.read_text()
    return [p for p in sorted((ROOT / "data").glob("*.csv")) if p.name in text]


def reader_environment() -> dict:
    """What a reader's Jupyter runs with (the kernel's own inline
    figures: a forced backend such as Agg would show none), plus the
    recording kernel."""
    return {
        **{
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONDONTWRITEBYTECODE", "MPLBACKEND")
        },
        "PYTHONPATH": "",
        **reader_outputs.kernel_environment(),
    }


def run_chapters(
    bin_folder: Path, notebooks: list[Path], folder: Path
) -> dict[str, list[str]]:
    """{chapter: [differences]} of each notebook run in plain Jupyter,
    alone in a folder with its data; an error that stops it is one."""
    copies = {}
    for notebook in notebooks:
        alone = folder / notebook.stem
        alone.mkdir()
        shutil.copy(notebook, alone)
        for data_file in data_files_used_by(notebook):
            shutil.copy(data_file, alone)
        copies[notebook] = alone / notebook.name
    run = subprocess.run(
        [
            str(bin_folder / "python"),
            str(RUN_IN_JUPYTER),
            *map(str, copies.values()),
        ],
        capture_output=True,
        text=True,
        env=reader_environment(),
    )
    errors = {}
    for line in run.stdout.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
            errors[result["notebook"]] = result["error"]
    found = {}
    for notebook, copy in copies.items():
        error = errors.get(str(copy), f"not run:\n{run.stderr[-2000:]}")
        if error:
            found[notebook.stem] = [f"the chapter stopped: {error}"]
            continue
        found[notebook.stem] = compare(notebook, copy.parent)
    return found


def compare(notebook: Path, folder: Path) -> list[str]:
    """The differences of the run in `folder` from the stored notebook."""
    figures_file = ROOT / "tests" / "figures" / f"{notebook.stem}.json"
    return reader_outputs.differences(
        nbformat.read(notebook, as_version=4),
        nbformat.read(folder / "executed.ipynb", as_version=4),
        reader_outputs.read_log(folder / reader_outputs.LOG_NAME),
        json.loads(figures_file.read_text()) if figures_file.exists() else {},
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chapters", nargs="*", help="only these chapters")
    parser.add_argument("--write-anyway", action="store_true")
    parser.add_argument("--lock", type=Path, default=LOCK)
    args = parser.parse_args(argv)
    python = find_python(PYTHON)
    if python is None:
        print(f"Python {PYTHON} is needed (pyenv install {PYTHON}).")
        return 2
    notebooks = sorted((ROOT / "chapters").glob("*.ipynb"))
    if args.chapters:
        notebooks = [n for n in notebooks if n.stem in args.chapters]
    with tempfile.TemporaryDirectory(prefix="reader-lock-") as scratch:
        scratch = Path(scratch)
        candidate = scratch / "lock.txt"
        compile_lock(python, candidate)
        old = pins(args.lock.read_text()) if args.lock.exists() else {}
        new = pins(candidate.read_text())
        table = moved(old, new)
        print(f"Newest versions on Python {PYTHON} against {args.lock.name}:")
        print("\n".join("  " + line for line in table) or "  nothing moved")
        bin_folder = venv_from_lock(python, candidate, scratch / "venv")
        print(f"Running {len(notebooks)} chapters with them ...", flush=True)
        results = run_chapters(bin_folder, notebooks, scratch)
        changed = {name: found for name, found in results.items() if found}
        for name, found in results.items():
            print(f"  {name}: " + ("changed" if found else "reproduces"))
            for line in found:
                print(f"    {line}")
        if changed and not args.write_anyway:
            print(
                f"\n{len(changed)} chapters print other numbers with the "
                f"newest versions: {args.lock.name} is kept. Bound the "
                "package that changed them in requirements/chapters.yml "
                "(then scripts/make_requirements.py), or store the new "
                "numbers deliberately, and run this again."
            )
            return 1
        if candidate.read_text() != (
            args.lock.read_text() if args.lock.exists() else ""
        ):
            shutil.copy(candidate, args.lock)
            print(f"\nWrote {args.lock}.")
        else:
            print(f"\n{args.lock.name} is up to date.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

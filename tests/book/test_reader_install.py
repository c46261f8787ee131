"""A reader's path: the reader's requirements alone, in fresh virtual environments.

The reader installs only what the book's requirements files name (no Sphinx,
no myst-nb, no test tools) and runs each chapter, downloaded from the built
site alone beside its data, in Jupyter. We do that on two installed Pythons:
- the oldest supported one, where each chapter runs in a venv holding only
  its own requirements/<chapter>.txt (chapters that need the same share
  one), so a chapter that imports what it does not declare fails;
- the newest one installed here, where every chapter runs in one venv
  holding requirements.txt, the one command for the whole book.
That pip resolves the requirements on every supported Python, 3.14
included, is checked without installing, in test_reader_requirements.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import (
    DATA_DIR,
    HTML_DIR,
    PARALLEL_RUNS,
    ROOT,
    chapter_notebooks,
    run_parallel,
    selected_params,
)

SUPPORTED = yaml.safe_load(
    (ROOT / "requirements" / "chapters.yml").read_text()
)["python"]
# The oldest supported Python, and the newest that this machine's package
# sources offer (Debian's and pyenv's; 3.14 is not among them yet).
INSTALLED = [SUPPORTED[0], "3.13"]


def find_python(version: str) -> str | None:
    """A working interpreter for `version`: installed by pyenv, or on PATH.

    pyenv's shims are on PATH too but fail for a version that is not
    selected, so every candidate is tried before it is used.
    """
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = sorted(pyenv_root.glob(f"versions/{version}.*/bin/python3"))
    candidates.append(shutil.which(f"python{version}"))
    for candidate in candidates:
        if (
            candidate
            and subprocess.run([str(candidate), "-c", "pass"]).returncode == 0
        ):
            return str(candidate)
    return None


def data_files_used_by(notebook: Path) -> list[Path]:
    text = notebook.read_text()
    return [path for path in DATA_DIR.glob("*.csv") if path.name in text]


# The reader's venvs are made and filled by uv (pinned in the toolchain): it
# resolves requirements.txt as pip does, but installs from one shared cache,
# so the second Python's venv costs seconds instead of a second download and
# unpack (measured in CONTRIBUTING.md's testing section). That pip itself
# resolves requirements.txt on every supported Python is checked without
# installing, in test_reader_requirements.py.
UV = Path(sys.executable).parent / "uv"
RUN_IN_JUPYTER = Path(__file__).with_name("run_in_jupyter.py")
UV_ENV = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"}


def make_reader_venv(python: str, folder: Path, requirements: list[Path]):
    """A fresh venv at ``folder`` for ``python``, holding ``requirements``."""
    subprocess.run(
        [str(UV), "venv", "--quiet", "--python", python, str(folder)],
        check=True,
        env=UV_ENV,
    )
    install = subprocess.run(
        [
            str(UV),
            "pip",
            "install",
            "--quiet",
            "--python",
            str(folder / "bin" / "python"),
            *(f"--requirement={path}" for path in requirements),
        ],
        capture_output=True,
        text=True,
        env=UV_ENV,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    return folder / "bin"


def requirement_lines(path: Path) -> tuple[str, ...]:
    """The requirement lines of a requirements file (comments dropped)."""
    lines = (
        line.split("#")[0].strip() for line in path.read_text().splitlines()
    )
    return tuple(line for line in lines if line)


@pytest.fixture(scope="module", params=INSTALLED)
def reader_envs(request, tmp_path_factory):
    """{chapter stem: bin folder of the fresh venv it runs in}, on this Python."""
    python = find_python(request.param)
    if python is None:
        message = f"Python {request.param} is not installed"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI must test the reader path on it)")
        pytest.skip(message)
    oldest = request.param == SUPPORTED[0]
    venvs: dict[tuple[str, ...], Path] = {}
    chosen = {}
    for notebook in chapter_notebooks():
        requirements = (
            ROOT / "requirements" / f"{notebook.stem}.txt"
            if oldest
            else ROOT / "requirements.txt"
        )
        needs = requirement_lines(requirements)
        if needs not in venvs:
            folder = tmp_path_factory.mktemp(f"reader-{request.param}")
            venvs[needs] = make_reader_venv(
                python, folder / "venv", [requirements]
            )
        chosen[notebook.stem] = venvs[needs]
    return chosen


def test_reader_environment_has_no_book_machinery(reader_envs):
    for venv in set(reader_envs.values()):
        for module in ["myst_nb", "sphinx", "jupyter_book", "pytest"]:
            probe = subprocess.run(
                [str(venv / "python"), "-c", f"import {module}"],
                capture_output=True,
            )
            assert probe.returncode != 0, f"{module} came with {venv}"
        assert (venv / "jupyter-lab").exists(), "JupyterLab is missing"


def test_a_chapter_venv_holds_only_what_its_chapter_declares(reader_envs):
    """On the oldest Python a core-only chapter's venv has no OpenDP or
    scikit-learn, so importing one there would fail (the check can fail)."""
    if len(set(reader_envs.values())) == 1:
        pytest.skip("every chapter runs in the venv of requirements.txt")
    venv = reader_envs["randomized-response"]
    for module in ["opendp", "sklearn", "pipeline_dp", "dp_accounting"]:
        probe = subprocess.run(
            [str(venv / "python"), "-c", f"import {module}"],
            capture_output=True,
        )
        assert probe.returncode != 0, f"{module} is in a core-only venv"


# A reader's Python writes each module's bytecode the first time it is
# imported and reads it from then on. A machine that sets
# PYTHONDONTWRITEBYTECODE (CI's does) would instead compile nbconvert, the
# kernel, numpy, pandas and matplotlib from source in every run: measured
# here, 10 s of CPU for a notebook that only imports them, 4.5 s once the
# bytecode is written (uv, unlike pip, writes none at install).
READER_ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    "MPLBACKEND": "Agg",
    "PYTHONPATH": "",
}


@pytest.fixture(scope="module")
def reader_runs(request, reader_envs, html_build, tmp_path_factory):
    """Each selected chapter's download run in the reader's venv, in a folder
    of its own with only its data; {notebook: error, None if it ran}."""
    # The file the book's download button offers, not the source notebook.
    assert html_build.returncode == 0

    def copy_download(notebook) -> Path:
        folder = tmp_path_factory.mktemp(notebook.stem)
        shutil.copy(HTML_DIR / "_sources" / "chapters" / notebook.name, folder)
        for data_file in data_files_used_by(notebook):
            shutil.copy(data_file, folder)
        return folder / notebook.name

    def run_batch(batch) -> dict:
        """{notebook: error or None} for notebooks sharing one venv."""
        venv, notebooks = batch
        copies = {notebook: copy_download(notebook) for notebook in notebooks}
        run = subprocess.run(
            [
                str(venv / "python"),
                str(RUN_IN_JUPYTER),
                *map(str, copies.values()),
            ],
            capture_output=True,
            text=True,
            env=READER_ENV,
        )
        reported = {}
        for line in run.stdout.splitlines():
            if line.startswith("{"):
                result = json.loads(line)
                reported[result["notebook"]] = result["error"]
        return {
            notebook: reported.get(
                str(copy),
                f"not run (exit {run.returncode}):\n{run.stderr[-3000:]}",
            )
            for notebook, copy in copies.items()
        }

    # The chapters of one venv run in one process, in PARALLEL_RUNS lanes.
    by_venv: dict[Path, list[Path]] = {}
    for notebook in selected_params(request, "notebook"):
        by_venv.setdefault(reader_envs[notebook.stem], []).append(notebook)
    batches = [
        (venv, tuple(notebooks[lane::PARALLEL_RUNS]))
        for venv, notebooks in by_venv.items()
        for lane in range(min(PARALLEL_RUNS, len(notebooks)))
    ]
    errors = {}
    for result in run_parallel(run_batch, batches).values():
        errors.update(result)
    return errors


@pytest.mark.parametrize("notebook", chapter_notebooks(), ids=lambda p: p.stem)
def test_downloaded_chapter_runs_in_plain_jupyter(reader_runs, notebook):
    error = reader_runs[notebook]
    assert error is None, error

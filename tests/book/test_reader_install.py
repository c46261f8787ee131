"""A reader's path: requirements.txt alone, in a fresh virtual environment.

The reader installs only requirements.txt (no Sphinx, no myst-nb, no test
tools) and runs each chapter, downloaded from the built site alone beside its
data, in Jupyter.
We do that on the lowest and the newest Python the README supports.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import (
    DATA_DIR,
    HTML_DIR,
    ROOT,
    chapter_notebooks,
    run_parallel,
    selected_params,
)

SUPPORTED = ["3.11", "3.13"]  # the floor the README states, and the newest


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


@pytest.fixture(scope="module", params=SUPPORTED)
def reader_env(request, tmp_path_factory):
    """A fresh venv with requirements.txt installed; yields its bin folder."""
    python = find_python(request.param)
    if python is None:
        message = f"Python {request.param} is not installed"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI must test the reader path on it)")
        pytest.skip(message)
    venv = tmp_path_factory.mktemp(f"reader-{request.param}") / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    install = subprocess.run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(ROOT / "requirements.txt"),
        ],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    return venv / "bin"


def test_reader_environment_has_no_book_machinery(reader_env):
    for module in ["myst_nb", "sphinx", "jupyter_book", "pytest"]:
        probe = subprocess.run(
            [str(reader_env / "python"), "-c", f"import {module}"],
            capture_output=True,
        )
        assert probe.returncode != 0, f"{module} came with requirements.txt"
    assert (reader_env / "jupyter-lab").exists(), "JupyterLab is missing"


@pytest.fixture(scope="module")
def reader_runs(request, reader_env, html_build, tmp_path_factory):
    """Each selected chapter's download run in the reader's venv, in a folder
    of its own with only its data; {notebook: completed process}."""
    # The file the book's download button offers, not the source notebook.
    assert html_build.returncode == 0

    def run_download(notebook):
        folder = tmp_path_factory.mktemp(notebook.stem)
        shutil.copy(HTML_DIR / "_sources" / "chapters" / notebook.name, folder)
        for data_file in data_files_used_by(notebook):
            shutil.copy(data_file, folder)
        return subprocess.run(
            [
                str(reader_env / "jupyter"),
                "nbconvert",
                "--to",
                "notebook",
                "--execute",
                "--ExecutePreprocessor.timeout=300",
                "--output",
                "executed.ipynb",
                notebook.name,
            ],
            cwd=folder,
            capture_output=True,
            text=True,
            env={**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": ""},
        )

    return run_parallel(run_download, selected_params(request, "notebook"))


@pytest.mark.parametrize("notebook", chapter_notebooks(), ids=lambda p: p.stem)
def test_downloaded_chapter_runs_in_plain_jupyter(reader_runs, notebook):
    run = reader_runs[notebook]
    assert run.returncode == 0, run.stderr[-3000:]

"""A reader's path: the reader's requirements alone, in virtual environments.

The reader installs only what the book's requirements files name (no Sphinx,
no myst-nb, no test tools) and runs each chapter, downloaded from the built
site alone beside its data, in Jupyter. We do that on two installed Pythons:
- the oldest supported one, where each chapter runs in a venv holding
  exactly what its own requirements/<chapter>.txt resolves to at the
  lowest versions it allows (uv's `--resolution lowest-direct`; what those
  need comes at its newest), so a lower bound the chapter no longer meets
  fails, and so does a chapter that imports what it does not declare (a
  lane's venv, synced by uv from one chapter's requirements to the next,
  is checked to hold exactly the resolution);
- the newest one installed here, where every chapter runs in one venv
  holding requirements.txt as locked in requirements/reader-lock-3.13.txt:
  the newest versions the requirements allowed when the lock was last
  refreshed (`make refresh-reader-lock`), so an upstream release cannot
  change what these runs print unseen.
Each run is compared with the stored notebook by what it prints
(scripts/reader_outputs.py: printed text and tables, glued values, errors,
charts and figures, numbers to the tolerance of nbval; on the oldest
versions a figure by what it shows, its texts, colours, styles and
numbers of artists and points, not where the oldest Matplotlib lays them
out): a difference fails, naming the chapter, the cell and the package
versions.
That pip resolves the requirements on every supported Python, 3.14
included, is checked without installing, in test_reader_requirements.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from conftest import (
    DATA_DIR,
    HTML_DIR,
    PARALLEL_RUNS,
    ROOT,
    chapter_notebooks,
    selected_params,
)

sys.path.insert(0, str(ROOT / "scripts"))
import reader_outputs  # noqa: E402

SUPPORTED = yaml.safe_load(
    (ROOT / "requirements" / "chapters.yml").read_text()
)["python"]
# The oldest supported Python, and the newest that this machine's package
# sources offer (Debian's and pyenv's; 3.14 is not among them yet).
INSTALLED = [SUPPORTED[0], "3.13"]
# What the newest Python's venv holds: requirements.txt as last resolved.
LOCK = ROOT / "requirements" / f"reader-lock-{INSTALLED[-1]}.txt"


find_python = reader_outputs.find_python


def data_files_used_by(notebook: Path) -> list[Path]:
    text = notebook.read_text()
    return [path for path in DATA_DIR.glob("*.csv") if path.name in text]


# The reader's venvs are made and filled by uv (pinned in the toolchain): it
# resolves requirements.txt as pip does, but installs from one shared cache,
# so a venv costs seconds instead of a download and unpack (measured in
# CONTRIBUTING.md's testing section). That pip itself
# resolves requirements.txt on every supported Python is checked without
# installing, in test_reader_requirements.py.
UV = Path(sys.executable).parent / "uv"
RUN_IN_JUPYTER = Path(__file__).with_name("run_in_jupyter.py")
UV_ENV = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"}


def make_reader_venv(python: str, folder: Path, requirements: list[Path]):
    """A fresh venv at ``folder`` for ``python``, holding ``requirements``
    (the graded assignments run their public checks in one).
    """
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


# The packages a chapter may do without, by the module it would import:
# on the oldest Python, each chapter's venv must not offer those its
# requirements do not bring (so an undeclared import fails there).
OPTIONAL_MODULES = {
    "altair": "altair",
    "opendp": "opendp",
    "scikit-learn": "sklearn",
    "pipeline-dp": "pipeline_dp",
    "pyspark": "pyspark",
    "dp-accounting": "dp_accounting",
    "diffprivlib": "diffprivlib",
    "pure-ldp": "pure_ldp",
    "statsmodels": "statsmodels",
}
BOOK_MACHINERY = ["myst_nb", "sphinx", "jupyter_book", "pytest"]
PROBE = (
    "import importlib.util, json, sys; "
    "print(json.dumps([m for m in sys.argv[1:] "
    "if importlib.util.find_spec(m) is not None]))"
)
DISTRIBUTIONS = (
    "import importlib.metadata as m, json; "
    "print(json.dumps({d.metadata['Name']: d.version "
    "for d in m.distributions()}))"
)


def normalized(name: str) -> str:
    """A distribution's name as pip compares names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions(venv: Path) -> dict[str, str]:
    """{distribution: version} installed in the venv, names normalized."""
    listed = subprocess.run(
        [str(venv / "python"), "-c", DISTRIBUTIONS],
        capture_output=True,
        text=True,
        check=True,
        env=READER_ENV,
    )
    return {
        normalized(name): version
        for name, version in json.loads(listed.stdout).items()
    }


def importable(venv: Path, modules: list[str]) -> list[str]:
    """The modules of `modules` that the venv's Python can import."""
    probe = subprocess.run(
        [str(venv / "python"), "-c", PROBE, *modules],
        capture_output=True,
        text=True,
        check=True,
        env=READER_ENV,
    )
    return json.loads(probe.stdout)


def sync_reader_venv(python: str, folder: Path, requirements: Path):
    """The venv at ``folder`` made to hold exactly the lowest versions
    ``requirements`` allows on ``python`` (uv pip compile --resolution
    lowest-direct, then uv pip sync: what is not in the resolution is
    removed). Returns the bin folder and the names of the resolved
    distributions."""
    if not (folder / "bin" / "python").exists():
        subprocess.run(
            [str(UV), "venv", "--quiet", "--python", python, str(folder)],
            check=True,
            env=UV_ENV,
        )
    target = ["--python", str(folder / "bin" / "python")]
    resolved = folder.parent / f"{folder.name}-{requirements.stem}.txt"
    for command in (
        [
            "compile",
            "--quiet",
            "--no-header",
            # The lowest version each requirement allows (what they need
            # comes at its newest): the bounds the book gives are tried.
            "--resolution",
            "lowest-direct",
            *target,
            str(requirements),
            "--output-file",
            str(resolved),
        ],
        ["sync", "--quiet", *target, str(resolved)],
    ):
        done = subprocess.run(
            [str(UV), "pip", *command],
            capture_output=True,
            text=True,
            env=UV_ENV,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    return folder / "bin", pinned_names(resolved)


def pinned_names(resolved: Path) -> set[str]:
    """The distributions a resolution (`name==version` lines) names."""
    return {
        normalized(line.split("==")[0].strip())
        for line in resolved.read_text().splitlines()
        if "==" in line and not line.lstrip().startswith("#")
    }


def venv_from_lock(python: str, folder: Path, lock: Path):
    """A fresh venv at ``folder`` holding exactly the lock (uv pip sync).
    Returns the bin folder and the names of the locked distributions."""
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
        assert done.returncode == 0, done.stderr[-3000:]
    return folder / "bin", pinned_names(lock)


# The lanes of reader runs side by side. Under pytest-xdist the other
# workers keep the cores busy already, and a second lane only repeated the
# first imports' bytecode compilation in a venv of its own (the 3.13 runs:
# 227 s of CPU in two lanes, 214 s in one, measured on the idle machine).
# BOOK_PARALLEL_RUNS, when set, decides.
LANES = (
    1
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1
    and "BOOK_PARALLEL_RUNS" not in os.environ
    else max(1, PARALLEL_RUNS)
)


@pytest.fixture(scope="module", params=INSTALLED)
def reader_python(request):
    """(version, interpreter) of a Python a reader may have."""
    python = find_python(request.param)
    if python is None:
        message = f"Python {request.param} is not installed"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI must test the reader path on it)")
        pytest.skip(message)
    return request.param, python


# A reader's Python writes each module's bytecode the first time it is
# imported and reads it from then on. A machine that sets
# PYTHONDONTWRITEBYTECODE (CI's does) would instead compile nbconvert, the
# kernel, numpy, pandas and matplotlib from source in every run: measured
# here, 10 s of CPU for a notebook that only imports them, 4.5 s once the
# bytecode is written (uv, unlike pip, writes none at install).
# The kernel draws its figures inline, as a reader's does (a forced
# backend such as Agg would show none), and records what the chapter
# prints, glues and plots for the comparison (reader_outputs).
READER_ENV = {
    **{
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONDONTWRITEBYTECODE", "MPLBACKEND")
    },
    "PYTHONPATH": "",
}


@pytest.fixture(scope="module")
def reader_runs(request, reader_python, html_build, tmp_path_factory):
    """Each selected chapter's download run in a reader's venv, in a folder
    of its own with only its data.

    Returns {"errors": {notebook: error, None if it ran}, "printed":
    {notebook: [where it printed other numbers than the book]},
    "versions": {notebook: {package: version} of its venv}, "venvs":
    [what each venv could import when its chapters ran]}.

    On the oldest Python a chapter runs in a venv holding exactly the
    lowest versions its own requirements/<chapter>.txt allows. Chapters
    whose requirements are the same run together; each of the LANES
    lanes has one venv that uv syncs to the next requirements in turn
    (adding and removing packages), so the bytecode of the packages every
    chapter needs is written once per lane, not once per chapter (about
    5 s of CPU each). On the newest Python every chapter runs in one venv
    holding the lock of requirements.txt.
    """
    # The file the book's download button offers, not the source notebook.
    assert html_build.returncode == 0
    version, python = reader_python
    oldest = version == SUPPORTED[0]
    base = tmp_path_factory.mktemp(f"reader-{version}")

    def copy_download(notebook) -> Path:
        folder = tmp_path_factory.mktemp(notebook.stem)
        shutil.copy(HTML_DIR / "_sources" / "chapters" / notebook.name, folder)
        for data_file in data_files_used_by(notebook):
            shutil.copy(data_file, folder)
        return folder / notebook.name

    recording = {**READER_ENV, **reader_outputs.kernel_environment()}

    def run_batch(venv: Path, notebooks) -> tuple[dict, dict]:
        """({notebook: error or None}, {notebook: [printed differences]})
        for notebooks sharing one venv."""
        copies = {notebook: copy_download(notebook) for notebook in notebooks}
        run = subprocess.run(
            [
                str(venv / "python"),
                str(RUN_IN_JUPYTER),
                *map(str, copies.values()),
            ],
            capture_output=True,
            text=True,
            env=recording,
        )
        reported = {}
        for line in run.stdout.splitlines():
            if line.startswith("{"):
                result = json.loads(line)
                reported[result["notebook"]] = result["error"]
        errors = {
            notebook: reported.get(
                str(copy),
                f"not run (exit {run.returncode}):\n{run.stderr[-3000:]}",
            )
            for notebook, copy in copies.items()
        }
        printed = {
            notebook: compare_printed(notebook, copy.parent, drawn=not oldest)
            for notebook, copy in copies.items()
            if errors[notebook] is None
        }
        return errors, printed

    def probe(venv: Path, requirements: Path, names: set, notebooks):
        installed = distributions(venv)
        optional = [
            module
            for name, module in OPTIONAL_MODULES.items()
            if name not in names
        ]
        return {
            "requirements": requirements.name,
            "chapters": [n.stem for n in notebooks],
            "machinery": importable(venv, BOOK_MACHINERY),
            "undeclared": importable(venv, optional) if oldest else [],
            "absent_checked": optional if oldest else [],
            "jupyter_lab": (venv / "jupyter-lab").exists(),
            # What the venv holds that the resolution does not name, and
            # what it names that the venv lacks: both empty for a venv
            # that holds exactly the chapter's requirements.
            "extra": sorted(set(installed) - names),
            "missing": sorted(names - set(installed)),
            "versions": installed,
        }

    def run_lane(numbered: tuple[int, list]) -> tuple[dict, list]:
        """Sync the lane's venv to each group's requirements, probe it, run
        the group's chapters in it."""
        number, lane = numbered
        errors, printed, probes = {}, {}, []
        for requirements, notebooks in lane:
            venv, names = (
                sync_reader_venv(python, base / f"lane-{number}", requirements)
                if oldest
                else shared_venv
            )
            probes.append(probe(venv, requirements, names, notebooks))
            batch_errors, batch_printed = run_batch(venv, notebooks)
            errors.update(batch_errors)
            printed.update(batch_printed)
        return errors, printed, probes

    # The chapters this run selected (all of them when only the venv
    # checks were selected).
    selected = (
        list(dict.fromkeys(selected_params(request, "notebook")))
        or chapter_notebooks()
    )
    if oldest:
        groups: dict[tuple[str, ...], tuple[Path, list]] = {}
        for notebook in selected:
            requirements = ROOT / "requirements" / f"{notebook.stem}.txt"
            key = requirement_lines(requirements)
            groups.setdefault(key, (requirements, []))[1].append(notebook)
        # The largest groups first, each to the lane with fewer chapters.
        lanes: list[list] = [[] for _ in range(LANES)]
        for group in sorted(groups.values(), key=lambda g: -len(g[1])):
            min(lanes, key=lambda lane: sum(len(g[1]) for g in lane)).append(
                group
            )
        lanes = [lane for lane in lanes if lane]
    else:
        shared_venv = venv_from_lock(python, base / "venv", LOCK)
        lanes = [
            [(LOCK, selected[lane::LANES])]
            for lane in range(min(LANES, len(selected)))
        ]
    errors, printed, probes = {}, {}, []
    numbered = list(enumerate(lanes))
    for lane_errors, lane_printed, lane_probes in run_parallel_lists(
        run_lane, numbered
    ):
        errors.update(lane_errors)
        printed.update(lane_printed)
        probes.extend(lane_probes)
    versions = {
        Path(ROOT / "chapters" / f"{chapter}.ipynb"): venv["versions"]
        for venv in probes
        for chapter in venv["chapters"]
    }
    return {
        "errors": errors,
        "printed": printed,
        "versions": versions,
        "venvs": probes,
    }


def compare_printed(notebook: Path, folder: Path, drawn=True) -> list[str]:
    """Where the run in `folder` printed other numbers than the stored
    chapter (scripts/reader_outputs.py; figures by what they show, not
    where, when `drawn` is False)."""
    figures = ROOT / "tests" / "figures" / f"{notebook.stem}.json"
    return reader_outputs.differences(
        nbformat.read(notebook, as_version=4),
        nbformat.read(folder / "executed.ipynb", as_version=4),
        reader_outputs.read_log(folder / reader_outputs.LOG_NAME),
        json.loads(figures.read_text()) if figures.exists() else {},
        drawn=drawn,
    )


def run_parallel_lists(function, lanes: list) -> list:
    """[function(lane) for lane in lanes], all at once."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, len(lanes))) as pool:
        return list(pool.map(function, lanes))


def test_reader_environment_has_no_book_machinery(reader_runs):
    assert reader_runs["venvs"]
    for venv in reader_runs["venvs"]:
        assert not venv["machinery"], venv
        assert venv["jupyter_lab"], f"JupyterLab is missing: {venv}"


def test_a_chapter_venv_holds_only_what_its_chapter_declares(
    reader_runs, reader_python
):
    """On the oldest Python, a chapter's venv offers none of the optional
    packages its requirements do not bring (even in a lane whose venv held
    them for the chapters before), so an undeclared import fails there; a
    core-only chapter's venv has none of them (the check can fail)."""
    if reader_python[0] != SUPPORTED[0]:
        pytest.skip("every chapter runs in the venv of requirements.txt")
    for venv in reader_runs["venvs"]:
        assert not venv["undeclared"], venv
        assert not venv["extra"] and not venv["missing"], venv
    core_only = next(
        (
            venv
            for venv in reader_runs["venvs"]
            if "randomized-response" in venv["chapters"]
        ),
        None,
    )
    if core_only is None:
        pytest.skip("randomized-response is not among the selected chapters")
    for module in ["opendp", "sklearn", "pipeline_dp", "dp_accounting"]:
        assert module in core_only["absent_checked"], core_only


def test_each_lower_bound_is_what_the_oldest_python_installs(
    reader_runs, reader_python
):
    """On the oldest Python each package a chapter's requirements name is
    installed at the lower bound they give it (`>=`), so every bound a
    reader is given is one a run has checked. A bound no venv can hold
    beside the others (an old release that asks for an older NumPy, say)
    fails here: uv would quietly install a later release instead."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    if reader_python[0] != SUPPORTED[0]:
        pytest.skip("the newest Python runs the lock of requirements.txt")
    checked = []
    for notebook, installed in reader_runs["versions"].items():
        requirements = ROOT / "requirements" / f"{notebook.stem}.txt"
        for line in requirement_lines(requirements):
            requirement = Requirement(line)
            marker = requirement.marker
            if marker and not marker.evaluate(
                {"python_version": SUPPORTED[0]}
            ):
                continue
            pinned = [
                spec
                for spec in requirement.specifier
                if spec.operator in ("==", "===", "~=")
            ]
            assert not pinned, (
                f"{notebook.stem}: {line}: a lower bound is `>=` (the form "
                "this test checks; readers get loose requirements)"
            )
            bounds = [
                Version(spec.version)
                for spec in requirement.specifier
                if spec.operator == ">="
            ]
            if not bounds:
                continue
            held = installed.get(normalized(requirement.name))
            assert held is not None and Version(held) == max(bounds), (
                f"{notebook.stem}: {line} installs {held} on Python "
                f"{SUPPORTED[0]}, not its lower bound"
            )
            checked.append(requirement.name)
    assert {"numpy", "pandas", "matplotlib"} <= set(checked), checked


def test_the_newest_python_runs_the_lock(reader_runs, reader_python):
    """On the newest Python the chapters run with exactly the versions of
    requirements/reader-lock-3.13.txt: a release upstream changes nothing
    here until `make refresh-reader-lock` lets it in."""
    if reader_python[0] != INSTALLED[-1]:
        pytest.skip("the oldest Python runs each chapter's requirements")
    locked = {
        normalized(line.split("==")[0]): line.split("==")[1].split()[0]
        for line in LOCK.read_text().splitlines()
        if "==" in line and not line.lstrip().startswith("#")
    }
    for venv in reader_runs["venvs"]:
        assert venv["requirements"] == LOCK.name, venv["requirements"]
        assert not venv["extra"] and not venv["missing"], venv
        assert {name: venv["versions"][name] for name in locked} == locked


@pytest.mark.parametrize("notebook", chapter_notebooks(), ids=lambda p: p.stem)
def test_downloaded_chapter_runs_in_plain_jupyter(reader_runs, notebook):
    error = reader_runs["errors"][notebook]
    assert error is None, error


def chapter_versions(notebook: Path, installed: dict[str, str]) -> str:
    """'numpy 2.4.6, pandas 3.1.1, ...': the versions of the packages the
    chapter's requirements name, as its venv held them."""
    names = [
        normalized(re.split(r"[<>=!~;\[ ]", line)[0])
        for line in requirement_lines(
            ROOT / "requirements" / f"{notebook.stem}.txt"
        )
    ]
    return ", ".join(
        f"{name} {installed.get(name, '(not installed)')}" for name in names
    )


@pytest.mark.parametrize("notebook", chapter_notebooks(), ids=lambda p: p.stem)
def test_downloaded_chapter_prints_the_books_numbers(
    reader_runs, reader_python, notebook
):
    """A reader's run prints what the book prints: every printed and glued
    number, table cell, error and figure of the stored chapter."""
    if reader_runs["errors"][notebook] is not None:
        pytest.skip("the chapter did not run (see the test above)")
    found = reader_runs["printed"][notebook]
    assert not found, (
        f"{notebook.stem} on Python {reader_python[0]} prints other numbers "
        f"than the book with "
        f"{chapter_versions(notebook, reader_runs['versions'][notebook])}:\n"
        + "\n".join(found[:20])
    )

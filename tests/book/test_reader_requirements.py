"""What a reader installs: one source, and it resolves on every supported Python.

requirements/chapters.yml is the one place; scripts/make_requirements.py
writes requirements.txt, requirements/<chapter>.txt, each chapter's "Run
this chapter yourself" box and the table of Run it yourself from it. pip
resolves the requirements for every supported Python without installing
them (`--dry-run --python-version`), so a dependency that drops a Python is
caught the day it does; that they install and run is checked on two real
Pythons in test_reader_install.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import nbformat
import pytest
import reader_outputs  # noqa: E402  (scripts/ is on sys.path: conftest.py)
import yaml
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.version import Version

from conftest import ROOT, chapter_notebooks, run_parallel

CONFIG = yaml.safe_load((ROOT / "requirements" / "chapters.yml").read_text())
SUPPORTED = CONFIG["python"]
# Source archives only (no wheel): pip cannot resolve them for another
# Python (--python-version needs --only-binary=:all:), so uv reads their
# metadata instead.
SOURCE_ONLY = {"pyspark"}


def applies(requirement: Requirement, version: str) -> bool:
    """Whether the requirement's environment marker holds on `version`."""
    if requirement.marker is None:
        return True
    environment = {"python_version": version, "python_full_version": version}
    return Marker(str(requirement.marker)).evaluate(environment)


def lines_for(version: str, path: Path = ROOT / "requirements.txt"):
    """A requirements file as a reader on `version` gets it: markers
    applied."""
    found = []
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            requirement = Requirement(line)
            if applies(requirement, version):
                requirement.marker = None
                found.append(str(requirement))
    return found


def resolve(version: str, path: Path | None = None) -> dict:
    """pip's and uv's answers for every requirement on `version`."""
    lines = lines_for(version, path or ROOT / "requirements.txt")
    binary = [
        line for line in lines if Requirement(line).name not in SOURCE_ONLY
    ]
    source = [line for line in lines if Requirement(line).name in SOURCE_ONLY]
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        pip = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--dry-run",
                "--quiet",
                "--ignore-installed",
                "--disable-pip-version-check",
                "--python-version",
                version,
                "--only-binary=:all:",
                "--target",
                str(Path(folder) / "target"),
                "--report",
                str(report),
                *binary,
            ],
            capture_output=True,
            text=True,
        )
        installed = (
            {
                item["metadata"]["name"].lower(): item["metadata"]["version"]
                for item in json.loads(report.read_text())["install"]
            }
            if pip.returncode == 0
            else {}
        )
    uv = None
    if source:
        uv = subprocess.run(
            [
                str(Path(sys.executable).parent / "uv"),
                "pip",
                "compile",
                "--quiet",
                "--no-header",
                "--python-version",
                version,
                "-",
            ],
            input="\n".join(source),
            capture_output=True,
            text=True,
            env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
        )
    return {"pip": pip, "installed": installed, "uv": uv, "lines": lines}


# The Python just older than the supported ones, and a chapter file with
# the core alone: pip must refuse both there, at NumPy.
OLDER = "3.{}".format(int(SUPPORTED[0].split(".")[1]) - 1)
CORE_ONLY = ROOT / "requirements" / "deidentification.txt"


def older_python() -> str | None:
    """An installed interpreter of the OLDER Python (pyenv's, or on PATH)."""
    return reader_outputs.find_python(OLDER)


def attempt_older(path: Path | None) -> dict:
    """What a reader's pip answers on the OLDER Python for a requirements
    file: that interpreter's own pip where one is installed (pip prints
    which versions it ignored for their Requires-Python only on the
    Python itself, not under --python-version), else the toolchain's pip
    told the version."""
    python = older_python()
    if python is None:
        return {**resolve(OLDER, path), "real": False}
    pip = subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--ignore-installed",
            "--disable-pip-version-check",
            "--requirement",
            str(path or ROOT / "requirements.txt"),
        ],
        capture_output=True,
        text=True,
    )
    return {"pip": pip, "real": True}


@pytest.fixture(scope="module")
def resolutions():
    """{version: resolve(version)}, the versions side by side (network-bound),
    and (OLDER, file) for the older Python's attempts."""
    attempts = [*SUPPORTED, (OLDER, "requirements.txt"), (OLDER, "core")]

    def attempt(what):
        if isinstance(what, tuple):
            return attempt_older(CORE_ONLY if what[1] == "core" else None)
        return resolve(what)

    return run_parallel(attempt, attempts)


def test_generated_files_agree_with_their_source():
    check = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "make_requirements.py"),
            "--check",
        ],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, (
        check.stdout + "\nRun scripts/make_requirements.py after editing "
        "requirements/chapters.yml."
    )


def test_every_chapter_has_its_box_after_the_title():
    for path in chapter_notebooks():
        cells = nbformat.read(path, as_version=4).cells
        tags = cells[1].get("metadata", {}).get("tags", [])
        assert "reader-requirements" in tags, f"{path.stem}: no box"
        assert "Python " + SUPPORTED[0] in cells[1].source


@pytest.mark.parametrize("version", SUPPORTED)
def test_pip_resolves_the_readers_requirements(resolutions, version):
    found = resolutions[version]
    pip = found["pip"]
    assert pip.returncode == 0, (
        f"pip cannot resolve requirements.txt for Python {version}:\n"
        + pip.stderr[-3000:]
    )
    wanted = {Requirement(line).name.lower() for line in found["lines"]}
    missing = wanted - set(found["installed"]) - SOURCE_ONLY
    assert not missing, f"not in pip's resolution: {sorted(missing)}"
    if found["uv"] is not None:
        assert found["uv"].returncode == 0, found["uv"].stderr[-3000:]


def test_the_core_needs_nothing_that_drops_a_supported_python(resolutions):
    """The core set resolves everywhere; what cannot (PipelineDP on 3.14)
    is marked so, and its chapter runs without it."""
    for version in SUPPORTED:
        names = set(resolutions[version]["installed"])
        for line in CONFIG["core"]:
            assert Requirement(line).name.lower() in names, (version, line)
    assert "pipeline-dp" not in {
        Requirement(line).name for line in lines_for("3.14")
    }
    assert "pipeline-dp" in {
        Requirement(line).name for line in lines_for("3.13")
    }


def test_readme_and_setup_cell_name_the_supported_pythons():
    span = f"Python {SUPPORTED[0]} to {SUPPORTED[-1]}"
    assert span in (ROOT / "README.md").read_text()
    assert span in (ROOT / "run-it-yourself.md").read_text()
    for path in chapter_notebooks():
        setup = next(
            cell
            for cell in nbformat.read(path, as_version=4).cells
            if cell.cell_type == "code"
        )
        low = tuple(int(part) for part in SUPPORTED[0].split("."))
        assert f"sys.version_info < {low}" in setup.source, path.stem
        assert re.search(rf"{SUPPORTED[0]}.*{SUPPORTED[-1]}", setup.source)


# --- what the readers' Pythons resolve is what the reader runs checked ---

LOCK = ROOT / "requirements" / "reader-lock-3.13.txt"


def pins(path: Path) -> dict[str, str]:
    """{name: version} of the `name==version` lines of a pinned file."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        match = re.match(r"^([A-Za-z0-9._-]+)==([^\s;]+)", line)
        if match:
            found[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = (
                match.group(2)
            )
    return found


def series(version: str) -> tuple[int, int]:
    return Version(version).release[:2]


def test_the_lock_holds_what_requirements_txt_asks():
    """The lock the newest Python's reader runs install is a resolution of
    today's requirements.txt (a bound added since the last refresh makes
    this fail: run `make refresh-reader-lock`)."""
    assert "make refresh-reader-lock" in LOCK.read_text()
    locked = pins(LOCK)
    for line in lines_for("3.13"):
        requirement = Requirement(line)
        name = requirement.name.lower()
        assert name in locked, f"{LOCK.name} lacks {name}"
        assert requirement.specifier.contains(locked[name]), (
            f"{LOCK.name} pins {name} {locked[name]}, which requirements.txt "
            f"no longer allows ({line}): run `make refresh-reader-lock`"
        )


@pytest.mark.parametrize("version", SUPPORTED)
def test_every_python_resolves_versions_the_reader_runs_checked(
    resolutions, version
):
    """Each package a chapter imports resolves, on every supported Python,
    to a release series (major.minor) the book's numbers are printed
    with: the toolchain's pin (nbval's runs) or the lock's (the newest
    Python's reader runs). A new series, such as NumPy 2.5, whose
    Generator draws other numbers from the same seed, is let in only by
    `make refresh-reader-lock`, which shows first what it changes."""
    checked = {}
    for pinned in (pins(ROOT / "constraints.txt"), pins(LOCK)):
        for name, pin in pinned.items():
            checked.setdefault(name, set()).add(series(pin))
    laptop = {Requirement(line).name.lower() for line in CONFIG["laptop"]}
    resolved = resolutions[version]["installed"]
    unchecked = []
    for line in resolutions[version]["lines"]:
        name = Requirement(line).name.lower()
        if name in laptop or name in SOURCE_ONLY:
            continue
        got = resolved.get(name)
        if got is None or series(got) not in checked.get(name, set()):
            unchecked.append(
                f"{name} {got} (checked: "
                + ", ".join(
                    ".".join(map(str, s))
                    for s in sorted(checked.get(name, []))
                )
                + ")"
            )
    # NumPy draws the book's random numbers: a series the runs never
    # checked fails. Another package's new series is reported, not
    # failed, so that an upstream release never turns an unrelated
    # submission red; `make refresh-reader-lock` checks it deliberately.
    failing = [entry for entry in unchecked if entry.startswith("numpy ")]
    if len(unchecked) > len(failing):
        warnings.warn(
            f"On Python {version} a reader gets versions the reader runs "
            f"never printed the book with: {unchecked}; run "
            "`make refresh-reader-lock`.",
            stacklevel=1,
        )
    assert not failing, (
        f"On Python {version} a reader gets versions the reader runs never "
        f"printed the book with: {failing}. Bound them in "
        "requirements/chapters.yml or run `make refresh-reader-lock`."
    )


@pytest.mark.parametrize("what", ["requirements.txt", "core"])
def test_an_older_python_is_refused_at_numpy(resolutions, what):
    """On the Python before the oldest supported one, pip stops at once,
    at NumPy, whose versions the requirements allow all say
    'Requires-Python >=3.11' (not later, at PipelineDP, in noise; nor
    never, for a chapter that would install and then refuse to run)."""
    found = resolutions[(OLDER, what)]
    pip = found["pip"]
    assert pip.returncode != 0, f"pip installs {what} on Python {OLDER}"
    if found["real"]:
        assert f"Requires-Python >={SUPPORTED[0]}" in pip.stderr, pip.stderr[
            -800:
        ]
    elif os.environ.get("CI"):
        pytest.fail(f"Python {OLDER} is not installed (CI must try it)")
    assert "No matching distribution found for numpy" in pip.stderr, (
        pip.stderr[-800:]
    )
    page = (ROOT / "run-it-yourself.md").read_text()
    core = next(
        Requirement(line)
        for line in CONFIG["core"]
        if line.startswith("numpy")
    )
    assert f"Requires-Python >={SUPPORTED[0]}" in page
    # the message the page quotes is the one pip gives
    quoted = f"No matching distribution found for numpy{core.specifier}"
    assert quoted in " ".join(page.split()), quoted
    assert quoted in pip.stderr

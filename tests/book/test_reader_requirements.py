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
from pathlib import Path

import nbformat
import pytest
import yaml
from packaging.markers import Marker
from packaging.requirements import Requirement

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


def lines_for(version: str) -> list[str]:
    """requirements.txt as a reader on `version` gets it: markers applied."""
    found = []
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            requirement = Requirement(line)
            if applies(requirement, version):
                requirement.marker = None
                found.append(str(requirement))
    return found


def resolve(version: str) -> dict:
    """pip's and uv's answers for every requirement on `version`."""
    lines = lines_for(version)
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


@pytest.fixture(scope="module")
def resolutions():
    """{version: resolve(version)}, the versions side by side (network-bound)."""
    return run_parallel(resolve, SUPPORTED)


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

#!/usr/bin/env python3
"""Write what a reader installs from its one source, requirements/chapters.yml.

Usage: python scripts/make_requirements.py           (write the files)
       python scripts/make_requirements.py --check   (exit 1 if any differs)

It writes
- requirements.txt: every chapter, and JupyterLab (one command for it all);
- requirements/<chapter>.txt: one chapter, and JupyterLab;
- the table of the page Run it yourself (between its two marker comments);
- the "Run this chapter yourself" box of each chapter: the Markdown cell
  tagged ``reader-requirements`` (Markdown only: no output changes).
"""

from __future__ import annotations

import functools
import re
import sys
import textwrap
from pathlib import Path

import nbformat
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "requirements" / "chapters.yml"
PAGE = ROOT / "run-it-yourself.md"
TAG = "reader-requirements"
START = "<!-- chapter requirements: start (scripts/make_requirements.py) -->"
END = "<!-- chapter requirements: end -->"
NOTES_START = "<!-- install notes: start (scripts/make_requirements.py) -->"
NOTES_END = "<!-- install notes: end -->"

# How a package is named in prose.
NAMES = {
    "numpy": "NumPy",
    "pandas": "pandas",
    "scipy": "SciPy",
    "matplotlib": "Matplotlib",
    "opendp": "OpenDP",
    "dp-accounting": "dp-accounting",
    "pipeline-dp": "PipelineDP",
    "pyspark": "PySpark",
    "scikit-learn": "scikit-learn",
    "diffprivlib": "diffprivlib",
    "jupyterlab": "JupyterLab",
    "altair": "Altair",
}


def load() -> dict:
    return yaml.safe_load(SOURCE.read_text())


def merged(lines: list[str]) -> list[str]:
    """Requirement lines with one line per package: bounds intersected."""
    by_name: dict[str, Requirement] = {}
    for line in lines:
        requirement = Requirement(line)
        name = requirement.name.lower()
        if name in by_name:
            previous = by_name[name]
            if str(previous.marker) != str(requirement.marker):
                raise ValueError(f"{name}: two different markers")
            previous.specifier = SpecifierSet(
                str(previous.specifier & requirement.specifier)
            )
        else:
            by_name[name] = requirement
    return [format_requirement(by_name[name]) for name in by_name]


def format_requirement(requirement: Requirement) -> str:
    """name>=low,<high; marker, lower bound first."""
    specifiers = sorted(
        requirement.specifier, key=lambda s: not s.operator.startswith(">")
    )
    text = requirement.name + ",".join(str(s) for s in specifiers)
    if requirement.marker is not None:
        text += f"; {requirement.marker}"
    return text


def chapter_lines(config: dict, chapter: str) -> list[str]:
    """Everything one chapter needs: the core and its own, merged."""
    return merged(config["core"] + (config["chapters"][chapter] or []))


def extra_lines(config: dict, chapter: str) -> list[str]:
    """What a chapter needs beyond the core, as its own list says: the
    Colab line. A core package the chapter lists again (with an upper
    bound: Colab's own copy may be too new) keeps the chapter's bounds,
    not the core's lower bound, which Colab's copy may not meet and need
    not (it would reinstall a package Colab has)."""
    return merged(config["chapters"][chapter] or [])


def python_range(config: dict) -> str:
    versions = config["python"]
    return f"Python {versions[0]} to {versions[-1]}"


def older(version: str) -> str:
    """The Python before `version` ("3.11" -> "3.10")."""
    major, minor = version.split(".")
    return f"{major}.{int(minor) - 1}"


@functools.cache
def data_files(chapter: str) -> list[str]:
    """The files of data/ that the chapter's code reads (their names in
    its code cells), in file-name order."""
    notebook = nbformat.read(
        ROOT / "chapters" / f"{chapter}.ipynb", as_version=4
    )
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    return [
        path.name
        for path in sorted((ROOT / "data").glob("*.csv"))
        if path.name in code
    ]


def download(path: str, text: str | None = None) -> str:
    """A {download} role for a file of the book's source tree (a path from
    its root: Sphinx serves it under its own name)."""
    return f"{{download}}`{text or Path(path).name} </{path}>`"


def laptop_commands(file_name: str) -> list[str]:
    """The commands that install `file_name` (saved in the current folder)
    into a new venv and open JupyterLab: [Linux and macOS, Windows...]."""
    return [
        f"python3 -m venv .venv && .venv/bin/pip install -r {file_name} "
        "&& .venv/bin/jupyter lab",
        "py -m venv .venv",
        f".venv\\Scripts\\pip install -r {file_name}",
        ".venv\\Scripts\\jupyter lab",
    ]


def requirements_file(lines: list[str], what: str, oldest: str) -> str:
    header = textwrap.fill(
        f"What a reader installs to run {what}, in a fresh virtual "
        "environment (JupyterLab included). On an older Python than "
        f"{oldest}, pip stops at NumPy, saying that its versions here "
        f"need 'Requires-Python >={oldest}'. Generated from "
        "requirements/chapters.yml by scripts/make_requirements.py: edit "
        "that file, not this one. The exact toolchain that builds and tests "
        "the book is requirements-dev.txt pinned by constraints.txt.",
        width=77,
    )
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    return comment + "".join(line + "\n" for line in lines)


def colab_line(lines: list[str]) -> str:
    return "%pip install " + " ".join(f"'{line}'" for line in lines)


def package_names(lines: list[str]) -> list[str]:
    names = []
    for line in lines:
        name = Requirement(line).name.lower()
        names.append(NAMES.get(name, name))
    return list(dict.fromkeys(names))


def spoken_list(names: list[str]) -> str:
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def chapter_box(config: dict, chapter: str) -> str:
    """The Markdown of a chapter's "Run this chapter yourself" box."""
    core = spoken_list(package_names(config["core"]))
    extra = extra_lines(config, chapter)
    own = [
        n
        for n in package_names(extra)
        if n not in package_names(config["core"])
    ]
    oldest = config["python"][0]
    data = [download(f"data/{name}") for name in data_files(chapter)]
    file_name = f"{chapter}.txt"
    linux, *windows = laptop_commands(file_name)
    lines = [
        "```{admonition} Run this chapter yourself",
        ":class: seealso",
        "",
        f"This chapter runs on {python_range(config)} with {core}"
        + (f", plus {spoken_list(own)}." if own else " alone.")
        + f" It reads {spoken_list(data)}: save "
        + ("it" if len(data) == 1 else "them")
        + " in the notebook's folder.",
        "",
    ]
    if extra:
        lines += [
            f"In Colab, run this line in a cell first: `{colab_line(extra)}`",
            "",
        ]
    else:
        lines += ["In Colab there is nothing to install.", ""]
    lines += [
        f"On a laptop with Python {oldest} or newer, save "
        f"{download(f'requirements/{file_name}')} in the same folder and "
        f"run `{linux}` on Linux or macOS, or on Windows `{windows[0]}`, "
        f"then `{windows[1]}`, then `{windows[2]}`. On Python "
        f"{older(oldest)} or older pip stops at NumPy (its message says "
        f"'Requires-Python >={oldest}'): install a newer Python first.",
    ]
    note = (config.get("notes") or {}).get(chapter)
    if note:
        lines += ["", note.strip()]
    lines += [
        "",
        "The page {ref}`run-it-yourself` has the details.",
        "```",
    ]
    return "\n".join(lines)


def page_table(config: dict, titles: dict[str, str]) -> str:
    """One line per chapter: what it needs beyond the core, its Colab line
    and its requirements file (a list, not a table: the Colab lines are too
    long for a table's column in the PDF)."""
    core = package_names(config["core"])
    rows = []
    for chapter in config["chapters"]:
        extra = extra_lines(config, chapter)
        own = [n for n in package_names(extra) if n not in core]
        laptop = download(f"requirements/{chapter}.txt")
        reads = "reads " + spoken_list(
            [f"`{name}`" for name in data_files(chapter)]
        )
        needs = ", ".join(own) if own else "the core alone"
        colab = (
            f"In Colab: `{colab_line(extra)}`."
            if extra
            else "Nothing to install in Colab."
        )
        rows.append(
            f"- **{titles.get(chapter, chapter)}**: {needs}; {reads}. "
            f"{colab} On a laptop: {laptop}."
        )
    return "\n".join(rows)


def chapter_titles() -> dict[str, str]:
    titles = {}
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            match = re.search(r"^# (.+)$", cell.source, re.MULTILINE)
            if cell.cell_type == "markdown" and match:
                titles[path.stem] = match.group(1).strip()
                break
    return titles


def expected_files(config: dict) -> dict[Path, str]:
    """{path: text} of every requirements file."""
    every = []
    for chapter in config["chapters"]:
        every += config["chapters"][chapter] or []
    oldest = config["python"][0]
    files = {
        ROOT / "requirements.txt": requirements_file(
            merged(config["core"] + every + config["laptop"]),
            f"every chapter of the book ({python_range(config)})",
            oldest,
        )
    }
    for chapter in config["chapters"]:
        files[ROOT / "requirements" / f"{chapter}.txt"] = requirements_file(
            merged(chapter_lines(config, chapter) + config["laptop"]),
            f"the chapter {chapter} ({python_range(config)})",
            oldest,
        )
    return files


def page_notes(config: dict, titles: dict[str, str]) -> str:
    """The chapters' install notes (the same as in their boxes), one
    paragraph each."""
    return "\n\n".join(
        f"**{titles.get(chapter, chapter)}.** {note.strip()}"
        for chapter, note in (config.get("notes") or {}).items()
    )


def replaced(text: str, start: str, end: str, content: str) -> str:
    if start not in text or end not in text:
        raise ValueError(f"{PAGE.name} lacks the marker comment {start}")
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    return f"{before}{start}\n{content}\n{end}{after}"


def expected_page(config: dict) -> str:
    titles = chapter_titles()
    text = replaced(PAGE.read_text(), START, END, page_table(config, titles))
    return replaced(text, NOTES_START, NOTES_END, page_notes(config, titles))


def notebook_boxes(config: dict) -> dict[Path, tuple[object, bool]]:
    """{notebook path: (notebook with its box set, whether it changed)}."""
    result = {}
    for chapter in config["chapters"]:
        path = ROOT / "chapters" / f"{chapter}.ipynb"
        notebook = nbformat.read(path, as_version=4)
        box = chapter_box(config, chapter)
        cells = [
            c
            for c in notebook.cells
            if TAG in c.get("metadata", {}).get("tags", [])
        ]
        if len(cells) > 1:
            raise ValueError(f"{path.name}: more than one {TAG} cell")
        if cells:
            changed = cells[0].source != box
            cells[0].source = box
        else:
            # After the title cell (title and learning objectives).
            cell = nbformat.v4.new_markdown_cell(box)
            cell.metadata["tags"] = [TAG]
            cell.id = f"{chapter}-{TAG}"
            notebook.cells.insert(1, cell)
            changed = True
        result[path] = (notebook, changed)
    return result


def main(argv: list[str]) -> int:
    check = "--check" in argv
    config = load()
    known = {p.stem for p in (ROOT / "chapters").glob("*.ipynb")}
    if set(config["chapters"]) != known:
        print(
            "requirements/chapters.yml and chapters/ disagree: "
            f"{sorted(set(config['chapters']) ^ known)}"
        )
        return 1
    stale = []
    for path, text in expected_files(config).items():
        if not path.exists() or path.read_text() != text:
            stale.append(path)
            if not check:
                path.write_text(text)
    page = expected_page(config)
    if PAGE.read_text() != page:
        stale.append(PAGE)
        if not check:
            PAGE.write_text(page)
    for path, (notebook, changed) in notebook_boxes(config).items():
        if changed:
            stale.append(path)
            if not check:
                nbformat.write(notebook, path)
    for path in stale:
        print(
            ("out of date: " if check else "wrote: ")
            + str(path.relative_to(ROOT))
        )
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

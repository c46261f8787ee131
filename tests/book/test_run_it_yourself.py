"""The 'Run it yourself' page tells a reader everything a chapter needs."""

import re
import shlex

import nbformat
import yaml
from packaging.requirements import Requirement

from conftest import DATA_DIR, ROOT, chapter_notebooks

PAGE = (ROOT / "run-it-yourself.md").read_text()
# What Colab ships already, and JupyterLab, which Colab replaces.
IN_COLAB = {"numpy", "pandas", "scipy", "matplotlib", "jupyterlab"}


def requirements():
    """{name: line} for every requirement in the reader's requirements.txt."""
    found = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            found[re.split(r"[<>=!~\[ ]", line)[0].lower()] = line
    return found


def colab_installs():
    """The requirement strings the page's `%pip install` lines name."""
    named = []
    for line in re.findall(r"%pip install ([^`\n]*)", PAGE):
        named += shlex.split(line)
    return named


def test_colab_cell_installs_what_colab_lacks():
    installed = colab_installs()
    for name, line in requirements().items():
        if name not in IN_COLAB:
            assert line in installed, f"the Colab cell lacks {line}"
        elif "<" in line:
            # Colab's own copy may be too new for an upper bound: some
            # Colab line bounds it from above (not from below: Colab's
            # copy may be older than a laptop's lower bound and still
            # right, and reinstalling it means restarting the session).
            upper = {
                str(s)
                for s in Requirement(line).specifier
                if s.operator.startswith("<")
            }
            assert any(
                Requirement(item).name.lower() == name
                and upper <= {str(s) for s in Requirement(item).specifier}
                for item in installed
            ), f"no Colab line bounds {name} by {upper}"


def test_every_data_file_a_chapter_reads_can_be_downloaded():
    for notebook in chapter_notebooks():
        text = notebook.read_text()
        for path in DATA_DIR.glob("*.csv"):
            if path.name in text:
                assert f"<data/{path.name}>" in PAGE, (
                    f"{notebook.stem} reads {path.name}, which the page "
                    "does not offer"
                )


# --- each chapter's box: commands that work when pasted -------------------

CONFIG = yaml.safe_load((ROOT / "requirements" / "chapters.yml").read_text())
DOWNLOAD = re.compile(r"\{download\}`([^`<]+?)\s*<([^>]+)>`")


def data_files_used_by(notebook):
    """The data files the chapter's code names."""
    code = "\n".join(
        c.source
        for c in nbformat.read(notebook, as_version=4).cells
        if c.cell_type == "code"
    )
    return [p for p in sorted(DATA_DIR.glob("*.csv")) if p.name in code]


def box(notebook) -> str:
    cells = nbformat.read(notebook, as_version=4).cells
    return next(
        c.source
        for c in cells
        if "reader-requirements" in c.get("metadata", {}).get("tags", [])
    )


def test_each_box_links_its_own_file_and_its_commands_name_it():
    """The file a chapter's box links downloads as <chapter>.txt (Sphinx
    serves a download under its own name), and every install command in
    the box names that file, on Linux and macOS and on Windows."""
    for notebook in chapter_notebooks():
        text = box(notebook)
        own = f"{notebook.stem}.txt"
        links = dict((target, name) for name, target in DOWNLOAD.findall(text))
        assert links.get(f"/requirements/{own}") == own, (notebook.stem, links)
        assert (ROOT / "requirements" / own).exists()
        installs = re.findall(r"pip install -r ([\w.-]+)", text)
        assert installs and set(installs) == {own}, (notebook.stem, installs)
        assert f".venv/bin/pip install -r {own}" in text
        assert f".venv\\Scripts\\pip install -r {own}" in text
        assert "jupyter lab" in text


def test_each_box_lists_the_data_files_its_code_reads():
    for notebook in chapter_notebooks():
        text = box(notebook)
        linked = {
            target.removeprefix("/data/")
            for _, target in DOWNLOAD.findall(text)
            if target.startswith("/data/")
        }
        assert linked == {p.name for p in data_files_used_by(notebook)}, (
            notebook.stem
        )
        for name in linked:
            assert (DATA_DIR / name).exists()


def test_the_page_lists_each_chapters_data_files():
    for notebook in chapter_notebooks():
        line = next(
            row
            for row in PAGE.splitlines()
            if f"</requirements/{notebook.stem}.txt>" in row
        )
        named = set(re.findall(r"`([\w.-]+\.csv)`", line))
        assert named == {p.name for p in data_files_used_by(notebook)}
    assert "beside one data file" not in PAGE


def test_the_page_commands_name_a_file_the_page_links():
    linked = {
        re.sub(r".*/", "", target) for _, target in DOWNLOAD.findall(PAGE)
    }
    installs = re.findall(r"pip install -r (\S+)", PAGE)
    assert installs
    for name in installs:
        assert name.rstrip("`") in linked, name


def test_the_page_is_right_about_older_pythons():
    text = " ".join(PAGE.split())
    assert "cannot install the book's libraries" not in text
    assert f"Requires-Python >={CONFIG['python'][0]}" in text


def test_spark_install_size_and_java_for_every_system():
    """The DP-at-scale box and the page warn about the size of the Spark
    install and give the Java 17 install for Linux, macOS and Windows."""
    commands = [
        "sudo apt-get install openjdk-17-jre-headless",
        "brew install --cask temurin@17",
        "winget install EclipseAdoptium.Temurin.17.JRE",
    ]
    scale = box(ROOT / "chapters" / "dp-at-scale.ipynb")
    for text in (scale, PAGE):
        flat = " ".join(text.split())
        for command in commands:
            assert command in flat, command
        assert re.search(r"about \d+(\.\d)? GB", flat), "no size warning"
    # The sizes were measured with the PySpark the lock pins (the comment
    # in chapters.yml says which): another PySpark, measure again.
    source = (ROOT / "requirements" / "chapters.yml").read_text()
    measured = re.search(r"PySpark (\S+)'s source archive", source).group(1)
    lock = (ROOT / "requirements" / "reader-lock-3.13.txt").read_text()
    assert f"pyspark=={measured}\n" in lock, (
        f"the Spark install was measured with PySpark {measured}; the lock "
        "pins another: measure it again (requirements/chapters.yml)"
    )

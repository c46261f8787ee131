"""The 'Run it yourself' page tells a reader everything a chapter needs."""

import re
import shlex

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
        # Colab's own copy may be too new for an upper bound.
        if name not in IN_COLAB or "<" in line:
            assert line in installed, f"the Colab cell lacks {line}"


def test_every_data_file_a_chapter_reads_can_be_downloaded():
    for notebook in chapter_notebooks():
        text = notebook.read_text()
        for path in DATA_DIR.glob("*.csv"):
            if path.name in text:
                assert f"<data/{path.name}>" in PAGE, (
                    f"{notebook.stem} reads {path.name}, which the page "
                    "does not offer"
                )

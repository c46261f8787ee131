"""What a reader's run of a chapter prints, compared with the book's.

The book promises that a reader who runs a downloaded chapter sees the
numbers printed in the book. A reader's run uses the library versions pip
resolves on the reader's Python, not the toolchain's, so it is compared
with the stored notebook by what it *prints*, not by how each library
version lays it out. "Printed" means:

- text a cell prints (stdout) and the text of a result (text/plain, or
  text/markdown where the chapter shows Markdown): every word and every
  integer exactly, every float to the tolerance of the portable suite
  (scripts/notebook_outputs.py: a relative 1e-9), runs of white space as
  one space;
- a table (a result with text/html: a pandas DataFrame): the text of its
  cells, in order. The tags, styles and column widths around them are
  pandas' display formatting, which changes between pandas versions
  without changing a number;
- every glued value (the numbers the prose quotes), by name: its text/plain
  as IPython displays it (a table's cells for a DataFrame). The reader's
  kernel records each `glue(...)` call (see STARTUP), because a reader's
  `glue` shows nothing where the book's stores a value;
- an error's name and message;
- a figure: pixel for pixel, or else by what it plots
  (scripts/figure_data.py: texts, colours and styles exactly, every point
  to half a pixel), where tests/figures/<chapter>.json holds its record;
  the reader's kernel records what its figures plot the same way;
- a chart (Vega-Lite): the data it plots, its description and title, not
  the specification Altair writes around them.

Not compared: what a cell writes to stderr (warnings, which depend on the
library versions, not the book's numbers), the outputs of cells tagged
``nbval-ignore-output`` (they change on every run and say why) or
``nbval-skip``, and the glued values made in those cells.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import notebook_outputs

HERE = Path(__file__).resolve()
FIGURE_DATA = HERE.with_name("figure_data.py")
# The file the reader's kernel writes, in the notebook's folder.
LOG_NAME = ".book-reader-log.jsonl"
# The metadata of the output a recorded glue(..., display=True) shows.
GLUE_MARK = "book_glue"
IGNORED_TAGS = {"nbval-ignore-output", "nbval-skip"}
# tests/sanitize.cfg: object addresses change on every run.
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")

# The IPython start-up file of the reader's kernel (IPYTHONDIR), active
# when BOOK_READER_LOG names the log file. It appends to the log, in the
# order they happen: the record of every figure drawn (figure_data), a
# line {"glue": name, "data": bundle} for every glue call, and a line
# {"cell": id, "source": sha1 of its source, "number": n} after each
# cell ran (ipykernel passes the cell's id only in some versions). The chapter's own `glue`
# (the setup cell's stand-in in plain Jupyter) is replaced, once defined,
# by one that records the value and shows it as the stand-in does. Its
# names are deleted again: the chapter's namespace is a reader's.
STARTUP = """\
def _book_reader_log():
    import hashlib
    import importlib.util
    import json
    import os
    from pathlib import Path

    name = os.environ.get("BOOK_READER_LOG")
    if not name:
        return
    shell = get_ipython()
    log = Path.cwd() / name
    spec = importlib.util.spec_from_file_location(
        "_book_figure_data", {figure_data!r}
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.install(str(log))

    def write(entry):
        with open(log, "a", encoding="utf-8") as stream:
            stream.write(json.dumps(entry) + "\\n")

    def glue(name, value, display=True):
        data, _ = shell.display_formatter.format(value)
        write({{"glue": name, "data": data}})
        if display:
            from IPython.display import display as show

            show(value, metadata={{{mark!r}: name}})

    glue.book_recorder = True
    ran = [0]

    def after_cell(result):
        if not getattr(shell.user_ns.get("glue"), "book_recorder", False):
            if callable(shell.user_ns.get("glue")):
                shell.user_ns["glue"] = glue
        ran[0] += 1
        info = getattr(result, "info", None)
        source = getattr(info, "raw_cell", None) or ""
        write(
            {{
                "cell": getattr(info, "cell_id", None),
                "source": hashlib.sha1(source.encode()).hexdigest(),
                "number": ran[0],
            }}
        )

    shell.events.register("post_run_cell", after_cell)


_book_reader_log()
del _book_reader_log
"""


def kernel_environment() -> dict:
    """Environment variables for a kernel that records what it prints
    (figures, glued values) to LOG_NAME in its folder."""
    folder = Path(tempfile.mkdtemp(prefix="book-reader-ipython-"))
    startup = folder / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-book-reader.py").write_text(
        STARTUP.format(figure_data=str(FIGURE_DATA), mark=GLUE_MARK)
    )
    return {"IPYTHONDIR": str(folder), "BOOK_READER_LOG": LOG_NAME}


def read_log(path: Path) -> list[dict]:
    """The log of a recorded run, one entry per code cell that ran, in
    order: {"cell": id or None, "figures": [records], "glue": {name:
    bundle}}."""
    cells, figures, glue = [], [], {}
    if not path.exists():
        return cells
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if "artists" in entry:
            figures.append(entry)
        elif "glue" in entry:
            glue[entry["glue"]] = entry["data"]
        elif "number" in entry:
            cells.append(
                {
                    "cell": entry["cell"],
                    "source": entry.get("source"),
                    "figures": figures,
                    "glue": glue,
                }
            )
            figures, glue = [], {}
    return cells


def _text(value) -> str:
    text = "".join(value) if isinstance(value, list) else str(value)
    return ADDRESS.sub("0xADDRESS", text)


def table_text(markup: str) -> str:
    """The text of an HTML table's cells, in order, one space between."""
    markup = re.sub(
        r"<(style|script)\b.*?</\1>", " ", markup, flags=re.DOTALL | re.I
    )
    text = html.unescape(re.sub(r"<[^>]+>", " ", markup))
    return " ".join(text.split())


def shown_data(data: dict) -> tuple[str, object]:
    """(kind, what is compared) of a result's or a display's data."""
    if "image/png" in data:
        return "figure", data["image/png"]
    for mime, spec in data.items():
        if mime.startswith("application/vnd.vegalite.") and isinstance(
            spec, dict
        ):
            # Datasets are named by where the whole specification uses
            # them, not by Altair's hash of their bytes (which changes
            # with the Altair release, and so does their order).
            spec = notebook_outputs.renamed_datasets(spec)
            return "chart", {
                key: spec[key]
                for key in ("datasets", "data", "description", "title")
                if key in spec
            }
    if "text/html" in data:
        return "table", table_text(_text(data["text/html"]))
    if "text/markdown" in data:
        return "text", _text(data["text/markdown"])
    return "text", _text(data.get("text/plain", ""))


def printed(outputs) -> list[tuple[str, object]]:
    """What a cell's outputs print, as (kind, value) in order; stdout
    written in several pieces counts as one text."""
    items: list[tuple[str, object]] = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            if output.get("name") != "stdout":
                continue
            if items and items[-1][0] == "stdout":
                items[-1] = ("stdout", items[-1][1] + _text(output["text"]))
            else:
                items.append(("stdout", _text(output["text"])))
        elif kind == "error":
            items.append(("error", f"{output['ename']}: {output['evalue']}"))
        elif kind in ("display_data", "execute_result"):
            metadata = output.get("metadata", {})
            if "scrapbook" in metadata or GLUE_MARK in metadata:
                continue  # a glued value: compared by its name
            items.append(shown_data(output.get("data", {})))
    return items


def item_difference(
    now, stored, records=(None, None), drawn=True
) -> str | None:
    """None if two printed items agree, else how they differ (a figure,
    where `drawn` is False, by what it shows wherever the layout put it:
    figure_data.content_difference)."""
    (kind_now, value_now), (kind_stored, value_stored) = now, stored
    if kind_now != kind_stored:
        return f"a {kind_now} where a {kind_stored} was stored"
    if kind_now == "figure":
        if not drawn:
            if None in records:
                return "a figure with no record of what it shows to compare"
            import figure_data

            shown = figure_data.content_difference(*records)
            return f"what the figure shows changed: {shown}" if shown else None
        return notebook_outputs.image_difference(
            value_now, value_stored, *records
        )
    if kind_now == "chart":
        return notebook_outputs.json_difference(value_now, value_stored)
    return notebook_outputs.text_difference(value_now, value_stored)


def stored_glue(notebook) -> dict[str, tuple[int, dict]]:
    """{name: (cell index, data without the record prefix)} of every value
    the stored notebook glued outside cells whose outputs vary."""
    found = {}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or _ignored(cell):
            continue
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook")
            if record:
                prefix = record.get("mime_prefix", "")
                found[record["name"]] = (
                    index,
                    {
                        mime.removeprefix(prefix): value
                        for mime, value in output["data"].items()
                    },
                )
    return found


def _ignored(cell) -> bool:
    return bool(IGNORED_TAGS & set(cell.get("metadata", {}).get("tags", [])))


def describe(notebook, index: int) -> str:
    cell = notebook.cells[index]
    first = next(
        (line for line in cell.source.splitlines() if line.strip()), ""
    )
    return f"cell {index} (id {cell.get('id')}, `{first[:60]}`)"


def source_hash(source: str) -> str:
    return hashlib.sha1(source.encode()).hexdigest()


def match_log(executed, log: list[dict]) -> dict[int, dict]:
    """{index of a code cell: its log entry}. The log has one entry per
    cell the kernel ran (nbclient does not run an empty cell), matched by
    the cell's id where the kernel knew it, else by its source, in
    order (else in order alone)."""
    unused = list(log)
    recorded = {}
    for index, cell in enumerate(executed.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        digest = source_hash(cell.source)
        entry = next(
            (e for e in unused if e["cell"] and e["cell"] == cell.get("id")),
            None,
        ) or next(
            (e for e in unused if e.get("source") in (digest, None)), None
        )
        if entry is not None:
            unused.remove(entry)
        recorded[index] = entry or {"figures": [], "glue": {}}
    return recorded


def differences(
    stored, executed, log: list[dict], figures=None, drawn=True
) -> list:
    """Every place where a reader's run (`executed`, with the `log` its
    kernel wrote) prints something other than the stored notebook:
    ["cell N (id, first line): what differs", ...]. `figures` is
    {cell id: [records]} of the stored figures (tests/figures/). With
    `drawn` False a figure is compared by what it shows (its texts,
    colours, styles and numbers of artists and points), not by where they
    are: the oldest Matplotlib a chapter allows lays a figure out a few
    pixels otherwise. A figure with no record fails either way."""
    figures = figures or {}
    found = []
    code = [
        i for i, cell in enumerate(stored.cells) if cell.cell_type == "code"
    ]
    ran = [
        i for i, cell in enumerate(executed.cells) if cell.cell_type == "code"
    ]
    if len(code) != len(ran):
        return [f"{len(ran)} code cells where {len(code)} are stored"]
    recorded = match_log(executed, log)
    glued = {}
    for entry in recorded.values():
        glued.update(entry["glue"])
    for old_index, new_index in zip(code, ran, strict=True):
        old_cell, new_cell = stored.cells[old_index], executed.cells[new_index]
        if _ignored(old_cell):
            continue
        old, new = printed(old_cell.outputs), printed(new_cell.outputs)
        detail = None
        if len(old) != len(new):
            detail = (
                f"{len(new)} printed outputs where {len(old)} were stored "
                f"({[k for k, _ in new]} where {[k for k, _ in old]})"
            )
        else:
            now_figures = recorded.get(new_index, {"figures": []})["figures"]
            old_figures = figures.get(old_cell.get("id"), [])
            number = 0
            for item_new, item_old in zip(new, old, strict=True):
                records = (None, None)
                if item_old[0] == "figure":
                    records = tuple(
                        found_records[number]
                        if number < len(found_records)
                        else None
                        for found_records in (now_figures, old_figures)
                    )
                    number += 1
                detail = item_difference(item_new, item_old, records, drawn)
                if detail:
                    break
        if detail:
            found.append(f"{describe(stored, old_index)}: {detail}")
    for name, (index, data) in stored_glue(stored).items():
        if name not in glued:
            found.append(
                f"{describe(stored, index)}: the value glued as {name!r} "
                "was not glued"
            )
            continue
        detail = item_difference(shown_data(glued[name]), shown_data(data))
        if detail:
            found.append(
                f"{describe(stored, index)}: the value glued as {name!r}: "
                f"{detail}"
            )
    return found


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

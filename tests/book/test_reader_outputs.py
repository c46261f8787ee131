"""The comparison of a reader's run with the book (scripts/reader_outputs.py)
fails on a number a reader sees and passes on how a library lays it out.

Each case changes one thing in a chapter's stored outputs, as a reader's
run with other library versions could, and checks the verdict; the last
test runs a small notebook in a recording kernel, as the reader runs do.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import nbformat
import pytest

from conftest import CHAPTERS_DIR, ROOT, chapter_notebooks

sys.path.insert(0, str(ROOT / "scripts"))
import reader_outputs  # noqa: E402
import refresh_reader_lock  # noqa: E402

FIGURES = ROOT / "tests" / "figures"


def as_a_reader_runs_it(stored, records=None):
    """(the notebook a reader's run writes, the log its kernel writes),
    made from the stored notebook: the same outputs, except that the
    stored glue records are not shown (a reader's glue shows nothing) and
    are in the log instead, as are the figure `records` given."""
    executed = copy.deepcopy(stored)
    log = []
    for cell in executed.cells:
        if cell.cell_type != "code":
            continue
        glue = {}
        kept = []
        for output in cell.outputs:
            record = output.get("metadata", {}).get("scrapbook")
            if record:
                prefix = record.get("mime_prefix", "")
                glue[record["name"]] = {
                    mime.removeprefix(prefix): value
                    for mime, value in output["data"].items()
                }
            else:
                kept.append(output)
        cell.outputs = kept
        if cell.source.strip():
            log.append(
                {
                    "cell": None,  # as ipykernel reports it
                    "source": reader_outputs.source_hash(cell.source),
                    "figures": copy.deepcopy(
                        (records or {}).get(cell.get("id"), [])
                    ),
                    "glue": glue,
                }
            )
    return executed, log


def stored(stem: str):
    return nbformat.read(CHAPTERS_DIR / f"{stem}.ipynb", as_version=4)


def figures(stem: str) -> dict:
    path = FIGURES / f"{stem}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def code_cell(notebook, predicate):
    return next(
        (index, cell)
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and predicate(cell)
    )


@pytest.mark.parametrize("chapter", chapter_notebooks(), ids=lambda p: p.stem)
def test_the_stored_chapter_agrees_with_itself(chapter):
    notebook = stored(chapter.stem)
    executed, log = as_a_reader_runs_it(notebook)
    assert (
        reader_outputs.differences(
            notebook, executed, log, figures(chapter.stem)
        )
        == []
    )


def printing(notebook):
    """(index, cell) of the first checked cell that prints to stdout a
    text with a float in it."""
    return code_cell(
        notebook,
        lambda cell: (
            not reader_outputs._ignored(cell)
            and any(
                o.get("name") == "stdout"
                and reader_outputs.notebook_outputs.NUMBER.search(o["text"])
                and "." in o["text"]
                for o in cell.outputs
            )
        ),
    )


def test_a_printed_number_that_moved_fails_naming_the_cell():
    notebook = stored("local-dp")
    executed, log = as_a_reader_runs_it(notebook)
    index, _ = printing(notebook)
    output = next(
        o for o in executed.cells[index].outputs if o.get("name") == "stdout"
    )
    number = reader_outputs.notebook_outputs.NUMBER.findall(output["text"])
    changed = next(n for n in number if "." in n)
    output["text"] = output["text"].replace(
        changed, changed[:-1] + str((int(changed[-1]) + 1) % 10), 1
    )
    found = reader_outputs.differences(notebook, executed, log)
    assert len(found) == 1
    assert found[0].startswith(f"cell {index} (id {notebook.cells[index].id}")
    assert "number" in found[0]


def test_a_glued_value_that_moved_fails_naming_it():
    notebook = stored("local-dp")
    executed, log = as_a_reader_runs_it(notebook)
    name, (index, data) = next(
        iter(reader_outputs.stored_glue(notebook).items())
    )
    entry = next(e for e in log if name in e["glue"])
    entry["glue"][name] = {"text/plain": "12345.678"}
    found = reader_outputs.differences(notebook, executed, log)
    assert len(found) == 1 and f"glued as {name!r}" in found[0]
    assert found[0].startswith(f"cell {index} ")
    # and a glued value that is not glued at all
    del entry["glue"][name]
    found = reader_outputs.differences(notebook, executed, log)
    assert found and "was not glued" in found[0]


def test_a_changed_table_cell_fails_and_its_layout_does_not():
    notebook = stored("deidentification")
    executed, log = as_a_reader_runs_it(notebook)
    index, cell = code_cell(
        notebook,
        lambda c: (
            not reader_outputs._ignored(c)
            and any("text/html" in o.get("data", {}) for o in c.outputs)
        ),
    )
    output = next(
        o
        for o in executed.cells[index].outputs
        if "text/html" in o.get("data", {})
    )
    markup = output["data"]["text/html"]
    # pandas' layout of another version: other attributes and styles,
    # other white space, another text/plain rendering
    output["data"]["text/html"] = (
        markup.replace('border="1" ', "")
        .replace("<style scoped>", "<style>\n  .x {}\n")
        .replace("<td>", "<td>\n    ")
    )
    output["data"]["text/plain"] = "laid out otherwise"
    assert reader_outputs.differences(notebook, executed, log) == []
    # a number in one of its cells
    cells = reader_outputs.table_text(markup).split()
    target = next(word for word in cells if word.isdigit() and len(word) > 1)
    output["data"]["text/html"] = markup.replace(
        f">{target}<", f">{int(target) + 1}<", 1
    )
    found = reader_outputs.differences(notebook, executed, log)
    assert len(found) == 1 and found[0].startswith(f"cell {index} ")


def test_warnings_on_stderr_and_cells_that_vary_are_not_compared():
    notebook = stored("dp-at-scale")
    executed, log = as_a_reader_runs_it(notebook)
    index, _ = code_cell(notebook, lambda c: c.source.strip() != "")
    executed.cells[index].outputs.append(
        nbformat.v4.new_output(
            "stream", name="stderr", text="FutureWarning: something\n"
        )
    )
    varying, cell = code_cell(notebook, reader_outputs._ignored)
    executed.cells[varying].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="S0001 1.0\n")
    ]
    assert reader_outputs.differences(notebook, executed, log) == []


def test_a_figure_that_moved_fails_and_a_snapped_one_passes():
    stem = "deidentification"
    notebook = stored(stem)
    executed, log = as_a_reader_runs_it(notebook)
    records = figures(stem)
    index, cell = code_cell(notebook, lambda c: c.get("id") in records)
    entry = reader_outputs.match_log(executed, log)[index]
    entry["figures"] = copy.deepcopy(records[cell.id])
    # another rendering of the same figure (other pixels: here a blank
    # image of the same size), with the same record: passes by the record
    output = next(
        o
        for o in executed.cells[index].outputs
        if "image/png" in o.get("data", {})
    )
    output["data"]["image/png"] = blank_like(output["data"]["image/png"])
    assert reader_outputs.differences(notebook, executed, log, records) == []
    # what it plots moved by two pixels: fails
    for artist in entry["figures"][0]["artists"]:
        if artist.get("kind") in ("line", "patch") and artist["points"]:
            artist["points"][0][1] += 2
            break
    found = reader_outputs.differences(notebook, executed, log, records)
    assert len(found) == 1 and "what it plots moved" in found[0]
    # and without a record, other pixels fail
    entry["figures"] = []
    found = reader_outputs.differences(notebook, executed, log, records)
    assert len(found) == 1 and "no record" in found[0]


def blank_like(png_base64: str) -> str:
    import base64
    import io

    from PIL import Image

    with Image.open(io.BytesIO(base64.b64decode(png_base64))) as image:
        blank = Image.new("RGBA", image.size, "white")
    buffer = io.BytesIO()
    blank.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_the_recording_kernel_logs_glue_and_figures_per_cell(tmp_path):
    """A reader's kernel (plain Jupyter, the setup cell's glue stand-in)
    records each glued value and each figure under the cell that made it,
    and shows a glue(..., display=True) as the stand-in does."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "def glue(name, value, display=True):\n"
            "    if display:\n"
            "        from IPython.display import display as show\n\n"
            "        show(value)"
        ),
        nbformat.v4.new_code_cell("glue('quiet', 0.25, display=False)"),
        nbformat.v4.new_code_cell(
            "import matplotlib.pyplot as plt\n"
            "plt.plot([0, 1], [0, 1])\nplt.title('t')\nplt.show()\n"
            "glue('shown', 3)"
        ),
    ]
    path = tmp_path / "small.ipynb"
    nbformat.write(notebook, path)
    env = {
        k: v
        for k, v in __import__("os").environ.items()
        if k not in ("MPLBACKEND",)
    }
    env.update(reader_outputs.kernel_environment())
    run = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "book" / "run_in_jupyter.py")]
        + [str(path)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert '"error": null' in run.stdout, run.stdout + run.stderr[-2000:]
    log = reader_outputs.read_log(tmp_path / reader_outputs.LOG_NAME)
    executed = nbformat.read(tmp_path / "executed.ipynb", as_version=4)
    assert len(log) == 3
    log = reader_outputs.match_log(executed, log)
    assert log[1]["glue"] == {"quiet": {"text/plain": "0.25"}}
    assert log[2]["glue"] == {"shown": {"text/plain": "3"}}
    assert len(log[2]["figures"]) == 1 and not log[1]["figures"]
    shown = reader_outputs.printed(executed.cells[2].outputs)
    assert [kind for kind, _ in shown] == ["figure"]  # the glue is apart
    assert executed.cells[2].outputs[-1]["data"]["text/plain"] == "3"


# --- make refresh-reader-lock --------------------------------------------


def test_the_refresh_names_what_moved():
    old = refresh_reader_lock.pins("numpy==2.4.6\npandas==3.1.1\nsix==1\n")
    new = refresh_reader_lock.pins(
        "numpy==2.5.5\n    # via x\npandas==3.1.1\nzipp==3.0\n"
    )
    table = refresh_reader_lock.moved(old, new)
    assert table[0].split() == ["package", "locked", "newest"]
    assert [line.split() for line in table[1:]] == [
        ["numpy", "2.4.6", "2.5.5"],
        ["six", "1", "-"],
        ["zipp", "-", "3.0"],
    ]
    assert refresh_reader_lock.moved(old, old) == []


def test_make_has_the_refresh_target():
    makefile = (ROOT / "Makefile").read_text()
    assert "refresh-reader-lock:" in makefile
    assert "scripts/refresh_reader_lock.py" in makefile


VEGA = "application/vnd.vegalite.v5+json"


def two_dataset_chart(notebook):
    """(index, output) of the first stored chart with two datasets, each
    referred to by a part of the chart (not by its top-level data)."""
    index, cell = code_cell(
        notebook,
        lambda c: any(
            len(o.get("data", {}).get(VEGA, {}).get("datasets", {})) == 2
            and "data" not in o["data"][VEGA]
            for o in c.outputs
        ),
    )
    return index, next(o for o in cell.outputs if VEGA in o.get("data", {}))


def test_a_chart_that_another_altair_named_and_ordered_passes():
    """Altair names a dataset by a hash of its bytes and writes the
    datasets in its own order; both change with the Altair release (the
    oldest lane runs Altair 5.0). A chart whose parts refer to their
    datasets passes when only the names and their order changed."""
    notebook = stored("dp-statistics")
    executed, log = as_a_reader_runs_it(notebook)
    index, output = two_dataset_chart(executed)
    text = json.dumps(output["data"][VEGA])
    for number, name in enumerate(output["data"][VEGA]["datasets"]):
        text = text.replace(name, "data-" + f"{number + 10:x}" * 32)
    spec = json.loads(text)
    spec["datasets"] = dict(reversed(list(spec["datasets"].items())))
    output["data"][VEGA] = spec
    assert reader_outputs.differences(notebook, executed, log) == []


def test_a_chart_whose_parts_show_each_others_data_fails():
    notebook = stored("dp-statistics")
    executed, log = as_a_reader_runs_it(notebook)
    index, output = two_dataset_chart(executed)
    spec = output["data"][VEGA]
    first, second = list(spec["datasets"])
    parts = json.dumps({k: v for k, v in spec.items() if k != "datasets"})
    parts = parts.replace(first, "data-swapping").replace(second, first)
    swapped = json.loads(parts.replace("data-swapping", second))
    swapped["datasets"] = spec["datasets"]
    output["data"][VEGA] = swapped
    found = reader_outputs.differences(notebook, executed, log)
    assert len(found) == 1 and found[0].startswith(f"cell {index} "), found


def first_figure_run(stem="dp-statistics"):
    """(stored notebook, a reader's run of it, its log, the stored figure
    records, the index of the first cell with a figure, that cell's log
    entry) for the oldest-lane figure tests."""
    notebook = stored(stem)
    records = figures(stem)
    executed, log = as_a_reader_runs_it(notebook, records)
    index, _ = code_cell(notebook, lambda c: c.get("id") in records)
    entry = reader_outputs.match_log(executed, log)[index]
    return notebook, executed, log, records, index, entry


def test_on_the_oldest_lane_a_figure_is_compared_by_what_it_shows():
    """With `drawn` False (the oldest Matplotlib a chapter allows lays a
    figure out a few pixels otherwise) a figure whose every part moved
    passes, and one whose label reads otherwise, or that lost a line,
    fails: the reader would see those."""
    notebook, executed, log, records, index, entry = first_figure_run()
    cell = notebook.cells[index]
    output = next(
        o
        for o in executed.cells[index].outputs
        if "image/png" in o.get("data", {})
    )
    output["data"]["image/png"] = blank_like(output["data"]["image/png"])

    def run(change):
        entry["figures"] = copy.deepcopy(records[cell.id])
        change(entry["figures"][0])
        return reader_outputs.differences(
            notebook, executed, log, records, drawn=False
        )

    def shifted(points):
        if points and isinstance(points[0], (int, float)):
            return [points[0] + 17, *points[1:]]
        return [shifted(p) if isinstance(p, list) else p for p in points]

    def moved(record):
        record["size"] = [record["size"][0] + 3, record["size"][1]]
        for artist in record["artists"]:
            for key in ("points", "at", "offsets"):
                if key in artist:
                    artist[key] = shifted(artist[key])

    def relabelled(record):
        text = next(a for a in record["artists"] if a.get("kind") == "text")
        text["text"] += " (changed)"

    def lost_a_line(record):
        line = next(a for a in record["artists"] if a.get("kind") == "line")
        record["artists"].remove(line)

    assert run(moved) == []
    for change in (relabelled, lost_a_line):
        found = run(change)
        assert len(found) == 1 and "what the figure shows" in found[0], found


def test_on_the_oldest_lane_a_figure_the_recorder_missed_fails():
    """With `drawn` False nothing else compares a figure: a figure the
    reader's kernel showed but did not record fails, as on the newest lane
    where its pixels differ."""
    notebook, executed, log, records, _, entry = first_figure_run()
    entry["figures"] = []
    found = reader_outputs.differences(
        notebook, executed, log, records, drawn=False
    )
    assert len(found) == 1 and "no record" in found[0], found

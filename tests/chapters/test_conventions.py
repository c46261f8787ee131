"""The book's conventions, read statically from the stored chapters.

These are the promises that make six notebooks one book: the same setup
cell, one contract per shared function, code that fits the page, solutions
that run, no metadata that breaks on another machine, prose that speaks to
readers. Each check reads the notebooks as files; nothing is executed.
"""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from conftest import CHAPTERS_DIR, ROOT, chapter_notebooks

NOTEBOOKS = chapter_notebooks()
MAX_LINE = 79


def code_cells(path):
    notebook = nbformat.read(path, as_version=4)
    return [c for c in notebook.cells if c.cell_type == "code"]


def markdown_text(path):
    notebook = nbformat.read(path, as_version=4)
    return "\n".join(
        c.source for c in notebook.cells if c.cell_type == "markdown"
    )


def top_level_functions(path) -> dict[str, str]:
    """name -> exact source of each function a chapter defines at top level."""
    functions = {}
    for cell in code_cells(path):
        tree = ast.parse(cell.source)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                functions[node.name] = ast.get_source_segment(
                    cell.source, node
                )
    return functions


def ids(paths):
    return [p.stem for p in paths]


def test_every_chapter_starts_with_the_same_setup_cell():
    first_cells = {p.stem: code_cells(p)[0].source for p in NOTEBOOKS}
    reference = first_cells[NOTEBOOKS[0].stem]
    assert "def load_adult" in reference and "glue" in reference
    different = [stem for stem, s in first_cells.items() if s != reference]
    assert not different, f"setup cell differs from the others in {different}"


def test_a_function_two_chapters_define_has_one_source():
    by_name: dict[str, dict[str, str]] = {}
    for path in NOTEBOOKS:
        for name, source in top_level_functions(path).items():
            by_name.setdefault(name, {})[path.stem] = source
    clashes = {
        name: sorted(sources)
        for name, sources in by_name.items()
        if len(set(sources.values())) > 1
    }
    assert not clashes, f"one name, different code: {clashes}"


def test_retired_twin_names_are_gone():
    # One name per idea: these twins were merged into the names on the right.
    retired = {
        "age_band": "generalize_numeric",
        "check_columns": "require_columns",
        "max_success_rate": "guessing_bound",
    }
    for path in NOTEBOOKS:
        defined = set(top_level_functions(path))
        for old, new in retired.items():
            assert old not in defined, f"{path.stem}: use {new}, not {old}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_code_lines_fit_the_page(path):
    long_lines = [
        line
        for cell in code_cells(path)
        for line in cell.source.splitlines()
        if len(line) > MAX_LINE
    ]
    assert not long_lines, (
        f"{len(long_lines)} lines > {MAX_LINE}: " + (long_lines[0])
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_no_code_hides_in_markdown_fences(path):
    # Code in a ```python fence is never run, so it can rot unnoticed.
    fences = re.findall(
        r"`{3,}\s*(?:python|ipython3?|py)\b", markdown_text(path)
    )
    assert not fences


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_solutions_with_code_run(path):
    """Gated solutions hold their code in cells tagged `solution`."""
    notebook = nbformat.read(path, as_version=4)
    inside, tagged_outside = False, []
    for number, cell in enumerate(notebook.cells):
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "markdown":
            if "{solution-start}" in cell.source:
                inside = True
            if "{solution-end}" in cell.source:
                inside = False
        elif inside:
            assert "solution" in tags, f"cell {number} in a solution, untagged"
        elif "solution" in tags:
            tagged_outside.append(number)
    assert not inside, "a {solution-start} is never closed"
    assert not tagged_outside, (
        f"cells tagged solution outside one: {tagged_outside}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_chapter_has_its_shape(path):
    text = markdown_text(path)
    assert "Learning objectives" in text
    assert "{admonition} Summary" in text
    assert "## Exercises" in text and "{exercise}" in text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_prose_speaks_to_readers(path):
    talk = re.findall(
        r"unit tests?|chapter's tests|test suite|\bnbval\b",
        markdown_text(path),
        re.I,
    )
    assert not talk, f"the prose talks to maintainers: {talk}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_no_volatile_metadata(path):
    # A stored Python patch version (3.11.7) makes a comparison fail on any
    # other machine; timing metadata changes on every run.
    notebook = nbformat.read(path, as_version=4)
    assert "version" not in notebook.metadata.get("language_info", {})
    for cell in code_cells(path):
        assert "execution" not in cell.metadata


def stored_by_make_execute():
    """scripts/execute_notebooks.py, the one writer of stored outputs."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "execute_notebooks", ROOT / "scripts" / "execute_notebooks.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_stored_as_make_execute_writes_it(path):
    """The file is byte for byte what `make execute` writes: cells run once
    each, top to bottom, streams merged, no volatile metadata. (That its
    outputs are what the code produces, run alone beside its data, is what
    nbval checks, exactly; see the root conftest.py.)"""
    execute = stored_by_make_execute()
    notebook = nbformat.read(path, as_version=4)
    counts = [c.execution_count for c in code_cells(path)]
    assert counts == list(range(1, len(counts) + 1)), (
        "the code cells were not run once each, top to bottom"
    )
    execute.coalesce_streams(notebook)
    execute.normalize_metadata(notebook)
    assert nbformat.writes(notebook) + "\n" == path.read_text(), (
        "the file is not as make execute writes it"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_randomness_is_seeded(path):
    source = "\n".join(c.source for c in code_cells(path))
    legacy = re.findall(r"np\.random\.(?!default_rng|Generator)\w+", source)
    assert not legacy, f"global numpy RNG: {legacy}"
    for call in re.findall(r"default_rng\(([^)]*)\)", source):
        assert call.strip(), "default_rng() without a seed"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_ignored_outputs_say_why(path):
    for cell in code_cells(path):
        if "nbval-ignore-output" in cell.metadata.get("tags", []):
            assert "#" in cell.source, (
                "a cell tagged nbval-ignore-output must say in a comment why "
                f"its output varies:\n{cell.source[:200]}"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_every_figure_has_its_record(path):
    """Every stored figure has a record of what it plots in
    tests/figures/<chapter>.json (written by `make execute`), the
    reference nbval compares with when a figure's pixels moved on another
    machine; no record is left for a cell that no longer draws."""
    import json

    records_path = ROOT / "tests" / "figures" / f"{path.stem}.json"
    records = (
        json.loads(records_path.read_text()) if records_path.exists() else {}
    )
    drawn = {}
    for cell in code_cells(path):
        figures = sum(
            "image/png" in output.get("data", {}) for output in cell.outputs
        )
        if figures:
            drawn[cell.id] = figures
    assert {cell: len(found) for cell, found in records.items()} == drawn, (
        f"run `make execute` on {path.stem}: its figure records "
        f"({records_path.relative_to(ROOT)}) do not match its figures"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_code_comments_do_not_talk_about_the_test_tools(path):
    """A reader sees every code comment; nbval is the maintainers' tool."""
    for cell in code_cells(path):
        for line in cell.source.splitlines():
            comment = line.partition("#")[2]
            assert "nbval" not in comment, f"{path.stem}: {line.strip()}"


def only_glues(source: str) -> bool:
    """True if every statement of the cell is a call to glue(...)."""
    body = ast.parse(source).body
    return bool(body) and all(
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and getattr(node.value.func, "id", None) == "glue"
        for node in body
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_bookkeeping_is_out_of_sight(path):
    # A cell that only glues numbers teaches nothing: it is removed from the
    # page (remove-input), not folded behind a "Show code cell source" bar.
    folded = [
        cell.source[:80]
        for cell in code_cells(path)
        if only_glues(cell.source)
        and "hide-input" in cell.metadata.get("tags", [])
    ]
    assert not folded, f"glue-only cells folded on the page: {folded}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_glued_values_render(path):
    # myst-nb formats a glued number from its stored text; a numpy scalar is
    # stored as "np.float64(...)", which it cannot read, so the build fails.
    unreadable = []
    for cell in code_cells(path):
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook")
            if record:
                text = output["data"].get(record["mime_prefix"] + "text/plain")
                if text and text.startswith("np."):
                    unreadable.append(f"{record['name']} = {text}")
    assert not unreadable, f"glue plain Python values: {unreadable[:5]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_headings_hold_no_math(path):
    # A heading becomes a PDF bookmark, where xelatex cannot typeset math.
    headings = [
        line
        for line in markdown_text(path).splitlines()
        if re.match(r"^#{1,6} ", line) and "$" in line
    ]
    assert not headings, f"math in headings: {headings}"


def test_notation_page_does_not_call_n_delta_a_probability():
    # n * delta only bounds the chance that the record-publishing mechanism
    # leaks a record, 1 - (1 - delta)^n, and can exceed 1 itself.
    notation = (CHAPTERS_DIR.parent / "notation.md").read_text()
    row = next(
        line
        for line in notation.splitlines()
        if line.startswith("| $\\delta$ |")
    )
    assert "the chance of a disaster it can allow" not in row
    assert "1 - (1 - \\delta)^n" in row
    assert "at most $n\\delta$" in row
    assert "can exceed 1" in row
    # The same mechanism is (eps, delta)-DP for every eps; the notation
    # page keeps eps > 0, so the row must not say (0, delta).
    assert "(0, \\delta)" not in row
    n, delta = 32_561, 1e-5
    assert 1 - (1 - delta) ** n < n * delta
    assert n * 1e-4 > 1

"""Test code that several chapters' tests share (tests/chapters/test_*.py).

One piece of code for one piece of logic: the readers of a chapter's
stored outputs (its Markdown, its interactive Vega-Lite figure), the
wrapper that records what a chapter's function is called with, and the
brute force and the tables that more than one chapter is checked against.
Import it as ``import support`` (pytest puts this folder on the path).
A change here selects every chapter's tests in ``make check``
(scripts/check_selection.py).
"""

from __future__ import annotations

from contextlib import contextmanager

import nbformat
import numpy as np
import pandas as pd

from conftest import CHAPTERS_DIR

VEGA_LITE = "application/vnd.vegalite.v5+json"


def chapter_cells(stem: str) -> list:
    """The cells of chapters/<stem>.ipynb as stored (with outputs)."""
    return nbformat.read(CHAPTERS_DIR / f"{stem}.ipynb", as_version=4).cells


def markdown(stem: str) -> str:
    """All Markdown of the chapter as stored, its cells joined as
    paragraphs (a blank line between two cells)."""
    cells = chapter_cells(stem)
    return "\n\n".join(c.source for c in cells if c.cell_type == "markdown")


def markdown_text(stem: str) -> str:
    """All Markdown of the chapter as stored, joined, on one line (every
    run of white space read as one space), for phrases that the source
    breaks across lines."""
    return " ".join(markdown(stem).split())


def stored_vega_lite(stem: str) -> dict:
    """The chapter's one interactive figure, as its stored output holds it:
    the Vega-Lite 5 specification.

    Fails unless exactly one code output carries a Vega-Lite 5 spec and
    the output's text alternative (text/plain, what a reader without
    JavaScript sees) is the spec's description.
    """
    outputs = [
        output["data"]
        for cell in chapter_cells(stem)
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if VEGA_LITE in output.get("data", {})
    ]
    assert len(outputs) == 1, f"{stem}: {len(outputs)} Vega-Lite outputs"
    (data,) = outputs
    spec = data[VEGA_LITE]
    assert data["text/plain"] == spec["description"]
    return spec


def plotted_rows(spec: dict) -> list:
    """The rows of a stored figure's data: its largest inline dataset."""
    return max(spec["datasets"].values(), key=len)


def vega_signals(spec: dict) -> set:
    """The signal names of the Vega that the spec compiles to (vl-convert,
    Vega-Lite 5.21); compiling fails on a spec a browser could not draw."""
    import vl_convert  # noqa: PLC0415

    vega = vl_convert.vegalite_to_vega(spec, vl_version="5.21")
    return {signal["name"] for signal in vega["signals"]}


@contextmanager
def recording(kernel, name):
    """Wrap the chapter's function `name` so that every call's positional
    arguments are recorded (the chapter's functions look it up by name
    when they run); the original is restored afterwards."""
    original = kernel.namespace[name]
    calls = []

    def wrapper(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    kernel.namespace[name] = wrapper
    try:
        yield calls
    finally:
        kernel.namespace[name] = original


# --- the book's data rule on ages declared in [0, 125] -----------------------

AGE_DATA_CASES = {
    "empty": [],
    "one NaN record": [30, 40, np.nan, 50],
    "one record out of range": [30, 40, 10_000, 50],
    "one negative record": [30, 40, -7, 50],
    "one non-numeric record": [30, 40, "forty", 50],
    "None and pandas NA": pd.Series([30, None, pd.NA, 50], dtype=object),
}
AGE_CLEANED = {  # the same data after the rule: missing -> 0, clamped
    "empty": [],
    "one NaN record": [30, 40, 0, 50],
    "one record out of range": [30, 40, 125, 50],
    "one negative record": [30, 40, 0, 50],
    "one non-numeric record": [30, 40, 0, 50],
    "None and pandas NA": [30, 0, 0, 50],
}

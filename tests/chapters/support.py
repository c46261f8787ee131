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

import itertools
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


def assert_epsilon_slider(spec: dict) -> None:
    """The figure's one parameter is epsilon, on a range slider labelled
    "privacy parameter ε" that starts strictly inside its range, and the
    spec compiles to Vega with that signal."""
    (param,) = spec["params"]
    bind = param["bind"]
    assert param["name"] == "epsilon" and bind["input"] == "range"
    assert bind["name"].strip() == "privacy parameter ε"
    assert bind["min"] < param["value"] < bind["max"]
    assert "epsilon" in vega_signals(spec)


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


# --- the rank utility of the exponential-mechanism quantile ------------------


def rank_errors(values, q, candidates):
    """The rank error by its definition, independent of the chapters:
    how many values a candidate c would have to be moved past to be the
    q-quantile, max(0, #{x < c} - q n, q n - #{x <= c})."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    return np.array(
        [
            max(0.0, np.sum(values < c) - q * n, q * n - np.sum(values <= c))
            for c in candidates
        ]
    )


def assert_rank_error_sensitivity(error, q) -> None:
    """Brute force over every table of 0 to 5 values on 0..4 and every
    neighbour (one value 0..4 added; removing is the same pair read
    backwards), candidates on and between the values: the chapter's
    `error` (its quantile_rank_error) agrees with the definition on every
    table, moves by at most max(q, 1 - q), and by exactly that somewhere
    (1/2 for the median, not the 1 that an analysis ignoring q would
    assume)."""
    candidates = np.arange(-0.5, 5.0, 0.5)
    worst = 0.0
    for n in range(6):
        for table in itertools.combinations_with_replacement(range(5), n):
            base = error(list(table), q, candidates)
            assert np.allclose(base, rank_errors(table, q, candidates))
            for v in range(5):
                moved = error(list(table) + [v], q, candidates)
                worst = max(worst, np.abs(moved - base).max())
    assert abs(worst - max(q, 1 - q)) <= 1e-12, (worst, q)


# --- statistical tests of a mechanism's distribution -------------------------


def assert_counts_fit(observed, probabilities, draws: int) -> None:
    """Chi-square goodness of fit of the counts of `draws` seeded draws
    against a mechanism's exact probabilities, at the 0.1% level: a
    correct sampler fails with probability 0.001 only, and the seed is
    fixed, so the test gives the same answer every run. Counts that do
    not add up to `draws` (an outcome outside the classes) fail too."""
    from scipy import stats  # noqa: PLC0415

    expected = np.asarray(probabilities, dtype=float) * draws
    assert stats.chisquare(observed, expected).pvalue > 1e-3


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

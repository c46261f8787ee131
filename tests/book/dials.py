"""Interactive figures (_ext/vega_figures.py): every dial of the book, one
registry, and how a visit moves them (tests/book/browser.py calls
exercise_dials at the end of each page's visit, on a wide screen and on a
phone; tests/book/test_browser_dials.py reads what it recorded).

A dial is one <figure class="vega-figure"> on a page. Its entry names its
sliders (Vega signal -> the label a reader sees), the fields of the data
rows it shows, and `expected(values)`: the rows the chapter's Python gives
at those slider values (tests/book/dial_values.py: a closed form recomputed
there, or the grid the chapter stored). A visit moves every slider with the
keyboard and compares what the Vega view holds with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import dial_values
import pytest

if TYPE_CHECKING:
    from browser import Visit


@dataclass(frozen=True)
class Dial:
    page: str
    sliders: dict
    fields: tuple
    expected: object  # (values: dict) -> list of row dicts (the fields)
    texts: object = None  # (values: dict) -> strings the chart must show
    index: int = 0  # which figure of the page


DIALS = [
    Dial(
        "chapters/differential-privacy",
        {"epsilon": "privacy parameter ε"},
        ("output", "D", "neighbour", "log_ratio"),
        dial_values.laplace_rows,
        dial_values.laplace_texts,
    ),
    Dial(
        "chapters/randomized-response",
        {"prior": "attacker's prior", "epsilon": "privacy parameter ε"},
        ("prior", "after_yes", "after_no"),
        dial_values.rr_rows,
        dial_values.rr_texts,
    ),
    Dial(
        "chapters/composition",
        {"epsilon": "ε of each release"},
        ("epsilon", "k", "basic", "advanced", "kov"),
        dial_values.composition_rows,
        dial_values.composition_texts,
    ),
    Dial(
        "chapters/local-dp",
        {"epsilon": "privacy parameter ε"},
        ("d", "sd"),
        dial_values.oracle_rows,
    ),
    Dial(
        "chapters/many-queries",
        {"epsilon": "privacy parameter ε"},
        ("length", "rmse"),
        dial_values.range_rows,
    ),
    Dial(
        "chapters/continual-release",
        {"horizon": "horizon T (days)"},
        ("day", "fresh", "increments", "tree", "tree_optimal"),
        dial_values.continual_rows,
        dial_values.continual_texts,
    ),
    Dial(
        "chapters/gaussian-and-accounting",
        {"epsilon": "privacy parameter ε", "log10_delta": "log₁₀ δ"},
        ("epsilon", "log10_delta", "classical", "analytic"),
        dial_values.gaussian_rows,
        dial_values.gaussian_texts,
    ),
    Dial(
        "chapters/private-selection",
        {"epsilon": "privacy parameter ε"},
        ("count", "probability"),
        dial_values.selection_rows,
        dial_values.selection_texts,
    ),
    Dial(
        "chapters/k-anonymity",
        {"k": "k"},
        (
            "k",
            "age_width",
            "edu_width",
            "zip_width",
            "loss",
            "suppressed",
            "classes",
        ),
        dial_values.release_rows,
        dial_values.release_texts,
    ),
    Dial(
        "chapters/dp-statistics",
        {"epsilon": "privacy parameter ε"},
        ("epsilon", "n", "naive_coverage", "width_ratio"),
        dial_values.stats_rows,
        dial_values.stats_texts,
    ),
    Dial(
        "chapters/deploying-dp",
        {"epsilon": "total ε of the release"},
        ("epsilon", "error", "posterior"),
        dial_values.deploy_rows,
        dial_values.deploy_texts,
    ),
    Dial(
        "chapters/location-privacy",
        {"epsilon": "privacy parameter ε per km"},
        ("distance_km", "beyond"),
        dial_values.error_rows,
        dial_values.error_texts,
    ),
    Dial(
        "chapters/dp-at-scale",
        {"epsilon": "privacy parameter ε", "log10_delta": "log₁₀ δ"},
        ("n", "probability"),
        dial_values.partition_rows,
        dial_values.partition_texts,
    ),
    Dial(
        "chapters/memorization",
        {"sigma": "noise multiplier σ"},
        ("sigma", "copies", "exposure", "epsilon"),
        dial_values.memorization_rows,
        dial_values.memorization_texts,
    ),
]
DIAL_PAGE = DIALS[0].page
NO_DIAL_PAGE = "chapters/deidentification"

# What figure number `index` shows now: its signals, the rows of each dataset
# that carry every one of `fields`, its texts and its size.
DIAL_STATE = r"""([index, signals, fields]) => {
  const figure = document.querySelectorAll('figure.vega-figure')[index];
  const view = (window.bookVegaViews || {})[figure.id];
  if (!view || view === 'drawing') return {ready: false};
  const datasets = [];
  const walk = state => {
    for (const name of Object.keys(state.data || {})) {
      let values;
      try { values = view.data(name); } catch (error) { continue; }
      const rows = (values || []).filter(r => fields.every(f => f in r))
        .map(r => Object.fromEntries(fields.map(f => [f, r[f]])));
      if (rows.length) datasets.push(rows);
    }
    for (const sub of Object.values(state.subcontext || {})) walk(sub);
  };
  walk(view.getState({data: () => true, signals: () => false, recurse: true}));
  const svg = figure.querySelector('svg');
  const labelled = figure.querySelector('[aria-label]');
  return {ready: true,
          values: Object.fromEntries(signals.map(s => [s, view.signal(s)])),
          datasets,
          texts: [...figure.querySelectorAll('svg text')].map(t => t.textContent),
          shown: [...figure.querySelectorAll("input[type='range']")].map(
            i => [i.getAttribute('step'), i.nextElementSibling.textContent]),
          figureCount: document.querySelectorAll('figure.vega-figure').length,
          svgWidth: svg ? svg.getBoundingClientRect().width : 0,
          pageWidth: document.documentElement.clientWidth,
          label: labelled ? labelled.getAttribute('aria-label') : null,
          caption: figure.querySelector('figcaption').textContent.trim()};
}"""


def _same_rows(shown: list, expected: list, fields: tuple) -> bool:
    """Equal as sets of rows (a fold repeats rows), to 1e-9 relative."""
    import numpy as np  # noqa: PLC0415

    def table(rows):
        unique = {tuple(float(row[f]) for f in fields) for row in rows}
        return np.array(sorted(unique))

    a, b = table(shown), table(expected)
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-9, atol=1e-12)


def _check_dial(dial: Dial, state: dict, values: dict) -> None:
    assert state["ready"], state
    for name, value in values.items():
        assert state["values"][name] == pytest.approx(value), state["values"]
    expected = dial.expected(values)
    assert expected, f"{dial.page}: nothing expected at {values}"
    assert any(
        _same_rows(rows, expected, dial.fields) for rows in state["datasets"]
    ), f"{dial.page} at {values}: no data of the figure equals the chapter's"
    for text in dial.texts(values) if dial.texts else []:
        assert text in state["texts"], (text, state["texts"])
    for step, shown in state["shown"]:
        places = len(step.split(".")[1]) if "." in step else 0
        assert shown == f"{float(shown):.{places}f}", (step, shown)


def exercise_dial(tab, dial: Dial, width: int) -> None:
    """Move each slider of `dial` on the open page `tab` (a viewport `width`
    px wide) with the arrow keys; at every position, what the figure shows
    must be what the chapter's Python gives (an AssertionError says what
    differs), and the chart fits the page, which fits the viewport."""
    signals, fields = list(dial.sliders), list(dial.fields)
    figure = tab.locator("figure.vega-figure").nth(dial.index)
    # The runtime is fetched when the figure comes near the screen.
    figure.scroll_into_view_if_needed()
    figure.locator("svg").wait_for()
    tab.wait_for_function(
        "i => document.querySelectorAll('figure.vega-figure')[i]"
        ".classList.contains('vega-figure-ready')",
        arg=dial.index,
    )
    sliders = {
        s: figure.get_by_role("slider", name=dial.sliders[s]) for s in signals
    }
    values = {s: float(sliders[s].input_value()) for s in signals}
    state = tab.evaluate(DIAL_STATE, [dial.index, signals, fields])
    _check_dial(dial, state, values)
    for signal, slider in sliders.items():
        assert slider.get_attribute("type") == "range"
        seen = {values[signal]}
        # Five steps away from the start and three back: towards the
        # end with more room, so that both moves land on new values.
        room_up = float(slider.get_attribute("max")) - values[signal]
        room_down = values[signal] - float(slider.get_attribute("min"))
        moves = [("ArrowRight", 5), ("ArrowLeft", 3)]
        if room_down > room_up:
            moves = [("ArrowLeft", 5), ("ArrowRight", 3)]
        for key, presses in moves:
            slider.focus()
            for _ in range(presses):
                slider.press(key)
            tab.wait_for_timeout(200)
            values[signal] = float(slider.input_value())
            seen.add(values[signal])
            state = tab.evaluate(DIAL_STATE, [dial.index, signals, fields])
            _check_dial(dial, state, values)
        assert len(seen) == 3, (signal, seen)
    assert state["label"], "the chart has no text alternative"
    assert "slider" in state["caption"].lower(), state["caption"]
    assert state["svgWidth"] <= state["pageWidth"] <= width, state


def exercise_dials(tab, recorder: Visit, width: int) -> None:
    """Exercise every dial of the page `recorder` visits; record for each
    figure None, or the error it raised (its test raises it again)."""
    for dial in DIALS:
        if dial.page != recorder.page:
            continue
        try:
            exercise_dial(tab, dial, width)
        except Exception as error:  # noqa: BLE001 - reported by its test
            recorder.dials[dial.index] = error
        else:
            recorder.dials[dial.index] = None

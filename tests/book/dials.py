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
        dial_values.oracle_texts,
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
        "chapters/disclosure-control",
        {"k": "group size k"},
        ("k", "relink", "interval", "loss", "bound"),
        dial_values.microaggregation_rows,
        dial_values.microaggregation_texts,
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


# Every text of the figure must lie inside its chart's box (the <svg>, which
# clips what overflows it) at every slider position, and read at least
# MIN_LABEL_PX CSS px where it is drawn. The walk sets each slider to each
# value of `values` in turn, the others at their start, as a drag does
# (the value, then an input event), then to `corners` (the ends of every
# slider at once); it waits for the view and measures. It returns the
# number of positions, the smallest text size, the texts outside the box
# (first few) and the positions where the live region did not say what the
# chart writes.
MIN_LABEL_PX = 8
PHONE_WIDTH = 390  # tests/book/browser.py's PHONE (which imports this file)
MOST_POSITIONS = 60  # a longer slider is walked on this many, ends included
WALK = r"""async ([index, walks, corners]) => {
  const figure = document.querySelectorAll('figure.vega-figure')[index];
  const view = window.bookVegaViews[figure.id];
  const svg = figure.querySelector('svg');
  const inputs = [...figure.querySelectorAll("input[type='range']")];
  const status = figure.querySelector('.vega-figure-status');
  const start = inputs.map(i => i.value);
  const result = {positions: 0, smallest: Infinity, outside: [], silent: [],
                  overlapping: []};
  const set = async values => {
    values.forEach((value, i) => {
      if (value === null || inputs[i].value === String(value)) return;
      inputs[i].value = value;
      inputs[i].dispatchEvent(new Event('input', {bubbles: true}));
    });
    await view.runAsync();
    await new Promise(resolve => setTimeout(resolve, 0));
  };
  const measure = () => {
    result.positions += 1;
    const where = inputs.map(i => i.value).join(', ');
    const box = svg.getBoundingClientRect();
    const scale = box.width / Number(svg.getAttribute('width'));
    const drawn = [];
    for (const text of svg.querySelectorAll('text')) {
      const r = text.getBoundingClientRect();
      if (!text.textContent.trim() || r.width === 0) continue;
      drawn.push([text, r]);
      const size = parseFloat(getComputedStyle(text).fontSize) * scale;
      result.smallest = Math.min(result.smallest, size);
      const sides = [
        ['left', box.left - r.left], ['right', r.right - box.right],
        ['top', box.top - r.top], ['bottom', r.bottom - box.bottom]]
        .filter(([, by]) => by > 0.5).map(([side, by]) =>
          `${side} by ${by.toFixed(1)} px`);
      if (sides.length && result.outside.length < 5) {
        result.outside.push(`"${text.textContent}" at ${where}: ${sides}`);
      }
    }
    // A readout (a line of text or a line's label) overlaps no other text.
    for (const [text, r] of drawn) {
      if (!text.closest("[class*='readout']")) continue;
      for (const [other, o] of drawn) {
        const across = Math.min(r.right, o.right) - Math.max(r.left, o.left);
        const down = Math.min(r.bottom, o.bottom) - Math.max(r.top, o.top);
        if (other !== text && across > 1 && down > 1
            && result.overlapping.length < 5) {
          result.overlapping.push(
            `"${text.textContent}" over "${other.textContent}" at ${where}`);
        }
      }
    }
    const said = status ? status.textContent : '';
    const readouts = [...svg.querySelectorAll(
      ".role-mark[class*='readout'] text")].map(t => t.textContent);
    const values = inputs.map(i => i.nextElementSibling.textContent);
    if ([...readouts, ...values].some(t => !said.includes(t))
        && result.silent.length < 5) {
      result.silent.push(`at ${where}: "${said}"`);
    }
  };
  for (const [i, values] of walks) {
    for (const value of values) {
      await set(inputs.map((_, j) => j === i ? value : start[j]));
      measure();
    }
  }
  for (const corner of corners) {
    await set(corner);
    measure();
  }
  await set(start);
  return result;
}"""

# What the page gives a screen reader and a thumb: each slider's size and
# what describes it, and the live region.
CONTROLS = r"""index => {
  const figure = document.querySelectorAll('figure.vega-figure')[index];
  const status = figure.querySelector('.vega-figure-status');
  return {
    figureWidth: figure.getBoundingClientRect().width,
    sliders: [...figure.querySelectorAll("input[type='range']")].map(i => {
      const box = i.getBoundingClientRect();
      const described = (i.getAttribute('aria-describedby') || '').split(' ')
        .map(id => document.getElementById(id)).filter(Boolean)
        .map(e => e.textContent.trim()).join(' ');
      return {name: i.name, width: box.width, height: box.height,
              described};
    }),
    live: status ? status.getAttribute('aria-live') : null,
    caption: figure.querySelector('figcaption').textContent.trim(),
  };
}"""


def _positions(slider) -> list:
    """The values a walk sets `slider` to: every one, or MOST_POSITIONS
    evenly spread from one end to the other."""
    import numpy as np  # noqa: PLC0415

    low, high, step = (
        float(slider.get_attribute(a)) for a in ("min", "max", "step")
    )
    count = round((high - low) / step)
    picks = np.arange(count + 1)
    if count >= MOST_POSITIONS:
        picks = np.unique(np.linspace(0, count, MOST_POSITIONS).round())
    places = len(str(step).split(".")[1].rstrip("0")) if step % 1 else 0
    return [f"{low + k * step:.{places}f}" for k in picks]


def walk_dial(tab, dial: Dial, sliders: dict, width: int) -> None:
    """Every slider of `dial` from end to end (and all of them at their
    ends together): its text stays in the chart's box, legible, and the
    live region says what the chart writes; the sliders can be hit with a
    thumb and are described for a screen reader.

    A chart is laid out the same on every screen (a phone scales the same
    drawing down), so the whole walk is made once, on the phone, where
    the text is smallest; a wider screen sees each slider's two ends."""
    import itertools  # noqa: PLC0415

    walks = [
        [i, _positions(slider)] for i, slider in enumerate(sliders.values())
    ]
    if width > PHONE_WIDTH:
        walks = [[i, [values[0], values[-1]]] for i, values in walks]
    ends = [(values[0], values[-1]) for _, values in walks]
    corners = (
        [list(c) for c in itertools.product(*ends)] if len(ends) > 1 else []
    )
    walked = tab.evaluate(WALK, [dial.index, walks, corners])
    where = f"{dial.page} at {width} px"
    assert walked["positions"] == sum(len(v) for _, v in walks) + len(
        corners
    ), walked
    assert not walked["outside"], (where, walked["outside"])
    assert not walked["overlapping"], (where, walked["overlapping"])
    assert walked["smallest"] >= MIN_LABEL_PX, (where, walked["smallest"])
    assert not walked["silent"], (where, walked["silent"])
    controls = tab.evaluate(CONTROLS, dial.index)
    assert controls["live"] == "polite", (where, controls)
    for slider in controls["sliders"]:
        # A touch target (WCAG 2.5.5) with room to move: on a phone most
        # of the column's width.
        assert slider["height"] >= 44, (where, slider)
        assert slider["width"] >= min(300, 0.7 * controls["figureWidth"]), (
            where,
            slider,
            controls["figureWidth"],
        )
        assert controls["caption"] in slider["described"], (where, slider)


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
    walk_dial(tab, dial, sliders, width)
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

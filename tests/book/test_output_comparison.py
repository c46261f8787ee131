"""The comparison of a chapter's outputs with the stored ones accepts the
last-bit noise of another machine and nothing a reader could see.

scripts/notebook_outputs.py (text, JSON, figures by pixels) and
scripts/figure_data.py (figures by what they plot) are what nbval, `make
execute` and the reader runs compare with. Each case below is a change a
reader would see, which must fail, or one a reader cannot see, which must
pass.
"""

import base64
import copy
import io
import sys

import matplotlib
import numpy as np
import pytest

from conftest import ROOT

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import figure_data  # noqa: E402
import notebook_outputs  # noqa: E402

GLUED = "80.19941741825305"  # many-queries, as stored on one machine


# --- text ------------------------------------------------------------------


@pytest.mark.parametrize(
    "now",
    [
        "80.19941741825308",  # another BLAS kernel: the 16th digit
        "80.199417418",  # a relative 4e-12
    ],
)
def test_last_bit_noise_in_a_glued_float_passes(now):
    assert notebook_outputs.text_difference(now, GLUED) is None


@pytest.mark.parametrize(
    "now",
    [
        "80.21941741825305",  # the 4th significant digit
        "80.19951741825305",  # the 6th, as a table rounded to 6 shows it
    ],
)
def test_a_float_changed_where_a_reader_sees_it_fails(now):
    assert "number" in notebook_outputs.text_difference(now, GLUED)


def test_the_tolerance_sits_between_noise_and_print():
    # 1e-9 relative: a change of 1e-8 fails, one of 1e-10 passes.
    assert notebook_outputs.text_difference("1.00000001", "1.0")
    assert notebook_outputs.text_difference("1.0000000001", "1.0") is None


def test_integers_and_words_must_match_exactly():
    text = "17,133 devices; errors average 71"
    assert notebook_outputs.text_difference(text, text) is None
    assert notebook_outputs.text_difference(
        "17,134 devices; errors average 71", text
    )
    assert notebook_outputs.text_difference(
        "17,133 reports; errors average 71", text
    )
    # an integer printed as a float is a change a reader sees
    assert notebook_outputs.text_difference("71.0", "71")


def test_a_changed_table_cell_fails_and_a_wider_column_does_not():
    stored = "<td>0.4602</td><td>18</td>"
    assert notebook_outputs.text_difference(
        "<td>0.4603</td><td>18</td>", stored
    )
    assert notebook_outputs.text_difference(
        "<td>0.4602</td><td>19</td>", stored
    )
    assert (
        notebook_outputs.text_difference("a   0.5\nb   1", "a 0.5\nb 1")
        is None
    )


def test_numbers_near_zero_are_compared_absolutely():
    assert notebook_outputs.text_difference("-1.1e-16", "2.2e-16") is None
    assert notebook_outputs.text_difference("1e-10", "1.1e-10")


# --- JSON (the dials' Vega-Lite specs) ---------------------------------------


def vega_spec(values, name="data-3d515732648cc1cb6b5494bd3b1ea02c"):
    return {
        "data": {"name": name},
        "datasets": {
            name: [{"day": i, "count": v} for i, v in enumerate(values)]
        },
        "mark": "line",
    }


def test_a_dial_spec_with_noise_and_a_new_dataset_hash_passes():
    values = [1.5, 2.25, 3.125]
    noisy = [v * (1 + 3e-16) for v in values]
    now = vega_spec(noisy, name="data-" + "c" * 32)
    assert notebook_outputs.json_difference(now, vega_spec(values)) is None


def test_a_dial_spec_with_a_changed_value_fails():
    now = vega_spec([1.5, 2.26, 3.125], name="data-" + "c" * 32)
    detail = notebook_outputs.json_difference(
        now, vega_spec([1.5, 2.25, 3.125])
    )
    assert detail and "2.26" in detail


# --- figures -------------------------------------------------------------------


def draw(shift_px=0.0, noise=0.0, level=0.3):
    """A small figure: a curve and a horizontal line, moved by `shift_px`
    display pixels (the y axis spans 1 over 400 px) or by a relative
    `noise`. Returns (PNG as base64, what it plots)."""
    figure, ax = plt.subplots(figsize=(4, 4), dpi=100)
    ax.set_position([0.1, 0.1, 0.8, 0.8])  # 320 px tall: 1 px = 1/320
    x = np.linspace(0, 1, 50)
    shift = shift_px / 320
    y = (0.2 + 0.6 * x**2) * (1 + noise) + shift
    ax.plot(x, y, color="k")
    ax.axhline(level + shift, color="0.5")
    ax.set(xlim=(0, 1), ylim=(0, 1), title="A curve", xlabel="x", ylabel="y")
    buffer = io.BytesIO()
    figure.canvas.print_figure(buffer, format="png")
    record = figure_data.record(figure)
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode(), record


def test_a_figure_redrawn_with_last_bit_noise_passes():
    png, record = draw()
    png_noisy, record_noisy = draw(noise=4e-16)
    assert (
        notebook_outputs.image_difference(png_noisy, png, record_noisy, record)
        is None
    )


def test_a_curve_moved_by_one_pixel_fails_by_pixels_and_by_data():
    png, record = draw()
    png_moved, record_moved = draw(shift_px=1.0)
    assert notebook_outputs.pixel_difference(png_moved, png)
    detail = notebook_outputs.image_difference(
        png_moved, png, record_moved, record
    )
    assert detail and "moved" in detail and "px" in detail


def test_a_sub_pixel_snap_passes_by_what_the_figure_plots():
    # A horizontal line is snapped to whole pixels: moved by a fifth of a
    # pixel across a pixel boundary, it jumps by a whole pixel in the PNG,
    # as under another BLAS kernel; what it plots moved by 0.2 px.
    level = 0.5 + 0.4999 / 320  # near half a pixel above the middle
    png, record = draw(level=level)
    png_snapped, record_snapped = draw(level=level + 0.2 / 320)
    assert notebook_outputs.pixel_difference(png_snapped, png)
    assert figure_data.difference(record_snapped, record) is None


def test_a_changed_label_or_colour_fails_by_what_the_figure_plots():
    _, record = draw()
    relabelled = copy.deepcopy(record)
    texts = [a for a in relabelled["artists"] if a["kind"] == "text"]
    texts[0]["text"] += "!"
    assert figure_data.difference(relabelled, record)
    recoloured = copy.deepcopy(record)
    lines = [a for a in recoloured["artists"] if a["kind"] == "line"]
    lines[0]["colour"] = ["#ff0000ff"]
    assert figure_data.difference(recoloured, record)


def test_a_figure_without_a_record_fails_where_its_pixels_moved():
    png, record = draw()
    png_moved, _ = draw(shift_px=1.0)
    detail = notebook_outputs.image_difference(png_moved, png, None, record)
    assert detail and "no record" in detail


def test_outputs_pair_each_figure_with_its_own_record():
    png, record = draw()
    png_moved, record_moved = draw(shift_px=1.0)
    figure_output = {
        "output_type": "display_data",
        "data": {"image/png": png, "text/plain": "<Figure>"},
        "metadata": {},
    }
    moved_output = copy.deepcopy(figure_output)
    moved_output["data"]["image/png"] = png_moved
    stream = {"output_type": "stream", "name": "stdout", "text": "n = 3\n"}
    stored = [stream, figure_output, figure_output]
    now = [stream, figure_output, moved_output]
    detail = notebook_outputs.outputs_difference(
        now, stored, [record, record_moved], [record, record]
    )
    assert detail and detail.startswith("output 2:")
    assert (
        notebook_outputs.outputs_difference(
            stored, stored, [record, record], [record, record]
        )
        is None
    )


def test_dataset_names_do_not_depend_on_key_order_or_hash():
    # Two datasets; the stored spec keeps its keys sorted, a fresh run in
    # the order Altair wrote them, and both hashes changed with the data's
    # last bits. Each reference still meets its own data.
    a, b = "data-" + "a" * 32, "data-" + "b" * 32
    stored = {
        "datasets": {a: [{"x": 1.0}], b: [{"x": 2.0}]},
        "layer": [{"data": {"name": a}}, {"data": {"name": b}}],
    }
    c, d = "data-" + "d" * 32, "data-" + "c" * 32
    now = {
        "layer": [{"data": {"name": c}}, {"data": {"name": d}}],
        "datasets": {d: [{"x": 2.0}], c: [{"x": 1.0 + 1e-15}]},
    }
    assert notebook_outputs.json_difference(now, stored) is None
    swapped = {
        "layer": [{"data": {"name": d}}, {"data": {"name": c}}],
        "datasets": {d: [{"x": 2.0}], c: [{"x": 1.0}]},
    }
    assert notebook_outputs.json_difference(swapped, stored)

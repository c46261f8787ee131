"""Every chapter figure stays legible on a phone (read from the stored PNGs).

A figure is a PNG output shown at one CSS px per image px, shrunk to fit the
content column (``max-width: 100%``). On a 390 px phone that column is 358
CSS px; in dark mode the theme pads each output image by 8 px a side, so the
image itself gets 342 CSS px: that is the width used here, the worse case.
Text of f points in a PNG saved at d dpi is f * d / 72 image px, so on the
phone it is f * d / 72 * min(1, 342 / width) CSS px. The smallest text a
figure of a chapter can hold is the smallest font size the chapter's code
sets (``fontsize=``, ``labelsize=``, ... found by ``smallest_font_size``)
or the default sizes of the text every figure has (ticks, legend, labels,
titles): matplotlib's, or those the chapter's ``plt.rcParams.update({...})``
sets. It must be at least 8 CSS px.
"""

from __future__ import annotations

import ast
import base64
import re
import struct

import matplotlib
import nbformat
import pytest
from matplotlib import font_manager

from conftest import chapter_notebooks

PHONE_IMAGE_CSS_PX = 342  # 390 px screen: 358 px column, 2 x 8 px padding
MIN_TEXT_CSS_PX = 8.0
# Chapters another change is reworking: their figures are known to fail.
PENDING: dict[str, str] = {}

# Text a figure shows that matplotlib sizes by default: font.size for tick
# labels, legends, annotations; titles are larger.
DEFAULT_TEXT_SIZES = (
    "xtick.labelsize",
    "ytick.labelsize",
    "legend.fontsize",
    "legend.title_fontsize",
    "axes.labelsize",
    "axes.titlesize",
    "figure.titlesize",
    "font.size",
)
# Keyword arguments, dict keys and rc settings that size figure text. The
# alias size= (and a "size" key) is left out: numpy and pandas use it.
SIZE_SETTING = re.compile(
    r"""(?x)
    (?:\b(?:fontsize|labelsize|title_fontsize)\s*=\s*
      |["']fontsize["']\s*:\s*
      |\.set_fontsize\(\s*
      |["'][\w.]*(?:font\.size|labelsize|fontsize)["']\s*\]\s*=\s*
    )
    (?P<value>[^,)}\n]+)
    """
)


# plt.rcParams.update({...}) with a literal dict (no nested braces).
RC_UPDATE = re.compile(r"rcParams\.update\(\s*(?P<settings>\{[^{}]*\})\s*\)")


def points(size, base: float | None = None) -> float:
    """A matplotlib font size (points or a name like 'small') in points.

    A name is relative to ``base``, the font.size in force (matplotlib's
    default when None).
    """
    if base is None:
        base = float(matplotlib.rcParamsDefault["font.size"])
    if size is None:
        return base
    if isinstance(size, str) and size in font_manager.font_scalings:
        return base * font_manager.font_scalings[size]
    return float(size)


def text_settings(source: str) -> dict:
    """The rc text sizes in force after chapter code's rcParams.update."""
    settings = {
        key: matplotlib.rcParamsDefault[key] for key in DEFAULT_TEXT_SIZES
    }
    for match in RC_UPDATE.finditer(source):
        update = ast.literal_eval(match.group("settings"))
        settings.update(
            {key: value for key, value in update.items() if key in settings}
        )
    return settings


def parse_size(text: str, base: float | None = None) -> float:
    """The font size a literal in chapter code stands for, in points."""
    text = text.strip()
    quoted = re.fullmatch(r"""["'](\w[\w-]*)["']""", text)
    if quoted:
        name = quoted.group(1)
        if name not in font_manager.font_scalings:
            raise ValueError(f"unknown font size name {name!r}")
        return points(name, base)
    try:
        return float(text)
    except ValueError:
        raise ValueError(
            f"font size {text!r} is not a literal: the test cannot read it"
        ) from None


def smallest_font_size(source: str) -> float:
    """Smallest font size, in points, that code can give figure text.

    Sizes set explicitly in the code count, and so do the default sizes
    of the text any figure has (ticks, legend, labels, titles):
    matplotlib's, or those the code's ``rcParams.update({...})`` sets
    (relative names like "small" scale with its font.size).
    """
    settings = text_settings(source)
    base = points(settings["font.size"])
    defaults = [points(settings[key], base) for key in DEFAULT_TEXT_SIZES]
    explicit = [
        parse_size(match.group("value"), base)
        for match in SIZE_SETTING.finditer(source)
    ]
    return min(defaults + explicit)


def png_size_and_dpi(data: bytes) -> tuple[int, int, float]:
    """Width and height in px and the dpi (pHYs chunk) of a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    position = 8
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        if kind == b"pHYs":
            body = data[position + 8 : position + 8 + length]
            per_x, _, unit = struct.unpack(">IIB", body)
            assert unit == 1, "pHYs not in pixels per metre"
            return width, height, per_x * 0.0254
        position += 12 + length
    raise AssertionError("the PNG does not say its dpi (no pHYs chunk)")


def smallest_text_css_px(width: int, dpi: float, font_points: float) -> float:
    """Height in CSS px of text of font_points in a PNG on a phone."""
    scale = min(1.0, PHONE_IMAGE_CSS_PX / width)
    return font_points * dpi / 72 * scale


def chapter_figures(notebook) -> list[tuple[int, bytes]]:
    """(cell number, PNG bytes) of every stored PNG output of a notebook."""
    return [
        (number, base64.b64decode(output["data"]["image/png"]))
        for number, cell in enumerate(notebook.cells)
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]


def test_smallest_font_size_reads_chapter_code():
    assert smallest_font_size("plt.plot(x)") == 10
    assert smallest_font_size("ax.legend(fontsize=8)") == 8
    small = smallest_font_size('ax.legend(fontsize="small")')
    assert small == pytest.approx(8.33)
    assert smallest_font_size("ax.tick_params(labelsize=6.5)") == 6.5
    assert smallest_font_size('plt.rcParams["font.size"] = 7') == 7
    assert smallest_font_size("ax.text(0, 0, 's', {'fontsize': 9})") == 9
    assert smallest_font_size("rng.normal(size=3)") == 10
    with pytest.raises(ValueError, match="not a literal"):
        smallest_font_size("ax.legend(fontsize=small_text)")


def test_smallest_font_size_reads_rc_settings():
    # A chapter-wide font.size scales the relative defaults (ticks,
    # legend "medium", titles "large") and the relative names it uses.
    assert smallest_font_size('plt.rcParams.update({"font.size": 12})') == 12
    larger = (
        'plt.rcParams.update({"font.size": 12})\nax.legend(fontsize="small")'
    )
    assert smallest_font_size(larger) == pytest.approx(10.0, rel=1e-3)
    # A smaller setting of one kind of text is the smallest.
    ticks = (
        'plt.rcParams.update(\n    {"font.size": 12, "xtick.labelsize": 9}\n)'
    )
    assert smallest_font_size(ticks) == 9
    # An explicit size smaller than the rc settings still counts.
    assert (
        smallest_font_size(
            'plt.rcParams.update({"font.size": 12})\nax.text(0, 0, "s", fontsize=8)'
        )
        == 8
    )


def test_smallest_text_of_a_known_figure():
    # 10 pt at 100 dpi is 13.9 image px; a 1,156 px wide PNG is shown at
    # 342 / 1,156 of its size: 4.1 CSS px. A 600 px PNG: 7.9 CSS px.
    assert smallest_text_css_px(1156, 100, 10) == pytest.approx(4.11, 0.01)
    assert smallest_text_css_px(600, 100, 10) == pytest.approx(7.92, 0.01)
    assert smallest_text_css_px(300, 100, 10) == pytest.approx(13.9, 0.01)


CHAPTERS = [
    pytest.param(
        path,
        id=path.stem,
        marks=[pytest.mark.xfail(strict=True, reason=PENDING[path.stem])]
        if path.stem in PENDING
        else [],
    )
    for path in chapter_notebooks()
]


@pytest.mark.parametrize("path", CHAPTERS)
def test_figure_text_is_legible_on_a_phone(path):
    notebook = nbformat.read(path, as_version=4)
    source = "\n".join(
        cell.source for cell in notebook.cells if cell.cell_type == "code"
    )
    font_points = smallest_font_size(source)
    too_small = []
    for number, data in chapter_figures(notebook):
        width, _, dpi = png_size_and_dpi(data)
        css_px = smallest_text_css_px(width, dpi, font_points)
        if css_px < MIN_TEXT_CSS_PX:
            too_small.append(
                f"cell {number}: {width} px wide at {dpi:.0f} dpi, "
                f"{font_points:.1f} pt text is {css_px:.1f} CSS px"
            )
    assert not too_small, (
        f"{path.name}: figure text under {MIN_TEXT_CSS_PX} CSS px on a "
        f"390 px phone: {too_small}"
    )


@pytest.mark.parametrize("notebook", chapter_notebooks(), ids=lambda p: p.stem)
def test_every_figure_has_alt_text(notebook):
    """A reader on a screen reader gets every Matplotlib figure as text:
    each cell that stores a PNG names its alt text (mystnb metadata). The
    browser test finds the same gap, but only after a full build."""
    missing = [
        index
        for index, cell in enumerate(
            nbformat.read(notebook, as_version=4).cells
        )
        if cell.cell_type == "code"
        and any("image/png" in out.get("data", {}) for out in cell.outputs)
        and not cell.metadata.get("mystnb", {}).get("image", {}).get("alt")
    ]
    assert not missing, (
        f"{notebook.name}: cells {missing} show a figure without alt text"
    )

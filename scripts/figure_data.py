"""What a Matplotlib figure shows, as data: for comparing figures across
machines.

A figure's PNG can change by whole pixels while what it shows is the same:
Matplotlib snaps straight lines and text to the pixel grid, so a value
that lands near half a pixel (an autoscaled limit, a horizontal line at a
data extreme) moves by one pixel when its last bits change, as they do
under another BLAS kernel. So where two PNGs differ, the test suite
compares what the figures plot instead: every text with its position,
every line, patch and collection as points in display pixels, the colours
and styles, the images' values. Two figures agree when their texts,
colours and styles are the same and every point lies within half a
pixel (POINT_TOL_PX) of where it was; a curve that moved by a whole pixel
does not.

`record(figure)` makes the record; `install(log_path)` makes every figure
that Matplotlib renders append its record to a JSON-lines file (the kernel
calls it at start-up when BOOK_FIGURE_LOG names a file: see
`kernel_startup_folder`); `difference(now, stored)` compares two records.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

POINT_TOL_PX = 0.5
VALUE_REL_TOL = 1e-6
HERE = Path(__file__).resolve()


def _px(points) -> list:
    return [
        [None if math.isnan(v) else round(float(v), 2) for v in point]
        for point in points
    ]


def _colours(values) -> list[str]:
    from matplotlib.colors import to_hex

    try:
        import numpy as np

        array = np.atleast_2d(np.asarray(values, dtype=float))
        return [to_hex(tuple(row), keep_alpha=True) for row in array]
    except (TypeError, ValueError):
        return [to_hex(values, keep_alpha=True)]


def _values(array) -> list:
    import numpy as np

    array = np.ma.filled(np.ma.asarray(array, dtype=float), np.nan)
    return [
        None if math.isnan(v) else float(f"{v:.9g}") for v in array.ravel()
    ]


def _artist(artist) -> dict | None:
    """The record of one artist, or None for one with nothing to show."""
    from matplotlib.collections import Collection, PathCollection
    from matplotlib.image import AxesImage
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.text import Text

    if isinstance(artist, Text):
        if not artist.get_text():
            return None
        x, y = artist.get_transform().transform(artist.get_position())
        return {
            "kind": "text",
            "text": artist.get_text(),
            "at": _px([[x, y]]),
            "colour": _colours(artist.get_color()),
            "size": artist.get_fontsize(),
            "rotation": artist.get_rotation(),
        }
    if isinstance(artist, Line2D):
        return {
            "kind": "line",
            "points": _px(
                artist.get_transform().transform(artist.get_xydata())
            ),
            "colour": _colours(artist.get_color()),
            "style": [
                str(artist.get_linestyle()),
                str(artist.get_marker()),
                artist.get_linewidth(),
                artist.get_markersize(),
            ],
        }
    if isinstance(artist, Patch):
        path = artist.get_path()
        return {
            "kind": "patch",
            "points": _px(artist.get_transform().transform(path.vertices)),
            "colour": _colours(artist.get_facecolor())
            + _colours(artist.get_edgecolor()),
            "style": [str(artist.get_linestyle()), artist.get_linewidth()],
        }
    if isinstance(artist, Collection):
        offsets = artist.get_offsets()
        entry = {
            "kind": "collection",
            "offsets": _px(artist.get_offset_transform().transform(offsets))
            if len(offsets)
            else [],
            "colour": _colours(artist.get_facecolor())
            + _colours(artist.get_edgecolor()),
        }
        if not isinstance(artist, PathCollection):  # scatter: marker shapes
            transform = artist.get_transform()
            entry["points"] = [
                _px(transform.transform(path.vertices))
                for path in artist.get_paths()
            ]
        if artist.get_array() is not None:
            entry["values"] = _values(artist.get_array())
        return entry
    if isinstance(artist, AxesImage):
        return {
            "kind": "image",
            "values": _values(artist.get_array()),
            "shape": list(artist.get_array().shape),
            "extent": _values(artist.get_extent()),
            "colourmap": artist.get_cmap().name,
            "limits": _values(artist.get_clim()),
        }
    return None


def _axis(axis) -> dict:
    """An axis as a reader sees it: its scale and its labelled ticks."""
    low, high = axis.get_view_interval()
    ticks = []
    for location, label in zip(
        axis.get_majorticklocs(), axis.get_majorticklabels(), strict=False
    ):
        if min(low, high) <= location <= max(low, high):
            ticks.append(label.get_text())
    return {"kind": "axis", "scale": axis.get_scale(), "ticks": ticks}


def record(figure) -> dict:
    """What `figure` shows, after it was drawn."""
    from matplotlib.axis import Axis

    artists = []

    def visit(artist):
        if not artist.get_visible():
            return
        if isinstance(artist, Axis):
            artists.append(_axis(artist))
            artists.append(_artist(artist.label))
            artists.append(_artist(artist.offsetText))
            return
        entry = _artist(artist)
        if entry is not None:
            artists.append(entry)
        for child in artist.get_children():
            visit(child)

    for child in figure.get_children():
        visit(child)
    width, height = figure.canvas.get_width_height()
    return {
        "size": [width, height],
        "artists": [a for a in artists if a is not None],
    }


def install(log_path: str) -> None:
    """Append the record of every figure Matplotlib renders to log_path."""
    from matplotlib.backend_bases import FigureCanvasBase

    rendered = FigureCanvasBase.print_figure

    def print_figure(self, *args, **kwargs):
        result = rendered(self, *args, **kwargs)
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps(record(self.figure)) + "\n")
        return result

    FigureCanvasBase.print_figure = print_figure


# The file IPython runs when a kernel starts with IPYTHONDIR pointing at
# the folder kernel_startup_folder() makes. Its names are deleted again, so
# the chapter's namespace is what a reader's kernel has.
STARTUP = """\
import importlib.util as _book_util
import os as _book_os

if _book_os.environ.get("BOOK_FIGURE_LOG"):
    _book_spec = _book_util.spec_from_file_location(
        "_book_figure_data", {path!r}
    )
    _book_module = _book_util.module_from_spec(_book_spec)
    _book_spec.loader.exec_module(_book_module)
    _book_module.install(_book_os.environ["BOOK_FIGURE_LOG"])
    del _book_spec, _book_module
del _book_util, _book_os
"""


def kernel_startup_folder() -> Path:
    """A fresh IPYTHONDIR whose start-up file installs the recorder."""
    folder = Path(tempfile.mkdtemp(prefix="book-ipython-"))
    startup = folder / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-book-figures.py").write_text(STARTUP.format(path=str(HERE)))
    return folder


def recording_kernel() -> tuple[dict, Path]:
    """(environment variables, log file) for a kernel that appends the
    record of every figure it draws to the log file."""
    folder = kernel_startup_folder()
    log = folder / "figures.jsonl"
    return {"IPYTHONDIR": str(folder), "BOOK_FIGURE_LOG": str(log)}, log


def read_new(log_path: Path, offset: int) -> tuple[list[dict], int]:
    """Records appended to the log since byte `offset`, and the new end."""
    if not log_path.exists():
        return [], offset
    with open(log_path, encoding="utf-8") as log:
        log.seek(offset)
        text = log.read()
        end = log.tell()
    return [json.loads(line) for line in text.splitlines() if line], end


# Keys whose numbers are values (compared to a relative VALUE_REL_TOL),
# not positions in display pixels (compared to POINT_TOL_PX).
VALUE_KEYS = ("/values", "/limits", "/size", "/style", "/rotation", "/extent")


def _leaf(now, stored, where: str) -> str | None:
    numbers = (int, float, type(None))
    if not (isinstance(now, numbers) and isinstance(stored, numbers)):
        return None if now == stored else f"{where}: {now!r} where {stored!r}"
    if now is None or stored is None:
        return None if now is stored else f"{where}: {now} where {stored}"
    if any(key in where for key in VALUE_KEYS):
        if math.isclose(now, stored, rel_tol=VALUE_REL_TOL, abs_tol=1e-12):
            return None
        return f"{where}: {now} where {stored} was"
    if abs(now - stored) <= POINT_TOL_PX:
        return None
    return f"{where}: {now} px where {stored} px was"


def difference(now: dict, stored: dict) -> str | None:
    """None if two records show the same figure, else the first
    difference: texts, colours and styles exactly, points to half a
    pixel, plotted values (images) to a relative 1e-6."""
    from notebook_outputs import tree_difference

    return tree_difference(now, stored, _leaf, "figure")


# Where a figure's parts are drawn, in display pixels: what another
# Matplotlib release's layout moves by a few pixels (up to 17 measured
# between 3.9 and 3.11), with what the figure shows unchanged.
POSITIONS = ("points", "at", "offsets")


def without_positions(record):
    """A record with every list of positions replaced by its length and
    the figure's pixel size dropped: its texts (titles, labels, tick
    labels, legend), colours, styles, scales, the number of artists and
    of points each draws, and images' values remain."""
    if isinstance(record, dict):
        return {
            key: len(value) if key in POSITIONS else without_positions(value)
            for key, value in record.items()
            if not (key == "size" and isinstance(value, list))
        }
    if isinstance(record, list):
        return [without_positions(value) for value in record]
    return record


def content_difference(now: dict, stored: dict) -> str | None:
    """None if two records show the same texts, colours, styles and
    numbers of artists and points, wherever the layout put them."""
    return difference(without_positions(now), without_positions(stored))


if __name__ == "__main__":  # pragma: no cover - a maintainer's look
    import sys

    for line in Path(sys.argv[1]).read_text().splitlines():
        print(json.dumps(json.loads(line), indent=1)[:2000])
    print(os.path.getsize(sys.argv[1]), "bytes")

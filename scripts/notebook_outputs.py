"""Compare a notebook's outputs with the stored ones at the precision the
book shows.

Two runs of the same chapter on two machines differ in the last bits of
their floating-point results: the linear algebra behind NumPy (BLAS) sums
in an order that depends on the processor's kernel (OpenBLAS picks one per
processor; OPENBLAS_CORETYPE overrides it), and what is computed from it
follows. What the book shows does not change: a glued number is printed
with a few digits, a figure is a picture. So outputs are compared as a
reader sees them, not byte for byte:

- Text (streams, text/plain, text/html, glue records, errors) is cut into
  numbers and the text between them. The text between must be the same
  (a run of white space counts as one space: a wider number may widen a
  table's column); integers must be the same digit for digit;
  floating-point numbers (with a decimal point or an exponent) must agree
  to a relative REL_TOL = 1e-9. Measured under the OpenBLAS kernels
  Haswell, Zen, Sandybridge and SkylakeX, the largest last-bit
  difference of any printed or glued float was 8e-12 relative (a
  logistic fit in private-ml; most are 1e-15). The book prints at most
  six significant digits, where a change is 1e-6 relative or more. 1e-9
  leaves a factor of about 100 on either side. A number that cancels to
  (almost) zero carries noise relative to what it came from, not to
  itself: ABS_TOL = 1e-12 absorbs that; no computed number in the book
  is shown at that scale.
- JSON outputs (the dials' Vega-Lite specs) are compared as structures,
  their numbers as above; Altair names a dataset by a hash of its
  contents, so dataset names are compared by their order of appearance.
- Figures (image/png) must have the same size and look the same: no pixel
  may differ by more than IMAGE_DIFF_LEVEL out of 255 (a sub-pixel move
  of an antialiased edge changes a pixel by a few levels). Where pixels
  moved by more, Matplotlib's pixel snapping has usually flipped a line or
  a label by one pixel; then the figures are compared by what they plot
  (scripts/figure_data.py: texts, colours and styles exactly, every
  point to half a pixel). A curve that really moved by a pixel fails both.
"""

from __future__ import annotations

import base64
import io
import json
import math
import re

REL_TOL = 1e-9
ABS_TOL = 1e-12
IMAGE_DIFF_LEVEL = 16

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
SPACE = re.compile(r"\s+")
DATASET = re.compile(r"^data-[0-9a-f]{32}$")

# Output fields that are not what a reader sees: the cell's number, and
# the traceback's colour codes and paths (the error's name and message
# are compared).
SKIPPED_KEYS = {"execution_count", "transient", "traceback"}
SKIPPED_MIMES = {"application/vnd.jupyter.widget-view+json"}


def numbers_agree(now: str, stored: str) -> bool:
    """Two numeric tokens agree: integers exactly, floats to REL_TOL (an
    integer where a float was stored, or the reverse, is a change)."""
    floats = [any(c in token for c in ".eE") for token in (now, stored)]
    if floats[0] != floats[1]:
        return False
    if not floats[0]:
        return now.lstrip("+") == stored.lstrip("+")
    a, b = float(now), float(stored)
    if not (math.isfinite(a) and math.isfinite(b)):
        return a == b
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def text_difference(now: str, stored: str) -> str | None:
    """None if two texts show the same thing, else where they differ."""
    if now == stored:
        return None
    now_words = [SPACE.sub(" ", part) for part in NUMBER.split(now)]
    stored_words = [SPACE.sub(" ", part) for part in NUMBER.split(stored)]
    for part_now, part_stored in zip(now_words, stored_words, strict=False):
        if part_now != part_stored:
            return f"text {part_now!r} where {part_stored!r} was stored"
    if len(now_words) != len(stored_words):
        return "the text has more or fewer numbers than stored"
    for token_now, token_stored in zip(
        NUMBER.findall(now), NUMBER.findall(stored), strict=True
    ):
        if not numbers_agree(token_now, token_stored):
            return (
                f"number {token_now} where {token_stored} was stored "
                f"(floats must agree to a relative {REL_TOL:g})"
            )
    return None


def tree_difference(now, stored, leaf, where="") -> str | None:
    """None if two trees of dicts and lists agree, else the first place
    where they do not: the same keys, the same lengths, and every pair of
    leaves agreeing by `leaf(now, stored, where)` (None or a message)."""
    if isinstance(now, dict) and isinstance(stored, dict):
        if set(now) != set(stored):
            return (
                f"{where or 'top'}: keys {sorted(now)} where {sorted(stored)}"
            )
        for key in sorted(stored):
            detail = tree_difference(
                now[key], stored[key], leaf, f"{where}/{key}"
            )
            if detail:
                return detail
        return None
    if isinstance(now, list) and isinstance(stored, list):
        if len(now) != len(stored):
            return f"{where}: {len(now)} items where {len(stored)} were"
        for index, (a, b) in enumerate(zip(now, stored, strict=True)):
            detail = tree_difference(a, b, leaf, f"{where}/{index}")
            if detail:
                return detail
        return None
    return leaf(now, stored, where)


def renamed_datasets(value):
    """A copy with Altair's hashed dataset names numbered in the order the
    spec refers to them (its values, read with dict keys sorted, so that
    neither the hash nor the order of keys matters: the hash changes with
    the last bits of the data, the order of keys with how it was stored)."""
    names: dict[str, str] = {}

    def collect(item):
        if isinstance(item, dict):
            for key in sorted(item):
                collect(item[key])
        elif isinstance(item, list):
            for element in item:
                collect(element)
        elif isinstance(item, str) and DATASET.match(item):
            names.setdefault(item, f"data-{len(names) + 1}")

    def rename(item):
        if isinstance(item, dict):
            return {rename(k): rename(v) for k, v in item.items()}
        if isinstance(item, list):
            return [rename(v) for v in item]
        if isinstance(item, str) and DATASET.match(item):
            # a dataset no value refers to: numbered after the others
            return names.setdefault(item, f"data-{len(names) + 1}")
        return item

    collect(value)
    return rename(value)


def _json_leaf(now, stored, where) -> str | None:
    if isinstance(now, bool) or isinstance(stored, bool) or now is None:
        return None if now == stored else f"{where}: {now} where {stored}"
    if isinstance(now, (int, float)) and isinstance(stored, (int, float)):
        now, stored = repr(now), repr(stored)
    if isinstance(now, str) and isinstance(stored, str):
        detail = text_difference(now, stored)
        return f"{where}: {detail}" if detail else None
    return None if now == stored else f"{where}: {now!r} where {stored!r}"


def json_difference(now, stored) -> str | None:
    """None if two JSON values agree (numbers as in text_difference)."""
    return tree_difference(
        renamed_datasets(now), renamed_datasets(stored), _json_leaf
    )


def _pixels(png_base64: str):
    import numpy as np
    from PIL import Image

    raw = base64.b64decode(png_base64)
    with Image.open(io.BytesIO(raw)) as image:
        return np.asarray(image.convert("RGBA"), dtype=np.int16)


def pixel_difference(now: str, stored: str) -> str | None:
    """None if two PNG figures (base64) look the same pixel for pixel."""
    if now == stored:
        return None
    try:
        a, b = _pixels(now), _pixels(stored)
    except OSError as error:  # not a PNG any more: nothing to compare
        return f"a figure that cannot be read ({error})"
    if a.shape != b.shape:
        return (
            f"a figure of {a.shape[1]}x{a.shape[0]} px where one of "
            f"{b.shape[1]}x{b.shape[0]} was stored"
        )
    changed = int((abs(a - b).max(axis=-1) > IMAGE_DIFF_LEVEL).sum())
    if changed:
        return (
            f"the figure differs in {changed} pixels by more than "
            f"{IMAGE_DIFF_LEVEL}/255"
        )
    return None


def image_difference(now, stored, record_now, record_stored) -> str | None:
    """None if two figures show the same: pixels, or what they plot."""
    detail = pixel_difference(now, stored)
    if detail is None or not detail.startswith("the figure differs"):
        return detail
    if record_now is None or record_stored is None:
        return detail + " (and no record of what it plots to compare)"
    import figure_data

    plotted = figure_data.difference(record_now, record_stored)
    if plotted:
        return f"{detail}, and what it plots moved: {plotted}"
    return None


def _as_text(value) -> str:
    if isinstance(value, list):
        return "".join(value)
    return value if isinstance(value, str) else json.dumps(value)


def output_difference(now, stored, records=(None, None)) -> str | None:
    """None if two outputs (nbformat dicts) show the same, else how not.
    `records` are what the output's figure plots, now and stored."""
    keys = (set(now) | set(stored)) - SKIPPED_KEYS
    for key in sorted(keys):
        if key not in now or key not in stored:
            return f"{key} {'missing' if key not in now else 'not stored'}"
        if key in ("data", "metadata"):
            mimes = (set(now[key]) | set(stored[key])) - SKIPPED_MIMES
            for mime in sorted(mimes):
                if mime not in now[key] or mime not in stored[key]:
                    where = "missing" if mime not in now[key] else "not stored"
                    return f"{key} {mime} {where}"
                a, b = now[key][mime], stored[key][mime]
                if key == "data" and mime == "image/png":
                    detail = image_difference(a, b, *records)
                elif isinstance(a, (dict, list)) and not mime.startswith(
                    "text/"
                ):
                    detail = json_difference(a, b)
                else:
                    detail = text_difference(_as_text(a), _as_text(b))
                if detail:
                    return f"{mime}: {detail}"
        else:
            detail = text_difference(_as_text(now[key]), _as_text(stored[key]))
            if detail:
                return f"{key}: {detail}"
    return None


def outputs_difference(
    now, stored, figures_now=(), figures_stored=()
) -> str | None:
    """None if two lists of outputs show the same, else the first
    difference in words. figures_now and figures_stored are the records
    of the cell's figures, in the order of its image/png outputs."""
    if len(now) != len(stored):
        return f"{len(now)} outputs now, {len(stored)} stored"
    figures = 0
    for number, (new, old) in enumerate(zip(now, stored, strict=True)):
        records = (None, None)
        if "image/png" in new.get("data", {}):
            records = tuple(
                found[figures] if figures < len(found) else None
                for found in (figures_now, figures_stored)
            )
            figures += 1
        detail = output_difference(dict(new), dict(old), records)
        if detail:
            return f"output {number}: {detail}"
    return None

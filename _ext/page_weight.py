"""Keep the book's pages light for readers on a phone network.

What a chapter page loads, and what this trims (measured by
scripts/page_weight.py, run by `make bench`):

- pydata-sphinx-theme's ``fontawesome.js`` (1.5 MB) turns icon tags into
  inline SVG. The theme's stylesheet already draws the same icons from the
  Font Awesome web font, so the script is dropped from every page.
- That web font (``fa-solid-900.woff2``, 156 KB, about 1,400 icons) is cut
  down to the icons the site shows: the classes its pages and scripts name,
  and the glyphs its stylesheets draw. The cut font is a WOFF file beside
  the original, and the theme's stylesheet points to it.
- MathJax 4 is served in parts (_ext/mathjax_local.py): the startup and
  core, TeX input with the two extensions the book uses, the CHTML output,
  and of the font only the character ranges a page draws.
- MathJax is loaded only by a page that has math of its own. Sphinx counts
  the math of every page a page's table of contents includes, so the
  introduction (whose toctree holds every chapter) loaded MathJax for none.
  A page without math prefetches MathJax instead, once the browser is idle
  (into its cache, unrun), for the chapter a reader opens next.
- Figures are stored losslessly in the smaller of two forms: a PNG with a
  palette when the figure has at most 256 colours (most of the book's
  plots), or a lossless WebP. Every pixel is the notebook's.
- Each page gets one viewport tag (Sphinx's layout, docutils and the theme
  each wrote one).
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from sphinx.builders.html._assets import _file_checksum, _JavaScript

FONTAWESOME_SCRIPT = re.compile(
    r'[ \t]*<script[^>]*src="[^"]*_static/scripts/fontawesome\.js[^"]*"[^>]*>'
    r"</script>\n?"
)
VIEWPORT = re.compile(r'[ \t]*<meta name="viewport"[^>]*>\n?')
FONT_DIR = Path("_static/vendor/fontawesome/webfonts")
THEME_CSS = Path("_static/styles/pydata-sphinx-theme.css")
# Font Awesome's icon table, e.g.
# `.fa-bars:before,.fa-navicon:before{content:"\f0c9"}`.
ICON_RULE = re.compile(
    r'((?:\.fa-[a-z0-9-]+:(?:before|after),?)+)\{content:"\\([0-9a-f]+)"\}'
)
ICON_CLASS = re.compile(r"\bfa-[a-z0-9-]+")
CSS_GLYPH = re.compile(r'"\\([0-9a-f]{4,5})"')
# The theme's own icons (admonitions, links) are written as the characters.
PRIVATE_USE = re.compile("[\ue000-\uf8ff]")


def mathjax_only_with_math(app, pagename, templatename, context, doctree):
    """Drop MathJax's two scripts from a page without math of its own."""
    if app.builder.format != "html" or "script_files" not in context:
        return
    has_math = app.env.get_domain("math").data["has_equations"]
    if has_math.get(pagename, False):
        return
    mathjax = {app.config.mathjax_path, f"_static/{app.config.mathjax_path}"}
    context["script_files"] = [
        script
        for script in context["script_files"]
        if script.filename not in mathjax
        and not (script.attributes.get("body") or "").startswith(
            "window.MathJax"
        )
    ]
    context["script_files"].append(
        _JavaScript("", priority=900, body=_prefetch_mathjax(app, context))
    )


# A page without math (the introduction, where most readers start) asks
# the browser, once it is idle, to fetch MathJax into its cache at low
# priority: the chapter a reader opens next is readable sooner, and its
# new bytes are its own (a reader who saves data is not asked).
PREFETCH = """window.addEventListener("load", function () {
  var fetchLater = function () {
    if (navigator.connection && navigator.connection.saveData) return;
    %(urls)s.forEach(function (url) {
      var link = document.createElement("link");
      link.rel = "prefetch";
      link.href = url;
      document.head.appendChild(link);
    });
  };
  if ("requestIdleCallback" in window) requestIdleCallback(fetchLater);
  else setTimeout(fetchLater, 1000);
});"""


def _prefetch_mathjax(app, context) -> str:
    from mathjax_local import prefetched  # noqa: PLC0415

    folder = Path(app.outdir) / "_static" / "mathjax"
    urls = []
    for part in prefetched():
        url = context["pathto"](f"_static/mathjax/{part}", 1)
        # The page that loads MathJax asks for startup.js by its checksum.
        if part == "startup.js":
            checksum = _file_checksum(Path(app.outdir), folder / part)
            url += f"?v={checksum}" if checksum else ""
        urls.append(url)
    return PREFETCH % {"urls": json.dumps(urls)}


def _icons_used(outdir: Path, css: str) -> set[int]:
    """Code points of the icons the site can show."""
    names: set[str] = set()
    for path in outdir.rglob("*"):
        if path.suffix == ".html" or (
            path.suffix == ".js"
            and "_static" in path.parts
            and "mathjax" not in path.parts
            and path.name != "fontawesome.js"
        ):
            names |= set(ICON_CLASS.findall(path.read_text(errors="ignore")))
    points: set[int] = set()
    for selectors, point in ICON_RULE.findall(css):
        if set(ICON_CLASS.findall(selectors)) & names:
            points.add(int(point, 16))
    # Glyphs the stylesheets draw themselves (admonition icons and the like).
    for sheet in outdir.joinpath("_static").rglob("*.css"):
        text = ICON_RULE.sub("", sheet.read_text(errors="ignore"))
        points |= {int(point, 16) for point in CSS_GLYPH.findall(text)}
        points |= {ord(glyph) for glyph in PRIVATE_USE.findall(text)}
    return points


def subset_icon_font(outdir: Path) -> None:
    """Cut each Font Awesome font to the icons used; point the CSS to it."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    css_path = outdir / THEME_CSS
    if not css_path.exists():
        return
    css = css_path.read_text(encoding="utf-8")
    points = _icons_used(outdir, css)
    for original in sorted((outdir / FONT_DIR).glob("*.woff2")):
        cut = original.with_suffix(".woff")
        font = TTFont(original.with_suffix(".ttf"))
        options = subset.Options()
        options.flavor = "woff"
        options.layout_features = []
        options.notdef_outline = True
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=sorted(points & set(font.getBestCmap())))
        subsetter.subset(font)
        font.flavor = "woff"
        font.save(cut)
        folder = "../vendor/fontawesome/webfonts"
        css = css.replace(
            f'url({folder}/{original.name}) format("woff2")',
            f'url({folder}/{cut.name}) format("woff")',
        )
    css_path.write_text(css, encoding="utf-8")


def _lossless_forms(path: Path) -> tuple[bytes | None, bytes]:
    """(palette PNG or None, lossless WebP) of one figure, pixel for pixel."""
    import numpy as np
    from PIL import Image

    image = Image.open(path).convert("RGBA")
    pixels = np.asarray(image)
    palette_png = None
    # Each pixel as one number, R G B A from the high byte down: sorting
    # these orders the colours exactly as sorting the RGBA rows would, and
    # sorts integers instead of rows (np.unique with axis=0 took 0.4 s a
    # figure, 20 s of a build).
    channels = pixels.reshape(-1, 4).astype(np.uint32)
    keys = (
        (channels[:, 0] << 24)
        | (channels[:, 1] << 16)
        | (channels[:, 2] << 8)
        | channels[:, 3]
    )
    unique_keys, index = np.unique(keys, return_inverse=True)
    colours = np.stack(
        [(unique_keys >> shift) & 0xFF for shift in (24, 16, 8, 0)], axis=1
    )
    if len(colours) <= 256:
        paletted = Image.fromarray(
            index.reshape(pixels.shape[:2]).astype(np.uint8), "P"
        )
        paletted.putpalette(colours.astype(np.uint8).tobytes(), "RGBA")
        assert np.array_equal(np.asarray(paletted.convert("RGBA")), pixels)
        buffer = io.BytesIO()
        paletted.save(buffer, "PNG", optimize=True)
        palette_png = buffer.getvalue()
    buffer = io.BytesIO()
    image.save(buffer, "WEBP", lossless=True, quality=100, method=4)
    return palette_png, buffer.getvalue()


def lighten_figures(outdir: Path) -> dict[str, str]:
    """Store each figure in its smallest lossless form.

    Returns {png name: webp name} for the figures the pages must relink.
    """
    relink = {}
    for path in sorted(outdir.glob("_images/*.png")):
        webp = path.with_suffix(".webp")
        if webp.exists() and webp.stat().st_mtime >= path.stat().st_mtime:
            relink[path.name] = webp.name
            continue
        original = path.read_bytes()
        palette_png, lossless_webp = _lossless_forms(path)
        smallest = min(
            [len(original), len(palette_png or original), len(lossless_webp)]
        )
        if palette_png is not None and len(palette_png) == smallest:
            if palette_png != original:
                path.write_bytes(palette_png)
        elif len(lossless_webp) == smallest:
            webp.write_bytes(lossless_webp)
            relink[path.name] = webp.name
    return relink


def lighten_pages(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    relink = lighten_figures(outdir)
    for page in outdir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        lighter = FONTAWESOME_SCRIPT.sub("", text)
        first = VIEWPORT.search(lighter)
        if first:
            head, tail = lighter[: first.end()], lighter[first.end() :]
            lighter = head + VIEWPORT.sub("", tail)
        for png, webp in relink.items():
            lighter = lighter.replace(f"_images/{png}", f"_images/{webp}")
        if lighter != text:
            page.write_text(lighter, encoding="utf-8")
    subset_icon_font(outdir)


def setup(app):
    # After sphinx.ext.mathjax has added its scripts (priority 500).
    app.connect("html-page-context", mathjax_only_with_math, priority=900)
    app.connect("build-finished", lighten_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

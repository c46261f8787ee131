"""Interactive Vega-Lite figures: sliders on the page, an image in the PDF.

A chapter stores a figure as its Vega-Lite 5 specification, the output
``application/vnd.vegalite.v5+json`` beside a ``text/plain`` description
(what JupyterLab draws natively, sliders and all). myst-nb knows no renderer
for that type, so this extension gives it one (a myst-nb mime render plugin,
registered here rather than through a package's entry point):

- HTML: the specification is compiled to Vega by vl-convert at build time
  and written into the page, inside a ``<figure>`` whose caption is the
  description. ``_ext/vega-figures.js`` draws it with the Vega runtime;
  this extension writes both into the build's ``_static/vega-figures/``
  (the runtime is vl-convert's bundle, 0.9 MB raw and 0.3 MB gzipped,
  generated at build time and not committed).
- LaTeX: the same specification rendered to a PNG by vl-convert (no
  browser), with the sliders at their initial values, in a figure whose
  caption is the description and says so.

Only the Vega runtime is used (the page holds compiled Vega; the runtime
binds the sliders as labelled ``<input type="range">`` elements), but
vl-convert's bundle reaches Vega only through vega-embed: a bundle of Vega
alone (0.2 MB gzipped) exports it as null, so the page pays for vega-embed
and the Vega-Lite compiler too.
"""

from __future__ import annotations

import hashlib
import html
import json
from pathlib import Path

from docutils import nodes
from sphinx import addnodes

MIME = "application/vnd.vegalite.v5+json"
# The stored spec is Vega-Lite 5 (what JupyterLab draws); the page compiles it
# with the Vega-Lite that matches the bundled Vega (6).
VL_VERSION = "6.4"
# Served from the build's _static, written there at the end of the build (a
# script in the source's _static would be put on every page by jupyter-book).
RUNTIME = "vega-figures/vega.min.js"
DRAWER = "vega-figures/draw.js"
DRAWER_SOURCE = Path(__file__).with_name("vega-figures.js")
MARKER = "vega-figure"
# Said after the description in the caption of the printed image.
PRINT_NOTE = (
    "(Printed with the sliders at their starting values; they move in the"
    " web edition and in Jupyter.)"
)


def _vl_convert():
    import vl_convert  # noqa: PLC0415  (a build dependency, imported when used)

    return vl_convert


class VegaLitePlugin:
    """myst-nb mime render plugin for Vega-Lite 5 specifications."""

    # Above every other representation, for every builder: the HTML gets the
    # chart, the LaTeX builder its image (text/plain is the fallback only).
    mime_priority_overrides = [("*", MIME, 1)]

    @staticmethod
    def handle_mime(renderer, data, inline):
        if inline or data.mime_type != MIME:
            return None
        spec = data.content
        if isinstance(spec, (str, bytes)):
            spec = json.loads(spec)
        vlc = _vl_convert()
        vega = vlc.vegalite_to_vega(spec, vl_version=VL_VERSION)
        text = json.dumps(vega, separators=(",", ":"), sort_keys=True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        description = spec.get("description", "")
        escaped = text.replace("</", "<\\/")
        page = (
            f'<figure class="{MARKER}" id="{MARKER}-{digest}">'
            f'<div class="{MARKER}-view"></div>'
            f'<script type="application/json" class="{MARKER}-spec">'
            f"{escaped}</script>"
            f"<figcaption>{html.escape(description)}</figcaption>"
            "</figure>"
        )
        png = vlc.vegalite_to_png(spec, vl_version=VL_VERSION, scale=2)
        uri = renderer.write_file(
            [f"{hashlib.sha256(png).hexdigest()}.png"],
            png,
            overwrite=False,
            exists_ok=True,
        )
        # In print: a numbered figure whose caption is the description, the
        # chart as wide as on a screen (CSS pixels; the PNG has twice as
        # many), not stretched to the text width (a tall chart and its
        # caption would not fit on a page).
        css_width = int.from_bytes(png[16:20], "big") // 2
        image = nodes.image(uri=uri, alt=description, width=f"{css_width}px")
        figure = nodes.figure("", image)
        figure += nodes.caption("", f"{description} {PRINT_NOTE}")
        in_print = addnodes.only(expr="latex")
        in_print += figure
        return [
            nodes.raw("", page, format="html", classes=["output", MARKER]),
            in_print,
        ]


def _register_plugin(app, config):
    from myst_nb.core import render  # noqa: PLC0415

    loader = render.load_mime_renders
    if getattr(loader, "with_vega_figures", False):
        return

    def load_mime_renders():
        return [*loader(), VegaLitePlugin]

    load_mime_renders.with_vega_figures = True
    render.load_mime_renders = load_mime_renders


def _page_has_figure(doctree) -> bool:
    return any(
        MARKER in node.get("classes", [])
        for node in doctree.findall(nodes.raw)
    )


def _add_scripts(app, pagename, templatename, context, doctree):
    # Only the small drawer: it fetches RUNTIME when a figure comes near the
    # screen (see _ext/vega-figures.js).
    if doctree is not None and _page_has_figure(doctree):
        app.add_js_file(DRAWER)


def _write_runtime(app, exception):
    if exception or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / RUNTIME
    cache = Path(app.doctreedir) / "vega-runtime" / f"vega-{VL_VERSION}-4.js"
    if not cache.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        bundle = _vl_convert().javascript_bundle(
            "window.vegaEmbed = vegaEmbed;", vl_version=VL_VERSION
        )
        # The bundle declares its names at the top level (one of them `_`,
        # Sphinx's underscore.js): a function scope keeps them to itself.
        cache.write_text(f"(function () {{\n{bundle}\n}})();\n", "utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(cache.read_bytes())
    target.with_name(Path(DRAWER).name).write_bytes(DRAWER_SOURCE.read_bytes())


def setup(app):
    app.connect("config-inited", _register_plugin)
    # Before unique_scripts (500), which replaces the list of the page.
    app.connect("html-page-context", _add_scripts, priority=400)
    app.connect("build-finished", _write_runtime)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

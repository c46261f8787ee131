"""Keep the book's pages light for readers on a phone network.

Two of the heaviest files a chapter page loads are not needed:

- pydata-sphinx-theme's ``fontawesome.js`` (1.5 MB) turns icon tags into
  inline SVG. The theme's stylesheet already draws the same icons from the
  Font Awesome web font, so the script is dropped from every page.
- MathJax's combined ``tex-chtml.js`` (1.2 MB) bundles every TeX extension.
  The book loads MathJax in parts instead: the startup and core, TeX input
  with the extensions the book uses, and the CHTML output (about 0.7 MB);
  ``autoload`` still fetches a rarer extension from the local copy if a page
  needs one.
"""

import re
from pathlib import Path

FONTAWESOME_SCRIPT = re.compile(
    r'[ \t]*<script[^>]*src="[^"]*_static/scripts/fontawesome\.js[^"]*"[^>]*>'
    r"</script>\n?"
)
TEX_EXTENSIONS = [
    "ams",
    "newcommand",
    "noundefined",
    "require",
    "autoload",
    "configmacros",
]


def load_mathjax_in_parts(app, config):
    config.mathjax_path = "mathjax/startup.js"
    config.mathjax3_config = {
        "loader": {
            "load": ["core", "input/tex-base", "output/chtml"]
            + [f"[tex]/{name}" for name in TEX_EXTENSIONS]
        },
        "tex": {"packages": {"[+]": TEX_EXTENSIONS}},
        **(config.mathjax3_config or {}),
    }


def drop_fontawesome_script(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        lighter = FONTAWESOME_SCRIPT.sub("", text)
        if lighter != text:
            page.write_text(lighter, encoding="utf-8")


def setup(app):
    # After sphinx-mathjax-offline has set its combined file as the default.
    app.connect("config-inited", load_mathjax_in_parts, priority=900)
    app.connect("build-finished", drop_fontawesome_script)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""MathJax 4 from npm, served from the site itself, cut to what the book uses.

package.json pins ``mathjax`` and its font, ``@mathjax/mathjax-newcm-font``,
exactly; package-lock.json pins their contents. ``npm ci`` installs them
into node_modules/ (``make book`` does, and so does this extension when an
HTML build finds node_modules missing or holding other versions). At the
end of an HTML build the parts the pages load are copied into
``_static/mathjax/``: no page asks a CDN for anything.

What a page with math loads (a page without math loads none of it:
_ext/page_weight.py):

- the startup, MathJax's core, TeX input with the extensions the book's
  math needs (``ams``: ``\\dfrac``, ``\\operatorname``, ``align``; with
  ``newcommand``, which it requires; ``noundefined``: an unknown macro
  shows in red instead of an error) and
  the CHTML output with ``assistive-mml`` (the formula as MathML for a
  screen reader);
- ``ui/lazy``, MathJax's lazy typesetting, with the book's own page-ready
  step (``_ext/mathjax-first-screen.js``, inlined in the page): the
  formulas on the first screen are typeset first, then the rest of the
  page in small batches while the browser is idle. Typesetting every
  formula of a chapter (up to 450) before the first screen settled kept
  a reader on slow 4G waiting up to 4 s (scripts/page_weight.py
  --slow-4g);
- the New Computer Modern font's tables, and of its character ranges and
  web fonts (each a few KB) only those a page's formulas draw: MathJax
  fetches them as it needs them.

Long formulas are broken to fit their column (MathJax 4's line breaking):
a displayed formula at its operators when it is wider than the column
(``displayOverflow: "linebreak"``), an inline formula at the end of a line
as TeX would break it. Nothing here is used by the PDF (LaTeX typesets the
math).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from sphinx.builders.html._assets import _JavaScript
from sphinx.errors import ExtensionError

PACKAGES = {
    "mathjax": [
        "startup.js",
        "core.js",
        "input/tex-base.js",
        "input/tex/extensions/ams.js",
        "input/tex/extensions/newcommand.js",
        "input/tex/extensions/noundefined.js",
        "output/chtml.js",
        "a11y/assistive-mml.js",
        "ui/lazy.js",
        "LICENSE",
    ],
    # Only fetched as a page needs them: the font's tables, its dynamic
    # character ranges and their web fonts.
    "@mathjax/mathjax-newcm-font": ["chtml.js", "chtml"],
}
# Where the font lands, under _static/mathjax/ (MathJax's [fonts] path).
FONT_FOLDER = "fonts/mathjax-newcm-font"
# The font's files that half the chapters or more draw with (measured in
# Chromium, 2026-11: n, zero and brk in all 19; v 14, so 13, s3 11, s and
# the script letters' table 9); the others come when a page needs them.
COMMON_FONT_FILES = [
    "chtml.js",
    "chtml/dynamic/script.js",
    *(
        f"chtml/woff2/mjx-ncm-{name}.woff2"
        for name in ["n", "zero", "brk", "v", "so", "s3", "s"]
    ),
]
TEX_EXTENSIONS = ["ams", "newcommand", "noundefined"]
MATHJAX_CONFIG = {
    "loader": {
        "load": [
            "core",
            "input/tex-base",
            *(f"[tex]/{name}" for name in TEX_EXTENSIONS),
            "output/chtml",
            "a11y/assistive-mml",
            "ui/lazy",
        ],
        # MathJax asks a CDN for its fonts unless told where they are.
        "paths": {"fonts": "[mathjax]/fonts"},
    },
    "tex": {"packages": {"[+]": TEX_EXTENSIONS}},
    "output": {
        "displayOverflow": "linebreak",
        # A little short of the column: a row of an aligned formula can
        # only break inside its cells, and overran a full-width break by
        # up to 38 px on a phone.
        "linebreaks": {"inline": True, "width": "85%"},
    },
}


def npm_root(start: Path) -> Path:
    """The folder of package-lock.json: BOOK_NPM_ROOT if set (the student
    edition is built from a copy of the sources), else at or above
    `start`."""
    if os.environ.get("BOOK_NPM_ROOT"):
        return Path(os.environ["BOOK_NPM_ROOT"])
    for folder in [start, *start.parents]:
        if (folder / "package-lock.json").is_file():
            return folder
    raise ExtensionError(f"no package-lock.json at or above {start}")


def _locked_versions(root: Path) -> dict[str, str]:
    lock = json.loads((root / "package-lock.json").read_text())
    return {
        name: lock["packages"][f"node_modules/{name}"]["version"]
        for name in PACKAGES
    }


def _installed_version(root: Path, name: str) -> str | None:
    manifest = root / "node_modules" / name / "package.json"
    if not manifest.is_file():
        return None
    return json.loads(manifest.read_text()).get("version")


def ensure_installed(root: Path) -> Path:
    """node_modules/ as package-lock.json pins it (`npm ci` if not yet)."""
    wanted = _locked_versions(root)

    def current() -> bool:
        return all(
            _installed_version(root, name) == version
            for name, version in wanted.items()
        )

    if current():
        return root / "node_modules"
    # Two builds at once (the site and the student edition) install once.
    with open(root / "package-lock.json") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not current():
            npm = shutil.which("npm")
            if npm is None:
                raise ExtensionError(
                    "The site serves MathJax from npm: install Node.js with"
                    f" npm (20 or newer), then run `npm ci` in {root}."
                )
            subprocess.run(
                [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
                cwd=root,
                check=True,
            )
    if not current():
        raise ExtensionError(f"`npm ci` in {root} did not install {wanted}")
    return root / "node_modules"


FIRST_SCREEN = Path(__file__).with_name("mathjax-first-screen.js")


def first_screen_first(app, pagename, templatename, context, doctree):
    """In a page that loads MathJax, the page-ready step of
    mathjax-first-screen.js, between MathJax's configuration and
    startup.js (which reads it)."""
    if app.builder.format != "html" or "script_files" not in context:
        return
    scripts = context["script_files"]
    startup = {app.config.mathjax_path, f"_static/{app.config.mathjax_path}"}
    at = next(
        (n for n, script in enumerate(scripts) if script.filename in startup),
        None,
    )
    if at is None:
        return  # no math on this page (_ext/page_weight.py)
    body = FIRST_SCREEN.read_text()
    context["script_files"] = [
        *scripts[:at],
        _JavaScript("", priority=scripts[at].priority, body=body),
        *scripts[at:],
    ]


def configure(app, config):
    config.mathjax_path = "mathjax/startup.js"
    config.mathjax3_config = {
        **MATHJAX_CONFIG,
        **(config.mathjax3_config or {}),
    }


def copy_mathjax(app):
    """Install (if need be) and copy MathJax into the build's _static
    before any page is written: each page's link to startup.js then
    carries the checksum of the file it loads (Sphinx's ``?v=``)."""
    if app.builder.format != "html":
        return
    modules = ensure_installed(npm_root(Path(app.srcdir)))
    target = Path(app.outdir) / "_static" / "mathjax"
    if target.exists():
        shutil.rmtree(target)
    for package, parts in PACKAGES.items():
        home = target if package == "mathjax" else target / FONT_FOLDER
        for part in parts:
            origin = modules / package / part
            if origin.is_dir():
                shutil.copytree(origin, home / part)
            else:
                (home / part).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, home / part)


def prefetched() -> list[str]:
    """What a page without math asks the browser to fetch when it is idle
    (_ext/page_weight.py): MathJax's parts and the font files every
    chapter draws with, under _static/mathjax/."""
    scripts = [part for part in PACKAGES["mathjax"] if part.endswith(".js")]
    return scripts + [f"{FONT_FOLDER}/{part}" for part in COMMON_FONT_FILES]


def setup(app):
    app.setup_extension("sphinx.ext.mathjax")
    # After myst-parser and jupyter-book have set their MathJax options.
    app.connect("config-inited", configure, priority=900)
    app.connect("builder-inited", copy_mathjax)
    # After _ext/page_weight.py has dropped MathJax from pages without math.
    app.connect("html-page-context", first_screen_first, priority=950)
    # Its checksum as a setting of the HTML build: an edited script is a
    # changed setting, and every page is written again with it.
    checksum = hashlib.sha256(FIRST_SCREEN.read_bytes()).hexdigest()
    app.add_config_value("mathjax_first_screen", checksum, "html")
    return {"parallel_read_safe": True, "parallel_write_safe": True}

#!/usr/bin/env python3
"""Lecture slides: one reveal.js deck per chapter, built from the chapter.

Usage: python scripts/make_slides.py [--pdf] [OUTPUT_DIR] [CHAPTER ...]
(or `make slides`; default OUTPUT_DIR _build/slides, every outline).

A deck's outline, slides/<chapter>.yml, picks what goes on each slide from
the chapter's notebook (its stored outputs, nothing is executed): the
learning objectives, definitions and theorems by label, figures by name,
the chapter's dial (its stored Vega-Lite spec, live), glued numbers by
glue name, exercises by label (title and prompt, never the solution), and
the text and speaker notes the outline writes (slides/README.md). An item
that does not resolve (a renamed label or glue) stops the build with a
message that names the outline, the slide and the item.

The decks are served offline: reveal.js (npm, package-lock.json pins it),
the book's MathJax and the Vega runtime are copied beside them. --pdf also
prints each deck to <chapter>.pdf with Chromium (reveal.js's print view).
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import html
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
OUTLINES = ROOT / "slides"
DEFAULT_OUT = ROOT / "_build" / "slides"
sys.path.insert(0, str(ROOT / "_ext"))

import mathjax_local  # noqa: E402  (the book's MathJax parts)
import vega_figures  # noqa: E402  (the book's dial markup and drawer)
from local_server import served  # noqa: E402  (scripts/local_server.py)

VEGA_LITE = vega_figures.MIME
GLUE_MIME = "application/papermill.record/text/plain"
# What reveal.js the decks load, under reveal/ beside them.
REVEAL_FILES = [
    "dist/reset.css",
    "dist/reveal.css",
    "dist/reveal.js",
    "dist/theme/white.css",
    "dist/theme/fonts/source-sans-pro",
    "plugin/notes/notes.js",
    "LICENSE",
]
# The slide's size: the decks are drawn for a 1280 x 720 screen (16:9).
WIDTH, HEIGHT = 1280, 720
MIN_SLIDES, MAX_SLIDES = 12, 25
# Every text on a slide reads at least this many CSS px at 1280 x 720;
# a dial's axis labels and titles are raised to it on a slide.
MIN_TEXT_PX = 18
# How much a dial's charts grow on a slide (texts of 11 px become 18 px).
DIAL_GROWTH, DIAL_GROWTH_SIDE_BY_SIDE = 1.4, 1.2
SLIDE_KINDS = [
    "objectives",
    "text",
    "proof",
    "figure",
    "dial",
    "question",
    "exercise",
    "exercises",
]


class OutlineError(ValueError):
    """An outline item that does not resolve against its chapter."""


# ---------------------------------------------------------------------------
# What a chapter offers
# ---------------------------------------------------------------------------

DIRECTIVE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<title>[^\n]*)\n"
    r"(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


@dataclass
class Directive:
    name: str
    title: str
    label: str
    body: str
    options: dict = field(default_factory=dict)


def _directives(markdown: str) -> list[Directive]:
    found = []
    for match in DIRECTIVE.finditer(markdown):
        lines = match["body"].split("\n")
        options = {}
        while lines and lines[0].startswith(":"):
            key, _, value = lines.pop(0)[1:].partition(":")
            options[key.strip()] = value.strip()
        body = "\n".join(lines).strip()
        found.append(
            Directive(
                match["name"],
                match["title"].strip(),
                options.get("label", ""),
                body,
                options,
            )
        )
        # Directives nested in this one (a definition inside a box).
        found.extend(_directives(body))
    return found


@functools.cache
def _book_directives(root: Path = ROOT) -> dict:
    """Every labelled directive of every chapter, by label."""
    found = {}
    for path in sorted((root / "chapters").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                for directive in _directives(cell.source):
                    if directive.label:
                        found[directive.label] = directive
    return found


@dataclass
class Chapter:
    """What a deck can take from one chapter's stored notebook."""

    name: str
    title: str
    markdown: list[str]
    outputs: list[str]
    glue: dict
    figures: dict
    dials: list
    directives: dict
    objectives: str
    solution_glue: set = field(default_factory=set)

    @classmethod
    def load(cls, name: str, root: Path = ROOT) -> Chapter:
        path = root / "chapters" / f"{name}.ipynb"
        if not path.is_file():
            raise OutlineError(f"no chapter {path}")
        notebook = nbformat.read(path, as_version=4)
        markdown, outputs, glue, figures, dials = [], [], {}, {}, []
        images = []
        solution_glue = set()
        for cell in notebook.cells:
            if cell.cell_type == "markdown":
                markdown.append(cell.source)
                continue
            if cell.cell_type != "code":
                continue
            meta = cell.metadata.get("mystnb", {})
            figure_name = meta.get("figure", {}).get("name")
            for output in cell.get("outputs", []):
                data = output.get("data", {})
                record = output.get("metadata", {}).get("scrapbook", {})
                if GLUE_MIME in data and record.get("name"):
                    glue[record["name"]] = data[GLUE_MIME]
                    if "solution" in cell.metadata.get("tags", []):
                        solution_glue.add(record["name"])
                    continue
                if output.get("output_type") == "stream":
                    outputs.append(output.get("text", ""))
                for mime in ("text/plain", "text/html", "text/markdown"):
                    if mime in data:
                        outputs.append(data[mime])
                if VEGA_LITE in data:
                    dials.append(data[VEGA_LITE])
                if "image/png" in data:
                    image = {
                        "png": data["image/png"],
                        "caption": meta.get("figure", {}).get("caption", ""),
                        "alt": meta.get("image", {}).get("alt", ""),
                    }
                    images.append(image)
                    if figure_name:
                        figures[figure_name] = image
        # A figure without a name is taken by its place among the
        # chapter's stored images: `figure: 0` is the first.
        for number, image in enumerate(images):
            figures[number] = image
        directives = {}
        objectives = ""
        for text in markdown:
            for directive in _directives(text):
                if directive.label:
                    directives[directive.label] = directive
                if (
                    directive.name == "admonition"
                    and directive.title == "Learning objectives"
                ):
                    objectives = directive.body
        title = re.search(r"^# (.+)$", markdown[0], re.MULTILINE)
        return cls(
            name,
            title[1].strip() if title else name,
            markdown,
            outputs,
            glue,
            figures,
            dials,
            directives,
            objectives,
            solution_glue,
        )

    def text(self) -> str:
        """The chapter's Markdown and printed outputs, as one string (what
        a number on a slide may be taken from, beside the glue)."""
        return "\n".join([*self.markdown, *self.outputs])


# ---------------------------------------------------------------------------
# MyST (the subset the chapters write) to HTML
# ---------------------------------------------------------------------------

ROLE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<content>[^`]*)`")
EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)


def _bib_authors(root: Path = ROOT) -> dict:
    """Citation key -> 'Surname' / 'Surname and Surname' / 'Surname et
    al.' (what {cite:t} prints on a slide; {cite:p} prints nothing)."""
    names = {}
    text = (root / "references.bib").read_text("utf-8")
    for entry in re.finditer(r"@\w+\{([^,\s]+),(.*?)\n\}", text, re.DOTALL):
        author = re.search(r"author\s*=\s*\{(.*?)\},?\s*\n", entry[2], re.S)
        if not author:
            continue
        people = [p.strip() for p in re.split(r"\s+and\s+", author[1])]
        surnames = [p.split(",")[0].strip(" {}") for p in people]
        if len(surnames) == 1:
            names[entry[1]] = surnames[0]
        elif len(surnames) == 2:
            names[entry[1]] = f"{surnames[0]} and {surnames[1]}"
        else:
            names[entry[1]] = f"{surnames[0]} et al."
    return names


class Renderer:
    """MyST text of a chapter or an outline -> HTML for a slide."""

    def __init__(self, chapter: Chapter, where: str):
        from markdown_it import MarkdownIt  # noqa: PLC0415
        from mdit_py_plugins.dollarmath import dollarmath_plugin  # noqa: PLC0415

        self.chapter = chapter
        self.where = where
        self.md = MarkdownIt("commonmark", {"html": True}).enable("table")
        dollarmath_plugin(self.md, double_inline=True)
        escape = html.escape
        rules = self.md.renderer.rules
        rules["math_inline"] = lambda t, i, *_: (
            f"\\({escape(t[i].content, quote=False)}\\)"
        )
        rules["math_inline_double"] = lambda t, i, *_: (
            f"\\[{escape(t[i].content, quote=False)}\\]"
        )
        rules["math_block"] = lambda t, i, *_: (
            f'<div class="math">\\[{escape(t[i].content, quote=False)}\\]'
            "</div>\n"
        )
        rules["math_block_label"] = rules["math_block"]
        self.authors = None

    def glue(self, content: str) -> str:
        """{glue:text}`name:format`: the stored value, formatted as
        myst-nb formats it, marked as glued."""
        from myst_nb.core.variables import format_plain_text  # noqa: PLC0415

        name, _, spec = content.partition(":")
        if name not in self.chapter.glue:
            raise OutlineError(
                f"{self.where}: no glued value {name!r} in chapter"
                f" {self.chapter.name} (renamed or removed?)"
            )
        if name in self.chapter.solution_glue:
            raise OutlineError(
                f"{self.where}: {name!r} is computed in an exercise's"
                " solution; a slide shows no solution"
            )
        text = format_plain_text(self.chapter.glue[name], spec or "s")
        return (
            f'<span class="glued" data-glue="{html.escape(name)}"'
            f' data-format="{html.escape(spec)}">{html.escape(text)}</span>'
        )

    def role(self, match: re.Match) -> str:
        role, content = match["role"], match["content"]
        if role in ("glue:text", "glue"):
            return self.glue(content)
        if role == "math":
            return f"${content}$"
        if role == "cite:p":
            return ""
        if role == "cite:t":
            if self.authors is None:
                self.authors = _bib_authors()
            keys = [key.strip() for key in content.split(",")]
            return ", ".join(self.authors.get(key, key) for key in keys)
        explicit = EXPLICIT.match(content)
        if explicit:
            return explicit["text"]
        target = self.chapter.directives.get(content)
        if target is None and role == "prf:ref":
            # A theorem of another chapter: the book's title for it.
            target = _book_directives().get(content)
            if target is None:
                raise OutlineError(
                    f"{self.where}: no chapter has a directive {content!r}"
                )
        if target is not None and target.title:
            return self.inline(target.title)
        return content.replace("-", " ")

    def myst(self, text: str) -> str:
        text = re.sub(r"\s*\{cite:p\}`[^`]*`", "", text)
        text = re.sub(r"^\([\w-]+\)=\s*$", "", text, flags=re.MULTILINE)
        return ROLE.sub(self.role, text)

    def block(self, text: str) -> str:
        return self.md.render(self.myst(text))

    def inline(self, text: str) -> str:
        return self.md.renderInline(self.myst(text))


# ---------------------------------------------------------------------------
# Slides
# ---------------------------------------------------------------------------


def _dial_figure(spec: dict) -> str:
    """The chapter's Vega-Lite dial as the book's page shows it
    (_ext/vega_figures.py), its texts raised to MIN_TEXT_PX for a room and
    charts stacked for a page's column set side by side."""
    spec = json.loads(json.dumps(spec))
    # Charts stacked for a page's column stand side by side on a screen,
    # and every chart grows with its texts.
    if "vconcat" in spec:
        spec["hconcat"] = spec.pop("vconcat")
    charts = spec.get("hconcat", [spec])
    grow = DIAL_GROWTH if len(charts) == 1 else DIAL_GROWTH_SIDE_BY_SIDE
    for chart in charts:
        for key in ("width", "height"):
            if isinstance(chart.get(key), (int, float)):
                chart[key] = round(chart[key] * grow)
    config = spec.setdefault("config", {})
    for part in ("axis", "legend", "header"):
        config.setdefault(part, {})
        config[part]["labelFontSize"] = MIN_TEXT_PX
        config[part]["titleFontSize"] = MIN_TEXT_PX + 2
    # Room for the wider y labels (the book's pages keep 50 px).
    config.setdefault("axisY", {})["minExtent"] = 70
    config.setdefault("title", {}).update(
        fontSize=MIN_TEXT_PX + 4,
        lineHeight=MIN_TEXT_PX + 8,
        subtitleLineHeight=MIN_TEXT_PX + 4,
    )
    config["legend"]["labelLimit"] = 400
    config.setdefault("text", {}).update(
        fontSize=MIN_TEXT_PX, lineHeight=MIN_TEXT_PX + 4
    )

    def raise_sizes(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if not isinstance(value, (int, float)):
                    raise_sizes(value)
                elif key.lower().endswith("fontsize"):
                    node[key] = max(value, MIN_TEXT_PX)
                elif key.lower().endswith("lineheight"):
                    node[key] = max(value, MIN_TEXT_PX + 4)
        elif isinstance(node, list):
            for item in node:
                raise_sizes(item)

    raise_sizes(spec)
    vega = vega_figures._vl_convert().vegalite_to_vega(
        spec, vl_version=vega_figures.VL_VERSION
    )
    text = json.dumps(vega, separators=(",", ":"), sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    marker = vega_figures.MARKER
    escaped = text.replace("</", "<\\/")
    return (
        f'<figure class="{marker}" id="{marker}-{digest}">'
        f'<div class="{marker}-view"></div>'
        f'<script type="application/json" class="{marker}-spec">'
        f"{escaped}</script>"
        f"<figcaption>{html.escape(spec.get('description', ''))}"
        "</figcaption></figure>"
    )


def _check_keys(slide: dict, where: str) -> str:
    if not isinstance(slide, dict):
        raise OutlineError(f"{where}: a slide is a mapping, got {slide!r}")
    kinds = [kind for kind in SLIDE_KINDS if kind in slide]
    known = {*SLIDE_KINDS, "title", "notes", "after", "class"}
    unknown = sorted(set(slide) - known)
    if unknown:
        raise OutlineError(f"{where}: unknown keys {unknown}")
    if len(kinds) != 1 and not (kinds == [] and "title" in slide):
        raise OutlineError(
            f"{where}: a slide has exactly one of {SLIDE_KINDS}, got {kinds}"
        )
    return kinds[0] if kinds else "text"


def _directive(chapter: Chapter, label: str, names: tuple, where: str):
    directive = chapter.directives.get(label)
    if directive is None or not directive.name.startswith(names):
        raise OutlineError(
            f"{where}: no {' or '.join(names)} labelled {label!r} in chapter"
            f" {chapter.name} (renamed or removed?)"
        )
    return directive


def render_slide(
    chapter: Chapter, slide: dict, index: int, assets: dict
) -> str:
    """One <section>: `assets` collects the figure files it needs."""
    where = f"slides/{chapter.name}.yml, slide {index + 1}"
    kind = _check_keys(slide, where)
    r = Renderer(chapter, where)
    value = slide.get(kind)
    title = slide.get("title")
    body = ""
    classes = ["slide", f"slide-{kind}"]
    if slide.get("class"):
        classes.append(str(slide["class"]))
    if kind == "objectives":
        if not chapter.objectives:
            raise OutlineError(
                f"{where}: chapter {chapter.name} has no Learning"
                " objectives box"
            )
        title = title or "Learning objectives"
        body = r.block(chapter.objectives)
    elif kind == "text":
        body = r.block(value or "")
    elif kind == "proof":
        directive = _directive(chapter, value, ("prf:",), where)
        kind_name = directive.name.split(":", 1)[1].capitalize()
        title = title or r.inline(directive.title) or kind_name
        body = (
            f'<div class="proof {directive.name.replace(":", "-")}">'
            f'<p class="proof-kind">{kind_name}</p>'
            f"{r.block(directive.body)}</div>"
        )
    elif kind == "figure":
        figure = chapter.figures.get(value)
        if figure is None:
            raise OutlineError(
                f"{where}: no figure named {value!r} (mystnb figure name,"
                " or the number of a stored image, from 0) with a stored"
                f" image in chapter {chapter.name}"
            )
        file_name = f"figures/{chapter.name}-{value}.png"
        assets[file_name] = base64.b64decode(figure["png"])
        body = (
            f'<figure class="chapter-figure"><img src="{file_name}"'
            f' alt="{html.escape(figure["alt"] or figure["caption"])}">'
            "</figure>"
        )
    elif kind == "dial":
        number = 0 if value is True else int(value)
        if number >= len(chapter.dials):
            raise OutlineError(
                f"{where}: chapter {chapter.name} stores"
                f" {len(chapter.dials)} dial(s), not a dial {number}"
            )
        body = _dial_figure(chapter.dials[number])
        classes.append("has-dial")
    elif kind == "question":
        title = title or "Question for the room"
        body = f'<div class="question">{r.block(value)}</div>'
    elif kind == "exercise":
        directive = _directive(chapter, value, ("exercise",), where)
        title = title or f"Exercise: {r.inline(directive.title)}"
        body = r.block(directive.body)
    elif kind == "exercises":
        items = []
        for label in value:
            directive = _directive(chapter, label, ("exercise",), where)
            items.append(f"<li>{r.inline(directive.title)}</li>")
        title = title or "Exercises to assign"
        body = f'<ul class="exercise-list">{"".join(items)}</ul>'
    if slide.get("after"):
        body += r.block(slide["after"])
    heading = f"<h2>{r.inline(title)}</h2>" if title else ""
    notes = ""
    if slide.get("notes"):
        notes = f'<aside class="notes">{r.block(slide["notes"])}</aside>'
    return (
        f'<section class="{" ".join(classes)}"><div class="frame">'
        f"{heading}{body}</div>{notes}</section>"
    )


STYLE = """
html, body, main { height: 100%%; margin: 0; }
.reveal { font-size: 28px; }
.reveal .slides section { text-align: left; height: 100%%; padding: 0; }
.reveal .frame { padding: 28px 48px; box-sizing: border-box;
  height: 720px; }
.reveal h1 { font-size: 52px; text-transform: none; }
.reveal h2 { font-size: 40px; text-transform: none; margin-bottom: 16px; }
.reveal p, .reveal li { line-height: 1.3; }
.reveal ul, .reveal ol { display: block; margin-left: 1em; }
.reveal li { margin-bottom: 6px; }
.reveal section.small { font-size: 22px; }
.reveal section.small h2 { font-size: 34px; }
.reveal .proof { border-left: 6px solid #2a6f97; padding: 4px 18px;
  background: #eef5fa; }
.reveal .proof-kind { font-weight: bold; color: #1d4e6b; margin: 0; }
.reveal .question { border-left: 6px solid #9a5b00; padding: 4px 18px;
  background: #fff6e6; }
.reveal figure { margin: 0; text-align: center; }
.reveal .frame { display: flex; flex-direction: column; }
.reveal .frame > * { flex: 0 0 auto; }
/* A chapter's figure takes the height the slide leaves it (its labels
   grow with it): drawn for a page's column, it is enlarged for a room. */
.reveal .frame > figure.chapter-figure { flex: 1 1 0; min-height: 0; }
.reveal figure.chapter-figure img { height: 100%%; width: 100%%;
  object-fit: contain; margin: 0; }
.reveal figcaption { font-size: 18px; color: #333; }
/* A dial's caption stays for screen readers (its sliders point to it);
   on the screen the chart's title and the line under the sliders say it,
   and the speaker notes explain it. */
.reveal figure.vega-figure figcaption { position: absolute; width: 1px;
  height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.reveal .vega-figure-view { display: inline-block; }
.reveal .vega-bind { font-size: 20px; }
.reveal .vega-bind input[type=range] { width: 240px; }
.reveal .vega-figure-status { font-size: 18px; margin: 4px 0; }
.reveal .glued { white-space: nowrap; }
.reveal table { font-size: 22px; }
.reveal .controls { color: #1d4e6b; }
.reveal .slide-number { font-size: 18px; background: #1d4e6b; }
.reveal .title-slide h1 { margin-top: 160px; }
.reveal .title-slide p { font-size: 26px; color: #333; }
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>{title} (lecture slides)</title>
<link rel="stylesheet" href="reveal/dist/reset.css">
<link rel="stylesheet" href="reveal/dist/reveal.css">
<link rel="stylesheet" href="reveal/dist/theme/white.css">
<style>{style}</style>
<script>window.MathJax = {mathjax};</script>
<script defer src="mathjax/startup.js"></script>
</head>
<body>
<main><div class="reveal"><div class="slides">
{slides}
</div></div></main>
<script src="reveal/dist/reveal.js"></script>
<script src="reveal/plugin/notes/notes.js"></script>
<script src="vega-figures/draw.js"></script>
<script>
Reveal.initialize({{
  width: {width}, height: {height}, margin: 0, center: false,
  hash: true, slideNumber: "c/t", transition: "none",
  pdfSeparateFragments: false, pdfMaxPagesPerSlide: 1,
  plugins: [RevealNotes]
}});
</script>
</body>
</html>
"""


def _mathjax_config() -> str:
    config = json.loads(json.dumps(mathjax_local.MATHJAX_CONFIG))
    config["loader"]["paths"] = {"fonts": "mathjax/fonts"}
    return json.dumps(config)


@dataclass
class Deck:
    chapter: Chapter
    html: str
    slides: int
    assets: dict


def build_deck(name: str, root: Path = ROOT) -> Deck:
    """The deck of chapter `name` from slides/<name>.yml."""
    outline_path = root / "slides" / f"{name}.yml"
    outline = yaml.safe_load(outline_path.read_text("utf-8")) or {}
    if not isinstance(outline, dict) or not isinstance(
        outline.get("slides"), list
    ):
        raise OutlineError(f"{outline_path}: needs a list `slides:`")
    chapter = Chapter.load(name, root)
    assets: dict = {}
    renderer = Renderer(chapter, f"slides/{name}.yml, title")
    subtitle = outline.get("subtitle", "Hands-On Data Privacy: lecture slides")
    sections = [
        '<section class="title-slide"><div class="frame">'
        f"<h1>{renderer.inline(outline.get('title', chapter.title))}</h1>"
        f"<p>{renderer.inline(subtitle)}</p></div>"
        + (
            f'<aside class="notes">{renderer.block(outline["notes"])}</aside>'
            if outline.get("notes")
            else ""
        )
        + "</section>"
    ]
    for index, slide in enumerate(outline["slides"]):
        sections.append(render_slide(chapter, slide, index, assets))
    count = len(sections)
    if not MIN_SLIDES <= count <= MAX_SLIDES:
        raise OutlineError(
            f"slides/{name}.yml: {count} slides (title slide included);"
            f" a 50-75 minute lecture has {MIN_SLIDES} to {MAX_SLIDES}"
        )
    page = PAGE.format(
        title=html.escape(re.sub(r"<[^>]+>", "", chapter.title)),
        style=STYLE % (),
        mathjax=_mathjax_config(),
        slides="\n".join(sections),
        width=WIDTH,
        height=HEIGHT,
    )
    return Deck(chapter, page, count, assets)


NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")


def _numbers(text: str) -> set:
    """The numbers written in `text` (thousands separators ignored)."""
    found = set()
    for token in NUMBER.findall(text):
        token = token.rstrip(",")
        try:
            found.add(float(token.replace(",", "")))
        except ValueError:
            continue
    return found


class _SlideText(HTMLParser):
    """The text of a deck's slides (notes included; scripts and styles
    not), and each glued value with its glue name and format."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self.glued, self._skip, self._glue = [], [], 0, None
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("script", "style", "title"):
            self._skip += 1
        if self._glue is not None:
            self._depth += 1
        elif tag == "span" and "glued" in (attrs.get("class") or ""):
            self._glue = [attrs["data-glue"], attrs["data-format"], ""]
            self._depth = 0

    def handle_endtag(self, tag):
        if tag in ("script", "style", "title"):
            self._skip -= 1
        if self._glue is not None:
            if self._depth == 0:
                self.glued.append(tuple(self._glue))
                self._glue = None
            else:
                self._depth -= 1

    def handle_data(self, data):
        if self._skip:
            return
        if self._glue is not None:
            self._glue[2] += data
        else:
            self.text.append(data)


def stray_numbers(deck: Deck) -> list[str]:
    """What a reader of the deck alone could get wrong: numbers on its
    slides (or in its notes) that are neither a glued value, formatted as
    the outline asks, nor written in the chapter's Markdown or outputs."""
    from myst_nb.core.variables import format_plain_text  # noqa: PLC0415

    body = deck.html.split('<div class="slides">', 1)[1]
    parser = _SlideText()
    parser.feed(body)
    problems = []
    for name, spec, shown in parser.glued:
        value = deck.chapter.glue.get(name)
        if value is None or format_plain_text(value, spec or "s") != shown:
            problems.append(f"{shown!r} is not the glued {name}")
    known = _numbers(deck.chapter.text())
    for value in deck.chapter.glue.values():
        known |= _numbers(value)
    for line in "".join(parser.text).split("\n"):
        for number in sorted(_numbers(line) - known):
            problems.append(
                f"{number:g} (in {line.strip()[:70]!r}) is neither glued nor"
                " in the chapter"
            )
    return problems


def outlines(root: Path = ROOT) -> list[str]:
    """The chapters that have an outline, in the book's order."""
    order = [
        entry["file"].split("/", 1)[1]
        for part in yaml.safe_load((root / "_toc.yml").read_text())["parts"]
        for entry in part["chapters"]
        if entry["file"].startswith("chapters/")
    ]
    have = {path.stem for path in (root / "slides").glob("*.yml")}
    unknown = have - set(order)
    if unknown:
        raise OutlineError(f"outlines for no chapter: {sorted(unknown)}")
    return [name for name in order if name in have]


def copy_runtime(out: Path, root: Path = ROOT) -> None:
    """reveal.js, MathJax and the Vega runtime beside the decks."""
    modules = mathjax_local.ensure_installed(mathjax_local.npm_root(root))
    lock = json.loads((root / "package-lock.json").read_text())
    wanted = lock["packages"]["node_modules/reveal.js"]["version"]
    manifest = modules / "reveal.js" / "package.json"

    def installed() -> str | None:
        if not manifest.is_file():
            return None
        return json.loads(manifest.read_text())["version"]

    if installed() != wanted and shutil.which("npm"):
        # node_modules/ from before reveal.js was pinned: install the lock.
        subprocess.run(
            ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
            cwd=modules.parent,
            check=True,
        )
    if installed() != wanted:
        raise OutlineError(
            f"reveal.js {wanted} is not in {modules}: run `npm ci`"
            " (Node.js 20 or newer with npm)"
        )
    for part in REVEAL_FILES:
        origin, target = modules / "reveal.js" / part, out / "reveal" / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_dir():
            shutil.copytree(origin, target, dirs_exist_ok=True)
        else:
            shutil.copy2(origin, target)
    for package, parts in mathjax_local.PACKAGES.items():
        home = out / "mathjax"
        if package != "mathjax":
            home = home / mathjax_local.FONT_FOLDER
        for part in parts:
            origin = modules / package / part
            if origin.is_dir():
                shutil.copytree(origin, home / part, dirs_exist_ok=True)
            else:
                (home / part).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, home / part)
    vega = out / "vega-figures"
    vega.mkdir(parents=True, exist_ok=True)
    cache = root / "_build" / ".cache" / f"vega-{vega_figures.VL_VERSION}.js"
    if not cache.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        bundle = vega_figures._vl_convert().javascript_bundle(
            "window.vegaEmbed = vegaEmbed;",
            vl_version=vega_figures.VL_VERSION,
        )
        cache.write_text(f"(function () {{\n{bundle}\n}})();\n", "utf-8")
    shutil.copy2(cache, vega / "vega.min.js")
    shutil.copy2(vega_figures.DRAWER_SOURCE, vega / "draw.js")


def build(
    out: Path = DEFAULT_OUT, names: list[str] | None = None, root=ROOT
) -> dict:
    """Every deck (or those of `names`) into `out`: {chapter: Deck}."""
    names = names or outlines(root)
    decks = {name: build_deck(name, root) for name in names}
    for name, deck in decks.items():
        strays = stray_numbers(deck)
        if strays:
            raise OutlineError(
                f"slides/{name}.yml: a number typed by hand: "
                + "; ".join(strays)
            )
    out.mkdir(parents=True, exist_ok=True)
    copy_runtime(out, root)
    for name, deck in decks.items():
        (out / f"{name}.html").write_text(deck.html, "utf-8")
        for file_name, content in deck.assets.items():
            (out / file_name).parent.mkdir(parents=True, exist_ok=True)
            (out / file_name).write_bytes(content)
    return decks


# Waits until a deck is drawn: reveal.js ready, math typeset, fonts in,
# every dial drawn.
WAIT_FOR_DECK = """async () => {
  while (!(window.Reveal && Reveal.isReady())) {
    await new Promise(r => setTimeout(r, 50));
  }
  if (window.MathJax && MathJax.startup) { await MathJax.startup.promise; }
  await document.fonts.ready;
}"""
# reveal.js's print view announces its finished layout with 'pdf-ready'
# (counting its pages raced it under load: a PDF came out a page short).
PDF_READY_LISTENER = (
    "document.addEventListener('pdf-ready',"
    " () => { window.bookPdfReady = true; });"
)
PRINT_READY = (
    "() => window.bookPdfReady === true"
    " && document.querySelectorAll('.pdf-page').length"
    " === Reveal.getTotalSlides()"
)
DIALS_DRAWN = (
    "() => [...document.querySelectorAll('figure.vega-figure')]"
    ".every(f => f.classList.contains('vega-figure-ready'))"
)


def print_pdfs(out: Path, names: list[str]) -> None:
    """<chapter>.pdf beside each deck: Chromium prints reveal.js's print
    view (one 1280 x 720 page per slide, dials at their start)."""
    sys.path.insert(0, str(ROOT / "tests" / "book"))
    sys.path.insert(0, str(ROOT / "tests"))
    from browser import CHROMIUM, CHROMIUM_ARGS  # noqa: PLC0415
    from playwright import sync_api  # noqa: PLC0415

    if not Path(CHROMIUM).exists():
        print(
            f"No PDFs of the slides: {CHROMIUM} is missing (make system-deps)"
        )
        return
    with served(out) as url, sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        tab = chromium.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        tab.add_init_script(PDF_READY_LISTENER)
        for name in names:
            tab.goto(f"{url}{name}.html?print-pdf")
            tab.evaluate(WAIT_FOR_DECK)
            tab.wait_for_function(PRINT_READY)
            tab.wait_for_function(DIALS_DRAWN)
            tab.pdf(
                path=str(out / f"{name}.pdf"),
                width=f"{WIDTH}px",
                height=f"{HEIGHT}px",
                print_background=True,
            )
            print(f"{out / name}.pdf")
        chromium.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT)
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--pdf", action="store_true", help="print PDFs too")
    args = parser.parse_args(argv)
    try:
        decks = build(args.out, args.chapters or None)
    except OutlineError as error:
        print(f"make_slides: {error}", file=sys.stderr)
        return 1
    for name, deck in decks.items():
        print(f"{args.out / name}.html: {deck.slides} slides")
    if args.pdf:
        print_pdfs(args.out, list(decks))
    return 0


if __name__ == "__main__":
    sys.exit(main())

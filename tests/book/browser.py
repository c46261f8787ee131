"""What the browser tests share (tests/book/test_browser_*.py): the served
book, Chromium, and one visit of every page.

The site is served from _build/html on 127.0.0.1; every request that would
leave 127.0.0.1 is recorded and aborted, so the book must work offline
(local MathJax). Each page of _toc.yml is opened once at 1280 px
(visit_page): checked in light mode, then switched to dark mode with the
theme button of the header, like a reader would, and last its interactive
figures (dials) are moved; each chapter is opened once more on a phone
(390 px, touch; phone_visit) for its inline math and its dials. Every
page is checked by axe-core (WCAG 2.1 A and AA rules) in each mode and
width it is seen in: light and dark at 1280 px, light and dark on a phone
(axe_violations: every rule once, then the rules each other look can
change, AXE_RUNS). The student edition is the reader's edition less its
solutions and the instructors' page, on the same stylesheets, every
element under the same chain of ancestors as one of the reader's page:
each of its pages gets every rule but the colour rules at 1280 px in
light mode (what cutting the solutions can change: ids, references,
names, lists, headings) and its layout on a phone, in a visit per page
(axe_visit); its colours are those the reader's edition is checked in. The tests
assert on what those visits recorded, so a failure names the page and the
check. Each kind of visit is made once per test run, whichever test file
or pytest-xdist worker asks first (cached_visits; the fixtures `visits`
and `phone_visits` in tests/conftest.py).
Full-page screenshots land in _build/screenshots/<page>-light.jpg and
-dark.jpg.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from dials import exercise_dials
from playwright import sync_api  # pinned in requirements.txt; never skipped

from conftest import BUILD_DIR, HTML_DIR, ROOT, once_per_run, toc_files

sys.path.insert(0, str(ROOT / "scripts"))
from local_server import served  # noqa: E402  (scripts/local_server.py)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
]
SCREENSHOT_DIR = BUILD_DIR / "screenshots"
PAGES = toc_files()
INTRO = PAGES[0]
RUN_PAGE = "run-it-yourself"  # where the book offers its data set
# Chapter pages are the notebooks of the toc: they offer their .ipynb for download.
CHAPTERS = [page for page in PAGES if (ROOT / f"{page}.ipynb").exists()]
# The student edition's pages: the book's less the instructors' page
# (TEACHER_PAGES of scripts/make_student_edition.py).
STUDENT_PAGES = [page for page in PAGES if page != "instructors"]
MIN_CONTRAST = 4.5  # WCAG AA for body text
TIMEOUT_MS = 20_000
# Pages are visited by this many browsers at once (one per core, at most two).
WORKERS = max(1, min(2, os.cpu_count() or 1))
PHONE = {"width": 390, "height": 844}
# axe-core's rules for WCAG 2.0 and 2.1, levels A and AA. Without the
# preload of the stylesheets: axe-core 4.12.1 fetches a stylesheet's
# relative @import against the page's URL, not the sheet's (axe-core issue
# 5268: the theme's `@import "../basic.css"` becomes a 404 and a console
# error); only css-orientation-lock needs it, and test_browser_axe checks
# instead that no stylesheet of the site has an orientation query.
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
AXE_OPTIONS = {
    "runOnly": {"type": "tag", "values": WCAG_TAGS},
    "resultTypes": ["violations"],
    "preload": False,
}
# Every rule runs on every page once, in light mode at 1280 px (the text of
# code cells: code_contrast, below).
# The other three looks of a page run only the rules whose outcome they can
# change, which is what keeps axe-core's cost in `make test` small (its
# colour rules are nine tenths of a run: they look at every piece of text):
# - dark mode changes the colours, and which images and icons the theme
#   shows (.only-dark): the colour rules and those of images and names;
# - a phone changes the layout (what scrolls, what the header shows: its
#   buttons, the sidebars as dialogs) but not the colours of the article:
#   every rule but the colour rules, and the colour rules on what is not
#   the article (header, navigation, footer).
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
SHOWN_RULES = [
    "image-alt",
    "input-image-alt",
    "role-img-alt",
    "svg-img-alt",
    "object-alt",
    "button-name",
    "input-button-name",
    "link-name",
    "aria-hidden-focus",
    "nested-interactive",
]
# The text of code cells (input and output: div.highlight pre) is left out
# of axe-core's color-contrast, which looks at every element with text one
# at a time (5,000 to 11,000 tokens of Pygments a chapter, each its own
# <span>: three fifths of the time of axe-core's colour rules). The same
# promise is kept for them by code_contrast (CODE_CONTRAST): every distinct
# combination of colour, backdrop and font size and weight the tokens show
# meets 4.5:1 (3:1 for large text), in the same modes.
CODE_TEXT = "div.highlight pre"
CONTRAST_OUTSIDE_CODE = {"include": [["html"]], "exclude": [[CODE_TEXT]]}
ONLY_CONTRAST = {
    **AXE_OPTIONS,
    "runOnly": {"type": "rule", "values": ["color-contrast"]},
}
AXE_RUNS = {
    "1280 light": [
        (
            None,
            {**AXE_OPTIONS, "rules": {"color-contrast": {"enabled": False}}},
        ),
        (CONTRAST_OUTSIDE_CODE, ONLY_CONTRAST),
    ],
    "1280 dark": [
        (
            None,
            {
                **AXE_OPTIONS,
                "runOnly": {
                    "type": "rule",
                    "values": ["link-in-text-block"] + SHOWN_RULES,
                },
            },
        ),
        (CONTRAST_OUTSIDE_CODE, ONLY_CONTRAST),
    ],
}
# The modes whose axe-core runs leave code cells' text to code_contrast.
CODE_CONTRAST_MODES = ("1280 light", "1280 dark")
OUTSIDE_ARTICLE = {"include": [["body"]], "exclude": [[".bd-article"]]}
AXE_RUNS["390 light"] = [
    (
        None,
        {
            **AXE_OPTIONS,
            "rules": {rule: {"enabled": False} for rule in COLOUR_RULES},
        },
    ),
    (
        OUTSIDE_ARTICLE,
        {**AXE_OPTIONS, "runOnly": {"type": "rule", "values": COLOUR_RULES}},
    ),
]
# The student edition (axe_visit): every rule but the colour rules, at
# 1280 px in light mode. Its pages are the reader's pages less the
# solutions, every element under the same chain of ancestors (tags and
# classes) as an element of the reader's page of that name
# (test_browser_axe), so their colours are the reader's; cutting the
# solutions can change what the other rules see (ids, references, names,
# lists, headings).
STUDENT_AXE = "1280 light, all but colour"
AXE_RUNS[STUDENT_AXE] = [AXE_RUNS["1280 light"][0]]
# What a reader opens (browser.OPENED): every rule on the opened blocks,
# the text of their code cells to code_contrast (it counts hidden tokens).
OPENED = ".solution, .cell > details.hide"
AXE_RUNS["opened"] = [
    (
        {
            "include": [[block] for block in OPENED.split(", ")],
            "exclude": [[CODE_TEXT]],
        },
        AXE_OPTIONS,
    ),
]
# On a phone in dark mode: what dark mode can change there (the colours of
# what is not the article, the images and names the theme shows), on top
# of the phone's light-mode rules and the article's dark colours at 1280 px.
AXE_RUNS["390 dark"] = [
    (
        None,
        {**AXE_OPTIONS, "runOnly": {"type": "rule", "values": SHOWN_RULES}},
    ),
    (
        OUTSIDE_ARTICLE,
        {**AXE_OPTIONS, "runOnly": {"type": "rule", "values": COLOUR_RULES}},
    ),
]


# --------------------------------------------------------------------------------------
# JavaScript run inside the page
# --------------------------------------------------------------------------------------

# Waits until MathJax (if the page loads it) has typeset the page and the fonts are in,
# and two frames are drawn (the tab stops of boxes that scroll: _ext/scroll-stops.js).
# MathJax typesets the first screen first, the rest while the browser is idle
# (_ext/mathjax-first-screen.js); here the rest is typeset at once, as for print
# (bookTypesetAllMath; at most 60 s: a formula left untypeset is then reported by
# the tests, e.g. as unrendered math). test_browser_math.py checks that the rest
# is typeset without it too.
WAIT_FOR_RENDERING = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  if (window.bookTypesetAllMath) {
    await Promise.race([window.bookTypesetAllMath(), new Promise(r => setTimeout(r, 60000))]);
  }
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  if (document.fonts) { await document.fonts.ready; }
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
}"""

# Text of the page outside code and rendered math, one line per block element, plus
# what Sphinx marked as math and what MathJax made of it, images and headings.
COLLECT = r"""() => {
  const main = document.querySelector('#main-content') || document.body;
  const SKIP = 'code, pre, kbd, samp, script, style, textarea, mjx-container, .highlight';
  const BLOCK = /^(P|LI|TD|TH|DD|DT|H[1-6]|DIV|SECTION|FIGCAPTION|CAPTION|BLOCKQUOTE|SUMMARY|TABLE|TR|UL|OL|DL|FIGURE|ASIDE)$/;
  const lines = [];
  let current = null, line = '';
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest(SKIP)) continue;
    let block = parent;
    while (block !== main && !BLOCK.test(block.tagName)) block = block.parentElement;
    if (block !== current) { if (line.trim()) lines.push(line); line = ''; current = block; }
    line += node.textContent;
  }
  if (line.trim()) lines.push(line);

  const maths = [...document.querySelectorAll('.math')];
  // Not typeset: TeX MathJax did not find, or a placeholder of its lazy typesetting.
  const unrendered = maths.filter(m => !m.querySelector('mjx-container')
                                       || m.querySelector('mjx-lazy'))
                          .map(m => m.textContent.trim().slice(0, 80));
  const errors = [...document.querySelectorAll('mjx-merror')]
      .map(e => e.getAttribute('data-mjx-error') || e.textContent);

  const images = [...document.images].map(img => {
    const figure = img.closest('figure');
    const caption = figure && figure.querySelector('figcaption');
    return {src: img.getAttribute('src'), complete: img.complete, width: img.naturalWidth,
            alt: (img.getAttribute('alt') || '').trim(),
            caption: caption ? caption.textContent.trim() : ''};
  });
  // Headings a reader (or a screen reader) gets: not those of print-only blocks (display: none),
  // but those in folded dropdowns, which are part of the page's outline.
  const shown = el => { for (let e = el; e; e = e.parentElement) {
      if (getComputedStyle(e).display === 'none') return false; } return true; };
  const headings = [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')].filter(shown)
      .map(h => ({level: Number(h.tagName[1]), text: h.textContent.replace(/#$/, '').trim().slice(0, 60)}));
  return {lines, math: maths.length, unrendered, errors,
          containers: document.querySelectorAll('mjx-container').length,
          images, headings, theme: document.documentElement.dataset.theme || ''};
}"""

# The page's head as a phone browser reads it, what its icon link serves, and
# which MathJax files the page fetched.
HEAD = r"""async () => {
  const icons = [...document.querySelectorAll('link[rel~="icon"]')];
  const served = [];
  for (const link of icons) {
    const r = await fetch(link.href);
    served.push({href: link.getAttribute('href'), status: r.status,
                 type: r.headers.get('content-type') || ''});
  }
  // What the page loaded, not what it prefetched for the next page.
  const mathjax = performance.getEntriesByType('resource')
      .filter(e => e.initiatorType !== 'link').map(e => e.name)
      .filter(name => name.includes('/mathjax/'));
  return {viewports: document.querySelectorAll('meta[name="viewport"]').length,
          icons: served, mathjax};
}"""

# Folded cells (myst-nb renders hide-input/-output/-cell as <details> in the cell).
FOLDED = ".cell > details.hide"
FOLD_STATE = r"""sel => [...document.querySelectorAll(sel)].map(d => {
  const seen = el => !!el && el.checkVisibility({checkVisibilityCSS: true})
                    && el.getBoundingClientRect().height > 0;
  const code = d.querySelector('pre');
  return {cell: d.parentElement.className,
          state: {open: d.open, visible: seen(d.querySelector(':scope > :not(summary)')),
                  code: code ? seen(code) : null}};
})"""

# Colour helpers shared by the dark-mode checks.
COLOUR_JS = r"""
  const parse = s => { const m = s.match(/rgba?\(([^)]+)\)/); if (!m) return [0, 0, 0, 0];
    const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (top, bottom) => { const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat([1]); };
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const contrast = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  // Background actually painted behind `el`: its own and its ancestors' colours, composited.
  // Each element's backdrop is its own colour over its parent's: computed
  // once per element (the parent's is shared by all its children).
  const backdrops = new Map();
  const backdrop = el => {
    if (!el) return [255, 255, 255, 1];  // the canvas of a page without any background is white
    let colour = backdrops.get(el);
    if (colour === undefined) {
      colour = over(parse(getComputedStyle(el).backgroundColor), backdrop(el.parentElement));
      backdrops.set(el, colour);
    }
    return colour; };
  const hex = c => '#' + c.slice(0, 3).map(v => Math.round(v).toString(16).padStart(2, '0')).join('');
"""

# Contrast of every visible piece of text in the article against what is painted behind it.
TEXT_CONTRAST = (
    "() => {"
    + COLOUR_JS
    + r"""
  const main = document.querySelector('#main-content') || document.body;
  const low = [];
  let checked = 0;
  for (const el of main.querySelectorAll('*')) {
    if (el.closest('mjx-container, svg')) continue;
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) continue;
    const style = getComputedStyle(el);
    const bg = backdrop(el);
    const fg = over(parse(style.color), bg);
    const ratio = contrast(fg, bg);
    checked++;
    if (ratio < %(min)s) low.push({text: el.textContent.trim().slice(0, 50), tag: el.tagName,
                                   ratio: Math.round(ratio * 100) / 100, fg: hex(fg), bg: hex(bg)});
  }
  return {checked, low};
}"""
    % {"min": MIN_CONTRAST}
)

# WCAG 1.4.3 for the text of code cells (axe-core leaves it out: CODE_TEXT):
# every element of a code cell with text of its own, grouped by its colour,
# the colour painted behind it (its own and its ancestors' backgrounds,
# composited) and its font size and weight; each group's contrast, against
# 3:1 for large text (24 px, or 18.66 px bold) and 4.5:1 for the rest, as
# axe-core's color-contrast. Hidden tokens count too (a folded cell's code is
# read once it is opened), at full opacity (sphinx-togglebutton fades a
# folded cell to opacity 0 and back when it opens; the book dims no code).
CODE_CONTRAST = (
    "selector => {"
    + COLOUR_JS
    + r"""
  const groups = new Map();
  let elements = 0;
  for (const pre of document.querySelectorAll(selector)) {
    for (const el of [pre, ...pre.querySelectorAll('*')]) {
      if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
      elements++;
      const style = getComputedStyle(el);
      const bg = backdrop(el);
      const size = parseFloat(style.fontSize);
      const weight = style.fontWeight === 'bold' ? 700 : Number(style.fontWeight) || 400;
      const key = [style.color, bg.join(), size, weight].join('|');
      let group = groups.get(key);
      if (!group) {
        group = {color: style.color, bg, size, weight, count: 0,
                 example: el.textContent.trim().slice(0, 30),
                 where: el.tagName.toLowerCase() + (el.className ? '.' + [...el.classList].join('.') : '')};
        groups.set(key, group);
      }
      group.count++;
    }
  }
  const low = [];
  for (const g of groups.values()) {
    const fg = over(parse(g.color), g.bg);
    const ratio = contrast(fg, g.bg);
    const large = g.size >= 24 || (g.size >= 18.66 && g.weight >= 700);
    const needed = large ? 3 : 4.5;
    if (ratio < needed)
      low.push({fg: hex(fg), bg: hex(g.bg), size: g.size, weight: g.weight,
                ratio: Math.round(ratio * 100) / 100, needed,
                count: g.count, example: g.example, where: g.where});
  }
  return {elements, combinations: groups.size, low};
}"""
)


def code_contrast(page) -> tuple[dict, list[str]]:
    """CODE_CONTRAST on the page as it is shown now: what it measured
    (elements, distinct combinations) and one line per combination below
    WCAG's minimum, worded as axe-core's violations."""
    found = page.evaluate(CODE_CONTRAST, CODE_TEXT)
    lines = [
        f"color-contrast (code cells): {low['count']} x {low['where']} "
        f"(e.g. {low['example']!r}): contrast {low['ratio']} < "
        f"{low['needed']} ({low['fg']} on {low['bg']}, {low['size']} px, "
        f"weight {low['weight']})"
        for low in found["low"]
    ]
    return found, lines


# For every image: does it have transparent pixels, what is its darkest ink, and what does
# the page paint behind it?  A transparent figure drawn for white paper (black ink) is only
# readable in dark mode if the theme puts a light background behind it.
FIGURE_BACKDROPS = (
    "async () => {"
    + COLOUR_JS
    + r"""
  const out = [];
  for (const img of document.querySelectorAll('#main-content img')) {
    if (!img.naturalWidth || !img.checkVisibility()) continue;
    try { await img.decode(); } catch (e) {}
    backdrops.clear();  // the page may have repainted while we waited
    const scale = Math.min(1, 400 / Math.max(img.naturalWidth, img.naturalHeight));
    const w = Math.max(1, Math.round(img.naturalWidth * scale)), h = Math.max(1, Math.round(img.naturalHeight * scale));
    const canvas = document.createElement('canvas');
    canvas.width = w; canvas.height = h;
    const ctx = canvas.getContext('2d');
    ctx.drawImage(img, 0, 0, w, h);
    const data = ctx.getImageData(0, 0, w, h).data;
    let transparent = 0, darkest = null, darkestLum = 2;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i + 3] < 250) transparent++;
      if (data[i + 3] > 200) { const c = [data[i], data[i + 1], data[i + 2], 1], l = lum(c);
        if (l < darkestLum) { darkestLum = l; darkest = c; } }
    }
    const bg = backdrop(img);
    out.push({src: img.getAttribute('src'), transparentShare: transparent / (w * h),
              ink: darkest ? hex(darkest) : null, backdrop: hex(bg),
              contrastDark: darkest ? contrast(darkest, bg) : null,
              contrastPaper: darkest ? contrast(darkest, [255, 255, 255, 1]) : null});
  }
  return out;
}"""
)


# Code cells wider than their box (a sideways scroll), each by its longest
# line; displayed equations clipped by, or scrolling inside, their box.
WIDE_CODE = (
    "pres => pres.filter(p => p.scrollWidth > p.clientWidth + 1)"
    ".map(p => p.textContent.split('\\n').reduce("
    "(a, b) => a.length >= b.length ? a : b, ''))"
)
WIDE_MATH = (
    "els => els.filter(e => { const box = e.closest('div.math, .math,"
    " .MathJax_Display') || e.parentElement;"
    " return e.scrollWidth > box.clientWidth + 1"
    " || e.firstElementChild.getBoundingClientRect().right >"
    " box.getBoundingClientRect().right + 1; })"
    ".map(e => { const s = e.closest('section');"
    " return (s ? s.id : '?') + ': ' + Math.round("
    "e.firstElementChild.getBoundingClientRect().width) + ' px'; })"
)

# An inline formula is clipped if an ancestor that clips (overflow other than
# visible) cuts it and does not let the reader scroll to the rest.
CLIPPED_INLINE_MATH = r"""() => {
  const out = [];
  const width = document.documentElement.clientWidth;
  for (const m of document.querySelectorAll(
      '#main-content mjx-container:not([display="true"])')) {
    if (!m.checkVisibility({checkVisibilityCSS: true})) continue;
    const r = m.getBoundingClientRect();
    if (r.width === 0) continue;
    let problem = null, decided = false;
    for (let e = m.parentElement; e && e !== document.body; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === 'inline' || s.overflowX === 'visible') continue;
      const b = e.getBoundingClientRect();
      if (r.right <= b.right + 1 && r.left >= b.left - 1) continue;
      decided = true;
      if (s.overflowX !== 'auto' && s.overflowX !== 'scroll') {
        problem = Math.round(r.right - b.right) + ' px cut by ' + e.tagName.toLowerCase()
                  + '.' + String(e.className).split(' ')[0];
      }
      break;
    }
    if (!decided && r.right > width + 1) problem = 'runs off the page';
    if (problem) {
      const section = m.closest('section');
      out.push((section ? section.id : '?') + ': ' + Math.round(r.width) + ' px wide, '
               + problem + ': ' + (m.textContent || '').slice(0, 40));
    }
  }
  return out;
}"""


# --------------------------------------------------------------------------------------
# The served site, Chromium, and browser contexts that stay on 127.0.0.1
# --------------------------------------------------------------------------------------


@contextmanager
def serve(html_build, directory: Path = HTML_DIR):
    """The built book served on 127.0.0.1 (a free port): yields its URL."""
    assert html_build.returncode == 0, (html_build.stdout + html_build.stderr)[
        -4000:
    ]
    with served(directory) as url:
        yield url


def require_chromium() -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium (make system-deps)"
        )


@contextmanager
def launch():
    """Headless Debian chromium: yields the browser."""
    require_chromium()
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()


@dataclass
class Visit:
    """What one page load recorded."""

    page: str
    console_errors: list = field(default_factory=list)
    page_errors: list = field(default_factory=list)
    external_requests: list = field(default_factory=list)
    broken_local: list = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    contrast: dict = field(default_factory=dict)
    figures: list = field(default_factory=list)
    toggles: list = field(default_factory=list)
    download_links: list = field(default_factory=list)
    notebook: object = None
    head: dict = field(default_factory=dict)
    dark_theme: str = ""
    screenshots: dict = field(default_factory=dict)
    wide_code: list = field(default_factory=list)
    wide_math: list = field(default_factory=list)
    # The page's dials moved (figure index -> None, or what went wrong).
    dials: dict = field(default_factory=dict)
    # At phone width: inline formulas found, and those clipped.
    inline_math: int = 0
    clipped_math: list = field(default_factory=list)
    # axe-core's violations per mode ("1280 light", "390 dark", ...), and
    # the page's layout on a phone (PHONE_LAYOUT).
    axe: dict = field(default_factory=dict)
    phone_layout: dict = field(default_factory=dict)
    # At 1280 px: boxes that scroll but no keyboard reaches (UNREACHABLE_SCROLL).
    unreachable_scroll: list = field(default_factory=list)
    # What a reader opens (folded cells, solutions), checked once open at
    # 1280 px in dark mode: {"blocks": how many, "unreachable": boxes that
    # scroll with no tab stop, "wide_code": code lines wider than their
    # box, "axe": axe-core's findings on the opened blocks}.
    opened: dict = field(default_factory=dict)


def _stay_local(context, base_url: str, recorder: Visit) -> None:
    """Let only requests to our server through; record and abort the rest."""
    local = urlsplit(base_url).netloc

    def guard(route):
        url = route.request.url
        if urlsplit(url).netloc == local:
            route.continue_()
        else:
            recorder.external_requests.append(url)
            route.abort()

    context.route("**/*", guard)


def new_context(browser, base_url: str, recorder: Visit):
    """A fresh browser context (light colour scheme) that only lets requests to our server through."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 900},
        accept_downloads=True,
        service_workers="block",
        color_scheme="light",
    )
    context.set_default_timeout(TIMEOUT_MS)
    _stay_local(context, base_url, recorder)
    return context


def phone_page(browser, site: str, recorder: Visit):
    """A phone's context (390 x 844, touch, scale 3) that stays on our server, and a tab in it."""
    context = browser.new_context(
        viewport=PHONE,
        device_scale_factor=3,
        is_mobile=True,
        has_touch=True,
        service_workers="block",
    )
    context.set_default_timeout(TIMEOUT_MS)
    _stay_local(context, site, recorder)
    return context, context.new_page()


def watch(page, recorder: Visit, base_url: str) -> None:
    """Record console errors, uncaught exceptions and failed requests to our server."""
    local = urlsplit(base_url).netloc

    def on_console(message):
        if message.type == "error":
            location = message.location or {}
            recorder.console_errors.append(
                f"{message.text} ({location.get('url', '?')}:{location.get('lineNumber', '?')})"
            )

    def on_response(response):
        if urlsplit(response.url).netloc == local and response.status >= 400:
            recorder.broken_local.append(
                f"HTTP {response.status} {response.url}"
            )

    def on_failed(request):
        if urlsplit(request.url).netloc == local:
            recorder.broken_local.append(f"{request.failure} {request.url}")

    page.on("console", on_console)
    page.on("pageerror", lambda error: recorder.page_errors.append(str(error)))
    page.on("response", on_response)
    page.on("requestfailed", on_failed)


# Full-page screenshots as JPEG: the tests read their brightness, which
# JPEG keeps, and a chapter as long as k-anonymity (about 51,000 px) is
# encoded in half the time of a PNG (2.2 s against 4.5 s, measured).
SCREENSHOT = {"full_page": True, "type": "jpeg", "quality": 60}
# The full-page screenshots are captured at half a pixel per CSS pixel
# (Chromium's own capture with a scaled clip): the page itself is laid out
# and painted as at 1:1, the image has a quarter of the pixels
# (k-anonymity's: 6.7-11 s of CPU at 1:1, 3.5 s at half, measured; the
# same median brightness).
SHOT_SCALE = 0.5


def capture(page, path: Path) -> None:
    """A full-page JPEG of `page` at SHOT_SCALE into `path`."""
    import base64

    width, height = page.evaluate(
        "[document.documentElement.scrollWidth,"
        " document.documentElement.scrollHeight]"
    )
    session = page.context.new_cdp_session(page)
    try:
        shot = session.send(
            "Page.captureScreenshot",
            {
                "format": "jpeg",
                "quality": SCREENSHOT["quality"],
                "captureBeyondViewport": True,
                "clip": {
                    "x": 0,
                    "y": 0,
                    "width": width,
                    "height": height,
                    "scale": SHOT_SCALE,
                },
            },
        )
    finally:
        session.detach()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def screenshot_path(page_name: str, mode: str) -> Path:
    """_build/screenshots/chapters__x-dark.jpg for page chapters/x in dark mode."""
    return SCREENSHOT_DIR / f"{page_name.replace('/', '__')}-{mode}.jpg"


# After the theme switch: every finite animation it started (its colour
# transitions) has ended, or 3 s have passed, and two frames are drawn.
SETTLED = """async () => {
  const finite = document.getAnimations().filter(a => {
    const timing = a.effect && a.effect.getComputedTiming();
    return timing && Number.isFinite(timing.endTime);
  });
  await Promise.race([
    Promise.all(finite.map(a => a.finished.catch(() => null))),
    new Promise(r => setTimeout(r, 3000)),
  ]);
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
}"""
DARK_MEDIAN = 80  # a dark page's median brightness is below this (0-255)


def mostly_dark(path: Path) -> bool:
    from PIL import Image, ImageStat

    grey = Image.open(path).convert("L")
    return ImageStat.Stat(grey).median[0] < DARK_MEDIAN


def switch_to_dark(page, theme: str = "dark") -> str:
    """Click the theme button like a reader until the page is dark (it cycles auto/dark/light),
    or `theme`; on a phone, the button that shows."""
    button = page.locator(".theme-switch-button:visible")
    for _ in range(3):
        if (
            page.evaluate("document.documentElement.dataset.theme") == theme
            or not button.count()
        ):
            break
        button.first.click()
    # The reader's pointer and focus move on: the button's tooltip, shown
    # on hover and focus, fades out (axe-core once caught it mid-fade in,
    # #595959 on #0d0d0d, on the intro in dark mode; SETTLED had run before
    # its transition began).
    page.mouse.move(0, 0)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    return page.evaluate("document.documentElement.dataset.theme") or ""


AXE_RUN = """async ([context, options]) => {
  const found = await axe.run(context || document, options);
  return found.violations.map(rule => rule.nodes.map(node => {
    const checks = [...node.any, ...node.all, ...node.none];
    return `${rule.id} (${rule.impact}): ${node.target.join(' ')}: `
        + (checks.length ? checks[0].message : rule.help);
  })).flat();
}"""


def axe_violations(page, mode: str) -> list[str]:
    """What axe-core finds on the page as it is shown now, in `mode`
    ("1280 light", "390 dark", ...: the rules of AXE_RUNS[mode]): one line
    per element, "rule (impact): element: what is wrong". axe-core is put
    into the page once (it stays there when the theme switches)."""
    from axe_playwright_python.sync_playwright import Axe

    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(Axe().axe_script)
    lines = []
    for context, options in AXE_RUNS[mode]:
        lines += page.evaluate(AXE_RUN, [context, options])
    if mode in CODE_CONTRAST_MODES:
        lines += code_contrast(page)[1]
    return lines


# Boxes of the article that scroll (overflow auto or scroll, their content
# larger than the box by any amount) but that a keyboard cannot reach: not
# focusable and holding nothing focusable (WCAG 2.1.1; stricter than
# axe-core's scrollable-region-focusable, which lets 13 px pass).
UNREACHABLE_SCROLL = r"""() => {
  const FOCUSABLE = 'a[href], button, input, select, textarea, summary, '
      + '[tabindex]:not([tabindex="-1"])';
  const out = [];
  for (const e of document.querySelectorAll('#main-content *')) {
    const s = getComputedStyle(e);
    const x = ['auto', 'scroll'].includes(s.overflowX) && e.scrollWidth > e.clientWidth;
    const y = ['auto', 'scroll'].includes(s.overflowY) && e.scrollHeight > e.clientHeight;
    if (!(x || y) || !e.checkVisibility({checkVisibilityCSS: true})) continue;
    if (e.tabIndex >= 0 || e.querySelector(FOCUSABLE)) continue;
    const section = e.closest('section');
    out.push((section ? section.id : '?') + ': ' + e.tagName.toLowerCase() + '.'
             + String(e.className).split(' ')[0] + ' scrolls by '
             + (e.scrollWidth - e.clientWidth) + ' x ' + (e.scrollHeight - e.clientHeight)
             + ' px: ' + e.textContent.trim().slice(0, 40));
  }
  return out;
}"""


# On a phone: how wide the page lays out (a page wider than the screen
# scrolls sideways), where the title ends, and inline code cut by its box
# (the "Run this chapter yourself" box clipped long file names).
PHONE_LAYOUT = (
    r"""() => {
  const h1 = [...document.querySelectorAll('#main-content h1')]
      .find(h => h.checkVisibility());
  const cut = [];
  for (const code of document.querySelectorAll('#main-content code.literal')) {
    if (!code.checkVisibility({checkVisibilityCSS: true})) continue;
    const box = code.closest('p, li, td, dd, .admonition');
    if (!box) continue;
    const limit = box.getBoundingClientRect().right;
    const right = Math.max(...[...code.getClientRects()].map(r => r.right));
    if (right > limit + 1) cut.push(Math.round(right - limit) + ' px: ' + code.textContent);
  }
  return {width: document.documentElement.scrollWidth,
          titleBottom: h1 ? Math.round(h1.getBoundingClientRect().bottom) : 0,
          titleSize: h1 ? parseFloat(getComputedStyle(h1).fontSize) : 0,
          cutCode: cut, unreachable: ("""
    + UNREACHABLE_SCROLL
    + """)()};
}"""
)


# Open every solution (sphinx-togglebutton's button) and folded cell, as a
# reader would, and wait out the fade-in.
OPEN_BLOCKS = r"""async () => {
  document.querySelectorAll('#main-content details.hide')
      .forEach(d => { d.open = true; });
  document.querySelectorAll('#main-content .solution .toggle-button')
      .forEach(b => {
        if (b.getAttribute('aria-expanded') !== 'true') b.click();
      });
  await new Promise(r => setTimeout(r, 600));
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  return document.querySelectorAll(
      '#main-content .solution, #main-content .cell > details.hide').length;
}"""
# Code (not output) in an opened block wider than its box, by its longest
# line.
WIDE_OPENED_CODE = r"""() => [...document.querySelectorAll(
    '#main-content .solution pre, #main-content details.hide pre')]
  .filter(p => !p.closest('.cell_output, .output') && p.checkVisibility()
               && p.scrollWidth > p.clientWidth + 1)
  .map(p => (p.scrollWidth - p.clientWidth) + ' px: ' + p.textContent
       .split('\n').reduce((a, b) => a.length >= b.length ? a : b, ''))"""


def visit_page(browser, base_url: str, page_name: str) -> Visit:
    """Open one page and record everything the per-page tests assert on."""
    recorder = Visit(page_name)
    context = new_context(browser, base_url, recorder)
    try:
        page = context.new_page()
        watch(page, recorder, base_url)
        page.goto(base_url + quote(f"{page_name}.html"), wait_until="load")
        page.evaluate(WAIT_FOR_RENDERING)
        recorder.facts = page.evaluate(COLLECT)
        recorder.head = page.evaluate(HEAD)
        recorder.axe["1280 light"] = axe_violations(page, "1280 light")
        recorder.unreachable_scroll = page.evaluate(UNREACHABLE_SCROLL)
        # Code and displayed math that do not fit the page at 1280 px.
        recorder.wide_code = page.locator("div.cell_input pre").evaluate_all(
            WIDE_CODE
        )
        recorder.wide_math = page.locator(
            "#main-content mjx-container[display='true']"
        ).evaluate_all(WIDE_MATH)
        recorder.screenshots["light"] = screenshot_path(page_name, "light")
        capture(page, recorder.screenshots["light"])

        # The download dropdown of the header: open it like a reader and read its links.
        toggle = page.locator(".dropdown-download-buttons > button")
        if toggle.count():
            toggle.first.click()
            links = page.locator(".dropdown-download-buttons .dropdown-menu a")
            try:
                links.first.wait_for(state="visible", timeout=5000)
            except sync_api.TimeoutError:
                pass  # recorded as not visible below
            recorder.download_links = links.evaluate_all(
                "links => links.map(a => ({href: a.href, text: a.textContent.trim(),"
                " visible: a.checkVisibility()}))"
            )
            page.keyboard.press("Escape")
            notebooks = [
                link["href"]
                for link in recorder.download_links
                if link["href"].endswith(".ipynb")
            ]
            if notebooks:
                recorder.notebook = page.evaluate(
                    "async url => { const r = await fetch(url); return {status: r.status, text: await r.text()}; }",
                    notebooks[0],
                )

        # Dark mode, switched with the theme button in the header.
        recorder.dark_theme = switch_to_dark(page)
        if recorder.dark_theme == "dark":
            page.evaluate(SETTLED)
            recorder.contrast = page.evaluate(TEXT_CONTRAST)
            recorder.axe["1280 dark"] = axe_violations(page, "1280 dark")
            recorder.figures = page.evaluate(FIGURE_BACKDROPS)
            recorder.screenshots["dark"] = screenshot_path(page_name, "dark")
            capture(page, recorder.screenshots["dark"])
            if not mostly_dark(recorder.screenshots["dark"]):
                # At one pixel per CSS pixel, a page as long as k-anonymity
                # (51,000 px) was sometimes captured half repainted right
                # after the switch; captured at SHOT_SCALE, 24 of the two
                # longest chapters after SETTLED were all dark, on an idle
                # and on a loaded machine. Should one not be, the page is
                # reloaded (it keeps its theme and paints dark from the
                # start) and captured again: a page that is not dark then
                # fails test_page_looks_like_a_page_in_both_modes.
                page.reload(wait_until="load")
                page.evaluate(WAIT_FOR_RENDERING)
                recorder.dark_theme = (
                    page.evaluate("document.documentElement.dataset.theme")
                    or ""
                )
                capture(page, recorder.screenshots["dark"])

        # Folded cells: each must start closed with its content hidden, and open on a click.
        # The first is clicked through the browser's input pipeline (hit-testing included);
        # the others get a DOM click, which runs the same <summary> activation, to save time.
        summaries = page.locator(FOLDED + " > summary")
        if summaries.count():
            before = page.evaluate(FOLD_STATE, FOLDED)
            summaries.first.click()
            page.evaluate(
                "sel => [...document.querySelectorAll(sel + ' > summary')].slice(1)"
                ".forEach(s => s.click())",
                FOLDED,
            )
            after = page.evaluate(FOLD_STATE, FOLDED)
            recorder.toggles = [
                {"cell": b["cell"], "before": b["state"], "after": a["state"]}
                for b, a in zip(before, after, strict=False)
            ]

        # Every solution and folded cell opened: what it reveals.
        blocks = page.evaluate(OPEN_BLOCKS)
        recorder.opened = {
            "blocks": blocks,
            "unreachable": page.evaluate(UNREACHABLE_SCROLL),
            "wide_code": page.evaluate(WIDE_OPENED_CODE),
            "axe": axe_violations(page, "opened") if blocks else [],
        }

        # Last, the page's dials, moved like a reader (their test reads it).
        exercise_dials(page, recorder, 1280)
    finally:
        context.close()
    return recorder


def phone_visit(browser, base_url: str, page_name: str) -> Visit:
    """Open one page on a phone (390 px, touch): its layout, inline math
    and axe-core's findings in light mode, axe-core's in dark mode, then
    its dials."""
    recorder = Visit(page_name)
    context, tab = phone_page(browser, base_url, recorder)
    try:
        watch(tab, recorder, base_url)
        tab.goto(base_url + quote(f"{page_name}.html"), wait_until="load")
        tab.evaluate(WAIT_FOR_RENDERING)
        recorder.clipped_math = tab.evaluate(CLIPPED_INLINE_MATH)
        recorder.inline_math = tab.locator(
            "#main-content mjx-container:not([display='true'])"
        ).count()
        recorder.phone_layout = tab.evaluate(PHONE_LAYOUT)
        recorder.axe["390 light"] = axe_violations(tab, "390 light")
        if switch_to_dark(tab) == "dark":
            tab.evaluate(SETTLED)
            recorder.axe["390 dark"] = axe_violations(tab, "390 dark")
        exercise_dials(tab, recorder, PHONE["width"])
    finally:
        context.close()
    return recorder


def axe_visit(browser, base_url: str, page_name: str) -> Visit:
    """The student edition's visit: axe-core's rules but the colour rules
    on one page at 1280 px in light mode (STUDENT_AXE), then the page's
    layout on a phone (390 x 844,
    touch: loaded there, as a phone loads it)."""
    recorder = Visit(page_name)
    url = base_url + quote(f"{page_name}.html")
    context = new_context(browser, base_url, recorder)
    try:
        page = context.new_page()
        watch(page, recorder, base_url)
        page.goto(url, wait_until="load")
        page.evaluate(WAIT_FOR_RENDERING)
        recorder.axe[STUDENT_AXE] = axe_violations(page, STUDENT_AXE)
    finally:
        context.close()
    # Loaded at 1280 px and then narrowed, a page's code cells scroll
    # sideways without the tab stop the theme gives them on a phone's load;
    # a phone loads it narrow.
    context, tab = phone_page(browser, base_url, recorder)
    try:
        watch(tab, recorder, base_url)
        tab.goto(url, wait_until="load")
        tab.evaluate(WAIT_FOR_RENDERING)
        recorder.phone_layout = tab.evaluate(PHONE_LAYOUT)
    finally:
        context.close()
    return recorder


def visit_all(base_url: str, pages: list[str], visit) -> dict:
    """visit(browser, base_url, page) for each of `pages`, with WORKERS browsers
    side by side (Playwright's sync API wants one instance per thread); a page
    whose visit raised maps to its exception."""
    require_chromium()
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    todo = queue.SimpleQueue()
    for name in pages:
        todo.put(name)
    results: dict = {}

    def worker():
        try:
            with launch() as chromium:
                while True:
                    try:
                        name = todo.get_nowait()
                    except queue.Empty:
                        return
                    try:
                        results[name] = visit(chromium, base_url, name)
                    except Exception as error:  # the page's tests raise it
                        results[name] = error
        except Exception as error:
            # The browser did not start: every page left fails with it.
            for name in pages:
                results.setdefault(name, error)

    threads = [
        threading.Thread(target=worker, daemon=True)
        for _ in range(min(WORKERS, len(pages)))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def portable(outcomes: dict) -> dict:
    """The visits as another pytest-xdist worker gets them (pickled): each
    exception with its traceback as a note, which pickling drops."""
    kept = {}
    for name, outcome in outcomes.items():
        if isinstance(outcome, Visit):
            outcome = Visit(
                **{**vars(outcome), "dials": portable(outcome.dials)}
            )
        elif isinstance(outcome, BaseException):
            outcome = _portable_error(outcome)
        kept[name] = outcome
    return kept


def _portable_error(error: BaseException) -> BaseException:
    import pickle  # noqa: PLC0415

    where = "".join(traceback.format_exception(error))
    try:
        copy = pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - an exception pickle cannot carry
        copy = RuntimeError(f"{type(error).__name__}: {error}")
    copy.add_note(f"raised in the worker that made the visit:\n{where}")
    return copy


def cached_visits(name: str, site: str, visit, pages: list[str]):
    """visit_one(page) -> Visit: `visit(browser, site, page)` for every
    page of `pages`, made once per test run on first use (the first to ask,
    test or pytest-xdist worker, visits every page and the others read what
    it recorded: once_per_run in tests/conftest.py); a page whose visit
    raised raises it again."""
    results: dict = {}

    def visit_one(page_name: str) -> Visit:
        if not results:
            results.update(
                once_per_run(
                    name, lambda: visit_all(site, pages, visit), portable
                )
            )
        outcome = results[page_name]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return visit_one

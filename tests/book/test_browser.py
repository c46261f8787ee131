"""The built HTML book, checked page by page in a real browser (Debian chromium via Playwright).

The site is served from _build/html on 127.0.0.1 by a fixture; every request that would
leave 127.0.0.1 is recorded and aborted, so the book must work offline (local MathJax).
Each page of _toc.yml is opened once at 1280 px: checked in light mode, then switched to
dark mode with the theme button of the header, like a reader would, and last its
interactive figures (dials) are moved; each chapter is opened once more on a phone (390 px,
touch) for its inline math and its dials. The tests below assert on what those visits
recorded, so a failure names the page and the check.
Full-page screenshots land in _build/screenshots/<page>-light.jpg and -dark.jpg.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import queue
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from playwright import sync_api  # noqa: E402  (pinned in requirements.txt; never skipped)

from conftest import BUILD_DIR, HTML_DIR, ROOT, toc_files

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
HIDE_TAGS = ("hide-input", "hide-output", "hide-cell")
DATA_FILE = "adult_with_pii.csv"
CSV_HEADER = "Name,DOB,SSN,Zip"
MIN_CONTRAST = 4.5  # WCAG AA for body text
TIMEOUT_MS = 20_000
# Pages are visited by this many browsers at once (one per core, at most two).
WORKERS = max(1, min(2, os.cpu_count() or 1))


# --------------------------------------------------------------------------------------
# JavaScript run inside the page
# --------------------------------------------------------------------------------------

# Waits until MathJax (if the page loads it) has typeset the page and the fonts are in.
WAIT_FOR_RENDERING = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  if (document.fonts) { await document.fonts.ready; }
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
  const unrendered = maths.filter(m => !m.querySelector('mjx-container'))
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
  const mathjax = performance.getEntriesByType('resource').map(e => e.name)
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


# --------------------------------------------------------------------------------------
# Fixtures: the served site, the browser, and one visit per page
# --------------------------------------------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - keep pytest output clean
        pass


@pytest.fixture(scope="module")
def site(html_build):
    """The built book served on 127.0.0.1 (a free port) for the whole module."""
    assert html_build.returncode == 0, (html_build.stdout + html_build.stderr)[
        -4000:
    ]
    handler = functools.partial(_QuietHandler, directory=str(HTML_DIR))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser():
    """Headless Debian chromium, for the tests that drive a page themselves (search, download)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium (make system-deps)"
        )
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


def new_context(browser, base_url: str, recorder: Visit):
    """A fresh browser context (light colour scheme) that only lets requests to our server through."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 900},
        accept_downloads=True,
        service_workers="block",
        color_scheme="light",
    )
    context.set_default_timeout(TIMEOUT_MS)
    local = urlsplit(base_url).netloc

    def guard(route):
        url = route.request.url
        if urlsplit(url).netloc == local:
            route.continue_()
        else:
            recorder.external_requests.append(url)
            route.abort()

    context.route("**/*", guard)
    return context


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


def switch_to_dark(page) -> str:
    """Click the theme button like a reader until the page is dark (it cycles auto/dark/light)."""
    button = page.locator(".theme-switch-button")
    for _ in range(3):
        if (
            page.evaluate("document.documentElement.dataset.theme") == "dark"
            or not button.count()
        ):
            break
        button.first.click()
    return page.evaluate("document.documentElement.dataset.theme") or ""


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

        # Last, the page's dials, moved like a reader (their test reads it).
        exercise_dials(page, recorder, 1280)
    finally:
        context.close()
    return recorder


def phone_visit(browser, base_url: str, page_name: str) -> Visit:
    """Open one chapter on a phone (390 px, touch): its inline math, then
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
        exercise_dials(tab, recorder, PHONE["width"])
    finally:
        context.close()
    return recorder


def _visit_all(base_url: str, pages: list[str], visit=visit_page) -> dict:
    """visit(browser, base_url, page) for each of `pages`, with WORKERS browsers
    side by side (Playwright's sync API wants one instance per thread); a page
    whose visit raised maps to its exception."""
    todo = queue.SimpleQueue()
    for name in pages:
        todo.put(name)
    results: dict = {}

    def worker():
        try:
            with sync_api.sync_playwright() as playwright:
                chromium = playwright.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
                )
                try:
                    while True:
                        try:
                            name = todo.get_nowait()
                        except queue.Empty:
                            return
                        try:
                            results[name] = visit(chromium, base_url, name)
                        except (
                            Exception
                        ) as error:  # reported by the tests of that page
                            results[name] = error
                finally:
                    chromium.close()
        except (
            Exception
        ) as error:  # the browser did not start: every page left fails with it
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


@pytest.fixture(scope="module")
def visits(site, browser):
    """visit(page) -> Visit; every page of the toc is visited once, on first use."""
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    results: dict = {}

    def visit(page_name: str) -> Visit:
        if not results:
            results.update(_visit_all(site, PAGES))
        outcome = results[page_name]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return visit


@pytest.fixture(scope="module")
def phone_visits(site):
    """phone_visit(page) -> Visit; every chapter is opened once on a phone,
    on first use."""
    results: dict = {}

    def visit(page_name: str) -> Visit:
        if not results:
            results.update(_visit_all(site, CHAPTERS, phone_visit))
        outcome = results[page_name]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return visit


# --------------------------------------------------------------------------------------
# Per-page checks
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES)
def test_page_loads_without_errors(visits, page):
    """No console error, uncaught exception or broken local resource, in light or dark mode.

    Nothing is ignored: an aborted request to another host also logs a console error
    here, on top of failing test_no_request_leaves_localhost.
    """
    seen = visits(page)
    problems = (
        [f"console: {text}" for text in seen.console_errors]
        + [f"page error: {text}" for text in seen.page_errors]
        + [f"broken: {text}" for text in seen.broken_local]
    )
    assert not problems, f"{page}:\n" + "\n".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_no_request_leaves_localhost(visits, page):
    outside = sorted(set(visits(page).external_requests))
    assert not outside, (
        f"{page} requested other hosts (the book must work offline): {outside}"
    )


# Unrendered TeX in running text: delimiters MathJax should have consumed, display $$,
# TeX commands, or an inline $...$ pair (TeX's rule: no space inside the dollars, and the
# closing one not followed by a digit, so "$5 and $10" is prose, not math).
RAW_TEX = [
    ("\\( or \\) delimiter", re.compile(r"\\[()]")),
    ("\\[ or \\] delimiter", re.compile(r"\\[\[\]]")),
    ("$$ display math", re.compile(r"\$\$")),
    ("TeX command", re.compile(r"\\(?:[A-Za-z]{2,}|[,;:!{}_^])")),
    (
        "inline $...$",
        re.compile(
            r"(?<![\\$\w])\$(?=[^\s$\d])[^$\n]*?(?<=[^\s$\\])\$(?![\d$])"
        ),
    ),
]


def find_raw_tex(lines: list[str]) -> list[str]:
    hits = []
    for line in lines:
        for name, pattern in RAW_TEX:
            for match in pattern.finditer(line):
                start = max(0, match.start() - 30)
                hits.append(f"{name}: ...{line[start : match.end() + 30]!r}")
    return hits


@pytest.mark.parametrize("page", PAGES)
def test_math_is_rendered(visits, page):
    facts = visits(page).facts
    raw = find_raw_tex(facts["lines"])
    assert not raw, f"{page}: unrendered TeX in the text:\n" + "\n".join(
        raw[:20]
    )
    if facts["math"]:
        assert facts["containers"] > 0, (
            f"{page}: {facts['math']} math elements but MathJax rendered none"
        )
        assert not facts["unrendered"], (
            f"{page}: math not typeset by MathJax: {facts['unrendered'][:10]}"
        )
    assert not facts["errors"], (
        f"{page}: MathJax errors: {facts['errors'][:10]}"
    )


def test_raw_tex_detector():
    """The detector behind test_math_is_rendered finds TeX and leaves prose with dollars alone."""
    assert find_raw_tex([r"where \(x\) is"]) and find_raw_tex([r"\[ x^2 \]"])
    assert find_raw_tex(["we have $\\varepsilon = 1$ here"]) and find_raw_tex(
        ["so $x$ and $y$"]
    )
    assert find_raw_tex(["$$a + b$$"]) and find_raw_tex(["noise \\frac{1}{2}"])
    assert find_raw_tex(["the $k$-anonymity of it"])
    assert not find_raw_tex(
        ["income above $50,000 (Target)", "costs $5 and $10 a day", "US$ 3"]
    )
    assert not find_raw_tex(
        ["a price of $5, or $5.50 in total", "C:/path and 50$"]
    )


# alt text that is just a file name (myst-nb's default for an output image) is not alt text.
FILE_NAME_ALT = re.compile(
    r"^\S*\.(?:png|jpe?g|gif|svg|webp)$|^\S*/\S*$", re.IGNORECASE
)


@pytest.mark.parametrize("page", PAGES)
def test_images_load_and_are_described(visits, page):
    problems = []
    for image in visits(page).facts["images"]:
        if not image["complete"] or image["width"] == 0:
            problems.append(f"not loaded: {image['src']}")
        described = image["alt"] and not FILE_NAME_ALT.match(image["alt"])
        if not described and not image["caption"]:
            problems.append(
                f"no alt text (alt={image['alt']!r}) and no figure caption: {image['src']}"
            )
    assert not problems, f"{page}:\n" + "\n".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_headings_are_in_order(visits, page):
    headings = visits(page).facts["headings"]
    levels = [h["level"] for h in headings]
    assert levels.count(1) == 1, (
        f"{page}: {levels.count(1)} <h1> elements: {headings}"
    )
    assert levels[0] == 1, (
        f"{page}: the first heading is not the <h1>: {headings[0]}"
    )
    skips = [
        (before, after)
        for before, after in zip(headings, headings[1:], strict=False)
        if after["level"] > before["level"] + 1
    ]
    assert not skips, f"{page}: heading levels skipped going down: {skips}"


def _source_hidden_cells(page_name: str) -> int:
    """Cells of the page's source that carry a hide-* tag."""
    notebook = ROOT / f"{page_name}.ipynb"
    if notebook.exists():
        cells = json.loads(notebook.read_text())["cells"]
        return sum(
            1
            for cell in cells
            if set(cell.get("metadata", {}).get("tags", [])) & set(HIDE_TAGS)
        )
    markdown = ROOT / f"{page_name}.md"
    if markdown.exists():
        return len(
            re.findall(
                r"^:tags:.*\bhide-(?:input|output|cell)\b",
                markdown.read_text(),
                re.MULTILINE,
            )
        )
    return 0


@pytest.mark.parametrize("page", PAGES)
def test_hidden_code_toggles_open(visits, page):
    toggles = visits(page).toggles
    expected = _source_hidden_cells(page)
    if not expected and not toggles:
        pytest.skip(f"{page} has no folded cells")
    assert len(toggles) == expected, (
        f"{page}: {expected} cells tagged {HIDE_TAGS} but {len(toggles)} folded toggles"
    )
    for toggle in toggles:
        assert (
            not toggle["before"]["open"] and not toggle["before"]["visible"]
        ), f"{page}: not folded at first: {toggle}"
        assert toggle["after"]["open"] and toggle["after"]["visible"], (
            f"{page}: a click did not open it: {toggle}"
        )
        if (
            "tag_hide-input" in toggle["cell"]
            or "tag_hide-cell" in toggle["cell"]
        ):
            assert toggle["after"]["code"], (
                f"{page}: opened, but its code is not visible: {toggle}"
            )


def test_book_has_folded_code(visits):
    """The intro promises setup cells folded away that open with a click: at least one exists."""
    folded = {page: len(visits(page).toggles) for page in PAGES}
    hide_input = sum(
        1
        for page in PAGES
        for t in visits(page).toggles
        if "tag_hide-input" in t["cell"]
    )
    assert hide_input > 0, (
        f"no page of the book has a folded (hide-input) code cell: {folded}"
    )


@pytest.mark.parametrize("page", CHAPTERS)
def test_chapter_offers_its_notebook_with_outputs(visits, page):
    seen = visits(page)
    notebooks = [
        link for link in seen.download_links if link["href"].endswith(".ipynb")
    ]
    assert notebooks, (
        f"{page}: no .ipynb link in the download menu: {seen.download_links}"
    )
    assert notebooks[0]["visible"], (
        f"{page}: the .ipynb link does not show when the menu is opened"
    )
    assert seen.notebook and seen.notebook["status"] == 200, (
        f"{page}: {notebooks[0]['href']} -> {seen.notebook}"
    )
    notebook = json.loads(seen.notebook["text"])
    code = [
        cell
        for cell in notebook.get("cells", [])
        if cell.get("cell_type") == "code"
    ]
    assert notebook.get("nbformat") == 4 and code, (
        f"{page}: the download is not a notebook with code cells"
    )
    with_outputs = [cell for cell in code if cell.get("outputs")]
    assert with_outputs, (
        f"{page}: the downloaded notebook has no stored outputs"
    )


def test_run_it_yourself_data_link_downloads_the_csv(site, browser):
    recorder = Visit(RUN_PAGE)
    context = new_context(browser, site, recorder)
    try:
        page = context.new_page()
        page.goto(site + quote(f"{RUN_PAGE}.html"), wait_until="load")
        link = page.locator(f"#main-content a[href$='{DATA_FILE}']")
        assert link.count(), f"{RUN_PAGE}: no link to {DATA_FILE}"
        with page.expect_download() as download_info:
            link.first.click()
        download = download_info.value
        assert download.suggested_filename == DATA_FILE
        with open(download.path(), encoding="utf-8") as handle:
            header = handle.readline()
    finally:
        context.close()
    assert header.startswith(CSV_HEADER), (
        f"downloaded {DATA_FILE} starts with {header[:80]!r}"
    )
    assert not recorder.external_requests, recorder.external_requests


def _title_word(page_name: str) -> str:
    """The longest word of the chapter's title: a term the search must find it by."""
    cells = json.loads((ROOT / f"{page_name}.ipynb").read_text())["cells"]
    for cell in cells:
        source = (
            "".join(cell["source"])
            if isinstance(cell["source"], list)
            else cell["source"]
        )
        match = re.search(r"^# (.+)$", source, re.MULTILINE)
        if cell["cell_type"] == "markdown" and match:
            return max(
                re.findall(r"[A-Za-z]+", match.group(1)), key=len
            ).lower()
    raise AssertionError(f"{page_name} has no '# title'")


def search(browser, site: str, term: str) -> list[str]:
    """Run the book's search page for `term` and return the result links."""
    recorder = Visit(f"search {term}")
    context = new_context(browser, site, recorder)
    try:
        page = context.new_page()
        watch(page, recorder, site)
        page.goto(site + "search.html?q=" + quote(term), wait_until="load")
        # The summary line is created empty and filled in when the last result is listed.
        page.wait_for_function(
            "() => { const s = document.querySelector('#search-results .search-summary');"
            " return s && s.textContent.trim().length > 0; }"
        )
        links = page.locator("#search-results ul.search li a").evaluate_all(
            "links => links.map(a => new URL(a.href).pathname)"
        )
    finally:
        context.close()
    # Console errors of search.html are those of every page (test_page_loads_without_errors).
    assert not recorder.external_requests, (
        f"search.html requested other hosts: {recorder.external_requests}"
    )
    return links


@pytest.mark.parametrize("page", CHAPTERS)
def test_search_finds_the_chapter(site, browser, page):
    term = _title_word(page)
    links = search(browser, site, term)
    assert f"/{page}.html" in links, (
        f"searching {term!r} did not list {page}: {links}"
    )


def test_search_finds_linkage(site, browser):
    """A term from the text (not a title) finds the chapters that use it, and only pages."""
    expected = [
        page
        for page in CHAPTERS
        if re.search(
            r"\blinkage\b",
            (HTML_DIR / f"{page}.html").read_text(),
            re.IGNORECASE,
        )
    ]
    if not expected:
        pytest.skip("no chapter mentions linkage yet")
    links = search(browser, site, "linkage")
    missing = [page for page in expected if f"/{page}.html" not in links]
    assert not missing, f"searching 'linkage' did not list {missing}: {links}"
    assert not search(browser, site, "xqzvwk"), "a nonsense word found results"


@pytest.mark.parametrize("page", PAGES)
def test_dark_mode_text_is_readable(visits, page):
    seen = visits(page)
    assert seen.dark_theme == "dark", (
        f"{page}: the theme button never made html[data-theme] dark ({seen.dark_theme!r})"
    )
    assert seen.contrast["checked"] > 0, f"{page}: no text found to check"
    low = seen.contrast["low"]
    assert not low, (
        f"{page}: text below {MIN_CONTRAST}:1 contrast in dark mode:\n"
        + "\n".join(map(str, low[:15]))
    )


@pytest.mark.parametrize("page", PAGES)
def test_dark_mode_figures_are_readable(visits, page):
    """An opaque figure looks as it does on white paper; a transparent one needs a light backdrop."""
    problems = []
    for figure in visits(page).figures:
        if figure["transparentShare"] < 0.01 or figure["ink"] is None:
            continue
        needed = min(MIN_CONTRAST, figure["contrastPaper"])
        if figure["contrastDark"] < needed:
            problems.append(
                f"{figure['src']}: ink {figure['ink']} on {figure['backdrop']} "
                f"has contrast {figure['contrastDark']:.2f} (< {needed:.2f})"
            )
    assert not problems, (
        f"{page}: transparent figures unreadable in dark mode:\n"
        + "\n".join(problems)
    )


# The longest chapter (the hardest page to repaint) and the first page.
LONGEST_CHAPTER = max(
    CHAPTERS, key=lambda page: (ROOT / f"{page}.ipynb").stat().st_size
)


@pytest.mark.parametrize("page_name", [INTRO, LONGEST_CHAPTER])
def test_dark_mode_survives_a_reload(site, browser, page_name):
    """The theme a reader picks is kept: loaded again after the switch, the
    page is dark from the start, and its text and look are checked there,
    as a returning reader sees it (the page visit checks every page right
    after the switch)."""
    recorder = Visit(page_name)
    context = new_context(browser, site, recorder)
    try:
        page = context.new_page()
        page.goto(site + quote(f"{page_name}.html"), wait_until="load")
        switched = switch_to_dark(page)
        page.reload(wait_until="load")
        page.evaluate(WAIT_FOR_RENDERING)
        theme = page.evaluate("document.documentElement.dataset.theme")
        contrast = page.evaluate(TEXT_CONTRAST)
        path = screenshot_path(page_name, "dark-reloaded")
        capture(page, path)
    finally:
        context.close()
    assert switched == "dark", switched
    assert theme == "dark", f"{page_name}: the theme was lost ({theme!r})"
    assert contrast["checked"] > 0 and not contrast["low"], contrast["low"][:5]
    assert mostly_dark(path), f"{page_name}: not dark after a reload"


@pytest.mark.parametrize("page", PAGES)
def test_page_looks_like_a_page_in_both_modes(visits, page):
    """What a reader sees: text on a light page, and on a dark one.

    The full-page screenshots must not be blank (some pixels differ from
    the background), the light one must be mostly light and the dark one
    mostly dark.
    """
    from PIL import Image, ImageStat

    brightness = {}
    for mode in ("light", "dark"):
        path = visits(page).screenshots.get(mode)
        assert path and path.exists(), f"{page}: no {mode} screenshot"
        grey = Image.open(path).convert("L")
        stats = ImageStat.Stat(grey)
        brightness[mode] = stats.median[0]
        assert stats.stddev[0] > 10, f"{page}: the {mode} page is blank"
    assert brightness["light"] > 200, f"{page}: light mode is not light"
    assert brightness["dark"] < DARK_MEDIAN, f"{page}: dark mode is not dark"


# --------------------------------------------------------------------------------------
# A reader on a phone (390 x 844, touch) and code that fits the page
# --------------------------------------------------------------------------------------

PHONE = {"width": 390, "height": 844}


def phone_page(browser, site: str, recorder: Visit):
    context = browser.new_context(
        viewport=PHONE, is_mobile=True, has_touch=True, service_workers="block"
    )
    context.set_default_timeout(TIMEOUT_MS)
    local = urlsplit(site).netloc
    context.route(
        "**/*",
        lambda route: (
            route.continue_()
            if urlsplit(route.request.url).netloc == local
            else (
                recorder.external_requests.append(route.request.url),
                route.abort(),
            )
        ),
    )
    return context, context.new_page()


def visible_count(page, selector: str) -> int:
    return page.locator(selector).evaluate_all(
        "els => els.filter(e => { const r = e.getBoundingClientRect();"
        " const s = getComputedStyle(e); return r.width > 0 && r.height > 0"
        " && s.visibility !== 'hidden' && s.display !== 'none'; }).length"
    )


def test_phone_reader_can_navigate(site, browser):
    """Open the menu, follow a link to another chapter, open its contents."""
    first, second = CHAPTERS[0], CHAPTERS[1]
    recorder = Visit("phone")
    context, page = phone_page(browser, site, recorder)
    try:
        watch(page, recorder, site)
        page.goto(site + quote(f"{first}.html"), wait_until="load")
        # The theme moves the menu into a modal dialog when it opens.
        target = second.split("/")[-1]
        link = page.locator(f"dialog[open] a[href$='{target}.html']")
        assert not link.count(), "the menu is open before it is asked for"
        toggles = page.locator("button.primary-toggle, label.primary-toggle")
        visible = [
            i for i in range(toggles.count()) if toggles.nth(i).is_visible()
        ]
        assert visible, "no visible menu button at phone width"
        toggles.nth(visible[0]).tap()
        link.first.wait_for(state="visible")
        link.first.tap()
        page.wait_for_url(f"**/{second}.html")
        contents = page.locator(
            "button.secondary-toggle, label.secondary-toggle"
        )
        shown = [
            i for i in range(contents.count()) if contents.nth(i).is_visible()
        ]
        assert shown, "no visible page-contents button at phone width"
        contents.nth(shown[0]).tap()
        toc_link = page.locator("dialog[open] nav a").first
        toc_link.wait_for(state="visible")
        search_boxes = visible_count(
            page, "input[type='search'], .search-button-field"
        )
        page.screenshot(path=str(SCREENSHOT_DIR / "phone-contents.png"))
    finally:
        context.close()
    assert search_boxes <= 1, (
        f"{search_boxes} search boxes show at phone width"
    )
    assert not recorder.page_errors, recorder.page_errors
    assert not recorder.external_requests, recorder.external_requests


@pytest.mark.parametrize("page", CHAPTERS)
def test_no_code_cell_scrolls_sideways(visits, page):
    """At 1280 px no code cell needs a sideways scroll (the page's visit)."""
    wide = visits(page).wide_code
    assert not wide, (
        f"{page}: {len(wide)} code cells scroll sideways, e.g. {wide[0]!r}"
    )


@pytest.mark.parametrize("page", CHAPTERS)
def test_display_math_fits_the_page(visits, page):
    """No displayed equation is clipped or scrolls at 1280 px."""
    wide = visits(page).wide_math
    assert not wide, (
        f"{page}: {len(wide)} equations too wide, e.g. {wide[0]!r}"
    )


# --------------------------------------------------------------------------------------
# A phone's head and network: one viewport, an icon, MathJax only with math,
# inline math that a reader can see to its end, no tooltip left by a tap
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES)
def test_one_viewport_tag(visits, page):
    """Sphinx, docutils and the theme each wrote one; a phone needs one."""
    count = visits(page).head["viewports"]
    assert count == 1, f"{page}: {count} <meta name='viewport'> tags"


@pytest.mark.parametrize("page", PAGES)
def test_page_has_an_icon(visits, page):
    """Without an icon link a browser asks for /favicon.ico, which is a 404."""
    icons = visits(page).head["icons"]
    assert icons, f"{page}: no <link rel='icon'>"
    for icon in icons:
        assert icon["status"] == 200 and icon["type"].startswith("image/"), (
            f"{page}: its icon {icon}"
        )


@pytest.mark.parametrize("page", PAGES)
def test_mathjax_only_where_there_is_math(visits, page):
    """A page loads MathJax if and only if it has math of its own."""
    seen = visits(page)
    if seen.facts["math"]:
        assert seen.head["mathjax"], f"{page} has math but loads no MathJax"
    else:
        assert not seen.head["mathjax"], (
            f"{page} has no math but loads {seen.head['mathjax'][:3]}"
        )


def test_mathjax_only_where_there_is_math_has_both_kinds(visits):
    """The intro has no math (its table of contents does: that is not its own)."""
    assert (
        not visits(INTRO).facts["math"] and not visits(INTRO).head["mathjax"]
    )
    assert visits(CHAPTERS[0]).facts["math"]
    assert visits(CHAPTERS[0]).head["mathjax"]


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


@pytest.mark.parametrize("page", CHAPTERS)
def test_inline_math_is_not_clipped_on_a_phone(phone_visits, page):
    """At 390 px, every inline formula fits its line or scrolls sideways."""
    visit = phone_visits(page)
    assert not visit.external_requests, visit.external_requests
    assert not visit.page_errors, visit.page_errors
    assert not visit.console_errors, visit.console_errors
    assert visit.inline_math, f"{page}: no inline math found to check"
    assert not visit.clipped_math, (
        f"{page}: {len(visit.clipped_math)} inline formulas clipped at 390 px:\n"
        + "\n".join(visit.clipped_math[:10])
    )


def test_no_tooltip_stays_after_a_tap(site, browser):
    """Tapping the colour-mode button switches the mode and leaves no tooltip."""
    recorder = Visit("phone tooltip")
    context, page = phone_page(browser, site, recorder)
    try:
        page.goto(site + quote(f"{CHAPTERS[0]}.html"), wait_until="load")
        button = page.locator(".theme-switch-button:visible")
        assert button.count(), "no visible colour-mode button at phone width"
        before = page.evaluate("document.documentElement.dataset.mode")
        button.first.tap()
        page.wait_for_timeout(800)
        after = page.evaluate("document.documentElement.dataset.mode")
        tooltips = page.evaluate(
            "[...document.querySelectorAll('.tooltip')]"
            ".filter(t => t.checkVisibility({checkOpacity: true,"
            " checkVisibilityCSS: true})).map(t => t.textContent)"
        )
    finally:
        context.close()
    assert before != after, f"the tap did not switch the mode ({before!r})"
    assert not tooltips, f"tooltips left on screen after a tap: {tooltips}"


# Every icon the page draws with the Font Awesome font, and the font it asks.
ICON_GLYPHS = r"""() => {
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    for (const pseudo of ['::before', '::after']) {
      const s = getComputedStyle(el, pseudo);
      if (!s.fontFamily.includes('Font Awesome')) continue;
      const content = s.content.replace(/^"|"$/g, '');
      if (!content || content === 'none' || content === 'normal') continue;
      out.push({family: s.fontFamily, weight: s.fontWeight,
                point: content.codePointAt(0), where: el.className.toString().slice(0, 50)});
    }
  }
  return out;
}"""


def _icon_font_points() -> dict[str, set[int]]:
    """{'solid' | 'regular' | 'brands': code points} of the fonts the site serves."""
    from fontTools.ttLib import TTFont

    css = (HTML_DIR / "_static/styles/pydata-sphinx-theme.css").read_text()
    fonts = {}
    for kind, name in [
        ("solid", "fa-solid-900"),
        ("regular", "fa-regular-400"),
        ("brands", "fa-brands-400"),
    ]:
        served = re.search(rf"webfonts/({name}\.woff2?)\)", css)
        assert served, f"the theme's stylesheet names no {name} font"
        font = TTFont(
            HTML_DIR / "_static/vendor/fontawesome/webfonts" / served[1]
        )
        fonts[kind] = set(font.getBestCmap() or {})
    return fonts


@pytest.mark.parametrize("width", [1280, 390])
def test_every_icon_is_in_the_served_font(site, browser, width):
    """The icon font is cut to the icons used: none the pages draw is missing."""
    fonts = _icon_font_points()
    missing = []
    for page_name in [INTRO, CHAPTERS[0], RUN_PAGE, "search"]:
        recorder = Visit(page_name)
        context = new_context(browser, site, recorder)
        try:
            tab = context.new_page()
            tab.set_viewport_size({"width": width, "height": 900})
            tab.goto(site + quote(f"{page_name}.html"), wait_until="load")
            icons = tab.evaluate(ICON_GLYPHS)
        finally:
            context.close()
        assert icons, f"{page_name}: no Font Awesome icon found to check"
        for icon in icons:
            kind = (
                "brands"
                if "Brands" in icon["family"]
                else ("solid" if int(icon["weight"]) >= 900 else "regular")
            )
            if icon["point"] not in fonts[kind]:
                missing.append(
                    f"{page_name}: U+{icon['point']:04X} ({kind}) for {icon['where']!r}"
                )
    assert not missing, "icons missing from the served font:\n" + "\n".join(
        sorted(set(missing))[:20]
    )


def test_figures_are_the_notebooks_pixel_for_pixel(site):
    """Figures are stored smaller (palette PNG or lossless WebP), never changed."""
    import numpy as np
    from PIL import Image

    source = BUILD_DIR / "jupyter_execute"
    shown = sorted(
        {
            match
            for page in HTML_DIR.rglob("*.html")
            for match in re.findall(
                r"_images/([0-9a-f]{64}\.(?:png|webp))", page.read_text()
            )
        }
    )
    assert shown, "no figure found in the pages"
    changed, compared = [], 0
    for name in shown:
        original = next(source.rglob(name.rsplit(".", 1)[0] + ".png"), None)
        if original is None:
            continue  # a figure that is not a notebook output
        compared += 1
        served = np.asarray(
            Image.open(HTML_DIR / "_images" / name).convert("RGBA")
        )
        if not np.array_equal(
            served, np.asarray(Image.open(original).convert("RGBA"))
        ):
            changed.append(name)
    assert not changed, (
        f"figures whose pixels differ from the notebook's: {changed}"
    )


# --------------------------------------------------------------------------------------
# Interactive figures (_ext/vega_figures.py): every dial of the book, one registry
# --------------------------------------------------------------------------------------
# A dial is one <figure class="vega-figure"> on a page. Its entry names its sliders
# (Vega signal -> the label a reader sees), the fields of the data rows it shows,
# and `expected(values)`: the rows the chapter's Python gives at those slider values
# (a closed form recomputed here, or the grid the chapter stored). The test moves
# every slider with the keyboard and compares what the Vega view holds with it.


@dataclass(frozen=True)
class Dial:
    page: str
    sliders: dict
    fields: tuple
    expected: object  # (values: dict) -> list of row dicts (the fields)
    texts: object = None  # (values: dict) -> strings the chart must show
    index: int = 0  # which figure of the page


def _laplace_rows(values):
    import numpy as np  # noqa: PLC0415
    from scipy import stats  # noqa: PLC0415

    epsilon = values["epsilon"]
    outputs = np.round(np.arange(-8, 7.01, 0.1), 1)
    on_d = stats.laplace.pdf(outputs, loc=0, scale=1 / epsilon)
    on_neighbour = stats.laplace.pdf(outputs, loc=-1, scale=1 / epsilon)
    return [
        {"output": x, "D": a, "neighbour": b, "log_ratio": np.log(a / b)}
        for x, a, b in zip(outputs, on_d, on_neighbour, strict=True)
    ]


def _laplace_texts(values):
    import numpy as np  # noqa: PLC0415

    epsilon = values["epsilon"]
    return [
        f"density ratio between {np.exp(-epsilon):.2f}"
        f" and {np.exp(epsilon):.2f}"
    ]


def _rr_posterior(prior, epsilon):
    """Bayes' rule for one randomized-response answer, truth probability p."""
    import numpy as np  # noqa: PLC0415

    p = np.tanh(epsilon / 2)
    yes_if_yes, yes_if_no = (1 + p) / 2, (1 - p) / 2
    after_yes = (
        prior * yes_if_yes / (prior * yes_if_yes + (1 - prior) * yes_if_no)
    )
    after_no = (
        prior
        * (1 - yes_if_yes)
        / (prior * (1 - yes_if_yes) + (1 - prior) * (1 - yes_if_no))
    )
    return after_yes, after_no


def _rr_rows(values):
    import numpy as np  # noqa: PLC0415

    priors = np.round(np.arange(0.005, 1, 0.005), 3)
    after_yes, after_no = _rr_posterior(priors, values["epsilon"])
    return [
        {"prior": q, "after_yes": y, "after_no": n}
        for q, y, n in zip(priors, after_yes, after_no, strict=True)
    ]


def _rr_texts(values):
    def percent(belief):  # a belief is never 0% or 100%
        if belief < 0.01:
            return "under 1%"
        return "over 99%" if belief > 0.99 else f"{belief:.0%}"

    prior = values["prior"]
    after_yes, after_no = _rr_posterior(prior, values["epsilon"])
    return [
        f"prior {prior:.0%}: a yes moves it to {percent(after_yes)},"
        f" a no to {percent(after_no)}"
    ]


def _stored_grid(chapter: str) -> list:
    """The data rows of the one Vega-Lite output the chapter stored."""
    spec = next(
        output["data"]["application/vnd.vegalite.v5+json"]
        for cell in json.loads(
            (ROOT / "chapters" / f"{chapter}.ipynb").read_text("utf-8")
        )["cells"]
        for output in cell.get("outputs", [])
        if "application/vnd.vegalite.v5+json" in output.get("data", {})
    )
    return max(spec["datasets"].values(), key=len)


def _composition_rows(values):
    """The three bounds at the slider's epsilon, recomputed from their closed
    forms (delta' = 1e-6) on the k values the chapter stored."""
    import math  # noqa: PLC0415

    log_term = math.log(1 / 1e-6)
    rows = []
    for row in _stored_grid("composition"):
        eps, k = row["epsilon"], row["k"]
        if abs(eps - values["epsilon"]) > 1e-9:
            continue
        spread = math.sqrt(2 * k * log_term) * eps
        rows.append(
            {
                "epsilon": eps,
                "k": k,
                "basic": k * eps,
                "advanced": spread + k * eps * (math.exp(eps) - 1),
                "kov": spread + k * eps * math.tanh(eps / 2),
            }
        )
    return rows


def _composition_texts(values):
    """First k where each bound beats k * eps: k > 2 ln(1/delta') /
    (2 - e^eps)^2 (advanced, never from eps = ln 2 on) and
    k > ln(1/delta') (e^eps + 1)^2 / 2 (Kairouz et al.)."""
    import math  # noqa: PLC0415

    eps, log_term = _composition_rows(values)[0]["epsilon"], math.log(1e6)
    advanced = (
        f"from k = {math.floor(2 * log_term / (2 - math.exp(eps)) ** 2) + 1:,}"
        if eps < math.log(2)
        else "never"
    )
    kov = math.floor(log_term * (math.exp(eps) + 1) ** 2 / 2) + 1
    return [f"below k ε: advanced {advanced}, Kairouz et al. from k = {kov:,}"]


def _oracle_rows(values):
    """The standard deviation of a rare value's count (true count near 0)
    among the book's n = 32,561 people: n q (1 - q) / (p - q)^2 with each
    oracle's (p, q), and the central Lap(2 / eps) for replace-one."""
    import numpy as np  # noqa: PLC0415

    n, e = 32_561, np.exp(values["epsilon"])
    rows = []
    for d in np.unique(np.round(np.geomspace(2, 1_000, 40))).astype(int):
        g = max(2, int(np.floor(e + 1 + 0.5)))  # Vega's round: half up
        p_q = {
            "GRR": (e / (e + d - 1), 1 / (e + d - 1)),
            "SUE": (np.sqrt(e) / (np.sqrt(e) + 1), 1 / (np.sqrt(e) + 1)),
            "OUE": (0.5, 1 / (e + 1)),
            "OLH": (e / (e + g - 1), 1 / g),
            "HR": (e / (e + 1), 0.5),
        }
        for p, q in p_q.values():
            rows.append({"d": d, "sd": np.sqrt(n * q * (1 - q)) / (p - q)})
        rows.append({"d": d, "sd": np.sqrt(8) / values["epsilon"]})
    return rows


def _range_rows(values):
    """RMSE / epsilon for each range length. The identity line is the
    closed form sqrt(2 L) (L ages, each with Lap(1) noise at eps = 1,
    rounded as stored); the tree lines, exact variances the chapter's
    tests hold, are read from the stored spec."""
    import math  # noqa: PLC0415

    rows = []
    for row in _stored_grid("many-queries"):
        at_one = row["rmse_at_1"]
        if row["strategy"].startswith("identity"):
            assert at_one == round(math.sqrt(2 * row["length"]), 3), row
        rows.append(
            {"length": row["length"], "rmse": at_one / values["epsilon"]}
        )
    return rows


def _continual_rows(values):
    """Each design's error sd by day at epsilon 1, from the closed forms:
    fresh sqrt(2) T, increments sqrt(2 t), tree L sqrt(2 popcount(t)),
    optimal L sqrt(2 sum of 2^j / (2^(j+1) - 1) over the 1-bits j of t)."""
    import numpy as np  # noqa: PLC0415

    horizon = int(round(values["horizon"]))
    levels = horizon.bit_length()
    rows = []
    for day in range(1, horizon + 1):
        bits = [j for j in range(levels) if day >> j & 1]
        weight = sum(2**j / (2 ** (j + 1) - 1) for j in bits)
        rows.append(
            {
                "day": day,
                "fresh": np.sqrt(2) * horizon,
                "increments": np.sqrt(2 * day),
                "tree": levels * np.sqrt(2 * len(bits)),
                "tree_optimal": levels * np.sqrt(2 * weight),
            }
        )
    return rows


def _continual_texts(values):
    last = _continual_rows(values)[-1]
    return [
        f"day {last['day']}: fresh {last['fresh']:.1f}, increments"
        f" {last['increments']:.1f}, tree {last['tree']:.1f}, optimal"
        f" {last['tree_optimal']:.1f}"
    ]


def _gaussian_rows(values):
    """Classical and analytic sigma (sensitivity 1) at the chosen delta,
    for every epsilon of the stored grid: Dwork and Roth's formula, and
    the root of Balle and Wang's exact delta, found here."""
    import numpy as np  # noqa: PLC0415
    from scipy.optimize import brentq  # noqa: PLC0415
    from scipy.stats import norm  # noqa: PLC0415

    exponent = values["log10_delta"]
    delta = 10.0**exponent
    epsilons = sorted(
        {row["epsilon"] for row in _stored_grid("gaussian-and-accounting")}
    )

    def excess(sigma, epsilon):
        a, b = 1 / (2 * sigma), epsilon * sigma
        return norm.cdf(a - b) - np.exp(epsilon) * norm.cdf(-a - b) - delta

    return [
        {
            "epsilon": epsilon,
            "log10_delta": exponent,
            "classical": np.sqrt(2 * np.log(1.25 / delta)) / epsilon,
            "analytic": brentq(
                excess, 1e-3, 1e4, args=(epsilon,), xtol=1e-15, rtol=1e-15
            ),
        }
        for epsilon in epsilons
    ]


def _gaussian_texts(values):
    (row,) = [
        r
        for r in _gaussian_rows(values)
        if abs(r["epsilon"] - values["epsilon"]) < 1e-9
    ]
    first = (
        f"ε = {row['epsilon']:.2f}, δ = 1e{int(values['log10_delta'])}:"
        f" analytic σ (solid) = {row['analytic']:.2f}"
    )
    if row["epsilon"] >= 1:
        return [first, "classical formula: proved only for ε < 1"]
    ratio = row["classical"] / row["analytic"]
    return [
        first,
        f"classical σ (dashed) = {row['classical']:.2f},"
        f" {ratio:.2f} times as much",
    ]


def _selection_rows(values):
    """Exponential-mechanism probabilities of the stored occupation
    counts (sensitivity 1), computed here with the shift by the maximum."""
    import numpy as np  # noqa: PLC0415

    rows = _stored_grid("private-selection")
    counts = np.array([row["count"] for row in rows], dtype=float)
    weights = np.exp(values["epsilon"] * (counts - counts.max()) / 2)
    return [
        {"count": c, "probability": w / weights.sum()}
        for c, w in zip(counts, weights, strict=True)
    ]


def _selection_texts(values):
    top = max(_stored_grid("private-selection"), key=lambda r: r["count"])
    (best, *_) = sorted(
        _selection_rows(values), key=lambda r: -r["probability"]
    )
    return [
        f"ε = {values['epsilon']:.3f}: {top['candidate']} is chosen with"
        f" probability {best['probability']:.1%}"
    ]


def _release_rows(values):
    return [
        row
        for row in _stored_grid("k-anonymity")
        if row["k"] == round(values["k"])
    ]


def _release_texts(values):
    (row,) = _release_rows(values)
    return [
        f"k = {row['k']}: the best release publishes {row['classes']:,}"
        " classes",
        f"intervals: age {row['age_width']} years, education"
        f" {row['edu_width']} levels, ZIP {row['zip_width']:,} codes",
        f"{row['suppressed']:,} rows suppressed; {row['loss']:.1%} of the"
        " precision lost",
    ]


def _stats_rows(values):
    return [
        row
        for row in _stored_grid("dp-statistics")
        if abs(row["epsilon"] - values["epsilon"]) < 1e-9
    ]


def _stats_texts(values):
    (row,) = [r for r in _stats_rows(values) if r["n"] == 1000]
    return [
        f"n = 1,000: the naive interval covers {row['naive_coverage']:.1%}"
    ]


def _deploy_row(values):
    """The dial's point in chapters/deploying-dp: closed forms at epsilon."""
    import numpy as np  # noqa: PLC0415

    epsilon, beta, prior = values["epsilon"], 0.05, 0.25
    error = max(
        0.0,
        np.ceil(np.log(2 / (beta * (1 + np.exp(-epsilon)))) / epsilon - 1),
    )
    odds = prior / (1 - prior) * np.exp(2 * epsilon)
    return {"epsilon": epsilon, "error": error, "posterior": odds / (1 + odds)}


def _deploy_rows(values):
    return [_deploy_row(values)]


def _deploy_texts(values):
    row = _deploy_row(values)
    return [
        f"ε = {row['epsilon']:.2f}: counts within ±{int(row['error'])}"
        f" (95%); a 25% suspicion can reach {row['posterior']:.0%}"
    ]


def _error_rows(values):
    """The tail of the planar Laplace radius, Gamma(2, 1/epsilon) per km,
    from scipy on the distances the chapter stored."""
    from scipy import stats  # noqa: PLC0415

    law = stats.gamma(a=2, scale=1 / values["epsilon"])
    return [
        {"distance_km": d, "beyond": float(law.sf(d))}
        for d in (
            row["distance_km"] for row in _stored_grid("location-privacy")
        )
    ]


def _error_texts(values):
    from scipy import stats  # noqa: PLC0415

    epsilon = values["epsilon"]
    far = stats.gamma(a=2, scale=1 / epsilon).sf(1.0)
    return [
        f"ε = {epsilon:.1f} per km: mean error {2000 / epsilon:,.0f} m",
        f"{far:.1%} of reports farther than 1 km",
    ]


def _stored_glue(chapter: str, name: str) -> str:
    """The text a chapter stored for its glued value `name`."""
    for cell in json.loads(
        (ROOT / "chapters" / f"{chapter}.ipynb").read_text("utf-8")
    )["cells"]:
        for output in cell.get("outputs", []):
            if (
                output.get("metadata", {}).get("scrapbook", {}).get("name")
                == name
            ):
                text = output["data"][
                    "application/papermill.record/text/plain"
                ]
                return "".join(text) if isinstance(text, list) else text
    raise KeyError(name)


def _partition_threshold(epsilon, delta, k):
    """Smallest whole T >= 2 with Pr[1 + Z >= T] = a^(T-1) / (1 + a) at
    most delta / k, for two-sided geometric Z, a = exp(-epsilon / k)."""
    import math  # noqa: PLC0415

    alpha = math.exp(-epsilon / k)
    t = 2
    while alpha ** (t - 1) / (1 + alpha) > delta / k:
        t += 1
    return t


def _partition_probability(n, t, epsilon, k):
    """Pr[n + Z >= t]: Pr[Z >= j] = a^j / (1 + a) for j >= 1."""
    import math  # noqa: PLC0415

    alpha = math.exp(-epsilon / k)
    gap = t - n
    if gap >= 1:
        return alpha**gap / (1 + alpha)
    return 1 - alpha ** (1 - gap) / (1 + alpha)


def _partition_rows(values):
    """Release probability on the stored grid of shop sizes, at the
    threshold found here by search (k as the chapter glued it)."""
    k = int(_stored_glue("dp-at-scale", "scale_k"))
    epsilon, delta = values["epsilon"], 10.0 ** values["log10_delta"]
    t = _partition_threshold(epsilon, delta, k)
    (spec_rows,) = [
        rows
        for rows in _stored_datasets("dp-at-scale")
        if rows and "n" in rows[0]
    ]
    return [
        {
            "n": r["n"],
            "probability": _partition_probability(r["n"], t, epsilon, k),
        }
        for r in spec_rows
    ]


def _partition_texts(values):
    k = int(_stored_glue("dp-at-scale", "scale_k"))
    epsilon, log10_delta = values["epsilon"], round(values["log10_delta"])
    t = _partition_threshold(epsilon, 10.0**log10_delta, k)
    (shops,) = [
        rows
        for rows in _stored_datasets("dp-at-scale")
        if rows and "shops" in rows[0]
    ]
    expected = sum(
        r["shops"] * _partition_probability(r["people"], t, epsilon, k)
        for r in shops
    )
    total = sum(r["shops"] for r in shops)
    return [
        f"ε = {epsilon:.2f}, δ = 1e{log10_delta}: threshold {t} people",
        f"{expected:.1f} of {total} shops expected in the list",
    ]


def _stored_datasets(chapter: str) -> list:
    """Every dataset of the one Vega-Lite output the chapter stored."""
    spec = next(
        output["data"]["application/vnd.vegalite.v5+json"]
        for cell in json.loads(
            (ROOT / "chapters" / f"{chapter}.ipynb").read_text("utf-8")
        )["cells"]
        for output in cell.get("outputs", [])
        if "application/vnd.vegalite.v5+json" in output.get("data", {})
    )
    return list(spec["datasets"].values())


DIALS = [
    Dial(
        "chapters/differential-privacy",
        {"epsilon": "privacy parameter ε"},
        ("output", "D", "neighbour", "log_ratio"),
        _laplace_rows,
        _laplace_texts,
    ),
    Dial(
        "chapters/randomized-response",
        {"prior": "attacker's prior", "epsilon": "privacy parameter ε"},
        ("prior", "after_yes", "after_no"),
        _rr_rows,
        _rr_texts,
    ),
    Dial(
        "chapters/composition",
        {"epsilon": "ε of each release"},
        ("epsilon", "k", "basic", "advanced", "kov"),
        _composition_rows,
        _composition_texts,
    ),
    Dial(
        "chapters/local-dp",
        {"epsilon": "privacy parameter ε"},
        ("d", "sd"),
        _oracle_rows,
    ),
    Dial(
        "chapters/many-queries",
        {"epsilon": "privacy parameter ε"},
        ("length", "rmse"),
        _range_rows,
    ),
    Dial(
        "chapters/continual-release",
        {"horizon": "horizon T (days)"},
        ("day", "fresh", "increments", "tree", "tree_optimal"),
        _continual_rows,
        _continual_texts,
    ),
    Dial(
        "chapters/gaussian-and-accounting",
        {"epsilon": "privacy parameter ε", "log10_delta": "log₁₀ δ"},
        ("epsilon", "log10_delta", "classical", "analytic"),
        _gaussian_rows,
        _gaussian_texts,
    ),
    Dial(
        "chapters/private-selection",
        {"epsilon": "privacy parameter ε"},
        ("count", "probability"),
        _selection_rows,
        _selection_texts,
    ),
    Dial(
        "chapters/k-anonymity",
        {"k": "k"},
        (
            "k",
            "age_width",
            "edu_width",
            "zip_width",
            "loss",
            "suppressed",
            "classes",
        ),
        _release_rows,
        _release_texts,
    ),
    Dial(
        "chapters/dp-statistics",
        {"epsilon": "privacy parameter ε"},
        ("epsilon", "n", "naive_coverage", "width_ratio"),
        _stats_rows,
        _stats_texts,
    ),
    Dial(
        "chapters/deploying-dp",
        {"epsilon": "total ε of the release"},
        ("epsilon", "error", "posterior"),
        _deploy_rows,
        _deploy_texts,
    ),
    Dial(
        "chapters/location-privacy",
        {"epsilon": "privacy parameter ε per km"},
        ("distance_km", "beyond"),
        _error_rows,
        _error_texts,
    ),
    Dial(
        "chapters/dp-at-scale",
        {"epsilon": "privacy parameter ε", "log10_delta": "log₁₀ δ"},
        ("n", "probability"),
        _partition_rows,
        _partition_texts,
    ),
]
DIAL_PAGE = DIALS[0].page
NO_DIAL_PAGE = "chapters/deidentification"

# What figure number `index` shows now: its signals, the rows of each dataset
# that carry every one of `fields`, its texts and its size.
DIAL_STATE = r"""([index, signals, fields]) => {
  const figure = document.querySelectorAll('figure.vega-figure')[index];
  const view = (window.bookVegaViews || {})[figure.id];
  if (!view || view === 'drawing') return {ready: false};
  const datasets = [];
  const walk = state => {
    for (const name of Object.keys(state.data || {})) {
      let values;
      try { values = view.data(name); } catch (error) { continue; }
      const rows = (values || []).filter(r => fields.every(f => f in r))
        .map(r => Object.fromEntries(fields.map(f => [f, r[f]])));
      if (rows.length) datasets.push(rows);
    }
    for (const sub of Object.values(state.subcontext || {})) walk(sub);
  };
  walk(view.getState({data: () => true, signals: () => false, recurse: true}));
  const svg = figure.querySelector('svg');
  const labelled = figure.querySelector('[aria-label]');
  return {ready: true,
          values: Object.fromEntries(signals.map(s => [s, view.signal(s)])),
          datasets,
          texts: [...figure.querySelectorAll('svg text')].map(t => t.textContent),
          shown: [...figure.querySelectorAll("input[type='range']")].map(
            i => [i.getAttribute('step'), i.nextElementSibling.textContent]),
          figureCount: document.querySelectorAll('figure.vega-figure').length,
          svgWidth: svg ? svg.getBoundingClientRect().width : 0,
          pageWidth: document.documentElement.clientWidth,
          label: labelled ? labelled.getAttribute('aria-label') : null,
          caption: figure.querySelector('figcaption').textContent.trim()};
}"""


def _same_rows(shown: list, expected: list, fields: tuple) -> bool:
    """Equal as sets of rows (a fold repeats rows), to 1e-9 relative."""
    import numpy as np  # noqa: PLC0415

    def table(rows):
        unique = {tuple(float(row[f]) for f in fields) for row in rows}
        return np.array(sorted(unique))

    a, b = table(shown), table(expected)
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-9, atol=1e-12)


def _check_dial(dial: Dial, state: dict, values: dict) -> None:
    assert state["ready"], state
    for name, value in values.items():
        assert state["values"][name] == pytest.approx(value), state["values"]
    expected = dial.expected(values)
    assert expected, f"{dial.page}: nothing expected at {values}"
    assert any(
        _same_rows(rows, expected, dial.fields) for rows in state["datasets"]
    ), f"{dial.page} at {values}: no data of the figure equals the chapter's"
    for text in dial.texts(values) if dial.texts else []:
        assert text in state["texts"], (text, state["texts"])
    for step, shown in state["shown"]:
        places = len(step.split(".")[1]) if "." in step else 0
        assert shown == f"{float(shown):.{places}f}", (step, shown)


def exercise_dial(tab, dial: Dial, width: int) -> None:
    """Move each slider of `dial` on the open page `tab` (a viewport `width`
    px wide) with the arrow keys; at every position, what the figure shows
    must be what the chapter's Python gives (an AssertionError says what
    differs), and the chart fits the page, which fits the viewport."""
    signals, fields = list(dial.sliders), list(dial.fields)
    figure = tab.locator("figure.vega-figure").nth(dial.index)
    # The runtime is fetched when the figure comes near the screen.
    figure.scroll_into_view_if_needed()
    figure.locator("svg").wait_for()
    tab.wait_for_function(
        "i => document.querySelectorAll('figure.vega-figure')[i]"
        ".classList.contains('vega-figure-ready')",
        arg=dial.index,
    )
    sliders = {
        s: figure.get_by_role("slider", name=dial.sliders[s]) for s in signals
    }
    values = {s: float(sliders[s].input_value()) for s in signals}
    state = tab.evaluate(DIAL_STATE, [dial.index, signals, fields])
    _check_dial(dial, state, values)
    for signal, slider in sliders.items():
        assert slider.get_attribute("type") == "range"
        seen = {values[signal]}
        # Five steps away from the start and three back: towards the
        # end with more room, so that both moves land on new values.
        room_up = float(slider.get_attribute("max")) - values[signal]
        room_down = values[signal] - float(slider.get_attribute("min"))
        moves = [("ArrowRight", 5), ("ArrowLeft", 3)]
        if room_down > room_up:
            moves = [("ArrowLeft", 5), ("ArrowRight", 3)]
        for key, presses in moves:
            slider.focus()
            for _ in range(presses):
                slider.press(key)
            tab.wait_for_timeout(200)
            values[signal] = float(slider.input_value())
            seen.add(values[signal])
            state = tab.evaluate(DIAL_STATE, [dial.index, signals, fields])
            _check_dial(dial, state, values)
        assert len(seen) == 3, (signal, seen)
    assert state["label"], "the chart has no text alternative"
    assert "slider" in state["caption"].lower(), state["caption"]
    assert state["svgWidth"] <= state["pageWidth"] <= width, state


def exercise_dials(tab, recorder: Visit, width: int) -> None:
    """Exercise every dial of the page `recorder` visits; record for each
    figure None, or the error it raised (its test raises it again)."""
    for dial in DIALS:
        if dial.page != recorder.page:
            continue
        try:
            exercise_dial(tab, dial, width)
        except Exception as error:  # noqa: BLE001 - reported by its test
            recorder.dials[dial.index] = error
        else:
            recorder.dials[dial.index] = None


@pytest.mark.parametrize("width", [1280, PHONE["width"]])
@pytest.mark.parametrize(
    "dial", DIALS, ids=[f"{d.page.split('/')[-1]}-{d.index}" for d in DIALS]
)
def test_dial_moves_with_its_sliders(visits, phone_visits, dial, width):
    """Each slider, found by its label, moves with the arrow keys; at every
    position what the figure shows is what the chapter's Python gives. At
    1280 px the page's visit moves them, last (in dark mode, folds open: no
    dial sits in a fold, and a figure added to one would still fail on the
    phone, where the folds stay closed); at 390 px the chapter's visit on a
    phone (touch, the viewport tag honoured) moves them."""
    visit = (visits if width == 1280 else phone_visits)(dial.page)
    assert dial.index in visit.dials, f"{dial.page}: figure not exercised"
    error = visit.dials[dial.index]
    if error is not None:
        raise error
    assert not visit.external_requests, visit.external_requests
    assert not visit.page_errors, visit.page_errors
    assert not visit.console_errors, visit.console_errors


def test_every_dial_is_in_the_registry(site):
    """A page's interactive figures are exactly the registry's: a new dial
    cannot go untested."""
    found = {}
    for path in sorted((HTML_DIR / "chapters").glob("*.html")):
        count = path.read_text("utf-8").count('<figure class="vega-figure"')
        if count:
            found[f"chapters/{path.stem}"] = count
    registered = {}
    for dial in DIALS:
        registered[dial.page] = max(
            registered.get(dial.page, 0), dial.index + 1
        )
    assert found == registered, (found, registered)


def test_dial_scripts_load_only_where_there_is_a_figure(site, browser):
    """The small drawer loads only on a page with a figure, and the large
    runtime only once the reader scrolls near the figure."""
    fetched = (
        "() => performance.getEntriesByType('resource')"
        ".map(e => e.name).filter(n => n.includes('vega-figures/'))"
    )
    loaded = {}
    recorder = Visit("vega")
    context = new_context(browser, site, recorder)
    try:
        tab = context.new_page()
        tab.set_viewport_size({"width": 1280, "height": 900})
        for page in (DIAL_PAGE, NO_DIAL_PAGE, INTRO):
            tab.goto(site + quote(f"{page}.html"), wait_until="load")
            tab.wait_for_timeout(300)
            loaded[page] = tab.evaluate(fetched)
            if page == DIAL_PAGE:
                tab.locator("figure.vega-figure").scroll_into_view_if_needed()
                tab.wait_for_selector("figure.vega-figure-ready svg")
                loaded["after scrolling"] = tab.evaluate(fetched)
    finally:
        context.close()
    assert [n.rsplit("/", 1)[-1].split("?")[0] for n in loaded[DIAL_PAGE]] == [
        "draw.js"
    ], loaded
    assert len(loaded["after scrolling"]) == 2, loaded
    assert not loaded[NO_DIAL_PAGE], loaded
    assert not loaded[INTRO], loaded
    assert not recorder.external_requests, recorder.external_requests

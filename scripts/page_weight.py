#!/usr/bin/env python3
"""Measure what a reader's browser downloads to read the built book.

Usage: python scripts/page_weight.py [--html DIR] [--slow-4g] [--cpu N]
                                     [--phone] [FIRST [FURTHER ...]]

FIRST (default: the first chapter of _toc.yml) is opened with an empty
cache, as the first page a reader opens; then each FURTHER page (default:
every other chapter) is opened after FIRST in the same browser, with the
cache FIRST left behind: only what that page adds is downloaded. Pages are
named as in the site (chapters/k-anonymity.html).

The site is served from _build/html on 127.0.0.1 with a cache lifetime of
an hour (as a host serving a static site would), and opened in headless
Chromium at 1280 x 900. Bytes are counted as served (raw) and as a host
that gzips text would send them (figures and fonts are already
compressed). Chromium's own network log says which responses came from
its cache. Reported, not asserted; the goal (issue 27): the first chapter
under 600 KB gzipped, a further chapter under 200 KB of new gzipped bytes.

With --slow-4g each FURTHER page is opened over an emulated slow 4G link
(Chromium's network emulation: 1.6 Mbps down, 750 kbps up, 150 ms round
trip; issue 45's goal: readable in under 3 s) and the time it took to be
readable is reported: from the start of its navigation until its first
screen shows its text and formulas in their final layout (its text
parsed, every formula that meets the first screen typeset, the fonts
they draw with arrived: READABLE below), with how many of the page's
formulas were typeset by then. (A dial draws later, when it comes near
the screen: _ext/vega-figures.js.) With --cpu N the further page runs
on a CPU N times slower than this machine's (Chromium's CPU throttling;
Lighthouse's phone preset slows by 4); with --phone, every page is
opened on a phone's screen (390 x 844, touch, 3 device pixels per CSS
pixel) instead of 1280 x 900.
"""

from __future__ import annotations

import gzip
import http.server
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import yaml
from playwright import sync_api

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_server import served  # noqa: E402  (scripts/local_server.py)

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CHROMIUM = "/usr/bin/chromium"
TEXT_TYPES = (".html", ".css", ".js", ".svg", ".json", ".txt")
# Every formula of the page typeset and its fonts in. MathJax typesets the
# first screen first, then the rest while the browser is idle
# (_ext/mathjax-first-screen.js); here, once the page is readable, the rest
# at once: the same formulas, the same fonts downloaded.
RENDERED = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  if (window.bookTypesetAllMath) { await window.bookTypesetAllMath(); }
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  if (document.fonts) { await document.fonts.ready; }
}"""
FIRST_GOAL_KB = 600
FURTHER_GOAL_KB = 200
SLOW_4G = {
    "offline": False,
    "latency": 150,
    "downloadThroughput": 1.6e6 / 8,
    "uploadThroughput": 750e3 / 8,
}
READABLE_GOAL_S = 3.0
DESKTOP = {"viewport": {"width": 1280, "height": 900}}
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 3,
    "is_mobile": True,
    "has_touch": True,
}
RUNTIME = "vega-figures/vega.min.js"
# Set in every page before its own scripts: when it became readable, that
# is when its first screen shows its text and its formulas in their final
# layout. After the DOM is parsed and MathJax's first pass is done, it
# waits, frame by frame, until no formula that meets the first screen is
# still its TeX source or a placeholder of MathJax's lazy typesetting
# (ui/lazy typesets a formula when it nears the screen), and until every
# font the browser asked for has arrived (MathJax draws its glyphs with
# web fonts: without them a formula is blank). Two frames between checks:
# a font is asked for only once a frame has laid out the text that needs
# it. Also recorded: how many formulas the page had typeset by then, of
# how many.
READABLE = """window.bookReadable = new Promise(resolve => {
  const frames = () => new Promise(r =>
      requestAnimationFrame(() => requestAnimationFrame(r)));
  const meetsScreen = e => {
    if (!e.getClientRects().length) return false;  // hidden (folded)
    const r = e.getBoundingClientRect();
    return r.bottom >= 0 && r.top <= innerHeight;
  };
  const unready = () => [
    ...[...document.querySelectorAll('span.math, div.math')]
        .filter(e => !e.querySelector('mjx-container')),
    ...document.querySelectorAll('mjx-lazy'),
  ].filter(meetsScreen).length;
  // Formulas typeset (not lazy placeholders), and those off the first screen.
  const typeset = () => [...document.querySelectorAll('mjx-container')]
      .filter(m => !m.querySelector('mjx-lazy'));
  let firstPass = {typeset: 0, offscreen: 0};
  document.addEventListener('DOMContentLoaded', async () => {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      await MathJax.startup.promise;
      const done = typeset();
      firstPass = {typeset: done.length,
                   offscreen: done.filter(m => !meetsScreen(m)).length};
    }
    const give_up = performance.now() + 60000;
    for (;;) {
      await frames();
      if (document.fonts) { await document.fonts.ready; }
      const fonts = !document.fonts || document.fonts.status === 'loaded';
      if ((fonts && !unready()) || performance.now() > give_up) break;
    }
    resolve({seconds: performance.now() / 1000, typeset: typeset().length,
             formulas: document.querySelectorAll('mjx-container').length,
             late: unready(), firstPass});
  });
});"""


class _CachingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site as a static host would: cacheable for an hour, and
    text gzipped for a browser that accepts it."""

    def end_headers(self):
        self.send_header("Cache-Control", "public, max-age=3600")
        super().end_headers()

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if (
            path.suffix not in TEXT_TYPES
            or not path.is_file()
            or "gzip" not in self.headers.get("Accept-Encoding", "")
        ):
            return super().do_GET()
        body = gzip.compress(path.read_bytes(), compresslevel=6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # noqa: A002
        pass


def chapter_pages() -> list[str]:
    """The chapters of _toc.yml in reading order, as site paths."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [
        f"{entry['file']}.html"
        for part in toc.get("parts", [])
        for entry in part.get("chapters", [])
        if (ROOT / f"{entry['file']}.ipynb").exists()
    ]


def served_file(url: str) -> Path:
    """The file of _build/html that the local server sends for `url`."""
    path = unquote(urlsplit(url).path).lstrip("/")
    return HTML / (path or "index.html")


def weight_of(urls: set[str]) -> tuple[int, int]:
    """(raw bytes, gzipped bytes) of the files served for `urls`."""
    raw = zipped = 0
    for url in urls:
        body = served_file(url).read_bytes()
        raw += len(body)
        if served_file(url).suffix in TEXT_TYPES:
            zipped += len(gzip.compress(body, compresslevel=6))
        else:
            zipped += len(body)
    return raw, zipped


class Tab:
    """A browser tab that records, from Chromium's network log, what it downloads.

    A response from the disk cache is marked so; one from the memory cache
    does not reach the network log at all.
    """

    def __init__(self, context):
        self.page = context.new_page()
        self.urls: dict[str, str] = {}
        self.from_cache: set[str] = set()
        self.finished: set[str] = set()
        self.failed: set[str] = set()
        self.page.add_init_script(READABLE)
        cdp = self.cdp = context.new_cdp_session(self.page)
        cdp.send("Network.enable")
        cdp.on("Network.requestWillBeSent", self._sent)
        cdp.on(
            "Network.requestServedFromCache",
            lambda event: self.from_cache.add(event["requestId"]),
        )
        cdp.on("Network.responseReceived", self._received)
        cdp.on(
            "Network.loadingFinished",
            lambda event: self.finished.add(event["requestId"]),
        )
        cdp.on(
            "Network.loadingFailed",
            lambda event: self.failed.add(event["requestId"]),
        )

    def _sent(self, event):
        self.urls[event["requestId"]] = event["request"]["url"]

    def _received(self, event):
        response = event["response"]
        if response.get("fromDiskCache") or response.get("fromPrefetchCache"):
            self.from_cache.add(event["requestId"])

    def _wait_until_quiet(self, seconds: float = 20.0) -> None:
        """Until every request has ended and none began for half a second."""
        for _ in range(int(seconds / 0.5)):
            seen = len(self.urls)
            self.page.wait_for_timeout(500)
            ended = self.finished | self.failed
            if len(self.urls) == seen and set(self.urls) <= ended:
                return

    def open(self, url: str) -> dict:
        """Load `url`; return the raw and gzipped bytes it downloaded."""
        self.urls.clear()
        self.from_cache.clear()
        self.finished.clear()
        self.failed.clear()
        self.page.goto(url, wait_until="networkidle", timeout=120_000)
        # MathJax fetches its parts after the page has loaded, and its fonts
        # once it has typeset: wait for both, then for the network to rest.
        readable = self.page.evaluate("window.bookReadable")
        self.page.evaluate(RENDERED)
        self._wait_until_quiet()
        local = urlsplit(url).netloc
        fetched = {
            self.urls[request]
            for request in self.finished - self.from_cache
            if request in self.urls
            and urlsplit(self.urls[request]).netloc == local
        }
        missing = {url for url in fetched if not served_file(url).is_file()}
        for url in sorted(missing):
            print(f"  not found (404): {urlsplit(url).path}")
        fetched -= missing
        cached = {
            self.urls[request]
            for request in self.from_cache
            if request in self.urls
        }
        raw, zipped = weight_of(fetched)
        # The Vega runtime comes when a dial nears the screen (within
        # 800 px of it: _ext/vega-figures.js), not with the page.
        runtime = {url for url in fetched if RUNTIME in url}
        return {
            "raw": raw,
            "gzipped": zipped,
            "requests": len(fetched),
            "cached": len(cached - fetched),
            "readable": readable,
            "vega": bool(runtime),
            "before_dial": weight_of(fetched - runtime)[1],
        }


def line(name: str, weight: dict, goal_kb: int, slow: bool = False) -> str:
    kb = weight["before_dial"] / 1e3
    verdict = "within" if kb < goal_kb else "OVER"
    text = (
        f"{name:42s} {weight['raw'] / 1e3:7.0f} KB raw {kb:6.0f} KB gzipped"
        f"  {weight['requests']:3d} downloads, {weight['cached']:3d} from cache"
        f"  ({verdict} {goal_kb} KB)"
    )
    if weight["vega"]:
        extra = (weight["gzipped"] - weight["before_dial"]) / 1e3
        text += (
            f" + {extra:.0f} KB: the Vega runtime for a dial near the screen"
        )
    if slow:
        readable = weight["readable"]
        seconds = readable["seconds"]
        verdict = "within" if seconds < READABLE_GOAL_S else "OVER"
        text += (
            f"; readable on slow 4G in {seconds:.2f} s ({verdict} 3 s),"
            f" {readable['typeset']} of {readable['formulas']} formulas"
            " typeset by then"
        )
    return text


def main(arguments: list[str]) -> int:
    global HTML
    slow, cpu, screen = False, 1.0, DESKTOP
    while arguments[:1] and arguments[0].startswith("--"):
        option, arguments = arguments[0], arguments[1:]
        if option == "--html":
            HTML, arguments = Path(arguments[0]), arguments[1:]
        elif option == "--slow-4g":
            slow = True
        elif option == "--cpu":
            cpu, arguments = float(arguments[0]), arguments[1:]
        elif option == "--phone":
            screen = PHONE
        else:
            print(__doc__)
            return 2
    chapters = chapter_pages()
    first = arguments[0] if arguments else chapters[0]
    further = arguments[1:] or [page for page in chapters if page != first]
    over = 0
    with (
        served(HTML, _CachingHandler) as base,
        sync_api.sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
            ],
        )
        print("first page, empty cache:")
        context = browser.new_context(**screen)
        weight = Tab(context).open(base + first)
        context.close()
        print("  " + line(first, weight, FIRST_GOAL_KB))
        over += weight["before_dial"] / 1e3 >= FIRST_GOAL_KB
        print(f"a further page, after {first} (warm cache):")
        for name in further:
            context = browser.new_context(**screen)
            tab = Tab(context)
            tab.open(base + first)
            if slow:
                tab.cdp.send("Network.emulateNetworkConditions", SLOW_4G)
            if cpu != 1:
                tab.cdp.send("Emulation.setCPUThrottlingRate", {"rate": cpu})
            weight = tab.open(base + name)
            context.close()
            print("  " + line(name, weight, FURTHER_GOAL_KB, slow))
            over += weight["before_dial"] / 1e3 >= FURTHER_GOAL_KB
        browser.close()
    print(
        f"{over} page(s) over the goal" if over else "every page within goal"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Measure what a reader's browser loads for one page of the built book.

Usage: python scripts/page_weight.py [PAGE ...]   (default: every chapter)

Serves _build/html on 127.0.0.1, opens each page in headless Chromium at
1280 x 900 and sums every response: bytes as served here (no compression)
and as a host that gzips text would send them. Reported, not asserted.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import sys
import threading
import time
from pathlib import Path

from playwright import sync_api

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CHROMIUM = "/usr/bin/chromium"
TEXT_TYPES = (".html", ".css", ".js", ".svg", ".json", ".txt")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002
        pass


def weigh(browser, url: str) -> tuple[int, int, int, float]:
    """(bytes, gzipped bytes, requests, seconds to network idle) for one page."""
    bodies: dict[str, bytes] = {}
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()

    def keep(response):
        try:
            bodies[response.url] = response.body()
        except Exception:  # a redirect or an aborted request has no body
            pass

    page.on("response", keep)
    start = time.perf_counter()
    page.goto(url, wait_until="networkidle")
    seconds = time.perf_counter() - start
    context.close()
    raw = sum(len(body) for body in bodies.values())
    zipped = sum(
        len(gzip.compress(body))
        if url.split("?")[0].endswith(TEXT_TYPES)
        else len(body)
        for url, body in bodies.items()
    )
    return raw, zipped, len(bodies), seconds


def main(pages: list[str]) -> int:
    if not pages:
        pages = [
            f"chapters/{path.stem}.html"
            for path in sorted((ROOT / "chapters").glob("*.ipynb"))
        ]
    handler = functools.partial(_Quiet, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
            ],
        )
        for name in pages:
            raw, zipped, requests, seconds = weigh(browser, base + name)
            print(
                f"{name:40s} {raw / 1e6:5.2f} MB ({zipped / 1e6:4.2f} MB gzipped), {requests} requests, {seconds:4.2f} s to idle"
            )
        browser.close()
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A folder served on 127.0.0.1 for a browser: the site in the browser
tests, the slides while their PDFs print, the pages page_weight.py weighs.

One server for all three: quiet (no line per request), one thread per
request, and a tab that goes away while a file is still being sent (the
browser moved on, or closed the tab) is nothing to report; any other error
of a request is printed as http.server prints it.
"""

from __future__ import annotations

import functools
import http.server
import threading
from contextlib import contextmanager
from pathlib import Path


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """A folder's files, with no line printed per request."""

    def log_message(self, format, *args):  # noqa: A002 (http.server's name)
        pass


class LocalServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        import sys  # noqa: PLC0415

        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # the browser went away mid-file (BrokenPipe, reset)
        super().handle_error(request, client_address)


@contextmanager
def served(folder: Path, handler=QuietHandler):
    """`folder` served on 127.0.0.1 (a free port) by `handler` (a
    SimpleHTTPRequestHandler class): yields the site's URL."""
    server = LocalServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(folder))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

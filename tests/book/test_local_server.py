"""The local server of the browser tests, the slides and page_weight.py
(scripts/local_server.py): a browser that goes away mid-file is no error
to print; any other error of a request still is."""

from __future__ import annotations

import socket
import sys
import time
import urllib.request

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from local_server import QuietHandler, served  # noqa: E402


def hang_up_mid_file(url: str) -> None:
    """Ask for the big file and close the connection unread."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    with socket.create_connection((host, int(port))) as connection:
        connection.setsockopt(
            socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0"
        )
        connection.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
        connection.recv(1)


class Failing(QuietHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        raise ValueError("a real error")


def test_a_browser_that_hangs_up_is_not_an_error(tmp_path, capfd):
    (tmp_path / "big.bin").write_bytes(b"x" * 50_000_000)
    with served(tmp_path) as url:
        hang_up_mid_file(url)
        time.sleep(0.5)  # the server thread meets the closed socket
        with urllib.request.urlopen(url + "big.bin") as answer:
            assert answer.status == 200
    assert "Traceback" not in capfd.readouterr().err


def test_another_error_is_printed(tmp_path, capfd):
    with served(tmp_path, Failing) as url:
        try:
            urllib.request.urlopen(url + "anything")
        except OSError:
            pass  # the server closed the connection: no answer
        time.sleep(0.2)
    assert "ValueError: a real error" in capfd.readouterr().err

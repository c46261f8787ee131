"""The sandbox a student's code runs in while it is graded
(scripts/sandbox.py): what it can see, reach and exhaust.

Each case runs a few lines of Python in the sandbox, as a student's
notebook cell would, and checks that the attack fails inside it.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import sandbox  # noqa: E402


@pytest.fixture(scope="module")
def sandbox_works():
    reason = sandbox.check()
    if reason and os.environ.get("CI"):
        pytest.fail(f"the grading sandbox does not work on CI: {reason}")
    if reason:
        pytest.skip(f"no sandbox here: {reason}")


def run_inside(tmp_path: Path, code: str, timeout: float = 120):
    """Run `code` with the venv's Python in a fresh sandbox whose home
    holds data.csv; returns (exit code, stdout, stderr)."""
    work, kernel = tmp_path / "work", tmp_path / "kernel"
    work.mkdir()
    kernel.mkdir()
    (work / "data.csv").write_text("a,b\n1,2\n")
    child = sandbox.sandboxed(
        work,
        kernel,
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = child.communicate(timeout=timeout)
    finally:
        child.kill()
        child.wait()
        sandbox.release(child)
    return child.returncode, out, err


def test_the_student_is_nobody_at_home_with_the_data(sandbox_works, tmp_path):
    code, out, _ = run_inside(
        tmp_path,
        """
        import os
        print(os.getuid(), os.getcwd(), sorted(os.listdir('.')))
        """,
    )
    assert code == 0
    assert out.split(" ", 2)[:2] == ["65534", "/home/student"]
    assert "data.csv" in out


def test_the_course_and_the_book_are_not_there(sandbox_works, tmp_path):
    # The source notebooks (solutions), the gradebook, other students'
    # work: none of the machine's folders but the system and the
    # interpreter exist inside.
    hidden = [
        ROOT / "chapters",
        ROOT / "_build",
        ROOT / "scripts",
        "/etc/passwd",
    ]
    code, out, err = run_inside(
        tmp_path,
        f"""
        import os
        print([os.path.exists(p) for p in {[str(p) for p in hidden]!r}])
        """,
    )
    assert code == 0, err
    assert out.strip() == str([False] * len(hidden))


def test_the_interpreter_cannot_be_changed(sandbox_works, tmp_path):
    code, out, _ = run_inside(
        tmp_path,
        """
        import numpy, pathlib
        target = pathlib.Path(numpy.__file__)
        try:
            target.write_text('# replaced')
            print('written')
        except OSError as error:
            print('refused', error.errno)
        """,
    )
    assert code == 0 and "refused" in out


def test_there_is_no_network(sandbox_works, tmp_path):
    # A server on this machine's loopback, which any process outside the
    # sandbox reaches: the sandbox does not.
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    try:
        code, out, _ = run_inside(
            tmp_path,
            f"""
            import socket
            try:
                socket.create_connection(('127.0.0.1', {port}), timeout=3)
                print('connected')
            except OSError:
                print('refused')
            """,
        )
    finally:
        server.close()
    assert code == 0 and out.strip() == "refused"


def test_a_fork_bomb_stops_inside(sandbox_works, tmp_path):
    code, out, _ = run_inside(
        tmp_path,
        """
        import os
        children = 0
        try:
            for _ in range(10_000):
                if os.fork() == 0:
                    import time
                    time.sleep(30)
                    os._exit(0)
                children += 1
        except OSError:
            pass
        print('children', children)
        """,
        timeout=60,
    )
    assert code == 0
    children = int(out.split()[-1])
    assert children < sandbox.PROCESSES


def test_a_memory_bomb_stops_inside(sandbox_works, tmp_path):
    code, out, _ = run_inside(
        tmp_path,
        """
        try:
            hoard = bytearray(64 * 2**30)
            print('allocated')
        except MemoryError:
            print('refused')
        """,
    )
    assert code == 0 and "refused" in out


def test_no_capability_and_no_new_privileges(sandbox_works, tmp_path):
    code, out, _ = run_inside(
        tmp_path,
        """
        status = open('/proc/self/status').read().splitlines()
        print([line for line in status if line.startswith(('CapEff', 'NoNewPrivs'))])
        """,
    )
    assert code == 0
    assert "CapEff:\\t0000000000000000" in out
    assert "NoNewPrivs:\\t1" in out


def test_the_graders_environment_does_not_leak(
    sandbox_works, tmp_path, monkeypatch
):
    monkeypatch.setenv("GRADER_SECRET", "seed 1234")
    code, out, _ = run_inside(
        tmp_path,
        """
        import os
        print(sorted(os.environ))
        """,
    )
    assert (
        code == 0
        and "GRADER_SECRET" not in out
        and "JPY_PARENT_PID" not in out
    )

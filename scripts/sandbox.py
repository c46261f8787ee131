#!/usr/bin/env python3
"""Run a student's code in a sandbox (Debian's bubblewrap).

The grader runs each submission in a Jupyter kernel that this module
starts inside `bwrap`:

- its own mount namespace holding the system (/usr, /lib, /bin and a few
  files of /etc), the Python interpreter and the grading venv, all
  read-only, and two writable folders: a home that holds copies of the
  data files the notebook reads (its working folder) and the kernel's
  folder (its connection file and sockets); a private /tmp. Nothing else
  of the machine is there: no course folder, no gradebook, no other
  student's work, no notebook with solutions;
- no network (a network namespace of its own), so the kernel talks to the
  grader over Unix sockets (ZMQ's ipc transport) in its kernel folder;
- its own pid, ipc, uts and cgroup namespaces; no nested user namespaces;
  user nobody (65534) inside *and* outside (a grader running as root drops
  to nobody before it starts bwrap, so the sandbox's processes are not
  root's anywhere); no capabilities; no new privileges; killed with its
  parent;
- limits: CPU seconds, address space, file size, open files, and the
  number of processes (RLIMIT_NPROC of user nobody, and a cgroup's
  pids.max where the grader may make one), so a fork or memory bomb fails
  inside the sandbox.

Where the sandbox cannot be made (no bwrap, no user namespaces), `check()`
says why and the grader refuses to grade: it never runs a student's code
without the sandbox.

Usage: `python scripts/sandbox.py` says whether the sandbox works here.
As a kernel (what the kernel spec of `kernel_spec()` runs):
    python scripts/sandbox.py kernel WORK_DIR KERNEL_DIR CONNECTION_FILE
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

NOBODY = 65534
HOME = Path("/home/student")
# Limits of one sandboxed kernel: a graded chapter runs in well under a
# minute and a few hundred MB; a bomb must stop.
CPU_SECONDS = 600
ADDRESS_SPACE = 8 * 2**30
FILE_SIZE = 256 * 2**20
OPEN_FILES = 256
PROCESSES = 64
PR_SET_NO_NEW_PRIVS = 38
CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
# What a Python program reads from /etc: libraries, time zone, fonts.
ETC = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/alternatives",
    "/etc/fonts",
    "/etc/mime.types",
)


class SandboxError(RuntimeError):
    """The sandbox cannot be made here; nothing is run without it."""


def _interpreter_roots() -> list[Path]:
    """Folders the venv's Python needs: its base installation and the venv."""
    roots = {
        Path(sys.base_prefix).resolve(),
        Path(sys.prefix).resolve(),
        Path(sysconfig.get_paths()["stdlib"]).resolve().parent.parent,
    }
    # A folder inside another one is bound with it.
    return sorted(
        root
        for root in roots
        if not any(other in root.parents for other in roots)
    )


def _system_binds() -> list[str]:
    args = []
    for path in ("/usr", "/bin", "/lib", "/lib64", "/sbin", *ETC):
        if Path(path).exists():
            args += ["--ro-bind", path, path]
    return args


def _pids_cgroup() -> Path | None:
    """A fresh cgroup whose pids.max is PROCESSES, if one can be made."""
    for root in CGROUP_ROOTS:
        if not (root / "cgroup.procs").exists():
            continue
        try:
            group = Path(tempfile.mkdtemp(prefix="book-grade-", dir=root))
        except OSError:
            continue
        try:
            (group / "pids.max").write_text(str(PROCESSES))
            return group
        except OSError:
            release_group(group)
    return None


def release_group(group: Path | None) -> None:
    """Remove a cgroup once its processes are gone (they may take a moment
    to be reaped after a kill)."""
    import time

    if group is None:
        return
    for _ in range(50):
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


def bwrap_command(mounts: list, command: list[str]) -> list[str]:
    """The bwrap command line that runs `command` in the sandbox. mounts
    are (source, where inside, writable): the interpreter's folders, the
    work folder (the home) and the kernel's folder."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxError(
            "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
        )
    args = [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        str(NOBODY),
        "--gid",
        str(NOBODY),
        "--hostname",
        "sandbox",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        *_system_binds(),
    ]
    for source, inside, writable in mounts:
        args += [
            "--bind" if writable else "--ro-bind",
            str(source),
            str(inside),
        ]
    args += [
        "--chdir",
        str(HOME),
        "--setenv",
        "HOME",
        str(HOME),
        "--setenv",
        "MPLCONFIGDIR",
        "/tmp/matplotlib",
        "--setenv",
        "PYTHONDONTWRITEBYTECODE",
        "1",
        "--",
        *command,
    ]
    return args


MS_REC, MS_PRIVATE, MS_BIND, MS_RDONLY, MS_REMOUNT = (
    16384,
    1 << 18,
    4096,
    1,
    32,
)
CLONE_NEWNS = 0x00020000


def _stage(libc, staged: list) -> None:
    """In a new private mount namespace, bind each (folder, staged path,
    writable) at its staged path (as root, before becoming nobody)."""
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "making / private failed")
    for folder, target, writable in staged:
        source, dest = str(folder).encode(), str(target).encode()
        if libc.mount(source, dest, None, MS_BIND | MS_REC, None) != 0:
            raise OSError(ctypes.get_errno(), f"binding {folder} failed")
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY
        if not writable and libc.mount(None, dest, None, flags, None) != 0:
            raise OSError(ctypes.get_errno(), f"read-only {folder} failed")


def _prepare(group: Path | None, staged: list):
    """What the child does before it runs bwrap: leave the grader's
    session, join the pids cgroup, take the limits, make the interpreter
    reachable, become nobody (when the grader is root) and forbid new
    privileges."""

    def prepare():
        os.setsid()
        libc = ctypes.CDLL(None, use_errno=True)
        if staged:
            _stage(libc, staged)
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()))
        for which, value in (
            (resource.RLIMIT_CPU, CPU_SECONDS),
            (resource.RLIMIT_AS, ADDRESS_SPACE),
            (resource.RLIMIT_FSIZE, FILE_SIZE),
            (resource.RLIMIT_NOFILE, OPEN_FILES),
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_NPROC, PROCESSES),
        ):
            resource.setrlimit(which, (value, value))
        if os.getuid() == 0:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")

    return prepare


def _give_to_nobody(*folders: Path) -> None:
    if os.getuid() == 0:
        for folder in folders:
            for path in [folder, *folder.rglob("*")]:
                os.chown(path, NOBODY, NOBODY)


def sandboxed_environment() -> dict:
    """The environment the sandbox starts with: none of the grader's
    variables but what Python and NumPy need."""
    keep = ("LANG", "LC_ALL", "TZ", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    environment = {k: os.environ[k] for k in keep if k in os.environ}
    environment["PATH"] = f"{Path(sys.executable).parent}:/usr/bin:/bin"
    return environment


def sandboxed(work: Path, kernel_dir: Path, command: list[str], **popen):
    """Start `command` in the sandbox: a subprocess.Popen released by
    `release`. Raises SandboxError where no sandbox can be made; never
    runs the command without one.

    As root, the folders are first bound, in a mount namespace private
    to the sandbox's parent, under a stage folder that user nobody can
    reach (the interpreter may live where nobody cannot, as pyenv's do
    under /root, mode 0700); bwrap, run as nobody, binds them from there.
    """
    wanted = [(root, root, False) for root in _interpreter_roots()]
    wanted += [(work, HOME, True), (kernel_dir, kernel_dir, True)]
    group, stage, staged = None, None, []
    if os.getuid() == 0:
        group = _pids_cgroup()
        _give_to_nobody(work, kernel_dir)
        stage = Path(tempfile.mkdtemp(prefix="book-stage-"))
        stage.chmod(0o711)
        mounts = []
        for number, (folder, inside, writable) in enumerate(wanted):
            target = stage / str(number)
            target.mkdir(mode=0o755)
            staged.append((folder, target, writable))
            mounts.append((target, inside, writable))
    else:
        mounts = wanted
    try:
        child = subprocess.Popen(
            bwrap_command(mounts, command),
            env=sandboxed_environment(),
            preexec_fn=_prepare(group, staged),
            **popen,
        )
    except BaseException:
        release_group(group)
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        raise
    child.cgroup, child.stage = group, stage
    return child


def release(child) -> None:
    """Remove the cgroup and the stage of a child that has ended."""
    release_group(getattr(child, "cgroup", None))
    stage = getattr(child, "stage", None)
    if stage is not None:
        shutil.rmtree(stage, ignore_errors=True)


def run_kernel(work: Path, kernel_dir: Path, connection_file: Path) -> int:
    """Start ipykernel in the sandbox with a copy of the connection file
    in the kernel's folder; return its exit code."""
    connection = json.loads(connection_file.read_text())
    if connection.get("transport") != "ipc":
        raise SandboxError(
            "the sandboxed kernel has no network: its connection must use "
            "the ipc transport"
        )
    inside = kernel_dir / "connection.json"
    inside.write_text(json.dumps(connection))
    command = [sys.executable, "-m", "ipykernel_launcher", "-f", str(inside)]
    # The kernel's own messages (and whatever the student's code writes to
    # the process's stderr) go to a file of the kernel's, not the grader's
    # terminal.
    with open(kernel_dir / "kernel.log", "wb") as log:
        child = sandboxed(
            work, kernel_dir, command, stdout=log, stderr=subprocess.STDOUT
        )
    # Where the grader finds what to clean up if this process is killed.
    (kernel_dir / "sandbox.json").write_text(
        json.dumps(
            {
                "pid": child.pid,
                "cgroup": str(child.cgroup or ""),
                "stage": str(child.stage or ""),
            }
        )
    )
    try:
        return child.wait()
    finally:
        release(child)


def cleanup(kernel_dir: Path) -> None:
    """After a sandboxed kernel was shut down (or killed): end whatever
    is left of it and remove its cgroup and stage."""
    import signal

    record = kernel_dir / "sandbox.json"
    if not record.exists():
        return
    found = json.loads(record.read_text())
    group = Path(found["cgroup"]) if found["cgroup"] else None
    if group is not None and (group / "cgroup.procs").exists():
        for line in (group / "cgroup.procs").read_text().split():
            try:
                os.kill(int(line), signal.SIGKILL)
            except OSError:
                pass
    try:
        os.kill(found["pid"], signal.SIGKILL)
    except OSError:
        pass
    release_group(group)
    if found["stage"]:
        shutil.rmtree(found["stage"], ignore_errors=True)


def check() -> str | None:
    """None if a sandbox can be made here, else why not."""
    work = Path(tempfile.mkdtemp(prefix="book-sandbox-check-"))
    try:
        child = sandboxed(
            work,
            work,
            [sys.executable, "-c", "print('ok')"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, err = child.communicate(timeout=60)
        release(child)
    except (SandboxError, OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if child.returncode != 0 or out.strip() != "ok":
        return f"bwrap failed ({child.returncode}): {err.strip()[-500:]}"
    return None


def kernel_spec(folder: Path, work: Path, kernel_dir: Path) -> Path:
    """Write a kernel spec `sandboxed` into folder/kernels/ that starts the
    kernel through this module; return folder/kernels."""
    spec = folder / "kernels" / "sandboxed"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable,
        str(Path(__file__).resolve()),
        "kernel",
        str(work),
        str(kernel_dir),
        "{connection_file}",
    ]
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": argv,
                "display_name": "Python 3 (sandboxed)",
                "language": "python",
            }
        )
    )
    return folder / "kernels"


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "kernel":
        sys.exit(
            run_kernel(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
        )
    reason = check()
    print(reason or "the sandbox works here")
    sys.exit(1 if reason else 0)

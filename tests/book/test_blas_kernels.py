"""The stored outputs hold under another BLAS kernel than this machine's.

NumPy's and SciPy's OpenBLAS pick a kernel for the processor (or the one
OPENBLAS_CORETYPE names: some machines set it), and kernels round the last
bits of a sum differently. The outputs were stored on one machine; a
reader's laptop, or CI's next machine, runs another kernel. So nbval runs
again here under a second kernel, on the chapters whose outputs a kernel
changes (measured under Haswell, Zen, Sandybridge and SkylakeX: the linear
algebra of many-queries, the tracer's ties in reconstruction-attacks, a
classifier's prediction that flips a figure's line by a pixel in
synthetic-data, the floats of a dial's spec in continual-release). The
rest of the suite runs under this machine's own kernel.
"""

import os
import platform
import subprocess
import sys

import pytest

from conftest import ROOT, run_pytest

CHAPTERS = [
    "many-queries",
    "reconstruction-attacks",
    "synthetic-data",
    "continual-release",
]


def kernel_in(environment: dict) -> str:
    """The OpenBLAS kernel NumPy runs under these environment variables."""
    probe = (
        "import numpy, threadpoolctl\n"
        "print(next(i['architecture'] for i in "
        "threadpoolctl.threadpool_info() if i['internal_api'] == 'openblas'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    )
    return done.stdout.strip()


def other_kernel() -> tuple[str, dict]:
    """A kernel other than this machine's, and the environment for it."""
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip(
            f"the kernels named here are x86-64's, not {platform.machine()}'s"
        )
    mine = kernel_in(dict(os.environ))
    # Sandybridge (AVX) runs on every x86-64 machine that runs the book's
    # wheels; where it is already the kernel, Haswell (AVX2) is the other.
    wanted = "Haswell" if mine.lower() == "sandybridge" else "Sandybridge"
    environment = {**os.environ, "OPENBLAS_CORETYPE": wanted}
    got = kernel_in(environment)
    assert got.lower() == wanted.lower(), (
        f"asked OpenBLAS for {wanted}, it runs {got}: the test would not "
        "test another kernel"
    )
    return f"{mine} -> {got}", environment


def test_stored_outputs_hold_under_another_blas_kernel():
    kernels, environment = other_kernel()
    notebooks = [str(ROOT / "chapters" / f"{c}.ipynb") for c in CHAPTERS]
    run = run_pytest(
        "-m",
        "notebooks",
        *notebooks,
        env={**environment, "PYTEST_ADDOPTS": ""},
    )
    assert run.returncode == 0, (
        f"nbval under another kernel ({kernels}) failed:\n"
        + run.stdout[-4000:]
    )

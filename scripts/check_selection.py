"""What `make check` runs: the tests of the chapters you changed.

Usage: python scripts/check_selection.py [--all]

Prints the test files of tests/chapters/ that `make check` runs, one per
line, from the files changed since the last commit (edited, staged or new):

- a changed notebook chapters/<stem>.ipynb selects its tests
  tests/chapters/test_<stem>.py and every chapter test file that names
  <stem> (a test that reads another chapter); a changed test file
  selects itself;
- tests/chapters/test_conventions.py (static: nothing is executed) is
  always selected;
- a change to anything the chapters' tests share (the test helpers,
  scripts/, the data, the toolchain's pins, pytest's configuration, a
  helper module in tests/chapters/) selects every chapter's tests, as does
  --all (`make check ALL=1`).

A change elsewhere (prose pages, the book's extensions, tests/book/) needs
no chapter test: `make test` checks it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests" / "chapters"
CONVENTIONS = TESTS / "test_conventions.py"

# A change to one of these can change any chapter's test result.
SHARED = (
    "conftest.py",
    "pytest.ini",
    "constraints.txt",
    "requirements-dev.txt",
    "tests/conftest.py",
    "tests/assignments.py",
    "tests/sanitize.cfg",
    "data/",
    "scripts/",
)


def changed_files() -> list[str]:
    """Paths changed since the last commit (tracked edits and new files)."""
    commands = (
        ["git", "diff", "--name-only", "HEAD"],
        ["git", "ls-files", "--others", "--exclude-standard"],
    )
    files: set[str] = set()
    for command in commands:
        listed = subprocess.run(
            command, cwd=ROOT, capture_output=True, text=True, check=True
        )
        files.update(line for line in listed.stdout.splitlines() if line)
    return sorted(files)


def test_file_of(stem: str) -> Path:
    return TESTS / f"test_{stem.replace('-', '_')}.py"


def selection(changed: list[str], everything: bool = False) -> list[Path]:
    """The chapter test files to run for these changed paths."""
    all_files = sorted(TESTS.glob("test_*.py"))
    if everything or any(
        path == shared or (shared.endswith("/") and path.startswith(shared))
        for path in changed
        for shared in SHARED
    ):
        return all_files
    helpers = [
        path
        for path in changed
        if Path(path).parent == Path("tests/chapters")
        and Path(path).suffix == ".py"
        and not Path(path).name.startswith("test_")
    ]
    if helpers:
        return all_files
    chosen = {CONVENTIONS}
    for path in map(Path, changed):
        if path.parent == Path("chapters") and path.suffix == ".ipynb":
            chosen.add(test_file_of(path.stem))
            chosen.update(f for f in all_files if path.stem in f.read_text())
        elif path.parent == Path("tests/chapters") and path.suffix == ".py":
            chosen.add(ROOT / path)
    return sorted(p for p in chosen if p.exists())


def main(argv: list[str]) -> int:
    if set(argv) - {"--all"}:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    for path in selection(changed_files(), everything="--all" in argv):
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Checks of a chapter's graded exercises, run in the chapter's own kernel.

The chapter tests execute each chapter once (``chapter_kernel``); these
helpers run the grading code of its exercises (``assignment`` metadata, see
``scripts/make_assignments.py``) in a copy of that namespace, so they cost
no second execution:

- the book's solutions pass every check (full marks);
- the untouched stubs fail every check with an AssertionError that says
  what is missing (zero, and no other error in the grader);
- a typical wrong answer fails with the message meant for it.
"""

from __future__ import annotations

import sys

from conftest import CHAPTERS_DIR, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import make_assignments  # noqa: E402
import nbformat  # noqa: E402


def graded_exercises(stem: str) -> list[dict]:
    cells = nbformat.read(CHAPTERS_DIR / f"{stem}.ipynb", as_version=4).cells
    return [
        exercise
        for exercise in make_assignments.exercises(cells)
        if make_assignments.graded(exercise)
    ]


def exercise(stem: str, label: str) -> dict:
    for found in graded_exercises(stem):
        if found["label"] == label:
            return found
    raise KeyError(f"{stem} has no graded exercise {label}")


def failure(kernel, found: dict, code: str | None) -> str | None:
    """Run ``code`` (an answer) then the exercise's checks, in a copy of
    the chapter's namespace. None if every check passes, else the message
    of the AssertionError; any other exception propagates."""
    namespace = dict(kernel.namespace)
    if code:
        exec(compile(code, f"<answer {found['label']}>", "exec"), namespace)
    checks = make_assignments.check_code(found, hidden=False)
    hidden = found["spec"].get("hidden", "")
    try:
        exec(compile(checks, f"<public {found['label']}>", "exec"), namespace)
        exec(compile(hidden, f"<hidden {found['label']}>", "exec"), namespace)
    except AssertionError as error:
        return str(error)
    return None


def assert_full_marks(kernel, stem: str) -> None:
    graded = graded_exercises(stem)
    assert graded, f"{stem} has no graded exercise"
    for found in graded:
        # The book's solution cells already ran in the kernel; the spec's
        # "answer" names what they computed (or answers a prose solution).
        message = failure(kernel, found, found["spec"].get("answer"))
        assert message is None, f"{found['label']}: {message}"


def assert_stubs_score_zero(kernel, stem: str) -> None:
    for found in graded_exercises(stem):
        message = failure(kernel, found, found["spec"]["stub"])
        assert message, f"{found['label']}: the untouched stub passes"
        assert "False" != message.strip(), found["label"]


def wrong_answer_message(kernel, stem: str, label: str, code: str) -> str:
    message = failure(kernel, exercise(stem, label), code)
    assert message is not None, f"{label}: the wrong answer passes"
    return message

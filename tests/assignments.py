"""Checks of a chapter's graded exercises, run on the chapter's own
namespace.

The chapter tests execute each chapter once (``chapter_kernel``); these
helpers grade its exercises as scripts/grade_assignment.py does, in a copy
of that namespace, so they cost no second execution: the public checks
(the student's feedback), then the export (in the student's namespace, on
inputs drawn with a seed), then the judge (on the exported JSON, against
the book's solution exported on the same inputs; scripts/judge.py):

- the book's solutions pass (full marks);
- the untouched stubs fail with a message that says what is missing;
- a typical wrong answer fails with the message meant for it, and the
  public checks catch the common mistakes before the student submits.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from conftest import CHAPTERS_DIR, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import judge  # noqa: E402
import make_assignments  # noqa: E402
import nbformat  # noqa: E402

SEEDS = (20261129, 7)  # the inputs are drawn twice, with these seeds


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


def exported(namespace: dict, spec: dict, inputs: dict):
    """What the export cell writes for this exercise, read back as JSON."""
    namespace = dict(namespace)
    namespace["grader_inputs"] = inputs
    namespace["exported"] = None
    try:
        exec(compile(spec["export"], "<export>", "exec"), namespace)
        value = judge.as_json(namespace["exported"])
    except Exception as error:  # as the export cell records it
        value = {"error": f"{type(error).__name__}: {error}"}
    return json.loads(json.dumps(value))


def public_failure(namespace: dict, found: dict) -> str | None:
    """The message of the public checks (the student's feedback), or
    None if they pass."""
    checks = make_assignments.check_code(found)
    try:
        exec(compile(checks, f"<public {found['label']}>", "exec"), namespace)
    except AssertionError as error:
        return str(error)
    return None


def failure(kernel, found: dict, code: str | None, public=True) -> str | None:
    """Run ``code`` (an answer) in a copy of the chapter's namespace, then
    the public checks and the judge. None if the answer gets full marks
    (with inputs drawn with every seed of SEEDS), else the first message;
    any exception other than an AssertionError of a check propagates."""
    spec = found["spec"]
    namespace = dict(kernel.namespace)
    if code:
        exec(compile(code, f"<answer {found['label']}>", "exec"), namespace)
    if public:
        message = public_failure(dict(namespace), found)
        if message:
            return message
    reference_space = dict(kernel.namespace)
    if spec.get("answer"):
        exec(
            compile(spec["answer"], "<book's answer>", "exec"), reference_space
        )
    for seed in SEEDS:
        inputs = judge.draw_inputs(spec, np.random.default_rng(seed))
        answer = exported(namespace, spec, inputs)
        reference = exported(reference_space, spec, inputs)
        message = judge.judge(spec, answer, reference, inputs)
        if message:
            return message
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
        # The judge alone: a stub must score zero even if the student
        # never runs the public checks.
        message = failure(kernel, found, found["spec"]["stub"], public=False)
        assert message, f"{found['label']}: the untouched stub passes"
        assert "False" != message.strip(), found["label"]
        assert public_failure(_with(kernel, found["spec"]["stub"]), found), (
            f"{found['label']}: the public checks accept the untouched stub"
        )


def _with(kernel, code: str) -> dict:
    namespace = dict(kernel.namespace)
    exec(compile(code, "<answer>", "exec"), namespace)
    return namespace


def wrong_answer_message(kernel, stem: str, label: str, code: str) -> str:
    """The judge's message for a wrong answer (it must fail)."""
    message = failure(kernel, exercise(stem, label), code, public=False)
    assert message is not None, f"{label}: the wrong answer passes"
    return message


def public_message(kernel, stem: str, label: str, code: str) -> str | None:
    """The public checks' message for an answer (None if they pass)."""
    return public_failure(_with(kernel, code), exercise(stem, label))


# --- the checks that each chapter's tests parametrize over its exercises ---


def over_answer(stem: str, label: str, code: str) -> str:
    """The book's answer to the exercise, then ``code`` written over it:
    a wrong (or another right) answer that changes one part of the
    book's and keeps the rest."""
    answer = exercise(stem, label)["spec"].get("answer", "")
    if answer and not answer.endswith("\n"):
        answer += "\n"
    return answer + code


def assert_wrong_answer_fails(
    kernel, stem: str, label: str, code: str, expected: str, *, over=False
) -> None:
    """The judge fails a typical wrong answer with the message meant for
    it (``expected`` is part of it). ``over``: ``code`` is written over
    the book's answer (``over_answer``)."""
    if over:
        code = over_answer(stem, label, code)
    message = wrong_answer_message(kernel, stem, label, code)
    assert expected in message, message


def assert_public_checks_name(
    kernel, stem: str, label: str, code: str, expected: str, *, over=False
) -> None:
    """The public checks (what the student sees before submitting) fail
    an answer with a common mistake and name it (``expected`` is part of
    the message). ``over`` as in ``assert_wrong_answer_fails``."""
    if over:
        code = over_answer(stem, label, code)
    message = public_message(kernel, stem, label, code)
    assert message is not None, f"{label}: the public checks pass {code}"
    assert expected in message, message


def assert_answer_passes(
    kernel, stem: str, label: str, code: str, *, over=False
) -> None:
    """A right answer in another form (rounded, NumPy types, another
    correct method) gets full marks: the public checks and the judge, on
    the inputs of every seed. ``over`` as in ``assert_wrong_answer_fails``."""
    if over:
        code = over_answer(stem, label, code)
    message = failure(kernel, exercise(stem, label), code)
    assert message is None, f"{label}: {message}"

"""Judging a graded exercise outside the student's kernel.

A graded exercise's metadata (see scripts/make_assignments.py) holds,
besides the stub and the public checks the student runs:

- ``inputs``: code the grader runs (trusted, outside the sandbox) with
  ``rng``, a generator seeded from the operating system at grading time,
  to set ``inputs``, a dict of JSON values (data, seeds, parameters) the
  student's work is tried on; optional;
- ``export``: code run in the student's kernel after their notebook, with
  ``grader_inputs`` (this exercise's ``inputs``), that sets ``exported``,
  a dict of JSON values: the student's answers, and what the student's
  functions return on the grader's inputs;
- ``judge``: code the grader runs outside the sandbox with ``answer``
  (the student's ``exported``, read back from JSON: only numbers,
  strings, booleans, None, lists and dicts, so no object of the student's
  can pretend to be equal to anything), ``reference`` (the book's
  solution exported on the same inputs), ``inputs``, NumPy as ``np``,
  SciPy's ``stats`` and the helpers below; it asserts, and every
  assertion's message tells the student what is wrong and why, without
  the answer.

`judge(spec, answer, reference, inputs)` returns None for full marks or
the message of the first failed assertion (or why the answer could not be
judged). `draw_inputs(spec, rng)` runs ``inputs``. `as_json(value)` is what
the export does to a value: NumPy scalars and arrays become numbers and
lists, anything else that JSON cannot hold becomes its repr (a string,
which no numeric check accepts).
"""

from __future__ import annotations

import json
import math

import numpy as np
from scipy import stats

# The precision an exercise asks for unless its text says otherwise:
# an answer given to 3 significant figures is accepted.
SIGNIFICANT = 3


class NotJudged(AssertionError):
    """The answer is missing or is not of the form the exercise asks."""


def number(value, name: str = "the answer") -> float:
    """A number from an exported value (int or float, not bool)."""
    if value == "Ellipsis":
        raise NotJudged(f"{name} is still ...: set it")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NotJudged(f"{name} should be a number, got {value!r}")
    return float(value)


def numbers(value, name: str = "the answer") -> np.ndarray:
    """An array of numbers from an exported list."""
    if not isinstance(value, list):
        raise NotJudged(f"{name} should be a list of numbers, got {value!r}")
    return np.array([number(v, name) for v in value], dtype=float)


def flag(value, name: str = "the answer") -> bool:
    """A yes/no answer: True or False (NumPy's np.True_ is exported as
    True; 0 and 1 are accepted too)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    raise NotJudged(f"{name} should be True or False, got {value!r}")


def close(value, target, sig: int = SIGNIFICANT, atol: float = 0.0) -> bool:
    """True if `value` is within a relative 0.5 x 10^(1 - sig) of `target`
    (0.5% for sig = 3): every answer rounded to `sig` significant figures
    passes. For a target whose leading digit is large this accepts more
    than rounding does (0.996 +- 0.005 at sig = 3), so an exercise that
    must tell such values apart asks for more figures or an explicit
    tolerance. `atol` accepts an absolute error too (targets near 0)."""
    value, target = float(value), float(target)
    if not (math.isfinite(value) and math.isfinite(target)):
        return value == target
    return abs(value - target) <= max(
        0.5 * 10 ** (-(sig - 1)) * abs(target), atol
    )


def draw_inputs(spec: dict, rng: np.random.Generator) -> dict:
    """The inputs an exercise is judged on, drawn with `rng`."""
    code = spec.get("inputs", "")
    if not code.strip():
        return {}
    namespace = {"rng": rng, "np": np}
    exec(compile(code, "<inputs>", "exec"), namespace)
    inputs = namespace.get("inputs", {})
    return json.loads(json.dumps(as_json(inputs)))


def as_json(value):
    """A value as the export writes it (see the module's docstring)."""
    if isinstance(value, dict):
        return {str(k): as_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return as_json(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if value is None or isinstance(value, str):
        return value if value is None else str(value)
    return repr(value)


def judge(spec: dict, answer, reference, inputs: dict) -> str | None:
    """None if the exported answer passes the exercise's judge, else why
    not (the first failed check's message)."""
    if not isinstance(answer, dict):
        return "nothing was exported for this exercise"
    if "error" in answer and len(answer) == 1:
        return f"your notebook could not answer it: {answer['error']}"
    namespace = {
        "answer": answer,
        "reference": reference or {},
        "inputs": inputs,
        "np": np,
        "stats": stats,
        "number": number,
        "numbers": numbers,
        "flag": flag,
        "close": close,
    }
    try:
        exec(compile(spec["judge"], "<judge>", "exec"), namespace)
    except AssertionError as error:
        return str(error) or "a check failed"
    except KeyError as error:
        return f"your notebook did not export {error}"
    except (TypeError, ValueError, ArithmeticError) as error:
        return f"your answer could not be checked ({type(error).__name__}: {error})"
    return None


# The cell the grader appends to a student's notebook, in the sandbox.
# It runs each exercise's export in the student's namespace and writes
# answers.json; an exercise whose export fails exports its error.
EXPORT_CELL = """\
import json as _grader_json

def _grader_plain(value):
    if isinstance(value, dict):
        return {{str(k): _grader_plain(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return [_grader_plain(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return _grader_plain(value.tolist())
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if value is None or isinstance(value, str):
        return value
    return repr(value)

_grader_all_inputs = _grader_json.loads({inputs!r})
_grader_exports = {{}}
for _grader_label, _grader_code in {exports!r}:
    grader_inputs = _grader_all_inputs.get(_grader_label, {{}})
    try:
        exported = None
        exec(_grader_code, globals())
        _grader_exports[_grader_label] = _grader_plain(exported)
    except BaseException as _grader_error:
        _grader_exports[_grader_label] = {{
            "error": f"{{type(_grader_error).__name__}}: {{_grader_error}}"[:500]
        }}
with open("answers.json", "w") as _grader_file:
    _grader_json.dump(_grader_exports, _grader_file)
"""


def export_cell(exports: list[tuple[str, str]], inputs: dict) -> str:
    """The export cell for these (label, export code) pairs and the
    inputs drawn for them (written into the cell, not into a file the
    student's code could read before it runs)."""
    return EXPORT_CELL.format(exports=exports, inputs=json.dumps(inputs))

"""Tests for chapters/continual-release.ipynb: the chapter's own functions,
run in its namespace, checked against brute force and exact counts."""

import assignments
import numpy as np
import pytest

from conftest import chapter_kernel, glued_value, value_error_message


@pytest.fixture(scope="module")
def cr():
    with chapter_kernel("continual-release") as notebook:
        yield notebook


def brute_nodes(horizon):
    """Every complete dyadic block (level, first day, last day) in 1..T."""
    return [
        (j, (m - 1) * 2**j + 1, m * 2**j)
        for j in range(horizon.bit_length() + 1)
        for m in range(1, horizon // 2**j + 1)
    ]


# --- the tree's bookkeeping ----------------------------------------------


@pytest.mark.parametrize("horizon", [1, 2, 5, 13, 64, 100, 365])
def test_tree_without_noise_gives_the_running_counts(cr, horizon):
    rng = np.random.default_rng(horizon)
    stream = rng.integers(0, 50, horizon).tolist()
    cr.inject(f"_x = np.array({stream})")
    plain = cr.value("tree_prefix_sums(node_sums(_x), len(_x)).tolist()")
    best = cr.value(
        "tree_prefix_sums(optimal_node_estimates(node_sums(_x)),"
        " len(_x)).tolist()"
    )
    doubling = cr.value("epoch_prefix_sums(epoch_nodes(_x), len(_x)).tolist()")
    truth = np.cumsum(stream)
    assert plain == truth.tolist()  # exact: integer sums
    assert np.allclose(best, truth, rtol=0, atol=1e-8)
    assert doubling == truth.tolist()


@pytest.mark.parametrize("horizon", [1, 7, 8, 100, 365, 1024])
def test_node_counts_per_day_and_per_event(cr, horizon):
    """Day t sums popcount(t) <= floor(log2 t) + 1 nodes; an event on day
    s lies in at most L = floor(log2 T) + 1 complete nodes, in exactly L
    for s <= 2**(L-1), so in exactly L for every s when T is a power of
    two (the padded count ceil(log2 T) + 1 is one too many otherwise)."""
    nodes = brute_nodes(horizon)
    levels = cr.value(f"tree_levels({horizon})")
    assert levels == int(np.floor(np.log2(horizon))) + 1
    per_event = [
        sum(a <= s <= b for _, a, b in nodes) for s in range(1, horizon + 1)
    ]
    assert max(per_event) == levels
    assert all(c == levels for c in per_event[: 2 ** (levels - 1)])
    if horizon & (horizon - 1) == 0:
        assert set(per_event) == {levels}
    else:
        assert max(per_event) == int(np.ceil(np.log2(horizon)))
    # the nodes the chapter's prefix uses: unit node values, count them
    cr.inject(
        f"_used = tree_prefix_sums([np.ones({horizon} >> j) for j in"
        f" range(tree_levels({horizon}))], {horizon})"
    )
    used = cr.value("_used.tolist()")
    for t, count in enumerate(used, start=1):
        assert count == bin(t).count("1") <= int(np.log2(t)) + 1


def test_optimal_estimate_is_least_squares_on_released_nodes(cr):
    """On day t, the bottom-up estimate equals ordinary least squares on
    every node released by day t (equal variances), for T = 13."""
    horizon = 13
    nodes = brute_nodes(horizon)
    rng = np.random.default_rng(4)
    y = {node: rng.normal(10, 3) for node in nodes}
    per_level = [
        [y[(j, a, b)] for (jj, a, b) in nodes if jj == j]
        for j in range(horizon.bit_length())
    ]
    cr.inject(f"_y = [np.array(v) for v in {per_level}]")
    got = cr.value(
        f"tree_prefix_sums(optimal_node_estimates(_y), {horizon}).tolist()"
    )
    for t in range(1, horizon + 1):
        avail = [n for n in nodes if n[2] <= t]
        design = np.array(
            [[a <= s <= b for s in range(1, t + 1)] for _, a, b in avail],
            dtype=float,
        )
        x_hat = np.linalg.lstsq(
            design, np.array([y[n] for n in avail]), rcond=None
        )[0]
        assert got[t - 1] == pytest.approx(x_hat.sum(), abs=1e-9)


# --- variances -------------------------------------------------------------


@pytest.mark.parametrize(
    "design, mechanism",
    [
        ("fresh noise", "fresh_running_counts"),
        ("noisy increments", "increment_running_counts"),
        ("tree", "tree_running_counts"),
        ("tree, optimal", "optimal_tree_running_counts"),
    ],
)
def test_error_variance_matches_the_formula(cr, design, mechanism):
    """Mean over days of the empirical variance, 4,000 seeded runs on a
    100-day stream, within 4 standard errors (Laplace kurtosis 6 bounds
    the relative standard error of one day's variance by sqrt(5/runs))."""
    runs = 4_000
    cr.inject(
        "_x = np.random.default_rng(1).integers(0, 9, 100)\n"
        f"_e = {mechanism}(_x, 0.7, np.random.default_rng(2), runs={runs})"
        " - np.cumsum(_x)"
    )
    measured = cr.value("float(_e.var(axis=0).mean())")
    formula = cr.value(f"float(error_variance({design!r}, 100, 0.7).mean())")
    assert abs(measured / formula - 1) < 4 * np.sqrt(5 / runs)
    assert abs(cr.value("float(_e.mean())")) < 4 * np.sqrt(formula / runs)


def test_doubling_variance_formula(cr):
    runs = 4_000
    cr.inject(
        "_x = np.random.default_rng(3).integers(0, 9, 90)\n"
        "_e = doubling_running_counts(_x, 1.3, np.random.default_rng(5),"
        f" runs={runs}) - np.cumsum(_x)"
    )
    measured = np.array(cr.value("_e.var(axis=0).tolist()"))
    formula = np.array(cr.value("doubling_error_variance(90, 1.3).tolist()"))
    # hand value: day 90 is in epoch 6 at position 27 = 0b11011 (4 ones),
    # finished epochs add 1 + 4 + 9 + 16 + 25 + 36 = 91
    assert formula[-1] == pytest.approx(2 / 1.3**2 * (91 + 49 * 4))
    assert abs(measured.mean() / formula.mean() - 1) < 4 * np.sqrt(5 / runs)


def test_optimal_weights_solve_the_recursion(cr):
    """r_h = 2^h / (2^(h+1) - 1) solves 1/r_h = 1 + 1/(2 r_(h-1)), r_0 = 1,
    and the optimal left factor's row norms equal the formula's sums."""
    r = [1.0]
    for _ in range(10):
        r.append(1 / (1 + 1 / (2 * r[-1])))
    assert np.allclose(r, [2**h / (2 ** (h + 1) - 1) for h in range(11)])
    cr.inject("_B, _C = tree_factors(45, 'optimal')")
    rows = np.array(cr.value("(_B ** 2).sum(axis=1).tolist()"))
    expected = [
        sum(r[j] for j in range(6) if t >> j & 1) for t in range(1, 46)
    ]
    assert np.allclose(rows, expected)


# --- factorizations --------------------------------------------------------


@pytest.mark.parametrize("name", ["simple", "optimal"])
def test_tree_factors_multiply_to_the_prefix_matrix(cr, name):
    cr.inject(f"_B, _C = tree_factors(37, {name!r})")
    assert cr.value("bool(np.allclose(_B @ _C, prefix_matrix(37)))")


def test_sqrt_factor_squares_to_the_prefix_matrix(cr):
    assert cr.value(
        "bool(np.allclose(sqrt_factor(200) @ sqrt_factor(200),"
        " prefix_matrix(200), atol=1e-10))"
    )


def test_stated_sensitivities_are_the_largest_moves_over_neighbours(cr):
    """The glued L1 and L2 column norms of the square-root factor are the
    largest change of M @ x when one event is added on any day of a
    stream; the tree's are L and sqrt(L)."""
    from math import comb

    horizon = glued_value("continual-release", "cont_horizon")
    f = np.array([comb(2 * k, k) / 4**k for k in range(horizon)])
    assert glued_value("continual-release", "cont_sqrt_l1") == pytest.approx(
        f.sum(), rel=1e-12
    )
    assert glued_value("continual-release", "cont_sqrt_l2") == pytest.approx(
        np.sqrt((f**2).sum()), rel=1e-12
    )
    cr.inject(
        "_M = sqrt_factor(len(signups))\n"
        "_moves = [_M @ np.eye(len(signups))[s] for s in range(len(signups))]"
    )
    moved_1 = cr.value("max(float(np.abs(m).sum()) for m in _moves)")
    moved_2 = cr.value("max(float(np.linalg.norm(m)) for m in _moves)")
    assert moved_1 == pytest.approx(f.sum(), rel=1e-9)
    assert moved_2 == pytest.approx(np.sqrt((f**2).sum()), rel=1e-9)
    assert cr.value("factorization_sensitivity(_M, 1)") == pytest.approx(
        moved_1
    )
    levels = glued_value("continual-release", "cont_levels")
    cr.inject("_B, _C = tree_factors(len(signups))")
    assert cr.value("factorization_sensitivity(_C, 1)") == levels
    assert cr.value("factorization_sensitivity(_C, 2)") == pytest.approx(
        np.sqrt(levels)
    )


def test_factorized_release_matches_its_variance(cr):
    runs = 3_000
    cr.inject(
        "_x = np.random.default_rng(6).integers(0, 5, 60)\n"
        "_M = sqrt_factor(60)\n"
        "_e = factorization_running_counts(_x, _M, _M, 2.0,"
        f" np.random.default_rng(7), runs={runs}) - np.cumsum(_x)"
    )
    measured = cr.value("float(_e.var(axis=0).mean())")
    formula = cr.value("float(4.0 * (_M ** 2).sum(axis=1).mean())")
    assert abs(measured / formula - 1) < 4 * np.sqrt(2 / runs)


# --- the lower bound -------------------------------------------------------


def test_lower_bound_by_hand(cr):
    # T = 365, eps = 1: B = 4 gives floor(365/4) = 91 > e^4 / 2 = 27.3;
    # B = 5 gives 73 > 74.2? no; so B/2 = 2.
    assert cr.value("counting_lower_bound(365, 1.0)") == 2.0
    assert cr.value("counting_lower_bound(1, 1.0)") == 0.0
    # eps = 0.1: B = 39 gives floor(1000/39) = 25 > e^3.9 / 2 = 24.7, but
    # B = 40 gives 25 > e^4 / 2 = 27.3? no, and larger B fail too
    assert cr.value("counting_lower_bound(1000, 0.1)") == 19.5


# --- bad input -------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        "check_stream([])",
        "check_stream([1, -1])",
        "check_stream([1.5, 2])",
        "check_stream([[1, 2]])",
        "check_stream([1, np.nan])",
        "tree_levels(0)",
        "tree_levels(3.5)",
        "daily_counts([0, 3], 5)",
        "tree_prefix_sums(node_sums([1, 2, 3]), 4)",
        "tree_running_counts([1, 2], 0, rng)",
        "increment_running_counts([1, 2], -1, rng)",
        "fresh_running_counts([1, 2], 1.0, rng, runs=0)",
        "error_variance('trees', 10, 1.0)",
        "error_variance('tree', 10, float('inf'))",
        "counting_lower_bound(10, 0)",
        "tree_factors(8, 'best')",
        "factorization_sensitivity(np.eye(3), 3)",
        "factorization_running_counts([1, 2], np.eye(2), np.eye(2), 0, rng)",
        "horizon_dial(10, (16, 1024))",
        "horizon_dial(100, (200, 100))",
        "horizon_dial(100, (16.5, 1024))",
    ],
)
def test_bad_input_raises_value_error(cr, call):
    assert value_error_message(cr, call)


def test_noise_needs_a_generator(cr):
    with pytest.raises(Exception, match="Generator"):
        cr.value("tree_running_counts([1, 2], 1.0, 7)")


# --- the dial --------------------------------------------------------------


def test_stored_dial_compiles_and_starts_at_the_chapters_horizon():
    import nbformat  # noqa: PLC0415
    import vl_convert  # noqa: PLC0415

    from conftest import CHAPTERS_DIR  # noqa: PLC0415

    cells = nbformat.read(
        CHAPTERS_DIR / "continual-release.ipynb", as_version=4
    ).cells
    (data,) = [
        output["data"]
        for cell in cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if "application/vnd.vegalite.v5+json" in output.get("data", {})
    ]
    spec = data["application/vnd.vegalite.v5+json"]
    assert data["text/plain"] == spec["description"]
    (param,) = spec["params"]
    assert param["name"] == "horizon"
    assert param["value"] == glued_value("continual-release", "cont_horizon")
    assert param["bind"]["min"] == glued_value(
        "continual-release", "cont_dial_low"
    )
    assert param["bind"]["max"] == glued_value(
        "continual-release", "cont_dial_high"
    )
    vega = vl_convert.vegalite_to_vega(spec, vl_version="5.21")
    assert "horizon" in {s["name"] for s in vega["signals"]}


def test_dial_grid_carries_the_exact_day_weights(cr):
    """The dial's data: bit length, number of 1-bits and optimal weight of
    every day, as error_variance uses them (L from the largest bit length
    among days up to T equals tree_levels(T))."""
    cr.inject("_spec = horizon_dial(365, (16, 1024)).to_dict()")
    rows = cr.value("max(_spec['datasets'].values(), key=len)")
    assert [row["day"] for row in rows] == list(range(1, 1025))
    for T in (16, 17, 365, 512, 1024):
        cr.inject(f"_v = error_variance('tree, optimal', {T}, 1.0)")
        opt = np.array(cr.value("_v.tolist()"))
        levels = max(row["length"] for row in rows[:T])
        assert levels == cr.value(f"tree_levels({T})")
        shown = np.array([levels * np.sqrt(2 * r["weight"]) for r in rows[:T]])
        assert np.allclose(shown, np.sqrt(opt), rtol=1e-12)
        ones = np.array([r["ones"] for r in rows[:T]])
        assert ones.tolist() == [bin(t).count("1") for t in range(1, T + 1)]


@pytest.mark.parametrize("horizon", [1, 2, 3, 7, 8, 100, 365, 1000])
@pytest.mark.parametrize(
    "design", ["fresh noise", "noisy increments", "tree", "tree, optimal"]
)
def test_average_variance_counts_bits_exactly(cr, design, horizon):
    """The bit-counting average equals the mean of the day-by-day formula,
    whose popcounts are recounted here from the binary expansions."""
    got = cr.value(f"average_error_variance({design!r}, {horizon}, 0.5)")
    levels = horizon.bit_length()
    r = [2**j / (2 ** (j + 1) - 1) for j in range(levels)]
    per_day = []
    for t in range(1, horizon + 1):
        bits = [j for j in range(levels) if t >> j & 1]
        per_day.append(
            {
                "fresh noise": horizon**2,
                "noisy increments": t,
                "tree": levels**2 * len(bits),
                "tree, optimal": levels**2 * sum(r[j] for j in bits),
            }[design]
        )
    assert got == pytest.approx(8 * np.mean(per_day), rel=1e-12)


def test_glued_worst_days_back_the_prose():
    """The prose says the tree's largest per-day standard deviation at
    T = 365 exceeds that of increments (on their last day): 9 sqrt(2 * 8)
    = 36 (day 255 has eight 1-bits) against sqrt(2 * 365)."""
    horizon = glued_value("continual-release", "cont_horizon")
    levels = horizon.bit_length()
    most_ones = max(bin(t).count("1") for t in range(1, horizon + 1))
    tree = glued_value("continual-release", "cont_worst_sd_tree")
    inc = glued_value("continual-release", "cont_worst_sd_inc")
    assert tree == pytest.approx(levels * np.sqrt(2 * most_ones))
    assert inc == pytest.approx(np.sqrt(2 * horizon))
    assert tree > inc


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)

STEM = "continual-release"


def test_the_book_s_solutions_get_full_marks(cr):
    assignments.assert_full_marks(cr, STEM)


def test_the_untouched_student_notebook_scores_zero(cr):
    assignments.assert_stubs_score_zero(cr, STEM)


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "cont-ex-levels",
            "levels_1000 = 11\n",
            "= 10: blocks of 1, 2, ..., 512 days",
        ),
        (
            "cont-ex-replace",
            "largest_move = 2 * levels\n",
            "below 2L",
        ),
        (
            "cont-ex-gaussian",
            "gauss_cross = 1024\n",
            "the tree pays sqrt(L) in sensitivity",
        ),
        (
            "cont-ex-padded",
            "padded_extra = {365: 10 / 9 - 1, 512: 0.0}\n",
            "only the scale",
        ),
    ],
    ids=[
        "ceil-levels",
        "two-l",
        "laplace-sensitivity",
        "padded-sd-not-variance",
    ],
)
def test_a_typical_wrong_answer_fails_with_its_reason(
    cr, label, code, expected
):
    # The book's answer first, then the wrong part over it.
    answer = assignments.exercise(STEM, label)["spec"].get("answer", "")
    message = assignments.wrong_answer_message(cr, STEM, label, answer + code)
    assert expected in message, message

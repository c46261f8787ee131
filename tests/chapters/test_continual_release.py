"""Tests for chapters/continual-release.ipynb: the chapter's own functions,
run in its namespace, checked against brute force and exact counts."""

import assignments
import nbformat
import numpy as np
import pytest
import support
from scipy import optimize, stats

from conftest import (
    CHAPTERS_DIR,
    chapter_kernel,
    glued_value,
    value_error_message,
)

STEM = "continual-release"


def markdown_text():
    """All Markdown of the chapter as stored, joined, on one line."""
    return support.markdown_text(STEM)


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
    """Mean over days of the empirical variance, 20,000 seeded runs on a
    100-day stream, within 4 standard errors of the formula. The standard
    error is measured: that of the run-by-run mean squared deviation over
    the days, which counts the correlation between days (large for
    increments, whose days share noise). It is small enough that a
    formula 10% off fails: 4 standard errors stay below 5%."""
    runs = 20_000
    cr.inject(
        "_x = np.random.default_rng(1).integers(0, 9, 100)\n"
        f"_e = {mechanism}(_x, 0.7, np.random.default_rng(2), runs={runs})"
        " - np.cumsum(_x)"
    )
    errors = cr["_e"]
    per_run = ((errors - errors.mean(axis=0)) ** 2).mean(axis=1)
    measured = per_run.mean()
    se = per_run.std(ddof=1) / np.sqrt(runs)
    formula = cr.value(f"float(error_variance({design!r}, 100, 0.7).mean())")
    assert 4 * se < 0.05 * formula
    assert abs(measured - formula) < 4 * se, (measured, formula, se)
    day_mean_se = np.sqrt(formula / runs)  # at most that of one day
    assert abs(errors.mean()) < 4 * day_mean_se


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
        "check_stream([[1, 2]])",
        "tree_levels(0)",
        "tree_levels(3.5)",
        "daily_counts([1, 3], 0)",
        "daily_counts([1, 3], 2.5)",
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


# --- the book's data rule: data never raises ---------------------------------


@pytest.mark.parametrize(
    "daily, expected",
    [
        ("[3, np.nan, 2]", [3, 0, 2]),  # a missing count is 0
        ("[3, None, 2]", [3, 0, 2]),
        ("[3, 'many', 2]", [3, 0, 2]),  # not a number: missing
        ("pd.Series([3, pd.NA, 2], dtype='Int64')", [3, 0, 2]),
        ("[3, -4, 2]", [3, 0, 2]),  # out of range: clamped
        ("[3, np.inf, 2]", [3, 10**9, 2]),
        ("[3.7, 1, 2]", [3, 1, 2]),  # fractional: rounded down
        ("np.zeros(3)", [0, 0, 0]),  # nobody: an ordinary stream
    ],
)
def test_check_stream_applies_the_data_rule(cr, daily, expected):
    assert cr.value("MAX_DAILY") == 10**9
    assert cr.value(f"check_stream({daily}).tolist()") == expected


@pytest.mark.parametrize(
    "mechanism",
    [
        "fresh_running_counts(_d, 1.0, rng)",
        "increment_running_counts(_d, 1.0, rng)",
        "tree_running_counts(_d, 1.0, rng)",
        "optimal_tree_running_counts(_d, 1.0, rng)",
        "doubling_running_counts(_d, 1.0, rng)",
        "factorization_running_counts(_d, sqrt_factor(5), sqrt_factor(5),"
        " 1.0, rng)",
    ],
)
@pytest.mark.parametrize(
    "stream",
    [
        "daily_counts([], 5)",  # no events at all
        "[1, np.nan, 2, 0, 4]",  # one missing record
        "[1, -7, 2, 0, 4]",  # one out-of-range record
        "[1, 'x', 2, 0, 4]",  # one non-numeric record
        "[1, 2.5, 2, 0, 4]",
    ],
)
def test_every_mechanism_releases_on_any_data(cr, mechanism, stream):
    """By the book's data rule no record makes a mechanism raise: each
    returns five finite running counts."""
    cr.inject(f"_d = {stream}")
    released = cr.value(f"np.asarray({mechanism}).tolist()")
    assert len(released) == 5 and np.all(np.isfinite(released))


def test_the_data_rule_keeps_event_level_neighbours(cr):
    """The privacy reasoning behind the rule: for any real counts x and
    x' = x +- e_s (one event more or less on day s), the streams the
    mechanism uses differ by at most one on day s and nowhere else."""
    rng = np.random.default_rng(12)
    base = rng.normal(3, 6, size=(300, 7))
    base[rng.random(base.shape) < 0.1] = np.nan
    base[:40] = rng.integers(-2, 6, size=(40, 7)) + 0.5  # ties: x.5
    for x in base:
        s, step = int(rng.integers(7)), float(rng.choice([-1.0, 1.0]))
        y = x.copy()
        y[s] = y[s] + step
        cr.inject(
            f"_a, _b = check_stream({x.tolist()}), "
            f"check_stream({y.tolist()})".replace("nan", "np.nan")
        )
        moved = np.array(cr.value("(_b - _a).tolist()"))
        assert np.all(moved[np.arange(7) != s] == 0)
        assert abs(moved[s]) <= 1


def test_daily_counts_applies_the_data_rule(cr):
    """Days outside the year go to its nearer end, a missing or
    non-numeric day to day 1, a fractional one down: every event is
    counted once."""
    counts = cr.value(
        "daily_counts([0, 3, 3.9, 400, np.nan, 'x', None, -2], 5).tolist()"
    )
    assert counts == [5, 0, 2, 0, 1]
    assert cr.value("daily_counts([], 4).tolist()") == [0, 0, 0, 0]


def test_noise_needs_a_generator(cr):
    with pytest.raises(Exception, match="Generator"):
        cr.value("tree_running_counts([1, 2], 1.0, 7)")


# --- the dial --------------------------------------------------------------


def test_stored_dial_compiles_and_starts_at_the_chapters_horizon():

    spec = support.stored_vega_lite("continual-release")
    (param,) = spec["params"]
    assert param["name"] == "horizon"
    assert param["value"] == glued_value("continual-release", "cont_horizon")
    assert param["bind"]["min"] == glued_value(
        "continual-release", "cont_dial_low"
    )
    assert param["bind"]["max"] == glued_value(
        "continual-release", "cont_dial_high"
    )
    assert "horizon" in support.vega_signals(spec)


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


# --- where the tree beats increments ------------------------------------------


def test_crossover_ranges_over_every_horizon(cr):
    """The exact crossovers over every T up to 5,000, recounted here from
    the binary expansions (the mean over days of popcount-weighted levels)
    against (T + 1) / eps^2 for increments: the optimal tree wins for
    T = 402-511 and every T >= 526, the plain tree for T = 978-1,023 and
    every T >= 1,193; and it keeps winning far beyond the scan."""
    last = 2**16
    t = np.arange(1, last + 1)
    bits = (t[:, None] >> np.arange(17)) & 1
    r = 2.0 ** np.arange(17) / (2.0 ** (np.arange(17) + 1) - 1)
    levels = np.array([int(T).bit_length() for T in t])
    increments = (t + 1) / 1.0
    expected = {}
    for design, weights in (("tree", np.ones(17)), ("tree, optimal", r)):
        mean_weight = np.cumsum(bits @ weights) / t
        wins = 2 * levels**2 * mean_weight < increments
        edges = np.flatnonzero(np.diff(np.concatenate([[0], wins, [0]])))
        runs = [(int(a) + 1, int(b)) for a, b in edges.reshape(-1, 2)]
        assert runs[-1][1] == last  # beyond the scan, as the bound says
        expected[design] = [*runs[:-1], (runs[-1][0], 5_000)]
    assert expected == {
        "tree": [(978, 1023), (1193, 5000)],
        "tree, optimal": [(402, 511), (526, 5000)],
    }
    got = cr.value("win_runs")
    assert {k: [tuple(v) for v in runs] for k, runs in got.items()} == expected
    for name, design in (("tree", "tree"), ("opt", "tree, optimal")):
        (first, end), (since, _) = expected[design]
        assert glued_value(STEM, f"cont_{name}_wins_first") == first
        assert glued_value(STEM, f"cont_{name}_wins_last") == end
        assert glued_value(STEM, f"cont_{name}_wins_from") == since
    # the stated bound: from T = 4,393 on, T + 1 >= 2 L^3
    bound_from = glued_value(STEM, "cont_bound_from")
    ok = t + 1 >= 2 * levels**3
    assert ok[bound_from - 1 :].all() and not ok[bound_from - 2]


def test_summary_states_the_crossovers_not_only_powers_of_two():
    text = markdown_text()
    summary = text[text.index("{admonition} Summary") :]
    summary = summary[: summary.index("**Key terms:**")]
    assert "cont_opt_wins_first" in summary
    assert "cont_tree_wins_from" in summary
    assert "cont_cross_opt" not in summary


# --- the factorizations at matched privacy ------------------------------------


def test_gaussian_rows_are_calibrated_for_the_same_epsilon_and_delta(cr):
    """The Gaussian column is at (1, 1e-6)-DP, like the Laplace column
    (pure 1-DP): the sd per unit of L2 sensitivity has exact delta 1e-6 at
    epsilon 1 (Balle and Wang's formula, written out here), and the
    table's Gaussian RMSEs follow; rho = 1/2 would be only (4.89,
    1e-6)-DP."""

    def delta(sigma, epsilon):
        return stats.norm.cdf(0.5 / sigma - epsilon * sigma) - np.exp(
            epsilon
        ) * stats.norm.cdf(-0.5 / sigma - epsilon * sigma)

    sigma = cr.value("SIGMA_UNIT")
    assert delta(sigma, 1.0) == pytest.approx(1e-6, rel=1e-9)
    assert delta(sigma * 0.99, 1.0) > 1.1e-6  # the smallest such sigma
    assert sigma == pytest.approx(4.2247, abs=1e-4)
    eps_half = optimize.brentq(lambda e: delta(1.0, e) - 1e-6, 0.1, 20)
    assert cr.value("rho_half_epsilon") == pytest.approx(eps_half, rel=1e-9)
    assert glued_value(STEM, "cont_rho_half_eps") == pytest.approx(
        4.8866, abs=1e-4
    )
    table = {
        row: cr.value(f"float(compare.loc[{row!r}, 'RMSE, Gaussian'])")
        for row in ("tree", "tree, optimal", "square root", "noisy increments")
    }
    days = np.arange(1, 366)
    assert table["noisy increments"] == pytest.approx(
        sigma * np.sqrt(days.mean()), rel=1e-12
    )
    popcount = np.array([bin(t).count("1") for t in days])
    assert table["tree"] == pytest.approx(
        sigma * np.sqrt(9 * popcount.mean()), rel=1e-12
    )
    expected = {
        "tree": 25.62,
        "tree, optimal": 19.81,
        "square root": 11.75,
        "noisy increments": 57.15,
    }
    assert table == pytest.approx(expected, abs=0.01)
    for row, key in (("square root", "sqrt"), ("noisy increments", "inc")):
        assert glued_value(STEM, f"cont_fact_{key}_gaussian") == pytest.approx(
            table[row]
        )


def test_prose_compares_at_the_same_privacy():
    text = markdown_text()
    assert "rescues the tree" not in text
    assert "(1, 10^{-6})" in text and "balle2018improving" in text
    assert "cont_rho_half_eps" in text


# --- citations and the DP-FTRL paragraph --------------------------------------


def test_citations_say_what_each_source_did():
    text = markdown_text()
    optimal = text[text.index("### The variance-optimal estimate") :]
    optimal = optimal[: optimal.index("### No counter can do much better")]
    assert "bottom-up pass of {cite:t}`hay2010boosting`" in optimal
    assert "hierarchical counts {cite:p}`hay2010boosting`" in optimal
    assert "{cite:t}`fichtenberger2023constant` introduced" in text
    assert "bounded its error on the worst day" in text
    assert (
        "{cite:t}`henzinger2023almost` showed that its mean squared error"
        in text
    )


def test_dp_ftrl_paragraph_names_what_the_theorems_do_not_cover():
    text = markdown_text()
    ftrl = text[text.index("**Where this goes: DP-FTRL.**") :]
    ftrl = ftrl[: ftrl.index("## Streams without an end")]
    assert "*adaptive*" in ftrl and "{cite:t}`denisov2022improved`" in ftrl
    assert "user-level privacy" in ftrl
    assert "{cite:t}`choquettechoo2023multi`" in ftrl
    assert "{cite:p}`xu2024advances`" in ftrl
    assert glued_value(STEM, "cont_gboard_delta") == 1e-10
    assert glued_value(STEM, "cont_gboard_eps_low") == 0.994
    assert glued_value(STEM, "cont_gboard_eps_high") == 13.69
    assert glued_value(STEM, "cont_gboard_rho") == 2


def test_variance_figure_legend_leaves_the_tree_curves_free(cr):
    """Redraw the figure of the variance section and check that its
    legend, in data coordinates, covers none of the four curves on days
    200 to 365."""
    import matplotlib.pyplot as plt

    cells = nbformat.read(CHAPTERS_DIR / f"{STEM}.ipynb", as_version=4).cells
    (source,) = [
        c.source
        for c in cells
        if c.cell_type == "code" and "Running count of sign-ups" in c.source
    ]
    cr.inject(source.replace("plt.show()", ""))
    fig, ax = cr["fig"], cr["ax"]
    fig.canvas.draw()
    box = (
        ax.get_legend()
        .get_window_extent()
        .transformed(ax.transData.inverted())
    )
    days = np.arange(200, 366)
    for design in ("fresh noise", "noisy increments", "tree", "tree, optimal"):
        sd = np.sqrt(
            cr.value(f"error_variance({design!r}, 365, 1.0).tolist()")
        )
        inside = (days >= box.x0) & (days <= box.x1)
        y = sd[days - 1][inside]
        assert not np.any((y >= box.y0) & (y <= box.y1)), design
    plt.close(fig)


# --- the worst day and the user-level table ---------------------------------------


def tree_errors(horizon, epsilon, runs, rng, optimal=False):
    """Errors of the tree's running counts, written out here: Laplace
    noise of scale L / epsilon on every complete node, day t summing the
    nodes (j, t >> j) of its 1-bits (bottom-up estimates if optimal)."""
    levels = horizon.bit_length()
    noise = [
        rng.laplace(0, levels / epsilon, (runs, horizon >> j))
        for j in range(levels)
    ]
    if optimal:
        for h in range(1, levels):
            r = 2**h / (2 ** (h + 1) - 1)
            below = noise[h - 1][:, : 2 * noise[h].shape[1]]
            noise[h] = r * noise[h] + (1 - r) * (
                below[:, 0::2] + below[:, 1::2]
            )
    t = np.arange(1, horizon + 1)
    total = np.zeros((runs, horizon))
    for j in range(levels):
        used = (t >> j) & 1 == 1
        total[:, used] += noise[j][:, (t[used] >> j) - 1]
    return total


@pytest.mark.parametrize("design", ["tree", "tree, optimal"])
def test_worst_day_quantile_matches_an_independent_simulation(cr, design):
    """The chapter's 2/3 quantile of the largest error over the 365 days
    (from its 2,000 runs) is the 2/3 quantile of the same law simulated
    here: 4,000 fresh runs fall below it 2/3 of the time, within 4
    standard errors of both simulations together."""
    quantile = cr.value(f"float(worst[{design!r}])")
    key = "tree" if design == "tree" else "opt"
    assert glued_value(STEM, f"cont_worst_{key}") == pytest.approx(quantile)
    runs = 4_000
    rng = np.random.default_rng(31)
    worst = np.abs(
        tree_errors(365, 1.0, runs, rng, optimal=design != "tree")
    ).max(axis=1)
    below = np.mean(worst <= quantile)
    se = np.sqrt(2 / 9 / runs + 2 / 9 / cr.value("RUNS"))
    assert abs(below - 2 / 3) < 4 * se, below


def test_user_level_table_by_hand(cr):
    """Kept visits are sum(min(visits, m)) over people (the first m
    visits of each); the noise sd on the last day is that of the tree at
    epsilon / m, sqrt(2 (m L / eps)^2 popcount(T)); the bias and the RMSE
    follow, and the best m is the table's smallest RMSE."""
    n_visits = np.array(cr.value("n_visits.tolist()"))
    table = cr["bounds"]
    levels, horizon, epsilon = 9, 365, 1.0
    for m, row in table.iterrows():
        kept = int(np.minimum(n_visits, m).sum())
        assert row["kept visits"] == kept
        assert row["bias"] == kept - n_visits.sum()
        sd = np.sqrt(2 * (m * levels / epsilon) ** 2 * bin(horizon).count("1"))
        assert row["noise sd"] == pytest.approx(sd, rel=1e-12)
        last_day = cr.value(
            f"float(error_variance('tree', 365, 1.0 / {m})[-1])"
        )
        assert row["noise sd"] ** 2 == pytest.approx(last_day, rel=1e-12)
        assert row["RMSE"] == pytest.approx(np.hypot(row["bias"], sd))
    best = int(table["RMSE"].idxmin())
    assert glued_value(STEM, "cont_best_m") == best == 24
    assert glued_value(STEM, "cont_best_rmse") == pytest.approx(
        table.loc[best, "RMSE"]
    )
    assert (
        glued_value(STEM, "cont_m1_bias")
        == n_visits.sum() - n_visits.clip(max=1).sum()
    )


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)


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
            "L = floor(log2 T) + 1: blocks of 1, 2, 4, ... days",
        ),
        (
            "cont-ex-levels",
            "sd_tree_1000 = np.sqrt(6 * 10**2)\n",
            "variance 2 b^2, not b^2",
        ),
        (
            "cont-ex-levels",
            "nodes_day_1000 = 10\n",
            "not one per level",
        ),
        (
            "cont-ex-replace",
            "largest_move = 2 * levels\n",
            "2L bounds two days that share no node",
        ),
        (
            "cont-ex-replace",
            "replace_epsilon_factor = 2.0\n",
            "2 epsilon is what add/remove promises",
        ),
        (
            # day T's own 1-bits instead of the most over days t <= T
            "cont-ex-lower-bound",
            "lower_bound_ratios = {\n"
            "    T: np.sqrt(2 * tree_levels(T) ** 2 * bin(T).count('1'))\n"
            "    / counting_lower_bound(T, 1.0)\n"
            "    for T in (10**2, 10**3, 10**4, 10**5, 10**6)\n"
            "}\n",
            "that uses day T's own 1-bits",
        ),
        (
            "cont-ex-gaussian",
            "gauss_cross = 1024\n",
            "the tree pays sqrt(L) in sensitivity",
        ),
        (
            "cont-ex-gaussian",
            "gauss_cross = beats['tree']\n",
            "that is the Laplace crossover",
        ),
        (
            "cont-ex-padded",
            "padded_extra = {365: 10 / 9 - 1, 512: 0.0}\n",
            "that is the ratio of the scales",
        ),
        (
            "cont-ex-padded",
            "most_nodes_365 = 10\n",
            "no day lies in more than L",
        ),
    ],
    ids=[
        "ceil-levels",
        "variance-b-squared",
        "nodes-per-level",
        "two-l",
        "add-remove-factor",
        "own-popcount",
        "laplace-sensitivity",
        "laplace-crossover",
        "padded-sd-not-variance",
        "incomplete-nodes",
    ],
)
def test_a_typical_wrong_answer_fails_with_its_reason(
    cr, label, code, expected
):
    # The book's answer first, then the wrong part over it.
    assignments.assert_wrong_answer_fails(
        cr, STEM, label, code, expected, over=True
    )


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        ("cont-ex-levels", "levels_1000 = 9\n", "misses the level of single"),
        (
            "cont-ex-levels",
            "sd_increments_1000 = 2000.0\n",
            "that is the variance of the increments' error",
        ),
        (
            "cont-ex-levels",
            "sd_tree_1000 = 40.0\n",
            "does not follow from your 6 nodes of scale 10",
        ),
        (
            "cont-ex-replace",
            "largest_move = 2 * levels\n",
            "compute it over all",
        ),
        (
            "cont-ex-lower-bound",
            "lower_bound_ratios[10**2] = 0.5\n",
            "no counter beats the lower bound",
        ),
        (
            "cont-ex-gaussian",
            "gauss_cross = beats['tree']\n",
            "that is the Laplace crossover on powers of two",
        ),
        (
            "cont-ex-gaussian",
            "gauss_cross = 4\n",
            "compares the average error over all days",
        ),
        (
            "cont-ex-padded",
            "most_nodes_365 = 10\n",
            "count only complete nodes",
        ),
    ],
    ids=[
        "floor-levels",
        "variance-for-sd",
        "inconsistent-sd",
        "two-l",
        "below-the-bound",
        "laplace-crossover",
        "last-day",
        "incomplete-nodes",
    ],
)
def test_the_public_checks_name_a_common_mistake(cr, label, code, expected):
    assignments.assert_public_checks_name(
        cr, STEM, label, code, expected, over=True
    )


@pytest.mark.parametrize(
    ("label", "code"),
    [
        (
            "cont-ex-levels",
            "levels_1000 = np.int64(10)\nscale_1000 = np.float32(10)\n"
            "nodes_day_1000 = 6.0\nsd_tree_1000 = 34.6\n"
            "sd_increments_1000 = 44.7\n",
        ),
        (
            "cont-ex-replace",
            "largest_move = np.int64(16)\nreplace_epsilon_factor = 1.78\n",
        ),
        (
            "cont-ex-lower-bound",
            "lower_bound_ratios = {10**2: 16.2, 10**3: 17.0, 10**4: 20.4,\n"
            "    10**5: 21.4, 10**6: np.float32(20.5)}\n",
        ),
        ("cont-ex-gaussian", "gauss_cross = np.int64(32)\n"),
        (
            "cont-ex-padded",
            "padded_extra = {365: np.float32(0.235), 512: 0}\n"
            "most_nodes_365 = np.int64(9)\n",
        ),
    ],
    ids=["numpy", "rounded", "rounded", "numpy", "rounded-and-numpy"],
)
def test_a_right_answer_in_another_form_passes(cr, label, code):
    assignments.assert_answer_passes(cr, STEM, label, code)


def test_gaussian_exercise_says_its_crossover_is_within_gaussian_noise():
    """The exercise compares the tree with increments under the same
    Gaussian noise; its solution says that at the same (epsilon, delta)
    Gaussian increments are worse than Laplace ones and the Gaussian tree
    no better than the Laplace tree (the factorization table: 57.2 vs
    19.1 and 25.6 vs 25.7), so the crossover at 32 days is no case for
    Gaussian noise."""
    text = markdown_text()
    solution = text[text.index(":label: cont-sol-gaussian") :]
    solution = solution[: solution.index("solution-end")]
    assert "under the same Gaussian noise" in solution
    assert "Gaussian increments are themselves worse than Laplace" in solution


# --- beyond the binary tree: k-ary trees, the smooth binary mechanism, ------
# --- high-probability bounds, designs at the same (epsilon, delta) ----------

from functools import cache  # noqa: E402
from math import comb  # noqa: E402


@cache
def glued_here():
    """Every value the chapter glues, as stored, read in one pass."""
    import ast

    notebook = nbformat.read(CHAPTERS_DIR / f"{STEM}.ipynb", as_version=4)
    values = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook", {})
            if record:
                text = output["data"][record["mime_prefix"] + "text/plain"]
                values[record["name"]] = ast.literal_eval(text)
    return values


def balanced_by_hand(t, k):
    """Digits d_0, d_1, ... of t in base k with |d| <= (k - 1) / 2."""
    digits = []
    while t:
        d = t % k
        if d > (k - 1) // 2:
            d -= k
        digits.append(d)
        t = (t - d) // k
    return digits


@pytest.mark.parametrize(
    "horizon, k", [(1, 3), (4, 3), (13, 3), (40, 5), (100, 7), (365, 29)]
)
def test_kary_tree_adds_up_and_each_event_lies_in_h_nodes(cr, horizon, k):
    """B @ C is the prefix-sum matrix; day t uses sum |d_j| nodes of its
    balanced digits (written out here); every column of C has L1 norm at
    most h, the fewest levels with (k^h - 1) / 2 >= T, and day 1 has h."""
    h = next(h for h in range(1, 40) if (k**h - 1) // 2 >= horizon)
    assert cr.value(f"kary_levels({horizon}, {k})") == h
    cr.inject(f"_B, _C = kary_factors({horizon}, {k})")
    assert cr.value(
        f"bool(np.array_equal(_B @ _C, np.tril(np.ones(({horizon},) * 2))))"
    )
    assert set(cr.value("np.unique(_B).tolist()")) <= {-1, 0, 1}
    assert set(cr.value("np.unique(_C).tolist()")) <= {0, 1}
    used = cr.value("np.abs(_B).sum(axis=1).tolist()")
    for t in range(1, horizon + 1):
        digits = balanced_by_hand(t, k)
        assert sum(d * k**j for j, d in enumerate(digits)) == t
        assert used[t - 1] == sum(abs(d) for d in digits)
    columns = cr.value("_C.sum(axis=0).tolist()")
    assert max(columns) == h and columns[0] == h


def test_kary_levels_and_digits_by_hand(cr):
    assert cr.value("kary_levels(364, 3)") == 6  # (3^6 - 1) / 2 = 364
    assert cr.value("kary_levels(365, 3)") == 7
    assert cr.value("kary_levels(365, 29)") == 2  # (29^2 - 1) / 2 = 420
    assert cr.value("kary_levels(420, 29)") == 2
    assert cr.value("kary_levels(421, 29)") == 3
    assert cr.value("balanced_digits([8], 3, 3).ravel().tolist()") == [
        -1,
        0,
        1,
    ]
    got = cr.value("balanced_digits(np.arange(-60, 61), 11, 2).tolist()")
    for n, (d0, d1) in zip(
        range(-60, 61), zip(*got, strict=True), strict=True
    ):
        assert d0 + 11 * d1 == n and max(abs(d0), abs(d1)) <= 5


def test_kary_variance_matches_an_independent_simulation(cr):
    """kary_running_counts adds Laplace(h / epsilon) to each node: the
    measured error variance per day is 2 (h / eps)^2 sum |d_j| (written
    out here), and kary_error_variance says the same. A wrong scale or
    epsilon for 2 epsilon moves the measured mean by a factor 4 or 1/4."""
    horizon, k, eps, runs = 40, 3, 0.5, 4000
    cr.inject(
        f"_x = np.random.default_rng(5).integers(0, 9, {horizon})\n"
        f"_err = kary_running_counts(_x, {eps}, np.random.default_rng(6),"
        f" k={k}, runs={runs}) - np.cumsum(_x)"
    )
    h = 4  # (3^4 - 1) / 2 = 40
    formula = np.array(
        [
            2 * (h / eps) ** 2 * sum(abs(d) for d in balanced_by_hand(t, k))
            for t in range(1, horizon + 1)
        ]
    )
    assert cr.value(
        f"kary_error_variance({horizon}, {k}, {eps}).tolist()"
    ) == pytest.approx(formula.tolist(), rel=1e-12)
    measured = np.array(cr.value("_err.var(axis=0).tolist()"))
    assert abs(cr.value("float(_err.mean())")) < 0.5
    # mean over 40 days of 4000-run variances: relative sd well under 2%
    assert measured.mean() / formula.mean() == pytest.approx(1, abs=0.05)


def test_kary_choice_and_asymptotic_constant(cr):
    """The best odd k for the year is found over every odd k (brute
    force over the digits here); the constant (k^2 - 1) / (2k ln^3 k) is
    the mean |digit| (k^2 - 1) / (4k) of uniform digits times 2 / ln^3 k,
    smallest at k = 19 over odd k, and about 4.05 times below the
    bottom-up binary tree's 1 / (2 ln^3 2)."""
    days = np.arange(1, 366)

    def mean_variance(k):
        h = next(h for h in range(1, 40) if (k**h - 1) // 2 >= 365)
        terms = [sum(abs(d) for d in balanced_by_hand(t, k)) for t in days]
        return 2 * h**2 * np.mean(terms)

    means = {k: mean_variance(k) for k in range(3, 45, 2)}
    best = min(means, key=means.get)
    assert cr.value("BEST_K") == best == 29
    assert glued_here()["cont_kary_rmse"] == pytest.approx(
        np.sqrt(means[29]), rel=1e-12
    )
    # uniform digits over all of -(k^h - 1) / 2 .. (k^h - 1) / 2
    for k in (3, 5, 19):
        full = cr.value(
            f"np.abs(balanced_digits(np.arange(-({k}**3 - 1) // 2,"
            f" ({k}**3 - 1) // 2 + 1), {k}, 3)).mean()"
        )
        assert full == pytest.approx((k * k - 1) / (4 * k), rel=1e-12)
    constant = {
        k: (k * k - 1) / (2 * k * np.log(k) ** 3) for k in range(3, 99, 2)
    }
    assert min(constant, key=constant.get) == 19
    assert glued_here()["cont_kary_asym_k"] == 19
    ratio = glued_here()["cont_kary_asym_ratio"]
    assert ratio == pytest.approx(1 / (2 * np.log(2) ** 3) / constant[19])
    assert ratio == pytest.approx(4.05, abs=0.01)


@pytest.mark.parametrize("horizon", [1, 2, 3, 5, 10, 100, 365])
def test_smooth_binary_adds_up_with_d_over_2_nodes_every_day(cr, horizon):
    """Leaves are the smallest d-bit numbers with d / 2 one-bits (listed
    here by brute force); B @ C = A; every day adds exactly d / 2 nodes;
    an event lies in at most d / 2 of them (L2 norm at most sqrt(d / 2))."""
    depth = next(d for d in range(2, 60, 2) if comb(d, d // 2) >= horizon + 1)
    assert cr.value(f"smooth_depth({horizon})") == depth
    leaves = [x for x in range(2**depth) if bin(x).count("1") == depth // 2]
    assert (
        cr.value(f"smooth_leaves({horizon}).tolist()") == leaves[: horizon + 1]
    )
    cr.inject(f"_B, _C = smooth_factors({horizon})")
    assert cr.value(
        f"bool(np.array_equal(_B @ _C, np.tril(np.ones(({horizon},) * 2))))"
    )
    assert cr.value("np.unique(_B.sum(axis=1)).tolist()") == [depth // 2]
    assert cr.value("float((_C**2).sum(axis=0).max())") <= depth // 2


def test_smooth_binary_error_is_the_same_on_every_day(cr):
    """With normal noise of sd sigma per node, each day's error has
    variance (d / 2) sigma^2: measured here on a short stream, and the
    glued year's sd is sqrt(6) * sqrt(5) * SIGMA_UNIT (d = 12; the top
    node is never used for 365 days, so the L2 sensitivity is sqrt(5))."""
    horizon, sigma, runs = 20, 2.0, 4000
    cr.inject(
        f"_B, _C = smooth_factors({horizon})\n"
        f"_x = np.random.default_rng(7).integers(0, 9, {horizon})\n"
        f"_err = factorization_running_counts(_x, _B, _C, {sigma},"
        f" np.random.default_rng(8), runs={runs}) - np.cumsum(_x)"
    )
    depth = cr.value(f"smooth_depth({horizon})")
    measured = np.array(cr.value("_err.var(axis=0).tolist()"))
    assert measured.mean() == pytest.approx(depth / 2 * sigma**2, rel=0.05)
    assert measured.max() / measured.min() < 1.3  # flat, up to sampling
    assert cr.value("smooth_depth(365)") == 12
    assert cr.value("round(smooth_l2 ** 2, 9)") == 5
    assert comb(11, 6) >= 366  # days 1..365 need no top bit
    sigma_unit = cr.value("SIGMA_UNIT")
    assert glued_here()["cont_smooth_sd"] == pytest.approx(
        np.sqrt(6) * np.sqrt(5) * sigma_unit, rel=1e-12
    )


def test_laplace_tail_bound_is_a_bound_and_chernoffs_best(cr):
    """For one Laplace noise Pr[|X| >= a] = exp(-a / b) exactly; for
    n = 4 and 9, 200,000 draws estimate it: the bound is above both. It is
    also the minimum over lambda of 2 exp(-lambda a) (1 - lambda^2
    b^2)^(-n), the Chernoff bound (a grid here)."""
    b = 1.5
    for n, a in ((1, 2.0), (1, 8.0), (4, 5.0), (4, 12.0), (9, 30.0)):
        bound = cr.value(f"float(laplace_sum_tail({a}, {n}, {b}))")
        lam = np.linspace(1e-4, 1 - 1e-4, 20001) / b
        grid = np.min(2 * np.exp(-lam * a) * (1 - (lam * b) ** 2) ** (-n))
        assert bound == pytest.approx(min(grid, 1.0), rel=1e-6)
        if n == 1:
            assert bound >= np.exp(-a / b)
        draws = np.random.default_rng(n).laplace(0, b, (200_000, n))
        tail = np.mean(np.abs(draws.sum(axis=1)) >= a)
        assert bound >= tail - 3 * np.sqrt(tail / 2e5 + 1e-12)
    # far in the tail the bound is within a small factor of the truth
    assert (
        cr.value("float(laplace_sum_tail(8.0, 1, 1.5))")
        < 4 * np.exp(-8 / 1.5) * 8
    )


def test_max_error_bounds_solve_the_union_bound(cr):
    """laplace_max_error_bound returns the a at which the daily bounds add
    up to beta; gaussian_max_error_bound, with equal sds, is sd times the
    normal quantile at 1 - beta / (2T)."""
    a = cr.value("laplace_max_error_bound([1, 2, 3, 1], 2.0, 0.1)")
    total = cr.value(f"float(laplace_sum_tail({a}, [1, 2, 3, 1], 2.0).sum())")
    assert total == pytest.approx(0.1, rel=1e-9)
    for sds, beta in (([3.0], 0.05), ([2.0] * 365, 0.05)):
        got = cr.value(f"gaussian_max_error_bound({sds}, {beta})")
        expected = sds[0] * stats.norm.isf(beta / (2 * len(sds)))
        assert got == pytest.approx(expected, rel=1e-9)
    got = cr.value("gaussian_max_error_bound([1.0, 4.0], 0.05)")
    total = 2 * (stats.norm.sf(got / 1.0) + stats.norm.sf(got / 4.0))
    assert total == pytest.approx(0.05, rel=1e-9)


def test_matched_table_by_hand(cr):
    """Each row of the table at (1, 1e-6), recomputed from the formulas
    written out here: the k-ary tree at pure epsilon 1 (h = 2, k = 29),
    the Gaussian tree (L2 sensitivity sqrt(9)), the smooth binary
    mechanism (variance 6 * 5 * SIGMA_UNIT^2 every day); every bound
    holds on the runs, and delta_cross is where the square root's RMSE,
    recalibrated, equals the k-ary tree's."""
    sigma = cr.value("SIGMA_UNIT")
    days = np.arange(1, 366)
    popcount = np.array([bin(t).count("1") for t in days])
    terms = np.array(
        [sum(abs(d) for d in balanced_by_hand(t, 29)) for t in days]
    )
    expected = {
        "kary": np.sqrt(np.mean(2 * 2**2 * terms)),
        "tree": np.sqrt(np.mean(2 * 81 * popcount)),
        "gtree": sigma * np.sqrt(np.mean(9 * popcount)),
        "smooth": sigma * np.sqrt(30),
        "inc": np.sqrt(np.mean(2 * days)),
    }
    for key, value in expected.items():
        assert glued_here()[f"cont_matched_{key}_rmse"] == pytest.approx(
            value, rel=1e-12
        )
    assert glued_here()["cont_matched_kary_worst"] == pytest.approx(
        np.sqrt(8 * terms.max()), rel=1e-12
    )
    # the k-ary bound, from the Chernoff formula written out here
    bound = glued_here()["cont_matched_kary_bound"]
    n = terms.astype(float)
    u = (np.sqrt((2 * n) ** 2 + bound**2) - 2 * n) / bound
    union = np.sum(2 * np.exp(-u * bound / 2) * (1 - u**2) ** (-n))
    assert union == pytest.approx(0.05, rel=1e-8)
    for key in ("inc", "tree", "kary", "gtree", "smooth", "sqrt"):
        assert 0 <= glued_here()[f"cont_matched_{key}_share"] <= 0.05
        assert (
            glued_here()[f"cont_matched_{key}_measured"]
            < (glued_here()[f"cont_matched_{key}_bound"])
        )
    delta = glued_here()["cont_delta_cross"]

    def exact_delta(s):
        return stats.norm.cdf(0.5 / s - s) - np.exp(1) * stats.norm.cdf(
            -0.5 / s - s
        )

    sigma_at = optimize.brentq(lambda s: exact_delta(s) - delta, 0.5, 50)
    sqrt_rmse = glued_here()["cont_matched_sqrt_rmse"] / sigma * sigma_at
    assert sqrt_rmse == pytest.approx(expected["kary"], rel=1e-8)
    assert 1e-6 < delta < 1e-4


@pytest.mark.parametrize(
    "mechanism",
    [
        "kary_running_counts(_d, 1.0, rng)",
        "kary_running_counts(_d, 1.0, rng, k=7, runs=2)[0]",
        "factorization_running_counts(_d, *smooth_factors(5), 1.0, rng)",
    ],
)
@pytest.mark.parametrize(
    "stream",
    [
        "daily_counts([], 5)",  # no events at all
        "[1, np.nan, 2, 0, 4]",  # one missing record
        "[1, -7, 2, 0, 4]",  # one out-of-range record
        "[1, 'x', 2, 0, 4]",  # one non-numeric record
    ],
)
def test_new_counters_release_on_any_data(cr, mechanism, stream):
    """By the book's data rule no record makes the new counters raise."""
    cr.inject(f"_d = {stream}")
    released = cr.value(f"np.asarray({mechanism}).tolist()")
    assert len(released) == 5 and np.all(np.isfinite(released))


@pytest.mark.parametrize(
    "call",
    [
        "kary_levels(10, 4)",
        "kary_levels(10, 1)",
        "kary_levels(10, 3.0)",
        "kary_levels(0, 3)",
        "kary_factors(10, 2)",
        "balanced_digits([100], 3, 2)",
        "kary_running_counts([1, 2], 0, rng)",
        "kary_running_counts([1, 2], 1.0, rng, k=4)",
        "kary_error_variance(10, 3, -1.0)",
        "smooth_depth(0)",
        "smooth_factors(2.5)",
        "laplace_max_error_bound([1, 2], 1.0, 0)",
        "laplace_max_error_bound([1, 2], 1.0, 1.5)",
        "laplace_max_error_bound([1, 2], 0.0, 0.1)",
        "gaussian_max_error_bound([1.0], 1.0)",
    ],
)
def test_new_bad_arguments_raise_value_error(cr, call):
    assert value_error_message(cr, call)


def test_beyond_the_tree_prose_cites_and_states_its_sources():
    text = markdown_text()
    section = text[text.index("## Beyond the binary tree") :]
    section = section[: section.index("## Streams without an end")]
    for key in ("andersson2025count", "andersson2023smooth"):
        assert key in section
    assert "preprint" in section  # the factor 4 comes from arXiv v1
    assert "union bound" in section and "Chernoff" in section
    bib = (CHAPTERS_DIR.parent / "references.bib").read_text()
    for key in ("andersson2025count", "andersson2023smooth"):
        assert bib.count("{" + key + ",") == 1


def test_beyond_the_tree_kernel_values_by_hand(cr):
    """What the executed chapter computes (not only what it stored): the
    asymptotic constants, the smooth mechanism's sigma (sqrt(5) per unit
    for T = 365, d = 12), the Gaussian tree's simulated variance
    (sd SIGMA_UNIT sqrt(L) per node) and delta_cross, each from its
    formula written out here with its own analytic Gaussian."""
    for k in (3, 19, 29):
        assert cr.value(f"float(kary_constant({k}))") == pytest.approx(
            (k * k - 1) / (2 * k * np.log(k) ** 3), rel=1e-12
        )
    assert cr.value("binary_constant") == pytest.approx(
        1 / (2 * np.log(2) ** 3), rel=1e-12
    )

    def exact_delta(s, eps=1.0):
        return stats.norm.cdf(0.5 / s - eps * s) - np.exp(
            eps
        ) * stats.norm.cdf(-0.5 / s - eps * s)

    unit = optimize.brentq(lambda s: exact_delta(s) - 1e-6, 0.5, 50)
    assert cr.value("SIGMA_UNIT") == pytest.approx(unit, rel=1e-9)
    assert cr.value("float(sigma_smooth)") == pytest.approx(
        np.sqrt(5) * unit, rel=1e-9
    )
    assert cr.value("float(smooth_sd)") == pytest.approx(
        np.sqrt(30) * unit, rel=1e-9
    )
    # 2,000 runs over 365 days: the mean of the days' variances is within
    # 2% of the formula's (a missing sqrt(L) would make it 9 times smaller)
    measured = cr.value("float(gauss_tree_errors.var(axis=0).mean())")
    popcount = np.array([bin(t).count("1") for t in range(1, 366)])
    assert measured / (unit**2 * 9 * popcount.mean()) == pytest.approx(
        1, abs=0.03
    )
    kary = cr.value(
        'float(matched.loc[f"{BEST_K}-ary tree, Laplace", "RMSE"])'
    )
    sqrt_rmse = cr.value('float(matched.loc["square root, Gaussian", "RMSE"])')
    cross = exact_delta(kary / (sqrt_rmse / unit))
    assert cr.value("float(delta_cross)") == pytest.approx(cross, rel=1e-9)


@pytest.mark.parametrize(
    "call",
    [
        "laplace_max_error_bound([], 1.0, 0.1)",
        "laplace_max_error_bound([1, 0], 1.0, 0.1)",
        "gaussian_max_error_bound([], 0.1)",
        "gaussian_max_error_bound([1.0, 0.0], 0.1)",
        "gaussian_max_error_bound([1.0, -2.0], 0.1)",
        "gaussian_max_error_bound([1.0, np.inf], 0.1)",
    ],
)
def test_max_error_bounds_reject_bad_terms_and_sds(cr, call):
    """The number of noises per day and the sds are arguments: an empty
    list, a day without noise or a non-positive sd is a clear ValueError."""
    assert value_error_message(cr, call)


def test_smooth_prose_says_the_paper_calibrates_to_sqrt_d_over_2():
    """The chapter's sqrt(5) is a tighter calibration than the paper's
    sqrt(d / 2), valid for this horizon: the prose must say so."""
    text = markdown_text()
    section = text[text.index("### The smooth binary mechanism") :]
    section = section[: section.index("### How large is the largest error?")]
    assert (
        "authors' code" in section and "\\sqrt{d/2}$ for every $T$" in section
    )

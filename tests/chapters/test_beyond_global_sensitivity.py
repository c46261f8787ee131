"""Tests for chapters/beyond-global-sensitivity.ipynb: the chapter's own
functions, run in its namespace."""

import itertools

import assignments
import numpy as np
import pytest
import support
from support import recording

from conftest import chapter_kernel, value_error_message


@pytest.fixture(scope="module")
def tb():
    with chapter_kernel("beyond-global-sensitivity") as notebook:
        yield notebook


# --- brute force, independent of the chapter's formulas ------------------


def lower_median(table):
    """x_(ceil(n/2)) of a sorted tuple; 0 for the empty table."""
    return float(table[(len(table) + 1) // 2 - 1]) if table else 0.0


def brute_local(table, upper):
    m = lower_median(table)
    moved = [
        lower_median(tuple(sorted(table + (v,)))) for v in range(upper + 1)
    ]
    moved += [
        lower_median(table[:i] + table[i + 1 :]) for i in range(len(table))
    ]
    return max(abs(v - m) for v in moved)


def brute_gaps(table, upper, k_max):
    """max LS over all tables within k add/remove steps, k = 0..k_max."""
    seen, frontier = {table}, {table}
    best = [brute_local(table, upper)]
    for _ in range(k_max):
        grown = {
            tuple(sorted(t + (v,))) for t in frontier for v in range(upper + 1)
        }
        shrunk = {t[:i] + t[i + 1 :] for t in frontier for i in range(len(t))}
        frontier = (grown | shrunk) - seen
        seen |= frontier
        best.append(
            max([best[-1]] + [brute_local(t, upper) for t in frontier])
        )
    return best


def brute_smooth(table, upper, beta):
    # A^(k) = upper once k >= n (checked below), and exp(-beta k) * upper
    # only falls from there, so k up to n + 1 is more than enough.
    gaps = brute_gaps(table, upper, len(table) + 1)
    return max(np.exp(-beta * k) * g for k, g in enumerate(gaps))


def random_tables(seed, count, upper, max_size):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        size = int(rng.integers(1, max_size + 1))
        yield tuple(sorted(rng.integers(0, upper + 1, size).tolist()))


# --- local and smooth sensitivity ----------------------------------------


def test_local_sensitivity_matches_every_neighbour(tb):
    for table in random_tables(1, 40, 9, 7):
        tb.inject(f"_t = {list(table)}")
        got = tb.value("local_sensitivity_median(_t, 9)")
        assert got == brute_local(table, 9), table


def test_gaps_within_k_steps_match_breadth_first_search(tb):
    for table in random_tables(2, 25, 6, 5):
        tb.inject(f"_t = {list(table)}")
        got = tb.value("median_gap_within(_t, 6, np.arange(4)).tolist()")
        assert got == brute_gaps(table, 6, 3), table


@pytest.mark.parametrize("beta", [0.1, 0.5, 1.5])
def test_smooth_sensitivity_matches_brute_force(tb, beta):
    for table in random_tables(3, 12, 5, 4):
        tb.inject(f"_t = {list(table)}")
        got = tb.value(f"smooth_sensitivity_median(_t, 5, {beta})")
        assert got == pytest.approx(brute_smooth(table, 5, beta), rel=1e-12)


def test_gaps_reach_the_whole_range_from_n_steps(tb):
    # The prose: A^(k) = upper once k >= n (not only from n + 1), by
    # breadth-first search and by the chapter's formula; n - 1 steps need
    # not suffice: for (3, 3) in [0, 5], A^(1) = 3 - 0.
    for table in random_tables(6, 25, 5, 4):
        n = len(table)
        assert brute_gaps(table, 5, n + 1)[n:] == [5, 5], table
        tb.inject(f"_t = {list(table)}")
        got = tb.value(f"median_gap_within(_t, 5, np.arange({n}, {n + 3}))")
        assert got.tolist() == [5, 5, 5], table
    assert brute_gaps((3, 3), 5, 2) == [0, 3, 5]
    assert tb.value("median_gap_within([3, 3], 5, np.arange(3))").tolist() == [
        0,
        3,
        5,
    ]
    # The empty table: its median 0 moves to whatever one person brings.
    assert brute_gaps((), 5, 0) == [5]
    assert tb.value("local_sensitivity_median([], 5)") == 5
    assert tb.value("smooth_sensitivity_median([], 5, 0.5)") == 5


def test_smooth_sensitivity_is_smooth_between_neighbours(tb):
    # S(D) <= e^beta S(D') for every neighbour D' (one value added at any
    # point of the grid, or one removed), and S >= LS.
    beta = 0.3
    for table in random_tables(4, 15, 8, 6):
        tb.inject(f"_t = {list(table)}")
        s = tb.value(f"smooth_sensitivity_median(_t, 8, {beta})")
        assert s >= tb.value("local_sensitivity_median(_t, 8)")
        neighbours = [sorted(table + (v,)) for v in range(9)]
        neighbours += [table[:i] + table[i + 1 :] for i in range(len(table))]
        for other in neighbours:
            if not other:
                continue
            tb.inject(f"_o = {list(other)}")
            s_other = tb.value(f"smooth_sensitivity_median(_o, 8, {beta})")
            assert s <= np.exp(beta) * s_other * (1 + 1e-12)


def cauchy_release_of(tb, table, upper, eps, seed=7, draws=400):
    """(location, scale) of the chapter's smooth_median on `table`, read
    off its releases: with the same seed its Cauchy draws are the
    generator's own standard_cauchy, so the releases that escape the clamp
    lie on a line in them."""
    z = np.random.default_rng(seed).standard_cauchy(draws)
    out = tb["smooth_median"](
        list(table), upper, eps, np.random.default_rng(seed), draws
    )
    inner = (out > 0) & (out < upper)
    assert inner.sum() >= 2
    scale, location = np.polyfit(z[inner], out[inner], 1)
    assert np.allclose(location + scale * z[inner], out[inner], atol=1e-9)
    return location, scale


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_cauchy_sliding_constant_is_exact(tb, eps):
    # The chapter's smooth_median scales its Cauchy noise to S(D) / alpha,
    # with S the (eps/2)-smooth sensitivity; read alpha off its releases.
    # It must be the proof's 2 sinh(eps/4): the largest log density ratio
    # of the standard Cauchy under a shift by alpha is then eps/2, no more
    # (privacy), no less (no budget wasted).
    table = [20, 30, 40, 50, 60]
    location, scale = cauchy_release_of(tb, table, 125, eps)
    assert location == pytest.approx(40, abs=1e-9)  # the median
    smooth = tb["smooth_sensitivity_median"](table, 125, eps / 2)
    alpha = smooth / scale
    assert alpha == pytest.approx(2 * np.sinh(eps / 4), rel=1e-9)
    z = np.linspace(-50, 50, 2_000_001)
    ratio = np.log((1 + (z + alpha) ** 2) / (1 + z**2))
    assert ratio.max() == pytest.approx(eps / 2, rel=1e-6)


def test_smooth_median_density_ratio_stays_within_epsilon(tb):
    # End to end, before the clamp (post-processing): for every table of
    # 0 to 3 ages in [0, 6] and every neighbour (one age added), the two
    # Cauchy densities of the chapter's releases, located and scaled as
    # read off its draws, differ by at most a factor e^eps at every output
    # in [-2000, 2000]. (Scaling to the eps-smooth instead of the
    # (eps/2)-smooth sensitivity loses 1.03 here.)
    eps, upper = 1.0, 6
    y = np.linspace(-2000, 2000, 400_001)

    def log_density(location, scale):
        z = (y - location) / scale
        return -np.log(np.pi * scale * (1 + z * z))

    releases = {
        table: cauchy_release_of(tb, table, upper, eps)
        for n in range(4)
        for table in itertools.combinations_with_replacement(range(7), n)
    }
    worst = 0.0
    for table, (location, scale) in releases.items():
        if len(table) == 3:
            continue
        for v in range(upper + 1):
            other = releases[tuple(sorted(table + (v,)))]
            gap = log_density(location, scale) - log_density(*other)
            worst = max(worst, np.abs(gap).max())
    assert worst <= eps + 1e-9


def test_smooth_median_scale_and_clamp(tb):
    # 20,000 draws: the median |noise| of a Cauchy of scale s is s; the
    # table's bound is large enough that the clamp to [0, 125] is rarely hit.
    tb.inject(
        "_t = [20, 30, 40, 50, 60]\n"
        "_s = smooth_sensitivity_median(_t, 125, 0.5) / (2 * np.sinh(0.25))\n"
        "_d = smooth_median(_t, 125, 1.0, np.random.default_rng(5), 20_000)"
    )
    draws = np.array(tb.value("_d.tolist()"))
    scale = tb.value("_s")
    assert draws.min() >= 0 and draws.max() <= 125
    inner = np.median(np.abs(draws - 40))
    assert inner == pytest.approx(scale, rel=0.05)


# --- propose-test-release ------------------------------------------------


def test_ptr_distance_hand_example(tb):
    # Values x_1..x_6 = 0,10,10,10,10,20 in [0, 100], bound 5. The window
    # after k steps is x_ceil((5-k)/2) .. x_(floor((6+k)/2)+1):
    # k = 0: x_3..x_4 -> 0; k = 1: x_2..x_4 -> 0; k = 2: x_2..x_5 -> 0;
    # k = 3: x_1..x_5 -> 10 - 0 = 10 > 5 (remove three 10s: 0, 10, 20 has
    # local sensitivity 10). Distance 3.
    got = tb.value("ptr_distance_median([0, 10, 10, 10, 10, 20], 100, 5)")
    assert got == 3


def test_ptr_release_probability_formula(tb):
    # distance 4, eps_test 0.5, delta e^-1: T = 2, margin 0.5*4 - 1 = 1 ->
    # 1 - e^-1 / 2; distance 0: margin -1 -> e^-1 / 2.
    got = tb.value("ptr_release_probability(4, 0.5, np.exp(-1))")
    assert got == pytest.approx(1 - np.exp(-1) / 2, rel=1e-12)
    got = tb.value("ptr_release_probability(0, 0.5, np.exp(-1))")
    assert got == pytest.approx(np.exp(-1) / 2, rel=1e-12)


def test_ptr_measured_release_rate_matches_formula(tb):
    # Hand example above (distance 3) at total eps 1 (test eps 0.5) and
    # delta 0.3: T = ln(1/0.3)/0.5 = 2.41, margin 0.5*3 - 1.204 = 0.296.
    # 40,000 runs: standard error 0.0019; 5 s.e. is a fixed-seed margin.
    tb.inject(
        "_r = ptr_median([0, 10, 10, 10, 10, 20], 100, 5, 1.0, 0.3, "
        "np.random.default_rng(9), 40_000)"
    )
    measured = tb.value("float(np.mean(~np.isnan(_r)))")
    expected = 1 - 0.5 * np.exp(-(0.5 * 3 - np.log(1 / 0.3)))
    assert measured == pytest.approx(expected, abs=5 * 0.0019)
    released = np.array(tb.value("_r[~np.isnan(_r)].tolist()"))
    # released values are the median 10 plus Laplace(5 / 0.5): median |x|
    # of Laplace(b) is b ln 2.
    assert np.median(np.abs(released - 10)) == pytest.approx(
        10 * np.log(2), rel=0.05
    )


# --- the exponential-mechanism median ---------------------------------------


@pytest.mark.parametrize("q", [0.0, 0.1, 0.5, 0.9, 0.99, 1.0])
def test_rank_utility_moves_by_at_most_max_q_one_minus_q(tb, q):
    # Brute force over every table of 0 to 5 values on 0..4 and every
    # neighbour (one value added): the chapter's rank error moves by at
    # most max(q, 1 - q), and by exactly that somewhere (1/2 for the
    # median, not the 1 that an analysis ignoring q would assume).
    support.assert_rank_error_sensitivity(tb["quantile_rank_error"], q)


@pytest.mark.parametrize("q", [0.5, 0.9, 0.99, 0.999])
def test_private_quantile_is_calibrated_to_max_q_one_minus_q(tb, q):
    # The sensitivity handed to the exponential mechanism, at the median
    # and at the high quantiles the chapter uses: never 1/2 everywhere.
    with recording(tb, "exponential_mechanism") as calls:
        tb["private_quantile"](
            [1, 2, 3], q, np.arange(10), 1.0, np.random.default_rng(0)
        )
    ((utilities, sensitivity, epsilon, *_),) = calls
    assert sensitivity == max(q, 1 - q) and epsilon == 1.0


def test_smooth_table_says_what_the_prose_says(tb):
    # With the median's utility at its sensitivity 1/2, the exponential
    # mechanism's median error is at most smooth sensitivity's at every
    # sample size, 0 from 100 people on; rounding the Cauchy releases to
    # whole years (post-processing) brings 400 people to 0 and 25 people
    # level with the exponential mechanism.
    table = tb["smooth_table"]
    smooth = table["smooth: median |error|"]
    em = table["exp. mech.: median |error|"]
    rounded = table["smooth, rounded: median |error|"]
    assert (em <= smooth).all() and (em <= rounded).all()
    assert (em[em.index >= 100] == 0).all() and em.loc[10] > 0
    assert rounded.loc[400] == 0 < smooth.loc[400]
    assert rounded.loc[25] == em.loc[25]
    assert rounded.loc[10] > 1  # wider noise than a year stays wide


def test_rule_of_thumb_caveat_holds_on_the_gains(tb):
    # The table's caveat: on the heavy-tailed gains the private-quantile
    # bound loses to the public bound by two orders of magnitude.
    compare = tb["compare"]
    private = compare.loc["private quantile bound", "mean gain"]
    public = compare.loc["global sensitivity", "mean gain"]
    assert private > 100 * public


# --- the book's data rule: data never makes a mechanism raise --------------

DATA_CASES = support.AGE_DATA_CASES  # ages declared in [0, 125]
CLEANED = support.AGE_CLEANED  # the same after the rule
MECHANISMS = {
    "smooth_median": lambda tb, v, g: tb["smooth_median"](v, 125, 1.0, g, 20),
    "ptr_median": lambda tb, v, g: tb["ptr_median"](
        v, 125, 5.0, 1.0, 0.1, g, 20
    ),
    "private_quantile": lambda tb, v, g: tb["private_quantile"](
        v, 0.5, tb["AGE_GRID"], 1.0, g, 20
    ),
    "clipped_mean": lambda tb, v, g: tb["clipped_mean"](v, 125, 0.5, 0.5, g),
    "private_bound_mean": lambda tb, v, g: tb["private_bound_mean"](v, g),
    "slope_by_sums": lambda tb, v, g: tb["slope_by_sums"](
        v, np.arange(len(v)) * 10.0, 125, 168, 1.0, g
    ),
    "local_sensitivity_median": lambda tb, v, g: tb[
        "local_sensitivity_median"
    ](v, 125),
}


@pytest.mark.parametrize("case", list(DATA_CASES))
@pytest.mark.parametrize("mechanism", list(MECHANISMS))
def test_mechanisms_follow_the_data_rule(tb, mechanism, case):
    # No exception on any data; the release is finite (PTR may refuse:
    # nan), and it is exactly the release on the cleaned table with the
    # same seed, so the privacy argument for tables in range applies.
    # (private_bound_mean declares the gains' range, not 0..125: for it
    # only the first two hold here.)
    release = MECHANISMS[mechanism]
    got = np.asarray(
        release(tb, DATA_CASES[case], np.random.default_rng(1)), dtype=float
    )
    want = np.asarray(
        release(tb, CLEANED[case], np.random.default_rng(1)), dtype=float
    )
    if mechanism != "private_bound_mean":
        assert np.array_equal(got, want, equal_nan=True)
    if mechanism == "ptr_median":
        assert not np.any(np.isinf(got))
    else:
        assert np.all(np.isfinite(got))


def test_empty_table_has_median_zero_and_full_smooth_bound(tb):
    # The chapter's convention: the median of an empty table is 0, and one
    # person can move it anywhere in [0, 125], so S = 125 and the Cauchy
    # noise has scale 125 / (2 sinh(eps / 4)); PTR is at distance 0.
    assert tb.value("median_of([])") == 0.0
    location, scale = cauchy_release_of(tb, (), 125, 1.0)
    assert location == pytest.approx(0, abs=1e-9)
    assert scale == pytest.approx(125 / (2 * np.sinh(0.25)), rel=1e-12)
    assert tb.value("ptr_distance_median([], 125, 5)") == 0


def test_aggregate_blocks_counts_a_missing_estimate_as_low(tb):
    # A block whose statistic is undefined (nan) counts as the low end of
    # the output range, and a wild one is clipped: the same release as on
    # the cleaned estimates, with the same seed.
    for raw, cleaned in (
        ([0.1, np.nan, 0.3], [0.1, -1.0, 0.3]),
        ([0.1, 5.0, 0.3], [0.1, 1.0, 0.3]),
        ([0.1, "x", None], [0.1, -1.0, -1.0]),
    ):
        got, want = (
            tb["aggregate_blocks"](
                estimates, (-1, 1), 1.0, np.random.default_rng(2)
            )
            for estimates in (raw, cleaned)
        )
        assert np.isfinite(got) and got == want


def test_clipped_mean_and_slope_noise_their_sums_as_stated(tb):
    # clipped_mean: the clipped sum with sensitivity `upper` and its
    # epsilon, the count with sensitivity 1 and its own. slope_by_sums:
    # n, sum x, sum y, sum x^2, sum xy with sensitivities 1, X, Y, X^2, XY
    # and eps / 5 each, on values clamped to [0, X] and [0, Y].
    with recording(tb, "laplace_mechanism") as calls:
        tb["clipped_mean"](
            [10, 200, 30], 100, 0.3, 0.7, np.random.default_rng(3)
        )
    assert [c[:3] for c in calls] == [(140, 100, 0.3), (3, 1, 0.7)]
    x, y = [10.0, 200.0, 30.0], [5.0, 7.0, 300.0]
    with recording(tb, "laplace_mechanism") as calls:
        tb["slope_by_sums"](x, y, 100, 168, 1.0, np.random.default_rng(4))
    xc, yc = np.array([10, 100, 30]), np.array([5, 7, 168])
    values = [3, xc.sum(), yc.sum(), (xc * xc).sum(), (xc * yc).sum()]
    sensitivities = [1, 100, 168, 100**2, 100 * 168]
    assert [c[0] for c in calls] == pytest.approx(values)
    assert [c[1] for c in calls] == sensitivities
    assert [c[2] for c in calls] == pytest.approx([0.2] * 5)


# --- sample-and-aggregate ------------------------------------------------


def test_clipped_block_mean_has_the_stated_sensitivity(tb):
    # Add or remove one person: only their block's estimate changes, so the
    # clipped mean moves by at most (high - low) / m; with blocks of about
    # three people an outlier swings a block's slope across the whole
    # range, so the bound is nearly reached.
    tb.inject(
        """
        _rng = np.random.default_rng(12)
        _ids = np.arange(24)
        _x = _rng.integers(18, 80, 24).astype(float)
        _y = _rng.integers(10, 60, 24).astype(float)
        _h = keyed_hashes(_ids, b"k" * 16)
        def _agg(ids_h, x, y):
            b = block_of(ids_h, 8)
            return clipped_block_mean(block_slopes(x, y, b, 8), (-1, 1))
        _base = _agg(_h, _x, _y)
        _moves = []
        for _v in range(50):
            _hn = keyed_hashes(np.append(_ids, 1000 + _v), b"k" * 16)
            for _px, _py in ((18.0, 168.0), (80.0, 0.0), (50.0, 40.0)):
                _moves.append(abs(_agg(_hn, np.append(_x, _px),
                                       np.append(_y, _py)) - _base))
        for _i in range(24):
            _keep = np.arange(24) != _i
            _moves.append(abs(_agg(_h[_keep], _x[_keep], _y[_keep]) - _base))
        """
    )
    moves = np.array(tb.value("_moves"))
    assert moves.max() <= 2 / 8 + 1e-12
    assert moves.max() > 0.5 * 2 / 8  # the bound is nearly reached


def test_keyed_blocks_change_only_for_the_person(tb):
    tb.inject(
        "_a = block_of(keyed_hashes(['p1', 'p2', 'p3'], b'x' * 16), 7)\n"
        "_b = block_of(keyed_hashes(['p1', 'p3'], b'x' * 16), 7)"
    )
    a, b = tb.value("_a.tolist()"), tb.value("_b.tolist()")
    assert [a[0], a[2]] == b


def test_aggregate_noise_scale(tb):
    # 5 estimates in (-1, 1): sensitivity 2/5, at eps 0.5 scale 0.8; the
    # standard deviation of Laplace(0.8) is 0.8 * sqrt(2).
    tb.inject(
        "_g = np.random.default_rng(3)\n"
        "_o = [aggregate_blocks([0.1, 0.2, 5, -5, 0], (-1, 1), 0.5, _g) "
        "for _ in range(40_000)]"
    )
    out = np.array(tb.value("_o"))
    assert out.mean() == pytest.approx(0.06, abs=0.02)
    assert out.std() == pytest.approx(0.8 * np.sqrt(2), rel=0.03)


# --- the attack -----------------------------------------------------------


def test_attack_beats_the_dp_ceiling_as_computed(tb):
    rate = tb.value("attack_rate")
    exact = tb.value("float(exact_rate)")
    bound = tb.value("float(dp_bound)")
    assert rate == pytest.approx(exact, abs=4 * np.sqrt(0.25 / 20_000))
    assert exact > bound + 0.05
    assert bound == pytest.approx(np.e / (1 + np.e))


# --- bad input -------------------------------------------------------------


@pytest.mark.parametrize(
    "expression, fragment",
    [
        ("smooth_sensitivity_median([1, 2], 10, 0)", "beta"),
        ("smooth_sensitivity_median([1, 2], 10, -1)", "beta"),
        ("smooth_sensitivity_median([1, 2], 0, 0.5)", "upper"),
        ("smooth_median([1, 2], 10, 0, np.random.default_rng(1))", "epsilon"),
        ("smooth_median([1, 2], 10, -1, np.random.default_rng(1))", "epsilon"),
        (
            "smooth_median([1, 2], np.inf, 1.0, np.random.default_rng(1))",
            "upper",
        ),
        ("local_sensitivity_median([1], -10)", "upper"),
        (
            "ptr_median([1, 2], 10, 1, 1.0, 0, np.random.default_rng(1))",
            "delta",
        ),
        (
            "ptr_median([1, 2], 10, 1, 1.0, 1, np.random.default_rng(1))",
            "delta",
        ),
        (
            "ptr_median([1, 2], 10, 1, 1.0, 1.5, np.random.default_rng(1))",
            "delta",
        ),
        (
            "ptr_median([1, 2], 10, 1, 0, 0.1, np.random.default_rng(1))",
            "epsilon",
        ),
        (
            "ptr_median([1], 10, 0, 1.0, 0.1, np.random.default_rng(1))",
            "bound",
        ),
        ("ptr_release_probability(3, 0.5, 0)", "delta"),
        ("ptr_distance_median([1, 2], 10, 10)", "below upper"),
        ("ptr_release_probability(3, 0, 0.1)", "epsilon"),
        (
            "aggregate_blocks([0.1], (-1, 1), 0, np.random.default_rng(1))",
            "epsilon",
        ),
        (
            "aggregate_blocks([], (-1, 1), 1, np.random.default_rng(1))",
            "non-empty",
        ),
        ("clipped_block_mean([0.1], (1, -1))", "low < high"),
        (
            "clipped_mean([1, 2], -1, 0.5, 0.5, np.random.default_rng(1))",
            "bounds",
        ),
        (
            "clipped_mean([1, 2], 10, 0, 0.5, np.random.default_rng(1))",
            "epsilon",
        ),
        (
            "slope_by_sums([1, 2], [1], 10, 10, 1.0, np.random.default_rng(1))",
            "length",
        ),
        (
            "slope_by_sums([1, 2], [1, 2], 10, 10, 0, np.random.default_rng(1))",
            "epsilon",
        ),
        (
            "private_quantile([1, 2], 0.5, [], 1.0, np.random.default_rng(1))",
            "candidates",
        ),
        (
            "private_quantile([1, 2], 1.5, AGE_GRID, 1.0, "
            "np.random.default_rng(1))",
            "quantile",
        ),
        ("block_of(np.array([1], dtype=np.uint64), 0)", "n_blocks"),
    ],
)
def test_bad_input_is_rejected(tb, expression, fragment):
    assert fragment in value_error_message(tb, expression)


def test_rng_must_be_a_generator(tb):
    with pytest.raises(TypeError):
        tb.value("smooth_median([1, 2], 10, 1.0, 5)")
    with pytest.raises(TypeError):
        tb.value("ptr_median([1, 2], 10, 1, 1.0, 0.1, 5)")


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)

STEM = "beyond-global-sensitivity"


def test_the_book_s_solutions_get_full_marks(tb):
    assignments.assert_full_marks(tb, STEM)


def test_the_untouched_student_notebook_scores_zero(tb):
    assignments.assert_stubs_score_zero(tb, STEM)


def attack_at(scale_with, scale_without):
    """The attack at eps = 0.1 with the given noise scales for the two
    worlds (the chapter's are 10 / 0.1 and 1 / 0.1)."""
    return (
        "_g = np.random.default_rng(21)\n"
        "_s = _g.random(20_000) < 0.5\n"
        f"_w = np.where(_s, {scale_with}, {scale_without})\n"
        "_y = worlds['with'][0] + _g.laplace(0.0, _w)\n"
        "rate_small = float(np.mean(guesses_with(_y, worlds, 0.1) == _s))\n"
        "ceiling_small = float(np.exp(0.1) / (1 + np.exp(0.1)))\n"
    )


FORGETS_REMOVALS = (
    "def brute_gaps(table, upper, k_max):\n"
    "    # forgets removals: only adds values\n"
    "    def local(t):\n"
    "        m = median_of(t)\n"
    "        return max(\n"
    "            abs(median_of(sorted(t + (v,))) - m)\n"
    "            for v in range(upper + 1)\n"
    "        )\n"
    "    seen, frontier, best = {table}, {table}, [local(table)]\n"
    "    for _ in range(k_max):\n"
    "        frontier = {\n"
    "            tuple(sorted(t + (v,)))\n"
    "            for t in frontier for v in range(upper + 1)\n"
    "        } - seen\n"
    "        seen |= frontier\n"
    "        best.append(max([best[-1]] + [local(t) for t in frontier]))\n"
    "    return best\n"
)
PTR_TABLE = (
    "bound_table = pd.DataFrame({\n"
    "    b: {\n"
    "        'distance': ptr_distance_median(gainers, GAIN_UPPER, b),\n"
    "        'release prob.': ptr_release_probability(\n"
    "            ptr_distance_median(gainers, GAIN_UPPER, b), 0.5, 1e-6\n"
    "        ),\n"
    "        'median |noise|': NOISE,\n"
    "    }\n"
    "    for b in (10, 100, 1000, 5000)\n"
    "}).T\n"
)
SA_MEDIANS = (
    "hour_medians = np.array([\n"
    "    median_of(hours[block_of(hashes_by_key[0], 100) == j])\n"
    "    for j in range(100)\n"
    "])\n"
)
ORDER = (
    "def _slopes(x, y):\n"
    "    blocks = (np.arange(len(x)) * 100) // len(x)\n"
    "    return block_slopes(x, y, blocks, 100)\n"
    "changed_order = int(np.sum(\n"
    "    _slopes(age_float, hours) != _slopes(age_float[1:], hours[1:])\n"
    "))\n"
)
# keys not dropped with the row: everyone after the first takes the key of
# the person before them
MISALIGNED_KEYS = (
    "_k = block_of(hashes_by_key[0], 100)\n"
    "changed_keyed = int(np.sum(\n"
    "    block_slopes(age_float, hours, _k, 100)\n"
    "    != block_slopes(age_float[1:], hours[1:], _k[:-1], 100)\n"
    "))\n"
)


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "bgs-ex-attack-epsilon",
            "ceiling_small = np.exp(0.1) / (1 + np.exp(0.1))\n"
            "rate_small = ceiling_small\n",
            "that is the ceiling; noise scaled to the local sensitivity",
        ),
        (
            "bgs-ex-attack-epsilon",
            "ceiling_small = np.exp(1) / (1 + np.exp(1))\n",
            "that is the ceiling at eps = 1",
        ),
        (
            "bgs-ex-attack-epsilon",
            # both worlds with the larger world's noise: global-style noise
            attack_at("100.0", "100.0"),
            "the likelihood-ratio attack on the two tables at eps = 0.1",
        ),
        (
            "bgs-ex-brute-force",
            FORGETS_REMOVALS,
            "a neighbour adds any value 0..6 or removes any one person",
        ),
        (
            "bgs-ex-brute-force",
            "_book = brute_gaps\n"
            "def brute_gaps(table, upper, k_max):\n"
            "    return _book(table, upper, k_max)[1:]\n",
            "for k = 0..3",
        ),
        (
            "bgs-ex-ptr-bound",
            PTR_TABLE.replace("NOISE", "b * np.log(2)"),
            "the test spends half of eps = 1, so the noise has only 0.5",
        ),
        (
            "bgs-ex-ptr-bound",
            "bound_table = bound_table.assign(distance=bound_table.distance + 1)\n",
            "the fewest additions or removals of gainers",
        ),
        (
            "bgs-ex-sa-hours",
            SA_MEDIANS + "sa_err = 168 * np.log(2) / 1000\nem_err = 0.0\n",
            "the noise has scale 168 / (100 eps)",
        ),
        (
            "bgs-ex-sa-hours",
            "hour_medians = np.array([\n"
            "    hours[block_of(hashes_by_key[0], 100) == j].mean()\n"
            "    for j in range(100)\n"
            "])\n",
            "your block medians differ",
        ),
        (
            "bgs-ex-sa-hours",
            "em_err = 2 * sa_err\n",
            "use private_quantile on all the hours",
        ),
        (
            "bgs-ex-order-blocks",
            "def _slopes(x, y):\n"
            "    blocks = (np.arange(len(x)) * 100) // len(x)\n"
            "    return block_slopes(x, y, blocks, 100)\n"
            "changed_order = int(np.sum(\n"
            "    _slopes(age_float, hours)\n"
            "    != _slopes(age_float[:-1], hours[:-1])\n"
            "))\n"
            "changed_keyed = 1\n",
            "that removes the last person; remove the first",
        ),
        (
            "bgs-ex-order-blocks",
            ORDER + MISALIGNED_KEYS,
            "changes only their own block",
        ),
    ],
    ids=[
        "attack-rate-is-ceiling",
        "attack-ceiling-at-eps-1",
        "attack-same-noise",
        "brute-forgets-removals",
        "brute-drops-k-0",
        "ptr-noise-at-eps-1",
        "ptr-distance-off",
        "sa-noise-too-small",
        "sa-block-means",
        "sa-em-worse",
        "order-last-person",
        "order-keys-misaligned",
    ],
)
def test_a_typical_wrong_answer_fails_with_its_reason(
    tb, label, code, expected
):
    assignments.assert_wrong_answer_fails(tb, STEM, label, code, expected)


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "bgs-ex-attack-epsilon",
            "ceiling_small = np.exp(1) / (1 + np.exp(1))\n",
            "your ceiling is the one at eps = 1",
        ),
        (
            "bgs-ex-attack-epsilon",
            "rate_small = ceiling_small\n",
            "your success rate equals your ceiling",
        ),
        (
            "bgs-ex-brute-force",
            FORGETS_REMOVALS,
            "removing its one person is one step, and it leaves the empty table",
        ),
        (
            "bgs-ex-ptr-bound",
            PTR_TABLE.replace("NOISE", "b * np.log(2)"),
            "the test spends half of eps = 1",
        ),
        (
            "bgs-ex-sa-hours",
            "sa_err = 0.0\n",
            "its releases are noisy",
        ),
        (
            "bgs-ex-order-blocks",
            ORDER + MISALIGNED_KEYS,
            "each person's block depends on their own key only",
        ),
    ],
    ids=[
        "ceiling-at-eps-1",
        "rate-is-ceiling",
        "brute-forgets-removals",
        "ptr-noise-at-eps-1",
        "sa-no-noise",
        "order-keys-misaligned",
    ],
)
def test_the_public_checks_catch_a_common_mistake(tb, label, code, expected):
    assignments.assert_public_checks_name(tb, STEM, label, code, expected)


@pytest.mark.parametrize(
    ("label", "code"),
    [
        (
            "bgs-ex-attack-epsilon",
            "rate_small = np.float32(rate_small)\n"
            "ceiling_small = round(ceiling_small, 3)\n",
        ),
        (
            # another search, returning an array and warning on stderr
            "bgs-ex-brute-force",
            "import sys\n"
            "_book = brute_gaps\n"
            "def brute_gaps(table, upper, k_max):\n"
            "    print('searching', table, file=sys.stderr)\n"
            "    return np.array(_book(tuple(table), upper, k_max))\n",
        ),
        (
            "bgs-ex-ptr-bound",
            "bound_table = bound_table.rename(index=float).map(\n"
            "    lambda v: float(f'{v:.3g}')\n"
            ")\n",
        ),
        (
            "bgs-ex-sa-hours",
            "hour_medians = hour_medians.astype(int).tolist()\n"
            "sa_err = np.float32(sa_err)\n",
        ),
        (
            "bgs-ex-order-blocks",
            "changed_order = np.int64(changed_order)\n"
            "changed_keyed = np.int32(changed_keyed)\n",
        ),
    ],
    ids=[
        "attack-float32-rounded",
        "brute-array-and-stderr",
        "ptr-float-index-3-figures",
        "sa-int-list",
        "order-numpy-ints",
    ],
)
def test_a_right_answer_in_another_form_passes(tb, label, code):
    assignments.assert_answer_passes(tb, STEM, label, code)


def test_the_judge_s_attack_rate_is_exact(tb):
    # The judge integrates the success of the likelihood-ratio attack
    # (1/2 times the integral of the larger density; 0.848 here, by hand:
    # the guess flips at |y - 39| = ln(10) / 0.09) and accepts a rate of
    # 20,000 trials within 4.5 standard errors (0.011). 400,000 seeded
    # trials of the chapter's attack pass; 0.02 away they fail.
    tb.inject(
        """
        _g = np.random.default_rng(22)
        _s = _g.random(400_000) < 0.5
        _c = np.where(_s, worlds['with'][0], worlds['without'][0])
        _w = np.where(_s, worlds['with'][1], worlds['without'][1])
        _y = _c + _g.laplace(0.0, _w / 0.1)
        _rate = float(np.mean(guesses_with(_y, worlds, 0.1) == _s))
        """
    )
    rate = tb.value("_rate")
    t = np.log(10) / 0.09
    by_hand = 0.5 * ((1 - np.exp(-t / 10)) + np.exp(-t / 100))
    assert rate == pytest.approx(by_hand, abs=0.003)
    found = assignments.exercise(STEM, "bgs-ex-attack-epsilon")
    for shift, passes in ((0.0, True), (0.02, False), (-0.02, False)):
        code = f"rate_small = {rate + shift!r}\n"
        assert (assignments.failure(tb, found, code) is None) == passes


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_sampled_checks_accept_correct_answers_at_other_seeds(tb, seed):
    attack = (
        f"_g = np.random.default_rng({seed})\n"
        "_s = _g.random(20_000) < 0.5\n"
        "_c = np.where(_s, worlds['with'][0], worlds['without'][0])\n"
        "_w = np.where(_s, worlds['with'][1], worlds['without'][1])\n"
        "_y = _c + _g.laplace(0.0, _w / 0.1)\n"
        "rate_small = float(np.mean(guesses_with(_y, worlds, 0.1) == _s))\n"
        "ceiling_small = float(np.exp(0.1) / (1 + np.exp(0.1)))\n"
    )
    blocks = (
        f"_g = np.random.default_rng({seed})\n"
        "_b = block_of(hashes_by_key[0], 100)\n"
        "hour_medians = np.array(\n"
        "    [median_of(hours[_b == j]) for j in range(100)]\n"
        ")\n"
        "_r = np.array(\n"
        "    [aggregate_blocks(hour_medians, (0, 168), 1.0, _g)"
        " for _ in range(500)]\n"
        ")\n"
        "_e = private_quantile(hours, 0.5, np.arange(169), 1.0, _g, 500)\n"
        "sa_err = float(np.median(np.abs(_r - median_of(hours))))\n"
        "em_err = float(np.median(np.abs(_e - median_of(hours))))\n"
    )
    for label, code in (
        ("bgs-ex-attack-epsilon", attack),
        ("bgs-ex-sa-hours", blocks),
    ):
        assignments.assert_answer_passes(tb, STEM, label, code)


# --- finite-variance noise for smooth sensitivity (Bun and Steinke 2019) ----


@pytest.mark.parametrize("eps, dof", [(1.0, 3), (0.3, 3), (2.0, 5), (1.0, 1)])
def test_student_t_parameters_spend_epsilon_as_the_theorem_says(tb, eps, dof):
    # Bun and Steinke: eps = (d + 1) beta + (d + 1) s / (2 sqrt d); the
    # chapter gives half to each term.
    beta, s = tb["student_t_parameters"](eps, dof)
    assert (dof + 1) * beta == pytest.approx(eps / 2, rel=1e-12)
    assert (dof + 1) * s / (2 * np.sqrt(dof)) == pytest.approx(eps / 2)


@pytest.mark.parametrize("dof", [1, 3, 5])
def test_student_t_sliding_and_dilation_constants(dof):
    # The proof's two bounds for h(z) ~ (1 + z^2/d)^(-(d+1)/2): the slope
    # of ln h is at most (d + 1) / (2 sqrt d), and a change of scale by
    # e^lam moves ln(e^lam h(e^lam w)) - ln h(w) by at most max(1, d)|lam|
    # (approached, not exceeded), below the theorem's (d + 1)|lam|.
    z = np.linspace(-300, 300, 600_001)

    def log_h(v):
        return -(dof + 1) / 2 * np.log1p(v * v / dof)

    slope = np.abs(np.gradient(log_h(z), z)).max()
    assert slope == pytest.approx((dof + 1) / (2 * np.sqrt(dof)), rel=1e-6)
    w = np.concatenate([z, [1e6, -1e6]])
    for lam in (0.1, -0.1, 0.3, -0.3):
        ratio = np.abs(lam + log_h(np.exp(lam) * w) - log_h(w))
        assert ratio.max() <= max(1, dof) * abs(lam) + 1e-9
        assert ratio.max() > 0.99 * max(1, dof) * abs(lam)


def student_t_release_of(tb, table, upper, eps, seed=7, draws=400):
    """(location, scale) of the chapter's student_t_median on `table`, read
    off its releases (its t draws are the generator's own standard_t)."""
    z = np.random.default_rng(seed).standard_t(3, draws)
    out = tb["student_t_median"](
        list(table), upper, eps, np.random.default_rng(seed), draws
    )
    inner = (out > 0) & (out < upper)
    assert inner.sum() >= 2
    scale, location = np.polyfit(z[inner], out[inner], 1)
    assert np.allclose(location + scale * z[inner], out[inner], atol=1e-9)
    return location, scale


def test_student_t_median_scale_is_the_smooth_bound_over_s(tb):
    # d = 3, eps = 1: beta = 1/8 and s = sqrt(3) / 4.
    table = [20, 30, 40, 50, 60]
    location, scale = student_t_release_of(tb, table, 125, 1.0)
    assert location == pytest.approx(40, abs=1e-9)
    bound = tb["smooth_sensitivity_median"](table, 125, 1 / 8)
    assert scale == pytest.approx(bound / (np.sqrt(3) / 4), rel=1e-9)


def test_student_t_median_density_ratio_stays_within_epsilon(tb):
    # End to end, before the clamp: for every table of 0 to 3 ages in
    # [0, 6] and every neighbour (one age added), the two t(3) densities of
    # the chapter's releases differ by at most e^eps at every output.
    eps, upper = 1.0, 6
    y = np.linspace(-3000, 3000, 120_001)

    def log_density(location, scale):
        z = (y - location) / scale
        return -np.log(scale) - 2 * np.log1p(z * z / 3)

    releases = {
        table: student_t_release_of(tb, table, upper, eps)
        for n in range(4)
        for table in itertools.combinations_with_replacement(range(7), n)
    }
    worst = 0.0
    for table, (location, scale) in releases.items():
        if len(table) == 3:
            continue
        for v in range(upper + 1):
            other = releases[tuple(sorted(table + (v,)))]
            gap = log_density(location, scale) - log_density(*other)
            worst = max(worst, np.abs(gap).max())
    assert worst <= eps + 1e-9


@pytest.mark.parametrize("eps, beta", [(1.0, 0.25), (0.5, 0.05), (2.0, 1.0)])
def test_lln_parameters_meet_the_cdp_condition_at_least_variance(
    tb, eps, beta
):
    # eps = beta / sigma + exp(3 sigma^2 / 2) s, and sigma minimizes the
    # noise variance 2 exp(5 sigma^2) / (eps - beta / sigma)^2 (with s set
    # from eps): neighbouring sigmas do worse.
    sigma, s = tb["lln_parameters"](eps, beta)
    assert sigma > beta / eps and s > 0
    assert beta / sigma + np.exp(1.5 * sigma**2) * s == pytest.approx(eps)

    def variance(sg):
        return 2 * np.exp(5 * sg**2) / (eps - beta / sg) ** 2

    for step in (0.999, 1.001):
        assert variance(sigma * step) > variance(sigma)


def test_lln_median_scale_and_beta(tb):
    # beta = eps / 4; noise = S_beta / s * Laplace * exp(sigma * normal),
    # the Laplace draws first; the clamp to [0, 125] on top.
    eps, table, draws = 1.0, [20, 30, 40, 50, 60], 400
    g = np.random.default_rng(11)
    sigma, s = tb["lln_parameters"](eps, eps / 4)
    z = g.laplace(0.0, 1.0, draws)
    z = z * np.exp(sigma * g.standard_normal(draws))
    bound = tb["smooth_sensitivity_median"](table, 125, eps / 4)
    want = np.clip(40 + bound / s * z, 0, 125)
    got = tb["lln_median"](table, 125, eps, np.random.default_rng(11), draws)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-9)


def test_finite_variance_table_says_what_the_prose_says(tb):
    table = tb["fv_table"]
    for size in (25, 100, 400, 1_600):
        rows = table.loc[size]
        med, rmse, sd = (
            rows["median |error|"],
            rows["RMSE"],
            rows["noise s.d."],
        )
        # Cauchy smallest median error, Student's t largest.
        assert med["Cauchy"] < med["Laplace log-normal"] < med["Student's t"]
        assert np.isinf(sd["Cauchy"]) and np.isfinite(sd["Student's t"])
        if size >= 100:  # the Laplace log-normal has the smallest RMSE
            assert rmse["Laplace log-normal"] < min(
                rmse["Cauchy"], rmse["Student's t"]
            )


# --- inverse sensitivity (Asi and Duchi) ------------------------------------


def brute_path_lengths(table, upper):
    """len(table; c) for c = 0..upper by breadth-first search over
    additions (any value 0..upper) and removals; the empty table has
    median 0, as in the chapter."""
    found, seen, frontier, k = {}, {table}, {table}, 0
    while len(found) < upper + 1:
        for t in frontier:
            found.setdefault(lower_median(t), k)
        grown = {
            tuple(sorted(t + (v,))) for t in frontier for v in range(upper + 1)
        }
        shrunk = {t[:i] + t[i + 1 :] for t in frontier for i in range(len(t))}
        frontier = (grown | shrunk) - seen
        seen |= frontier
        k += 1
    return [found[float(c)] for c in range(upper + 1)]


def test_median_path_length_matches_breadth_first_search(tb):
    tables = [(), (0,), (4,), (0, 0, 0, 0), (1, 3), (2, 2, 2)]
    tables += list(random_tables(21, 14, 4, 4))
    for table in tables:
        tb.inject(f"_t = {list(table)}")
        got = tb.value("median_path_length(_t, 4, np.arange(5)).tolist()")
        assert got == brute_path_lengths(table, 4), table


def test_path_length_is_within_one_of_twice_the_rank_error(tb):
    # 2 r(c) <= len(c) <= 2 r(c) + 1 with r the rank error by its
    # definition; so the two mechanisms' probabilities differ by a factor
    # at most e^(eps/2), and inverse sensitivity is exact at least as often.
    candidates = np.arange(0, 9.5, 0.5)
    rng = np.random.default_rng(23)
    gaps = set()
    for _ in range(60):
        table = rng.integers(0, 10, int(rng.integers(0, 9))).tolist()
        length = tb["median_path_length"](table, 9, candidates)
        ranks = support.rank_errors(table, 0.5, candidates)
        gaps |= set((length - 2 * ranks).tolist())
        for eps in (0.5, 2.0):
            p_inv = tb["exponential_probabilities"](-length, 1, eps)
            p_em = tb["exponential_probabilities"](-ranks, 0.5, eps)
            ratio = np.maximum(p_inv / p_em, p_em / p_inv)
            assert ratio.max() <= np.exp(eps / 2) * (1 + 1e-12)
            truth = candidates == lower_median(tuple(sorted(table)))
            assert p_inv[truth].sum() >= p_em[truth].sum() - 1e-12
    assert gaps == {0.0, 1.0}


def test_inverse_sensitivity_median_is_calibrated_to_sensitivity_one(tb):
    with recording(tb, "exponential_mechanism") as calls:
        tb["inverse_sensitivity_median"](
            [1, 2, 5], 6, np.arange(7), 0.7, np.random.default_rng(0)
        )
    ((utilities, sensitivity, epsilon, *_),) = calls
    assert sensitivity == 1 and epsilon == 0.7
    want = brute_path_lengths((1, 2, 5), 6)
    assert (-np.asarray(utilities)).tolist() == want


def test_inverse_table_says_what_the_prose_says(tb):
    table = tb["inv_table"]
    assert table["len - 2r: min"].min() == 0
    assert table["len - 2r: max"].max() == 1
    assert (table["largest prob. ratio"] <= np.exp(0.5) + 1e-12).all()
    assert table["largest prob. ratio"].max() > 0.99 * np.exp(0.5)
    assert (
        table["inverse: Pr[exact]"] >= table["exp. mech.: Pr[exact]"]
    ).all()
    assert (
        table["inverse: median |error|"] == table["exp. mech.: median |error|"]
    ).all()


NEW_MECHANISMS = {
    "student_t_median": lambda tb, v, g: tb["student_t_median"](
        v, 125, 1.0, g, 20
    ),
    "lln_median": lambda tb, v, g: tb["lln_median"](v, 125, 1.0, g, 20),
    "inverse_sensitivity_median": lambda tb, v, g: tb[
        "inverse_sensitivity_median"
    ](v, 125, tb["AGE_GRID"], 1.0, g, 20),
    "median_path_length": lambda tb, v, g: tb["median_path_length"](
        v, 125, tb["AGE_GRID"]
    ),
}


@pytest.mark.parametrize("case", list(DATA_CASES))
@pytest.mark.parametrize("mechanism", list(NEW_MECHANISMS))
def test_new_medians_follow_the_data_rule(tb, mechanism, case):
    # No exception on any data, a finite release, and exactly the release
    # on the cleaned table with the same seed.
    release = NEW_MECHANISMS[mechanism]
    got = np.asarray(
        release(tb, DATA_CASES[case], np.random.default_rng(1)), dtype=float
    )
    want = np.asarray(
        release(tb, CLEANED[case], np.random.default_rng(1)), dtype=float
    )
    assert np.array_equal(got, want) and np.all(np.isfinite(got))


@pytest.mark.parametrize(
    "expression, fragment",
    [
        ("student_t_median([1], 10, 0, np.random.default_rng(1))", "epsilon"),
        (
            "student_t_median([1], 10, 1.0, np.random.default_rng(1), dof=0)",
            "dof",
        ),
        ("student_t_median([1], -1, 1.0, np.random.default_rng(1))", "upper"),
        ("lln_median([1], 10, -1, np.random.default_rng(1))", "epsilon"),
        ("lln_parameters(1.0, 0)", "beta"),
        ("median_path_length([1], 10, [11])", "candidates"),
        ("median_path_length([1], 10, [np.nan])", "candidates"),
        ("median_path_length([1], 10, [])", "non-empty"),
        (
            "inverse_sensitivity_median([1], 10, [1, 2], 0, "
            "np.random.default_rng(1))",
            "epsilon",
        ),
    ],
)
def test_new_medians_reject_bad_arguments(tb, expression, fragment):
    assert fragment in value_error_message(tb, expression)


def test_new_medians_want_a_generator(tb):
    for expression in (
        "student_t_median([1, 2], 10, 1.0, 5)",
        "lln_median([1, 2], 10, 1.0, 5)",
        "inverse_sensitivity_median([1, 2], 10, [1, 2], 1.0, 5)",
    ):
        with pytest.raises(TypeError):
            tb.value(expression)


def test_lln_release_meets_its_renyi_bound_numerically(tb):
    # The CDP condition, checked by quadrature at the chapter's eps = 1,
    # beta = 1/4: for the worst neighbour (a shift by s in units of the
    # noise scale and a change of scale by e^(+-beta)), the Renyi
    # divergence of every order tried is at most alpha eps^2 / 2.
    from scipy import special

    eps, beta = 1.0, 0.25
    sigma, s = tb["lln_parameters"](eps, beta)
    y, w = np.polynomial.hermite_e.hermegauss(120)
    w = w / np.sqrt(2 * np.pi)

    def log_lln(z):  # log density of Laplace * exp(sigma * normal)
        a = -sigma * y - np.log(2) - np.abs(z)[:, None] * np.exp(-sigma * y)
        return special.logsumexp(a, b=w, axis=1)

    half = np.concatenate(
        [np.linspace(0, 40, 3001)[1:], np.geomspace(40, 1e5, 1501)[1:]]
    )
    z = np.concatenate([-half[::-1], [0.0], half])
    log_p = log_lln(z)
    assert np.trapezoid(np.exp(log_p), z) == pytest.approx(1, abs=1e-4)
    for lam in (beta, -beta):
        for shift in (s, -s):
            log_q = log_lln((z - shift) / np.exp(lam)) - lam
            for alpha in (1.5, 2, 5, 20):
                for a, b in ((log_p, log_q), (log_q, log_p)):
                    mass = np.trapezoid(np.exp(alpha * a + (1 - alpha) * b), z)
                    assert np.log(mass) / (alpha - 1) <= alpha * eps**2 / 2


def test_noise_sd_is_the_standard_deviation_of_the_noise(tb):
    # Student's t with d = 3 has variance d / (d - 2) = 3; the Laplace
    # log-normal E[X^2] E[exp(2 sigma Y)] = 2 exp(2 sigma^2); each times
    # the squared scale S_beta / s (beta = eps / 8, s = sqrt(3) eps / 4;
    # beta = eps / 4, s = exp(-3 sigma^2 / 2) (eps - beta / sigma), sigma
    # minimizing the variance, found here by a search of our own).
    eps, upper = tb.value("SS_EPSILON"), tb.value("AGE_UPPER")
    grid = np.linspace(eps / 4 / eps + 1e-6, 2, 200_001)
    log_var = 5 * grid**2 - 2 * np.log(eps - eps / 4 / grid)
    sigma = grid[np.argmin(log_var)]
    s_lln = np.exp(-1.5 * sigma**2) * (eps - eps / 4 / sigma)
    for table in ([20, 30, 40, 50, 60], [18, 18, 19, 80], [33] * 7):
        smooth = tb["smooth_sensitivity_median"]
        s_t = np.sqrt(3) * eps / 4
        want_t = np.sqrt(3) * smooth(table, upper, eps / 8) / s_t
        want_lln = (
            np.sqrt(2) * np.exp(sigma**2) * smooth(table, upper, eps / 4)
        ) / s_lln
        tb.inject(f"_t = {table}")
        got_t = tb.value('float(noise_sd("Student\'s t", _t))')
        got_lln = tb.value('float(noise_sd("Laplace log-normal", _t))')
        assert got_t == pytest.approx(want_t, rel=1e-9)
        assert got_lln == pytest.approx(want_lln, rel=1e-5)


def test_new_proofs_say_what_they_derive():
    text = support.markdown_text("beyond-global-sensitivity")
    # The dilation term lambda - (d + 1)/2 ln(...) runs from lambda to
    # -d lambda, for either sign of lambda.
    assert "the whole lies between $\\lambda$ and $-d\\lambda$: in" in text
    # Emptying the table yields median 0 only: it matters for c = 0 alone
    # (for c > 0 with no value at or above c, n is less than the deficit).
    assert "matters only for $c = 0$, where $L = 0$" in text
    # The two medians live on the same grid: they differ by the half step
    # of the path length, not by a discretization.
    assert "up to discretization" not in text
    # Student's t is no longer the best known noise for pure DP.
    assert "{cite:t}`hladik2025smooth`" in text

"""Tests for chapters/private-selection.ipynb: the chapter's own functions,
run in its namespace."""

import itertools

import assignments
import numpy as np
import pandas as pd
import pytest
import support
from scipy import stats
from support import recording

from conftest import chapter_kernel, value_error_message


@pytest.fixture(scope="module")
def tb():
    with chapter_kernel("private-selection") as notebook:
        yield notebook


def selection_probabilities(utilities, sensitivity, epsilon):
    """exp(eps u / (2 sensitivity)), normalized, independent of the chapter."""
    exponents = epsilon * np.asarray(utilities, float) / (2 * sensitivity)
    weights = np.exp(exponents - exponents.max())
    return weights / weights.sum()


# --- the exponential mechanism ------------------------------------------------


def test_exponential_probabilities_hand_computed(tb):
    # Utilities 0, 2, 4 at eps = 1, Delta = 2: weights exp(u / 4) =
    # 1, e^0.5, e^1, normalized by their sum.
    got = tb.value("exponential_probabilities([0, 2, 4], 2, 1.0).tolist()")
    weights = np.exp([0.0, 0.5, 1.0])
    assert got == pytest.approx(weights / weights.sum(), rel=1e-12)


def test_exponential_probabilities_do_not_overflow(tb):
    # exp(1e6 / 2) overflows a double; the shift by the maximum must not.
    # Two candidates one unit apart at eps = 2, Delta = 1: ratio e^1.
    got = tb.value(
        "exponential_probabilities([1e6, 1e6 - 1], 1, 2.0).tolist()"
    )
    assert np.all(np.isfinite(got))
    assert got[0] / got[1] == pytest.approx(np.e, rel=1e-9)


def test_exponential_mechanism_matches_exact_distribution(tb):
    # Chi-square goodness of fit at a fixed seed: 40,000 draws over 5
    # candidates; a correct sampler fails at the 0.1% level with
    # probability 0.001 only, and this seed is fixed.
    utilities = [0.0, 1.0, 2.0, 3.0, 6.0]
    tb.inject(f"_u = {utilities}")
    draws = tb.value(
        "exponential_mechanism(_u, 1, 1.0, np.random.default_rng(11), "
        "40_000).tolist()"
    )
    exact = tb.value("exponential_probabilities(_u, 1, 1.0).tolist()")
    support.assert_counts_fit(np.bincount(draws, minlength=5), exact, 40_000)


def test_occupation_candidates_do_not_depend_on_the_data(tb):
    # Without the 9 people in the Armed Forces, their code stays a
    # candidate with count 0 (the list comes from the codebook), and a
    # value outside the codebook is no candidate.
    tb.inject(
        "_c = occupation_counts_on(adult[adult['Occupation'] != "
        "'Armed-Forces'])"
    )
    assert tb.value("len(_c)") == 14
    assert tb.value("int(_c['Armed-Forces'])") == 0
    assert tb.value("int(_c.iloc[0])") == 4140  # Prof-specialty, first
    tb.inject(
        "_t = pd.DataFrame({'Occupation': ['Sales', 'Astronaut', None]})"
    )
    assert tb.value("int(occupation_counts_on(_t).sum())") == 1


def test_exponential_mechanism_returns_int_for_one_draw(tb):
    assert (
        tb.value(
            "type(exponential_mechanism([1, 2], 1, 1.0, np.random.default_rng(0)))"
            ".__name__"
        )
        == "int"
    )


def test_exponential_mechanism_is_private_on_occupations(tb):
    # Exact check of the theorem on the census counts: for every add/remove
    # neighbour (one occupation count +1 or -1), every candidate's
    # probability ratio stays within e^eps.
    eps = 0.3
    counts = np.array(tb.value("counts.tolist()"), dtype=float)
    tb.inject("_p = lambda c, e: exponential_probabilities(c, 1, e)")
    base = np.array(tb.value(f"_p({counts.tolist()}, {eps}).tolist()"))
    worst = 0.0
    for j in range(len(counts)):
        for step in (1, -1):
            neighbour = counts.copy()
            neighbour[j] += step
            other = np.array(
                tb.value(f"_p({neighbour.tolist()}, {eps}).tolist()")
            )
            worst = max(worst, np.abs(np.log(base / other)).max())
    assert worst <= eps + 1e-12


def test_monotone_version_private_for_counts_not_for_replace_one(tb):
    # Monotone theorem: weights exp(eps u / Delta), i.e. the general
    # mechanism at 2 eps. Small histogram, exact ratios.
    eps = 1.0
    counts = np.array([3.0, 2.0, 0.0])
    tb.inject("_p = lambda c, e: exponential_probabilities(c, 1, e)")

    def probs(c):
        return np.array(tb.value(f"_p({list(c)}, {2 * eps}).tolist()"))

    base = probs(counts)
    add_remove = 0.0
    for j in range(3):
        for step in (1, -1):
            other = counts.copy()
            other[j] += step
            if other[j] >= 0:
                add_remove = max(
                    add_remove, np.abs(np.log(base / probs(other))).max()
                )
    assert add_remove <= eps + 1e-12
    # Replace-one: one count down, another up. With a dominant candidate
    # the normalizing sum grows by about e^eps while the lowered candidate
    # loses e^eps, so the monotone version loses about 2 eps (here 1.98);
    # the general version with the factor 2 stays within eps.
    before, after = [1.0, 5.0, 0.0], [0.0, 6.0, 0.0]
    assert np.abs(np.log(probs(before) / probs(after))).max() > eps + 0.5
    general = [
        np.array(tb.value(f"_p({c}, {eps}).tolist()")) for c in (before, after)
    ]
    assert np.abs(np.log(general[0] / general[1])).max() <= eps + 1e-12


def test_exponential_mechanism_is_eps_squared_over_8_zcdp(tb):
    # Cesar and Rogers: the exponential mechanism (with the factor 2) is
    # (eps^2 / 8)-zCDP: its Renyi divergence of every order a > 1 between
    # neighbours is at most a eps^2 / 8, a quarter of the generic
    # a eps^2 / 2. Checked exactly for 200 random utility vectors, each
    # moved by a random step in [-1, 1] per candidate (any sensitivity-1
    # neighbour), orders 1.001 to 200, plus the pair [0, 0] -> [1, -1],
    # where the bound is nearly attained (0.120 against 0.125 at a -> 1).
    eps = 1.0
    rng = np.random.default_rng(61)
    pairs = [([0.0, 0.0], [1.0, -1.0])]
    for _ in range(200):
        u = rng.uniform(0, 4, size=int(rng.integers(2, 6)))
        pairs.append((u.tolist(), (u + rng.uniform(-1, 1, u.size)).tolist()))
    tb.inject("_p = lambda c, e: exponential_probabilities(c, 1, e)")
    orders = np.array([1.001, 1.5, 2, 4, 8, 32, 200])
    worst = 0.0
    for u, v in pairs:
        p = np.array(tb.value(f"_p({u}, {eps}).tolist()"))
        q = np.array(tb.value(f"_p({v}, {eps}).tolist()"))
        for first, second in ((p, q), (q, p)):
            for a in orders:
                log_terms = a * np.log(first) + (1 - a) * np.log(second)
                divergence = np.logaddexp.reduce(log_terms) / (a - 1)
                worst = max(worst, divergence / a)
    assert worst <= eps**2 / 8 + 1e-12
    assert worst > 0.9 * eps**2 / 8  # the bound is nearly attained


def test_utility_theorem_bound_holds_on_thresholds(tb):
    # Pr[shortfall > (2 Delta / eps)(ln |R| + t)] <= e^-t, computed exactly
    # from the probabilities for the education cut-offs, at t = ln 20.
    correct = np.array(tb.value("correct.tolist()"), dtype=float)
    for eps in (0.01, 0.05, 0.1):
        probs = np.array(
            tb.value(f"exponential_probabilities(correct, 1, {eps}).tolist()")
        )
        bound = 2 / eps * (np.log(len(correct)) + np.log(20))
        bad = correct < correct.max() - bound
        assert probs[bad].sum() <= 0.05


# --- report noisy max ---------------------------------------------------------


def test_gumbel_noisy_max_equals_exponential_mechanism(tb):
    # Gumbel-max: report noisy max with Gumbel noise of scale 2 Delta / eps
    # has exactly the exponential mechanism's distribution. Chi-square at a
    # fixed seed on 40,000 draws.
    tb.inject("_u = [0.0, 1.0, 2.0, 3.0, 6.0]")
    draws = tb.value(
        "report_noisy_max(_u, 1, 1.0, np.random.default_rng(12), 'gumbel', "
        "40_000).tolist()"
    )
    exact = tb.value("exponential_probabilities(_u, 1, 1.0).tolist()")
    support.assert_counts_fit(np.bincount(draws, minlength=5), exact, 40_000)


def test_laplace_noisy_max_is_a_different_mechanism(tb):
    # Two candidates with utilities 0 and 4, eps 1, Delta 1: noise scale
    # b = 2. Candidate 1 wins when L1 - L2 < 4, and the difference of two
    # Laplace(b) variables has Pr[L1 - L2 >= d] = (1/2)(1 + d/(2b)) e^(-d/b):
    # 0.8647 for Laplace, against the exponential mechanism's
    # e^2 / (1 + e^2) = 0.8808. 100,000 draws: standard error 0.0011.
    draws = np.array(
        tb.value(
            "report_noisy_max([0.0, 4.0], 1, 1.0, np.random.default_rng(13), "
            "'laplace', 100_000).tolist()"
        )
    )
    em = tb.value("float(exponential_probabilities([0.0, 4.0], 1, 1.0)[1])")
    b, d = 2.0, 4.0
    laplace_exact = 1 - 0.5 * (1 + d / (2 * b)) * np.exp(-d / b)
    se = np.sqrt(laplace_exact * (1 - laplace_exact) / len(draws))
    assert abs(draws.mean() - laplace_exact) < 5 * se
    assert abs(laplace_exact - em) > 10 * se


def _laplace_noisy_max_exact(utilities, scale, winner):
    """Pr[winner has the largest utility + Laplace(scale) noise], by
    integrating over the winner's noisy score."""
    from scipy import integrate

    utilities = np.asarray(utilities, dtype=float)
    others = np.delete(utilities, winner)

    def cdf(x):
        tail = 0.5 * np.exp(-np.abs(x) / scale)
        return np.where(x < 0, tail, 1 - tail)

    def integrand(x):
        density = np.exp(-abs(x - utilities[winner]) / scale) / (2 * scale)
        return density * np.prod(cdf(x - others))

    edges = [-np.inf, *np.sort(utilities), np.inf]
    return sum(
        integrate.quad(integrand, a, b, limit=400, epsabs=1e-13)[0]
        for a, b in zip(edges[:-1], edges[1:], strict=True)
    )


def test_neither_noise_wins_everywhere_exactly(tb):
    # The Laplace-or-Gumbel solution says Gumbel (the exponential mechanism)
    # picks the best cut-off more often, while on the occupations Laplace
    # picks the top one more often. Exact probabilities at eps = 0.02
    # (scale 2 / eps = 100), not the sampled ones; and the sampled shares of
    # the solution lie within 4 standard errors (20,000 draws) of them.
    for name, laplace_wins, sampled in [
        ("counts", True, "noisy_max_table['Laplace noisy max'].iloc[0]"),
        ("correct", False, "picks['laplace']"),
    ]:
        utilities = np.array(tb.value(f"{name}.tolist()"), dtype=float)
        best = int(np.argmax(utilities))
        laplace = _laplace_noisy_max_exact(utilities, 100.0, best)
        em = tb.value(
            f"float(exponential_probabilities({name}, 1, 0.02)[{best}])"
        )
        assert (laplace > em) == laplace_wins
        assert abs(laplace - em) > 0.01
        se = np.sqrt(laplace * (1 - laplace) / 20_000)
        assert abs(tb.value(f"float({sampled})") - laplace) < 4 * se


# --- private quantiles ---------------------------------------------------------


def test_quantile_rank_error_hand_table(tb):
    # values 1, 2, 2, 2, 3; q = 0.5, so q n = 2.5.
    # c = 0: #{x <= 0} = 0 -> 2.5; c = 1: #{x <= 1} = 1 -> 1.5;
    # c = 2: 1 below, 4 at most -> 0; c = 3: 4 below -> 1.5; c = 4: 5 -> 2.5.
    got = tb.value(
        "quantile_rank_error([1, 2, 2, 2, 3], 0.5, [0, 1, 2, 3, 4]).tolist()"
    )
    assert got == [2.5, 1.5, 0.0, 1.5, 2.5]


@pytest.mark.parametrize("q", [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0])
def test_quantile_utility_sensitivity_is_max_q_one_minus_q(tb, q):
    # Every table of 0 to 5 values on 0..4 and every neighbour (one value
    # 0..4 added; removing is the same pair read backwards), candidates on
    # and between the values: no rank error moves by more than
    # max(q, 1 - q), and some move by exactly that (1/2 for the median).
    # The chapter's rank error agrees with the definition on every table.
    support.assert_rank_error_sensitivity(tb["quantile_rank_error"], q)


@pytest.mark.parametrize("q", [0.5, 0.9])
def test_private_quantile_is_private_and_uses_its_budget(tb, q):
    # The exact selection probabilities of private_quantile (its call to the
    # exponential mechanism recorded) on every table of 0 to 6 values on
    # 0..4 and every neighbour: the log ratio stays within eps = 1, and for
    # the median it comes near eps (0.83), which the sensitivity 1 of a
    # careless analysis would halve (0.40). At q = 0.9 a sensitivity of 1/2
    # would lose 1.10 > eps.
    eps, grid = 1.0, list(range(5))
    rng = np.random.default_rng(0)
    probabilities = {}
    with recording(tb, "exponential_mechanism") as calls:
        for n in range(7):
            for table in itertools.combinations_with_replacement(grid, n):
                tb["private_quantile"](list(table), q, grid, eps, rng)
                utilities, sensitivity, epsilon = calls[-1][:3]
                assert sensitivity == max(q, 1 - q) and epsilon == eps
                probabilities[table] = selection_probabilities(
                    utilities, sensitivity, epsilon
                )
    worst = max(
        np.abs(np.log(p / probabilities[tuple(sorted(t + (v,)))])).max()
        for t, p in probabilities.items()
        if len(t) < 6
        for v in grid
    )
    assert worst <= eps + 1e-9
    if q == 0.5:
        assert worst > 0.75 * eps


def test_private_quantile_draws_follow_the_exact_distribution(tb):
    # End to end: 40,000 draws of the median and of the 0.9-quantile of
    # 1, 2, 2, 4 on the grid 0..5 at eps = 2, against the probabilities
    # exp(-eps err / (2 max(q, 1 - q))) computed here. Chi-square at a
    # fixed seed; with sensitivity 1 instead, even draws that matched
    # their own law exactly would fail both (p below 1e-28).
    grid, table = np.arange(6), [1, 2, 2, 4]
    for q in (0.5, 0.9):
        draws = tb["private_quantile"](
            table, q, grid, 2.0, np.random.default_rng(17), 40_000
        )
        observed = np.bincount(draws.astype(int), minlength=6)
        expected = selection_probabilities(
            -support.rank_errors(table, q, grid), max(q, 1 - q), 2.0
        )
        support.assert_counts_fit(observed, expected, 40_000)


@pytest.mark.parametrize(
    "column,grid", [("Age", "AGE_GRID"), ("Hours per week", "HOURS_GRID")]
)
def test_private_median_within_stated_error(tb, column, grid):
    # The chapter states a value-error bound that holds with probability at
    # least 95% (utility theorem, t = ln 20). Over 4,000 fresh seeded runs
    # the share within it must be at least 95% minus 3 standard errors of a
    # proportion at 0.95 (0.010).
    runs = 4_000
    tb.inject(f"_v = adult[{column!r}].to_numpy()")
    rank_bound, value_bound = tb.value(
        f"rank_and_value_bounds(_v, 0.5, {grid}, MEDIAN_EPSILON, 0.05)"
    )
    truth = tb.value("float(np.quantile(_v, 0.5, method='inverted_cdf'))")
    draws = np.array(
        tb.value(
            f"private_quantile(_v, 0.5, {grid}, MEDIAN_EPSILON, "
            f"np.random.default_rng(31), {runs}).tolist()"
        )
    )
    # value units on the grid: whole years or hours
    assert value_bound == int(value_bound)
    margin = 3 * np.sqrt(0.95 * 0.05 / runs)
    assert np.mean(np.abs(draws - truth) <= value_bound) >= 0.95 - margin
    ranks = np.array(
        tb.value(f"quantile_rank_error(_v, 0.5, {draws.tolist()}).tolist()")
    )
    assert np.mean(ranks <= rank_bound) >= 0.95 - margin


def test_rank_and_value_bounds_use_the_quantile_sensitivity(tb):
    # The rank bound of the utility theorem at failure probability f:
    # (2 max(q, 1 - q) / eps)(ln |R| + ln(1 / f)); for ages at eps 0.01,
    # 126 candidates and f = 0.05 that is 783.2 ranks for the median.
    for q in (0.5, 0.9, 0.995):
        rank_bound, _ = tb.value(
            f"rank_and_value_bounds(ages, {q}, AGE_GRID, 0.01, 0.05)"
        )
        want = 2 * max(q, 1 - q) / 0.01 * (np.log(126) + np.log(20))
        assert rank_bound == pytest.approx(want, rel=1e-12)
    assert tb.value("float(quantile_table.loc['age', 'rank bound'])") == (
        pytest.approx(783.2014, abs=1e-3)
    )


@pytest.mark.parametrize("q", [0.5, 0.9])
def test_interval_quantile_weights_use_max_q_one_minus_q(tb, q):
    # Values 2 and 3 in [0, 10]: gaps [0, 2], [2, 3], [3, 10] with i = 0,
    # 1, 2 values below and utility -|i - 2q|. Each gap is picked with
    # probability proportional to width * exp(eps u / (2 max(q, 1 - q))):
    # at eps = 4 and q = 0.5 the middle gap gets 0.858 (0.451 with a
    # sensitivity of 1). 20,000 draws, chi-square at a fixed seed.
    eps, widths = 4.0, np.array([2.0, 1.0, 7.0])
    utility = -np.abs(np.arange(3) - 2 * q)
    exponents = eps * utility / (2 * max(q, 1 - q))
    weights = widths * np.exp(exponents - exponents.max())
    expected = weights / weights.sum()
    draws = tb["interval_quantile"](
        [2, 3], q, (0, 10), eps, np.random.default_rng(19), 20_000
    )
    observed = np.bincount(np.searchsorted([2, 3], draws), minlength=3)
    support.assert_counts_fit(observed, expected, 20_000)


# --- the book's data rule: data never makes a mechanism raise --------------

DATA_CASES = support.AGE_DATA_CASES  # ages declared in [0, 125]
CLEANED = support.AGE_CLEANED  # the same after the rule


@pytest.mark.parametrize("case", list(DATA_CASES))
def test_private_quantile_follows_the_data_rule(tb, case):
    # No exception, a grid value out; and the mechanism scores the cleaned
    # table exactly (so one record still moves each count by at most 1).
    rng = np.random.default_rng(3)
    with recording(tb, "exponential_mechanism") as calls:
        got = tb["private_quantile"](
            DATA_CASES[case], 0.5, tb["AGE_GRID"], 1.0, rng
        )
        tb["private_quantile"](CLEANED[case], 0.5, tb["AGE_GRID"], 1.0, rng)
    assert got in set(range(126))
    assert np.array_equal(calls[0][0], calls[1][0])


@pytest.mark.parametrize("case", list(DATA_CASES))
def test_interval_quantile_follows_the_data_rule(tb, case):
    draws = [
        tb["interval_quantile"](
            data, 0.5, (0, 125), 1.0, np.random.default_rng(4), 50
        )
        for data in (DATA_CASES[case], CLEANED[case])
    ]
    assert np.all(np.isfinite(draws[0]))
    assert np.all((draws[0] >= 0) & (draws[0] <= 125))
    assert np.array_equal(draws[0], draws[1])  # the same gaps and weights


@pytest.mark.parametrize("case", list(DATA_CASES))
def test_private_clipped_mean_follows_the_data_rule(tb, case):
    # The sum the noise is added to is the cleaned table's, rounded to
    # whole numbers, with sensitivity 125; the count counts every record;
    # each gets its own share of the budget.
    rng = np.random.default_rng(5)
    with recording(tb, "geometric_mechanism") as calls:
        got = tb["private_clipped_mean"](
            DATA_CASES[case], (0, 125), 0.7, 0.3, rng
        )
    assert np.isfinite(got)
    (total, sensitivity, eps_sum, _), (count, one, eps_count, _) = calls
    assert total == sum(CLEANED[case]) and sensitivity == 125
    assert count == len(CLEANED[case]) and one == 1
    assert (eps_sum, eps_count) == (0.7, 0.3)  # the budget as split


def test_private_clipped_mean_rounds_each_value(tb):
    # Non-whole values are data too: each is clamped, then rounded, so a
    # person adds a whole number between 0 and the bound to the sum.
    with recording(tb, "geometric_mechanism") as calls:
        tb["private_clipped_mean"](
            [0.4, 2.6, 9.5, 11.0], (0, 10), 1.0, 1.0, np.random.default_rng(6)
        )
    assert calls[0][0] == 0 + 3 + 10 + 10 and calls[0][1] == 10


def test_interval_quantile_never_outputs_tied_zero_but_grid_does(tb):
    # The finding of the ties section: with 92% zeros in capital gains, the
    # interval mechanism's outputs are never exactly 0 and sit about 13,500
    # ranks from the median; the grid version returns 0 almost always.
    share_zero = tb.value("float(np.mean(gains == 0))")
    assert share_zero > 0.9
    interval_zero = tb.value("float(np.mean(by_interval == 0))")
    grid_zero = tb.value("float(np.mean(by_grid == 0))")
    assert interval_zero == 0.0
    assert grid_zero > 0.95
    rank = tb.value("float(gain_table.loc['intervals', 'median rank error'])")
    n = tb.value("len(gains)")
    assert rank > 0.4 * n  # about (0.92 - 0.5) n


# --- private clipping bounds ------------------------------------------------------


def test_private_bounds_lose_on_ages_as_the_prose_says(tb):
    # The prose says that on the full census the private bounds lose, and
    # explains it by the clipping bias exceeding the public-bounds error.
    assert tb.value("bool(rmse_private > rmse_public)")
    assert tb.value("bool(-bias > rmse_public)")


def test_private_clipped_mean_clips_and_scales_noise_by_upper(tb):
    # Values 0 and 1,000 clipped to [0, 10]: the clipped sum is 10. The
    # count gets epsilon 1e6, so its geometric noise is 0 and the count is
    # exactly 2; the sum gets epsilon 1 and sensitivity 10, i.e. two-sided
    # geometric noise with alpha = e^(-1/10) and variance
    # 2 alpha / (1 - alpha)^2 = 199.7. A sum left unclipped would centre on
    # 1,000; noise for sensitivity 1 would have variance 1.84. 20,000 draws:
    # the sample mean has standard error 0.1 and the sample variance a
    # relative standard error of about sqrt(5 / 20,000) = 1.6% (kurtosis
    # near the Laplace value 6), so 0.5 and 8% are 5 standard errors.
    sums = 2 * np.array(
        tb.value(
            "[private_clipped_mean(np.array([0, 1000]), (0, 10), 1.0, 1e6, "
            "_r3) for _r3 in [np.random.default_rng(51)] "
            "for _ in range(20_000)]"
        )
    )
    alpha = np.exp(-1 / 10)
    variance = 2 * alpha / (1 - alpha) ** 2
    assert abs(sums.mean() - 10) < 0.5
    assert sums.var() == pytest.approx(variance, rel=0.08)
    assert np.all(sums == np.round(sums))  # integer noise, exact count


def test_private_clipped_mean_rejects_bad_bounds(tb):
    value_error_message(tb, "private_clipped_mean(ages, (5, 90), 1, 1, rng)")
    value_error_message(tb, "private_clipped_mean(ages, (0, 0), 1, 1, rng)")
    for upper in ("1.5", "90.25", "np.inf", "np.nan"):
        message = value_error_message(
            tb, f"private_clipped_mean(ages, (0, {upper}), 1, 1, rng)"
        )
        assert "whole number" in message


@pytest.mark.parametrize("upper", [1, 1.5, 2, 2.5, 10, 90.0, 125])
def test_private_clipped_mean_sum_moves_at_most_its_sensitivity(tb, upper):
    # The privacy violation of issue 42: with bounds (0, 1.5), D = [2] and
    # D' = [2, 2] had clipped sums int(1.5) = 1 and int(3.0) = 3 against a
    # sensitivity int(1.5) = 1. For every bound the function accepts, and
    # every neighbour (one person added, whatever their value), the sum
    # handed to the geometric mechanism moves by at most the sensitivity
    # it is calibrated to; a bound that cannot hold that is refused.
    base = [2, 2, 5]
    try:
        with recording(tb, "geometric_mechanism") as calls:
            for added in (0, 1, 2, 3, 7, 100):
                for table in (base, base + [added], [2], [2, 2]):
                    tb["private_clipped_mean"](
                        np.array(table),
                        (0, upper),
                        1.0,
                        1.0,
                        np.random.default_rng(8),
                    )
    except ValueError:
        assert not float(upper).is_integer()
        return
    sums = [call[:2] for call in calls[::2]]  # (sum, sensitivity) per call
    for first, second in zip(sums[::4], sums[1::4], strict=True):
        assert abs(second[0] - first[0]) <= second[1] == first[1]
    for first, second in zip(sums[2::4], sums[3::4], strict=True):
        assert abs(second[0] - first[0]) <= second[1] == first[1]


# --- the sparse vector technique ----------------------------------------------------


def test_svt_exact_probabilities_match_above_threshold(tb):
    # The integral behind the counter-examples, checked against the
    # chapter's AboveThreshold: answers 0, 1, 0 with threshold 0.5 at eps 1;
    # output = index of first 'above' or None. Chi-square on 20,000 runs.
    answers = [0.0, 1.0, 0.0]
    exact = []
    for k in (1, 2, 3):
        pattern = [i == k - 1 for i in range(k)]
        exact.append(
            tb.value(
                f"svt_pattern_probability({answers}, {pattern}, 0.5, 1.0, True)"
            )
        )
    exact.append(1 - sum(exact))
    tb.inject(
        """
        _r = np.random.default_rng(41)
        _out = [above_threshold([0.0, 1.0, 0.0], 0.5, 1, 1.0, _r)
                for _ in range(20_000)]
        _counts = [sum(o == k for o in _out) for k in (0, 1, 2)]
        _counts.append(sum(o is None for o in _out))
        """
    )
    observed = np.array(tb.value("_counts"))
    support.assert_counts_fit(observed, exact, 20_000)


def test_above_threshold_loss_stays_below_epsilon(tb):
    # Theorem 3.23 of Dwork and Roth on the chapter's hardest outputs.
    for eps in (0.5, 1.0, 2.0):
        for k in (1, 2, 5, 10, 20):
            assert tb.value(f"above_threshold_loss({k}, {eps})") <= eps + 1e-6


def test_never_stopping_variant_exceeds_claimed_epsilon(tb):
    # Exact loss of one output on one pair of neighbours exceeds the claim,
    # and grows with the number of questions (about 0.44 eps per pair).
    assert tb.value("no_stop_loss(3, 1.0)") > 1.0
    assert tb.value("no_stop_loss(10, 1.0)") > 4.0
    # The simulation in the exercise agrees with the exact value (within
    # 4 standard errors of the log ratio).
    exact = tb.value("no_stop_loss(m_over, 0.5)")
    sim, se = tb.value("sim_loss"), tb.value("sim_se")
    assert exact > 0.5
    assert abs(sim - exact) < 4 * se


def test_never_stopping_loss_is_at_most_k_eps_over_4(tb):
    # Given the threshold noise (the same law on both neighbours), each
    # noisy answer has scale 4 / eps, so a shift by 1 changes the chance of
    # its above/below by at most e^(eps / 4): k questions cost at most
    # k eps / 4, for every output and all answers. Random outputs and
    # answers (seeded), each answer moved by 1 up or down.
    rng = np.random.default_rng(25)
    for _ in range(40):
        k = int(rng.integers(1, 7))
        eps = float(rng.choice([0.5, 1.0, 2.0]))
        answers = rng.uniform(-6, 6, k).round(2).tolist()
        shift = rng.choice([-1.0, 1.0], k)
        other = (np.array(answers) + shift).tolist()
        pattern = rng.integers(0, 2, k).astype(bool).tolist()
        loss = tb.value(
            f"pattern_loss({answers}, {other}, {pattern}, {eps}, False)"
        )
        assert loss <= k * eps / 4 + 1e-6
    # The bound is approached at four questions with far-off answers
    # (two above at -40 -> -39, two below at 40 -> 39) but not exceeded.
    far = tb.value(
        "pattern_loss([-40, -40, 40, 40], [-39, -39, 39, 39], "
        "[True, True, False, False], 1.0, False)"
    )
    assert 0.99 < far <= 1 + 1e-6


def test_first_output_over_the_claim_at_five_questions(tb):
    # For the chapter's family (above m times, then below m times) the loss
    # first exceeds 1 at 6 questions; over every output of k questions on
    # 0/1 answers it exceeds 1 already at 5: (T, T, F, F, F) with answers
    # (0, 0, 1, 1, 1) against (1, 1, 0, 0, 0) loses about 1.0013.
    assert (
        tb.value("no_stop_loss(2, 1.0)")
        <= 1.0
        < tb.value("no_stop_loss(3, 1.0)")
    )
    assert tb.value("2 * first_broken") == 6
    assert tb.value("worst_no_stop_loss(4, 1.0)[0]") <= 1.0
    loss, above = tb.value("worst_no_stop_loss(5, 1.0)")
    assert loss == pytest.approx(1.0013, abs=2e-4) and above == 2
    direct = tb.value(
        "pattern_loss([0, 0, 1, 1, 1], [1, 1, 0, 0, 0], "
        "[True, True, False, False, False], 1.0, False)"
    )
    assert direct == pytest.approx(loss, rel=1e-12)
    # the order of the outputs does not change the loss
    shuffled = tb.value(
        "pattern_loss([1, 0, 1, 0, 1], [0, 1, 0, 1, 0], "
        "[False, True, False, True, False], 1.0, False)"
    )
    assert shuffled == pytest.approx(loss, rel=1e-9)
    assert tb.value("first_any") == 5


def test_pooled_chisquare_pools_small_cells(tb):
    # Expected counts 1, 2, 3 and 94: the three small cells are pooled
    # (6 >= 5) and the test is the chi-square of [o1 + o2 + o3, o4].
    got = tb.value("tuple(pooled_chisquare([2, 1, 4, 93], [1, 2, 3, 94]))")
    want = stats.chisquare([7, 93], [6, 94])
    assert got == pytest.approx([want.statistic, want.pvalue], rel=1e-12)
    # Every cell below 5 is pooled, even when the first two already
    # reach 5: 1 + 4.5 + 4.5 against 100.
    got = tb.value(
        "tuple(pooled_chisquare([3, 5, 4, 98], [1, 4.5, 4.5, 100]))"
    )
    want = stats.chisquare([12, 98], [10, 100])
    assert got == pytest.approx([want.statistic, want.pvalue], rel=1e-12)
    # Nothing to pool: the plain test.
    got = tb.value("tuple(pooled_chisquare([48, 52], [50, 50]))")
    assert got == pytest.approx(list(stats.chisquare([48, 52])), rel=1e-12)
    assert value_error_message(tb, "pooled_chisquare([1, 2], [1, 2])")
    # The chapter's test had occupations expecting fewer than 5 draws.
    assert tb.value("float((exact * N_DRAWS).min())") < 5


def test_quantile_utility_moves_candidates_apart(tb):
    # Adding a person above every candidate lowers the utility of the
    # candidates below the median (by q = 0.5) and raises it for those
    # above: not monotone, as the prose says.
    before = np.array(
        tb.value(
            "(-quantile_rank_error(np.arange(1, 11), 0.5, "
            "np.arange(0, 13))).tolist()"
        )
    )
    after = np.array(
        tb.value(
            "(-quantile_rank_error(np.append(np.arange(1, 11), 100), "
            "0.5, np.arange(0, 13))).tolist()"
        )
    )
    change = after - before
    assert np.allclose(change[:6], -0.5)  # candidates 0..5: below
    assert np.allclose(change[7:], 0.5)  # candidates 7..12: above


def test_no_query_noise_variant_has_zero_probability_output(tb):
    # Output (below, above) has positive probability on D and exactly zero
    # on D', so the loss is infinite: not eps-DP for any eps.
    assert tb.value("hits['D']") > 0
    assert tb.value('hits["D\'"]') == 0
    hits = tb.value(
        "sum(bool(np.array_equal(svt_without_query_noise([1.0, 1.0], 0.5, 1, "
        "1.0, _r2), [False, True])) for _r2 in [np.random.default_rng(s) "
        "for s in range(2000)])"
    )
    assert hits == 0


# --- input checks -----------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        "exponential_mechanism([], 1, 1.0, rng)",
        "exponential_mechanism([1.0, np.nan], 1, 1.0, rng)",
        "exponential_mechanism([1.0, np.inf], 1, 1.0, rng)",
        "exponential_mechanism([1.0, 2.0], 0, 1.0, rng)",
        "exponential_mechanism([1.0, 2.0], -1, 1.0, rng)",
        "exponential_mechanism([1.0, 2.0], 1, 0.0, rng)",
        "exponential_mechanism([1.0, 2.0], 1, -0.5, rng)",
        "exponential_mechanism([1.0, 2.0], 1, np.inf, rng)",
        "exponential_probabilities([], 1, 1.0)",
        "report_noisy_max([], 1, 1.0, rng)",
        "report_noisy_max([1.0, 2.0], 1, 0.0, rng)",
        "report_noisy_max([1.0, 2.0], 0, 1.0, rng, 'gumbel')",
        "report_noisy_max([1.0, 2.0], 1, 1.0, rng, 'cauchy')",
        "private_quantile(ages, 0.5, [], 1.0, rng)",
        "private_quantile(ages, 1.5, AGE_GRID, 1.0, rng)",
        "private_quantile(ages, 0.5, AGE_GRID, 0.0, rng)",
        "private_quantile(ages, np.nan, AGE_GRID, 1.0, rng)",
        "private_quantile(ages, 0.5, [1.0, np.nan], 1.0, rng)",
        "private_quantile(ages, 0.5, [1.0, np.inf], 1.0, rng)",
        "interval_quantile(ages, 0.5, (90, 0), 1.0, rng)",
        "interval_quantile(ages, 0.5, (0, 125), -1.0, rng)",
        "interval_quantile(ages, 1.5, (0, 125), 1.0, rng)",
        "interval_quantile(ages, -0.1, (0, 125), 1.0, rng)",
        "interval_quantile(ages, np.nan, (0, 125), 1.0, rng)",
        "interval_quantile(ages, 0.5, (0, np.inf), 1.0, rng)",
        "above_threshold([], 0.5, 1, 1.0, rng)",
        "above_threshold([1.0, 2.0], 0.5, 1, 0.0, rng)",
        "above_threshold([1.0, 2.0], 0.5, 0, 1.0, rng)",
        "above_threshold([1.0, np.nan], 0.5, 1, 1.0, rng)",
        "rank_and_value_bounds(ages, 0.5, AGE_GRID, 0.1, 1.5)",
        "private_clipped_mean(ages, (0, 1.5), 1, 1, rng)",
        "svt_pattern_probability([0.0, 1.0], [False, True], 0.5, 0.0, True)",
        "svt_pattern_probability([0.0, 1.0], [True, False], 0.5, 1.0, True)",
        "svt_pattern_probability([0.0], [False, True], 0.5, 1.0, False)",
    ],
)
def test_bad_input_is_rejected(tb, call):
    value_error_message(tb, call)


@pytest.mark.parametrize(
    "call",
    [
        "exponential_mechanism([1.0, 2.0], 1, 1.0, 7)",
        "exponential_mechanism([1.0, 2.0], 1, 1.0, np.random.RandomState(7))",
        "report_noisy_max([1.0, 2.0], 1, 1.0, 7, 'gumbel')",
        "private_quantile(ages, 0.5, AGE_GRID, 1.0, 7)",
        "interval_quantile(ages, 0.5, (0, 125), 1.0, 7)",
        "above_threshold([1.0, 2.0], 0.5, 1, 1.0, 7)",
    ],
)
def test_non_generator_rng_is_rejected(tb, call):
    with pytest.raises(TypeError):
        tb.value(call)


# --- the interactive selection figure (a Vega-Lite 5 specification) ---------


@pytest.mark.parametrize(
    "args",
    [
        "occupation_counts, 1, 0.5, 0.005, 0.3, 0.005",  # start above high
        "occupation_counts, 1, 0.01, 0, 0.3, 0.005",  # low 0
        "occupation_counts, 1, 0.01, 0.005, 0.3, 0",  # step 0
        "occupation_counts, 0, 0.01, 0.005, 0.3, 0.005",  # sensitivity 0
        "occupation_counts.iloc[:0], 1, 0.01, 0.005, 0.3, 0.005",  # empty
    ],
)
def test_selection_dial_rejects_bad_inputs(tb, args):
    value_error_message(tb, f"selection_dial({args})")


def _chart_probabilities(spec, epsilon):
    """The layer's transforms evaluated here, as Vega would (its
    expressions are Python once `datum.x` is a lookup and exp is numpy's)."""
    rows = [dict(r) for r in support.plotted_rows(spec)]
    for step in spec["layer"][0]["transform"]:
        if "joinaggregate" in step:
            (agg,) = step["joinaggregate"]
            values = [r[agg["field"]] for r in rows]
            total = {"max": max, "sum": sum}[agg["op"]](values)
            for r in rows:
                r[agg["as"]] = total
        else:
            code = step["calculate"].replace("datum.", "_r_")
            for r in rows:
                names = {f"_r_{k}": v for k, v in r.items()}
                r[step["as"]] = eval(
                    code, {"exp": np.exp, "epsilon": epsilon, **names}
                )
    return rows


def test_stored_selection_dial_is_the_exponential_mechanism(tb):
    """The stored figure holds the chapter's occupation counts, in its
    order; at several epsilons its expressions give exactly
    exponential_probabilities; it starts at 0.01 in its glued range."""

    spec = support.stored_vega_lite("private-selection")
    rows = support.plotted_rows(spec)
    assert [r["candidate"] for r in rows] == tb.value("occupations.tolist()")
    assert [r["count"] for r in rows] == tb.value("counts.tolist()")
    (param,) = spec["params"]
    assert param["value"] == 0.01
    assert param["bind"]["min"] == tb.value("dial_low")
    assert param["bind"]["max"] == tb.value("dial_high")
    for epsilon in [0.005, 0.01, 0.1, 0.3]:
        shown = [r["probability"] for r in _chart_probabilities(spec, epsilon)]
        expected = tb.value(
            f"exponential_probabilities(counts, 1, {epsilon}).tolist()"
        )
        assert shown == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert "epsilon" in support.vega_signals(spec)


def test_selection_dial_prose_numbers_from_the_data():
    """The numbers after the dial, recomputed from the CSV: the leader's
    probability at the glued epsilon, and its weight over the runner-up's,
    which is also the ratio of their probabilities and e^(eps * gap / 2)
    with sensitivity 1 and the factor 2 of the chapter's definition."""

    from conftest import DATA_DIR, glued_value  # noqa: PLC0415

    adult = pd.read_csv(DATA_DIR / "adult_with_pii.csv")
    counts = np.sort(adult["Occupation"].value_counts().to_numpy())[::-1]
    epsilon = glued_value("private-selection", "sel_dial_eps_settled")
    weights = np.exp(epsilon * (counts - counts[0]) / 2)
    probabilities = weights / weights.sum()
    gap = glued_value("private-selection", "sel_top_gap")
    assert gap == counts[0] - counts[1]
    assert glued_value(
        "private-selection", "sel_dial_p_settled"
    ) == pytest.approx(probabilities[0], rel=1e-12)
    ratio = glued_value("private-selection", "sel_dial_weight_ratio")
    assert ratio == pytest.approx(np.exp(epsilon * gap / 2), rel=1e-12)
    assert ratio == pytest.approx(
        probabilities[0] / probabilities[1], rel=1e-12
    )
    low = glued_value("private-selection", "sel_dial_eps_low")
    weights = np.exp(low * (counts - counts[0]) / 2)
    # "At the low end the choice is spread over the top three and some of
    # the rest": the others hold a visible share, the top three the most.
    share_rest = weights[3:].sum() / weights.sum()
    assert 0.05 < share_rest < 0.5


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)

STEM = "private-selection"


def test_the_book_s_solutions_get_full_marks(tb):
    assignments.assert_full_marks(tb, STEM)


def test_the_untouched_student_notebook_scores_zero(tb):
    assignments.assert_stubs_score_zero(tb, STEM)


MONOTONE = (
    "general = exponential_probabilities(counts, 1, 0.05)[0]\n"
    "monotone = exponential_probabilities(counts, 1, 0.1)[0]\n"
    "monotone_ok_under_replace = False\n"
)
LAPLACE_EXACT = (
    "exact_best = float(exponential_probabilities(correct, 1, 0.02)[best])\n"
)
STREAM = "m_over = 3\nexact_loss = no_stop_loss(3, 0.5)\n"


def shares(noise_scale):
    """Report noisy max with Laplace noise of `noise_scale` and Gumbel noise
    of scale 2 / eps: the shares of 20,000 draws that pick the best."""
    return (
        "_g = np.random.default_rng(11)\n"
        "_lap = np.argmax(\n"
        f"    correct + _g.laplace(0, {noise_scale}, (20_000, len(correct))),"
        " axis=1\n"
        ")\n"
        "_gum = np.argmax(\n"
        "    correct + _g.gumbel(0, 2 / 0.02, (20_000, len(correct))), axis=1\n"
        ")\n"
        "picks = {'laplace': float(np.mean(_lap == best)),"
        " 'gumbel': float(np.mean(_gum == best))}\n"
    )


def stream_hits(threshold_scale, query_scale):
    """200,000 runs of the never-stopping variant on D and D' (m = 3)."""
    return (
        "_g = np.random.default_rng(12)\n"
        "sim_hits = []\n"
        "for _a in (np.repeat([0.0, 1.0], 3), np.repeat([1.0, 0.0], 3)):\n"
        f"    _t = _g.laplace(0, {threshold_scale}, (200_000, 1))\n"
        f"    _q = _g.laplace(0, {query_scale}, (200_000, 6))\n"
        "    _out = _a + _q >= 0.5 + _t\n"
        "    _hit = (_out == np.repeat([True, False], 3)).all(axis=1)\n"
        "    sim_hits.append(int(_hit.sum()))\n"
    )


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "sel-ex-monotone",
            "general = exponential_probabilities(counts, 1, 0.05)[0]\n"
            "monotone = general\n"
            "monotone_ok_under_replace = False\n",
            "you gave the general mechanism's probability",
        ),
        (
            "sel-ex-monotone",
            "general = exponential_probabilities(counts, 1, 0.1)[0]\n"
            "monotone = exponential_probabilities(counts, 1, 0.2)[0]\n"
            "monotone_ok_under_replace = False\n",
            "that is the monotone version's probability",
        ),
        (
            "sel-ex-monotone",
            MONOTONE.replace("= False", "= True"),
            "one count falls while another rises",
        ),
        (
            "sel-ex-laplace",
            "exact_best = float("
            "exponential_probabilities(correct, 1, 0.02)[best])\n"
            "picks = {'laplace': 1 - exact_best, 'gumbel': 1 - exact_best}\n",
            "that is the chance of missing it",
        ),
        (
            "sel-ex-laplace",
            "exact_best = float("
            "exponential_probabilities(correct, 1, 0.04)[best])\n"
            + shares("2 / 0.02"),
            "the exponent is eps * u / (2 * sensitivity), not eps * u",
        ),
        (
            "sel-ex-laplace",
            LAPLACE_EXACT + shares("1 / 0.02"),
            "use Laplace noise of scale 2 / eps",
        ),
        (
            "sel-ex-loss",
            "log_grid = np.round(np.geomspace(1, 100_000, 101))\n"
            "shortfall = 2 / 0.2 * np.log(len(log_grid))\n",
            "drop the duplicates",
        ),
        (
            "sel-ex-loss",
            "shortfall = 2 * 0.999 / 0.2 * np.log(101)\n",
            "one candidate per distinct grid amount, not 101",
        ),
        (
            "sel-ex-loss",
            "shortfall = 0.999 / 0.2 * np.log(len(log_grid))\n",
            "you dropped the factor 2",
        ),
        (
            "sel-ex-loss",
            "loss_table = loss_table.assign(**{'RMSE private': 100.0})\n",
            "is not below the public one",
        ),
        (
            "sel-ex-loss",
            "loss_table = loss_table.assign(**{'RMSE public': 4.0})\n",
            "has noise of standard deviation about",
        ),
        (
            "sel-ex-stream",
            "m_over = next(m for m in range(1, 30)"
            " if no_stop_loss(m, 0.5) > 0.5)\n"
            "exact_loss = no_stop_loss(m_over, 1.0)\n",
            "that is at the chapter's epsilon 1, not 0.5",
        ),
        (
            "sel-ex-stream",
            "m_over = 4\nexact_loss = no_stop_loss(3, 0.5)\n",
            "the smallest m for which no_stop_loss(m, 0.5) exceeds 0.5",
        ),
        (
            "sel-ex-stream",
            STREAM + stream_hits("1 / 0.5", "1 / 0.5"),
            "use threshold noise of scale 2 / eps and query noise",
        ),
    ],
    ids=[
        "monotone-same-as-general",
        "general-without-factor-2",
        "replace-one-allowed",
        "laplace-miss-chance",
        "laplace-exponent-without-2",
        "laplace-noise-too-small",
        "loss-duplicates-kept",
        "loss-101-candidates",
        "loss-no-factor-2",
        "loss-private-not-better",
        "loss-public-noise-wrong",
        "stream-epsilon-1",
        "stream-m-too-large",
        "stream-noise-scales",
    ],
)
def test_a_typical_wrong_answer_fails_with_its_reason(
    tb, label, code, expected
):
    # The book's answer first, then the wrong part over it.
    assignments.assert_wrong_answer_fails(
        tb, STEM, label, code, expected, over=True
    )


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "sel-ex-monotone",
            "general = exponential_probabilities(counts, 1, 0.05)[0]\n"
            "monotone = general\n"
            "monotone_ok_under_replace = False\n",
            "you gave the general mechanism's probability twice",
        ),
        (
            "sel-ex-monotone",
            "general = exponential_probabilities(counts, 1, 0.1)[0]\n"
            "monotone = exponential_probabilities(counts, 1, 0.05)[0]\n"
            "monotone_ok_under_replace = False\n",
            "doubles every exponent",
        ),
        (
            "sel-ex-laplace",
            "exact_best = 1 - float("
            "exponential_probabilities(correct, 1, 0.02)[best])\n"
            + shares("2 / 0.02"),
            "Gumbel noise of scale 2 * sensitivity / eps gives exactly",
        ),
        (
            "sel-ex-loss",
            "log_grid = np.round(np.geomspace(1, 100_000, 101))\n",
            "drop the duplicates",
        ),
        (
            "sel-ex-loss",
            "shortfall = 1 / 0.2 * np.log(len(log_grid))\n",
            "lacks the factor 2 of the utility theorem",
        ),
        (
            "sel-ex-loss",
            "shortfall = 2 * 0.999 / 1.0 * np.log(len(log_grid))\n",
            "the bound is chosen with eps = 0.2",
        ),
        (
            "sel-ex-stream",
            "m_over = 3\nexact_loss = no_stop_loss(3, 1.0)\n",
            "the loss at the chapter's epsilon 1, not 0.5",
        ),
        (
            "sel-ex-stream",
            STREAM + stream_hits("1 / 0.5", "1 / 0.5"),
            "use threshold noise of scale 2 / eps and query noise",
        ),
    ],
    ids=[
        "monotone-equal",
        "monotone-below-general",
        "gumbel-disagrees-with-exact",
        "grid-duplicates",
        "shortfall-no-factor-2",
        "shortfall-whole-budget",
        "stream-epsilon-1",
        "stream-counts-disagree",
    ],
)
def test_the_public_checks_catch_a_common_mistake(tb, label, code, expected):
    assignments.assert_public_checks_name(tb, STEM, label, code, expected)


@pytest.mark.parametrize(
    ("label", "code"),
    [
        # NumPy scalars and a NumPy bool, rounded to 3 significant figures
        (
            "sel-ex-monotone",
            "general = np.float32(round(float(general), 3))\n"
            "monotone = np.float32(round(float(monotone), 3))\n"
            "monotone_ok_under_replace = np.bool_(False)\n",
        ),
        (
            "sel-ex-laplace",
            "exact_best = np.float32(round(exact_best, 3))\n"
            "picks = {k: np.float64(v) for k, v in picks.items()}\n",
        ),
        # the looser sensitivity 1 is a correct upper bound too; a grid of
        # integers; shortfall to 3 significant figures
        (
            "sel-ex-loss",
            "log_grid = log_grid.astype(int).tolist()\n"
            "shortfall = 2 * 1 / 0.2 * np.log(len(log_grid))\n",
        ),
        ("sel-ex-loss", "shortfall = float(f'{shortfall:.3g}')\n"),
        (
            "sel-ex-stream",
            "m_over = np.int64(m_over)\n"
            "exact_loss = round(exact_loss, 3)\n"
            "sim_hits = np.array(sim_hits)\n",
        ),
    ],
    ids=[
        "numpy-rounded",
        "float32-exact",
        "sensitivity-1-int-grid",
        "shortfall-3-figures",
        "numpy-stream",
    ],
)
def test_a_right_answer_in_another_form_passes(tb, label, code):
    assignments.assert_answer_passes(tb, STEM, label, code, over=True)


def test_the_judge_s_laplace_pick_rate_is_exact(tb):
    # The judge integrates the pick probability of report noisy max with
    # Laplace noise and accepts a share of 20,000 draws within 4.5 of its
    # standard errors (0.011). 400,000 seeded draws of the chapter's
    # function (standard error 0.0006) pass; 0.02 away they fail.
    draws = tb.value(
        "float(np.mean(report_noisy_max(correct, 1, 0.02, "
        "np.random.default_rng(13), 'laplace', 400_000) == best))"
    )
    found = assignments.exercise(STEM, "sel-ex-laplace")
    for shift, passes in ((0.0, True), (0.02, False), (-0.02, False)):
        code = (
            LAPLACE_EXACT
            + "picks = {'laplace': "
            + repr(draws + shift)
            + ", 'gumbel': exact_best}\n"
        )
        assert (assignments.failure(tb, found, code) is None) == passes


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_sampled_checks_accept_correct_answers_at_other_seeds(tb, seed):
    laplace = (
        f"_g = np.random.default_rng({seed})\n"
        "exact_best = float(exponential_probabilities(correct, 1, 0.02)"
        "[best])\n"
        "picks = {\n"
        "    noise: float(np.mean(\n"
        "        report_noisy_max(correct, 1, 0.02, _g, noise, 20_000) == best\n"
        "    ))\n"
        "    for noise in ('laplace', 'gumbel')\n"
        "}\n"
    )
    stream = (
        f"_g = np.random.default_rng({seed})\n"
        "m_over = 3\n"
        "exact_loss = no_stop_loss(3, 0.5)\n"
        "sim_hits = []\n"
        "for _a in (np.repeat([0.0, 1.0], 3), np.repeat([1.0, 0.0], 3)):\n"
        "    _t = _g.laplace(0, 2 / 0.5, (200_000, 1))\n"
        "    _q = _g.laplace(0, 4 / 0.5, (200_000, 6))\n"
        "    _out = _a + _q >= 0.5 + _t\n"
        "    _hit = (_out == np.repeat([True, False], 3)).all(axis=1)\n"
        "    sim_hits.append(int(_hit.sum()))\n"
    )
    for label, code in (
        ("sel-ex-laplace", laplace),
        ("sel-ex-stream", stream),
    ):
        assignments.assert_answer_passes(tb, STEM, label, code)

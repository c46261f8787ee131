"""Tests for chapters/dp-statistics.ipynb: the chapter's own functions and
the coverage and type I error it measured, run in its namespace."""

import assignments
import numpy as np
import pytest
from scipy import integrate, stats

from conftest import chapter_kernel, value_error_message


@pytest.fixture(scope="module")
def tb():
    with chapter_kernel("dp-statistics") as notebook:
        yield notebook


@pytest.fixture(scope="module")
def ns(tb):
    return tb.namespace


# --- accuracy ------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.3, 1.0, 2.0, 10.0])
@pytest.mark.parametrize("beta", [0.5, 0.05, 0.01])
def test_accuracy_formulas_agree_with_opendp(ns, scale, beta):
    accuracy = ns["odp_accuracy"]
    assert ns["laplace_accuracy"](scale, beta) == pytest.approx(
        accuracy.laplacian_scale_to_accuracy(scale, beta), rel=1e-12
    )
    assert ns["discrete_laplace_accuracy"](scale, beta) == pytest.approx(
        accuracy.discrete_laplacian_scale_to_accuracy(scale, beta), rel=1e-12
    )
    assert ns["gaussian_accuracy"](scale, beta) == pytest.approx(
        accuracy.gaussian_scale_to_accuracy(scale, beta), rel=1e-12
    )


@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("beta", [0.3, 0.05, 0.01])
def test_discrete_laplace_accuracy_from_the_probabilities(ns, scale, beta):
    """Pr[|Z| >= a] <= beta, summed from the pmf, and a is the smallest
    such error up to the integer step (equality at whole numbers)."""
    k = np.arange(-5_000, 5_001)
    pmf = np.exp(-np.abs(k) / scale)
    pmf /= pmf.sum()
    a = ns["discrete_laplace_accuracy"](scale, beta)
    assert pmf[np.abs(k) >= a].sum() <= beta + 1e-12
    whole = int(np.ceil(a))
    exact = 2 * np.exp(-whole / scale) / (1 + np.exp(-1 / scale))
    assert pmf[np.abs(k) >= whole].sum() == pytest.approx(exact, rel=1e-9)


def test_laplace_and_gaussian_accuracy_are_exact_tails(ns):
    a = ns["laplace_accuracy"](2.0, 0.05)
    assert stats.laplace.sf(a, scale=2.0) * 2 == pytest.approx(0.05)
    g = ns["gaussian_accuracy"](3.0, 0.01)
    assert stats.norm.sf(g, scale=3.0) * 2 == pytest.approx(0.01)


@pytest.mark.parametrize(
    "call",
    [
        "laplace_accuracy(0, 0.05)",
        "discrete_laplace_accuracy(1, 0)",
        "gaussian_accuracy(1, 1.5)",
        "laplace_accuracy(float('nan'), 0.05)",
    ],
)
def test_accuracy_rejects_bad_input(tb, call):
    value_error_message(tb, call)


def test_simulated_exceedance_matches_beta(ns):
    # 200,000 draws: a standard error of 0.05 pt at beta = 0.05.
    for beta, seen in ns["exceed"].items():
        se = np.sqrt(beta * (1 - beta) / ns["n_draws"])
        assert abs(seen - beta) < 4 * se


# --- the law of the error: normal plus Laplace -----------------------------


def normal_plus_laplace_cdf_by_quadrature(x, sd, scale):
    def integrand(z):
        return stats.norm.cdf((x - z) / sd) * stats.laplace.pdf(z, 0, scale)

    points = [0.0, x]
    total, _ = integrate.quad(
        integrand, -60 * scale, 60 * scale, points=points, limit=400
    )
    return total


@pytest.mark.parametrize(
    "x, sd, scale",
    [
        (-1.0, 1.0, 1.0),
        (2.0, 3.0, 0.5),
        (-0.02, 0.0103, 0.0005),  # noise tiny next to sampling
        (-3.0, 0.01, 1.0),  # noise dominates
        (-50.0, 1.0, 1e-3),  # sd / scale = 1000: no overflow
        (-4.0, 1.0, 1e-3),
    ],
)
def test_normal_laplace_cdf_matches_quadrature(ns, x, sd, scale):
    got = float(ns["normal_laplace_cdf"](x, sd, scale))
    want = normal_plus_laplace_cdf_by_quadrature(x, sd, scale)
    assert got == pytest.approx(want, rel=1e-6, abs=1e-15)
    assert np.isfinite(got)


@pytest.mark.parametrize(
    "w, sd, a, c", [(1.0, 0.5, 1.0, 0.4), (3.0, 1.0, 0.5, 1.2)]
)
def test_error_tail_of_two_laplaces_by_convolution(ns, w, sd, a, c):
    """The signed-mixture identity against a direct convolution: integrate
    the normal-plus-Laplace(a) tail (checked above by quadrature) against
    the Laplace(c) density on a fine grid."""
    v = np.linspace(-60 * c, 60 * c, 400_001)
    cdf = ns["normal_laplace_cdf"]
    tail = cdf(-w - v, sd, a) + 1 - cdf(w - v, sd, a)
    want = np.trapezoid(tail * stats.laplace.pdf(v, 0, c), v)
    got = float(ns["error_tail"](w, sd, a, c))
    assert got == pytest.approx(want, rel=1e-6)


def test_error_tail_with_one_scale_zero_is_the_single_laplace(ns):
    one = ns["error_tail"](2.0, 1.0, 0.7, 0.0)
    cdf = ns["normal_laplace_cdf"](-2.0, 1.0, 0.7)
    assert float(one) == pytest.approx(2 * float(cdf), rel=1e-12)


def test_noise_aware_halfwidth_hits_the_level(ns):
    sd = np.array([1.0, 0.01, 2.0, 0.3])
    a = np.array([0.0001, 1.0, 0.5, 0.3])
    c = np.array([0.0, 0.3, 0.5, 0.0])
    w = ns["noise_aware_halfwidth"](sd, a, c)
    tail = ns["error_tail"](w, sd, a, c)
    assert np.allclose(tail, 0.05, atol=1e-7)
    # Noise only widens (Anderson); with tiny noise w is the normal one.
    assert np.all(w >= 1.959963984540054 * sd * (1 - 1e-9))
    assert w[0] == pytest.approx(1.959963984540054, rel=1e-3)


@pytest.mark.parametrize(
    "call",
    [
        "noise_aware_halfwidth(1.0, 1.0, 0.0, level=1.0)",
        "noise_aware_halfwidth(0.0, 1.0, 0.0)",
        "noise_aware_halfwidth(1.0, 0.0, 0.0)",
        "noise_aware_halfwidth(1.0, 1.0, -1.0)",
    ],
)
def test_noise_aware_halfwidth_rejects_bad_input(tb, call):
    value_error_message(tb, call)


# --- the simulated samples -------------------------------------------------


def test_bernoulli_sample_law_of_the_releases(ns):
    """With almost no noise the released sizes have the binomial moments
    of a Bernoulli sample of the census."""
    rng = np.random.default_rng(5)
    release = ns["simulate_releases"](1e6, 20_000, rng)
    population, rate = len(ns["adult"]), ns["RATE"]
    n = release["n"]
    assert n.mean() == pytest.approx(population * rate, rel=2e-3)
    assert n.var() == pytest.approx(population * rate * (1 - rate), rel=0.05)
    rich = release["rich"]
    assert rich.mean() == pytest.approx(ns["truth"]["count"] * rate, rel=3e-3)
    assert np.allclose(release["rich"] + release["others"], n, atol=1e-3)


def test_simulate_releases_rejects_bad_epsilon(tb):
    value_error_message(tb, "simulate_releases(0, 10, rng)")
    value_error_message(tb, "estimates_from({}, 'median', 1.0)")


def test_noise_is_comparable_to_sampling_error_at_01(ns):
    """At epsilon = 0.1 the count's noise sd is within a factor 2 of its
    sampling sd, so that is where the naive interval must fail."""
    rate, count = ns["RATE"], ns["truth"]["count"]
    sampling = np.sqrt(count * rate * (1 - rate)) / rate
    noise = np.sqrt(2) / (0.1 * rate)
    assert 0.5 < noise / sampling < 2


# --- the measured coverage -------------------------------------------------


def test_coverage_rates_have_standard_errors_below_one_point(ns):
    coverage = ns["coverage"]
    assert ns["N_RELEASES"] >= 2_500
    assert coverage["se"].max() < 0.01


def test_corrected_intervals_cover_at_least_nominal_minus_3_se(ns):
    coverage = ns["coverage"]
    fixed = coverage[coverage["method"] != "naive"]
    se_nominal = np.sqrt(0.95 * 0.05 / ns["N_RELEASES"])
    low = fixed[fixed["coverage"] < 0.95 - 3 * se_nominal]
    assert low.empty, low


@pytest.mark.parametrize("statistic", ["count", "proportion", "mean"])
def test_naive_interval_under_covers_where_noise_matters(ns, statistic):
    coverage = ns["coverage"]
    row = coverage[
        (coverage["statistic"] == statistic)
        & (coverage["epsilon"] == 0.1)
        & (coverage["method"] == "naive")
    ].iloc[0]
    assert row["coverage"] < 0.95 - 3 * row["se"]


def test_naive_interval_is_fine_where_noise_is_negligible(ns):
    """Not a tautology: at epsilon = 1 the count's naive interval is
    within 3 standard errors of 95%."""
    coverage = ns["coverage"]
    row = coverage[
        (coverage["statistic"] == "count")
        & (coverage["epsilon"] == 1.0)
        & (coverage["method"] == "naive")
    ].iloc[0]
    assert abs(row["coverage"] - 0.95) < 3 * row["se"]


def test_bootstrap_quantiles_have_unbiased_levels(ns):
    """The bootstrap reads quantiles at k / (B + 1): with B = 200 draws of
    a continuous law, the interval's expected coverage is 95% exactly."""
    rng = np.random.default_rng(3)
    draws = rng.standard_normal((40_000, ns["N_BOOT"]))
    low, high = np.quantile(draws, [0.025, 0.975], axis=1, method="weibull")
    target = rng.standard_normal(40_000)
    covered = np.mean((low <= target) & (target <= high))
    assert abs(covered - 0.95) < 4 * np.sqrt(0.95 * 0.05 / 40_000)


# --- chi-square tests --------------------------------------------------------


def test_chi_square_statistic_matches_scipy(ns):
    rng = np.random.default_rng(7)
    tables = rng.integers(1, 200, size=(20, 4))
    got = ns["chi_square_statistic"](tables)
    for table, value in zip(tables, got, strict=True):
        want = stats.chi2_contingency(
            table.reshape(2, 2), correction=False
        ).statistic
        assert value == pytest.approx(want, rel=1e-10)


def test_multinomial_tables_have_multinomial_moments(ns):
    rng = np.random.default_rng(8)
    shares = np.array([0.1, 0.2, 0.3, 0.4])
    tables = ns["multinomial_tables"](np.full(50_000, 100), shares, rng)
    assert np.all(tables.sum(axis=1) == 100)
    assert np.allclose(tables.mean(axis=0), 100 * shares, rtol=0.01)
    want = 100 * (np.diag(shares) - np.outer(shares, shares))
    assert np.allclose(np.cov(tables.T), want, atol=0.4)


def test_multinomial_tables_rejects_bad_shares(tb):
    value_error_message(
        tb, "multinomial_tables(10, [0.5, 0.5, 0.5, -0.5], rng)"
    )
    value_error_message(
        tb, "multinomial_tables(10, [0.2, 0.2, 0.2, 0.2], rng)"
    )


def test_null_is_independent_and_census_is_not(ns):
    null = ns["null_shares"].reshape(2, 2)
    assert np.allclose(null, np.outer(null.sum(1), null.sum(0)))
    assert ns["chi_square_statistic"](ns["real_shares"] * 32_561) > 100


def test_monte_carlo_test_holds_its_level_and_the_naive_does_not(ns):
    table = ns["test_table"]
    null = table[table["world"] == "null"]
    se = np.sqrt(0.05 * 0.95 / ns["N_TABLES"])
    assert (np.abs(null["Monte Carlo"] - 0.05) < 3 * se).all(), null
    inflated = null[null["epsilon"] <= 0.1]
    assert (inflated["naive"] > 0.05 + 3 * se).all(), inflated
    power = table[table["world"] == "census"].sort_values("epsilon")
    assert np.all(np.diff(power["Monte Carlo"]) > 0)


# --- regression ----------------------------------------------------------------


def test_moments_without_noise_reproduce_statsmodels(ns):
    beta, _ = ns["ols_from_moments"](ns["moments"])
    assert np.allclose(ns["to_hours"](beta), ns["fit_clipped"].params)


def test_regression_sensitivity_bound_is_attained(ns):
    """Every entry of v v^T lies in [0, 1] for rows in [0, 1]^4 with a
    leading 1, so the 10 released entries move by at most 10 in L1, and
    the all-ones row attains it."""
    upper = ns["UPPER"]
    rng = np.random.default_rng(9)
    rows = np.column_stack([np.ones(1000), rng.random((1000, 3))])
    moved = np.array([np.abs(np.outer(v, v)[upper]).sum() for v in rows])
    assert moved.max() <= ns["REG_SENSITIVITY"]
    ones = np.ones(4)
    assert np.outer(ones, ones)[upper].sum() == ns["REG_SENSITIVITY"]
    assert ns["rows"].min() >= 0 and ns["rows"].max() <= 1


def test_noisy_moments_add_noise_of_the_stated_scale(ns):
    rng = np.random.default_rng(10)
    noisy = ns["noisy_moments"](np.zeros((4, 4)), 2.0, rng, size=20_000)
    assert np.allclose(noisy, np.swapaxes(noisy, -1, -2))
    std = noisy[:, 0, 1].std()
    assert std == pytest.approx(np.sqrt(2) * 10 / 2.0, rel=0.03)


# --- clamping ------------------------------------------------------------------


@pytest.mark.parametrize("count, scale", [(0, 1.0), (2, 1.0), (3, 2.0)])
def test_clamped_bias_by_integration(ns, count, scale):
    want = (
        integrate.quad(
            lambda z: max(0.0, count + z) * stats.laplace.pdf(z, 0, scale),
            -60 * scale,
            60 * scale,
            points=[-count],
        )[0]
        - count
    )
    assert float(ns["clamped_bias"](count, scale)) == pytest.approx(want)


def test_clamped_table_matches_the_formula(ns):
    table = ns["clamp_table"]
    simulated = table["bias of the total (simulated)"]
    formula = table["bias of the total (formula)"]
    assert np.allclose(simulated, formula, rtol=0.05)


def test_clamped_bias_rejects_bad_input(tb):
    value_error_message(tb, "clamped_bias(-1, 1.0)")
    value_error_message(tb, "clamped_bias(1, 0.0)")


# --- the interactive figure ------------------------------------------------------


def test_coverage_grid_matches_simulation(ns):
    rng = np.random.default_rng(11)
    grid = ns["naive_coverage_grid"](0.24, [1000], [0.1])
    sd = np.sqrt(0.24 * 0.76 / 1000)
    error = sd * rng.standard_normal(400_000) + rng.laplace(
        0, 1 / (0.1 * 1000), 400_000
    )
    seen = np.mean(np.abs(error) <= 1.959963984540054 * sd)
    assert grid["naive_coverage"].iloc[0] == pytest.approx(seen, abs=0.003)


def test_dial_rejects_bad_input(tb):
    value_error_message(tb, "naive_coverage_grid(1.0, [100], [1.0])")
    value_error_message(tb, "naive_coverage_grid(0.2, [0], [1.0])")
    value_error_message(tb, "coverage_dial(dial_grid, 0.12, step=0.05)")
    value_error_message(tb, "coverage_dial(dial_grid, 0.1, step=0.1)")


def test_stored_dial_compiles_and_holds_the_chapter_grid(tb, ns):
    import nbformat  # noqa: PLC0415
    import vl_convert  # noqa: PLC0415

    from conftest import CHAPTERS_DIR  # noqa: PLC0415

    cells = nbformat.read(
        CHAPTERS_DIR / "dp-statistics.ipynb", as_version=4
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
    assert param["name"] == "epsilon" and param["value"] == 0.1
    assert param["bind"]["min"] == ns["dial_low"]
    assert param["bind"]["max"] == ns["dial_high"]
    rows = max(spec["datasets"].values(), key=len)
    grid = ns["dial_grid"]
    assert len(rows) == len(grid)
    stored = np.array([[r["naive_coverage"], r["width_ratio"]] for r in rows])
    assert np.allclose(stored, grid[["naive_coverage", "width_ratio"]])
    assert any(r["n"] == 1000 for r in rows)  # the line above the chart
    vega = vl_convert.vegalite_to_vega(spec, vl_version="5.21")
    assert "epsilon" in {s["name"] for s in vega["signals"]}


def test_regression_bootstrap_covers_at_least_nominal(ns):
    cover = ns["regression_cover"].to_numpy()
    se = np.sqrt(0.95 * 0.05 / ns["N_REG_SAMPLES"])
    assert se < 0.01
    assert cover.min() >= 0.95 - 3 * se, cover


def test_mean_bootstrap_fails_where_the_chapter_says_it_does(ns):
    """At epsilon = 0.03 the chapter reports the mean's bootstrap below
    nominal and the noise-aware interval at nominal: both must hold."""
    low = ns["low_mean"]
    se = np.sqrt(0.95 * 0.05 / ns["N_RELEASES"])
    assert low.loc["bootstrap", "coverage"] < 0.95 - 3 * se
    assert low.loc["noise-aware", "coverage"] >= 0.95 - 3 * se


def test_the_clamp_explains_the_bootstraps_misses_from_above(ns):
    """The chapter says every mean estimate above (truth + U) / 2 gives a
    bootstrap interval lying above the truth, and that these are the bulk
    of the misses at epsilon 0.03: check both on the stored run."""
    truth, beyond = ns["truth"]["mean"], ns["beyond"]
    assert np.all(ns["why_low"][beyond] > truth)
    assert beyond.mean() > 0.5 * ns["misses"].mean()
    below = np.mean(ns["why_high"] < truth)
    assert below < beyond.mean()


def test_worst_naive_coverage_is_at_005(ns):
    """The summary places the worst naive coverage at epsilon = 0.05."""
    coverage = ns["coverage"]
    naive = coverage[coverage["method"] == "naive"]
    assert naive.loc[naive["coverage"].idxmin(), "epsilon"] == 0.05


def test_regression_intervals_on_samples_are_very_wide(ns):
    """The chapter calls the sample-level intervals of no use: the median
    width of the education slope's interval is many times the slope."""
    slope = ns["fit_clipped"].params[2]
    widths = ns["regression_widths"].loc["education"]
    assert (widths > 50 * slope).all(), widths


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)

STEM = "dp-statistics"


def test_the_book_s_solutions_get_full_marks(tb):
    assignments.assert_full_marks(tb, STEM)


def test_the_untouched_student_notebook_scores_zero(tb):
    assignments.assert_stubs_score_zero(tb, STEM)


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "stats-ex-accuracy-99",
            "laplace_error_99 = 0.5 * np.log(100)\n"
            "discrete_error_99 = 0.5 * np.log(100)\n"
            "opendp_argument = 'alpha'\n",
            "the scale is 1/epsilon = 2, not epsilon",
        ),
        (
            "stats-ex-accuracy-99",
            "laplace_error_99 = 2 * np.log(100)\n"
            "discrete_error_99 = 2 * np.log(100)\n"
            "opendp_argument = 'scale'\n",
            "the integer noise has Pr[|Z| >= a] <= 1% from a",
        ),
        (
            "stats-ex-sample-size",
            "n_needed_01 = int(needed[0.1]) // 2\n"
            "n_needed_05 = int(needed[0.5])\n",
            "is still too large next to the sampling sd",
        ),
        (
            "stats-ex-small-test",
            "small_naive_rate = float(small_naive)\n"
            "small_mc_rate = float(small_mc)\n"
            "small_naive_se = float(np.sqrt(small_naive * (1 - small_naive)))\n"
            "small_mc_se = float(np.sqrt(small_mc * (1 - small_mc)))\n",
            "has se sqrt(r(1 - r)/1000)",
        ),
        (
            # the type I error at the chapter's epsilon of 1 instead of 0.1
            "stats-ex-small-test",
            "_r = np.random.default_rng(7)\n"
            "_t = multinomial_tables(np.full(1_000, 200), null_shares, _r)\n"
            "_n = laplace_mechanism(_t, 1, 1.0, _r)\n"
            "small_naive_rate = float(np.mean(\n"
            "    chi_square_statistic(_n) > stats.chi2.ppf(0.95, df=1)))\n"
            "small_mc_rate = float(small_mc)\n"
            "small_naive_se = float(np.sqrt(\n"
            "    small_naive_rate * (1 - small_naive_rate) / 1e3))\n"
            "small_mc_se = float(np.sqrt(small_mc * (1 - small_mc) / 1e3))\n",
            "further apart than chance allows",
        ),
        (
            # the correction forgotten: the clamped total reported twice
            "stats-ex-clamp-correction",
            "_c = summary.loc['clamped']\n"
            "_u = summary.loc['unclamped']\n"
            "clamp_answer = {'clamped': (_c['mean'], _c['std']),\n"
            "    'corrected': (_c['mean'], _c['std']),\n"
            "    'unclamped': (_u['mean'], _u['std'])}\n",
            "subtract (b/2) exp(-max(0, c)/b) for every cell",
        ),
    ],
    ids=[
        "epsilon-as-scale",
        "discrete-as-continuous",
        "n-too-small",
        "se-without-n",
        "wrong-epsilon",
        "no-correction",
    ],
)
def test_a_typical_wrong_answer_fails_with_its_reason(
    tb, label, code, expected
):
    message = assignments.wrong_answer_message(tb, STEM, label, code)
    assert expected in message, message

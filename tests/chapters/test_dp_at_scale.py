"""Tests for chapters/dp-at-scale.ipynb: the simulated visits, contribution
bounding, partition selection and the three engines, run in the chapter's
namespace."""

import ast
import importlib.util
import sys

import assignments
import numpy as np
import pandas as pd
import pytest
import support
from scipy import stats
from support import recording

from conftest import (
    CHAPTERS_DIR,
    DATA_DIR,
    ROOT,
    chapter_kernel,
    glued_value,
    value_error_message,
)

sys.path.insert(0, str(ROOT / "scripts"))

import make_visits  # noqa: E402


@pytest.fixture(scope="module")
def tb():
    with chapter_kernel("dp-at-scale") as notebook:
        yield notebook


# --- the simulated data --------------------------------------------------------


def test_visits_file_is_reproduced_byte_for_byte(tmp_path):
    output = tmp_path / "visits.csv"
    make_visits.main([str(DATA_DIR / "adult_with_pii.csv"), str(output)])
    assert output.read_bytes() == (DATA_DIR / "visits.csv").read_bytes()


def test_visits_have_no_direct_identifiers_and_modest_size():
    visits = pd.read_csv(DATA_DIR / "visits.csv")
    assert list(visits.columns) == ["person", "shop", "spend"]
    assert 100_000 <= len(visits) <= 150_000
    assert (DATA_DIR / "visits.csv").stat().st_size < 4_000_000
    # every census person appears, with a few to dozens of visits
    per_person = visits.groupby("person").size()
    assert per_person.index.tolist() == list(range(32_561))
    assert per_person.min() >= 1 and per_person.max() >= 50


def test_visits_depend_on_the_census_not_only_on_noise():
    # The rate grows with age: people of 60+ visit more often on average
    # than people under 30 (the simulated effect is exp(0.02 * 30) ~ 1.8;
    # with thousands of people per group a ratio above 1.3 is certain).
    adult = pd.read_csv(
        DATA_DIR / "adult_with_pii.csv", dtype={"Zip": str, "SSN": str}
    )
    per_person = pd.read_csv(DATA_DIR / "visits.csv").groupby("person").size()
    old = per_person[adult["Age"].to_numpy() >= 60].mean()
    young = per_person[adult["Age"].to_numpy() < 30].mean()
    assert old / young > 1.3


def test_scaled_visits_are_new_people_and_bad_scale_rejected():
    adult = pd.read_csv(
        DATA_DIR / "adult_with_pii.csv", dtype={"Zip": str, "SSN": str}
    ).head(200)
    doubled = make_visits.make_visits(adult, 2)
    assert doubled["person"].nunique() == 400
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            make_visits.make_visits(adult, bad)


# --- contribution bounding ----------------------------------------------------


@pytest.mark.parametrize("k, m", [(1, 1), (3, 2), (5, 10)])
def test_bounding_keeps_at_most_the_configured_rows(tb, k, m):
    tb.inject(
        f"_b = bound_contributions(visits, {k}, {m}, np.random.default_rng(3))"
    )
    tb.inject("_pairs = _b.groupby(['person', 'shop']).size()")
    assert tb.value("int(_pairs.max())") <= m
    assert tb.value("int(_pairs.groupby('person').size().max())") <= k
    # every kept row is a row of the input, unchanged
    assert tb.value("bool(_b.equals(visits.loc[_b.index]))")
    # nothing more is dropped than the bounds require: each person keeps
    # min(k, their shops) shops and min(m, their visits) in each
    shops_kept = "_pairs.groupby('person').size()"
    assert tb.value(
        f"bool(({shops_kept} == pair_visits.groupby('person').size()"
        f".clip(upper={k})).all())"
    )
    assert tb.value(
        f"bool((_pairs == pair_visits.loc[_pairs.index].clip(upper={m}))"
        ".all())"
    )


def test_bounding_with_large_bounds_keeps_everything(tb):
    assert tb.value(
        "bool(bound_contributions(visits, 1000, 1000, "
        "np.random.default_rng(1)).equals(visits))"
    )


def test_bounding_picks_shops_uniformly(tb):
    # 3,000 people, each with 1, 2 and 6 visits in shops A, B and C, k = 1:
    # each shop should be kept with probability 1/3, whatever its number of
    # rows. A person's sample depends only on their own rows, so one call
    # gives 3,000 independent draws (one seeded call instead of a loop).
    # Chi-square at the 0.1% level; the rule "a shop in proportion to its
    # rows" (1/9, 2/9, 6/9) would give a statistic near 1,500, and even a
    # tilt of (0.30, 0.33, 0.37) one near 25 (p ~ 4e-6).
    tb.inject(
        "_one = pd.DataFrame({'person': np.repeat(np.arange(3000), 9), "
        "'shop': np.tile(['A'] + ['B'] * 2 + ['C'] * 6, 3000)})\n"
        "_kept = bound_contributions(_one, 1, 10, np.random.default_rng(5))"
    )
    assert tb.value("int(_kept['person'].nunique())") == 3000
    counts = np.array(
        tb.value(
            "_kept.groupby('person')['shop'].first()"
            ".value_counts().sort_index().tolist()"
        )
    )
    assert len(counts) == 3
    assert stats.chisquare(counts).pvalue > 1e-3
    # the visits kept per shop are all of them (m = 10 >= 6)
    assert tb.value(
        "bool((_kept.groupby('person').size() == _kept.groupby('person')"
        "['shop'].first().map({'A': 1, 'B': 2, 'C': 6})).all())"
    )


def test_bounding_rejects_bad_input(tb):
    for call in [
        "bound_contributions(visits, 0, 1, rng)",
        "bound_contributions(visits, 2, 1.5, rng)",
        "bound_contributions(visits, True, 1, rng)",
        "bound_contributions(visits[['shop']], 2, 2, rng)",
        "bound_contributions(visits[['person']].iloc[:0], 2, 2, rng)",
        "private_quantile([1, 2], 0.95, [], 0.1, rng)",
        "private_quantile([1, 2], 1.5, BOUND_GRID, 0.1, rng)",
        "private_quantile([1, 2], 0.95, BOUND_GRID, 0, rng)",
    ]:
        assert value_error_message(tb, call)
    with pytest.raises(TypeError):
        tb.value("bound_contributions(visits, 2, 2, 7)")


def test_pandas_release_has_the_bounded_noise_scale(tb):
    # With bounds that keep every row, the error is pure Laplace noise of
    # scale k * m / eps = 2 * 3 / 0.5 = 12 on each of the 1,000 shops: a KS
    # test against that distribution at the 0.1% level.
    tb.inject(
        "_n = pair_visits.groupby('person').size()\n"
        "_most = pair_visits.groupby('person').max()\n"
        "_few = _n.index[((_n <= 2) & (_most <= 3)).to_numpy()]\n"
        "_big = visits[visits['person'].isin(_few)]\n"
        "_err = pandas_visit_counts(_big, 2, 3, 0.5, "
        "np.random.default_rng(8)) - visits_per_shop(_big)"
    )
    errors = np.array(tb.value("_err.tolist()"))
    assert stats.kstest(errors, stats.laplace(scale=12).cdf).pvalue > 1e-3


# --- private partition selection ------------------------------------------------


def test_release_probability_hand_computed(tb):
    # Geometric, eps = 1, k = 1: alpha = e^-1, P(Z >= j) = alpha^j / (1 +
    # alpha). From 1 person to threshold 4: j = 3.
    alpha = np.exp(-1)
    got = tb.value("float(release_probability(1, 4, 1.0, 1, 'geometric'))")
    assert got == pytest.approx(alpha**3 / (1 + alpha), rel=1e-12)
    # j = 0: P(Z >= 0) = 1 / (1 + alpha); j = -2: 1 - alpha^3 / (1 + alpha)
    got = tb.value(
        "release_probability([4, 6], 4, 1.0, 1, 'geometric').tolist()"
    )
    assert got == pytest.approx(
        [1 / (1 + alpha), 1 - alpha**3 / (1 + alpha)], rel=1e-12
    )
    # Laplace, eps = 1, k = 2 (scale 2): 1/2 exp(-(T - n) / 2) below T
    got = tb.value(
        "release_probability([1, 9], 5, 1.0, 2, 'laplace').tolist()"
    )
    assert got == pytest.approx(
        [0.5 * np.exp(-2), 1 - 0.5 * np.exp(-2)], rel=1e-12
    )


@pytest.mark.parametrize("noise", ["geometric", "laplace"])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_threshold_is_the_smallest_meeting_delta(tb, noise, k):
    for delta in (1e-5, 0.05):
        t = tb.value(
            f"float(selection_threshold(1.0, {delta}, {k}, '{noise}'))"
        )
        p1 = tb.value(
            f"float(release_probability(1, {t}, 1.0, {k}, '{noise}'))"
        )
        assert p1 <= delta / k * (1 + 1e-9)
        if noise == "geometric":
            assert t == int(t)
            if t > 2:
                before = tb.value(
                    f"float(release_probability(1, {t - 1}, 1.0, {k}, "
                    f"'{noise}'))"
                )
                assert before > delta / k
        else:
            assert p1 == pytest.approx(delta / k, rel=1e-9)


@pytest.mark.parametrize("noise", ["geometric", "laplace"])
@pytest.mark.parametrize("k", [1, 3])
def test_one_person_partition_released_no_more_than_delta(tb, noise, k):
    # 2,000 people, each the only visitor of k shops of their own (so the
    # bounding to k shops keeps all of them); delta = 0.05 is large enough
    # to measure. 25 seeded runs of select_partitions give 50,000 * k
    # chances. The release frequency must lie in the exact 99.9% binomial
    # interval around the exact probability p1, and p1 <= delta / k.
    delta = 0.05
    tb.inject(
        f"_solo = pd.DataFrame({{'person': np.repeat(np.arange(2000), {k}), "
        f"'shop': [f'X{{i}}' for i in range(2000 * {k})]}})\n"
        "_g = np.random.default_rng(11)\n"
        f"_hits = sum(len(select_partitions(_solo, {k}, 1.0, {delta}, _g, "
        f"'{noise}')) for _ in range(25))"
    )
    hits = tb.value("_hits")
    trials = 25 * 2000 * k
    t = tb.value(f"selection_threshold(1.0, {delta}, {k}, '{noise}')")
    p1 = tb.value(f"float(release_probability(1, {t}, 1.0, {k}, '{noise}'))")
    assert p1 <= delta / k <= delta
    low, high = tb.value(
        f"[float(x) for x in clopper_pearson({hits}, {trials}, 0.999)]"
    )
    assert low <= p1 <= high
    assert low <= delta / k  # not above delta beyond the interval


def test_partition_selection_keeps_large_and_drops_single_shops(tb):
    # A shop with 200 people is far above the threshold (11 at eps = 1,
    # delta = 1e-5, k = 1): it is dropped only with probability
    # alpha^190 / (1 + alpha) < 1e-80. A shop absent from the data is never
    # listed.
    tb.inject(
        "_t = pd.DataFrame({'person': np.arange(201), "
        "'shop': ['Big'] * 200 + ['Solo']})"
    )
    released = tb.value(
        "select_partitions(_t, 1, 1.0, 1e-5, np.random.default_rng(2))"
    )
    assert released == ["Big"]


def test_drop_out_sizes_hand_computed():
    # Geometric noise, alpha = exp(-eps / k): below T a shop with n people
    # is released with probability alpha^(T - n) / (1 + alpha), at or above
    # T kept with 1 - alpha^(n - T + 1) / (1 + alpha). The prose's sizes
    # (released < 1% up to n_rarely, kept > 99% from n_surely) recomputed.
    k = glued_value("dp-at-scale", "scale_k")
    t = glued_value("dp-at-scale", "scale_threshold")
    alpha = np.exp(-1.0 / k)
    n = np.arange(1, 3 * t)
    below = alpha ** np.maximum(t - n, 1) / (1 + alpha)
    above = 1 - alpha ** np.maximum(n - t + 1, 1) / (1 + alpha)
    released = np.where(n < t, below, above)
    assert (
        glued_value("dp-at-scale", "scale_n_rarely")
        == n[released < 0.01].max()
    )
    assert (
        glued_value("dp-at-scale", "scale_n_surely")
        == n[released > 0.99].min()
    )
    # and the threshold is the smallest with alpha^(T-1)/(1+alpha) <= d/k
    assert (
        alpha ** (t - 1) / (1 + alpha)
        <= 1e-5 / k
        < alpha ** (t - 2) / (1 + alpha)
    )


def test_attack_rates_match_the_exact_success():
    # The midpoint guess between two Laplace outputs v apart (scale 1/eps)
    # is right with probability 1 - exp(-v eps / 2) / 2. The chapter's
    # 20,000 seeded trials: within 4 binomial standard errors of it.
    eps = glued_value("dp-at-scale", "scale_row_epsilon")
    trials = glued_value("dp-at-scale", "scale_n_trials")
    v = glued_value("dp-at-scale", "scale_heavy_visits")
    for rate, visits in [
        (glued_value("dp-at-scale", "scale_light_rate"), 1),
        (glued_value("dp-at-scale", "scale_heavy_rate"), v),
    ]:
        exact = 1 - np.exp(-visits * eps / 2) / 2
        se = np.sqrt(exact * (1 - exact) / trials)
        assert abs(rate - exact) <= 4 * se + 1 / trials
    assert glued_value("dp-at-scale", "scale_light_exact") == pytest.approx(
        1 - np.exp(-eps / 2) / 2
    )
    # the light visitor stays within the bound e^eps / (1 + e^eps)
    assert 1 - np.exp(-eps / 2) / 2 < np.exp(eps) / (1 + np.exp(eps))


def test_selection_rejects_bad_input(tb):
    for call in [
        "selection_threshold(0, 1e-5, 1)",
        "selection_threshold(1.0, 0, 1)",
        "selection_threshold(1.0, 0.5, 1)",
        "selection_threshold(1.0, 1e-5, 0)",
        "selection_threshold(1.0, 1e-5, 2.5)",
        "selection_threshold(1.0, 1e-5, 1, 'gauss')",
    ]:
        assert value_error_message(tb, call)


# --- the book's data rule: data never makes a mechanism raise --------------


@pytest.mark.parametrize("noise", ["geometric", "laplace"])
def test_selection_and_counts_run_on_an_empty_table(tb, noise):
    # An empty table is data: no shop occurs, so none is listed, and the
    # directory's counts are Laplace noise of scale k m / eps around 0
    # (2 * 3 / 0.8 = 7.5; the mean of 1,000 lies within 5 of its standard
    # errors, 1.7, of 0).
    tb.inject("_empty = visits.iloc[:0]")
    listed = tb.value(
        "select_partitions(_empty, 2, 1.0, 1e-5, np.random.default_rng(1), "
        f"{noise!r})"
    )
    assert listed == []
    counts = np.array(
        tb.value(
            "pandas_visit_counts(_empty, 2, 3, 0.8, "
            "np.random.default_rng(2)).tolist()"
        )
    )
    assert counts.shape == (1000,) and np.all(np.isfinite(counts))
    assert abs(counts.mean()) < 1.7
    assert tb.value("len(bound_contributions(_empty, 2, 3, rng))") == 0


def test_rows_without_a_person_or_a_shop_are_dropped(tb):
    # A visit whose shop is missing belongs to no shop, one whose person is
    # missing to nobody's bounded contribution: with the same seed, the
    # bounding, the counts and the selection are exactly those of the
    # table without these rows.
    tb.inject(
        """
        _few = visits.iloc[:2000]
        _extra = pd.DataFrame({
            "person": [np.nan, _few["person"].iloc[0], None],
            "shop": ["S0001", None, np.nan],
            "spend": [1.0, 2.0, 3.0],
        })
        _dirty = pd.concat([_few, _extra], ignore_index=True)
        """
    )
    for call in (
        "bound_contributions({}, 3, 2, np.random.default_rng(3)).index",
        "pandas_visit_counts({}, 3, 2, 0.8, np.random.default_rng(4))",
        "select_partitions({}, 3, 1.0, 0.05, np.random.default_rng(5))",
    ):
        dirty = tb.value(f"list({call.format('_dirty')})")
        clean = tb.value(f"list({call.format('_few')})")
        assert dirty == clean


def test_bound_quantiles_are_calibrated_to_max_q_one_minus_q(tb):
    # The private bounds are 0.95-quantiles: the rank error moves by at
    # most max(q, 1 - q) = 0.95 per person, and that is the sensitivity
    # handed to the exponential mechanism, with the bound's own epsilon.
    # A missing or out-of-grid value is scored as the grid's nearer end.
    with recording(tb, "exponential_mechanism") as calls:
        tb.value(
            "private_quantile(shops_per_person, BOUND_QUANTILE, BOUND_GRID, "
            "BOUND_EPSILON, np.random.default_rng(6))"
        )
        tb.value(
            "private_quantile([np.nan, 0, 500, 'x', 3], 0.95, BOUND_GRID, "
            "0.1, np.random.default_rng(6))"
        )
        tb.value(
            "private_quantile([1, 1, 100, 1, 3], 0.95, BOUND_GRID, 0.1, "
            "np.random.default_rng(6))"
        )
    (utilities, sensitivity, epsilon, *_), dirty, clean = calls
    assert sensitivity == pytest.approx(0.95, abs=1e-15)
    assert epsilon == tb.value("BOUND_EPSILON")
    assert np.array_equal(dirty[0], clean[0]) and dirty[1:3] == clean[1:3]


def test_chapter_demo_agrees_with_exact_probability(tb):
    # The chapter's own count at delta = 0.05 (seeded): its 99% interval
    # contains the exact p1, which is at most delta / k.
    low, high, p1 = tb.value("[float(demo_low), float(demo_high), demo_p1]")
    assert low <= p1 <= high
    assert p1 <= tb.value("DEMO_DELTA / K_CHOSEN")


# --- the three engines ----------------------------------------------------------

# PipelineDP declares Python < 3.14: where it cannot be installed, the
# chapter skips its PipelineDP cells (tested below) and so do these tests.
needs_pipeline_dp = pytest.mark.skipif(
    importlib.util.find_spec("pipeline_dp") is None,
    reason="PipelineDP is not installed (it declares Python < 3.14)",
)


@needs_pipeline_dp
def test_spark_and_local_backends_agree_on_public_partitions(tb):
    if tb.value("by_spark is None"):
        pytest.skip(f"the chapter skipped Spark: {tb.value('spark_problem')}")
    # Both releases cover every public shop.
    assert tb.value("by_local.notna().all() and by_spark.notna().all()")
    local = np.array(tb.value("by_local.tolist()"))
    spark = np.array(tb.value("by_spark.tolist()"))
    noise_scale = tb.value("K_CHOSEN * M_CHOSEN / COUNT_EPSILON")
    # Spread of the pure bounding draw: the variance, per shop, of the
    # bounded counts over 8 seeded pandas boundings (the same sampling
    # rule as PipelineDP's), averaged over shops.
    tb.inject(
        "_g = np.random.default_rng(4)\n"
        "_draws = np.array([visits_per_shop(bound_contributions(visits, "
        "K_CHOSEN, M_CHOSEN, _g)).to_numpy() for _ in range(8)])"
    )
    bounding_var = float(tb.value("float(_draws.var(axis=0, ddof=1).mean())"))
    difference = spark - local
    # Laplace noise on each side: var 2 b^2 each, so 4 b^2 for the gap.
    expected_sd = np.sqrt(4 * noise_scale**2 + 2 * bounding_var)
    n = len(difference)
    # mean gap within 4 standard errors of 0
    assert abs(difference.mean()) < 4 * expected_sd / np.sqrt(n)
    # the spread of the gap matches: the sample SD of 1,000 differences of
    # Laplace variables is within about 3% (kurtosis 4.5); allow 15%.
    assert difference.std() == pytest.approx(expected_sd, rel=0.15)
    # and both have the error distribution of the hand-written version:
    # two-sample KS at the 0.1% level on the errors against the truth.
    truth = np.array(tb.value("true_counts.tolist()"))
    for release in (local, spark):
        by_hand = np.array(tb.value("by_pandas.tolist()"))
        assert stats.ks_2samp(release - truth, by_hand - truth).pvalue > 1e-3


def timing_medians():
    """Median seconds of each engine at each size, and the start-up."""
    timings = pd.read_csv(DATA_DIR / "dp-at-scale-timings.csv")
    startup = timings.loc[timings["engine"] == "Spark start-up", "seconds"]
    runs = timings[timings["engine"] != "Spark start-up"]
    medians = runs.groupby(["scale", "engine"])["seconds"].median()
    return medians.unstack("engine"), float(startup.median())


def test_timings_file_is_like_for_like():
    # Every engine at every size in every run (interleaved, several runs),
    # on the same rows, with the chapter's own k, m and epsilon.
    timings = pd.read_csv(DATA_DIR / "dp-at-scale-timings.csv")
    assert {"engine", "scale", "rows", "run", "seconds", "load"} <= set(
        timings.columns
    )
    assert timings["machine"].nunique() == 1
    assert (timings["seconds"] > 0).all()
    runs = timings[timings["engine"] != "Spark start-up"]
    engines = {
        "pandas",
        "PipelineDP LocalBackend",
        "PipelineDP Spark local[2]",
    }
    assert set(runs["engine"]) == engines
    assert set(runs["scale"]) == {1, 10}
    assert runs["run"].nunique() >= 3
    cells = runs.groupby(["run", "scale"])["engine"].apply(frozenset)
    assert (cells == frozenset(engines)).all()
    assert (runs.groupby("scale")["rows"].nunique() == 1).all()
    for column, glued in [
        ("k", "scale_k"),
        ("m", "scale_m"),
        ("epsilon", "scale_count_epsilon"),
    ]:
        assert set(timings[column]) == {glued_value("dp-at-scale", glued)}


def test_timings_support_the_prose():
    # The chapter says: on the measured machine pandas was fastest at both
    # sizes, and Spark's start-up did not pay off against the local
    # backend (medians of the runs).
    by_engine, startup = timing_medians()
    assert (by_engine.idxmin(axis=1) == "pandas").all()
    spark_total = by_engine["PipelineDP Spark local[2]"] + startup
    assert (spark_total > by_engine["PipelineDP LocalBackend"]).all()
    assert glued_value("dp-at-scale", "scale_bench_pandas_large") == (
        pytest.approx(by_engine.loc[10, "pandas"])
    )
    assert glued_value("dp-at-scale", "scale_bench_runs") >= 3
    # "pandas grows faster than its data": median at 10x over median at
    # 1x, against the rows' ratio.
    timings = pd.read_csv(DATA_DIR / "dp-at-scale-timings.csv")
    runs = timings[timings["engine"] != "Spark start-up"]
    rows = runs.groupby("scale")["rows"].first()
    growth = by_engine.loc[10, "pandas"] / by_engine.loc[1, "pandas"]
    assert growth > rows[10] / rows[1]
    assert glued_value("dp-at-scale", "scale_bench_pandas_growth") == (
        pytest.approx(growth)
    )
    # the ranking phrase: the same order in every run and size, or not
    order = runs.sort_values("seconds").groupby(["run", "scale"])["engine"]
    same = order.agg(tuple).nunique() == 1
    phrase = glued_value("dp-at-scale", "scale_bench_order")
    assert phrase.startswith("was the same") == same


@needs_pipeline_dp
def test_benchmark_times_the_chapters_own_aggregation(tb):
    # The benchmark reads its functions from the chapter: on the same
    # rows, bounds and seed they return the same release, and it uses the
    # chapter's privately chosen k and m and the counts' epsilon.
    import bench_dp_at_scale

    chapter = bench_dp_at_scale.chapter_aggregation()
    assert (chapter["K"], chapter["M"], chapter["EPSILON"]) == tuple(
        tb.value("[K_CHOSEN, M_CHOSEN, COUNT_EPSILON]")
    )
    small = tb["visits"].head(3000)
    ours = chapter["pandas_visit_counts"](
        small, 5, 10, 0.8, np.random.default_rng(7)
    )
    theirs = tb["pandas_visit_counts"](
        small, 5, 10, 0.8, np.random.default_rng(7)
    )
    pd.testing.assert_series_equal(ours, theirs)
    sources = bench_dp_at_scale.chapter_sources()
    assert (
        "max_partitions * max_per_partition" in sources["pandas_visit_counts"]
    )


def test_error_parts_add_in_quadrature():
    # RMSE^2 = bias^2 + noise SD^2, noise SD = sqrt(2) k m / eps.
    bias = glued_value("dp-at-scale", "scale_chosen_bias")
    noise = glued_value("dp-at-scale", "scale_chosen_noise")
    total = glued_value("dp-at-scale", "scale_chosen_rmse")
    k = glued_value("dp-at-scale", "scale_k")
    m = glued_value("dp-at-scale", "scale_m")
    eps = glued_value("dp-at-scale", "scale_count_epsilon")
    assert noise == pytest.approx(np.sqrt(2) * k * m / eps)
    assert total == pytest.approx(np.hypot(bias, noise))
    assert total - bias > 1  # the bias is not "of" the total


def test_median_person_bound_is_above_the_promise():
    # Two visits at eps 0.5 per row: guessing bound at eps 1 (73.1%)
    # against the promised 62.2% at eps 0.5.
    v = glued_value("dp-at-scale", "scale_sol_v_median")
    bound = glued_value("dp-at-scale", "scale_sol_bound_median")
    promised = glued_value("dp-at-scale", "scale_promised")
    assert bound == pytest.approx(1 / (1 + np.exp(-0.5 * v)))
    assert promised == pytest.approx(1 / (1 + np.exp(-0.5)))
    assert v >= 2 and bound - promised > 0.1


def test_what_delta_allows_is_computed():
    n = glued_value("dp-at-scale", "scale_n_people")
    k = glued_value("dp-at-scale", "scale_k")
    p1 = glued_value("dp-at-scale", "scale_p_single")
    assert glued_value("dp-at-scale", "scale_one_over_n") == (
        pytest.approx(1 / n)
    )
    assert glued_value("dp-at-scale", "scale_delta_ratio") == (
        pytest.approx(1 / (n * 1e-5))
    )
    assert glued_value("dp-at-scale", "scale_n_delta") == pytest.approx(
        n * 1e-5
    )
    lonely = glued_value("dp-at-scale", "scale_n_lonely")
    assert glued_value("dp-at-scale", "scale_lonely_released") == (
        pytest.approx(lonely * p1)
    )
    assert p1 <= 1e-5 / k


# Spark's section runs from the Java check to the cell that stops the
# session. Rerunning it (not the whole chapter) in a copy of the executed
# chapter's namespace is what a reader without Java sees: no cell before it
# depends on Java, and no later cell uses Spark (checked below).
SPARK_FIRST, SPARK_LAST = "scale-java-version", "scale-8d6bcf1b"


def spark_section():
    """The code cells of the Spark section, and the code cells after it."""
    import nbformat

    notebook = nbformat.read(CHAPTERS_DIR / "dp-at-scale.ipynb", as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    ids = [cell.id for cell in code]
    first, last = ids.index(SPARK_FIRST), ids.index(SPARK_LAST)
    return code[first : last + 1], code[last + 1 :]


def fake_java(folder, version_line):
    """A `java` in `folder` that answers -version like a real one."""
    folder.mkdir(parents=True, exist_ok=True)
    java = folder / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(0o755)
    return folder


def run_spark_section(tb):
    """Run the Spark section again in a copy of the chapter's namespace."""
    namespace = dict(tb.namespace)
    section, _ = spark_section()
    for cell in section:
        exec(compile(cell.source, cell.id, "exec"), namespace)
    return namespace


def test_no_cell_after_the_spark_section_needs_spark():
    # The names the Spark section defines are not used after it.
    section, after = spark_section()
    defined = set()
    for cell in section:
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
            elif isinstance(node, ast.FunctionDef):
                defined.add(node.name)
    assert {"spark", "by_spark", "spark_available"} <= defined
    for cell in after:
        used = {
            node.id
            for node in ast.walk(ast.parse(cell.source))
            if isinstance(node, ast.Name)
        }
        assert not used & (defined - {"comparison"}), cell.id


@needs_pipeline_dp
@pytest.mark.parametrize(
    "version_line, reason",
    [
        (None, "no Java runtime was found"),
        ('openjdk version "11.0.22" 2024-01-16', "Java 11 was found"),
        ('java version "1.8.0_392"', "Java 8 was found"),
    ],
)
def test_spark_section_skips_without_java_17(
    tb, monkeypatch, capsys, tmp_path, version_line, reason
):
    # A reader without Java, or with Java 11 (Colab) or 8: the section must
    # say in one sentence what to install and skip Spark, without an error.
    folder = tmp_path / "bin"
    folder.mkdir()
    if version_line is not None:
        fake_java(folder, version_line)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    capsys.readouterr()
    namespace = run_spark_section(tb)
    assert namespace["spark_available"] is False
    assert namespace["spark"] is None and namespace["by_spark"] is None
    assert list(namespace["comparison"].index) == ["pandas", "LocalBackend"]
    printed = capsys.readouterr().out
    assert printed.startswith(f"Skipping Spark ({reason}")
    assert "install a Java 17 runtime" in printed
    assert printed.count(".") == 1 and printed.rstrip().endswith("rerun.")


@needs_pipeline_dp
@pytest.mark.parametrize(
    "java_line, has_pyspark, names, advice, not_advised",
    [
        # Java missing, pyspark installed (the reader who followed the
        # requirements): Java is named, and pyspark is not to be installed.
        (None, True, "no Java runtime was found", "install a Java 17", "pip"),
        # Java 17 there, pyspark missing: only pyspark is named.
        (
            'openjdk version "17.0.15" 2025-04-15',
            False,
            "pyspark is not installed",
            "`pip install pyspark`",
            "Java 17 runtime",
        ),
        # Both missing: both named, both advised.
        (
            None,
            False,
            "no Java runtime was found; pyspark is not installed",
            "install a Java 17 runtime",
            None,
        ),
    ],
)
def test_spark_skip_message_names_what_is_missing(
    tb,
    monkeypatch,
    capsys,
    tmp_path,
    java_line,
    has_pyspark,
    names,
    advice,
    not_advised,
):
    folder = tmp_path / "bin"
    folder.mkdir()
    if java_line is not None:
        fake_java(folder, java_line)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    if not has_pyspark:
        # importlib.util.find_spec("pyspark") is None, as without it
        monkeypatch.setitem(sys.modules, "pyspark", None)
    capsys.readouterr()
    namespace = run_spark_section(tb)
    assert namespace["spark_available"] is False
    printed = capsys.readouterr().out
    assert printed.startswith(f"Skipping Spark ({names}):"), printed
    assert advice in printed
    if not has_pyspark:
        assert "`pip install pyspark`" in printed
    if not_advised:
        assert not_advised not in printed, printed
    assert printed.count(".") == 1 and printed.rstrip().endswith("rerun.")
    assert namespace["spark"] is None and namespace["by_spark"] is None


def test_spark_skip_message_is_none_when_spark_can_run(tb):
    assert tb.value("spark_skip_message(17, True)") is None
    assert tb.value("spark_skip_message(21, True)") is None
    assert "Java 11 was found" in tb.value("spark_skip_message(11, True)")


@pytest.mark.parametrize(
    "version_line, major",
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('openjdk version "21" 2023-09-19', 21),
        ('openjdk version "11.0.22" 2024-01-16', 11),
        ('java version "1.8.0_392"', 8),
        ("no version here", None),
    ],
)
def test_java_version_is_read_from_java(
    tb, monkeypatch, tmp_path, version_line, major
):
    monkeypatch.setenv("PATH", str(fake_java(tmp_path, version_line)))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert tb.value("java_major_version()") == major


def test_java_home_takes_precedence_over_path(tb, monkeypatch, tmp_path):
    # Spark starts $JAVA_HOME/bin/java: a Java 11 there is too old even
    # when a Java 17 is first on the PATH.
    fake_java(tmp_path / "home" / "bin", 'openjdk version "11.0.2"')
    path = fake_java(tmp_path / "path", 'openjdk version "17.0.1"')
    monkeypatch.setenv("PATH", str(path))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "home"))
    assert tb.value("java_major_version()") == 11
    monkeypatch.delenv("JAVA_HOME")
    assert tb.value("java_major_version()") == 17


# Where PipelineDP cannot be installed (Python 3.14: it declares < 3.14),
# the chapter runs on: the section from the LocalBackend run to the Spark
# section's end says so in one sentence each and keeps the pandas release.
PIPELINE_FIRST = "scale-7c2a054e"


def test_pipeline_sections_skip_without_pipeline_dp(tb, capsys):
    import nbformat

    notebook = nbformat.read(CHAPTERS_DIR / "dp-at-scale.ipynb", as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    ids = [cell.id for cell in code]
    section = code[ids.index(PIPELINE_FIRST) : ids.index(SPARK_LAST) + 1]
    namespace = dict(tb.namespace)
    namespace["pipeline_dp"] = None  # as after the import cell's fallback
    capsys.readouterr()
    for cell in section:
        exec(compile(cell.source, cell.id, "exec"), namespace)
    printed = capsys.readouterr().out
    assert printed.startswith("Skipping PipelineDP (it is not installed;")
    assert "Skipping Spark too" in printed
    assert namespace["by_local"] is None and namespace["spark"] is None
    assert list(namespace["comparison"].index) == ["pandas"]


def test_import_cell_falls_back_when_pipeline_dp_is_missing(tb):
    import nbformat

    notebook = nbformat.read(CHAPTERS_DIR / "dp-at-scale.ipynb", as_version=4)
    cell = next(c for c in notebook.cells if "import pipeline_dp" in c.source)
    namespace = dict(tb.namespace)
    saved = sys.modules.get("pipeline_dp")
    sys.modules["pipeline_dp"] = None  # makes `import pipeline_dp` fail
    try:
        exec(compile(cell.source, cell.id, "exec"), namespace)
    finally:
        if saved is None:
            del sys.modules["pipeline_dp"]
        else:
            sys.modules["pipeline_dp"] = saved
    assert namespace["pipeline_dp"] is None


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)

STEM = "dp-at-scale"


def test_the_book_s_solutions_get_full_marks(tb):
    assignments.assert_full_marks(tb, STEM)


def test_the_untouched_student_notebook_scores_zero(tb):
    assignments.assert_stubs_score_zero(tb, STEM)


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "scale-ex-group",
            'group_epsilon = {"median": 0.5, "0.99-quantile": 0.5, "heaviest": 0.5}\n',
            "by group privacy v rows at 0.5 each cost",
        ),
        (
            "scale-ex-select-k",
            "select_thresholds = {k: int(np.ceil(selection_threshold(1.0, 1e-5, k, 'laplace'))) for k in (1, 2, 3, 5, 10)}\n",
            "the smallest whole threshold that does this",
        ),
        (
            "scale-ex-select-k",
            "best_select_k = 10\n",
            "a larger k adds few people per shop",
        ),
        (
            "scale-ex-quantile",
            'q50_error_source = "noise"\n',
            "so the bias dominates",
        ),
        (
            "scale-ex-group",
            "group_guess = {\n"
            "    w: 1 / (1 + np.exp(e)) for w, e in group_epsilon.items()\n"
            "}\n",
            "that is the chance of guessing wrong",
        ),
        (
            "scale-ex-group",
            "group_guess = {w: guessing_bound(0.5) for w in group_guess}\n",
            "that is the bound at one row's epsilon 0.5",
        ),
        (
            "scale-ex-quantile",
            "quantile_table = quantile_table.assign(\n"
            "    noise=np.sqrt(2) * quantile_table.k * quantile_table.m / 1.0\n"
            ")\n",
            "has standard deviation sqrt(2) k m / eps",
        ),
        (
            "scale-ex-quantile",
            "best_q = 0.99\n",
            "the smallest total error in your own table is at 0.95",
        ),
    ],
    ids=[
        "per-row-epsilon",
        "laplace-threshold",
        "largest-k-best",
        "noise-at-median",
        "guess-is-chance-wrong",
        "guess-at-row-epsilon",
        "noise-at-eps-1",
        "best-not-own-minimum",
    ],
)
def test_a_typical_wrong_answer_fails_with_its_reason(
    tb, label, code, expected
):
    # The book's answer first, then the wrong part over it.
    assignments.assert_wrong_answer_fails(
        tb, STEM, label, code, expected, over=True
    )


LAPLACE_THRESHOLDS = (
    "select_thresholds = {\n"
    "    k: int(np.ceil(selection_threshold(1.0, 1e-5, k, 'laplace')))\n"
    "    for k in (1, 2, 3, 5, 10)\n"
    "}\n"
)


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "scale-ex-group",
            'group_epsilon = {"median": 0.5, "0.99-quantile": 0.5,'
            ' "heaviest": 0.5}\n',
            "the epsilon of one row",
        ),
        (
            "scale-ex-group",
            "group_guess = {\n"
            "    w: 1 / (1 + np.exp(e)) for w, e in group_epsilon.items()\n"
            "}\n",
            "the chance of guessing wrong",
        ),
        ("scale-ex-select-k", LAPLACE_THRESHOLDS, "those of Laplace noise"),
        (
            "scale-ex-select-k",
            "select_thresholds = {\n"
            "    k: selection_threshold(1.0, 1e-5, k, 'laplace')\n"
            "    for k in (1, 2, 3, 5, 10)\n"
            "}\n",
            "the threshold is a whole number",
        ),
        (
            "scale-ex-quantile",
            "quantile_table = quantile_table.assign(\n"
            "    noise=np.sqrt(2) * quantile_table.k * quantile_table.m / 1.0\n"
            ")\n",
            "the counts are released at eps = 0.8",
        ),
        (
            "scale-ex-quantile",
            "best_q = 0.99\n",
            "own table is at another level",
        ),
    ],
    ids=[
        "per-row-epsilon",
        "guess-is-chance-wrong",
        "laplace-thresholds",
        "fractional-thresholds",
        "noise-at-eps-1",
        "best-not-own-minimum",
    ],
)
def test_the_public_checks_catch_a_common_mistake(tb, label, code, expected):
    assignments.assert_public_checks_name(
        tb, STEM, label, code, expected, over=True
    )


@pytest.mark.parametrize(
    ("label", "code"),
    [
        (
            # NumPy floats, bounds to 3 significant figures, and a linear
            # interpolated quantile (any convention between the order
            # statistics is accepted)
            "scale-ex-group",
            "_most = pair_visits.groupby('person').max()\n"
            "group_epsilon = {\n"
            "    'median': np.float32(0.5 * _most.quantile(0.5)),\n"
            "    '0.99-quantile': np.float64(0.5 * _most.quantile(0.99)),\n"
            "    'heaviest': np.float32(0.5 * _most.max()),\n"
            "}\n"
            "group_guess = {\n"
            "    w: float(f'{guessing_bound(e):.3g}')\n"
            "    for w, e in group_epsilon.items()\n"
            "}\n",
        ),
        (
            "scale-ex-select-k",
            "select_thresholds = {\n"
            "    np.int64(k): float(t) for k, t in select_thresholds.items()\n"
            "}\n"
            "best_select_k = np.int64(best_select_k)\n",
        ),
        (
            "scale-ex-quantile",
            "quantile_table = quantile_table.rename(index=str).map(\n"
            "    lambda v: float(f'{v:.3g}')\n"
            ")\n"
            "best_q = np.float32(best_q)\n",
        ),
    ],
    ids=["group-numpy-3-figures", "select-numpy-floats", "quantile-rounded"],
)
def test_a_right_answer_in_another_form_passes(tb, label, code):
    assignments.assert_answer_passes(tb, STEM, label, code, over=True)


def test_the_group_solution_shows_the_q99_bound_below_certainty():
    # Issue 42, item 25: the solution printed "already 100.0%" for a bound
    # of 0.99988; the prose's format must show the digits that matter.
    import re  # noqa: PLC0415

    import nbformat  # noqa: PLC0415

    cells = nbformat.read(CHAPTERS_DIR / "dp-at-scale.ipynb", as_version=4)
    (spec,) = {
        match
        for cell in cells.cells
        if cell.cell_type == "markdown"
        for match in re.findall(
            r"\{glue:text\}`scale_sol_bound_q99:([^`]*)`", cell.source
        )
    }
    shown = format(glued_value("dp-at-scale", "scale_sol_bound_q99"), spec)
    assert shown == "99.988%", shown


# --- the partition-selection dial ----------------------------------------------


def _vega(expression, signals, datum):
    """Evaluate a Vega expression (signals, datum.x, a ? b : c) in Python."""
    import re  # noqa: PLC0415

    code = expression.replace("datum.", "_d_")
    ternary = re.fullmatch(r"(.+?) \? (.+) : (.+)", code)
    if ternary:
        code = "({1}) if ({0}) else ({2})".format(*ternary.groups())
    names = {f"_d_{k}": v for k, v in datum.items()}
    functions = {"exp": np.exp, "pow": np.power, "round": np.round}
    return eval(code, {**functions, **signals, **names})


def _run_layer(spec, layer, signals):
    """The rows of one layer after its transforms, as Vega computes them."""
    part = spec["layer"][layer]
    data = part.get("data", spec.get("data"))
    while "layer" in part:  # a layer of text marks: its first
        part = part["layer"][0]
        data = part.get("data", data)
    transforms = part["transform"]
    rows = [dict(r) for r in spec["datasets"][data["name"]]]
    for step in transforms:
        if step.get("as", "").endswith("text"):  # texts: the browser test
            continue
        if "calculate" in step:
            for r in rows:
                r[step["as"]] = _vega(step["calculate"], signals, r)
        elif "lookup" in step:
            table = spec["datasets"][step["from"]["data"]["name"]]
            index = {r[step["from"]["key"]]: r for r in table}
            for r in rows:
                for field in step["from"]["fields"]:
                    r[field] = index[r[step["lookup"]]][field]
        elif "filter" in step:
            rows = [r for r in rows if _vega(step["filter"], signals, r)]
        elif "aggregate" in step:
            ops = {"sum": sum, "max": max}
            rows = [
                {
                    a["as"]: ops[a["op"]](r[a["field"]] for r in rows)
                    for a in step["aggregate"]
                }
            ]
    return rows


@pytest.mark.parametrize(
    "args",
    [
        "people_bounded, 5, (1.0, 0.25, 3.0, 0.3), (-5, -10, -2)",  # steps
        "people_bounded, 5, (4.0, 0.25, 3.0, 0.25), (-5, -10, -2)",  # start
        "people_bounded, 5, (1.0, 0.25, 3.0, 0.25), (-5.5, -10, -2)",  # whole
        "people_bounded, 5, (1.0, 0.25, 3.0, 0.25), (-5, -10, 0)",  # delta 1
        "people_bounded, 0, (1.0, 0.25, 3.0, 0.25), (-5, -10, -2)",  # k = 0
        "people_bounded.iloc[:0], 5, (1.0, 0.25, 3.0, 0.25), (-5, -10, -2)",
    ],
)
def test_partition_dial_rejects_bad_inputs(tb, args):
    value_error_message(tb, f"partition_dial({args})")


def test_stored_partition_dial_is_the_chapters_selection(tb):
    """Every slider position has a threshold meeting the theorem's
    condition (p1(T) <= delta / k, and T - 1 would not); at several
    positions the curve is release_probability and the summary the
    expected number of released shops; Vega compiles the figure."""

    spec = support.stored_vega_lite("dp-at-scale")
    k = tb.value("K_CHOSEN")
    eps_param, delta_param = spec["params"]
    assert eps_param["value"] == tb.value("SELECT_EPSILON")
    assert delta_param["value"] == -5
    assert eps_param["bind"]["min"] == glued_value(
        "dp-at-scale", "scale_dial_eps_low"
    )
    assert eps_param["bind"]["max"] == glued_value(
        "dp-at-scale", "scale_dial_eps_high"
    )
    epsilons = np.arange(0.25, 3.0 + 1e-9, 0.25)
    deltas = range(-10, -1)
    for eps in epsilons:
        for log10_delta in deltas:
            signals = {"epsilon": eps, "log10_delta": log10_delta}
            (rule,) = _run_layer(spec, 1, signals)
            t = rule["threshold"]
            p1 = tb.value(
                f"float(release_probability(1, {t}, {eps}, {k}, 'geometric'))"
            )
            before = tb.value(
                f"float(release_probability(1, {t - 1}, {eps}, {k},"
                " 'geometric'))"
            )
            assert p1 <= 10.0**log10_delta / k
            assert t == 2 or before > 10.0**log10_delta / k
    for eps, log10_delta in [(0.25, -10), (1.0, -5), (2.5, -3), (3.0, -2)]:
        signals = {"epsilon": eps, "log10_delta": log10_delta}
        rows = _run_layer(spec, 0, signals)
        n = [r["n"] for r in rows]
        expected = tb.value(
            f"release_probability({n}, selection_threshold({eps},"
            f" 1e{log10_delta}, K_CHOSEN), {eps}, K_CHOSEN,"
            " 'geometric').tolist()"
        )
        shown = [r["probability"] for r in rows]
        assert shown == pytest.approx(expected, rel=1e-9, abs=1e-15)
        (summary,) = _run_layer(spec, 2, signals)
        assert summary["expected"] == pytest.approx(
            tb.value(f"expected_released({eps}, 1e{log10_delta})[1]"),
            rel=1e-9,
        )
    assert _run_layer(spec, 2, {"epsilon": 1.0, "log10_delta": -5})[0][
        "expected"
    ] == pytest.approx(glued_value("dp-at-scale", "scale_expected_released"))
    assert {"epsilon", "log10_delta"} <= support.vega_signals(spec)


def test_dial_prose_numbers_from_the_geometric_tail():
    """The glued numbers of the dial's prose, recomputed without the
    chapter's functions: the smallest T with a^(T-1) / (1 + a) <= delta / k,
    the expected number of released shops from the stored shop sizes, and
    the chance 1 / (1 + a) that a shop of exactly T people is kept."""
    import math  # noqa: PLC0415

    k = int(glued_value("dp-at-scale", "scale_k"))
    spec = support.stored_vega_lite("dp-at-scale")
    (table,) = [
        rows for rows in spec["datasets"].values() if "shops" in rows[0]
    ]

    def threshold(eps, delta):
        alpha, t = math.exp(-eps / k), 2
        while alpha ** (t - 1) / (1 + alpha) > delta / k:
            t += 1
        return t

    def kept(n, t, eps):
        alpha, gap = math.exp(-eps / k), t - n
        if gap >= 1:
            return alpha**gap / (1 + alpha)
        return 1 - alpha ** (1 - gap) / (1 + alpha)

    for eps, delta, name in [
        (glued_value("dp-at-scale", "scale_dial_eps_low"), 1e-10, "strict"),
        (glued_value("dp-at-scale", "scale_dial_eps_high"), 1e-2, "loose"),
    ]:
        t = threshold(eps, delta)
        assert glued_value("dp-at-scale", f"scale_dial_t_{name}") == t
        expected = sum(r["shops"] * kept(r["people"], t, eps) for r in table)
        assert glued_value(
            "dp-at-scale", f"scale_dial_released_{name}"
        ) == pytest.approx(expected, rel=1e-9)
    eps_low = glued_value("dp-at-scale", "scale_dial_eps_low")
    assert glued_value("dp-at-scale", "scale_dial_p_at_strict") == (
        pytest.approx(1 / (1 + math.exp(-eps_low / k)), rel=1e-12)
    )
    assert sum(r["shops"] for r in table) == glued_value(
        "dp-at-scale", "scale_dial_n_shops"
    )

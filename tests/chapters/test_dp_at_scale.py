"""Tests for chapters/dp-at-scale.ipynb: the simulated visits, contribution
bounding, partition selection and the three engines, run in the chapter's
namespace."""

import shutil
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from conftest import DATA_DIR, ROOT, chapter_kernel, value_error_message

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
    # One person with 1, 2 and 6 visits in three shops, k = 1: each shop
    # should be kept with probability 1/3, whatever its number of rows.
    # 1,500 seeded draws; chi-square at the 0.1% level.
    tb.inject(
        "_one = pd.DataFrame({'person': 0, 'shop': ['A'] + ['B'] * 2 + "
        "['C'] * 6})\n"
        "_g = np.random.default_rng(5)\n"
        "_kept = [bound_contributions(_one, 1, 10, _g)['shop'].iloc[0] "
        "for _ in range(1500)]"
    )
    counts = pd.Series(tb.value("_kept")).value_counts()
    assert stats.chisquare(counts.to_numpy()).pvalue > 1e-3


def test_bounding_rejects_bad_input(tb):
    for call in [
        "bound_contributions(visits, 0, 1, rng)",
        "bound_contributions(visits, 2, 1.5, rng)",
        "bound_contributions(visits, True, 1, rng)",
        "bound_contributions(visits[['shop']], 2, 2, rng)",
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


def test_chapter_demo_agrees_with_exact_probability(tb):
    # The chapter's own count at delta = 0.05 (seeded): its 99% interval
    # contains the exact p1, which is at most delta / k.
    low, high, p1 = tb.value("[float(demo_low), float(demo_high), demo_p1]")
    assert low <= p1 <= high
    assert p1 <= tb.value("DEMO_DELTA / K_CHOSEN")


# --- the three engines ----------------------------------------------------------


def test_spark_and_local_backends_agree_on_public_partitions(tb):
    if tb.value("by_spark is None"):
        reason = "Java is absent" if not shutil.which("java") else "no Spark"
        pytest.skip(f"the chapter skipped Spark: {reason}")
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


def test_timings_file_covers_the_three_engines():
    timings = pd.read_csv(DATA_DIR / "dp-at-scale-timings.csv")
    assert set(timings.columns) >= {"engine", "scale", "rows", "seconds"}
    engines = set(timings["engine"])
    assert {"pandas", "PipelineDP LocalBackend"} <= engines
    assert set(timings.loc[timings["engine"] == "pandas", "scale"]) == {
        1,
        10,
        100,
    }
    assert timings["machine"].nunique() == 1
    assert (timings["seconds"] > 0).all()


def test_chapter_runs_without_java(monkeypatch, capsys, tmp_path):
    # A reader without a Java runtime: no `java` on PATH, no JAVA_HOME. The
    # chapter must run top to bottom, say what to install and skip Spark.
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with chapter_kernel("dp-at-scale") as chapter:
        assert chapter.value("spark_available") is False
        assert chapter.value("by_spark is None")
        assert chapter.value("list(comparison.index)") == [
            "pandas",
            "LocalBackend",
        ]
    printed = capsys.readouterr().out
    assert "Skipping Spark: install a Java 17 runtime" in printed

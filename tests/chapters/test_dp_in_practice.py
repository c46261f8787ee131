"""Tests for chapters/dp-in-practice.ipynb: the chapter's own functions, run in its kernel."""

import assignments
import numpy as np
import pytest
import support
from scipy import stats

from conftest import chapter_kernel, value_error_message


@pytest.fixture(scope="module")
def tb():
    with chapter_kernel("dp-in-practice") as notebook:
        yield notebook


# --- the distinguishing bound -------------------------------------------------


def test_guessing_bound_values(tb):
    # Hand-computed: e^0 / (1 + e^0) = 1/2 and 3 / (1 + 3) = 3/4.
    assert tb.value("float(guessing_bound(0.0))") == pytest.approx(0.5)
    assert tb.value("float(guessing_bound(np.log(3)))") == pytest.approx(0.75)


def test_guessing_bound_rejects_negative_epsilon(tb):
    value_error_message(tb, "guessing_bound(-0.1)")


# --- Clopper-Pearson -------------------------------------------------------


@pytest.mark.parametrize(
    "successes,trials", [(0, 50), (7, 50), (50, 50), (4321, 10000)]
)
def test_clopper_pearson_matches_scipy(tb, successes, trials):
    lower, upper = tb.value(
        f"[float(x) for x in clopper_pearson({successes}, {trials}, 0.9)]"
    )
    expected = stats.binomtest(successes, trials).proportion_ci(
        0.9, method="exact"
    )
    assert lower == pytest.approx(expected.low, abs=1e-12)
    assert upper == pytest.approx(expected.high, abs=1e-12)


@pytest.mark.parametrize(
    "call",
    [
        "clopper_pearson(3, 10, 1.0)",
        "clopper_pearson(11, 10)",
        "clopper_pearson(0, 0)",
    ],
)
def test_clopper_pearson_rejects_bad_input(tb, call):
    value_error_message(tb, call)


# --- mechanisms ------------------------------------------------------------


def test_naive_laplace_has_laplace_spread(tb):
    # Scale 1/0.5 = 2, so the standard deviation is 2 * sqrt(2); 200,000 draws give
    # a standard error of well under 1% on the standard deviation.
    std = tb.value(
        "float(np.std(naive_laplace(np.zeros(200_000), 1, 0.5, "
        "np.random.default_rng(1))))"
    )
    assert std == pytest.approx(2 * np.sqrt(2), rel=0.02)


def test_geometric_mechanism_distribution(tb):
    # Two-sided geometric with alpha = e^-1: mean 0, variance 2 alpha / (1 - alpha)^2.
    mean, var, all_int = tb.value(
        "(lambda z: [float(z.mean()), float(z.var()), bool(np.all(z == np.rint(z)))])"
        "(geometric_mechanism(np.zeros(200_000, dtype=int), 1, 1.0, np.random.default_rng(2)))"
    )
    alpha = np.exp(-1.0)
    assert all_int
    assert abs(mean) < 0.02
    assert var == pytest.approx(2 * alpha / (1 - alpha) ** 2, rel=0.03)


def test_geometric_mechanism_sensitivity_widens_noise(tb):
    # Argument order (value, sensitivity, epsilon, rng): sensitivity 2 at epsilon 1
    # must give alpha = e^-1/2, the same noise as sensitivity 1 at epsilon 1/2.
    var = tb.value(
        "float(geometric_mechanism(np.zeros(200_000, dtype=int), 2, 1.0, "
        "np.random.default_rng(3)).var())"
    )
    alpha = np.exp(-0.5)
    assert var == pytest.approx(2 * alpha / (1 - alpha) ** 2, rel=0.03)


@pytest.mark.parametrize(
    "call",
    [
        "geometric_mechanism(3, 1, 0.0, rng)",
        "geometric_mechanism(3.5, 1, 1.0, rng)",
        "geometric_mechanism(3, 0.5, 1.0, rng)",
        "naive_laplace(3.0, 1, -1.0, rng)",
        "naive_laplace(3.0, 0, 1.0, rng)",
        "attack_success(naive_laplace, could_come_from_naive, 0.5, 0, rng)",
    ],
)
def test_mechanisms_reject_bad_input(tb, call):
    value_error_message(tb, call)


@pytest.mark.parametrize(
    "call",
    [
        "naive_laplace(3.0, 1, 1.0, 42)",
        "geometric_mechanism(3, 1, 1.0, 42)",
    ],
)
def test_mechanisms_reject_a_seed_instead_of_a_generator(tb, call):
    tb.inject(
        """
        def _raises_type_error(call):
            try:
                call()
            except TypeError:
                return True
            return False
    """,
        pop=True,
    )
    assert tb.value(f"_raises_type_error(lambda: {call})")


# --- the floating-point attack ---------------------------------------------


def test_true_input_is_always_reachable(tb):
    # The attacker's test must never rule out the input that really produced a value.
    assert tb.value(
        "bool(np.all(could_come_from_naive(naive_laplace(np.ones(20_000), 1, 0.3, "
        "np.random.default_rng(3)), 1.0, 0.3)))"
    )


@pytest.mark.parametrize("epsilon", [0.3, 1.0])
def test_true_input_is_always_reachable_under_numpy_laplace(tb, epsilon):
    # The same property for NumPy's sampler behind the book's laplace_mechanism: if the
    # attacker's rerun of NumPy's arithmetic were off by one bit, this would fail.
    assert tb.value(
        f"bool(np.all(could_come_from_numpy_laplace(laplace_mechanism("
        f"np.full(20_000, 7.0), 1, {epsilon}, np.random.default_rng(8)), 7.0, "
        f"{epsilon})))"
    )


@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_attack_beats_bound_on_numpy_laplace(tb, epsilon):
    # Finding 13: the earlier chapters' laplace_mechanism (NumPy's Generator.laplace) is
    # not epsilon-DP in floating point. The 99% lower confidence limit of the attack's
    # success rate over 50,000 seeded trials must clear the bound by a wide margin
    # (the chapter measures about 0.91 against 0.73 at epsilon = 1).
    lower, bound = tb.value(
        f"[float(clopper_pearson(attack_success(laplace_mechanism, "
        f"could_come_from_numpy_laplace, {epsilon}, 50_000, np.random.default_rng(9)), "
        f"50_000, 0.99)[0]), float(guessing_bound({epsilon}))]"
    )
    assert lower > bound + 0.1


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0])
def test_attack_beats_bound_on_naive_sampler(tb, epsilon):
    lower, bound = tb.value(
        f"[float(clopper_pearson(attack_success(naive_laplace, could_come_from_naive, {epsilon}, "
        f"50_000, np.random.default_rng(4)), 50_000, 0.99)[0]), float(guessing_bound({epsilon}))]"
    )
    assert lower > bound + 0.05


@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_attack_within_bound_on_geometric_mechanism(tb, epsilon):
    lower, bound = tb.value(
        f"[float(clopper_pearson(attack_success(geometric_mechanism, could_come_from_integer, "
        f"{epsilon}, 50_000, np.random.default_rng(5)), 50_000, 0.99)[0]), "
        f"float(guessing_bound({epsilon}))]"
    )
    assert lower <= bound


# --- the OpenDP section's accounting --------------------------------------


def test_opendp_budget_is_spent_and_both_releases_are_counted(tb):
    # The library spent exactly its budget (three equal shares); the page's total on the
    # ages adds our own release, as sequential composition requires.
    spent, own, library, total = tb.value(
        "[sum(context.current_privacy_loss()), OWN_EPSILON, OPENDP_EPSILON, "
        "total_epsilon_on_ages]"
    )
    assert spent == pytest.approx(library)
    assert total == pytest.approx(own + library)
    assert total == pytest.approx(2.0)


def test_opendp_refuses_a_query_after_the_budget(tb):
    message = value_error_message(tb, "context.query().count().laplace()")
    assert "exhausted" in message


# --- the auditor -----------------------------------------------------------

AUDIT_CORRECT = (
    "audit_epsilon(count_with_correct_scale, is_rich, without_one_rich, 20_000, 20, "
    "(n_rich - 7, n_rich + 6), np.random.default_rng({seed}){extra})"
)


def test_auditor_is_deterministic_at_fixed_seed(tb):
    first = tb.value(AUDIT_CORRECT.format(seed=11, extra=""))
    second = tb.value(AUDIT_CORRECT.format(seed=11, extra=""))
    other = tb.value(AUDIT_CORRECT.format(seed=12, extra=""))
    assert first == second
    assert first != other


def test_auditor_confidence_is_a_parameter(tb):
    # Same seed, same samples: a higher confidence widens every interval and must
    # lower the bound.
    loose = tb.value(AUDIT_CORRECT.format(seed=13, extra=", confidence=0.5"))
    strict = tb.value(
        AUDIT_CORRECT.format(seed=13, extra=", confidence=0.999")
    )
    assert strict < loose


def test_auditor_bound_on_perfectly_separated_outputs(tb):
    # D always gives 0, D' always gives 1: the bound has a closed form with the
    # Bonferroni-corrected Clopper-Pearson intervals (n trials, m bins, 95%).
    n, m = 1000, 4
    got = tb.value(
        f"audit_epsilon(lambda data, k, rng: np.full(k, float(data)), 0, 1, "
        f"{n}, {m}, (0, 1), np.random.default_rng(0))"
    )
    tail = (1 - 0.95) / (2 * m) / 2
    lower = tail ** (1 / n)
    upper = 1 - tail ** (1 / n)
    assert got == pytest.approx(np.log(lower / upper), rel=1e-9)


def test_auditor_looks_in_both_directions(tb):
    # Input 0 always lands in the first bin; input 1 lands in either bin. Only the
    # ratio P[M(1) in bin 2] / P[M(0) in bin 2] is large, so an auditor that checked
    # one direction only would report about ln 2 for one of the two argument orders.
    mechanism = (
        "lambda data, k, rng: np.where(data == 0, 0.0, "
        "rng.integers(0, 2, k).astype(float))"
    )
    forward = tb.value(
        f"audit_epsilon({mechanism}, 0, 1, 5000, 2, (0, 1), "
        "np.random.default_rng(7))"
    )
    backward = tb.value(
        f"audit_epsilon({mechanism}, 1, 0, 5000, 2, (0, 1), "
        "np.random.default_rng(7))"
    )
    assert forward > 3 and backward > 3


@pytest.mark.parametrize(
    "call",
    [
        "audit_epsilon(count_with_correct_scale, is_rich, without_one_rich, 100, 1, (0, 1), rng)",
        "audit_epsilon(count_with_correct_scale, is_rich, without_one_rich, 0, 10, (0, 1), rng)",
        "audit_epsilon(count_with_correct_scale, is_rich, without_one_rich, 100, 10, (1, 0), rng)",
        "audit_epsilon(count_with_correct_scale, is_rich, without_one_rich, 100, 10, (0, 1), rng, confidence=1.0)",
    ],
)
def test_auditor_rejects_bad_input(tb, call):
    value_error_message(tb, call)


def test_auditor_flags_each_bug_and_passes_correct_ones(tb):
    tb.inject(
        """
        audit_check_rng = np.random.default_rng(21)
        audit_check = {name: [claimed, audit_epsilon(mechanism, data_a, data_b, 30_000, 20,
                                                     output_range, audit_check_rng)]
                       for name, mechanism, claimed, data_a, data_b, output_range in audits}
    """,
        pop=True,
    )
    results = tb.value("audit_check")
    buggy = {"inverted scale", "unclipped sum", "reused noise"}
    assert buggy < set(results)
    for name, (claimed, bound) in results.items():
        if name in buggy:
            assert bound > 3 * claimed, name
        else:
            assert bound <= claimed, name


def test_auditor_passes_correct_count_across_seeds(tb):
    bounds = tb.value(
        "[audit_epsilon(count_with_correct_scale, is_rich, without_one_rich, 20_000, 20, "
        "(n_rich - 7, n_rich + 6), np.random.default_rng(s)) for s in range(30, 35)]"
    )
    assert max(bounds) <= 1.0
    assert (
        min(bounds) > 0.5
    )  # and it is not vacuous: it finds most of the true loss


# --- what the solutions state ----------------------------------------------


def test_rounding_closes_the_floating_point_holes(tb):
    # Exercise practice-ex-rounding: rounded textbook noise no longer beats the bound;
    # the best rule wins 1 - e^(-eps/2) / 2 = 0.6106 < 0.6225 at eps = 0.5, so with
    # 100,000 seeded trials the 99% upper limit (about +0.004) stays under the bound.
    upper, bound = tb.value(
        "[float(clopper_pearson(attack_success(rounded_naive_laplace, "
        "could_come_from_integer, 0.5, 100_000, np.random.default_rng(10)), 100_000, "
        "0.99)[1]), float(guessing_bound(0.5))]"
    )
    assert upper < bound


def test_inverted_scale_is_harmless_when_epsilon_exceeds_sensitivity(tb):
    # Exercise practice-ex-inverted: at claim 2 the true loss is 0.5, so the 95% lower
    # bound must stay below the claim, while at claim 0.1 (true loss 10) it is flagged.
    harmless, harmful = tb.value(
        "[audit_epsilon(lambda d, n, r: count_with_inverted_scale(d, n, r, epsilon=e), "
        "is_rich, without_one_rich, 30_000, 20, (n_rich - 10, n_rich + 10), "
        "np.random.default_rng(12)) for e in (2.0, 0.1)]"
    )
    assert harmless < 2.0
    # The solution also says the bound stays below the true loss 0.5 at claim 2; a 95%
    # lower bound exceeds the true loss with probability at most 5%, and this seed holds.
    assert harmless <= 0.5
    assert harmful > 0.1 * 3


# --- review: claims the prose makes --------------------------------------------


def test_guessing_bound_at_the_attacked_epsilons(tb):
    # The yardsticks the prose compares against: e^eps / (1 + e^eps) with a 50-50 prior
    # over add/remove neighbours, by hand: 0.6225 at eps = 0.5 and 0.7311 at eps = 1.
    assert tb.value("float(guessing_bound(0.5))") == pytest.approx(
        0.622459, abs=1e-6
    )
    assert tb.value("float(guessing_bound(1.0))") == pytest.approx(
        0.731059, abs=1e-6
    )


@pytest.mark.parametrize("epsilon", [0.05, 2.0, 5.0])
@pytest.mark.parametrize("count", [0.0, 1.0])
def test_reachability_checks_never_reject_the_true_input(tb, epsilon, count):
    # The event S of the holes exercise has probability zero under the other input only
    # if the checks accept every output of the input that produced it, at every epsilon.
    naive, numpy = tb.value(
        f"[bool(np.all(could_come_from_naive(naive_laplace(np.full(100_000, {count}), 1, "
        f"{epsilon}, np.random.default_rng(40)), {count}, {epsilon}))), "
        f"bool(np.all(could_come_from_numpy_laplace(laplace_mechanism(np.full(100_000, "
        f"{count}), 1, {epsilon}, np.random.default_rng(41)), {count}, {epsilon})))]"
    )
    assert naive and numpy


@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_attack_reaches_the_bound_on_geometric_mechanism(tb, epsilon):
    # The prose says the attack falls back to the bound "and not below it": nearer-input
    # guessing wins exactly 1 / (1 + alpha) = e^eps / (1 + e^eps) against the ideal
    # geometric mechanism, so the 99% interval over 50,000 seeded trials must contain it.
    low, high, bound = tb.value(
        f"[*map(float, clopper_pearson(attack_success(geometric_mechanism, "
        f"could_come_from_integer, {epsilon}, 50_000, np.random.default_rng(42)), 50_000, "
        f"0.99)), float(guessing_bound({epsilon}))]"
    )
    assert low <= bound <= high


def test_reused_noise_makes_the_difference_exact_and_fresh_noise_does_not(tb):
    # Reused noise cancels in the difference: every run releases the true gap, so the
    # privacy loss is unbounded. With fresh noise the difference of two Laplace(2)
    # draws has variance 2 * 2 * 2^2 = 16, standard deviation 4 (200,000 runs: the
    # sample standard deviation is within 1% of 4).
    spread_reused, gap, first = tb.value(
        "(lambda r: [float(np.ptp(r)), float(n_rich - n_poor), float(r[0])])"
        "(gap_between_two_counts(is_rich, 1000, np.random.default_rng(43)))"
    )
    assert spread_reused == 0 and first == gap
    std_fresh = tb.value(
        "float(np.std(gap_with_fresh_noise(is_rich, 200_000, np.random.default_rng(44))))"
    )
    assert std_fresh == pytest.approx(4.0, rel=0.02)


def test_clipped_sum_has_sensitivity_upper_over_epsilon(tb):
    # Repair of the unclipped sum: ages [200, 50] clip to [90, 50], sum 140; the noise
    # has scale 90 / epsilon = 90, standard deviation 90 * sqrt(2) (200,000 runs).
    mean, std = tb.value(
        "(lambda r: [float(r.mean()), float(r.std())])"
        "(sum_with_clipping(np.array([200, 50]), 200_000, np.random.default_rng(45)))"
    )
    assert mean == pytest.approx(140, abs=2)
    assert std == pytest.approx(90 * np.sqrt(2), rel=0.02)


def test_audit_ceiling_is_reached_by_reused_noise(tb):
    # Closed form of the largest bound with n runs, m bins, 95% confidence: a bin hit
    # every time under one input and never under the other. Reused noise makes the
    # audited difference deterministic, so its bound is exactly this ceiling.
    n, m = 50_000, 20
    tail = (1 - 0.95) / (2 * m) / 2
    ceiling = np.log(tail ** (1 / n) / (1 - tail ** (1 / n)))
    assert tb.value("audit_ceiling") == pytest.approx(ceiling, rel=1e-9)
    assert tb.value("float(lower_bounds['reused noise'])") == pytest.approx(
        ceiling, rel=1e-9
    )


def test_inverted_scale_is_correct_at_epsilon_one(tb):
    # At claim 1 with sensitivity 1 the inverted scale equals the correct one (true loss
    # 1), so the 95% lower bound stays below the claim: checking at eps = 1 cannot find
    # the bug.
    bound = tb.value(
        "audit_epsilon(lambda d, n, r: count_with_inverted_scale(d, n, r, epsilon=1.0), "
        "is_rich, without_one_rich, 30_000, 20, (n_rich - 10, n_rich + 10), "
        "np.random.default_rng(46))"
    )
    assert 0.5 < bound <= 1.0


def test_clipping_bias_of_the_mean(tb):
    # Hand count: clipping at 18 raises every 17-year-old by one year, so the mean moves
    # by (number aged 17) / n. The prose attributes the gap between the means to this.
    n17, n = tb.value("[int((ages == 17).sum()), len(ages)]")
    assert tb.value(
        "float(np.clip(ages, 18, 90).mean() - ages.mean())"
    ) == pytest.approx(n17 / n, rel=1e-9)
    assert (
        tb.value("int(ages.min())") == 17 and tb.value("int(ages.max())") == 90
    )


def test_clipping_bias_exceeds_the_noise_scale_on_the_mean(tb):
    # The prose says the bias from clipping at 18 is larger than the noise scale on the
    # mean (90 / (1/3) / n years): 395 / 32,561 = 0.012 against 0.008.
    bias, noise = tb.value(
        "[float(clipped_mean - ages.mean()), "
        "AGE_BOUNDS[1] / share / len(ages)]"
    )
    assert bias > noise


def _markdown():
    return support.markdown("dp-in-practice")


def test_audited_mechanisms_are_called_correct_in_scale_only(tb):
    # The audited count and the repairs draw NumPy Laplace noise, which the
    # chapter breaks with the floating-point attack: "correct scale", not
    # "correct".
    names = tb.value("list(results.index)")
    assert "correct count" not in names and "correct-scale count" in names
    assert not any(name.endswith("(repaired)") for name in names)
    text = _markdown()
    assert "correct count" not in text.lower()
    assert "Correct-scale count" in text
    source = tb.value("count_with_correct_scale.__doc__")
    assert source.startswith("Correct scale:")


def test_summary_keeps_the_caveat_of_snapping():
    text = _markdown()
    summary = " ".join(text[text.index("{admonition} Summary") :].split())
    assert "snapping repairs floating-point Laplace noise" not in summary
    assert "correctly rounded logarithm" in summary
    assert "not a patch on NumPy" in summary


def test_published_size_note_agrees_with_the_composition_rule():
    # The composition chapter's n is UCI's published size: dividing by it is
    # post-processing, but the releases cannot hide it, and a reader who
    # knows it is protected against a replacement at 2 eps at most. The
    # practice chapter must not say publication alone makes it free.
    text = " ".join(_markdown().split())
    assert "may divide by" not in text
    start = text.index("(The {doc}`composition` chapter")
    note = text[
        start : text.index(")", text.index("nobody has published", start))
    ]
    assert "post-processing" in note
    assert "cannot hide" in note
    assert "twice the $\\varepsilon$ at most" in note


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)

STEM = "dp-in-practice"


def test_the_book_s_solutions_get_full_marks(tb):
    assignments.assert_full_marks(tb, STEM)


def test_the_untouched_student_notebook_scores_zero(tb):
    assignments.assert_stubs_score_zero(tb, STEM)


NO_BONFERRONI = """
_low, _ = clopper_pearson(hits_zero, 50_000, 0.9)
_, _high = clopper_pearson(hits_one, 50_000, 0.9)
event_bound = float(np.log(_low / _high))
"""


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "practice-ex-inverted",
            "true_loss = {1.0: 1.0, 2.0: 2.0}\n",
            "the loss is Delta / scale = 0.5",
        ),
        (
            "practice-ex-inverted",
            "def inverted_breaks(epsilon, sensitivity):\n"
            "    return epsilon > sensitivity\n",
            "gives a true loss of Delta^2 / epsilon",
        ),
        (
            # at epsilon = Delta the buggy scale is the correct one
            "practice-ex-inverted",
            "def inverted_breaks(epsilon, sensitivity):\n"
            "    return epsilon <= sensitivity\n",
            "stays within the claim",
        ),
        (
            # the bound instead of the rate of the rounded mechanism
            "practice-ex-rounding",
            "rounded_rate = float(guessing_bound(0.5))\n",
            "the attacker can only guess 1 above 0.5",
        ),
        (
            # rounding to one decimal keeps the holes of the sampler
            "practice-ex-rounding",
            "def rounded_naive_laplace(value, sensitivity, epsilon, rng):\n"
            "    return np.round(naive_laplace(value, sensitivity, epsilon,"
            " rng), 1)\n",
            "your releases are not all integers",
        ),
        (
            # rounding down shifts every release by half a unit
            "practice-ex-rounding",
            "def rounded_naive_laplace(value, sensitivity, epsilon, rng):\n"
            "    return np.floor(naive_laplace(value, sensitivity, epsilon,"
            " rng))\n",
            "do not look like Laplace noise of scale 1 / 0.5 = 2 rounded",
        ),
        (
            # the noise scale read as epsilon
            "practice-ex-rounding",
            "def rounded_naive_laplace(value, sensitivity, epsilon, rng):\n"
            "    return np.rint(naive_laplace(value, sensitivity, 1 / epsilon,"
            " rng))\n",
            "do not look like Laplace noise of scale 1 / 0.5 = 2 rounded",
        ),
        (
            "practice-ex-trials",
            "false_flag_chance = {0.9: 0.9, 0.99: 0.99}\n",
            "probability at most 1 - 0.9",
        ),
        (
            # the event taken the wrong way round: reachable from 1 only
            "practice-ex-holes",
            "hits_one = 31_000\n",
            "a count of 1 never lands there",
        ),
        (
            "practice-ex-holes",
            NO_BONFERRONI,
            "each interval at 97.5% (Bonferroni over two)",
        ),
        (
            # an audit of the wrong neighbours is flagged
            "practice-ex-holes",
            "histogram_bound = audit_epsilon(naive_count_releases, 0, 3,"
            " 50_000, 20, (-10, 11), np.random.default_rng(5))\n",
            "above the claim of 0.5",
        ),
        (
            # runs from a count of 1 counted as runs from 0
            "practice-ex-holes",
            "hits_zero = 20_000\n",
            "the textbook sampler lands there about",
        ),
    ],
    ids=[
        "loss-inverted",
        "breaks-inverted",
        "breaks-at-a-tie",
        "bound-not-rate",
        "not-integers",
        "rounded-down",
        "scale-as-epsilon",
        "confidence-not-error",
        "event-wrong-way",
        "no-bonferroni",
        "histogram-of-wrong-neighbours",
        "hits-off",
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
            "practice-ex-inverted",
            "true_loss = {1.0: 1.0, 2.0: 2.0}\n",
            "the buggy noise has scale epsilon / Delta",
        ),
        (
            "practice-ex-inverted",
            "def inverted_breaks(epsilon, sensitivity):\n"
            "    return epsilon > sensitivity\n",
            "the bug breaks privacy exactly where the code is not private",
        ),
        (
            "practice-ex-inverted",
            "private_at_claim = {1.0: True, 2.0: False}\n",
            "keeps its promise exactly when its true loss is at most",
        ),
        (
            "practice-ex-rounding",
            "def rounded_naive_laplace(value, sensitivity, epsilon, rng):\n"
            "    return np.round(naive_laplace(value, sensitivity, epsilon,"
            " rng), 1)\n",
            "your releases are not all integers",
        ),
        (
            "practice-ex-rounding",
            "rounded_rate = float(guessing_bound(0.5))\n",
            "the bound e^eps / (1 + e^eps) itself",
        ),
        (
            "practice-ex-rounding",
            "rounded_rate = rounded_correct\n",
            "correct guesses over 100,000",
        ),
        (
            # the attack run on the sampler that was not rounded
            "practice-ex-rounding",
            "rounded_rate = attack_success(naive_laplace, "
            "could_come_from_naive, 0.5, 100_000, "
            "np.random.default_rng(4)) / 100_000\n",
            "above the bound",
        ),
        (
            "practice-ex-trials",
            "false_flag_chance = {0.9: 0.9, 0.99: 0.99}\n",
            "the chance that the bound holds",
        ),
        (
            "practice-ex-trials",
            "trial_table = trial_table.iloc[::2]\n",
            "the exercise asks for the six pairs",
        ),
        (
            "practice-ex-holes",
            "hits_one = 31_000\n",
            "a count of 1 never lands there",
        ),
        (
            "practice-ex-holes",
            NO_BONFERRONI,
            "more than your counts support at 95% confidence",
        ),
        (
            # the point estimate instead of an interval's lower end
            "practice-ex-holes",
            "event_bound = float(np.log(hits_zero / 0.5))\n",
            "more than your counts support at 95% confidence",
        ),
    ],
    ids=[
        "loss-is-the-claim",
        "breaks-inverted",
        "private-disagrees-with-loss",
        "not-integers",
        "bound-not-rate",
        "count-not-share",
        "holes-still-open",
        "confidence-not-error",
        "missing-rows",
        "event-wrong-way",
        "no-bonferroni",
        "no-interval",
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
            # NumPy booleans and numbers, and a function that warns
            "practice-ex-inverted",
            "import sys\n"
            "private_at_claim = {1.0: np.True_, 2.0: np.True_}\n"
            "true_loss = {1: np.float32(1), 2: np.float32(0.5)}\n"
            "def inverted_breaks(epsilon, sensitivity):\n"
            "    print('checking', file=sys.stderr)\n"
            "    return np.less(epsilon, sensitivity)\n",
        ),
        (
            # integers of dtype int, and the rate to 3 significant figures
            "practice-ex-rounding",
            "def rounded_naive_laplace(value, sensitivity, epsilon, rng):\n"
            "    noisy = naive_laplace(value, sensitivity, epsilon, rng)\n"
            "    return np.rint(noisy).astype(int)\n"
            "rounded_rate = round(rounded_correct / 100_000, 3)\n",
        ),
        (
            "practice-ex-trials",
            "false_flag_chance = {0.9: np.float32(0.1), 0.99: 0.01}\n"
            "trial_table = trial_table.astype(float).iloc[::-1]\n",
        ),
        (
            # two-sided 95% intervals: two one-sided 97.5% ends, also valid
            "practice-ex-holes",
            "_low, _ = clopper_pearson(hits_zero, 50_000, 0.95)\n"
            "_, _high = clopper_pearson(hits_one, 50_000, 0.95)\n"
            "event_bound = np.float32(np.log(_low / _high))\n"
            "hits_zero, hits_one = np.int64(hits_zero), np.int64(hits_one)\n",
        ),
        (
            "practice-ex-holes",
            "event_bound = round(event_bound, 2)\n"
            "histogram_bound = round(histogram_bound, 3)\n",
        ),
    ],
    ids=[
        "inverted-numpy-and-warning",
        "rounding-int-and-3-figures",
        "trials-float32-and-order",
        "holes-95-each",
        "holes-rounded",
    ],
)
def test_a_right_answer_in_another_form_gets_full_marks(tb, label, code):
    assignments.assert_answer_passes(tb, STEM, label, code, over=True)


# --- the book's data rule (issue 42, item 2) ---------------------------------

DATA_RULE_CASES = {
    "empty": "np.array([])",
    "NaN record": "np.array([40.0, np.nan])",
    "None record": "[40.0, None]",
    "non-numeric record": "pd.Series([40.0, 'n/a'], dtype=object)",
    "above the range": "np.array([40.0, 1e9])",
    "below the range": "np.array([40.0, -1e9])",
}


@pytest.mark.parametrize("case", sorted(DATA_RULE_CASES))
def test_own_release_follows_the_data_rule(tb, case):
    """No record makes the own release raise (a NaN age raised, and an
    empty table could divide by a noisy count of 0); a missing or
    non-numeric age counts as 18, the lower bound, in the sum and the
    bands; the mean stays in the bounds."""
    data = DATA_RULE_CASES[case]
    count, mean, bands = tb.value(
        f"own_age_release({data}, 1.0, np.random.default_rng(2))"
    )
    assert np.isfinite(mean) and 18 <= mean <= 90
    assert len(bands) == 4
    # The same draws on the clamped table give the same release.
    clamped = {"empty": "[]", "above the range": "[40, 90]"}.get(
        case, "[40, 18]"
    )
    again = tb.value(
        f"own_age_release(np.array({clamped}, dtype=float), 1.0, "
        "np.random.default_rng(2))"
    )
    assert [count, mean, list(bands)] == [again[0], again[1], list(again[2])]


def test_own_release_uses_a_third_of_the_budget_and_sensitivity_90(tb):
    """The release is the documented recipe, drawn here with numpy's own
    geometric sampler: count (sensitivity 1), sum of ages clamped to
    [18, 90] (sensitivity 90), bands (sensitivity 1), epsilon / 3 each."""
    ages = np.array([17, 25, 33, 47, 70, 95, 60, 18])
    for epsilon, seed in [(1.0, 0), (0.3, 1), (3.0, 2)]:
        rng = np.random.default_rng(seed)

        def noise(sensitivity, size=None, rng=rng, epsilon=epsilon):
            success = -np.expm1(-(epsilon / 3) / sensitivity)
            return rng.geometric(success, size) - rng.geometric(success, size)

        clamped = np.clip(ages, 18, 90)
        count = len(ages) + noise(1)
        total = int(clamped.sum()) + noise(90)
        bands = np.bincount(np.digitize(clamped, [30, 45, 65]), minlength=4)
        bands = bands + noise(1, 4)
        ours = tb["own_age_release"](
            ages, epsilon, np.random.default_rng(seed)
        )
        assert ours[0] == count
        assert ours[1] == pytest.approx(np.clip(total / max(count, 1), 18, 90))
        assert list(ours[2]) == list(bands)


@pytest.mark.parametrize(
    "mechanism",
    [
        "count_with_correct_scale",
        "count_with_inverted_scale",
        "gap_with_fresh_noise",
        "gap_between_two_counts",
    ],
)
@pytest.mark.parametrize(
    "data",
    [
        "np.array([], dtype=bool)",
        "np.array([True, np.nan], dtype=object)",
        "pd.array([True, pd.NA], dtype='boolean')",
        "pd.Series([True, 'yes'], dtype=object)",
    ],
)
def test_audited_counts_follow_the_data_rule(tb, mechanism, data):
    """A missing or non-numeric entry counts as False; nothing raises and
    every release is finite (a NaN entry made the counts NaN, and ~ on an
    object array raised)."""
    releases = tb.value(
        f"{mechanism}({data}, 5, np.random.default_rng(1)).tolist()"
    )
    assert len(releases) == 5 and np.all(np.isfinite(releases))


@pytest.mark.parametrize(
    "data, clamped_sum",
    [
        ("np.array([])", 0),
        ("np.array([30.0, np.nan])", 30),
        ("pd.Series([30.0, 'n/a'], dtype=object)", 30),
        ("np.array([30.0, 500.0])", 120),
        ("np.array([30.0, -5.0])", 30),
    ],
)
def test_clipped_sum_follows_the_data_rule(tb, data, clamped_sum):
    releases = tb.value(
        f"sum_with_clipping({data}, 4, np.random.default_rng(3)).tolist()"
    )
    noise = np.random.default_rng(3).laplace(0.0, 90 / 1.0, 4)
    np.testing.assert_allclose(releases, clamped_sum + noise)

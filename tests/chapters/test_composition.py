"""Tests for the functions defined in chapters/composition.ipynb.

The notebook is executed once (in its own folder, so that its data loader finds
../data/); the tests then call its functions inside the same kernel.
"""

import assignments
import numpy as np
import pytest
import support

from conftest import chapter_kernel, value_error_message


@pytest.fixture(scope="module")
def tb():
    with chapter_kernel("composition") as notebook:
        notebook.inject(
            """
            test_rng = np.random.default_rng(12345)
        """,
            pop=True,
        )
        yield notebook


def assert_value_error(tb, code, fragment):
    """`code` must raise a ValueError (or a subclass) whose message contains `fragment`."""
    message = value_error_message(tb, code)
    assert fragment in message, message


# ---------- Laplace mechanism ----------


def test_laplace_scale_and_centre(tb):
    # 200,000 draws at scale b = 2 / 0.5 = 4: sd is sqrt(2) * 4 = 5.657.
    # The standard error of the mean is 0.013 and of the sd about 0.02, so a
    # tolerance of 0.1 on both fails only for a wrong scale or centre.
    mean, sd = tb.value(
        "[float(x) for x in (lambda d: (d.mean(), d.std()))("
        "laplace_mechanism(np.full(200_000, 10.0), 2, 0.5, test_rng))]"
    )
    assert abs(mean - 10.0) < 0.1
    assert abs(sd - 2**0.5 * 4) < 0.1


def test_laplace_scalar_returns_float(tb):
    assert (
        tb.value("type(laplace_mechanism(3, 1, 1.0, test_rng)).__name__")
        == "float"
    )


@pytest.mark.parametrize(
    "mechanism", ["laplace_mechanism", "geometric_mechanism"]
)
def test_mechanisms_reject_a_seed_instead_of_a_generator(tb, mechanism):
    # A bare seed would make the draws irreproducible and the seeding of the
    # chapter pointless; the mechanisms insist on a numpy Generator.
    tb.inject(
        f"""
        try:
            {mechanism}(5, 1, 1.0, 42)
            caught = "no error"
        except TypeError as err:
            caught = str(err)
    """,
        pop=True,
    )
    assert "Generator" in tb.value("caught")


@pytest.mark.parametrize(
    "call, fragment",
    [
        ("laplace_mechanism(1, 1, 0, test_rng)", "epsilon"),
        ("laplace_mechanism(1, 1, -1, test_rng)", "epsilon"),
        ("laplace_mechanism(1, 1, float('inf'), test_rng)", "epsilon"),
        ("laplace_mechanism(1, 0, 1, test_rng)", "sensitivity"),
        ("laplace_mechanism(1, -2, 1, test_rng)", "sensitivity"),
    ],
)
def test_laplace_rejects_bad_input(tb, call, fragment):
    assert_value_error(tb, call, fragment)


# ---------- privacy accountant ----------


def test_refusal_tells_the_reader_what_was_asked_and_what_is_left(tb):
    # What a reader sees when the budget runs out: which release was
    # refused, the epsilon it asked for, and what is left of which budget.
    # assert_value_error also checks that the refusal is a ValueError, so
    # code that guards against bad input catches it too.
    tb.inject(
        """
        acc = PrivacyAccountant(2.0)
        acc.charge(1.75, "first table")
    """,
        pop=True,
    )
    message = value_error_message(tb, "acc.charge(0.5, 'second table')")
    assert "'second table'" in message
    assert "epsilon = 0.5" in message
    assert "only 0.25 of the budget 2 is left" in message
    assert tb.value("acc.remaining") == pytest.approx(0.25)


@pytest.mark.parametrize(
    "request_code",
    [
        "private_count(adult, adult['Age'] >= 65, 0.5, acc, 'old', test_rng)",
        "dp_counts(adult, ['Education'], education_domain, 0.5, acc, 'hist', test_rng)",
    ],
)
def test_refused_request_releases_nothing(tb, request_code):
    # Finding 14: the accountant must refuse BEFORE anything is released.
    # An over-budget request raises, draws no noise (the generator's state is
    # unchanged, so no noisy value can have been computed), and leaves the
    # ledger and the remaining budget as they were.
    tb.inject(
        f"""
        acc = PrivacyAccountant(1.0)
        acc.charge(0.75, "earlier release")
        state_before = test_rng.bit_generator.state
        remaining_before = acc.remaining
        try:
            released = {request_code}
        except BudgetExceededError as err:
            released, refusal = None, str(err)
        rng_unchanged = test_rng.bit_generator.state == state_before
    """,
        pop=True,
    )
    assert tb.value("released is None")
    assert "Refused" in tb.value("refusal")
    assert tb.value("rng_unchanged") is True
    assert tb.value("acc.remaining") == tb.value("remaining_before")
    assert tb.value("[list(r) for r in acc.releases]") == [
        ["earlier release", 0.75]
    ]


def test_accepted_request_is_charged_before_noise_is_drawn(tb):
    # Record the order of events: the ledger entry must exist when the
    # mechanism is called (charge first, release after).
    tb.inject(
        """
        acc = PrivacyAccountant(1.0)
        original_laplace = laplace_mechanism
        ledger_at_release = []

        def laplace_mechanism(value, sensitivity, epsilon, rng):
            ledger_at_release.append(len(acc.releases))
            return original_laplace(value, sensitivity, epsilon, rng)

        try:
            private_count(adult, adult["Age"] >= 65, 0.25, acc, "old", test_rng)
            dp_counts(adult, ["Education"], education_domain, 0.25, acc,
                      "hist", test_rng)
        finally:
            laplace_mechanism = original_laplace
    """,
        pop=True,
    )
    assert tb.value("ledger_at_release") == [1, 2]


@pytest.mark.parametrize(
    "budget", ["-1", "-0.001", "float('nan')", "float('inf')"]
)
def test_accountant_rejects_bad_budget(tb, budget):
    assert_value_error(tb, f"PrivacyAccountant({budget})", "budget")


@pytest.mark.parametrize("epsilon", ["0", "-0.1", "float('nan')"])
def test_accountant_rejects_bad_epsilon(tb, epsilon):
    assert_value_error(
        tb, f"PrivacyAccountant(1).charge({epsilon}, 'q')", "epsilon"
    )


def test_accountant_records_and_refuses(tb):
    tb.inject(
        """
        acc = PrivacyAccountant(1.0)
        acc.charge(0.6, "first")
        acc.charge(0.4, "second")
    """,
        pop=True,
    )
    assert tb.value("[list(r) for r in acc.releases]") == [
        ["first", 0.6],
        ["second", 0.4],
    ]
    assert_value_error(tb, "acc.charge(0.01, 'third')", "Refused 'third'")
    # A refused release leaves the ledger unchanged.
    assert tb.value("len(acc.releases)") == 2
    assert tb.value("acc.spent") == pytest.approx(1.0)


def test_many_small_spends_never_exceed_budget(tb):
    # Spend 0.01 until refused, from a budget of 1: exactly 100 pass (the
    # tolerance absorbs the rounding in 100 x 0.01), the 101st is refused, and
    # the total never exceeds the budget by more than the tolerance.
    tb.inject(
        """
        acc = PrivacyAccountant(1.0)
        accepted, overspent = 0, False
        for _ in range(1_000):
            try:
                acc.charge(0.01, "small")
            except BudgetExceededError:
                break
            accepted += 1
            overspent = overspent or acc.spent > acc.budget + acc.TOLERANCE
    """,
        pop=True,
    )
    assert tb.value("accepted") == 100
    assert tb.value("overspent") is False
    assert tb.value("acc.spent") <= 1.0 + 1e-9


def test_random_spends_stay_within_budget(tb):
    # Property test: 2,000 attempted spends of random sizes against a budget of
    # 3; after each attempt the recorded total is within budget + tolerance, and
    # every refusal happened only when the spend would really have overshot.
    tb.inject(
        """
        acc = PrivacyAccountant(3.0)
        spend_rng = np.random.default_rng(7)
        violations, wrong_refusals, refusals = 0, 0, 0
        for eps in spend_rng.uniform(1e-4, 0.05, size=2_000):
            before = acc.spent
            try:
                acc.charge(float(eps), "q")
            except BudgetExceededError:
                refusals += 1
                wrong_refusals += before + eps <= acc.budget - 1e-9
            violations += acc.spent > acc.budget + acc.TOLERANCE
    """,
        pop=True,
    )
    assert tb.value("int(violations)") == 0
    assert tb.value("int(wrong_refusals)") == 0
    assert tb.value("refusals") > 0  # the sequence does run past the budget


def test_accountant_tolerates_float_rounding(tb):
    # 0.1 + 0.2 > 0.3 in binary; the accountant must still accept both.
    tb.inject(
        "acc = PrivacyAccountant(0.3); acc.charge(0.1, 'a'); acc.charge(0.2, 'b')",
        pop=True,
    )
    assert tb.value("len(acc.releases)") == 2
    assert_value_error(tb, "acc.charge(1e-6, 'c')", "Refused")


def test_zero_budget_refuses_everything(tb):
    assert_value_error(
        tb, "PrivacyAccountant(0).charge(0.001, 'q')", "Refused"
    )


def test_private_count_charges_accountant(tb):
    tb.inject(
        """
        acc = PrivacyAccountant(1.0)
        pc = private_count(adult, adult["Age"] >= 65, 0.25, acc, "old", test_rng)
    """,
        pop=True,
    )
    assert tb.value("acc.spent") == pytest.approx(0.25)
    true_count = tb.value("int((adult['Age'] >= 65).sum())")
    # Laplace scale 4: |noise| < 60 has probability 1 - exp(-15).
    assert abs(tb.value("pc") - true_count) < 60
    assert_value_error(
        tb, "private_count(adult, [True], 0.1, acc, 'x', test_rng)", "mask"
    )


# ---------- parallel composition: dp_counts ----------


def test_dp_counts_keeps_public_domain(tb):
    tb.inject(
        """
        dom = pd.Index(EDUCATION_LEVELS + ["Unknown-level"], name="Education")
        noisy_counts = dp_counts(adult, ["Education"], dom, 1.0,
                                 PrivacyAccountant(1.0), "hist", test_rng)
        true_counts = adult["Education"].value_counts().reindex(dom, fill_value=0)
    """,
        pop=True,
    )
    assert tb.value("list(noisy_counts.index)") == tb.value("list(dom)")
    # Laplace scale 1: every one of 17 cells within 20 has probability > 1 - 1e-7.
    assert tb.value("float((noisy_counts - true_counts).abs().max())") < 20
    # The empty cell is released (around 0), not dropped.
    assert abs(tb.value("float(noisy_counts['Unknown-level'])")) < 20


def test_dp_counts_contingency_table_shape(tb):
    tb.inject(
        """
        acc = PrivacyAccountant(1.0)
        cross = dp_counts(adult, ['Education', 'Target'], table_domain, 1.0,
                          acc, 'table', test_rng)
    """,
        pop=True,
    )
    assert tb.value("len(cross)") == 32
    # Parallel composition: the 32 disjoint cells cost one epsilon in all.
    assert tb.value("acc.spent") == pytest.approx(1.0)


def test_dp_counts_rejects_bad_input_without_charging(tb):
    tb.inject("acc = PrivacyAccountant(1.0)", pop=True)
    assert_value_error(
        tb,
        "dp_counts(adult, ['Nope'], education_domain, 1.0, acc, 'h', test_rng)",
        "Unknown column",
    )
    assert_value_error(
        tb,
        "dp_counts(adult, ['Education'], pd.Index([]), 1.0, acc, 'h', test_rng)",
        "domain",
    )
    assert_value_error(
        tb,
        "dp_counts(adult, ['Education'], education_domain, 0, acc, 'h', test_rng)",
        "epsilon",
    )
    # A request rejected for bad input costs nothing.
    assert tb.value("acc.spent") == 0


def test_dp_counts_noise_per_cell_is_that_of_one_count(tb):
    # Parallel composition: each of the 16 cells gets Laplace noise of scale
    # 1 / epsilon (sd sqrt(2) / 0.5 = 2.83 at epsilon 0.5), not a share of
    # epsilon per cell (which would make it 16 times wider). 500 releases
    # of a 4-row table give 8,000 noise values; the sd estimate then has
    # relative standard error about sqrt(5 / (4 * 8,000)) = 1.3% (Laplace
    # kurtosis 6), so 8% fails only for a wrong scale.
    tb.inject(
        """
        tiny = pd.DataFrame({"Education": ["Doctorate"] * 3 + ["9th"]})
        acc = PrivacyAccountant(1_000.0)
        tiny_truth = tiny.groupby("Education").size().reindex(
            education_domain, fill_value=0)
        errors = np.concatenate([
            (dp_counts(tiny, ["Education"], education_domain, 0.5, acc,
                       "tiny", test_rng) - tiny_truth).to_numpy()
            for _ in range(500)])
    """,
        pop=True,
    )
    assert tb.value("float(errors.std())") == pytest.approx(
        2**0.5 / 0.5, rel=0.08
    )
    assert abs(tb.value("float(errors.mean())")) < 0.1  # se 0.03
    assert tb.value("acc.spent") == pytest.approx(250.0)


# ---------- sensitivity and clipped means ----------


@pytest.mark.parametrize(
    "lower, upper, model, expected",
    [
        (0, 99, "add/remove", 99),
        (17, 90, "add/remove", 90),
        (17, 90, "replace", 73),
        (-3, 2, "add/remove", 3),
        (-3, 2, "replace", 5),
        (-10, -4, "add/remove", 10),
    ],
)
def test_clipped_sum_sensitivity(tb, lower, upper, model, expected):
    assert (
        tb.value(f"clipped_sum_sensitivity({lower}, {upper}, {model!r})")
        == expected
    )


def test_clipped_sum_sensitivity_rejects_bad_input(tb):
    assert_value_error(tb, "clipped_sum_sensitivity(5, 1)", "lower <= upper")
    assert_value_error(
        tb, "clipped_sum_sensitivity(0, 1, 'swap')", "neighbours"
    )


def test_dp_clipped_mean_is_accurate_and_in_bounds(tb):
    # 1,000 releases of the mean age of the whole table at epsilon = 1: noise on
    # the mean is about sqrt(2) * 90 / 0.5 / 32,561 = 0.008, so the average
    # release must be within 0.05 of the truth.
    tb.inject(
        """
        mean_releases = np.array([dp_clipped_mean(adult["Age"], 17, 90, 1.0, test_rng)
                                  for _ in range(1_000)])
    """,
        pop=True,
    )
    true_mean = tb.value("float(adult['Age'].mean())")
    assert abs(tb.value("float(mean_releases.mean())") - true_mean) < 0.05
    assert tb.value(
        "bool(((mean_releases >= 17) & (mean_releases <= 90)).all())"
    )


def test_dp_clipped_mean_clips(tb):
    # Bounds [0, 10] on ages clip everybody to 10, so the release is near 10.
    assert (
        abs(
            tb.value("dp_clipped_mean(adult['Age'], 0, 10, 1.0, test_rng)")
            - 10
        )
        < 0.1
    )


def test_dp_clipped_mean_clamps_release_into_bounds(tb):
    # Three values and epsilon = 0.1: the noisy ratio often falls outside [0, 10];
    # the release is clamped into the bounds (post-processing), so it never does.
    assert tb.value("""bool(all(0 <= dp_clipped_mean([5, 5, 5], 0, 10, 0.1, test_rng) <= 10
                                for _ in range(1_000)))""")


def test_dp_clipped_mean_rejects_bad_input(tb):
    assert_value_error(
        tb, "dp_clipped_mean([1, 2], 5, 1, 1.0, test_rng)", "lower <= upper"
    )
    assert_value_error(
        tb, "dp_clipped_mean([1, 2], 0, 5, 0, test_rng)", "epsilon"
    )
    assert_value_error(
        tb, "dp_clipped_mean([1, 2], 0, 5, -1, test_rng)", "epsilon"
    )


# ---------- geometric mechanism ----------


def test_geometric_pmf_formula(tb):
    # alpha = exp(-0.5); P(0) = (1 - alpha) / (1 + alpha); sums to 1.
    import math

    alpha = math.exp(-0.5)
    assert tb.value("float(two_sided_geometric_pmf(0, 0.5))") == pytest.approx(
        (1 - alpha) / (1 + alpha)
    )
    assert tb.value(
        "float(two_sided_geometric_pmf(-3, 0.5))"
    ) == pytest.approx((1 - alpha) / (1 + alpha) * alpha**3)
    assert tb.value(
        "float(two_sided_geometric_pmf(np.arange(-500, 501), 0.5).sum())"
    ) == pytest.approx(1.0)
    # Sensitivity 2 halves the decay rate: alpha = exp(-epsilon / 2).
    assert tb.value(
        "float(two_sided_geometric_pmf(1, 1.0, 2))"
    ) == pytest.approx((1 - alpha) / (1 + alpha) * alpha)


@pytest.mark.parametrize(
    "epsilon, sensitivity", [(0.5, 1), (1.0, 1), (1.0, 3)]
)
def test_geometric_empirical_pmf_matches_formula(tb, epsilon, sensitivity):
    # 300,000 draws at a fixed seed. Each probability is at most 0.46, so its
    # standard error is at most sqrt(0.25 / 300,000) = 0.0009; we allow 0.004
    # (over 4 standard errors) on every value in [-20, 20], plus a chi-square
    # test on the bins with expected count >= 5.
    from scipy import stats

    counts, expected = tb.value(f"""(lambda d, ks: (
        [int((d == k).sum()) for k in ks],
        (len(d) * two_sided_geometric_pmf(ks, {epsilon}, {sensitivity})).tolist()))(
        geometric_mechanism(np.zeros(300_000, dtype=int), {sensitivity}, {epsilon},
                            np.random.default_rng(99)) , np.arange(-20, 21))""")
    n = 300_000
    max_gap = max(
        abs(c - e) / n for c, e in zip(counts, expected, strict=False)
    )
    assert max_gap < 0.004
    keep = [i for i, e in enumerate(expected) if e >= 5]
    observed = [counts[i] for i in keep]
    exp_kept = [expected[i] for i in keep]
    # Put the mass outside the kept bins into one extra bin.
    observed.append(n - sum(observed))
    exp_kept.append(n - sum(exp_kept))
    p_value = stats.chisquare(observed, exp_kept).pvalue
    assert p_value > 0.001


def test_geometric_mechanism_is_integer_and_centred(tb):
    dtype_kind, mean = (
        tb.value("""(lambda out: (out.dtype.kind, float(out.mean())))(
        geometric_mechanism(np.full(100_000, 50), 1, 1.0, test_rng))""")
    )
    assert dtype_kind == "i"
    # Variance 2 alpha / (1 - alpha)^2 = 1.84 at epsilon 1; se of the mean 0.004.
    assert abs(mean - 50) < 0.03


@pytest.mark.parametrize(
    "call, fragment",
    [
        ("geometric_mechanism(5, 1, 0, test_rng)", "epsilon"),
        ("geometric_mechanism(5, 1, -1, test_rng)", "epsilon"),
        ("geometric_mechanism(5, 1.5, 1, test_rng)", "sensitivity"),
        ("geometric_mechanism(5, 0, 1, test_rng)", "sensitivity"),
        ("geometric_mechanism(5.5, 1, 1, test_rng)", "integer"),
        ("two_sided_geometric_pmf(0, 0)", "epsilon"),
        ("two_sided_geometric_pmf(0, 1, -1)", "sensitivity"),
        ("rounded_laplace_pmf(0, -1)", "epsilon"),
        ("rounded_laplace_pmf(0, 1, 0)", "sensitivity"),
        ("rounded_laplace_pmf(0, 1, -2)", "sensitivity"),
    ],
)
def test_geometric_rejects_bad_input(tb, call, fragment):
    assert_value_error(tb, call, fragment)


def test_rounded_laplace_pmf_sums_to_one_and_is_dp(tb):
    assert tb.value(
        "float(rounded_laplace_pmf(np.arange(-2000, 2001), 1.0).sum())"
    ) == pytest.approx(1.0)
    # Neighbouring counts 10 and 11: every output's log-ratio is at most epsilon.
    worst = tb.value("""float(np.abs(np.log(rounded_laplace_pmf(np.arange(-30, 41) - 10, 1.0)
                         / rounded_laplace_pmf(np.arange(-30, 41) - 11, 1.0))).max())""")
    assert worst <= 1.0 + 1e-9


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0])
def test_integer_noise_table_matches_closed_forms(tb, epsilon):
    # Summed from the two distributions, for sensitivity 1:
    # P(exact) = tanh(eps/2) (geometric), 1 - e^(-eps/2) (rounded Laplace);
    # E|error| = 1/sinh(eps) (geometric), 1/(2 sinh(eps/2)) (rounded
    # Laplace). The prose's claim that the geometric mechanism is better
    # at every epsilon rests on these forms.
    import math

    row = tb.value(f"integer_noise.loc[{epsilon}].to_dict()")
    assert row["P(exact), geometric"] == pytest.approx(math.tanh(epsilon / 2))
    assert row["P(exact), rounded Laplace"] == pytest.approx(
        1 - math.exp(-epsilon / 2)
    )
    assert row["E|error|, geometric"] == pytest.approx(1 / math.sinh(epsilon))
    assert row["E|error|, rounded Laplace"] == pytest.approx(
        1 / (2 * math.sinh(epsilon / 2))
    )
    assert row["P(exact), geometric"] > row["P(exact), rounded Laplace"]
    assert row["E|error|, geometric"] < row["E|error|, rounded Laplace"]


# ---------- advanced composition ----------


def test_advanced_composition_hand_computed(tb):
    # k = 100, epsilon = 0.1, delta' = 1e-6, by hand:
    # sqrt(2 * 100 * ln(1e6)) * 0.1 = sqrt(2763.10) * 0.1 = 5.2565
    # 100 * 0.1 * (e^0.1 - 1) = 10 * 0.105171 = 1.0517;  total 6.3082.
    value = tb.value("float(advanced_composition_epsilon(0.1, 100, 1e-6))")
    assert value == pytest.approx(6.3082, abs=1e-3)
    # The k eps (e^eps - 1) term is in: without it the bound would be 5.2565.
    assert value > 5.26


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 0.3, 0.6])
def test_advanced_beats_basic_exactly_past_the_crossover(tb, epsilon):
    # eps' < k eps  <=>  k > 2 ln(1/delta') / (2 - e^eps)^2 (for eps < ln 2).
    import math

    threshold = 2 * math.log(1e6) / (2 - math.exp(epsilon)) ** 2
    below, above = math.floor(threshold), math.floor(threshold) + 1
    wins = tb.value(f"""[bool(advanced_composition_epsilon({epsilon}, k, 1e-6)
                          < k * {epsilon}) for k in ({below}, {above})]""")
    assert wins == [False, True]


@pytest.mark.parametrize("epsilon", [0.7, 1.0, 2.0])
def test_dwork_rothblum_vadhan_form_never_beats_basic_from_ln2(tb, epsilon):
    # Only this form of advanced composition (Dwork, Rothblum, Vadhan; the
    # chapter's theorem): for eps >= ln 2, e^eps - 1 >= 1, so its second
    # term alone is >= k eps. The Kairouz et al. form has no such limit.
    assert tb.value(f"""bool(np.all(advanced_composition_epsilon(
        {epsilon}, np.arange(1, 100_001), 1e-6) >= np.arange(1, 100_001) * {epsilon}))""")


@pytest.mark.parametrize(
    "call, fragment",
    [
        ("advanced_composition_epsilon(0, 10, 1e-6)", "epsilon"),
        ("advanced_composition_epsilon(0.1, 0, 1e-6)", "k"),
        ("advanced_composition_epsilon(0.1, 2.5, 1e-6)", "k"),
        ("advanced_composition_epsilon(0.1, 10, 0)", "delta_prime"),
        ("advanced_composition_epsilon(0.1, 10, 1)", "delta_prime"),
    ],
)
def test_advanced_composition_rejects_bad_input(tb, call, fragment):
    assert_value_error(tb, call, fragment)


# ---------- solutions ----------


def test_budget_protects_solution_matches_theory(tb):
    # 100,000 repetitions: the success rate has standard error
    # sqrt(0.25 / 100,000) = 0.0016; the normal approximation of the average
    # of 10 Laplace draws is good to well under 0.01 here.
    assert abs(tb.value("right[10]") - tb.value("approx[10]")) < 0.01
    assert tb.value("right[10]") < 0.6
    # With 10,000 answers the average has sd 0.14: wrong under 0.1% of runs.
    assert tb.value("right[10_000]") > 0.99


def test_loose_bounds_solution_is_worse(tb):
    # RMSE ratio between 1.5 and the sum-noise ratio 200 / 90 = 2.2: the
    # count noise is shared, so the ratio is below 2.2; 1,000 releases make
    # each RMSE accurate to a few percent.
    ratio = tb.value("loose_rmse[200] / loose_rmse[90]")
    assert 1.5 < ratio < 200 / 90


def test_averaging_attack_rates_match_theory(tb):
    # Secret 0 or 1 with equal chance. One answer at eps = 0.1: the guess is
    # right with probability 1 - exp(-0.05) / 2 = 0.5244 (the Laplace noise
    # of scale 10 must not cross 0.5 the wrong way). The chapter runs
    # 1,000,000 trials for one answer (se 0.0005), 100,000 for 10 (se
    # 0.0016) and 10,000 for 100 (se 0.005); we allow about 4 se, plus 0.005
    # for the normal approximation of the average of 10 or 100 answers.
    import math
    from statistics import NormalDist

    def normal_theory(k):
        return NormalDist().cdf(0.5 / (2**0.5 * 10 / math.sqrt(k)))

    assert tb.value("n_trials[1]") >= 1_000_000
    assert abs(tb.value("attack_rate[1]") - (1 - math.exp(-0.05) / 2)) < 0.002
    assert abs(tb.value("attack_rate[10]") - normal_theory(10)) < 0.012
    assert abs(tb.value("attack_rate[100]") - normal_theory(100)) < 0.025
    # With 10,000 answers the average has sd sqrt(2) * 10 / 100 = 0.14, so
    # a wrong guess needs a 3.5 sd deviation: right in about 99.98%.
    assert tb.value("attack_rate[n_queries]") > 0.99


def test_attack_never_beats_the_dp_ceiling(tb):
    # k answers at eps = 0.1 are (0.1 k)-DP between the tables with and
    # without the target's row, so no guess is right more often than
    # e^(0.1 k) / (1 + e^(0.1 k)) (computed here, not taken from the
    # chapter). The measured rate may exceed it only by sampling error:
    # we allow 4 standard errors of the chapter's number of trials.
    import math

    for k in (1, 10, 100):
        ceiling = 1 / (1 + math.exp(-0.1 * k))
        trials = tb.value(f"n_trials[{k}]")
        se = math.sqrt(0.25 / trials)
        assert tb.value(f"attack_rate[{k}]") <= ceiling + 4 * se
        assert tb.value(f"ceiling[{k}]") == pytest.approx(ceiling)


@pytest.mark.parametrize(
    "request_code",
    [
        "private_count(adult, adult['Age'] >= 65, 0.5, acc, 'old', 42)",
        "private_count(adult, [True], 0.5, acc, 'old', test_rng)",
        "dp_counts(adult, ['Education'], education_domain, 0.5, acc, 'hist', 42)",
        "dp_counts(adult, ['Nope'], education_domain, 0.5, acc, 'hist', test_rng)",
    ],
)
def test_bad_request_costs_no_budget(tb, request_code):
    # A request rejected for bad input (a seed instead of a Generator, a
    # mask of the wrong length, an unknown column) must fail before the
    # accountant is charged.
    tb.inject(
        f"""
        acc = PrivacyAccountant(1.0)
        try:
            {request_code}
            rejected = None
        except (TypeError, ValueError) as err:
            rejected = type(err).__name__
    """,
        pop=True,
    )
    assert tb.value("rejected") in ("TypeError", "ValueError")
    assert tb.value("acc.releases") == []


def test_glued_values_are_plain_python():
    # The book prints glued values; a numpy scalar is stored as
    # "np.float64(...)" and its formatting can differ from a float's.
    import json

    from conftest import CHAPTERS_DIR

    notebook = json.loads((CHAPTERS_DIR / "composition.ipynb").read_text())
    records = [
        "".join(output["data"]["application/papermill.record/text/plain"])
        for cell in notebook["cells"]
        if cell["cell_type"] == "code"
        for output in cell.get("outputs", [])
        if "application/papermill.record/text/plain" in output.get("data", {})
    ]
    assert len(records) > 50
    numpy_values = [r for r in records if r.startswith(("np.", "array("))]
    assert numpy_values == []


def test_attack_target_is_alone_with_their_name(tb):
    # The prose says the count "people with this name who earn more than
    # $50K" is 0 or 1: that needs the target's name to be unique.
    assert tb.value("int((adult['Name'] == target).sum())") == 1
    assert tb.value("true_answer") == 1


def test_crossover_search_agrees_with_the_formula(tb):
    # The prose says "Search and formula agree": the brute-force search
    # over k and 2 ln(1/delta') / (2 - e^eps)^2 give the same first k, and
    # at eps = 1 >= ln 2 both say "never". Independently of the chapter:
    # eps = 0.1, delta' = 1e-6 gives 27.631 / 0.80072 = 34.5, so k = 35.
    assert tb.value("found") == tb.value("predicted")
    assert tb.value("found")[1] == 35
    assert tb.value("found")[-1] == "never"


@pytest.mark.parametrize(
    "call, fragment",
    [
        ("averaging_attack_success(0, 10, 0.1, test_rng)", "n_used"),
        ("averaging_attack_success(10, 0, 0.1, test_rng)", "n_trials"),
        ("averaging_attack_success(2.5, 10, 0.1, test_rng)", "n_used"),
        ("averaging_attack_success(10, 10, 0, test_rng)", "epsilon"),
    ],
)
def test_attack_helper_rejects_bad_input(tb, call, fragment):
    assert_value_error(tb, call, fragment)


def test_attack_helper_at_huge_epsilon_is_always_right(tb):
    # At epsilon = 1,000 the noise has scale 0.001: it never crosses 0.5
    # in 2,000 trials (probability e^-500 each), so the attacker is right
    # every time.
    assert (
        tb.value("averaging_attack_success(1, 2_000, 1_000.0, test_rng)")
        == 1.0
    )


# ---------- the Kairouz, Oh and Viswanath form ----------


@pytest.mark.parametrize("epsilon", [0.1, 0.7, 1.0, 2.0, 4.0])
def test_kairouz_form_beats_basic_at_every_epsilon_past_its_crossover(
    tb, epsilon
):
    # k eps tanh(eps/2) + eps sqrt(2 k ln(1/delta')) < k eps
    # <=> k > ln(1/delta') (e^eps + 1)^2 / 2; at eps = 1, delta' = 1e-6:
    # 13.8155 * 13.8256 / 2 = 95.5, so k = 96.
    import math

    threshold = math.log(1e6) * (math.exp(epsilon) + 1) ** 2 / 2
    below, above = math.floor(threshold), math.floor(threshold) + 1
    wins = tb.value(f"""[bool(kairouz_composition_epsilon({epsilon}, k, 1e-6)
                          < k * {epsilon}) for k in ({below}, {above})]""")
    assert wins == [False, True]


def test_kairouz_crossovers_match_the_formula_and_96_at_epsilon_one(tb):
    assert tb.value("kairouz_found") == tb.value("kairouz_predicted")
    assert tb.value("kairouz_found")[-1] == 96


@pytest.mark.parametrize("k", [96, 300, 2000])
def test_kairouz_form_is_a_valid_bound_by_exact_optimal_composition(tb, k):
    # The optimal composition of k pure eps-DP releases is that of k
    # randomized responses (Kairouz, Oh, Viswanath): the loss is
    # eps (2B - k), B ~ Binomial(k, e^eps / (1 + e^eps)). Its exact delta at
    # the form's epsilon' must be at most delta'.
    import numpy as np
    from scipy.stats import binom

    epsilon, delta_prime = 1.0, 1e-6
    bound = tb.value(
        f"float(kairouz_composition_epsilon({epsilon}, {k}, {delta_prime}))"
    )
    b = np.arange(k + 1)
    p = np.exp(epsilon) / (1 + np.exp(epsilon))
    loss = epsilon * (2 * b - k)
    exact = np.sum(binom.pmf(b, k, p) * -np.expm1(np.minimum(bound - loss, 0)))
    assert exact <= delta_prime
    assert bound < k * epsilon


def test_never_beats_claim_names_its_form():
    import nbformat

    from conftest import CHAPTERS_DIR

    notebook = nbformat.read(CHAPTERS_DIR / "composition.ipynb", as_version=4)
    text = "\n".join(
        c.source for c in notebook.cells if c.cell_type == "markdown"
    )
    flat = " ".join(text.split())
    assert "the advanced bound never beats" not in flat
    assert "this form of the bound never beats" in flat
    summary = flat[flat.index("{admonition} Summary") :]
    assert "in this form it beats" in summary and "Kairouz" in summary
    # The Kairouz et al. form is below the DRV form at every k; what needs
    # k >= 96 at eps = 1 is beating k eps, so the summary must name k eps.
    assert "Viswanath beats $k\\varepsilon$ at every" in summary


# ---------- which sizes are public ----------


def test_size_rule_is_stated_once_and_linked_from_the_practice_chapter(tb):
    # A size that does not come from the table may be used; one computed
    # from the private table may not. The chapter's n is a constant equal to
    # the 32,561 rows UCI published, not len(adult): post-processing, but not
    # independent of the table, and the prose must not say it is.
    import csv
    import re

    import nbformat

    from conftest import CHAPTERS_DIR, DATA_DIR

    cells = nbformat.read(CHAPTERS_DIR / "composition.ipynb", as_version=4)
    code = "\n".join(c.source for c in cells.cells if c.cell_type == "code")
    assert not re.search(r"n_people\s*=\s*len\(", code)
    assert re.search(r"n_people = 32_561", code)
    with open(DATA_DIR / "adult_with_pii.csv", newline="") as f:
        assert sum(1 for _ in csv.DictReader(f)) == tb.value("n_people")
    book = "\n".join(
        c.source
        for path in sorted(CHAPTERS_DIR.glob("*.ipynb"))
        for c in nbformat.read(path, as_version=4).cells
        if c.cell_type == "markdown"
    )
    assert book.count("(comp-sec-public-size)=") == 1
    section = book[book.index("(comp-sec-public-size)=") :]
    section = " ".join(section[: section.index("## Sequential")].split())
    assert "fixed independently of the private table" not in section
    assert "not independent of the table" in section
    assert "twice the $\\varepsilon$ at most" in section
    practice = nbformat.read(CHAPTERS_DIR / "dp-in-practice.ipynb", 4)
    practice_text = "\n".join(
        c.source for c in practice.cells if c.cell_type == "markdown"
    )
    assert "{ref}`comp-sec-public-size`" in practice_text
    assert "the exact number of\npeople is itself private" not in practice_text


# --- the interactive composition figure (a Vega-Lite 5 specification) -------------


@pytest.mark.parametrize(
    "call",
    [
        "composition_dial(bounds_grid, 0.12, 0.05)",  # start not in the grid
        "composition_dial(bounds_grid, 0.1, 0.1)",  # wrong spacing
        "composition_grid([0.1], dial_ks, 0)",  # delta' 0
        "composition_grid([0.0], dial_ks, 1e-6)",  # epsilon 0
        "composition_grid([0.1], np.array([0, 5]), 1e-6)",  # k = 0
    ],
)
def test_composition_dial_rejects_bad_inputs(tb, call):
    value_error_message(tb, call)


def test_stored_composition_grid_is_the_chapters_bounds(tb):
    """The grid the page shows equals the chapter's bound functions and its
    crossing search at every epsilon, and starts at epsilon_per_query."""
    import numpy as np  # noqa: PLC0415

    spec = support.stored_vega_lite("composition")
    (param,) = spec["params"]
    assert param["value"] == tb.value("epsilon_per_query")
    assert param["bind"]["min"] == tb.value("float(dial_epsilons[0])")
    assert param["bind"]["max"] == tb.value("float(dial_epsilons[-1])")
    rows = support.plotted_rows(spec)
    epsilons = sorted({row["epsilon"] for row in rows})
    assert len(rows) == len(epsilons) * len(tb.value("dial_ks.tolist()"))
    for eps in epsilons:
        mine = [row for row in rows if row["epsilon"] == eps]
        k = np.array([row["k"] for row in mine])
        tb.inject(f"_k = np.array({k.tolist()}); _e = {eps!r}")
        advanced = tb.value(
            "advanced_composition_epsilon(_e, _k, delta_prime).tolist()"
        )
        kov = tb.value(
            "kairouz_composition_epsilon(_e, _k, delta_prime).tolist()"
        )
        assert np.allclose([r["advanced"] for r in mine], advanced, rtol=1e-12)
        assert np.allclose([r["kov"] for r in mine], kov, rtol=1e-12)
        assert np.allclose([r["basic"] for r in mine], k * eps, rtol=1e-12)
        wins = tb.value("first_k_advanced_wins(_e, delta_prime) or 0")
        assert {r["advanced_from"] for r in mine} == {wins}
    assert "epsilon" in support.vega_signals(spec)


def test_crossings_in_the_grid_match_the_closed_forms(tb):
    """kov_from is the first k above ln(1/delta') (e^eps + 1)^2 / 2, and
    advanced_from the first k above 2 ln(1/delta') / (2 - e^eps)^2 below
    eps = ln 2 and 0 ('never') from there on: exactly the epsilons of the
    grid above ln 2 say never."""
    import math  # noqa: PLC0415

    rows = support.plotted_rows(support.stored_vega_lite("composition"))
    log_term = math.log(1 / tb.value("delta_prime"))
    for row in rows:
        eps = row["epsilon"]
        bound = log_term * (math.exp(eps) + 1) ** 2
        assert row["kov_from"] == math.floor(bound / 2) + 1
        if eps < math.log(2):
            bound = 2 * log_term / (2 - math.exp(eps)) ** 2
            assert row["advanced_from"] == math.floor(bound) + 1
        else:
            assert row["advanced_from"] == 0
    never = sorted(
        {row["epsilon"] for row in rows if not row["advanced_from"]}
    )
    assert never == [0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)

STEM = "composition"


def test_the_book_s_solutions_get_full_marks(tb):
    assignments.assert_full_marks(tb, STEM)


def test_the_untouched_student_notebook_scores_zero(tb):
    assignments.assert_stubs_score_zero(tb, STEM)


# The budget attack simulated with its own seed; {scale} is the noise
# scale per answer (10 is right: sensitivity 1 over epsilon 0.1).
BUDGET = """
_gen = np.random.default_rng({seed})
right = {{}}
for _n, _reps in [(10, 100_000), (10_000, 200)]:
    _noisy = 1 + _gen.laplace(0, {scale}, size=(_reps, _n))
    right[_n] = {kind}((_noisy.mean(axis=1) > 0.5).mean())
"""

# The loose-bounds simulation at another epsilon or with the right one.
LOOSE = """
loose_rmse = {{}}
_gen = np.random.default_rng({seed})
for _lower, _upper in [(17, 90), (0, 200)]:
    _releases = np.array([
        dp_clipped_mean(doctorate_ages, _lower, _upper, {epsilon}, _gen)
        for _ in range(1_000)
    ])
    loose_rmse[_upper] = float(
        np.sqrt(np.mean((_releases - doctorate_ages.mean()) ** 2))
    )
sum_noise_ratio = {ratio}
"""

RATIO = (
    "worst_geometric = {geometric}\nworst_rounded_laplace = {rounded}\n"
    "both_within_epsilon = {within}\n"
)
# The rounded-Laplace log-ratio at the outputs 10 and 11 only.
ROUNDED_AT_TRUE = (
    "float(ratio_table.loc['rounded Laplace', '|log-ratio| at 10 and 11'])"
)


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "comp-ex-add-up",
            "total_cost = 1.1\nparallel_claim_right = False\n",
            "the count released twice costs twice",
        ),
        (
            "comp-ex-add-up",
            "total_cost = 0.9\nparallel_claim_right = True\n",
            "they add up instead of composing in parallel",
        ),
        (
            "comp-ex-add-up",
            "parallel_claim_right = True\n",
            "not disjoint groups, so parallel composition does not apply",
        ),
        (
            "comp-ex-budget-protects",
            BUDGET.format(seed=3, scale=1, kind="float"),
            "Your rate is that of noise of scale 1, epsilon = 1 per answer",
        ),
        (
            "comp-ex-budget-protects",
            "right = {10: 0.5, 10_000: 0.99}\n",
            "lands this far off less than once in 10,000",
        ),
        (
            "comp-ex-budget-protects",
            "right = {10: right[10], 10_000: 0.9}\n",
            "so the attacker is almost always right",
        ),
        (
            "comp-ex-loose-bounds",
            "sum_noise_ratio = 200 / 73\n",
            "U - L is the sensitivity under replacement",
        ),
        (
            "comp-ex-loose-bounds",
            LOOSE.format(seed=4, epsilon=1.0, ratio="200 / 90"),
            "1,000 releases of dp_clipped_mean at epsilon = 0.5 give about",
        ),
        (
            "comp-ex-replacement",
            "histogram_factor = 2\nreplace_sensitivity = 3\n"
            "add_remove_sensitivity = 3\n",
            "one value can change from L = -3 to U = 2",
        ),
        (
            "comp-ex-replacement",
            "histogram_factor = 2\nreplace_sensitivity = 5\n"
            "add_remove_sensitivity = 5\n",
            "5 = U - L is the sensitivity under replacement",
        ),
        (
            "comp-ex-replacement",
            "histogram_factor = 1\nreplace_sensitivity = 5\n"
            "add_remove_sensitivity = 3\n",
            "one bar loses 1 and another gains 1",
        ),
        (
            "comp-ex-check-ratio",
            RATIO.format(geometric=1.0, rounded=ROUNDED_AT_TRUE, within=True),
            "that is the log-ratio at the outputs 10 and 11 only",
        ),
        (
            "comp-ex-check-ratio",
            RATIO.format(geometric="np.e", rounded=1.0, within=False),
            "that is the largest ratio; take its log",
        ),
        (
            "comp-ex-check-ratio",
            RATIO.format(geometric=1.0, rounded=1.0, within=False),
            "both largest log-ratios are at most epsilon = 1",
        ),
    ],
    ids=[
        "repeat-free",
        "parallel-across-releases",
        "parallel-claim-accepted",
        "budget-epsilon-one-per-answer",
        "budget-coin",
        "budget-many-answers-too-low",
        "wrong-clipped-sensitivity",
        "loose-bounds-wrong-epsilon",
        "wrong-neighbours",
        "add-remove-as-replace",
        "histogram-factor-one",
        "ratio-at-true-values-only",
        "ratio-not-log",
        "within-denied",
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
            "comp-ex-add-up",
            "total_cost = 1.1\nparallel_claim_right = False\n",
            "it is released twice",
        ),
        (
            "comp-ex-add-up",
            "total_cost = 0.9\nparallel_claim_right = True\n",
            "holds only for releases about disjoint groups of people",
        ),
        (
            "comp-ex-budget-protects",
            BUDGET.format(seed=3, scale=1, kind="float"),
            "no attack on them is right more than e / (1 + e)",
        ),
        (
            "comp-ex-loose-bounds",
            "sum_noise_ratio = 200 / 73\n",
            "U - L is the sensitivity of a clipped sum under replacement",
        ),
        (
            "comp-ex-loose-bounds",
            "sum_noise_ratio = 90 / 200\n",
            "not the other way round",
        ),
        (
            "comp-ex-loose-bounds",
            "loose_rmse = {90: 2.8, 200: 1.3}\n",
            "the loose bounds add more noise to the sum",
        ),
        (
            "comp-ex-replacement",
            "histogram_factor = 2\nreplace_sensitivity = 3\n"
            "add_remove_sensitivity = 3\n",
            "your two sensitivities are equal",
        ),
        (
            "comp-ex-replacement",
            "histogram_factor = 2\nreplace_sensitivity = 5.5\n"
            "add_remove_sensitivity = 5\n",
            "U - L = 5 is what one value moves by",
        ),
        (
            "comp-ex-check-ratio",
            RATIO.format(geometric="np.e", rounded=1.0, within=False),
            "that is the largest ratio",
        ),
        (
            "comp-ex-check-ratio",
            RATIO.format(geometric=1.0, rounded=1.0, within=False),
            "both_within_epsilon should be True",
        ),
    ],
    ids=[
        "repeat-free",
        "parallel-across-releases",
        "budget-above-the-ceiling",
        "wrong-clipped-sensitivity",
        "ratio-inverted",
        "errors-in-the-wrong-order",
        "replace-as-add-remove",
        "add-remove-as-replace",
        "ratio-not-log",
        "within-contradicts-the-numbers",
    ],
)
def test_the_public_checks_catch_a_common_mistake(tb, label, code, expected):
    assignments.assert_public_checks_name(tb, STEM, label, code, expected)


@pytest.mark.parametrize(
    ("label", "code"),
    [
        (
            "comp-ex-add-up",
            "total_cost = np.float32(1.2)\nparallel_claim_right = np.False_\n",
        ),
        ("comp-ex-add-up", "total_cost = 1.20\nparallel_claim_right = 0\n"),
        (
            "comp-ex-budget-protects",
            BUDGET.format(seed=5, scale=10, kind="np.float32"),
        ),
        (
            "comp-ex-loose-bounds",
            LOOSE.format(seed=6, epsilon=0.5, ratio="2.22"),
        ),
        (
            "comp-ex-replacement",
            "histogram_factor = 2.0\nreplace_sensitivity = np.int64(5)\n"
            "add_remove_sensitivity = np.float32(3)\n",
        ),
        (
            "comp-ex-check-ratio",
            RATIO.format(
                geometric=1.00, rounded="np.float32(1)", within="np.True_"
            ),
        ),
    ],
    ids=[
        "numpy-scalars",
        "three-figures-and-zero-for-false",
        "budget-another-seed-float32",
        "loose-bounds-another-seed-ratio-to-3-figures",
        "replacement-numpy-scalars",
        "check-ratio-rounded-and-numpy",
    ],
)
def test_a_right_answer_in_another_form_gets_full_marks(tb, label, code):
    assignments.assert_answer_passes(tb, STEM, label, code)


# --- the book's data rule (issue 42, item 2) ---------------------------------

DATA_RULE_CASES = {
    "empty": "np.array([])",
    "NaN record": "np.array([30.0, np.nan])",
    "None record": "[30.0, None]",
    "non-numeric record": "pd.Series([30.0, 'n/a'], dtype=object)",
    "pandas NA": "pd.array([30, pd.NA], dtype='Int64')",
    "above the range": "np.array([30.0, 1e12])",
    "below the range": "np.array([30.0, -1e12])",
}


def _recipe_mean(values, lower, upper, epsilon, seed):
    """The documented recipe, computed here with numpy's own draws: a sum
    with Laplace noise of scale max(|L|, |U|) / (epsilon / 2), then a
    count with scale 1 / (epsilon / 2), divided and clamped."""
    import numpy as np

    rng = np.random.default_rng(seed)
    noisy_sum = sum(values) + rng.laplace(
        0.0, max(abs(lower), abs(upper)) / (epsilon / 2)
    )
    noisy_count = len(values) + rng.laplace(0.0, 1 / (epsilon / 2))
    return float(np.clip(noisy_sum / max(noisy_count, 1.0), lower, upper))


@pytest.mark.parametrize("case", sorted(DATA_RULE_CASES))
def test_dp_clipped_mean_follows_the_data_rule(tb, case):
    """No record makes dp_clipped_mean raise (a NaN record raised); a
    missing or non-numeric value counts as the lower bound, an
    out-of-range one is clamped, an empty table is noise; the release is
    the documented recipe on the clamped values, with the same draws."""
    data = DATA_RULE_CASES[case]
    release = tb.value(
        f"dp_clipped_mean({data}, 10, 90, 1.0, np.random.default_rng(3))"
    )
    assert np.isfinite(release) and 10 <= release <= 90
    clamped = {
        "empty": [],
        "above the range": [30.0, 90.0],
    }.get(case, [30.0, 10.0])
    assert release == pytest.approx(
        _recipe_mean(clamped, 10, 90, 1.0, 3), rel=1e-12
    )


def test_dp_clipped_mean_calibrates_both_halves_of_the_budget(tb):
    """The release equals the recipe drawn here (sum scale
    max(|L|, |U|) / (eps / 2), count scale 2 / eps) on several tables and
    seeds: a wrong sensitivity, a wrong scale or epsilon instead of
    epsilon / 2 changes it."""
    for seed in range(5):
        values = list(np.random.default_rng(seed).uniform(-3, 12, size=7))
        for lower, upper, epsilon in [(-5, 2, 0.3), (0, 10, 2.0)]:
            clamped = list(np.clip(values, lower, upper))
            ours = tb["dp_clipped_mean"](
                np.array(values),
                lower,
                upper,
                epsilon,
                np.random.default_rng(seed),
            )
            expected = _recipe_mean(clamped, lower, upper, epsilon, seed)
            assert ours == pytest.approx(expected, rel=1e-12)


def test_dp_clipped_mean_is_one_function_for_arrays_and_series(tb):
    tb.inject("""
mixed = [31.0, np.nan, 250.0, -7.0]
rule_means = [
    dp_clipped_mean(kind(mixed), 17, 90, 0.5, np.random.default_rng(8))
    for kind in (np.array, pd.Series, list)
]
""")
    first, *others = tb.value("rule_means")
    assert all(other == first for other in others)


def test_dp_clipped_mean_still_refuses_bad_bounds(tb):
    for bounds in ["0, np.inf", "np.nan, 5", "-np.inf, 0"]:
        value_error_message(
            tb, f"dp_clipped_mean([1.0], {bounds}, 1.0, test_rng)"
        )


MASK_CASES = {
    "pandas NA": "pd.array([True, pd.NA, False], dtype='boolean')",
    "object with None": "pd.Series([True, None, False], dtype=object)",
    "object with NaN": "np.array([True, np.nan, False], dtype=object)",
    "text": "pd.Series([True, 'yes', False], dtype=object)",
}


@pytest.mark.parametrize("case", sorted(MASK_CASES))
def test_private_count_follows_the_data_rule(tb, case):
    """A mask entry that is missing or not a number counts as False (the
    object mask with NaN raised): the release is the count of the True
    entries plus the same noise, and the accountant is charged once."""
    tb.inject(
        f"""
rule_table = pd.DataFrame({{"x": [1, 2, 3]}})
rule_accountant = PrivacyAccountant(budget=1.0)
rule_count = private_count(
    rule_table, {MASK_CASES[case]}, 0.5, rule_accountant, "rule",
    np.random.default_rng(2),
)
rule_noise = np.random.default_rng(2).laplace(0.0, 1 / 0.5)
"""
    )
    assert tb.value("rule_count") == pytest.approx(
        1 + tb.value("rule_noise"), rel=1e-12
    )
    assert tb.value("rule_accountant.spent") == 0.5


def test_private_count_of_an_empty_table_is_noise_around_zero(tb):
    tb.inject("""
empty_accountant = PrivacyAccountant(budget=1.0)
empty_count = private_count(
    adult.iloc[:0], adult["Age"].iloc[:0] > 40, 1.0, empty_accountant,
    "empty", np.random.default_rng(6),
)
""")
    noise = np.random.default_rng(6).laplace(0.0, 1.0)
    assert tb.value("empty_count") == pytest.approx(noise, rel=1e-12)


def test_dp_counts_follows_the_data_rule(tb):
    """An empty table gives every public cell (noise around 0); a record
    whose key is missing, or not in the public domain, is in no cell."""
    tb.inject("""
rule_domain = pd.MultiIndex.from_product(
    [["a", "b"], ["x", "y"]], names=["k1", "k2"]
)
rule_rows = pd.DataFrame(
    {"k1": ["a", None, "zz", "b", np.nan], "k2": ["x", "y", "x", None, "y"]}
)
rule_counts = dp_counts(
    rule_rows, ["k1", "k2"], rule_domain, 1.0, PrivacyAccountant(1.0),
    "rule", np.random.default_rng(4),
)
empty_counts = dp_counts(
    rule_rows.iloc[:0], ["k1", "k2"], rule_domain, 1.0,
    PrivacyAccountant(1.0), "empty", np.random.default_rng(4),
)
rule_noise = np.random.default_rng(4).laplace(0.0, 1.0, size=4)
""")
    noise = tb.value("rule_noise")
    counts = tb.value("rule_counts.to_numpy()")
    empty = tb.value("empty_counts.to_numpy()")
    np.testing.assert_allclose(counts, np.array([1, 0, 0, 0]) + noise)
    np.testing.assert_allclose(empty, noise)
    assert tb.value("list(empty_counts.index) == list(rule_domain)")


def test_a_register_total_is_public_only_for_a_sample_of_its_population():
    """A register's total of the very population the table covers is the
    table's own size (the in-between case), not an outside constant."""
    import nbformat

    from conftest import CHAPTERS_DIR

    cells = nbformat.read(CHAPTERS_DIR / "composition.ipynb", as_version=4)
    text = " ".join(
        " ".join(c.source.split())
        for c in cells.cells
        if "(comp-sec-public-size)=" in c.source
    )
    assert "a population total from a register, or" not in text
    assert "when the table is a sample of that population" in text
    assert "it is the table's own size" in text


def test_an_epsilon_too_small_for_geometric_noise_is_refused(tb):
    # At epsilon / sensitivity below about 1e-19 both geometric draws
    # saturate at the largest integer and the noise is exactly 0 (the old
    # function released the true count); just above, the noise had an
    # atom at 0 that breaks pure DP. Refused, with the reason.
    for epsilon in ("1e-320", "1e-18"):
        message = value_error_message(
            tb,
            f"geometric_mechanism(5, 1, {epsilon}, np.random.default_rng(0))",
        )
        assert "too small" in message
    assert isinstance(
        tb.value("geometric_mechanism(5, 1, 1e-9, np.random.default_rng(0))"),
        int,
    )

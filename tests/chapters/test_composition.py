"""Tests for the functions defined in chapters/composition.ipynb.

The notebook is executed once (in its own folder, so that its data loader finds
../data/); the tests then call its functions inside the same kernel.
"""
import pytest

from conftest import chapter_kernel, value_error_message



@pytest.fixture(scope="module")
def tb():
    with chapter_kernel("composition") as notebook:
        notebook.inject("""
            test_rng = np.random.default_rng(12345)
        """, pop=True)
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
        "laplace_mechanism(np.full(200_000, 10.0), 2, 0.5, test_rng))]")
    assert abs(mean - 10.0) < 0.1
    assert abs(sd - 2 ** 0.5 * 4) < 0.1


def test_laplace_scalar_returns_float(tb):
    assert tb.value("type(laplace_mechanism(3, 1, 1.0, test_rng)).__name__") == "float"


@pytest.mark.parametrize("call, fragment", [
    ("laplace_mechanism(1, 1, 0, test_rng)", "epsilon"),
    ("laplace_mechanism(1, 1, -1, test_rng)", "epsilon"),
    ("laplace_mechanism(1, 1, float('inf'), test_rng)", "epsilon"),
    ("laplace_mechanism(1, 0, 1, test_rng)", "sensitivity"),
    ("laplace_mechanism(1, -2, 1, test_rng)", "sensitivity"),
])
def test_laplace_rejects_bad_input(tb, call, fragment):
    assert_value_error(tb, call, fragment)


# ---------- privacy accountant ----------

def test_budget_exceeded_error_is_value_error(tb):
    assert tb.value("issubclass(BudgetExceededError, ValueError)")


@pytest.mark.parametrize("budget", ["-1", "-0.001", "float('nan')", "float('inf')"])
def test_accountant_rejects_bad_budget(tb, budget):
    assert_value_error(tb, f"PrivacyAccountant({budget})", "budget")


@pytest.mark.parametrize("epsilon", ["0", "-0.1", "float('nan')"])
def test_accountant_rejects_bad_epsilon(tb, epsilon):
    assert_value_error(tb, f"PrivacyAccountant(1).charge({epsilon}, 'q')", "epsilon")


def test_accountant_records_and_refuses(tb):
    tb.inject("""
        acc = PrivacyAccountant(1.0)
        acc.charge(0.6, "first")
        acc.charge(0.4, "second")
    """, pop=True)
    assert tb.value("[list(r) for r in acc.releases]") == [["first", 0.6], ["second", 0.4]]
    assert_value_error(tb, "acc.charge(0.01, 'third')", "Refused 'third'")
    # A refused release leaves the ledger unchanged.
    assert tb.value("len(acc.releases)") == 2
    assert tb.value("acc.spent") == pytest.approx(1.0)


def test_many_small_spends_never_exceed_budget(tb):
    # Spend 0.01 until refused, from a budget of 1: exactly 100 pass (the
    # tolerance absorbs the rounding in 100 x 0.01), the 101st is refused, and
    # the total never exceeds the budget by more than the tolerance.
    tb.inject("""
        acc = PrivacyAccountant(1.0)
        accepted, overspent = 0, False
        for _ in range(1_000):
            try:
                acc.charge(0.01, "small")
            except BudgetExceededError:
                break
            accepted += 1
            overspent = overspent or acc.spent > acc.budget + acc.TOLERANCE
    """, pop=True)
    assert tb.value("accepted") == 100
    assert tb.value("overspent") is False
    assert tb.value("acc.spent") <= 1.0 + 1e-9


def test_random_spends_stay_within_budget(tb):
    # Property test: 2,000 attempted spends of random sizes against a budget of
    # 3; after each attempt the recorded total is within budget + tolerance, and
    # every refusal happened only when the spend would really have overshot.
    tb.inject("""
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
    """, pop=True)
    assert tb.value("int(violations)") == 0
    assert tb.value("int(wrong_refusals)") == 0
    assert tb.value("refusals") > 0  # the sequence does run past the budget


def test_accountant_tolerates_float_rounding(tb):
    # 0.1 + 0.2 > 0.3 in binary; the accountant must still accept both.
    tb.inject("acc = PrivacyAccountant(0.3); acc.charge(0.1, 'a'); acc.charge(0.2, 'b')",
              pop=True)
    assert tb.value("len(acc.releases)") == 2
    assert_value_error(tb, "acc.charge(1e-6, 'c')", "Refused")


def test_zero_budget_refuses_everything(tb):
    assert_value_error(tb, "PrivacyAccountant(0).charge(0.001, 'q')", "Refused")


def test_private_count_charges_accountant(tb):
    tb.inject("""
        acc = PrivacyAccountant(1.0)
        pc = private_count(adult, adult["Age"] >= 65, 0.25, acc, "old", test_rng)
    """, pop=True)
    assert tb.value("acc.spent") == pytest.approx(0.25)
    true_count = tb.value("int((adult['Age'] >= 65).sum())")
    # Laplace scale 4: |noise| < 60 has probability 1 - exp(-15).
    assert abs(tb.value("pc") - true_count) < 60
    assert_value_error(tb, "private_count(adult, [True], 0.1, acc, 'x', test_rng)", "mask")


# ---------- parallel composition: dp_counts ----------

def test_dp_counts_keeps_public_domain(tb):
    tb.inject("""
        dom = pd.Index(EDUCATION_LEVELS + ["Unknown-level"], name="Education")
        noisy_counts = dp_counts(adult, ["Education"], dom, 1.0, test_rng)
        true_counts = adult["Education"].value_counts().reindex(dom, fill_value=0)
    """, pop=True)
    assert tb.value("list(noisy_counts.index)") == tb.value("list(dom)")
    # Laplace scale 1: every one of 17 cells within 20 has probability > 1 - 1e-7.
    assert tb.value("float((noisy_counts - true_counts).abs().max())") < 20
    # The empty cell is released (around 0), not dropped.
    assert abs(tb.value("float(noisy_counts['Unknown-level'])")) < 20


def test_dp_counts_contingency_table_shape(tb):
    assert tb.value("len(dp_counts(adult, ['Education', 'Target'], table_domain, 1.0, "
                    "test_rng))") == 32


def test_dp_counts_rejects_bad_input(tb):
    assert_value_error(tb, "dp_counts(adult, ['Nope'], education_domain, 1.0, test_rng)",
                       "Unknown column")
    assert_value_error(tb, "dp_counts(adult, ['Education'], pd.Index([]), 1.0, test_rng)",
                       "domain")
    assert_value_error(tb, "dp_counts(adult, ['Education'], education_domain, 0, test_rng)",
                       "epsilon")


# ---------- sensitivity and clipped means ----------

@pytest.mark.parametrize("lower, upper, model, expected", [
    (0, 99, "add/remove", 99),
    (17, 90, "add/remove", 90),
    (17, 90, "replace", 73),
    (-3, 2, "add/remove", 3),
    (-3, 2, "replace", 5),
    (-10, -4, "add/remove", 10),
])
def test_clipped_sum_sensitivity(tb, lower, upper, model, expected):
    assert tb.value(f"clipped_sum_sensitivity({lower}, {upper}, {model!r})") == expected


def test_clipped_sum_sensitivity_rejects_bad_input(tb):
    assert_value_error(tb, "clipped_sum_sensitivity(5, 1)", "lower <= upper")
    assert_value_error(tb, "clipped_sum_sensitivity(0, 1, 'swap')", "neighbours")


def test_dp_clipped_mean_is_accurate_and_in_bounds(tb):
    # 1,000 releases of the mean age of the whole table at epsilon = 1: noise on
    # the mean is about sqrt(2) * 90 / 0.5 / 32,561 = 0.008, so the average
    # release must be within 0.05 of the truth.
    tb.inject("""
        mean_releases = np.array([dp_clipped_mean(adult["Age"], 17, 90, 1.0, test_rng)
                                  for _ in range(1_000)])
    """, pop=True)
    true_mean = tb.value("float(adult['Age'].mean())")
    assert abs(tb.value("float(mean_releases.mean())") - true_mean) < 0.05
    assert tb.value("bool(((mean_releases >= 17) & (mean_releases <= 90)).all())")


def test_dp_clipped_mean_clips(tb):
    # Bounds [0, 10] on ages clip everybody to 10, so the release is near 10.
    assert abs(tb.value("dp_clipped_mean(adult['Age'], 0, 10, 1.0, test_rng)") - 10) < 0.1


def test_dp_clipped_mean_clamps_release_into_bounds(tb):
    # Three values and epsilon = 0.1: the noisy ratio often falls outside [0, 10];
    # the release is clamped into the bounds (post-processing), so it never does.
    assert tb.value("""bool(all(0 <= dp_clipped_mean([5, 5, 5], 0, 10, 0.1, test_rng) <= 10
                                for _ in range(1_000)))""")


def test_dp_clipped_mean_rejects_bad_input(tb):
    assert_value_error(tb, "dp_clipped_mean([1, 2], 5, 1, 1.0, test_rng)", "lower <= upper")
    assert_value_error(tb, "dp_clipped_mean([1, 2], 0, 5, 0, test_rng)", "epsilon")
    assert_value_error(tb, "dp_clipped_mean([1, 2], 0, 5, -1, test_rng)", "epsilon")


# ---------- geometric mechanism ----------

def test_geometric_pmf_formula(tb):
    # alpha = exp(-0.5); P(0) = (1 - alpha) / (1 + alpha); sums to 1.
    import math
    alpha = math.exp(-0.5)
    assert tb.value("float(two_sided_geometric_pmf(0, 0.5))") == pytest.approx(
        (1 - alpha) / (1 + alpha))
    assert tb.value("float(two_sided_geometric_pmf(-3, 0.5))") == pytest.approx(
        (1 - alpha) / (1 + alpha) * alpha ** 3)
    assert tb.value("float(two_sided_geometric_pmf(np.arange(-500, 501), 0.5).sum())") == \
        pytest.approx(1.0)
    # Sensitivity 2 halves the decay rate: alpha = exp(-epsilon / 2).
    assert tb.value("float(two_sided_geometric_pmf(1, 1.0, 2))") == pytest.approx(
        (1 - alpha) / (1 + alpha) * alpha)


@pytest.mark.parametrize("epsilon, sensitivity", [(0.5, 1), (1.0, 1), (1.0, 3)])
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
    max_gap = max(abs(c - e) / n for c, e in zip(counts, expected))
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
    dtype_kind, mean = tb.value("""(lambda out: (out.dtype.kind, float(out.mean())))(
        geometric_mechanism(np.full(100_000, 50), 1, 1.0, test_rng))""")
    assert dtype_kind == "i"
    # Variance 2 alpha / (1 - alpha)^2 = 1.84 at epsilon 1; se of the mean 0.004.
    assert abs(mean - 50) < 0.03


@pytest.mark.parametrize("call, fragment", [
    ("geometric_mechanism(5, 1, 0, test_rng)", "epsilon"),
    ("geometric_mechanism(5, 1, -1, test_rng)", "epsilon"),
    ("geometric_mechanism(5, 1.5, 1, test_rng)", "sensitivity"),
    ("geometric_mechanism(5, 0, 1, test_rng)", "sensitivity"),
    ("geometric_mechanism(5.5, 1, 1, test_rng)", "integer"),
    ("two_sided_geometric_pmf(0, 0)", "epsilon"),
    ("two_sided_geometric_pmf(0, 1, -1)", "sensitivity"),
    ("rounded_laplace_pmf(0, -1)", "epsilon"),
])
def test_geometric_rejects_bad_input(tb, call, fragment):
    assert_value_error(tb, call, fragment)


def test_rounded_laplace_pmf_sums_to_one_and_is_dp(tb):
    assert tb.value("float(rounded_laplace_pmf(np.arange(-2000, 2001), 1.0).sum())") == \
        pytest.approx(1.0)
    # Neighbouring counts 10 and 11: every output's log-ratio is at most epsilon.
    worst = tb.value("""float(np.abs(np.log(rounded_laplace_pmf(np.arange(-30, 41) - 10, 1.0)
                         / rounded_laplace_pmf(np.arange(-30, 41) - 11, 1.0))).max())""")
    assert worst <= 1.0 + 1e-9

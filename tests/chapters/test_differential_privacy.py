"""Tests for chapters/differential-privacy.ipynb: the chapter's own functions, run in its kernel."""
import pytest
from testbook.exceptions import TestbookRuntimeError

from conftest import chapter_kernel


# Helpers injected into the kernel for the statistical tests. Every test seeds its own generator.
STAT_HELPERS = '''
import numpy as np
from scipy import stats


def max_log_ratio_excess(mechanism, epsilon, n_draws=400_000, min_count=2_000, z=4.5, seed=7):
    """Largest (|ln(hist_D / hist_D')| - epsilon - z * SE) over well-filled bins, for f(D) = 100, f(D') = 101.

    SE of ln(n1 / n2) for two independent bin counts is sqrt(1/n1 + 1/n2) (delta method).
    z = 4.5 keeps the chance of a false alarm over a few dozen bins below 1e-4.
    A correct epsilon-DP mechanism gives a negative value.
    """
    rng = np.random.default_rng(seed)
    a = mechanism(np.full(n_draws, 100.0), 1, epsilon, rng)
    b = mechanism(np.full(n_draws, 101.0), 1, epsilon, rng)
    edges = np.arange(80, 121.01, 0.25)
    hist_a, _ = np.histogram(a, edges)
    hist_b, _ = np.histogram(b, edges)
    keep = (hist_a >= min_count) & (hist_b >= min_count)
    assert keep.sum() >= 10, "too few well-filled bins for a meaningful test"
    log_ratio = np.abs(np.log(hist_a[keep] / hist_b[keep]))
    standard_error = np.sqrt(1 / hist_a[keep] + 1 / hist_b[keep])
    return float(np.max(log_ratio - epsilon - z * standard_error))


def half_scale_mechanism(value, sensitivity, epsilon, rng):
    """A broken mechanism: half the noise it needs (it is only 2 * epsilon-DP)."""
    return laplace_mechanism(value, sensitivity, 2 * epsilon, rng)


def std_as_scale_mechanism(value, sensitivity, epsilon, rng):
    """A broken mechanism: treats sensitivity / epsilon as the standard deviation."""
    return laplace_mechanism(value, sensitivity, np.sqrt(2) * epsilon, rng)
'''


@pytest.fixture(scope="module")
def tb():
    with chapter_kernel("differential-privacy") as notebook:
        notebook.inject(STAT_HELPERS)
        yield notebook


# --- input validation -------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    "100, 1, 0",                      # epsilon = 0
    "100, 1, -0.5",                   # negative epsilon
    "100, -1, 1",                     # negative sensitivity
    "float('nan'), 1, 1",             # non-finite value
    "float('inf'), 1, 1",
    "np.array([1.0, np.nan]), 1, 1",  # non-finite entry in an array
    "100, float('nan'), 1",           # non-finite sensitivity
    "100, float('inf'), 1",
    "100, 1, float('nan')",           # non-finite epsilon
    "100, 1, float('inf')",
])
def test_laplace_mechanism_rejects_bad_inputs(tb, args):
    with pytest.raises(TestbookRuntimeError) as info:
        tb.inject(f"laplace_mechanism({args}, np.random.default_rng(0))", pop=True)
    assert info.value.eclass is ValueError


@pytest.mark.parametrize("call, error", [
    ("laplace_mechanism(100, 1, 1, 42)", TypeError),               # a seed, not a Generator
    ("guessing_bound(-0.1)", ValueError),
    ("remove_one_neighbours(health.iloc[:0])", ValueError),        # empty table
    ("load_health('no_such_file.csv')", FileNotFoundError),
])
def test_helpers_reject_bad_input(tb, call, error):
    with pytest.raises(TestbookRuntimeError) as info:
        tb.inject(call, pop=True)
    assert info.value.eclass is error


# --- happy paths --------------------------------------------------------------------------

def test_laplace_mechanism_scalar_in_float_out(tb):
    assert tb.value("type(laplace_mechanism(5, 1, 1.0, np.random.default_rng(1))).__name__") == "float"


def test_laplace_mechanism_keeps_array_shape_and_draws_independent_noise(tb):
    assert tb.value("laplace_mechanism(np.zeros((3, 4)), 1, 1.0, np.random.default_rng(1)).shape") == [3, 4]
    assert tb.value("len(np.unique(laplace_mechanism(np.zeros(1000), 1, 1.0, np.random.default_rng(1))))") == 1000


def test_laplace_mechanism_is_reproducible_with_the_same_seed(tb):
    assert tb.value(
        "laplace_mechanism(7.0, 1, 0.5, np.random.default_rng(3)) == laplace_mechanism(7.0, 1, 0.5, np.random.default_rng(3))"
    )


def test_zero_sensitivity_adds_no_noise(tb):
    assert tb.value("laplace_mechanism(42.0, 0, 1.0, np.random.default_rng(0))") == 42.0


def test_noise_is_centred_on_the_true_value(tb):
    # mean of 100,000 draws with b = 2: standard error sqrt(2) * 2 / sqrt(1e5) = 0.009; allow 5 SE.
    mean = tb.value("float(np.mean(laplace_mechanism(np.full(100_000, 50.0), 1, 0.5, np.random.default_rng(11))))")
    assert abs(mean - 50.0) < 0.045


def test_remove_one_neighbours_gives_one_table_per_row(tb):
    assert tb.value("[len(t) for t in remove_one_neighbours(health)]") == [9] * 10


def test_guessing_bound_values(tb):
    assert tb.value("float(guessing_bound(0.0))") == pytest.approx(0.5)
    assert tb.value("float(guessing_bound(np.log(3)))") == pytest.approx(0.75)


# --- statistical tests of the mechanism (fixed seeds, stated tolerances) -----------------

def test_noise_matches_laplace_with_scale_sensitivity_over_epsilon(tb):
    # KS test of 20,000 noise draws (sensitivity 2, epsilon 0.5) against Laplace(0, 4): must not reject at 1%.
    tb.inject("""
noise_ks = laplace_mechanism(np.zeros(20_000), 2.0, 0.5, np.random.default_rng(2024))
ks_right = stats.kstest(noise_ks, "laplace", args=(0, 4.0)).pvalue
ks_std_mistake = stats.kstest(noise_ks, "laplace", args=(0, 4.0 / np.sqrt(2))).pvalue
ks_half = stats.kstest(noise_ks, "laplace", args=(0, 2.0)).pvalue
""")
    assert tb.value("ks_right") > 0.01
    # The same test has the power to reject the scales that common mistakes produce.
    assert tb.value("ks_std_mistake") < 1e-6
    assert tb.value("ks_half") < 1e-6


def test_empirical_log_ratio_of_neighbours_stays_within_epsilon(tb):
    # Histograms of outputs for f(D) = 100 and f(D') = 101, sensitivity 1: every well-filled bin
    # must satisfy |ln ratio| <= epsilon + 4.5 standard errors.
    for epsilon in (0.5, 1.0):
        assert tb.value(f"max_log_ratio_excess(laplace_mechanism, {epsilon})") <= 0


def test_log_ratio_test_catches_mechanisms_with_too_little_noise(tb):
    # The test above must be able to fail: half the noise doubles the log ratio,
    # and treating the scale as a standard deviation multiplies it by sqrt(2).
    assert tb.value("max_log_ratio_excess(half_scale_mechanism, 0.5)") > 0
    assert tb.value("max_log_ratio_excess(std_as_scale_mechanism, 1.0)") > 0


def test_threshold_attacker_respects_the_guessing_bound(tb):
    # 200,000 trials: standard error <= 0.0012; allow 4 SE above the bound.
    for epsilon in (0.1, 1.0, 3.0):
        success = tb.value(f"threshold_attack_success({epsilon}, 200_000, np.random.default_rng(5))")
        bound = tb.value(f"float(guessing_bound({epsilon}))")
        assert success <= bound + 4 * 0.0012
        assert success > 0.5  # the attacker does learn something


# --- the chapter's numbers ---------------------------------------------------------------

def test_differencing_attack_reveals_kofis_row(tb):
    assert tb.value("obese_everyone - obese_without_target") == 1
    assert tb.value("health.loc[is_target, 'Name'].tolist()") == ["Kofi Dalton"]


def test_census_true_count(tb):
    assert tb.value("true_count") == tb.value("int((adult['Age'] >= 40).sum())")


def test_count_sensitivity_is_one_on_every_neighbour(tb):
    assert tb.value("int(changes['count aged 40+'].abs().max())") == 1


def test_simulated_relative_error_follows_theory(tb):
    # 2,000 releases per point: the median's relative spread is a few percent; allow 15%.
    assert tb.value("float((utility['median relative error'] / utility['theory'] - 1).abs().max())") < 0.15

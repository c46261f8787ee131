"""Tests for chapters/deploying-dp.ipynb: the chapter's own functions, run
in its namespace, checked against independent computations."""

import math

import assignments
import numpy as np
import pytest
from scipy import stats

from conftest import chapter_kernel, glued_value, value_error_message


@pytest.fixture(scope="module")
def tb():
    with chapter_kernel("deploying-dp") as notebook:
        yield notebook


# --- independent references ----------------------------------------------


def discrete_laplace_pmf(k, epsilon):
    r = math.exp(-epsilon)
    return (1 - r) / (1 + r) * r ** np.abs(k)


def discrete_laplace_sample(epsilon, size, rng):
    """Inverse-CDF sampling on a truncated support (mass lost < 1e-12)."""
    r = math.exp(-epsilon)
    half = int(math.ceil(math.log(1e-13) / math.log(r))) + 1
    support = np.arange(-half, half + 1)
    cdf = np.cumsum(discrete_laplace_pmf(support, epsilon))
    return support[np.searchsorted(cdf, rng.random(size) * cdf[-1])]


def gaussian_exact_delta(rho, epsilon):
    """Exact delta of the Gaussian mechanism that is exactly rho-zCDP."""
    mu = math.sqrt(2 * rho)  # sensitivity / sigma
    return stats.norm.cdf(-epsilon / mu + mu / 2) - math.exp(
        epsilon
    ) * stats.norm.cdf(-epsilon / mu - mu / 2)


def cks_delta_by_grid(rho, epsilon):
    alphas = 1 + np.logspace(-6, 4, 400_001)
    log_terms = (
        (alphas - 1) * (alphas * rho - epsilon)
        + alphas * np.log1p(-1 / alphas)
        - np.log(alphas - 1)
    )
    return float(min(1.0, np.exp(log_terms.min())))


# --- the deployments -------------------------------------------------------


def test_census_rho_is_read_from_the_production_scale(tb):
    assert tb["census_rho"] == pytest.approx((542 / 339) ** 2, rel=1e-15)
    assert glued_value("deploying-dp", "dep_census_rho") == pytest.approx(
        (542 / 339) ** 2
    )
    assert tb["CENSUS_DELTA"] == 1e-10


@pytest.mark.parametrize("rho", [0.05, 0.5, 2.5562255810513306, 10.0])
@pytest.mark.parametrize("epsilon", [0.5, 3.0, 17.0])
def test_cks_delta_matches_a_grid_search(tb, rho, epsilon):
    got = math.exp(tb["cks_log_delta"](rho, epsilon))
    want = cks_delta_by_grid(rho, epsilon)
    assert got == pytest.approx(want, rel=1e-4)


@pytest.mark.parametrize("rho", [0.05, 0.5, 2.5562255810513306])
@pytest.mark.parametrize("delta", [1e-5, 1e-10])
def test_cks_epsilon_is_valid_and_tighter_than_the_book(tb, rho, delta):
    eps_cks = tb["cks_epsilon"](rho, delta)
    eps_book = float(tb["zcdp_epsilon"](rho, delta))
    assert eps_cks < eps_book
    # At its epsilon the conversion gives exactly the target delta ...
    assert tb["cks_log_delta"](rho, eps_cks) == pytest.approx(
        math.log(delta), abs=1e-6
    )
    # ... and it is a valid bound: the Gaussian mechanism with this rho
    # (which is exactly rho-zCDP) needs no more delta there.
    assert gaussian_exact_delta(rho, eps_cks) <= delta * (1 + 1e-9)


def test_census_conversions_are_the_glued_ones(tb):
    assert glued_value("deploying-dp", "dep_census_eps_cks") == pytest.approx(
        tb["cks_epsilon"](tb["census_rho"], 1e-10)
    )
    assert glued_value("deploying-dp", "dep_census_eps_book") == pytest.approx(
        tb["census_rho"] + 2 * math.sqrt(tb["census_rho"] * math.log(1e10))
    )


# --- choosing epsilon ------------------------------------------------------


@pytest.mark.parametrize("a", [0, 3, 20])
@pytest.mark.parametrize("epsilon", [0.05, 0.5, 2.0])
def test_discrete_laplace_tail_sums_the_pmf(tb, a, epsilon):
    ks = np.arange(a + 1, 20_000)
    want = 2 * discrete_laplace_pmf(ks, epsilon).sum()
    assert tb["discrete_laplace_tail"](a, epsilon) == pytest.approx(
        want, rel=1e-9
    )


def test_accuracy_epsilon_meets_its_target_in_simulation(tb):
    """From public information only (a, beta), epsilon_for_accuracy gives
    the epsilon at which a count is within +-a with probability exactly
    1 - beta: a simulation with an independent sampler meets the target
    within 3 standard errors, and 5% less epsilon misses it."""
    rng = np.random.default_rng(35)
    beta, n = 0.05, 400_000
    se = math.sqrt(beta * (1 - beta) / n)
    for a in tb["plan"]["within"]:
        epsilon = tb["epsilon_for_accuracy"](int(a), beta)
        share = np.mean(np.abs(discrete_laplace_sample(epsilon, n, rng)) <= a)
        assert abs(share - (1 - beta)) <= 3 * se, (a, share)
        short = np.mean(
            np.abs(discrete_laplace_sample(0.95 * epsilon, n, rng)) <= a
        )
        assert short < 1 - beta - 3 * se, (a, short)


def test_the_plan_uses_the_public_formula(tb):
    plan = tb["plan"]
    for a, epsilon in zip(plan["within"], plan["epsilon"], strict=True):
        assert epsilon == tb["epsilon_for_accuracy"](int(a), 0.05)
    assert tb["utility_epsilon"] == pytest.approx(plan["epsilon"].sum())


@pytest.mark.parametrize("steps", [1, 2])
@pytest.mark.parametrize(("prior", "ceiling"), [(0.25, 0.5), (0.01, 0.05)])
def test_risk_end_reaches_the_ceiling_exactly(tb, prior, ceiling, steps):
    eps = tb["largest_epsilon_for_posterior"](prior, ceiling, steps)
    high = tb["posterior_bounds"](prior, steps * eps)[1]
    assert high == pytest.approx(ceiling, rel=1e-12)


def test_the_two_ends_meet_for_the_plan_and_not_for_the_strict_policy(tb):
    assert tb["utility_epsilon"] <= tb["risk_epsilon"]
    assert tb["strict_epsilon"] < tb["utility_epsilon"]
    assert tb["plan_epsilon"](tb["stretch"]) <= tb["strict_epsilon"]
    # The rare-diagnosis solution says its 1%-to-5% policy allows more
    # epsilon than the plan's 25%-to-50% one.
    assert tb["value_end"] > tb["risk_epsilon"]


# --- the release -----------------------------------------------------------


def test_the_plan_budget_sums_within_the_total(tb):
    accountant = tb["accountant"]
    costs = tb["costs"]
    assert accountant.budget == pytest.approx(tb["utility_epsilon"])
    assert accountant.spent <= accountant.budget + accountant.TOLERANCE
    assert accountant.spent == pytest.approx(math.fsum(costs.values()))
    assert [d for d, _ in accountant.releases] == list(tb["plan"].index)
    with pytest.raises(tb["BudgetExceededError"]):
        accountant.charge(0.01, "a fourth table")


def test_released_tables_come_from_the_library_with_stated_parameters(tb):
    import opendp.prelude as dp  # noqa: PLC0415

    plan = tb["plan"]
    for name, measurement in tb["measurements"].items():
        assert isinstance(measurement, dp.Measurement)
        # The library's own privacy map states the planned epsilon.
        assert measurement.map(1) == pytest.approx(
            plan.loc[name, "epsilon"], rel=1e-9
        )
        table = tb["released"][name]
        assert len(table) == len(plan.loc[name, "categories"]) + 1
        assert all(isinstance(count, int) for count in table)
    # The noise of a released table has the planned law: releases of an
    # empty table are pure noise (unseeded: 4 standard errors).
    measurement = tb["measurements"]["sex by income"]
    noise = np.array([measurement([]) for _ in range(3000)]).ravel()
    share = np.mean(np.abs(noise) <= plan.loc["sex by income", "within"])
    assert abs(share - 0.95) <= 4 * math.sqrt(0.05 * 0.95 / noise.size)


def test_released_counts_are_near_the_truth(tb):
    truth = tb["records"]["Education"].value_counts()
    released = tb["released"]["education"]
    # The release is unseeded: choose a margin that a correct release of
    # the 16 levels misses with probability below 1e-6 (union bound).
    r = math.exp(-tb["plan"].loc["education", "epsilon"])
    margin = 150
    assert 16 * 2 * r ** (margin + 1) / (1 + r) < 1e-6
    for level, count in zip(
        tb["EDUCATION_LEVELS"], released[:-1], strict=True
    ):
        assert abs(count - truth.get(level, 0)) <= margin, level


def test_audit_passes_the_plan_and_catches_a_wrong_scale(tb):
    assert tb["audited"] <= tb["plan"].loc["education", "epsilon"]
    epsilon = tb["plan"].loc["education", "epsilon"]

    def four_times_less_noise(count, n_runs, rng):
        return count + discrete_laplace_sample(4 * epsilon, n_runs, rng)

    bound = tb["audit_epsilon"](
        four_times_less_noise,
        100,
        101,
        20_000,
        8,
        (60, 140),
        np.random.default_rng(3),
    )
    assert bound > epsilon


def test_privacy_card_states_the_plan(tb):
    card = tb["census_card"]
    assert f"{tb['accountant'].spent:.4f}-DP in all" in card
    assert "one person" in card
    # The audit line reports this run's audit, not a fixed sentence.
    passed = tb["audited"] <= tb["plan"].loc["education", "epsilon"]
    assert ("below the claimed epsilon" in card) == passed
    assert ("FAILED" in card) == (not passed)
    for name in tb["plan"].index:
        assert f"| {name} |" in card


# --- the dial --------------------------------------------------------------


def test_tradeoff_rows_are_the_discrete_tail_and_the_bound(tb):
    eps = np.array([0.05, 0.3, 1.0, 2.0])
    rows = tb["tradeoff_rows"](eps)
    for epsilon, error in zip(eps, rows["error"], strict=True):
        a = int(error)
        assert tb["discrete_laplace_tail"](a, epsilon) <= 0.05
        if a > 0:
            assert tb["discrete_laplace_tail"](a - 1, epsilon) > 0.05
    assert np.allclose(
        rows["posterior"], tb["posterior_bounds"](0.25, 2 * eps)[1]
    )


def test_dial_expressions_are_the_python_ones(tb):
    spec = tb["tradeoff_dial"](0.5, 0.05, 2.0, 0.05).to_dict()
    (top, _) = spec["vconcat"]
    # The curves' expressions read the grid (datum.epsilon); the marked
    # point's read the slider.
    calc = {
        t["as"]: t["calculate"]
        for layer in top["layer"]
        for t in layer.get("transform", [])
        if "datum.epsilon" in t.get("calculate", "")
    }
    eps = np.array([0.05, 0.37, 1.2, 2.0])
    env = {"np": np}

    def run(expr):
        python = (
            expr.replace("datum.epsilon", "_e")
            .replace("exp(", "np.exp(")
            .replace("log(", "np.log(")
            .replace("ceil(", "np.ceil(")
            .replace("max(", "np.maximum(")
        )
        return eval(python, {**env, "_e": eps})

    rows = tb["tradeoff_rows"](eps)
    assert np.allclose(run(calc["error"]), rows["error"])
    assert np.allclose(run(calc["posterior"]), rows["posterior"])


@pytest.mark.parametrize(
    "args",
    [(0.0, 0.05, 2.0, 0.05), (3.0, 0.05, 2.0, 0.05), (0.5, 0.05, 2.0, 5.0)],
)
def test_dial_rejects_bad_input(tb, args):
    tb.inject(f"_args = {args!r}")
    value_error_message(tb, "tradeoff_dial(*_args)")


def test_stored_dial_compiles_with_a_labelled_slider(tb):
    import nbformat  # noqa: PLC0415
    import vl_convert  # noqa: PLC0415

    from conftest import CHAPTERS_DIR  # noqa: PLC0415

    cells = nbformat.read(
        CHAPTERS_DIR / "deploying-dp.ipynb", as_version=4
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
    assert param["name"] == "epsilon" and param["value"] == 0.5
    assert param["bind"]["min"] == tb["dial_low"]
    assert param["bind"]["max"] == tb["dial_high"]
    assert param["bind"]["name"].strip() == "total ε of the release"
    vega = vl_convert.vegalite_to_vega(spec, vl_version="5.21")
    assert "epsilon" in {s["name"] for s in vega["signals"]}


# --- bad input -------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "epsilon_for_accuracy(-1, 0.05)",
        "epsilon_for_accuracy(2.5, 0.05)",
        "epsilon_for_accuracy(10, 1.2)",
        "discrete_laplace_tail(3, 0.0)",
        "largest_epsilon_for_posterior(0.5, 0.4)",
        "largest_epsilon_for_posterior(0.2, 0.4, steps=3)",
        "cks_epsilon(0.0, 1e-5)",
        "cks_epsilon(1.0, 1.5)",
        "count_table_measurement(['a'], -1.0)",
        "privacy_card('t', 'u', 'n', {}, 'p', 'm', 'e', 'r', 'a')",
    ],
)
def test_bad_input_raises_value_error(tb, expression):
    value_error_message(tb, expression)


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)

STEM = "deploying-dp"


def test_the_book_s_solutions_get_full_marks(tb):
    assignments.assert_full_marks(tb, STEM)


def test_the_untouched_student_notebook_scores_zero(tb):
    assignments.assert_stubs_score_zero(tb, STEM)


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "dep-ex-census-delta",
            "eps_at_delta = {\n"
            "    d: (by_delta.loc[d, 'Canonne et al.'], by_delta.loc[d, 'book'])\n"
            "    for d in deltas\n"
            "}\n",
            "the two conversions are swapped",
        ),
        (
            # the value of a record treated as one add/remove step
            "dep-ex-rare",
            "rare_value_epsilon = presence_end\n"
            "rare_presence_epsilon = presence_end\n"
            "rare_value_error = best['presence']\n"
            "rare_presence_error = best['presence']\n",
            "two add/remove steps",
        ),
        (
            "dep-ex-rare",
            "rare_value_epsilon = value_end\n"
            "rare_presence_epsilon = presence_end\n"
            "rare_value_error = best['value'] // 2\n"
            "rare_presence_error = best['presence']\n",
            "the discrete Laplace noise stays within",
        ),
        (
            "dep-ex-simultaneous",
            "eps_all_cells = epsilon_for_accuracy(25, 0.05 / 17)\n"
            "all_within_share = all_within\n"
            "n_simulated_tables = 50_000\n",
            "is the union bound",
        ),
        (
            # a share of cells within +-25 instead of whole tables
            "dep-ex-simultaneous",
            "eps_all_cells = eps_all\n"
            "all_within_share = float(np.mean(np.abs(draws) <= 25))\n"
            "n_simulated_tables = draws.shape[0]\n",
            "count a table only if all 17 of its noises",
        ),
    ],
    ids=[
        "swapped-conversions",
        "value-as-presence",
        "wrong-error",
        "union-bound",
        "cells-not-tables",
    ],
)
def test_a_typical_wrong_answer_fails_with_its_reason(
    tb, label, code, expected
):
    message = assignments.wrong_answer_message(tb, STEM, label, code)
    assert expected in message, message

"""Tests for the functions defined in chapters/randomized-response.ipynb.

The notebook is executed once (module fixture); its own functions are then called
inside the kernel, so these tests check exactly what the book shows.
"""

import assignments
import numpy as np
import pytest
import support

from conftest import chapter_kernel, value_error_message


@pytest.fixture(scope="module")
def tb():
    with chapter_kernel("randomized-response") as notebook:
        yield notebook


# --- randomized_response ---------------------------------------------------------


def test_answer_probabilities_match_the_design(tb):
    # 200,000 respondents per true answer: the standard error of each share is
    # about 0.001, so a tolerance of 0.005 is five standard errors.
    tb.inject(
        """
        _rng = np.random.default_rng(1)
        _yes = randomized_response(np.ones(200_000, dtype=bool), 0.5, _rng).mean()
        _no = randomized_response(np.zeros(200_000, dtype=bool), 0.5, _rng).mean()
        _yes_p = randomized_response(np.ones(200_000, dtype=bool), 0.8, _rng).mean()
        """
    )
    assert tb.value("_yes") == pytest.approx(0.75, abs=0.005)
    assert tb.value("_no") == pytest.approx(0.25, abs=0.005)
    assert tb.value("_yes_p") == pytest.approx((1 + 0.8) / 2, abs=0.005)


def test_randomized_response_keeps_shape_and_returns_booleans(tb):
    tb.inject(
        """
        _out = randomized_response(np.zeros((3, 7), dtype=bool), 0.5, np.random.default_rng(0))
        """
    )
    assert tb.value("list(_out.shape)") == [3, 7]
    assert tb.value("str(_out.dtype)") == "bool"


@pytest.mark.parametrize(
    "call",
    [
        "randomized_response([True, False], 0.0, rng)",
        "randomized_response([True, False], 1.0, rng)",
        "randomized_response([True, False], 1.5, rng)",
        "randomized_response([True, False], -0.2, rng)",
        "randomized_response([True, False], float('nan'), rng)",
    ],
)
def test_randomized_response_rejects_bad_input(tb, call):
    value_error_message(tb, call)


# --- estimate_proportion and rr_standard_error --------------------------------------


def test_estimator_is_unbiased_at_fixed_seed(tb):
    # 2,000 surveys of 1,000 people with a true share of 0.3. The mean of the
    # estimates has standard error SE/sqrt(2000) (about 0.0006 for p = 0.5); the
    # tolerance is five of those. The raw "yes" share, biased towards 0.5, would
    # miss by 0.02 or more and fail by a wide margin.
    tb.inject(
        """
        _rng = np.random.default_rng(2024)
        _truth = np.arange(1000) < 300
        _results = {}
        for _p in (0.25, 0.5, 0.9):
            _surveys = randomized_response(np.broadcast_to(_truth, (2000, 1000)), _p, _rng)
            _estimates = estimate_proportion(_surveys, _p)
            _results[_p] = (float(_estimates.mean()), float(_estimates.std()),
                            float(rr_standard_error(1000, _p)))
        """
    )
    results = tb.value("_results")
    for p, (mean, spread, formula_se) in results.items():
        assert mean == pytest.approx(0.3, abs=5 * formula_se / 2000**0.5), p
        # The standard-error formula matches the spread of the estimates (within 5%).
        assert spread == pytest.approx(formula_se, rel=0.05), p


def test_estimator_inverts_the_expected_share_exactly(tb):
    # With the expected answer share plugged in, the estimator returns the truth.
    # answers = 5 of 8 "yes" with p = 0.5 means lambda = 0.625, pi = (0.625 - 0.25) / 0.5.
    value = tb.value(
        "float(estimate_proportion([1, 1, 1, 1, 1, 0, 0, 0], 0.5))"
    )
    assert value == pytest.approx(0.75)


def test_standard_error_formula(tb):
    assert tb.value("float(rr_standard_error(100, 0.5))") == pytest.approx(
        (1 - 0.25) ** 0.5 / (2 * 0.5 * 10)
    )


@pytest.mark.parametrize(
    "call",
    [
        "estimate_proportion([], 0.5)",
        "estimate_proportion(np.zeros((3, 0)), 0.5)",
        "estimate_proportion([True, False], 0.0)",
        "estimate_proportion([True, False], 1.0)",
        "rr_standard_error(0, 0.5)",
        "rr_standard_error(100, 1.2)",
    ],
)
def test_estimator_rejects_bad_input(tb, call):
    value_error_message(tb, call)


# --- epsilon ---------------------------------------------------------------------


def test_epsilon_of_two_fair_coins_is_ln3(tb):
    assert tb.value("float(rr_epsilon(0.5))") == pytest.approx(
        1.0986122886681098
    )
    assert tb.value("float(rr_epsilon(0.75))") == pytest.approx(
        1.9459101090932196
    )  # ln 7


def test_p_for_epsilon_inverts_epsilon(tb):
    for eps in (0.1, 1.0, 3.0):
        assert tb.value(
            f"float(rr_epsilon(rr_p_for_epsilon({eps})))"
        ) == pytest.approx(eps)


@pytest.mark.parametrize(
    "call",
    [
        "rr_epsilon(0.0)",
        "rr_epsilon(1.0)",
        "rr_p_for_epsilon(0)",
        "rr_p_for_epsilon(-1)",
    ],
)
def test_epsilon_functions_reject_bad_input(tb, call):
    value_error_message(tb, call)


# --- posterior_bounds ---------------------------------------------------------------


def test_posterior_bounds_worked_example(tb):
    low, high = tb.value(
        "[float(v) for v in posterior_bounds(0.5, np.log(3))]"
    )
    assert low == pytest.approx(0.25)
    assert high == pytest.approx(0.75)


def test_posterior_bounds_odds_ratio_and_order(tb):
    tb.inject(
        """
        _priors = np.array([0.01, 0.1, 0.5, 0.9, 0.99])
        _odds = lambda q: q / (1 - q)
        _checks = []
        for _eps in (0.1, 1.0, 5.0):
            _low, _high = posterior_bounds(_priors, _eps)
            _checks.append(bool(np.allclose(_odds(_high) / _odds(_priors), np.exp(_eps))))
            _checks.append(bool(np.allclose(_odds(_priors) / _odds(_low), np.exp(_eps))))
            _checks.append(bool(np.all((_low < _priors) & (_priors < _high))))
        """
    )
    assert all(tb.value("_checks"))


def test_posterior_bounds_ten_percent_prior(tb):
    # Hand computation: odds 1/9 times e^5, converted back to a probability.
    import math

    expected = (math.exp(5) / 9) / (1 + math.exp(5) / 9)
    assert tb.value("float(posterior_bounds(0.1, 5.0)[1])") == pytest.approx(
        expected
    )


def test_empirical_posteriors_sit_on_the_bound(tb):
    # The chapter's survey check: every group within 3 standard errors of its bound,
    # and the largest distance is unremarkable among replays of the same survey.
    assert tb.value("float(z_scores.abs().max())") < 3
    assert tb.value("float(share_as_extreme)") > 0.05


def test_replayed_posteriors_average_to_the_bound(tb):
    # Randomized response attains the Bayesian bound: over many replays of the coins,
    # each group's posterior averages to the bound. 400 replays, so the mean of each
    # column has standard error std_error / 20; the tolerance is five of those (plus a
    # little for the ratio estimator's O(1/n) bias). Replays of a broken mechanism
    # (say p = 0.8 instead of 0.5) miss the ln 3 bound by far more.
    tb.inject(
        """
        _mean = replayed[indexed.index].mean()
        _gap = ((_mean - indexed["bound"]).abs() / (indexed["std_error"] / 20)).max()
        """
    )
    assert tb.value("float(_gap)") < 6


def test_replay_spread_matches_the_delta_method(tb):
    # First-order (delta-method) standard error of a share A / (A + B), where
    # A ~ Bin(n1, 3/4) true high earners and B ~ Bin(n0, 1/4) others say "yes".
    # The replays' spread must agree within 15% (400 replays: about 3.5% noise).
    tb.inject(
        """
        _g = survey[survey["education"] == "Bachelors"]
        _n1, _n0 = int(_g["truth"].sum()), int((~_g["truth"]).sum())
        _a, _b = 0.75 * _n1, 0.25 * _n0
        _var = (_b**2 * _n1 * 3 / 16 + _a**2 * _n0 * 3 / 16) / (_a + _b) ** 4
        _ratio = float(replayed[(True, "Bachelors")].std() / _var**0.5)
        """
    )
    assert tb.value("_ratio") == pytest.approx(1, abs=0.15)


@pytest.mark.parametrize(
    "call",
    [
        "replay_posteriors(truth, membership, 0.5, 0, rng)",
        "replay_posteriors(truth[:10], membership, 0.5, 5, rng)",
        "replay_posteriors(truth, membership.iloc[:, :0], 0.5, 5, rng)",
        "replay_posteriors(truth, membership, 1.0, 5, rng)",
    ],
)
def test_replay_posteriors_rejects_bad_input(tb, call):
    value_error_message(tb, call)


@pytest.mark.parametrize(
    "call",
    [
        "posterior_bounds(0.0, 1.0)",
        "posterior_bounds(1.0, 1.0)",
        "posterior_bounds([0.2, 1.3], 1.0)",
        "posterior_bounds([], 1.0)",
        "posterior_bounds(0.5, 0.0)",
        "posterior_bounds(0.5, -1.0)",
    ],
)
def test_posterior_bounds_rejects_bad_input(tb, call):
    value_error_message(tb, call)


# --- the posterior theorem and the neighbour relation --------------------------


def test_randomized_response_odds_ratio_is_exactly_e_eps(tb):
    # Bayes' rule by hand from the design probabilities of the chapter's p = 1/2:
    # P(yes | yes) = 3/4, P(yes | no) = 1/4. The posterior odds after "yes" divided
    # by the prior odds must equal e^eps = 3 for every prior (the theorem's bound
    # is attained, not just respected), and posterior_bounds must give that posterior.
    import math

    eps = tb.value("float(rr_epsilon(0.5))")
    for prior in (0.01, 0.241, 0.5, 0.9):
        posterior = 0.75 * prior / (0.75 * prior + 0.25 * (1 - prior))
        ratio = (posterior / (1 - posterior)) / (prior / (1 - prior))
        assert ratio == pytest.approx(math.exp(eps))
        high = tb.value(
            f"float(posterior_bounds({prior}, rr_epsilon(0.5))[1])"
        )
        assert high == pytest.approx(posterior)


def test_simulated_answers_move_the_odds_by_e_eps(tb):
    # Empirical likelihood ratio of the chapter's randomized_response at p = 1/2 over
    # 400,000 answers per true value: each share has standard error below 0.001, so
    # the ratio 0.75 / 0.25 is known to within about 2%; 5% is a wide margin.
    tb.inject(
        """
        _rng = np.random.default_rng(12)
        _yes = randomized_response(np.ones(400_000, dtype=bool), 0.5, _rng).mean()
        _no = randomized_response(np.zeros(400_000, dtype=bool), 0.5, _rng).mean()
        _ratios = (float(_yes / _no), float((1 - _no) / (1 - _yes)))
        """
    )
    for ratio in tb.value("list(_ratios)"):
        assert ratio == pytest.approx(3, rel=0.05)


def test_add_remove_laplace_pair_moves_value_odds_beyond_e_eps(tb):
    # The chapter's central example: two Laplace counts (high earners, others), scale
    # 1/eps, eps = ln 3. Recompute the log density ratio by hand from the Laplace
    # density for the chapter's own releases. Changing Alice's value must move the
    # odds by more than e^eps on some releases and never by more than e^(2 eps);
    # adding/removing her (the book's neighbours) never by more than e^eps.
    tb.inject(
        """
        _b = 1 / epsilon_central
        _logpdf = lambda x, mu: -np.abs(x - mu).sum(axis=-1) / _b
        _value = _logpdf(releases, counts_alice_yes) - _logpdf(releases, counts_alice_no)
        _presence = (_logpdf(releases, counts_alice_yes)
                     - _logpdf(releases, counts_alice_out))
        _facts = dict(
            eps=float(epsilon_central),
            value_max=float(_value.max()),
            value_min=float(_value.min()),
            presence_max=float(np.abs(_presence).max()),
            share_at_2eps=float((_value > 2 * epsilon_central - 1e-9).mean()),
            n=int(len(releases)),
            chapter_agrees=bool(np.allclose(_value, value_log_ratio)),
        )
        """
    )
    facts = tb.value("_facts")
    eps = facts["eps"]
    assert facts["chapter_agrees"]
    assert facts["value_max"] > eps + 0.5  # well beyond e^eps ...
    assert facts["value_max"] <= 2 * eps + 1e-9  # ... but within e^(2 eps)
    assert facts["value_min"] >= -2 * eps - 1e-9
    assert facts["presence_max"] <= eps + 1e-9
    # Both noises on the far side: probability exactly 1/4. With 20,000 releases the
    # share has standard error 0.003; 0.015 is five of those.
    assert facts["share_at_2eps"] == pytest.approx(0.25, abs=0.015)
    # The glued posterior bound for 2 eps at a 50% prior is e^(2 eps) / (1 + e^(2 eps)).
    assert tb.value("float(add_remove_bound)") == pytest.approx(0.9)
    assert tb.value("float(central_posterior.max())") <= 0.9 + 1e-9


@pytest.mark.parametrize(
    "call",
    [
        "laplace_log_likelihood_ratio([[1.0, 2.0]], [1, 2], [1, 2], 0.0)",
        "laplace_log_likelihood_ratio([[1.0, 2.0]], [1, 2], [1, 2], -1.0)",
        "laplace_log_likelihood_ratio([[1.0, 2.0]], [1, 2], [1, 2, 3], 1.0)",
        "laplace_log_likelihood_ratio([[1.0, 2.0, 3.0]], [1, 2], [1, 2], 1.0)",
    ],
)
def test_laplace_log_likelihood_ratio_rejects_bad_input(tb, call):
    value_error_message(tb, call)


def test_rare_prior_solution_epsilons(tb):
    # Hand computation: odds factor (0.1/0.9)/(0.01/0.99) = 11.
    import math

    assert tb.value("float(largest_eps_local)") == pytest.approx(math.log(11))
    assert tb.value("float(largest_eps_value)") == pytest.approx(
        math.log(11) / 2
    )
    assert tb.value("float(p_needed)") == pytest.approx(5 / 6)


# --- laplace_mechanism -------------------------------------------------------------


def test_laplace_mechanism_noise_scale(tb):
    # 100,000 draws; the sample std of Laplace(1/eps) noise is within 2% of sqrt(2)/eps.
    tb.inject(
        """
        _draws = laplace_mechanism(np.full(100_000, 1000), 1, 0.5, np.random.default_rng(3))
        """
    )
    assert tb.value("float(_draws.mean())") == pytest.approx(1000, abs=0.05)
    assert tb.value("float(_draws.std())") == pytest.approx(
        2**0.5 / 0.5, rel=0.02
    )


@pytest.mark.parametrize(
    "call",
    [
        "laplace_mechanism(10, 1, 0, rng)",
        "laplace_mechanism(10, 1, -0.5, rng)",
        "laplace_mechanism(10, 0, 1.0, rng)",
        "laplace_mechanism(np.nan, 1, 1.0, rng)",
    ],
)
def test_laplace_mechanism_rejects_bad_input(tb, call):
    value_error_message(tb, call)


def test_laplace_mechanism_rejects_a_seed_for_rng(tb):
    tb.inject(
        """
        try:
            laplace_mechanism(10, 1, 1.0, 42)
            _rng_error = None
        except TypeError as _error:
            _rng_error = str(_error)
        """
    )
    assert "Generator" in tb.value("_rng_error")


def test_binomial_standard_error_is_not_a_constant_multiple(tb):
    # The chapter says the textbook binomial standard error errs in both directions
    # across the education groups. Recompute it from the table the chapter shows.
    tb.inject(
        """
        _q = posterior_by_group["posterior"]
        _binomial = np.sqrt(_q * (1 - _q) / posterior_by_group["n_answers"])
        _ratio = _binomial / posterior_by_group["std_error"]
        _range = (float(_ratio.min()), float(_ratio.max()))
        """
    )
    low, high = tb.value("list(_range)")
    assert low < 1 < high
    assert high / low > 2


@pytest.mark.parametrize(
    "call",
    [
        "rr_p_for_epsilon(np.inf)",
        "rr_p_for_epsilon(np.nan)",
        "posterior_bounds(0.5, np.inf)",
        "posterior_bounds(0.5, np.nan)",
        "count_errors(0.0, 5, rng)",
    ],
)
def test_epsilon_must_be_positive_and_finite(tb, call):
    value_error_message(tb, call)


def test_randomized_response_rejects_a_seed_for_rng(tb):
    tb.inject(
        """
        try:
            randomized_response([True, False], 0.5, 42)
            _rr_rng_error = None
        except TypeError as _error:
            _rr_rng_error = str(_error)
        """
    )
    assert "Generator" in tb.value("_rr_rng_error")


# --- review fixes: binomial standard error, Warner's parametrization, ------------
# --- the group-privacy citation, clipping, display width ---------------------------


def test_binomial_standard_error_is_too_large_to_first_order(tb):
    # Delta method by hand: in a group with n1 high earners and n0 others, who give
    # the answer with probabilities a and c = 1 - a, the ratio of the binomial to
    # the true standard error of the posterior is sqrt((a n1 + c n0) /
    # (a^2 n1 + c^2 n0)), a weighted mean of 1/a and 1/c under the root, so between
    # sqrt(4/3) and 2 for a in {1/4, 3/4}. The chapter's column must agree.
    tb.inject(
        """
        _rows = [
            (str(_e), bool(_ans), int(_g["truth"].sum()), int((~_g["truth"]).sum()))
            for (_e, _ans) in zip(posterior_by_group["education"],
                                  posterior_by_group["answer"])
            for _g in [survey[survey["education"] == _e]]
        ]
        _chapter_ratio = [float(v) for v in first_order_ratio]
        """
    )
    rows = tb.value("_rows")
    chapter = tb.value("_chapter_ratio")
    assert (
        len(rows) == len(chapter) == tb.value("int(len(posterior_by_group))")
    )
    for (_, said_yes, n1, n0), ratio in zip(rows, chapter, strict=True):
        a = 0.75 if said_yes else 0.25
        c = 1 - a
        expected = ((a * n1 + c * n0) / (a**2 * n1 + c**2 * n0)) ** 0.5
        assert ratio == pytest.approx(expected)
        assert (4 / 3) ** 0.5 <= ratio <= 2


def test_binomial_error_below_one_only_from_a_noisy_posterior(tb):
    # At the expected posterior (the bound), the binomial standard error exceeds
    # the replayed spread in every group: the first-order factor is at least 1.15,
    # far more than the 3.5% noise of a spread measured from 400 replays. The plug-in
    # version dips below 1 only where the observed posterior landed further from
    # 1/2 than its bound, as the chapter explains.
    tb.inject(
        """
        _t = posterior_by_group
        _at_bound = np.sqrt(_t["bound"] * (1 - _t["bound"]) / _t["n_answers"])
        _at_bound_ratio = float((_at_bound / _t["std_error"]).min())
        _low = _t[binomial_over_replayed < 1]
        _extreme = bool(((_low["posterior"] - 0.5).abs()
                         > (_low["bound"] - 0.5).abs()).all())
        _n_low = int(len(_low))
        """
    )
    assert tb.value("_at_bound_ratio") > 1
    assert tb.value("_n_low") >= 1  # the prose reports values below 1
    assert tb.value("_extreme")


def test_warner_parametrization_gives_the_same_epsilon(tb):
    # Simulated overall share of true answers p_W for p = 1/2 and p = 0.8 (400,000
    # respondents, standard error below 0.001): ln(p_W / (1 - p_W)) must match
    # rr_epsilon(p), while ln(p / (1 - p)) does not (ln 1 = 0 for fair coins).
    import math

    tb.inject(
        """
        _rng = np.random.default_rng(31)
        _truth_w = np.arange(400_000) % 3 == 0
        _pw = {p: float((randomized_response(_truth_w, p, _rng) == _truth_w).mean())
               for p in (0.5, 0.8)}
        _eps = {p: float(rr_epsilon(p)) for p in (0.5, 0.8)}
        """
    )
    pw, eps = tb["_pw"], tb["_eps"]
    for p in (0.5, 0.8):
        assert pw[p] == pytest.approx((1 + p) / 2, abs=0.005)
        assert math.log(pw[p] / (1 - pw[p])) == pytest.approx(eps[p], abs=0.03)
        assert abs(math.log(p / (1 - p)) - eps[p]) > 0.5


def _markdown():
    return support.markdown("randomized-response")


def test_factor_two_is_credited_to_group_privacy():
    # "add/remove eps implies replace-one 2 eps" is group privacy (Dwork and Roth
    # 2014, Theorem 2.2); Kifer and Machanavajjhala named the two relations.
    text = _markdown()
    start = text.index("The corollary is the Bayesian face of a known fact")
    paragraph = text[start : text.index("\n\n", start)]
    assert "group" in paragraph and "dwork2014algorithmic" in paragraph
    assert "{prf:ref}`dp-def-neighbours`" in paragraph


def test_display_equations_are_short_enough_for_the_page():
    # A proxy for the rendered width (about 650 px): at most 45 visible symbols per
    # displayed line, after dropping LaTeX commands. The two-relation display the
    # posterior theorem had before (about 60 symbols) fails this.
    import re

    def visible(line):
        line = re.sub(r"\\text\{([^}]*)\}", r"\1", line)
        line = re.sub(r"\\(begin|end)\{[a-z]*\}", "", line)
        line = re.sub(r"\\[dt]?frac", "", line)
        line = re.sub(r"\\[a-zA-Z]+", "x", line)
        line = re.sub(r"\\[,;!]|[{}&^_\\\s]", "", line)
        return len(line)

    for block in re.findall(r"\$\$(.*?)\$\$", _markdown(), flags=re.S):
        for line in block.split("\\\\"):
            assert visible(line) <= 45, line


def test_clipped_estimator_bias_matches_the_exact_value(tb):
    # Exact distribution of the number of "yes" among the 30 people (k high earners
    # say yes w.p. 3/4, the others w.p. 1/4), by convolution. The raw estimator's
    # exact bias is 0 and the clipped one's is positive; the chapter's simulated
    # biases must lie within 4 simulation standard errors of the exact values.
    from math import comb

    k = tb.value("int(small_sample.sum())")
    n = tb.value("int(len(small_sample))")

    def binom(m, q):
        return [comb(m, i) * q**i * (1 - q) ** (m - i) for i in range(m + 1)]

    ones, zeros = binom(k, 0.75), binom(n - k, 0.25)
    law = [0.0] * (n + 1)
    for i, pi in enumerate(ones):
        for j, pj in enumerate(zeros):
            law[i + j] += pi * pj
    truth = k / n
    raw = [(y / n - 0.25) / 0.5 for y in range(n + 1)]
    raw_bias = sum(p * (v - truth) for p, v in zip(law, raw, strict=True))
    clipped_bias = sum(
        p * (min(max(v, 0), 1) - truth) for p, v in zip(law, raw, strict=True)
    )
    assert raw_bias == pytest.approx(0, abs=1e-12)
    assert clipped_bias > 0
    se = tb.value("float(raw.std() / np.sqrt(len(raw)))")
    assert tb.value(
        "float(raw.mean() - small_sample.mean())"
    ) == pytest.approx(raw_bias, abs=4 * se)
    assert tb.value(
        "float(clipped.mean() - small_sample.mean())"
    ) == pytest.approx(clipped_bias, abs=4 * se)


def test_group_privacy_prices_additions_and_changes_separately():
    # Under add/remove, adding or removing k records costs k eps; changing k
    # records is k removals and k additions, 2k eps.
    text = _markdown()
    start = text.index("The corollary is the Bayesian face of a known fact")
    paragraph = text[start : text.index("\n\n", start)]
    assert "a change of $k$ records costs at most $k\\varepsilon$" not in text
    assert "adding or removing $k$" in paragraph
    assert "2k\\varepsilon" in " ".join(paragraph.split())


def test_summary_says_randomized_response_attains_e_eps_not_e_2eps():
    # The "attains" bullet must follow the e^eps bullet, not the add/remove
    # e^(2 eps) one: randomized response's odds ratio is exactly e^eps.
    summary = _markdown()
    summary = summary[summary.index("{admonition} Summary") :]
    bullets = summary.split("\n- ")
    attains = [i for i, b in enumerate(bullets) if "attains" in b]
    assert len(attains) == 1
    bullet = bullets[attains[0]]
    assert "e^{\\varepsilon}" in bullet and "2\\varepsilon" not in bullet
    assert "e^{2\\varepsilon}" not in bullets[attains[0] - 1]


def test_spelling_follows_the_ize_rule():
    import re

    words = re.findall(r"\b\w+is(?:e|es|ed|ing|ation)\b", _markdown())
    allowed = {
        "otherwise",
        "precise",
        "exercise",
        "exercises",
        "promise",
        "noise",
        "raise",
        "rise",
        "advise",
        "concise",
        "comprise",
        "comprises",
        "surprise",
        "surprising",
        "premise",
        "wise",
        "likewise",
        "arise",
        "arises",
        "arising",
        "raises",
        "noises",
        "revise",
        "promises",
        "promised",
        "exercised",
        "disguise",
        "expertise",
        "devise",
        "compromise",
        "compromised",
    }
    assert not [w for w in words if w.lower() not in allowed]


# --- the interactive posterior figure (a Vega-Lite 5 specification) ---------------


@pytest.mark.parametrize(
    "args",
    [
        "0, 1.0, (0.01, 0.99), (0.1, 5.0)",  # prior 0
        "0.5, 1.0, (0.6, 0.99), (0.1, 5.0)",  # prior outside its slider
        "0.1, 6.0, (0.01, 0.99), (0.1, 5.0)",  # epsilon above its slider
        "0.1, 1.0, (0.01, 0.99), (0.0, 5.0)",  # epsilon range from 0
        "0.1, 1.0, (0.01, 0.99), (0.1, 5.0), 0",  # step 0
    ],
)
def test_posterior_dial_rejects_bad_inputs(tb, args):
    value_error_message(tb, f"posterior_dial({args})")


def test_stored_posterior_dial_compiles_and_starts_at_the_hunch(tb):
    """The stored Vega-Lite 5 spec compiles; its two sliders start at the
    chapter's 10% prior and epsilon 1, inside their glued ranges; the
    description is the text fallback."""

    spec = support.stored_vega_lite("randomized-response")
    params = {p["name"]: p for p in spec["params"]}
    assert params["prior"]["value"] == 0.1
    assert params["epsilon"]["value"] == 1.0
    assert params["epsilon"]["bind"]["min"] == tb.value(
        "dial_epsilon_range[0]"
    )
    assert params["epsilon"]["bind"]["max"] == tb.value(
        "dial_epsilon_range[1]"
    )
    assert {"prior", "epsilon"} <= support.vega_signals(spec)


def test_posterior_dial_curve_is_the_posterior_bound(tb):
    """The chart's 'after a yes' is posterior_bounds' highest posterior:
    a randomized-response answer reaches the bound. Evaluated here with
    the chart's own expression (Vega's syntax is also Python's for it)."""
    tb.inject(
        """
        _spec = posterior_dial(0.1, 1.0, (0.01, 0.99), (0.1, 5.0)).to_dict()
        _yes, _no = _spec["layer"][0]["transform"][:2]
        assert (_yes["as"], _no["as"]) == ("after_yes", "after_no")
        _q = np.array([0.05, 0.3, 0.8])
        _shown_yes, _shown_no = (
            eval(
                _t["calculate"].replace("datum.prior", "_q")
                .replace("exp", "np.exp").replace("epsilon", "2.0"),
            )
            for _t in (_yes, _no)
        )
        _low, _high = posterior_bounds(_q, 2.0)
        """
    )
    assert tb.value("np.allclose(_shown_yes, _high, rtol=1e-12)")
    assert tb.value("np.allclose(_shown_no, _low, rtol=1e-12)")


def test_posterior_dial_label_never_rounds_a_belief_to_certainty(tb):
    """At epsilon 5 a no takes a 10% prior to 0.07%: the line above the
    chart must say 'under 1%', not '0%' (nor '100%' at the other end)."""
    import vl_convert  # noqa: PLC0415

    spec = tb.value(
        "posterior_dial(0.1, 5.0, (0.01, 0.99), (0.1, 5.0)).to_dict()"
    )
    spec["$schema"] = "https://vega.github.io/schema/vega-lite/v5.json"
    svg = vl_convert.vegalite_to_svg(spec, vl_version="5.21")
    assert "prior 10%: a yes moves it to 94%, a no to under 1%" in svg
    spec = tb.value(
        "posterior_dial(0.9, 5.0, (0.01, 0.99), (0.1, 5.0)).to_dict()"
    )
    spec["$schema"] = "https://vega.github.io/schema/vega-lite/v5.json"
    svg = vl_convert.vegalite_to_svg(spec, vl_version="5.21")
    assert "prior 90%: a yes moves it to over 99%, a no to 6%" in svg


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)

STEM = "randomized-response"


def test_the_book_s_solutions_get_full_marks(tb):
    assignments.assert_full_marks(tb, STEM)


def test_the_untouched_student_notebook_scores_zero(tb):
    assignments.assert_stubs_score_zero(tb, STEM)


BENT = "p_yes_given_yes = 7 / 8\np_yes_given_no = 1 / 8\n"
FORCED = (
    'forced = {"yes|yes": 1.0, "yes|no": 0.5, "no|yes": 0.0, "no|no": 0.5}\n'
)
RARE = "largest_eps_local = np.log(11)\n"


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "rr-ex-rare-prior",
            "largest_eps_local = np.log(11)\n"
            "largest_eps_value = np.log(11)\n"
            "p_needed = 5 / 6\n",
            "a removal plus an addition, so the odds move by e^(2 epsilon)",
        ),
        (
            "rr-ex-rare-prior",
            RARE + "largest_eps_value = np.log(11) / 2\np_needed = 11 / 12\n",
            "11/12 is the chance that an answer is the truth",
        ),
        (
            "rr-ex-bent-coin",
            BENT + "eps_bent = 7.0\nmore_private = 'fair'\n",
            "7 is the ratio itself; epsilon is its logarithm",
        ),
        (
            "rr-ex-bent-coin",
            BENT + "eps_bent = np.log(7)\nmore_private = 'bent'\n",
            "the smaller epsilon is the more private design",
        ),
        (
            "rr-ex-sample-size",
            "n_needed = int(np.ceil(np.sqrt(2) / (1.0 * 0.01)))\n",
            "above 0.01",
        ),
        (
            "rr-ex-sample-size",
            "n_needed = 7500\n",
            "that is the size for two fair coins",
        ),
        (
            "rr-ex-sample-size",
            "n_needed = 2 * 9207\n",
            "well below 0.01",
        ),
        (
            "rr-ex-forced-yes",
            FORCED + "forced_is_dp = True\nshare_high_among_no = 0.0\n",
            "their ratio is unbounded",
        ),
        (
            "rr-ex-forced-yes",
            FORCED + "forced_is_dp = False\n"
            "share_high_among_no = float(truth.mean())\n",
            "it should be exactly 0",
        ),
    ],
    ids=[
        "replacement-counted-once",
        "warner-p",
        "ratio-not-log",
        "larger-epsilon-more-private",
        "central-formula",
        "fair-coins",
        "too-many",
        "forced-called-dp",
        "share-of-everyone",
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
            "rr-ex-bent-coin",
            BENT + "eps_bent = 7.0\nmore_private = 'fair'\n",
            "7 is the ratio itself; epsilon is its logarithm",
        ),
        (
            "rr-ex-bent-coin",
            "p_yes_given_yes = 0.75\np_yes_given_no = 1 / 8\n"
            "eps_bent = np.log(6)\nmore_private = 'fair'\n",
            "the chance of a truthful answer alone",
        ),
        (
            "rr-ex-bent-coin",
            BENT + "eps_bent = np.log(7) / 2\nmore_private = 'fair'\n",
            "not the logarithm of the largest ratio",
        ),
        (
            "rr-ex-forced-yes",
            'forced = {"yes|yes": 1.0, "yes|no": 0.5, "no|yes": 0.5, '
            '"no|no": 0.0}\nforced_is_dp = False\n'
            "share_high_among_no = 0.0\n",
            "so the two add up to 1",
        ),
        (
            "rr-ex-forced-yes",
            FORCED + "forced_is_dp = True\nshare_high_among_no = 0.0\n",
            "the ratio of those two probabilities is unbounded",
        ),
        (
            "rr-ex-forced-yes",
            FORCED + "forced_is_dp = False\n"
            "share_high_among_no = float(truth.mean())\n",
            "the share among everyone",
        ),
        (
            "rr-ex-sample-size",
            "n_needed = int(np.ceil(np.sqrt(2) / (1.0 * 0.01)))\n",
            "the size a central Laplace count would need",
        ),
        ("rr-ex-sample-size", "n_needed = 7500\n", "two fair coins"),
        ("rr-ex-sample-size", "n_needed = 93\n", "not by 0.01^2"),
        ("rr-ex-sample-size", "n_needed = 9000\n", "above 0.01"),
        (
            "rr-ex-rare-prior",
            "largest_eps_local = np.log(11)\n"
            "largest_eps_value = np.log(11)\np_needed = 5 / 6\n",
            "a removal plus an addition",
        ),
        (
            "rr-ex-rare-prior",
            "largest_eps_local = np.log(10)\n"
            "largest_eps_value = np.log(10) / 2\np_needed = 9 / 11\n",
            "not the probabilities",
        ),
        (
            "rr-ex-rare-prior",
            RARE + "largest_eps_value = np.log(11) / 2\np_needed = 11 / 12\n",
            "the chance that an answer is the truth",
        ),
    ],
    ids=[
        "ratio-not-log",
        "second-coin-forgotten",
        "epsilon-not-from-the-probabilities",
        "conditioning-swapped",
        "forced-called-dp",
        "share-of-everyone",
        "central-formula",
        "fair-coins",
        "standard-error-not-squared",
        "too-few",
        "replacement-counted-once",
        "probabilities-not-odds",
        "warner-p",
    ],
)
def test_the_public_checks_catch_a_common_mistake(tb, label, code, expected):
    assignments.assert_public_checks_name(tb, STEM, label, code, expected)


@pytest.mark.parametrize(
    ("label", "code"),
    [
        (
            "rr-ex-bent-coin",
            "p_yes_given_yes = np.float32(0.875)\n"
            "p_yes_given_no = np.float32(0.125)\n"
            "eps_bent = 1.95\nmore_private = np.str_('Fair')\n",
        ),
        (
            "rr-ex-forced-yes",
            'forced = {"yes|yes": 1, "yes|no": np.float32(0.5), '
            '"no|yes": 0, "no|no": 0.5}\n'
            "forced_is_dp = np.False_\nshare_high_among_no = np.float64(0)\n",
        ),
        ("rr-ex-sample-size", "n_needed = 9210\n"),
        ("rr-ex-sample-size", "n_needed = np.int64(9207)\n"),
        ("rr-ex-sample-size", "n_needed = 9207.0\n"),
        (
            "rr-ex-rare-prior",
            "largest_eps_local = 2.40\nlargest_eps_value = np.float32(1.20)\n"
            "p_needed = 0.833\n",
        ),
    ],
    ids=[
        "bent-rounded-float32",
        "forced-ints-and-numpy",
        "sample-size-3-figures",
        "sample-size-int64",
        "sample-size-float",
        "rare-prior-rounded",
    ],
)
def test_a_right_answer_in_another_form_gets_full_marks(tb, label, code):
    assignments.assert_answer_passes(tb, STEM, label, code)


# --- the book's data rule (issue 42, item 2) ---------------------------------


@pytest.mark.parametrize(
    "truth, read_as",
    [
        ("[]", []),
        ("[1.0, np.nan]", [True, False]),
        ("[True, None]", [True, False]),
        ("pd.array([True, pd.NA], dtype='boolean')", [True, False]),
        ("pd.Series([1, 'yes'], dtype=object)", [True, False]),
        ("[2, -1]", [True, False]),
        ("[0.7, 0.2]", [True, False]),
    ],
)
def test_randomized_response_follows_the_data_rule(tb, truth, read_as):
    """No respondent makes the survey raise (an empty survey and a
    value outside {0, 1} raised): a missing or non-numeric answer counts
    as "no", others are clamped to [0, 1] and read as the nearer answer,
    and an empty survey gives no answers. With the same coins the answers
    are those of the truth as read (at p = 0.999 almost every answer is
    the truth, so a wrong reading shows)."""
    answers = tb.value(
        f"randomized_response({truth}, 0.999, np.random.default_rng(8))"
        ".tolist()"
    )
    expected = tb.value(
        f"randomized_response(np.array({read_as!r}, "
        "dtype=bool), 0.999, np.random.default_rng(8)).tolist()"
    )
    assert answers == expected
    assert answers == read_as  # with these coins every answer is the truth


def test_randomized_response_keeps_the_shape_of_a_non_boolean_survey(tb):
    for shape in [(4, 5), (0, 3), ()]:
        out = tb.value(
            f"list(randomized_response(np.zeros({shape}), 0.5, "
            "np.random.default_rng(0)).shape)"
        )
        assert tuple(out) == shape


def test_posterior_bounds_hold_at_any_epsilon(tb):
    # The old odds form overflowed at epsilon = 800 and returned nan.
    low, high = tb.value("tuple(map(float, posterior_bounds(0.5, 800)))")
    assert (low, high) == (0.0, 1.0)
    low, high = tb.value("tuple(map(float, posterior_bounds(0.25, 1.0)))")
    odds = 0.25 / 0.75
    assert abs(low - odds / np.e / (1 + odds / np.e)) < 1e-12
    assert abs(high - odds * np.e / (1 + odds * np.e)) < 1e-12

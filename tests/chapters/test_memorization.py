"""Tests for chapters/memorization.ipynb: the character model's gradients,
per-record clipping and noise, exposure (exact and sampled), extraction,
the stored runs (recomputed: the chapter's own model, one DP run, every
epsilon, the 200-canary binomial test) and the graded exercises."""

import sys

import assignments
import dp_accounting
import numpy as np
import pandas as pd
import pytest
from dp_accounting import pld, rdp
from scipy.stats import binomtest

from conftest import (
    DATA_DIR,
    ROOT,
    chapter_kernel,
    glued_value,
    value_error_message,
)

STEM = "memorization"
RUNS = pd.read_csv(DATA_DIR / "memorization-runs.csv")


@pytest.fixture(scope="module")
def ch():
    with chapter_kernel(STEM) as chapter:
        yield chapter


def glued(name):
    return glued_value(STEM, name)


def _small_batch(ch, n=4):
    lines = ch["lines"][:n]
    return ch["training_windows"](lines)


# --- the model and its gradients ---------------------------------------------


def test_record_gradient_is_the_sum_of_its_characters_gradients(ch):
    contexts, targets, mask = _small_batch(ch, 3)
    model = ch["init_model"](np.random.default_rng(1))
    rows = ch["record_gradients"](model, contexts, targets, mask)
    for record in range(3):
        total = {k: np.zeros_like(w) for k, w in model.items()}
        for position in np.flatnonzero(mask[record]):
            one = np.zeros_like(mask)
            one[record, position] = True
            part = ch["weighted_gradient_sum"](
                model, contexts, targets, one, np.ones(3)
            )
            for k in total:
                total[k] += part[k]
        for k in total:
            np.testing.assert_allclose(
                rows[k][record], total[k], atol=1e-10, rtol=1e-8
            )


def test_gradients_match_finite_differences(ch):
    contexts, targets, mask = _small_batch(ch, 1)
    model = ch["init_model"](np.random.default_rng(2))
    rows = ch["record_gradients"](model, contexts, targets, mask)
    predict = ch["next_char_log_probabilities"]

    def loss(m):
        log_p = predict(m, contexts)[0]
        picked = np.take_along_axis(log_p, targets[..., None], -1)[..., 0]
        return -(picked * mask).sum()

    rng = np.random.default_rng(3)
    for name in model:
        for _ in range(3):
            index = tuple(rng.integers(0, s) for s in model[name].shape)
            if name == "E":  # a character the record uses
                index = (int(contexts[0, 5, 3]), index[1])
            step = 1e-6
            up = {k: w.copy() for k, w in model.items()}
            down = {k: w.copy() for k, w in model.items()}
            up[name][index] += step
            down[name][index] -= step
            numeric = (loss(up) - loss(down)) / (2 * step)
            assert rows[name][0][index] == pytest.approx(
                numeric, rel=1e-5, abs=1e-7
            )


def test_one_record_moves_the_clipped_sum_by_at_most_c(ch):
    # Sensitivity of a step: add one record to a batch and the noiseless
    # clipped sum moves by at most C, however many characters it has.
    # (Clipping each character's window instead moves it by up to 50 C.)
    contexts, targets, mask = _small_batch(ch, 6)
    model = ch["init_model"](np.random.default_rng(4))
    for clip in [0.5, 5.0]:
        sums = [
            ch["noisy_clipped_sum"](
                model,
                contexts[:k],
                targets[:k],
                mask[:k],
                clip_norm=clip,
                noise_multiplier=0.0,
                rng=np.random.default_rng(0),
            )
            for k in (5, 6)
        ]
        moved = np.sqrt(
            sum(((sums[1][k] - sums[0][k]) ** 2).sum() for k in model)
        )
        # The record's gradient norm is far above C: it binds exactly.
        assert moved == pytest.approx(clip, rel=1e-9)


def test_a_record_is_clipped_as_a_whole_not_by_window(ch):
    contexts, targets, mask = _small_batch(ch, 2)
    model = ch["init_model"](np.random.default_rng(5))
    norms = ch["record_gradient_norms"](model, contexts, targets, mask)
    clip = 5.0
    total = ch["noisy_clipped_sum"](
        model,
        contexts,
        targets,
        mask,
        clip_norm=clip,
        noise_multiplier=0.0,
        rng=np.random.default_rng(0),
    )
    expected = ch["weighted_gradient_sum"](
        model, contexts, targets, mask, np.minimum(1, clip / norms)
    )
    for k in model:
        np.testing.assert_allclose(total[k], expected[k], rtol=1e-10)


def test_noise_has_sd_sigma_times_c_on_every_weight(ch):
    contexts, targets, mask = _small_batch(ch, 0)
    model = ch["init_model"](np.random.default_rng(6))
    total = ch["noisy_clipped_sum"](
        model,
        contexts,
        targets,
        mask,
        clip_norm=5.0,
        noise_multiplier=2.0,
        rng=np.random.default_rng(7),
    )
    noise = np.concatenate([g.ravel() for g in total.values()])
    # About 20,000 draws: the sample sd is within 3% of 10 with
    # probability far above 1 - 1e-4.
    assert len(noise) > 15_000
    assert np.std(noise) == pytest.approx(2.0 * 5.0, rel=0.03)
    assert abs(np.mean(noise)) < 0.5


def test_training_samples_records_at_the_stated_rate(ch):
    # Count the records each step sees: Poisson sampling at rate q.
    seen = []
    original = ch["noisy_clipped_sum"]

    def spy(model, contexts, *args, **kwargs):
        seen.append(len(contexts))
        return original(model, contexts, *args, **kwargs)

    ch.namespace["noisy_clipped_sum"] = spy
    try:
        ch["train_language_model"](
            ch["lines"][:200],
            epochs=5,
            sampling_rate=0.1,
            learning_rate=0.01,
            rng=np.random.default_rng(8),
        )
    finally:
        ch.namespace["noisy_clipped_sum"] = original
    assert len(seen) == 50
    # Mean of 50 binomial(200, 0.1) draws: sd 0.6 around 20.
    assert np.mean(seen) == pytest.approx(20, abs=3)
    assert np.std(seen) > 1  # Poisson, not fixed-size batches


def test_training_follows_the_data_rule(ch):
    table = pd.DataFrame(
        {
            "Name": ["Ann Lee", None, 3.5, "Zoë Ørsted"],
            "DOB": ["1/2/1960", "x", np.nan, pd.NA],
            "Zip": ["00123", "1", None, "99999"],
            "SSN": ["999-00-0001", None, 42, "999-00-0002"],
        }
    )
    lines = ch["record_lines"](table)
    assert len(lines) == 4 and all(line.endswith("\n") for line in lines)
    assert lines[1] == ",x,1,\n"
    settings = dict(epochs=1, sampling_rate=0.5, learning_rate=0.01)
    for data in [lines, [], ["x" * 500], [""]]:
        model = ch["train_language_model"](
            data,
            clip_norm=1.0,
            noise_multiplier=1.0,
            rng=np.random.default_rng(9),
            **settings,
        )
        assert all(np.all(np.isfinite(w)) for w in model.values())
    # An empty table is ordinary data.
    assert ch["record_lines"](table.iloc[:0]) == []


def test_arguments_raise(ch):
    train = "train_language_model(lines[:5], epochs=1, learning_rate=0.01, "
    for bad in [
        "sampling_rate=0, rng=rng)",
        "sampling_rate=1.5, rng=rng)",
        "sampling_rate=0.1, rng=rng, clip_norm=0)",
        "sampling_rate=0.1, rng=rng, noise_multiplier=-1)",
        "sampling_rate=0.1, rng=rng, noise_multiplier=1)",  # C = inf
    ]:
        value_error_message(ch, train + bad)
    with pytest.raises(TypeError):
        ch.value(train + "sampling_rate=0.1, rng=3)")
    value_error_message(ch, "make_canaries(3, 6, rng)")
    value_error_message(ch, "exposure(0, 10)")
    value_error_message(ch, "record_lines(adult[['Name']])")


# --- exposure -----------------------------------------------------------------


def test_rank_and_exposure_by_hand(ch):
    totals = np.array([-1.0, -2.0, -2.0, -3.0, -0.5])
    # At least as likely as -2.0: -1, -2, -2, -0.5 (itself and its tie).
    assert ch["secret_rank"](totals, 1) == 4
    assert ch["secret_rank"](totals, 4) == 1
    assert ch["secret_rank"](totals, 3) == 5
    assert ch["exposure"](4, 5) == pytest.approx(np.log2(5) - 2)
    assert ch["exposure"](1, 10**5) == pytest.approx(np.log2(10**5))
    assert ch["exposure"](10**5, 10**5) == 0


def test_digit_tree_scores_every_fill_as_direct_scoring_does(ch):
    predict = ch["predictors"]["neural"]
    prefix, template = "Ann Lee,1/2/1960,00123,999-", "?-??"
    totals = ch["candidate_log_likelihoods"](predict, prefix, template)
    fills = [ch["fill_template"](template, f"{i:03d}") for i in range(10**3)]
    direct = ch["continuation_log_likelihoods"](
        predict, [prefix] * len(fills), fills
    )
    assert len(totals) == 1000
    np.testing.assert_allclose(totals, direct, rtol=1e-10, atol=1e-10)
    # The probabilities of all fills add up to at most 1.
    assert np.exp(totals).sum() <= 1 + 1e-9


def test_a_uniform_model_gives_every_secret_exposure_zero(ch):
    # Ties count against the secret: a model that knows nothing puts
    # every candidate at the last rank, never at the cap.
    def uniform(contexts):
        return np.full((*contexts.shape[:-1], len(ch["ALPHABET"])), -4.0)

    totals = ch["candidate_log_likelihoods"](uniform, "x", "???")
    assert ch["secret_rank"](totals, 123) == 1000
    assert ch["exposure"](ch["secret_rank"](totals, 123), 1000) == 0


def test_exact_and_sampled_exposures_agree_below_the_cap(ch):
    comparison, cap = ch["comparison"], ch["cap_5"]
    below = comparison[comparison["exact"] <= cap - 4]
    assert len(below) >= 10
    assert (below["sampled"] - below["exact"]).abs().max() <= ch["TOLERANCE"]
    assert glued("mem_n_below") == len(below)
    assert glued("mem_sampling_gap") <= glued("mem_tolerance") == 0.25
    # At the cap the exact value stops, the fitted tail does not.
    at_cap = comparison[comparison["exact"] >= cap - 1e-9]
    assert len(at_cap) > 0 and (at_cap["exact"] <= cap + 1e-12).all()


def test_exposure_grows_with_copies_and_the_ngram_memorizes_at_once(ch):
    # After 40 epochs even single copies sit near the cap; after 5, the
    # copies make the difference (the stored run the figure shows).
    neural = ch["by_copies"]["neural"]
    assert neural.min() > ch["cap_5"] - 1
    early = RUNS[RUNS["run"] == "epochs-5"]
    exposure = np.log2(early["candidates"]) - np.log2(early["rank"])
    by_copies = exposure.groupby(early["copies"]).mean()
    assert by_copies.loc[16] > by_copies.loc[1] + 10
    assert glued("mem_epochs_5_exposure_16") == pytest.approx(by_copies[16])
    assert glued("mem_ngram_exposure_1") > 10  # one count is enough
    assert glued("mem_mlp_at_cap") == int(
        (ch["exposures"]["neural"] >= ch["cap_5"] - 1e-9).sum()
    )


def test_member_ssns_are_far_more_exposed_than_outsiders(ch):
    members = glued("mem_ssn_exposure_members")
    outsiders = glued("mem_ssn_exposure_outsiders")
    assert members > outsiders + 5
    assert outsiders < 3


# --- extraction -----------------------------------------------------------


def test_extraction_counts_are_recomputed(ch):
    for name, key in [("neural", "mlp"), ("n-gram", "ngram")]:
        predict = ch["predictors"][name]
        found = ch["extracted_ssns"](predict, ch["members"])
        assert glued(f"mem_{key}_extracted_members") == int(found.sum())
        assert glued(f"mem_{key}_extracted_outsiders") == 0
    assert glued("mem_mlp_extracted_members") >= 50
    # A verbatim SSN is a member's own, not a guess that happens to fit.
    predict = ch["predictors"]["neural"]
    prompts = ["Ann Lee,1/2/1960,00123,", "Bob Roe,7/7/1977,54321,"]
    guesses = ch["greedy_completions"](predict, prompts, 11)
    assert all(len(g) == 11 for g in guesses)


# --- the stored runs ----------------------------------------------------------


def _dp_accounting_epsilon(sigma, q, steps, delta):
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(
            q, dp_accounting.GaussianDpEvent(sigma)
        ),
        steps,
    )
    accountant = rdp.RdpAccountant()
    accountant.compose(event)
    return accountant.get_epsilon(delta)


def test_every_stored_epsilon_is_dp_accounting_at_the_training_rate():
    runs = RUNS.groupby("run").first()
    private = runs[runs["noise_multiplier"] > 0]
    assert len(private) == 7
    for _, row in private.iterrows():
        # Each record is sampled with probability 0.1 at each step.
        expected = _dp_accounting_epsilon(
            row["noise_multiplier"], 0.1, int(row["steps"]), 1e-5
        )
        assert row["epsilon"] == pytest.approx(expected, rel=1e-9)
        assert row["steps"] == 400
    assert np.isinf(runs.loc["clipped", "epsilon"])


def test_the_chapter_recomputes_each_epsilon_at_the_training_rate(ch):
    recomputed = ch["recomputed"]
    for run, value in recomputed.items():
        sigma = float(RUNS.loc[RUNS["run"] == run, "noise_multiplier"].iloc[0])
        expected = _dp_accounting_epsilon(sigma, 0.1, 400, 1e-5)
        assert value == pytest.approx(expected, rel=1e-9), run
    assert ch["dpsgd_epsilon"](2.0, 0.1, 400, 1e-5) == pytest.approx(
        _dp_accounting_epsilon(2.0, 0.1, 400, 1e-5), rel=1e-12
    )


def test_glued_epsilons_and_pld_cross_check(ch):
    for sigma in range(1, 7):
        expected = _dp_accounting_epsilon(float(sigma), 0.1, 400, 1e-5)
        assert glued(f"mem_dp_{sigma}_epsilon") == pytest.approx(expected)
    accountant = pld.PLDAccountant()
    accountant.compose(
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(
                0.1, dp_accounting.GaussianDpEvent(2.0)
            ),
            400,
        )
    )
    # The Renyi bound is an upper bound on the tighter PLD epsilon.
    assert accountant.get_epsilon(1e-5) < glued("mem_dp_2_epsilon")


def test_the_chapter_model_is_the_stored_base_run(ch):
    base = RUNS[RUNS["run"] == "base"].reset_index(drop=True)
    ranks = []
    for row in ch["canaries"].itertuples():
        totals = ch["candidate_log_likelihoods"](
            ch["predictors"]["neural"], row.prefix, row.template
        )
        ranks.append(ch["secret_rank"](totals, row.index))
    assert ranks == base["rank"].tolist()
    assert base["copies"].tolist() == list(ch["copies"])
    quality = ch["quality"]
    assert base["bits_members"][0] == pytest.approx(
        quality.loc["members", "neural"], rel=1e-9
    )
    assert base["bits_outsiders"][0] == pytest.approx(
        quality.loc["outsiders", "neural"], rel=1e-9
    )
    assert base["ssn_members"][0] == glued("mem_mlp_extracted_members")
    assert glued("mem_stored_gap") < 1e-9


@pytest.fixture(scope="module")
def script():
    sys.path.insert(0, str(ROOT / "scripts"))
    import memorization_runs

    return memorization_runs


def test_a_stored_dp_run_is_recomputed_exactly(ch, script):
    # The cheapest check that the file is what the script writes: the DP
    # run at sigma = 6, trained again from the chapter's own functions.
    namespace = script.chapter_namespace()
    again = script.run(namespace, ch["adult"], "dp-6")
    stored = RUNS[RUNS["run"] == "dp-6"].reset_index(drop=True)
    assert again["rank"].tolist() == stored["rank"].tolist()
    for column in ["bits_members", "bits_outsiders", "epsilon"]:
        np.testing.assert_allclose(again[column], stored[column], rtol=1e-9)
    for column in ["ssn_members", "ssn_outsiders", "records", "steps"]:
        assert again[column].tolist() == stored[column].tolist()


def test_dp_runs_extract_nothing_and_cost_quality():
    runs = RUNS.groupby("run").first()
    private = runs[runs["noise_multiplier"] > 0]
    assert (private["ssn_members"] == 0).all()
    assert runs.loc["base", "ssn_members"] > 50
    # Against the best non-private model (stopped after 10 epochs) every
    # DP run predicts the outsiders worse, and more noise costs more.
    best = runs.loc["epochs-10", "bits_outsiders"]
    dp = private.loc[[f"dp-{k}" for k in range(1, 7)], "bits_outsiders"]
    assert (dp > best).all() and (np.diff(dp.to_numpy()) > 0).all()
    # The model trained 40 epochs without noise overfits: worse than dp-1.
    assert runs.loc["base", "bits_outsiders"] > dp.iloc[0]
    assert (runs["ssn_outsiders"] == 0).all()


def test_dedup_leaves_one_copy_and_pseudonyms_leave_the_link():
    runs = RUNS.groupby("run").first()
    assert runs.loc["dedup", "records"] == 300 + 20
    assert runs.loc["base", "records"] == 300 + 4 * (1 + 2 + 4 + 8 + 16)
    assert (
        runs.loc["pseudonyms", "ssn_members"]
        > 0.5 * runs.loc["base", "ssn_members"]
    )


def _audit(ranks, epsilon):
    rows = []
    exposures = np.log2(10**4) - np.log2(np.asarray(ranks))
    for t in range(1, 14):
        count = int(np.sum(exposures >= t))
        bound = min(1.0, np.exp(epsilon) * 2.0**-t + 1e-5)
        rows.append(
            binomtest(count, len(ranks), bound, alternative="greater").pvalue
        )
    return np.array(rows)


def test_the_binomial_test_is_recomputed_from_the_stored_ranks(ch):
    audit = RUNS[RUNS["run"] == "audit"]
    nonprivate = RUNS[RUNS["run"] == "audit-nonprivate"]
    assert len(audit) == len(nonprivate) == 200
    assert (audit["copies"] == 1).all() and (audit["digits"] == 4).all()
    epsilon = float(audit["epsilon"].iloc[0])
    assert epsilon == pytest.approx(
        _dp_accounting_epsilon(4.0, 0.1, 400, 1e-5), rel=1e-9
    )
    p_private = _audit(audit["rank"], epsilon)
    p_nonprivate = _audit(nonprivate["rank"], epsilon)
    # Even corrected for 13 values of t, no violation under DP.
    assert p_private.min() > 0.05 / 13
    assert glued("mem_audit_min_p") == pytest.approx(p_private.min())
    assert p_nonprivate.min() < 1e-6
    assert glued("mem_nonprivate_p_value") == pytest.approx(p_nonprivate.min())
    table = ch["audits"]["audit"]
    np.testing.assert_allclose(table["p-value"], p_private)


def test_the_dial_shows_the_stored_runs(ch):
    chart = ch["exposure_dial"](ch["runs"], list(range(1, 7))).to_dict()
    grid = max(chart["datasets"].values(), key=len)
    assert len(grid) == 6 * 5
    for row in grid:
        part = RUNS[
            (RUNS["run"] == f"dp-{row['sigma']:g}")
            & (RUNS["copies"] == row["copies"])
        ]
        exposure = np.log2(part["candidates"]) - np.log2(part["rank"])
        assert row["exposure"] == pytest.approx(exposure.mean())
        assert row["epsilon"] == pytest.approx(part["epsilon"].iloc[0])


def test_chapter_spells_with_ize():
    text = (ROOT / "chapters" / f"{STEM}.ipynb").read_text()
    for british in ["memoris", "pseudonymis", "serialis", "behaviour"]:
        assert british not in text.lower(), british


# --- the chapter's assignment -------------------------------------------------


def test_the_book_s_solutions_get_full_marks(ch):
    assignments.assert_full_marks(ch, STEM)


def test_the_untouched_student_notebook_scores_zero(ch):
    assignments.assert_stubs_score_zero(ch, STEM)


def _answer(label):
    return assignments.exercise(STEM, label)["spec"].get("answer", "")


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        ("mem-ex-bound", "bound_at_10 = 2.0**-10\n", "leaves out e^epsilon"),
        ("mem-ex-bound", "smallest_t = 9\n", "t = 10"),
        ("mem-ex-bound", "delta_8_copies = 8e-5\n", "8 delta leaves out"),
        ("mem-ex-bound", "says_anything_8 = True\n", "says nothing"),
        (
            "mem-ex-rank",
            "def rank_and_exposure(totals, i):\n"
            "    totals = np.asarray(totals)\n"
            "    r = int(np.sum(totals > totals[i])) + 1\n"
            "    return r, float(np.log2(len(totals)) - np.log2(r))\n",
            "strictly more likely",
        ),
        (
            "mem-ex-noise",
            "sigma_for_1 = 1.2 * sigma_for_1\n",
            "accept up to 3% more",
        ),
        (
            "mem-ex-noise",
            "wrong_q_epsilon = right_epsilon\n",
            "q = 42.4 / 32561",
        ),
        ("mem-ex-unit", "window_sensitivity = 5.0\n", "250"),
        ("mem-ex-unit", "record_epsilon = dp_2_epsilon\n", "by 50"),
    ],
    ids=[
        "bound-no-e-eps",
        "bound-t-9",
        "bound-delta-8",
        "bound-says",
        "rank-strict",
        "noise-too-much",
        "noise-right-q",
        "unit-c",
        "unit-eps",
    ],
)
def test_a_typical_wrong_answer_fails_with_its_reason(
    ch, label, code, expected
):
    message = assignments.wrong_answer_message(
        ch, STEM, label, _answer(label) + code
    )
    assert expected in message, message


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        ("mem-ex-bound", "bound_at_10 = 2.0**-10\n", "chance"),
        (
            "mem-ex-rank",
            "def rank_and_exposure(totals, i):\n"
            "    totals = np.asarray(totals)\n"
            "    r = int(np.sum(totals > totals[i])) + 1\n"
            "    return r, float(np.log2(len(totals)) - np.log2(r))\n",
            "ties count",
        ),
        ("mem-ex-noise", "sigma_for_1 = 2.0\n", "too little noise"),
        ("mem-ex-unit", "window_sensitivity = 5.0\n", "LINE_LENGTH"),
    ],
    ids=["bound-chance", "rank-ties", "noise-too-little", "unit-c"],
)
def test_the_public_checks_catch_a_common_mistake(ch, label, code, expected):
    message = assignments.public_message(
        ch, STEM, label, _answer(label) + code
    )
    assert message is not None and expected in message, message


# --- the review's corrections -------------------------------------------------


def _prose():
    import json

    cells = json.loads((ROOT / "chapters" / f"{STEM}.ipynb").read_text())
    text = "\n".join(
        "".join(c["source"])
        for c in cells["cells"]
        if c["cell_type"] == "markdown"
    )
    return " ".join(text.split())


def test_the_overfit_model_is_compared_only_with_what_it_beats():
    # Without noise, 40 epochs predict the outsiders worse than the DP run
    # at sigma = 2 but better than those at sigma >= 3: the prose may not
    # say it does worse than the DP models.
    runs = RUNS.groupby("run").first()["bits_outsiders"]
    assert runs["dp-2"] < runs["base"] < runs["dp-3"]
    text = _prose()
    assert "does worse still" not in text
    assert "worse than the DP model at $\\sigma = 2$" in text


def test_the_window_at_the_ssn_holds_what_the_prose_says(ch):
    # At the first SSN digit the window holds the ZIP code, and the whole
    # date of birth unless the date has ten characters; at the last digit
    # it still holds the ZIP code.
    width, lengths = ch["WIDTH"], set()
    for line in ch["record_lines"](ch["adult"].iloc[:3000]):
        name, dob, zip_code, ssn = line[:-1].split(",")
        first = line[: line.rfind(",") + 1][-width:]
        assert first.endswith(f",{zip_code},")
        assert (dob in first) == (len(dob) <= 9), line
        assert zip_code in line[:-2][-width:]
        lengths.add(len(dob))
    assert 10 in lengths
    assert "but the first digit of a ten-character date" in _prose()


def test_clipping_binds_for_every_record_at_the_start(ch):
    # "C below every record's starting gradient norm, so clipping binds".
    contexts, targets, mask = ch["training_windows"](ch["lines"])
    model = ch["init_model"](np.random.default_rng(ch["TRAIN_SEED"]))
    norms = ch["record_gradient_norms"](model, contexts, targets, mask)
    assert norms.min() > glued("mem_dp_clip") == 5.0


def test_numbers_in_the_prose_are_glued_and_recomputed(ch):
    text = _prose()
    for typed in ["1.44", "42.4", "32,561", "forty", "$1/200$", "$40C$"]:
        assert typed not in text, typed
    for typed in ["$C = 5$", "$q = 0.1$", "from 1 to 6"]:
        assert typed not in text, typed
    assert glued("mem_uniform_mean") == pytest.approx(1 / np.log(2))
    assert glued("mem_expected_batch") == pytest.approx(0.1 * len(ch["lines"]))
    assert glued("mem_n_census") == len(ch["adult"]) == 32_561
    lengths = [len(line) for line in ch["record_lines"](ch["members"])]
    assert glued("mem_line_chars") == round(np.mean(lengths))
    assert glued("mem_q") == 0.1
    assert (glued("mem_sigma_min"), glued("mem_sigma_max")) == (1, 6)
    wrong_q = 0.1 * len(ch["lines"]) / len(ch["adult"])
    assert glued("mem_sol_wrong_q") == pytest.approx(
        _dp_accounting_epsilon(2.0, wrong_q, 400, 1e-5)
    )


def test_the_record_theorem_states_that_n_is_public():
    # The step divides by q n, with n the number of records it is given:
    # that is post-processing only if n is treated as public.
    text = _prose()
    assert "post-processing only if $n$ is public" in text
    assert "arXiv preprint, {cite:p}`vaultgemma2025`" in text


def test_the_sampling_check_says_which_range_it_covers(ch):
    # The canaries below the cap are the ones never inserted, with small
    # exposures: the prose must say the estimator is checked only there.
    comparison = ch["comparison"]
    below = comparison["exact"] <= ch["cap_5"] - 4
    assert glued("mem_below_max") == pytest.approx(
        comparison["exact"][below].max()
    )
    assert glued("mem_below_max") < ch["cap_5"] - 4
    assert glued("mem_n_below_unseen") == int(below["unseen"].sum())
    assert "checks the estimator only in the bulk" in _prose()


def test_the_audit_bound_is_e_eps_2_minus_t_plus_delta(ch):
    # The bound column itself, delta included (about 1% of the smallest
    # bound: too little to move a p-value much, so test it directly).
    table = ch["audits"]["audit"]
    epsilon = float(RUNS.loc[RUNS["run"] == "audit", "epsilon"].iloc[0])
    t = table.index.to_numpy(dtype=float)
    expected = np.minimum(1.0, np.exp(epsilon) * 2.0**-t + 1e-5)
    np.testing.assert_allclose(table["bound"], expected, rtol=1e-12)
    smallest = table["bound"].min() - np.exp(epsilon) * 2.0**-13
    assert smallest == pytest.approx(1e-5, rel=1e-6)

"""Tests for chapters/many-queries.ipynb: the chapter's own functions, run
in its namespace."""

import assignments
import numpy as np
import pytest

from conftest import CHAPTERS_DIR, chapter_kernel, value_error_message


@pytest.fixture(scope="module")
def mq():
    with chapter_kernel("many-queries") as notebook:
        yield notebook


# --- the tree answers ranges from whole nodes -----------------------------


@pytest.mark.parametrize("branching", [2, 3, 4, 16, 128])
def test_noiseless_tree_answers_equal_the_true_sums(mq, branching):
    mq.inject(
        "_c = np.random.default_rng(5).integers(0, 50, 100).astype(float)\n"
        "_lo, _hi = all_ranges(100)\n"
        f"_got = tree_range_answers(level_counts(_c, {branching}), "
        f"{branching}, _lo, _hi)\n"
        "_want = np.array([_c[a:b].sum() for a, b in zip(_lo, _hi)])"
    )
    assert mq.value("np.array_equal(_got, _want)")


def test_raw_tree_uses_at_most_2_b_minus_1_nodes_per_level(mq):
    # Counting nodes: variance 1 per node gives the number of nodes used.
    for b in (2, 4, 16):
        mq.inject(
            f"_h = tree_height(128, {b})\n"
            f"_used = tree_range_answers([np.ones({b}**l) for l in "
            f"range(_h + 1)], {b}, range_lo, range_hi)"
        )
        assert mq.value("_used.min()") >= 1
        assert mq.value(f"_used.max() <= 2 * ({b} - 1) * _h")


def test_budget_split_sums_to_the_total(mq):
    for ratio in (1.0, 2 ** (1 / 3), 3.0):
        got = mq.value(f"split_budget(0.7, 5, {ratio})")
        assert sum(got) == pytest.approx(0.7)
        assert all(np.diff(got) >= 0)
    assert mq.value("float(np.sum(TD_SHARES))") == pytest.approx(1.0)


# --- least squares: unbiased, Gauss-Markov, exactly ------------------------


def test_least_squares_is_unbiased_and_consistent(mq):
    # x_hat = G y with G A = I: unbiased for every x (noise has mean 0).
    for b, n in [(2, 128), (4, 50), (16, 128)]:
        mq.inject(
            f"_h = tree_height({n}, {b})\n"
            f"_eps = split_budget(1.0, _h + 1, 2 ** (1 / 3))\n"
            f"_G, _C = least_squares_tree({b}, _eps, {n})\n"
            f"_A = tree_matrix({n}, {b})"
        )
        assert mq.value("np.allclose(_G @ _A, np.eye(len(_G)))")
        assert mq.value("np.allclose(_C, _C.T)")


def test_least_squares_variance_is_at_most_the_raw_answers(mq):
    """q^T (A^T W A)^-1 q <= variance of the whole-node answer, for every
    range, every branching and both budget splits (Gauss-Markov), computed
    exactly; and q^T C q is the variance of q^T G y under the weights."""
    for b in (2, 4, 16):
        for ratio in (1.0, 2 ** (1 / 3)):
            mq.inject(
                f"_h = tree_height(128, {b})\n"
                f"_eps = split_budget(1.0, _h + 1, {ratio})\n"
                f"_G, _C = least_squares_tree({b}, _eps, 128)\n"
                "_ls = np.sum((Q @ _C) * Q, axis=1)\n"
                f"_raw = raw_tree_variances(128, {b}, _eps, range_lo, "
                "range_hi)\n"
                "_var = np.concatenate([np.full(len(v), 2 / e**2) for v, e "
                f"in zip(level_counts(np.zeros(128), {b}), _eps)])\n"
                "_direct = np.sum(((Q @ _G) ** 2) * _var, axis=1)"
            )
            assert mq.value("bool(np.all(_ls <= _raw * (1 + 1e-9)))")
            assert mq.value("np.allclose(_ls, _direct)")
            # least squares strictly helps somewhere
            assert mq.value("bool(np.any(_ls < 0.9 * _raw))")


def test_range_gram_matches_the_workload_matrix(mq):
    assert mq.value("np.array_equal(range_gram(128), Q.T @ Q)")
    assert mq.value("len(Q) == 128 * 129 // 2")


def test_strategy_error_matches_least_squares_on_the_tree(mq):
    # The matrix mechanism with the weighted tree is the least-squares tree.
    mq.inject(
        "_eps = split_budget(1.0, 3, 2 ** (1 / 3))\n"
        "_C = least_squares_covariance(16, _eps, 128)\n"
        "_S = weighted_tree(np.log(_eps), 16, 128)"
    )
    direct = mq.value("mean_workload_variance(_C, RANGE_GRAM, n_queries)")
    via_mm = mq.value("strategy_error(_S, RANGE_GRAM, n_queries, 1.0)")
    assert via_mm == pytest.approx(direct)
    identity = mq.value("strategy_error(np.eye(128), np.eye(128), 128, 1.0)")
    assert identity == pytest.approx(2.0)


# --- top-down: consistent, non-negative, integral --------------------------


def test_projection_is_the_closest_nonnegative_vector_with_the_sum(mq):
    mq.inject(
        "_r = np.random.default_rng(3)\n"
        "_v = _r.normal(0, 3, (200, 7))\n"
        "_t = _r.integers(0, 20, 200).astype(float)\n"
        "_p = project_to_total(_v, _t)"
    )
    assert mq.value("bool(np.all(_p >= 0))")
    assert mq.value("np.allclose(_p.sum(axis=1), _t)")
    # KKT: one shift theta per row; kept cells are v - theta, and clipped
    # cells have v <= theta.
    assert mq.value(
        "all(np.allclose((_v - _p)[i][_p[i] > 0], (_v - _p)[i][_p[i] > 0][0])"
        " and np.all(_v[i][_p[i] == 0] <= (_v - _p)[i][_p[i] > 0][0] + 1e-9)"
        " for i in range(200) if _t[i] > 0)"
    )


def test_top_down_tables_are_consistent_nonnegative_integers(mq):
    mq.inject(
        "_out = top_down(measure_levels(true_geo, [0.05, 0.1, 0.1], "
        "np.random.default_rng(9)))"
    )
    for level in range(3):
        assert mq.value(f"bool(np.all(_out[{level}] >= 0))")
        assert mq.value(
            f"np.array_equal(_out[{level}], np.round(_out[{level}]))"
        )
    assert mq.value(
        "np.array_equal(_out[2].reshape(100, 10, -1).sum(1), _out[1])"
    )
    assert mq.value("np.array_equal(_out[1].sum(0, keepdims=True), _out[0])")


def test_small_area_bias_is_measured_against_an_unbiased_baseline(mq):
    # Empty cells are lifted by post-processing; the raw measurement is not.
    assert mq.value('bias.loc["0", "top-down release"]') > 0.1
    assert abs(mq.value('bias.loc["0", "noisy measurement"]')) < 0.05
    assert mq.value('bias.loc["3-9", "top-down release"]') < -0.1


# --- MWEM -------------------------------------------------------------------


def test_mwem_returns_a_distribution_of_the_noisy_size(mq):
    mq.inject(
        "_s = mwem(full_counts, MARGINALS, 1.0, 5, np.random.default_rng(4))"
    )
    assert mq.value("bool(np.all(_s > 0))")
    assert mq.value("abs(_s.sum() - full_counts.sum())") < 200
    assert mq.value("MARGINALS.shape") == [1568, 3360]
    # each of the ten 3-way marginals adds up to everyone
    assert mq.value("float((MARGINALS @ full_counts).sum())") == (
        pytest.approx(10 * 32561)
    )


def test_mwem_learns_the_marginals_when_the_budget_is_large(mq):
    # With little noise, twenty rounds must move the synthetic counts far
    # from the uniform start towards the true marginals; a wrong sign or
    # a wrong update in the multiplicative weights would not.
    mq.inject(
        "_s = mwem(full_counts, MARGINALS, 100.0, 20, "
        "np.random.default_rng(6))\n"
        "_u = np.full(len(full_counts), full_counts.sum() / len(full_counts))"
        "\n_err = np.abs(MARGINALS @ _s - marg_truth).mean()\n"
        "_err0 = np.abs(MARGINALS @ _u - marg_truth).mean()"
    )
    assert mq.value("_err < 0.5 * _err0")


def test_rounding_keeps_the_sums_and_moves_each_cell_by_less_than_one(mq):
    mq.inject(
        "_r = np.random.default_rng(8)\n"
        "_t = _r.integers(0, 30, 300).astype(float)\n"
        "_f = project_to_total(_r.normal(2, 4, (300, 6)), _t)\n"
        "_w = round_to_total(_f, _t)"
    )
    assert mq.value("np.array_equal(_w.sum(axis=1), _t)")
    assert mq.value("bool(np.all(np.abs(_w - _f) < 1))")
    assert mq.value("np.array_equal(_w, np.round(_w))")


# --- bad input --------------------------------------------------------------


@pytest.mark.parametrize(
    "expression, words",
    [
        ("all_ranges(0)", "n_bins"),
        ("tree_height(10, 1)", "branching"),
        ("split_budget(0.0, 3)", "epsilon"),
        ("split_budget(1.0, 3, -1.0)", "ratio"),
        ("noisy_tree(age_counts, 2, [1.0, 1.0], rng)", "level epsilons"),
        (
            "tree_range_answers(level_counts(age_counts, 2), 2, [5], [5])",
            "lo < hi",
        ),
        ("least_squares_covariance(2, [1.0] * 3, 128)", "level epsilons"),
        (
            "strategy_error(np.ones((3, 4)), np.eye(4), 4, 1.0)",
            "full column rank",
        ),
        ("haar_matrix(100)", "power of 2"),
        (
            "project_to_total(np.zeros((2, 3)), np.array([1.0, -1.0]))",
            "non-negative total",
        ),
        ("round_to_total(np.array([-1.0, 2.0]), 1)", "non-negative"),
        ("top_down([np.zeros((2, 5)), np.zeros((7, 5))])", "equally"),
        ("marginal_queries([2, 3], 3)", "way"),
        ("mwem(full_counts, MARGINALS, 1.0, 0, rng)", "rounds"),
        ("range_error_dial(dial_table, 5.0, 0.25, 4.0, 0.25)", "start"),
        ("range_error_dial(dial_table, 1.0, 0.25, 4.0, 0.0)", "step"),
    ],
)
def test_bad_input_raises_a_clear_value_error(mq, expression, words):
    assert words in value_error_message(mq, expression)


# --- the stored dial ---------------------------------------------------------


def test_stored_dial_is_vega_lite_5_with_a_labelled_slider():
    import nbformat  # noqa: PLC0415
    import vl_convert  # noqa: PLC0415

    notebook = nbformat.read(CHAPTERS_DIR / "many-queries.ipynb", 4)
    outputs = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if "application/vnd.vegalite.v5+json" in output.get("data", {})
    ]
    assert len(outputs) == 1
    data = outputs[0]["data"]
    spec = data["application/vnd.vegalite.v5+json"]
    assert spec["$schema"].endswith("/vega-lite/v5.json")
    assert data["text/plain"] == spec["description"]
    assert len(spec["description"]) > 100
    (param,) = spec["params"]
    bind = param["bind"]
    assert param["name"] == "epsilon" and bind["input"] == "range"
    assert bind["name"].strip() == "privacy parameter ε"
    assert bind["min"] < param["value"] < bind["max"]
    vega = vl_convert.vegalite_to_vega(spec, vl_version="5.21")
    assert any(s["name"] == "epsilon" for s in vega["signals"])


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)

STEM = "many-queries"


def test_the_book_s_solutions_get_full_marks(mq):
    assignments.assert_full_marks(mq, STEM)


def test_the_untouched_student_notebook_scores_zero(mq):
    assignments.assert_stubs_score_zero(mq, STEM)


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "mq-ex-prefix",
            "prefix_errors = {n: strategy_error(S, RANGE_GRAM, n_queries, 1.0) for n, S in strategies.items()}\n",
            "with the prefix workload's",
        ),
        (
            "mq-ex-by-hand",
            "first_leaf_variance_ratio = float(np.sqrt(2 / 3))\n",
            "= 2/3 sigma^2",
        ),
        (
            "mq-ex-bias",
            "bias_zero_025 = -0.1\n",
            "clipping at zero pushes empty",
        ),
        (
            "mq-ex-mwem",
            "direct_expected_err = 32.0\n",
            "has mean absolute value 4",
        ),
    ],
    ids=[
        "range-gram",
        "sd-not-variance",
        "no-clipping-bias",
        "variance-not-abs",
    ],
)
def test_a_typical_wrong_answer_fails_with_its_reason(
    mq, label, code, expected
):
    # The book's answer first, then the wrong part over it.
    answer = assignments.exercise(STEM, label)["spec"].get("answer", "")
    message = assignments.wrong_answer_message(mq, STEM, label, answer + code)
    assert expected in message, message

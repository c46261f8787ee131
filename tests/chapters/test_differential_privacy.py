"""Tests for chapters/differential-privacy.ipynb: the chapter's own functions, run in its kernel."""

import csv
import re

import assignments
import nbformat
import numpy as np
import pytest
import support

from conftest import (
    CHAPTERS_DIR,
    DATA_DIR,
    chapter_kernel,
    value_error_message,
)

NOTEBOOK = CHAPTERS_DIR / "differential-privacy.ipynb"


def chapter_cells():
    """The chapter's cells as stored (source and metadata)."""
    return nbformat.read(NOTEBOOK, as_version=4).cells


def markdown_text():
    """All Markdown of the chapter, joined."""
    return support.markdown("differential-privacy")


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


@pytest.mark.parametrize(
    "args",
    [
        "100, 1, 0",  # epsilon = 0
        "100, 1, -0.5",  # negative epsilon
        "100, -1, 1",  # negative sensitivity
        "100, 0, 1",  # sensitivity 0: the contract is sensitivity > 0
        "float('nan'), 1, 1",  # non-finite value
        "float('inf'), 1, 1",
        "np.array([1.0, np.nan]), 1, 1",  # non-finite entry in an array
        "100, float('nan'), 1",  # non-finite sensitivity
        "100, float('inf'), 1",
        "100, 1, float('nan')",  # non-finite epsilon
        "100, 1, float('inf')",
    ],
)
def test_laplace_mechanism_rejects_bad_inputs(tb, args):
    with pytest.raises(ValueError):
        tb.inject(f"laplace_mechanism({args}, np.random.default_rng(0))")


@pytest.mark.parametrize(
    "call, error",
    [
        (
            "laplace_mechanism(100, 1, 1, 42)",
            TypeError,
        ),  # a seed, not a Generator
        ("guessing_bound(-0.1)", ValueError),
        ("guessing_bound(float('nan'))", ValueError),
        ("remove_one_neighbours(health.iloc[:0])", ValueError),  # empty table
        ("load_health('no_such_file.csv')", FileNotFoundError),
    ],
)
def test_helpers_reject_bad_input(tb, call, error):
    with pytest.raises(error):
        tb.inject(call)


# --- happy paths --------------------------------------------------------------------------


def test_laplace_mechanism_scalar_in_float_out(tb):
    assert (
        tb.value(
            "type(laplace_mechanism(5, 1, 1.0, np.random.default_rng(1))).__name__"
        )
        == "float"
    )


def test_laplace_mechanism_keeps_array_shape_and_draws_independent_noise(tb):
    assert tuple(
        tb.value(
            "laplace_mechanism(np.zeros((3, 4)), 1, 1.0, np.random.default_rng(1)).shape"
        )
    ) == (3, 4)
    assert (
        tb.value(
            "len(np.unique(laplace_mechanism(np.zeros(1000), 1, 1.0, np.random.default_rng(1))))"
        )
        == 1000
    )


def test_laplace_mechanism_is_reproducible_with_the_same_seed(tb):
    assert tb.value(
        "laplace_mechanism(7.0, 1, 0.5, np.random.default_rng(3)) == laplace_mechanism(7.0, 1, 0.5, np.random.default_rng(3))"
    )


def test_noise_is_centred_on_the_true_value(tb):
    # mean of 100,000 draws with b = 2: standard error sqrt(2) * 2 / sqrt(1e5) = 0.009; allow 5 SE.
    mean = tb.value(
        "float(np.mean(laplace_mechanism(np.full(100_000, 50.0), 1, 0.5, np.random.default_rng(11))))"
    )
    assert abs(mean - 50.0) < 0.045


def test_remove_one_neighbours_gives_one_table_per_row(tb):
    assert (
        tb.value("[len(t) for t in remove_one_neighbours(health)]") == [9] * 10
    )


def test_guessing_bound_values(tb):
    assert tb.value("float(guessing_bound(0.0))") == pytest.approx(0.5)
    assert tb.value("float(guessing_bound(np.log(3)))") == pytest.approx(0.75)


def test_guessing_bound_works_on_a_list_as_on_an_array(tb):
    """A plain list is accepted as its docstring promises (it raised
    TypeError: bad operand type for unary -)."""
    on_list = tb.value("list(guessing_bound([0.0, float(np.log(3))]))")
    assert on_list == pytest.approx([0.5, 0.75])


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
        assert (
            tb.value(f"max_log_ratio_excess(laplace_mechanism, {epsilon})")
            <= 0
        )


def test_log_ratio_test_catches_mechanisms_with_too_little_noise(tb):
    # The test above must be able to fail: half the noise doubles the log ratio,
    # and treating the scale as a standard deviation multiplies it by sqrt(2).
    assert tb.value("max_log_ratio_excess(half_scale_mechanism, 0.5)") > 0
    assert tb.value("max_log_ratio_excess(std_as_scale_mechanism, 1.0)") > 0


def test_threshold_attacker_respects_the_guessing_bound(tb):
    # 200,000 trials: standard error <= 0.0012; allow 4 SE above the bound.
    for epsilon in (0.1, 1.0, 3.0):
        success = tb.value(
            f"threshold_attack_success({epsilon}, 200_000, np.random.default_rng(5))"
        )
        bound = tb.value(f"float(guessing_bound({epsilon}))")
        assert success <= bound + 4 * 0.0012
        assert success > 0.5  # the attacker does learn something


# --- the chapter's numbers ---------------------------------------------------------------


def test_differencing_attack_reveals_kofis_row(tb):
    assert tb.value("obese_everyone - obese_without_target") == 1
    assert tb.value("health.loc[is_target, 'Name'].tolist()") == [
        "Kofi Dalton"
    ]


def test_census_count_matches_an_independent_count_of_the_csv(tb):
    # Counted here with the csv module, outside the chapter's kernel.
    with open(DATA_DIR / "adult_with_pii.csv", newline="") as handle:
        rows = csv.DictReader(handle)
        independent = sum(int(row["Age"]) >= 40 for row in rows)
    assert tb.value("true_count") == independent


def test_released_count_is_unbiased_with_laplace_spread_one_over_epsilon(tb):
    # 200,000 releases of the census count at epsilon = 0.5 (scale b = 2).
    # Mean error: SE = sqrt(2) * 2 / sqrt(2e5) = 0.0063; allow 5 SE = 0.032.
    # Mean absolute error should be b = 2: SE = 2 / sqrt(2e5) = 0.0045; allow 5 SE.
    tb.inject("""
count_releases = laplace_mechanism(
    np.full(200_000, true_count), 1, 0.5, np.random.default_rng(99)
)
count_bias = float(np.mean(count_releases) - true_count)
count_mad = float(np.mean(np.abs(count_releases - true_count)))
""")
    assert abs(tb.value("count_bias")) < 0.032
    assert abs(tb.value("count_mad") - 2.0) < 0.0225


def test_top_coded_capital_gain_is_called_a_top_code(tb):
    assert tb.value("top_code") == 99_999
    with open(DATA_DIR / "adult_with_pii.csv", newline="") as handle:
        top_coded = sum(
            row["Capital Gain"] == "99999" for row in csv.DictReader(handle)
        )
    assert tb.value("n_top_coded") == top_coded
    # Every paragraph that quotes the value says it is the top code.
    for cell in chapter_cells():
        if cell.cell_type == "markdown" and "dp_max_gain" in cell.source:
            assert "top code" in cell.source or "top-coded" in cell.source, (
                cell.id
            )
    assert "census sample" not in markdown_text()
    assert "1994 Current Population Survey" in markdown_text()


# --- the exercises' solutions run and state what holds -------------------------------


def test_freya_attack_beats_a_blind_guess_but_not_the_bound(tb):
    # 10,000 trials: SE <= 0.005, so 0.05 is 10 SE on either side.
    assert tb.value("freya_problem") == "Diabetes"
    success, blind, bound = (
        tb.value(name)
        for name in ("freya_success", "freya_blind", "freya_bound")
    )
    assert blind == pytest.approx(1 / 5)
    assert bound == pytest.approx(np.exp(2) / (np.exp(2) + 4))
    assert blind + 0.05 < success < bound - 0.05


def test_freya_second_release_does_not_depend_on_her_row(tb):
    # The solution's reason: only the first histogram depends on Freya's problem,
    # and changing her problem moves it by l1 distance 2 (so e^(2 eps)).
    tb.inject("""
freya_changed = health.copy()
freya_changed.loc[is_freya, "Problem"] = "Obesity"
without_changed = (
    freya_changed.loc[~is_freya, "Problem"].value_counts().reindex(problems, fill_value=0)
)
everyone_changed = freya_changed["Problem"].value_counts().reindex(problems, fill_value=0)
freya_same_without = bool((without_changed == without).all())
freya_l1_everyone = int((everyone_changed - everyone).abs().sum())
""")
    assert tb.value("freya_same_without")
    assert tb.value("freya_l1_everyone") == 2


def test_histogram_sensitivity_solution(tb):
    # Hand-computed: removing a row changes one cell by 1; replacing changes two cells.
    assert tb.value("l1_removed") == 1
    assert tb.value("l1_replaced") == 2


def test_clipped_sum_rejects_bad_clip_and_is_unbiased_when_nothing_is_clipped(
    tb,
):
    with pytest.raises(ValueError):
        tb.inject(
            "dp_clipped_sum(adult['Capital Gain'], 0, 1.0, "
            "np.random.default_rng(0))"
        )
    # 2,000 releases, clip 100,000 >= every value, so no bias:
    # mean error SE = sqrt(2) * 1e5 / sqrt(2000) = 3162; allow 5 SE.
    tb.inject("""
clip_rng = np.random.default_rng(8)
clip_bias = float(np.mean([
    dp_clipped_sum(adult["Capital Gain"], 100_000, 1.0, clip_rng) for _ in range(2_000)
]) - adult["Capital Gain"].sum())
""")
    assert abs(tb.value("clip_bias")) < 5 * 3162


def test_wrong_scale_solution_measures_sqrt2_epsilon(tb):
    # 1e6 draws per side; the log of a ratio of two tail shares has SE about 0.003.
    assert abs(tb.value("float(np.log(ratio))") - np.sqrt(2)) < 0.02


# --- the chapter's text holds the book's conventions ---------------------------------


def test_floating_point_warning_where_numpy_laplace_first_appears():
    cells = chapter_cells()
    first = next(
        i
        for i, c in enumerate(cells)
        if c.cell_type == "code" and "laplace" in c.source.lower()
    )
    assert cells[first].source.startswith("def laplace_mechanism(")
    warning = cells[first - 1].source
    assert "```{warning}" in warning
    assert "{cite:p}`mironov2012significance`" in warning
    assert "{doc}`dp-in-practice`" in warning
    assert "OpenDP" in warning


def test_neighbour_relation_is_add_remove_and_replace_costs_two_epsilon():
    text = markdown_text()
    definition = re.search(
        r"```\{prf:definition\}[^\n]*\n:label: dp-def-neighbours\n(.*?)```",
        text,
        re.S,
    )
    assert definition, "dp-def-neighbours is missing"
    body = definition.group(1)
    assert "adding or removing" in body and "default" in body
    assert "replace" in body and "2\\varepsilon" in body
    assert text.count("{doc}`../notation`") == 1


def test_guessing_theorem_is_about_neighbours_with_a_fifty_fifty_prior():
    text = markdown_text()
    theorem = re.search(r":label: dp-thm-guess\n(.*?)```", text, re.S).group(1)
    assert "D_0 \\simeq D_1" in theorem
    assert "50-50" in theorem
    assert "\\frac{e^{\\varepsilon}}{1 + e^{\\varepsilon}}" in theorem


def test_approximate_dp_pointer_names_the_gaussian_chapter_in_this_part():
    # (eps, delta)-DP is treated in the Gaussian chapter, in the same part of
    # the book as this chapter, and composition already uses it.
    import yaml

    text = markdown_text()
    assert "chapters on composition" not in text
    assert "later part of the book" not in text
    start = text.index("## A relaxation")
    paragraph = text[start : text.index("```{admonition} Summary", start)]
    assert "{doc}`gaussian-and-accounting`" in paragraph
    assert "same part" in paragraph and "{doc}`composition`" in paragraph
    toc = yaml.safe_load((CHAPTERS_DIR.parent / "_toc.yml").read_text())
    part = next(
        p
        for p in toc["parts"]
        if {"file": "chapters/differential-privacy"} in p["chapters"]
    )
    assert {"file": "chapters/gaussian-and-accounting"} in part["chapters"]


def test_sensitivity_zero_is_refused_by_contract_not_because_it_breaks(tb):
    # A query no one can change is private when published exactly; the
    # mechanism refuses sensitivity 0 because of the book's contract.
    text = markdown_text()
    assert (
        "would break the guarantee, including a sensitivity of 0" not in text
    )
    assert re.search(r"sensitivity of 0, which would break\s+nothing", text)
    assert "book's contract" in text
    message = value_error_message(
        tb, "laplace_mechanism(5.0, 0, 1.0, np.random.default_rng(0))"
    )
    assert "sensitivity" in message


def test_the_epsilon_factor_is_about_sets_of_outputs():
    text = markdown_text()
    assert "whatever the release, it is at most" not in text
    start = text.index("Takeaway: whatever set of outputs")
    takeaway = " ".join(text[start : start + 200].split())
    assert "at most $e^{0.5}$ times more likely" in takeaway


def test_solutions_with_code_run_as_tagged_code_cells():
    cells = chapter_cells()
    assert not any(
        "```python" in c.source for c in cells if c.cell_type == "markdown"
    )
    starts = [i for i, c in enumerate(cells) if "{solution-start}" in c.source]
    assert len(starts) >= 4
    for i in starts:
        j = i + 1
        while "{solution-end}" not in cells[j].source:
            assert cells[j].cell_type == "code" and "solution" in cells[
                j
            ].metadata.get("tags", [])
            j += 1
        assert j > i + 1, f"solution at cell {i} has no code"


def test_count_sensitivity_is_one_on_every_neighbour(tb):
    assert tb.value("int(changes['count aged 40+'].abs().max())") == 1


def test_simulated_relative_error_follows_theory(tb):
    # 2,000 releases per point: the median's relative spread is a few percent; allow 15%.
    assert (
        tb.value(
            "float((utility['median relative error'] / utility['theory'] - 1).abs().max())"
        )
        < 0.15
    )


# --- review fixes: definitions, attribution, exact figures ---------------------------


def test_clipping_solution_reports_exact_bias_and_noise(tb):
    # Recomputed here from the csv module: bias of clipping is exact, and
    # the Laplace noise of scale clip / 1 has standard deviation sqrt(2) clip.
    with open(DATA_DIR / "adult_with_pii.csv", newline="") as handle:
        gains = [int(row["Capital Gain"]) for row in csv.DictReader(handle)]
    total = sum(gains)
    table = tb.value("clipping.reset_index().to_dict('list')")
    columns = (table["clip"], table["bias / sum"], table["noise std / sum"])
    for clip, bias, std in zip(*columns, strict=True):
        clipped = sum(min(gain, clip) for gain in gains)
        assert bias == pytest.approx(clipped / total - 1, abs=1e-12)
        assert std == pytest.approx(np.sqrt(2) * clip / total, rel=1e-12)
    # 1,000 and 10,000 cut off most large gains; 100,000 clips nothing.
    assert table["bias / sum"][:2] == sorted(table["bias / sum"][:2])
    assert table["bias / sum"][0] < -0.5
    assert table["bias / sum"][2] == 0
    assert tb.value("best_clip") == 100_000


def test_median_error_at_epsilon_001_is_b_ln2(tb):
    # 200,000 releases at epsilon = 0.01 (b = 100): the sample median of
    # |error| has SE about b / sqrt(n) = 0.22; allow 2 (about 9 SE).
    simulated = tb.value(
        "float(np.median(np.abs(laplace_mechanism(np.zeros(200_000), 1, "
        "0.01, np.random.default_rng(12)))))"
    )
    assert abs(simulated - tb.value("median_error_eps001")) < 2


def test_sensitivity_is_a_supremum_and_laplace_needs_it_finite():
    text = markdown_text()
    definition = re.search(
        r":label: dp-def-sensitivity\n(.*?)```", text, re.S
    ).group(1)
    assert "\\sup_{D \\simeq D'}" in definition and "\\max" not in definition
    assert "infinite" in definition
    theorem = re.search(r":label: dp-thm-laplace\n(.*?)```", text, re.S)
    assert "0 < \\Delta f < \\infty" in theorem.group(1)


def test_definition_credits_dmns_with_replace_one_and_names_dwork_2006():
    text = markdown_text()
    assert "indistinguishability" in text
    assert "{cite:t}`dwork2006differential`" in text
    bib = (CHAPTERS_DIR.parent / "references.bib").read_text()
    for key in set(re.findall(r"\{cite:[pt]\}`([^`]+)`", text)):
        for single in key.split(","):
            assert "{" + single.strip() + "," in bib, single


def test_approximate_dp_example_states_where_delta_is_one_over_n():
    # The random-row mechanism is (0, 1/n)-DP only for neighbours whose
    # larger table has >= n rows; a one-row table and the empty table force
    # delta = 1.
    text = markdown_text()
    assert "whose larger table has at least $n$ rows" in text
    assert "no $\\delta < 1$ works" in text


def test_no_never_for_a_measured_rate():
    assert "never beats" not in markdown_text()


def test_freya_bound_holds_for_the_strongest_attacker(tb):
    # An attacker who knows every other row sees her cell's noisy count
    # 1 + L and the others' L (L ~ Lap(0, 1) per cell); the Bayes-optimal
    # guess is the largest of them (the likelihood ratio grows with the
    # count). Its success under a uniform prior, over 200,000 seeded draws
    # (SE about 0.0011), must stay below the chapter's bound, and above the
    # chapter's weaker attacker (who also has to estimate the others).
    rng = np.random.default_rng(31)
    k = tb.value("len(problems)")
    noise = rng.laplace(0.0, 1.0, size=(200_000, k))
    noise[:, 0] += 1.0
    strongest = float(np.mean(noise.argmax(axis=1) == 0))
    assert strongest < tb.value("freya_bound") - 0.1
    assert strongest > tb.value("freya_success") + 0.05


def test_every_glued_value_is_a_plain_python_value():
    # A numpy scalar is stored as "np.float64(...)" and breaks the book
    # build; every glue() value must be a plain float, int or str.
    names = []
    for cell in chapter_cells():
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook")
            if record:
                text = output["data"][
                    "application/papermill.record/text/plain"
                ]
                assert not text.startswith(("np.", "array(")), record["name"]
                names.append(record["name"])
    assert all(name.startswith("dp_") for name in names)
    assert len(names) == len(set(names)), "a glue name is used twice"


def test_record_publishing_example_keeps_epsilon_positive():
    # The book takes eps > 0 throughout; the example's delta = 1/n holds for
    # every eps > 0, and the text must not set eps = 0.
    text = markdown_text()
    start = text.index("## A relaxation")
    paragraph = " ".join(text[start : text.index("Summary", start)].split())
    assert "with $\\varepsilon = 0$ and $\\delta = 1/n$" not in paragraph
    assert "$\\delta = 1/n$ for every $\\varepsilon > 0$" in paragraph


def test_padding_makes_both_differencing_queries_large(tb):
    # The two obesity counts are small (2 and 1), so "refusing small
    # queries" would stop them; the text must say so and show the padding,
    # which keeps the difference at Kofi's row with both answers large.
    text = markdown_text()
    assert "both queries above cover most of the" not in text
    assert "pad both conditions" in text
    everyone = tb.value("int((has_obesity | is_woman).sum())")
    without = tb.value("int(((has_obesity | is_woman) & ~is_target).sum())")
    assert everyone - without == 1
    assert min(everyone, without) > tb.value("len(health)") / 2
    assert tb.value("obese_everyone") <= 2


# --- the interactive Laplace figure (a Vega-Lite 5 specification) ------------------------


@pytest.mark.parametrize(
    "args",
    [
        "0, 0.1, 3, 0.1",  # start 0
        "0.5, -0.1, 3, 0.1",  # negative low end
        "0.5, 0.1, float('inf'), 0.1",  # infinite high end
        "5, 0.1, 3, 0.1",  # start above the range
        "0.5, 0.1, 3, 0",  # step 0
        "0.5, 0.1, 3, 5",  # step wider than the range
    ],
)
def test_laplace_dial_rejects_bad_inputs(tb, args):
    value_error_message(tb, f"laplace_dial({args})")


def test_stored_dial_is_vega_lite_5_with_a_labelled_slider():
    """The stored output is a Vega-Lite 5 spec that compiles, with one
    labelled range slider for epsilon whose start is the chapter's demo
    epsilon, and a description (the text alternative) as its text/plain."""

    spec = support.stored_vega_lite("differential-privacy")
    assert spec["$schema"].endswith("/vega-lite/v5.json")
    assert len(spec["description"]) > 100
    # vl-convert compiles it with Vega-Lite 5 (as JupyterLab would draw it).
    support.assert_epsilon_slider(spec)
    (param,) = spec["params"]
    assert param["value"] == 0.5  # epsilon_demo, the static figure's


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)

STEM = "differential-privacy"


def test_the_book_s_solutions_get_full_marks(tb):
    assignments.assert_full_marks(tb, STEM)


def test_the_untouched_student_notebook_scores_zero(tb):
    assignments.assert_stubs_score_zero(tb, STEM)


SCALE_RIGHT = (
    "epsilon_count = {count}\nepsilon_sum = {total}\n"
    "more_private = {more}\nnoise_std = {std}\n"
)

# A simulation of the Freya attack with noise on the first histogram
# only, and one with noise on both (the right one), with their own seed.
FREYA = """
_gen = np.random.default_rng({seed})
_gap = (everyone - without).to_numpy(float)
_shape = ({trials}, len(problems))
_noisy = _gap + _gen.laplace(0, 1, _shape){second}
n_freya_trials = {trials}
freya_success = float(
    np.mean(np.array(problems)[_noisy.argmax(axis=1)] == freya_problem)
)
freya_blind = {blind}
"""
FREYA_ONE_HISTOGRAM = FREYA.format(
    seed=11, trials=10_000, second="", blind="1 / len(problems)"
)
FREYA_RIGHT = FREYA.format(
    seed=12,
    trials=20_000,
    second=" - _gen.laplace(0, 1, _shape)",
    blind="np.float32(0.2)",
)

NO_CLIP = """
def dp_clipped_sum(values, clip, epsilon, rng):
    values = clamp_values(values, 0, 1e300)
    return laplace_mechanism(float(values.sum()), clip, epsilon, rng)
"""
DOUBLED = """
def dp_clipped_sum(values, clip, epsilon, rng):
    total = float(clamp_values(values, 0, clip).sum())
    return laplace_mechanism(total, 2 * clip, epsilon, rng)
"""
RAISES_ON_NAN = """
def dp_clipped_sum(values, clip, epsilon, rng):
    total = float(np.clip(np.asarray(values, dtype=float), 0, clip).sum())
    return laplace_mechanism(total, clip, epsilon, rng)
"""
NAN_AS_CLIP = """
def dp_clipped_sum(values, clip, epsilon, rng):
    values = pd.to_numeric(pd.Series(list(values), dtype=object), errors="coerce")
    total = float(values.fillna(clip).clip(0, clip).sum())
    return laplace_mechanism(total, clip, epsilon, rng)
"""
NO_NOISE_ON_EMPTY = """
def dp_clipped_sum(values, clip, epsilon, rng):
    clamped = clamp_values(values, 0, clip)
    if len(clamped) == 0:
        return 0.0
    return laplace_mechanism(float(clamped.sum()), clip, epsilon, rng)
"""
DROPS_MISSING = """
def dp_clipped_sum(values, clip, epsilon, rng):
    values = pd.to_numeric(
        pd.Series(np.asarray(values, dtype=object)), errors="coerce"
    )
    total = float(values.clip(0, clip).sum())
    return laplace_mechanism(total, clip, epsilon, rng)
"""
# Right: its own Laplace draw, a float32 result and a warning on stderr.
OWN_DRAW_WITH_WARNING = """
import sys as _sys


def dp_clipped_sum(values, clip, epsilon, rng):
    print("warning: numpy's Laplace sampler is for learning", file=_sys.stderr)
    total = clamp_values(values, 0, clip).sum()
    return np.float32(total + rng.laplace(0.0, clip / epsilon))
"""


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "dp-ex-scale",
            SCALE_RIGHT.format(
                count=20, total=0.2, more='"count"', std="np.sqrt(2) * 20"
            ),
            "20 is the noise scale b; epsilon is its inverse here",
        ),
        (
            "dp-ex-scale",
            SCALE_RIGHT.format(
                count=0.05, total=0.05, more='"count"', std="np.sqrt(2) * 20"
            ),
            "the count's epsilon: the same noise, a larger sensitivity",
        ),
        (
            "dp-ex-scale",
            SCALE_RIGHT.format(count=0.05, total=5, more='"count"', std=20),
            "b itself is the scale, not the standard deviation",
        ),
        (
            "dp-ex-scale",
            SCALE_RIGHT.format(
                count=0.05, total=5, more='"sum"', std="np.sqrt(2) * 20"
            ),
            "the release with the smaller epsilon is the more private one",
        ),
        (
            "dp-ex-freya",
            FREYA_ONE_HISTOGRAM.replace("1 / len(problems)", "0.2"),
            "noise on one histogram only",
        ),
        (
            "dp-ex-freya",
            "freya_success = 1.0\n",
            "lands this far off less than once in 10,000",
        ),
        (
            "dp-ex-freya",
            "freya_blind = 1 / len(health)\n",
            "a guess among the 5 problems is right 1 in 5",
        ),
        (
            "dp-ex-freya",
            "freya_problem = 'Heart disease'\n",
            "differ only in her problem's count",
        ),
        (
            "dp-ex-histogram",
            "l1_removed = 1\nl1_replaced = 1\n",
            "a removal plus an addition",
        ),
        ("dp-ex-clipping", NO_CLIP, "clip every value to [0, clip]"),
        (
            "dp-ex-clipping",
            DOUBLED,
            "by at most clip, so at epsilon",
        ),
        (
            "dp-ex-clipping",
            RAISES_ON_NAN,
            "by the book's data rule a record never makes a mechanism raise",
        ),
        (
            "dp-ex-clipping",
            NAN_AS_CLIP,
            "a missing value becomes 0, the lower end, and adds nothing",
        ),
        (
            "dp-ex-clipping",
            NO_NOISE_ON_EMPTY,
            "an empty table is ordinary data, a sum of 0 with noise",
        ),
        (
            "dp-ex-wrong-scale",
            "true_epsilon = 1 / np.sqrt(2)\n",
            "less noise means a larger epsilon",
        ),
        (
            "dp-ex-wrong-scale",
            "true_epsilon = 2.0\n",
            "the Laplace mechanism satisfies epsilon = sensitivity / b",
        ),
    ],
    ids=[
        "scale-read-as-epsilon",
        "sum-priced-as-count",
        "scale-read-as-std",
        "larger-epsilon-called-private",
        "freya-noise-on-one-histogram",
        "freya-no-noise",
        "freya-blind-among-patients",
        "freya-wrong-problem",
        "replacement-as-removal",
        "clip-missing",
        "sensitivity-doubled",
        "raises-on-nan",
        "nan-counted-as-clip",
        "empty-without-noise",
        "inverted-scale",
        "variance-reading",
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
            "dp-ex-scale",
            SCALE_RIGHT.format(
                count=20, total=5, more='"count"', std="np.sqrt(2) * 20"
            ),
            "20 is the noise scale b",
        ),
        (
            "dp-ex-scale",
            SCALE_RIGHT.format(
                count=0.05, total=0.05, more='"count"', std=28.3
            ),
            "your two epsilons are equal",
        ),
        (
            "dp-ex-scale",
            SCALE_RIGHT.format(count=0.05, total=5, more='"count"', std=20),
            "not its standard deviation",
        ),
        (
            "dp-ex-scale",
            SCALE_RIGHT.format(count=0.05, total=5, more='"sum"', std=28.3),
            "the release with the smaller epsilon is the more private one",
        ),
        (
            "dp-ex-freya",
            "freya_blind = 1 / len(health)\n",
            "not one of the patients",
        ),
        (
            "dp-ex-freya",
            "freya_success = 1.0\n",
            "the hospital adds Laplace noise to every count",
        ),
        (
            "dp-ex-histogram",
            "l1_removed = 1\nl1_replaced = 1\n",
            "a replacement is not a removal",
        ),
        ("dp-ex-clipping", NO_CLIP, "clip every value to [0, clip]"),
        ("dp-ex-clipping", DOUBLED, "Laplace noise of scale clip / epsilon"),
        (
            "dp-ex-clipping",
            RAISES_ON_NAN,
            "a record never makes a mechanism raise",
        ),
        (
            "dp-ex-clipping",
            NAN_AS_CLIP,
            "a missing or non-numeric value becomes 0",
        ),
        (
            "dp-ex-wrong-scale",
            "true_epsilon = 1 / np.sqrt(2)\n",
            "less noise means a larger epsilon",
        ),
        (
            "dp-ex-wrong-scale",
            "true_epsilon = 1.0\n",
            "the promise of epsilon = 1 does not hold",
        ),
    ],
    ids=[
        "scale-read-as-epsilon",
        "sum-priced-as-count",
        "scale-read-as-std",
        "larger-epsilon-called-private",
        "freya-blind-among-patients",
        "freya-no-noise",
        "replacement-as-removal",
        "clip-missing",
        "sensitivity-doubled",
        "raises-on-nan",
        "nan-counted-as-clip",
        "inverted-scale",
        "promise-kept",
    ],
)
def test_the_public_checks_catch_a_common_mistake(tb, label, code, expected):
    assignments.assert_public_checks_name(tb, STEM, label, code, expected)


@pytest.mark.parametrize(
    ("label", "code"),
    [
        (
            "dp-ex-scale",
            SCALE_RIGHT.format(
                count="np.float32(0.05)",
                total="np.int64(5)",
                more='np.str_("count")',
                std=28.3,
            ),
        ),
        ("dp-ex-freya", FREYA_RIGHT),
        (
            "dp-ex-histogram",
            "l1_removed = np.int64(1)\nl1_replaced = 2.0\n",
        ),
        ("dp-ex-clipping", DROPS_MISSING),
        ("dp-ex-clipping", OWN_DRAW_WITH_WARNING),
        ("dp-ex-wrong-scale", "true_epsilon = 1.41\n"),
        ("dp-ex-wrong-scale", "true_epsilon = np.float32(np.sqrt(2))\n"),
    ],
    ids=[
        "numpy-scalars-and-3-figures",
        "freya-another-seed-and-more-trials",
        "numpy-int-and-float",
        "clipped-sum-dropping-missing-values",
        "clipped-sum-own-draw-float32-and-warning",
        "wrong-scale-3-figures",
        "wrong-scale-float32",
    ],
)
def test_a_right_answer_in_another_form_gets_full_marks(tb, label, code):
    """Accept every correct answer: NumPy scalars, 3 significant figures,
    another seed, another correct function (over [0, clip], dropping a
    missing value is the same as counting it as 0, the lower end)."""
    assignments.assert_answer_passes(tb, STEM, label, code)


# --- the book's data rule (issue 42, item 2): stated here, once -------------

# The shared helper, byte for byte as the book fixes it (CONTRIBUTING.md,
# "One contract per shared function").
BOOK_CLAMP_VALUES = '''def clamp_values(values, lower, upper):
    """The values a mechanism acts on, by the book's data rule.

    Missing or non-numeric values become `lower`, then every value is
    clamped to [lower, upper]. Data never raises here (an error that one
    record can cause is itself a release); only the bounds are checked.
    """
    if not (np.isfinite(lower) and np.isfinite(upper) and lower <= upper):
        raise ValueError(
            f"bounds must be finite with lower <= upper, got {lower}, {upper}"
        )
    if np.asarray(values).dtype.kind not in "biuf":
        # Each record on its own (a list that mixes True and "yes" would
        # otherwise become strings, and every True a missing value).
        values = pd.to_numeric(
            pd.Series(np.asarray(values, dtype=object).ravel()),
            errors="coerce",
        ).to_numpy(dtype=float, na_value=np.nan)
    values = np.asarray(values, dtype=float).ravel()
    return np.clip(np.where(np.isnan(values), lower, values), lower, upper)'''


def test_data_rule_is_stated_once_before_the_exercises():
    """The rule has one home, labelled for {ref}, in the main text (not in
    a solution), where the mechanism's contract is taught; it says why:
    an error one record can trigger is itself a release."""
    cells = chapter_cells()
    homes = [
        i
        for i, c in enumerate(cells)
        if c.cell_type == "markdown" and "(data-rule)=" in c.source
    ]
    assert len(homes) == 1
    (home,) = homes
    exercises = next(
        i for i, c in enumerate(cells) if "## Exercises" in c.source
    )
    mechanism = next(
        i
        for i, c in enumerate(cells)
        if c.source.startswith("def laplace_mechanism(")
    )
    assert mechanism < home < exercises
    rule = " ".join(cells[home].source.split())
    assert "D = \\{x\\}" in rule and "D' = \\{\\}" in rule
    for words in [
        "clamped to the nearer end",
        "becomes the lower end of the declared range",
        "belongs to no group",
        "An empty table is ordinary data",
        "Only arguments raise",
    ]:
        assert words in rule, words
    # Referred to, not restated, where it is applied.
    text = markdown_text()
    assert text.count("{ref}`data-rule`") >= 1
    assert text.count("**data rule**") == 1


def test_clamp_values_is_the_books_helper_byte_for_byte():
    cells = chapter_cells()
    (index,) = [
        i
        for i, c in enumerate(cells)
        if c.cell_type == "code" and "def clamp_values(" in c.source
    ]
    assert cells[index].source == BOOK_CLAMP_VALUES
    # Defined right before its first user, in the main text.
    first_user = next(
        i
        for i, c in enumerate(cells)
        if i != index and "clamp_values(" in c.source and c.cell_type == "code"
    )
    assert first_user == index + 1
    assert "solution" not in cells[index].metadata.get("tags", [])


def test_clamp_values_applies_rules_one_and_two(tb):
    clamp = tb["clamp_values"]
    import pandas as pd

    np.testing.assert_array_equal(
        clamp([250, -3, np.nan, "n/a", 42, None], 0, 100),
        [100, 0, 0, 0, 42, 0],
    )
    np.testing.assert_array_equal(
        clamp(pd.array([True, pd.NA], dtype="boolean"), 0, 1), [1, 0]
    )
    np.testing.assert_array_equal(
        clamp(pd.Series([1.0, np.nan]), 0, 5),
        clamp(np.array([1, np.nan]), 0, 5),
    )
    assert clamp([], 0, 1).shape == (0,)
    np.testing.assert_array_equal(clamp([np.inf, -np.inf], -2, 3), [3, -2])


@pytest.mark.parametrize(
    "bounds", ["0, float('inf')", "float('nan'), 1", "2, 1", "-np.inf, 0"]
)
def test_clamp_values_refuses_bad_bounds(tb, bounds):
    message = value_error_message(tb, f"clamp_values([1.0], {bounds})")
    assert "bounds" in message


DATA_RULE_CASES = {
    "empty": "np.array([])",
    "empty list": "[]",
    "NaN record": "np.array([3.0, np.nan])",
    "None record": "[3.0, None]",
    "non-numeric record": "pd.Series([3.0, 'n/a'], dtype=object)",
    "pandas NA": "pd.array([3, pd.NA], dtype='Int64')",
    "out of range": "np.array([3.0, 1e12])",
    "negative": "np.array([3.0, -1e12])",
}


@pytest.mark.parametrize("case", sorted(DATA_RULE_CASES))
def test_clipped_sum_follows_the_data_rule(tb, case):
    """No record makes dp_clipped_sum raise (it raised on a NaN in a NumPy
    array); a missing or non-numeric record adds nothing; an out-of-range
    one is clamped; an empty table sums to 0; noise is added as usual."""
    data = DATA_RULE_CASES[case]
    release = tb.value(
        f"float(dp_clipped_sum({data}, 10.0, 1.0, np.random.default_rng(4)))"
    )
    assert np.isfinite(release)
    expected_sum = {"empty": 0.0, "empty list": 0.0, "out of range": 13.0}
    exact = expected_sum.get(case, 3.0)
    same_noise = tb.value(
        "float(laplace_mechanism(0.0, 10.0, 1.0, np.random.default_rng(4)))"
    )
    assert release == pytest.approx(exact + same_noise, abs=1e-9)


def test_clipped_sum_is_one_function_for_arrays_and_series(tb):
    """The review found a pandas Series dropping a NaN silently while a
    NumPy array raised: two behaviours for one function."""
    tb.inject("""
mixed = [1.0, np.nan, 250.0, -7.0]
rule_as_array = dp_clipped_sum(np.array(mixed), 100.0, 1.0, np.random.default_rng(9))
rule_as_series = dp_clipped_sum(pd.Series(mixed), 100.0, 1.0, np.random.default_rng(9))
rule_as_list = dp_clipped_sum(mixed, 100.0, 1.0, np.random.default_rng(9))
""")
    assert tb.value("rule_as_array") == tb.value("rule_as_series")
    assert tb.value("rule_as_array") == tb.value("rule_as_list")


def test_clipped_sum_noise_has_scale_clip_over_epsilon(tb):
    """4,000 releases of a fixed table (clip 50, epsilon 0.5: scale 100);
    a KS test must not reject the right Laplace law at 1e-4, and rejects
    the law of a mechanism that uses clip / 2 or 2 clip."""
    tb.inject("""
scale_rng = np.random.default_rng(77)
scale_draws = np.array([
    dp_clipped_sum(np.array([10.0, 80.0, np.nan, -4.0]), 50.0, 0.5, scale_rng)
    for _ in range(4_000)
])
""")
    from scipy import stats

    draws = tb["scale_draws"]
    assert stats.kstest(draws, stats.laplace(60.0, 100.0).cdf).pvalue > 1e-4
    for wrong in (50.0, 200.0):
        law = stats.laplace(60.0, wrong).cdf
        assert stats.kstest(draws, law).pvalue < 1e-6


def test_clamp_values_reads_each_record_on_its_own(tb):
    # NumPy turns a list that mixes True and "yes" into strings; every
    # True then read as a missing value, so one non-numeric record moved
    # a thousand others (a sensitivity of 1000 where 1 was assumed).
    assert tb.value("clamp_values([True] * 3 + ['yes'], 0, 1).tolist()") == [
        1.0,
        1.0,
        1.0,
        0.0,
    ]
    assert tb.value("clamp_values([True, 2.5, None, 'x'], 0, 2).tolist()") == [
        1.0,
        2.0,
        0.0,
        0.0,
    ]

"""Tests for the functions defined in chapters/disclosure-control.ipynb.

The notebook is executed once; every test then runs code in its namespace.
Each claim of the chapter is checked here, most of them against an
independent recomputation (scipy's cdist for the linkage, an enumeration of
integer tables for the linear programs, a brute force over suppression
patterns for the integer program), and the mutation tests show that the
checks catch a wrong group-size bound, a PRAM estimator without the
inverse, a swap that breaks a margin and a linear program that drops a
constraint.
"""

import ast
import itertools

import assignments
import nbformat
import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog
from scipy.spatial.distance import cdist

from conftest import CHAPTERS_DIR, chapter_kernel, glued_value

STEM = "disclosure-control"


def glued(name):
    """The value the chapter glued under `name`, as a reader sees it."""
    return glued_value(STEM, name)


@pytest.fixture(scope="module")
def tb():
    with chapter_kernel(STEM) as notebook:
        yield notebook


def chapter_functions():
    """name -> source of every function the chapter defines at top level."""
    notebook = nbformat.read(CHAPTERS_DIR / f"{STEM}.ipynb", as_version=4)
    found = {}
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.parse(cell.source).body:
            if isinstance(node, ast.FunctionDef):
                found[node.name] = ast.get_source_segment(cell.source, node)
    return found


def mutant(tb, name, old, new, also=()):
    """A copy of the chapter's namespace in which function `name` has `old`
    replaced by `new` (and the functions `also`, which call it, are
    defined again so that they call the mutant)."""
    sources = chapter_functions()
    assert old in sources[name], f"{old!r} is not in {name}"
    namespace = dict(tb.namespace)
    exec(sources[name].replace(old, new), namespace)
    for caller in also:
        exec(sources[caller], namespace)
    return namespace


# --- property checks, run on the chapter and on its mutants ------------------


def group_size_violations(mdav_groups):
    """Groups outside [k, 2k - 1], or more than one group not of size k, on
    random files (with ties), for k = 1..7."""
    rng = np.random.default_rng(11)
    bad = []
    for _ in range(120):
        k = int(rng.integers(1, 8))
        n = int(rng.integers(k, 12 * k + 3))
        points = rng.integers(0, 4, size=(n, 3)).astype(float)
        sizes = np.bincount(mdav_groups(points, k))
        if sizes.min() < k or sizes.max() > 2 * k - 1:
            bad.append((n, k, sizes.tolist()))
        elif np.sum(sizes != k) > 1:
            bad.append((n, k, sizes.tolist()))
    return bad


def pram_bias_in_standard_errors(pram, pram_estimate):
    """Largest |mean estimate - truth| / standard error over the categories,
    over 400 PRAM draws with a non-symmetric matrix."""
    categories = ["a", "b", "c", "d"]
    truth = np.array([500, 300, 150, 50])
    values = np.repeat(categories, truth)
    transition = np.array(
        [
            [0.7, 0.2, 0.1, 0.0],
            [0.1, 0.8, 0.05, 0.05],
            [0.0, 0.3, 0.6, 0.1],
            [0.2, 0.0, 0.1, 0.7],
        ]
    )
    rng = np.random.default_rng(3)
    estimates = []
    for _ in range(400):
        after = pram(values, categories, transition, rng)
        observed = pd.Series(after).value_counts().reindex(categories)
        estimates.append(
            pram_estimate(observed.fillna(0).to_numpy(), transition)
        )
    estimates = np.array(estimates)
    error = estimates.std(axis=0, ddof=1) / np.sqrt(len(estimates))
    return float(np.max(np.abs(estimates.mean(axis=0) - truth) / error))


def broken_swap_tables(tb, swap_regions):
    """The claimed-exact tables that a swap at rate 1/2 changes."""
    census_file, key = tb["census_file"], tb["KEY"]
    regions, swapped = swap_regions(
        census_file,
        "region",
        key,
        tb["at_risk"],
        0.5,
        np.random.default_rng(5),
    )
    assert swapped.sum() > 1000
    released = census_file.assign(region=regions)
    broken = []
    for columns in (
        ["region"] + key,
        ["region", "Sex"],
        key + ["Race", "Occupation", "Target"],
    ):
        before = census_file.groupby(columns, dropna=False).size()
        after = released.groupby(columns, dropna=False).size()
        if not before.equals(after):
            broken.append(columns)
    return broken


def enumerated_bounds(values, suppressed):
    """Smallest and largest value of every suppressed cell over all
    non-negative integer tables with the published cells and margins, by
    listing the integer tables (no solver)."""
    values = np.asarray(values)
    cells = np.argwhere(suppressed)
    rows, columns = values.sum(axis=1), values.sum(axis=0)
    ranges = [range(min(rows[r], columns[c]) + 1) for r, c in cells]
    found = {tuple(cell): [np.inf, -np.inf] for cell in map(tuple, cells)}
    for choice in itertools.product(*ranges):
        table = values.copy()
        for (r, c), v in zip(cells, choice, strict=True):
            table[r, c] = v
        if np.array_equal(table.sum(axis=1), rows) and np.array_equal(
            table.sum(axis=0), columns
        ):
            for (r, c), v in zip(cells, choice, strict=True):
                bound = found[(r, c)]
                bound[0], bound[1] = min(bound[0], v), max(bound[1], v)
    return found


def lp_disagreements(cell_bounds):
    """Random small tables on which cell_bounds differs from enumeration."""
    rng = np.random.default_rng(17)
    bad = []
    for _ in range(40):
        values = rng.integers(0, 4, size=(2, 3))
        pattern = rng.random((2, 3)) < 0.6
        if not pattern.any():
            continue
        result = cell_bounds(values, pattern)
        truth = enumerated_bounds(values, pattern)
        for row in result.itertuples():
            if [row.low, row.high] != truth[(row.row, row.column)]:
                bad.append((values.tolist(), pattern.tolist()))
                break
    return bad


# --- microaggregation -------------------------------------------------------


def test_every_mdav_group_has_between_k_and_2k_minus_1_records(tb):
    assert group_size_violations(tb["mdav_groups"]) == []


@pytest.mark.parametrize(
    "old, new",
    [
        ("while len(left) >= 3 * k:", "while len(left) >= 2 * k:"),
        ("if len(left) >= 2 * k:", "if len(left) >= k:"),
    ],
)
def test_a_wrong_group_size_bound_is_caught(tb, old, new):
    namespace = mutant(tb, "mdav_groups", old, new)
    assert group_size_violations(namespace["mdav_groups"])


def test_fewer_rows_than_k_form_one_group(tb):
    labels = tb["mdav_groups"](np.arange(6.0).reshape(3, 2), 5)
    assert labels.tolist() == [0, 0, 0]


def test_census_microaggregation_is_k_anonymous_and_keeps_means(tb):
    micro, original, k = tb["micro"], tb["original"], tb["K_MICRO"]
    sizes = np.bincount(tb["micro_labels"])
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    classes = pd.DataFrame(micro).groupby([0, 1, 2]).size()
    assert classes.min() >= k
    assert np.allclose(micro.mean(axis=0), original.mean(axis=0), rtol=1e-12)
    assert np.all(micro.std(axis=0) <= original.std(axis=0))
    assert glued("sdc_micro_groups") == len(sizes)
    assert glued("sdc_micro_largest") == sizes.max()


def test_relink_rate_counts_ties_as_a_fraction(tb):
    original = np.array([[0.0, 1.0], [0.0, 1.0], [1.0, 3.0]])
    assert tb["relink_rate"](original, original) == pytest.approx(2 / 3)
    released = np.array([[1.0, 3.0], [0.0, 1.0], [0.0, 1.0]])
    assert tb["relink_rate"](released, original) == pytest.approx(1 / 6)


def independent_relink(released, original):
    """Re-link rate with scipy's cdist and exact ties."""
    mean, sd = original.mean(axis=0), original.std(axis=0)
    distance = cdist(
        (released - mean) / sd, (original - mean) / sd, "sqeuclidean"
    )
    rates = []
    for i, row in enumerate(distance):
        nearest = np.flatnonzero(
            np.isclose(row, row.min(), rtol=0, atol=1e-12)
        )
        rates.append((i in nearest) / len(nearest))
    return float(np.mean(rates))


def test_glued_relink_rates_are_recomputed(tb):
    original, micro = tb["original"], tb["micro"]
    assert glued("sdc_unmasked_relink") == pytest.approx(
        independent_relink(original, original)
    )
    assert glued("sdc_micro_relink") == pytest.approx(
        independent_relink(micro, original)
    )
    assert glued("sdc_micro_relink") <= 1 / tb["K_MICRO"]
    width = 0.1 * original.std(axis=0)
    inside = np.all(np.abs(micro - original) <= width, axis=1).mean()
    assert glued("sdc_micro_interval") == pytest.approx(inside)
    assert glued("sdc_chance_relink") == 1 / len(original)


def test_relink_never_exceeds_one_over_k_after_microaggregation(tb):
    rng = np.random.default_rng(23)
    for _ in range(30):
        k = int(rng.integers(2, 7))
        n = int(rng.integers(k, 80))
        frame = pd.DataFrame(
            rng.integers(0, 5, size=(n, 3)), columns=["a", "b", "c"]
        )
        bounds = {"a": (0, 4), "b": (0, 4), "c": (0, 4)}
        released, _ = tb["microaggregate"](frame, bounds, k)
        original = frame.to_numpy(dtype=float)
        assert tb["relink_rate"](released, original) <= 1 / k + 1e-12


def test_the_dial_grid_is_mdav_at_every_k(tb):
    grid = tb["micro_grid"]
    assert grid["k"].tolist() == list(range(2, 21))
    assert np.all(grid["relink"] <= grid["bound"] + 1e-12)
    row = grid[grid["k"] == tb["K_MICRO"]].iloc[0]
    assert row["relink"] == pytest.approx(glued("sdc_micro_relink"))
    assert row["loss"] == pytest.approx(glued("sdc_micro_sse"))
    assert grid["loss"].iloc[-1] > grid["loss"].iloc[0]
    assert glued("sdc_dial_relink_low") == pytest.approx(
        grid["relink"].iloc[0]
    )
    assert glued("sdc_dial_interval_high") == pytest.approx(
        grid["interval"].iloc[-1]
    )


def test_the_glued_dial_ends_are_recomputed(tb):
    # At k = 2 a group's mean lies exactly halfway between its two
    # members: a tie that the re-link rate must count as 1/2.
    original = tb["original"]
    for position in ("low", "high"):
        k = glued(f"sdc_dial_k_{position}")
        released, _ = tb["microaggregate"](
            tb["public"], tb["QUASI_BOUNDS"], int(k)
        )
        assert glued(f"sdc_dial_relink_{position}") == pytest.approx(
            independent_relink(released, original)
        )


def test_the_stored_dial_holds_the_grid(tb):
    notebook = nbformat.read(CHAPTERS_DIR / f"{STEM}.ipynb", as_version=4)
    specs = [
        output["data"]["application/vnd.vegalite.v5+json"]
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if "application/vnd.vegalite.v5+json" in output.get("data", {})
    ]
    assert len(specs) == 1
    rows = max(specs[0]["datasets"].values(), key=len)
    grid = tb["micro_grid"]
    assert [row["k"] for row in rows] == grid["k"].tolist()
    assert np.allclose([row["relink"] for row in rows], grid["relink"])
    assert "description" in specs[0]


def test_the_dial_text_alternative_matches_the_grid(tb):
    grid = tb["micro_grid"]
    chart = tb["microaggregation_dial"](grid, tb["K_MICRO"])
    description = chart.to_dict()["description"]
    falls = bool(np.all(np.diff(grid["relink"]) < 0))
    assert falls == ("re-link rate falls at every step" in description)
    steady = bool(
        np.all(np.diff(grid["loss"]) > 0)
        and np.all(np.diff(grid["interval"]) < 0)
    )
    assert steady == ("not at every k" not in description)
    assert "loss grows as k grows" not in description


def test_the_chapter_uses_american_spelling(tb):
    notebook = nbformat.read(CHAPTERS_DIR / f"{STEM}.ipynb", as_version=4)
    text = "\n".join(cell.source for cell in notebook.cells).lower()
    for british in ("neighbour", "favour", "modelled", "centre", "optimis"):
        assert british not in text, british


@pytest.mark.parametrize("start", [1, 21])
def test_the_dial_rejects_a_start_outside_the_grid(tb, start):
    with pytest.raises(ValueError):
        tb["microaggregation_dial"](tb["micro_grid"], start)


# --- noise, Kim, rank swapping, top-coding ----------------------------------


def test_correlated_noise_scales_the_covariance_by_one_plus_alpha(tb):
    public, bounds = tb["public"], tb["QUASI_BOUNDS"]
    original = tb["original"]
    sigma = np.cov(original, rowvar=False)
    alpha = 0.2
    rng = np.random.default_rng(8)
    covs, kims, means = [], [], []
    for _ in range(60):
        noisy = tb["correlated_noise"](public, bounds, alpha, rng)
        covs.append(np.cov(noisy, rowvar=False))
        kim = tb["kim_transform"](noisy, original, alpha)
        kims.append(np.cov(kim, rowvar=False))
        means.append(kim.mean(axis=0))
    scale = np.sqrt(np.outer(np.diag(sigma), np.diag(sigma)))
    assert (
        np.abs(np.mean(covs, axis=0) - (1 + alpha) * sigma).max()
        < 0.02 * scale.max()
    )
    assert np.allclose(
        np.diag(np.mean(covs, axis=0)) / np.diag(sigma), 1 + alpha, atol=0.03
    )
    assert np.allclose(
        np.diag(np.mean(kims, axis=0)) / np.diag(sigma), 1, atol=0.03
    )
    assert np.allclose(means, original.mean(axis=0), rtol=1e-12)


def test_slope_claims_match_attenuation(tb):
    factor = glued("sdc_noise_slope") / glued("sdc_orig_slope")
    assert factor == pytest.approx(1 / (1 + glued("sdc_alpha")), abs=0.06)
    kim = glued("sdc_kim_slope") / glued("sdc_orig_slope")
    assert kim == pytest.approx(1 / np.sqrt(1 + glued("sdc_alpha")), abs=0.06)
    assert glued("sdc_kim_mean_gain") == pytest.approx(
        glued("sdc_orig_mean_gain")
    )
    assert glued("sdc_top_relink") < glued("sdc_orig_relink")
    assert glued("sdc_top_mean_gain") < glued("sdc_orig_mean_gain")


def test_rank_swap_keeps_every_column_and_stays_in_its_window(tb):
    public, bounds = tb["public"], tb["QUASI_BOUNDS"]
    original = tb["original"]
    swapped = tb["rank_swap"](public, bounds, 5, np.random.default_rng(4))
    for column in range(3):
        assert np.array_equal(
            np.sort(swapped[:, column]), np.sort(original[:, column])
        )
    ranks = pd.Series(original[:, 0]).rank(method="first").to_numpy()
    new_ranks = pd.Series(swapped[:, 0]).rank(method="first").to_numpy()
    assert (swapped[:, 0] != original[:, 0]).mean() > 0.5
    window = 5 * len(original) / 100
    same_value_rank = pd.Series(swapped[:, 0]).map(
        pd.Series(original[:, 0]).groupby(original[:, 0]).size()
    )
    assert np.all(np.abs(new_ranks - ranks) <= window + same_value_rank.max())


def test_rank_swap_with_p_zero_changes_nothing(tb):
    swapped = tb["rank_swap"](
        tb["public"], tb["QUASI_BOUNDS"], 0, np.random.default_rng(1)
    )
    assert np.array_equal(swapped, tb["original"])


def test_comparison_rows_recompute(tb):
    comparison = tb["comparison"]
    for name in comparison.index:
        if name.startswith(("rank swap", "noise")):
            continue
        released = {
            "original": tb["original"],
            "MDAV": tb["micro"],
            "top-coding": tb["top_code"](tb["original"], 2, tb["TOP_GAIN"]),
        }[name.split(",")[0].split(" at")[0]]
        assert comparison.loc[name, "re-linked"] == pytest.approx(
            independent_relink(released, tb["original"])
        )
    noisy = [
        independent_relink(file, tb["original"])
        for file in tb["noisy_files"](kim=False)
    ]
    row = [n for n in comparison.index if n.startswith("noise,")][0]
    assert comparison.loc[row, "re-linked"] == pytest.approx(np.mean(noisy))
    assert glued("sdc_noise_relink") == pytest.approx(np.mean(noisy))
    rank = [n for n in comparison.index if n.startswith("rank")][0]
    assert comparison.loc[rank, "sd Age"] == pytest.approx(
        comparison.loc["original", "sd Age"]
    )


def test_rank_swap_relink_rate_recomputes_with_exact_ties(tb):
    # Rank-swapped values are original values, so a released value is
    # often exactly as far from two originals (31 from 30 and from 32);
    # each such tie must count 1/t, as the independent linkage counts it.
    files = [
        tb["rank_swap"](
            tb["public"],
            tb["QUASI_BOUNDS"],
            tb["RANK_P"],
            np.random.default_rng(seed),
        )
        for seed in tb["trial_seeds"]
    ]
    expected = np.mean([independent_relink(f, tb["original"]) for f in files])
    assert glued("sdc_rank_relink") == pytest.approx(expected)


def test_relink_rate_counts_equal_gaps_as_ties(tb):
    # 31 is as far from 30 as from 32; the first record ties (1/2), the
    # other two link to themselves.
    original = np.array([[30.0], [32.0], [36.0]])
    released = np.array([[31.0], [32.0], [36.0]])
    assert tb["relink_rate"](released, original) == pytest.approx(2.5 / 3)


# --- PRAM --------------------------------------------------------------------


def test_pram_estimate_is_unbiased(tb):
    assert pram_bias_in_standard_errors(tb["pram"], tb["pram_estimate"]) < 4.5


@pytest.mark.parametrize(
    "old, new",
    [
        (
            "np.linalg.solve(transition.T, np.asarray(observed_counts, float))",
            "np.asarray(observed_counts, float)",
        ),
        (
            "np.linalg.solve(transition.T, np.asarray(observed_counts, float))",
            "np.linalg.solve(transition, np.asarray(observed_counts, float))",
        ),
    ],
)
def test_a_pram_estimate_without_the_inverse_is_caught(tb, old, new):
    namespace = mutant(tb, "pram_estimate", old, new)
    bias = pram_bias_in_standard_errors(tb["pram"], namespace["pram_estimate"])
    assert bias > 4.5


def test_pram_moves_records_with_the_matrix(tb):
    categories = ["x", "y"]
    transition = np.array([[0.9, 0.1], [0.25, 0.75]])
    values = ["x"] * 20000 + ["y"] * 20000
    after = tb["pram"](
        values, categories, transition, np.random.default_rng(2)
    )
    after = np.asarray(after)
    assert (after[:20000] == "y").mean() == pytest.approx(0.1, abs=0.01)
    assert (after[20000:] == "x").mean() == pytest.approx(0.25, abs=0.01)


def test_invariant_transition_keeps_the_counts(tb):
    rng = np.random.default_rng(9)
    for _ in range(20):
        size = int(rng.integers(2, 7))
        transition = rng.dirichlet(np.ones(size), size=size)
        counts = rng.integers(0, 50, size=size).astype(float)
        counts[0] += 1
        r = tb["invariant_transition"](transition, counts)
        assert np.allclose(r.sum(axis=1), 1)
        assert np.all(r >= -1e-15)
        assert np.allclose(counts @ r, counts)


def test_marital_table_claims(tb):
    table = tb["marital_table"]
    small = glued("sdc_pram_small")
    assert small == table.index[-1] == table["true"].idxmin()
    assert glued("sdc_pram_small_after") > 10 * glued("sdc_pram_small_true")
    assert glued("sdc_invariant_keep_small") == pytest.approx(
        tb["marital_r"][-1, -1]
    )
    assert glued("sdc_invariant_keep_small") < 0.05
    error = (table["estimate"] - table["true"]).abs()
    assert glued("sdc_pram_worst") == error.idxmax()
    assert glued("sdc_pram_worst_error") == pytest.approx(error.max())
    assert glued("sdc_pram_small_est") == pytest.approx(
        tb["pram_estimate"](table["after PRAM"].to_numpy(), tb["marital_p"])[
            -1
        ],
        abs=0.05,
    )


# --- record swapping ---------------------------------------------------------


def test_swapping_keeps_the_tables_it_claims(tb):
    assert broken_swap_tables(tb, tb["swap_regions"]) == []


def test_a_swap_that_breaks_a_margin_is_caught(tb):
    namespace = mutant(
        tb,
        "swap_regions",
        "table[present].groupby(key, dropna=True)",
        "table[present].groupby(key[:1], dropna=True)",
    )
    assert ["region", "Sex", "age band"] in broken_swap_tables(
        tb, namespace["swap_regions"]
    )


def test_swapped_records_change_region_and_partners_match(tb):
    census_file, swapped = tb["census_file"], tb["swapped"]
    regions = tb["new_regions"]
    moved = regions != census_file["region"].to_numpy(dtype=object)
    assert np.array_equal(moved, swapped)
    assert glued("sdc_swapped") == swapped.sum()
    assert glued("sdc_at_risk") == tb["at_risk"].sum()
    # only at-risk records start a swap: at most one partner each
    assert swapped.sum() <= 2 * (tb["at_risk"] & swapped).sum()


def independent_outcomes(published, truth, targets):
    keys = [tuple(row) for row in published.astype(str).to_numpy()]
    counts = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    true_keys = [tuple(row) for row in truth.astype(str).to_numpy()]
    right = wrong = none = 0
    for i in np.flatnonzero(targets):
        if counts.get(true_keys[i], 0) == 1:
            if keys[i] == true_keys[i]:
                right += 1
            else:
                wrong += 1
        else:
            none += 1
    total = right + wrong + none
    return right / total, wrong / total, none / total


def test_swap_attack_table_recomputes(tb):
    census_file, published = tb["census_file"], tb["PUBLISHED"]
    seed = tb["swap_seeds"][0]
    regions, _ = tb["swap_regions"](
        census_file,
        "region",
        tb["KEY"],
        tb["at_risk"],
        0.5,
        np.random.default_rng(seed),
    )
    ours = independent_outcomes(
        census_file[published].assign(region=regions),
        census_file[published],
        tb["at_risk"],
    )
    theirs = tb["unique_match_outcomes"](
        census_file[published].assign(region=regions),
        census_file[published],
        tb["at_risk"],
    )
    assert np.allclose(ours, theirs)
    attack = tb["swap_attack"]
    assert attack.loc[0.0, "right"] == 1
    assert np.all(np.diff(attack["right"]) < 0)
    assert glued("sdc_swap_precision_half") == pytest.approx(
        attack.loc[0.5, "right when claimed"]
    )


# --- tables ------------------------------------------------------------------


def test_magnitude_table_on_a_hand_made_table(tb):
    table = pd.DataFrame(
        {
            "r": ["a", "a", "a", "b", "b", None],
            "c": ["x", "x", "y", "x", "y", "x"],
            "v": [5, 3, 0, 7, "text", 9],
        }
    )
    parts = tb["magnitude_table"](table, "r", "c", "v", (0, 6))
    assert parts["total"].to_numpy().tolist() == [[8, 0], [6, 0]]
    assert parts["contributors"].to_numpy().tolist() == [[2, 0], [1, 0]]
    assert parts["largest"].to_numpy().tolist() == [[5, 0], [6, 0]]
    assert parts["second"].to_numpy().tolist() == [[3, 0], [0, 0]]


def test_the_p_percent_rule_and_its_protection_level(tb):
    upl = tb["p_percent_upl"](
        np.array([100, 98]), np.array([60, 90]), np.array([30, 5]), 10
    )
    assert upl.tolist() == pytest.approx([6 - 10, 9 - 3])
    assert tb["dominance_sensitive"](
        np.array([100, 100]), np.array([86, 85]), 85
    ).tolist() == [
        True,
        False,
    ]


def test_primary_cells_follow_the_rules(tb):
    gains = tb["gains"]
    contributors = gains["contributors"].to_numpy()
    total, x1, x2 = (
        gains[n].to_numpy() for n in ("total", "largest", "second")
    )
    expected = (contributors > 0) & (
        (contributors < 3) | (total - x1 - x2 < 0.1 * x1)
    )
    assert np.array_equal(tb["primary"].to_numpy(), expected)
    assert glued("sdc_primary") == expected.sum()


def test_cell_bounds_agree_with_an_enumeration_of_tables(tb):
    assert lp_disagreements(tb["cell_bounds"]) == []


def test_a_linear_program_that_drops_a_constraint_is_caught(tb):
    namespace = mutant(
        tb,
        "suppressed_system",
        "return a, b, cells",
        "return a[:n_rows], b[:n_rows], cells",
        also=("cell_bounds",),
    )
    assert lp_disagreements(namespace["cell_bounds"])


def test_certify_rejects_a_wrong_bound(tb):
    values = np.array([[3, 1], [2, 4]])
    suppressed = np.ones((2, 2), dtype=bool)
    a, b, cells = tb["suppressed_system"](values, suppressed)
    witness = np.array([4, 0, 1, 5])
    dual = np.array([1, 0, 0, 0])
    assert tb["certify"](a, b, 0, 4, witness, dual, True)
    assert not tb["certify"](a, b, 0, 5, witness, dual, True)
    # another dual with the same objective proves the bound too ...
    assert tb["certify"](a, b, 0, 4, witness, np.array([2, 1, -1, -1]), True)
    # ... but one with the right objective and a violated inequality does not
    assert not tb["certify"](
        a, b, 0, 4, witness, np.array([0, -1, 2, 0]), True
    )
    # and a witness that is not a table with these margins does not either
    assert not tb["certify"](a, b, 0, 4, np.array([4, 0, 2, 4]), dual, True)
    assert not tb["certify"](a, b, 0, 4, witness, np.zeros(4, int), True)


def test_naive_patterns_are_recovered_as_the_chapter_says(tb):
    naive, by_row = tb["naive"], tb["by_row"]
    assert naive["exact"].all()
    assert glued("sdc_naive_exact") == glued("sdc_naive_cells") == len(naive)
    assert glued("sdc_row_exact") == by_row["exact"].sum() >= 1
    assert glued("sdc_row_cells") == len(by_row)
    gain_values = tb["gain_values"]
    for pattern, result in (
        (tb["primary"].to_numpy(), naive),
        (tb["row_pattern"], by_row),
    ):
        independent = linprog_bounds(gain_values, pattern)
        assert [tuple(v) for v in result[["low", "high"]].to_numpy()] == (
            independent
        )


def test_one_more_cell_per_row_loses_only_the_cells_it_says(tb):
    by_row = tb["by_row"]
    upper, lower = tb["upper_level"], tb["lower_level"]
    primary = tb["primary"].to_numpy()
    rows, columns = by_row["row"], by_row["column"]
    sensitive = by_row[primary[rows, columns]]
    held = (
        sensitive["high"]
        >= sensitive["value"] + upper[sensitive["row"], sensitive["column"]]
    ) & (
        sensitive["low"]
        <= sensitive["value"] - lower[sensitive["row"], sensitive["column"]]
    )
    assert (~held).sum() == glued("sdc_row_exact")
    assert (~held == sensitive["exact"]).all()
    notebook = nbformat.read(CHAPTERS_DIR / f"{STEM}.ipynb", as_version=4)
    text = "\n".join(cell.source for cell in notebook.cells)
    assert "The other primary cells keep their protection" in text


def linprog_bounds(values, pattern):
    """Bounds of each suppressed cell with every cell a variable (published
    ones fixed by their bounds), an independent formulation."""
    values = np.asarray(values, dtype=float)
    n_rows, n_columns = values.shape
    rows = np.kron(np.eye(n_rows), np.ones(n_columns))
    columns = np.kron(np.ones(n_rows), np.eye(n_columns))
    a = np.vstack([rows, columns])
    b = np.r_[values.sum(axis=1), values.sum(axis=0)]
    flat = values.ravel()
    bounds = [
        (0, None) if s else (v, v)
        for v, s in zip(flat, np.ravel(pattern), strict=True)
    ]
    found = []
    for j in np.flatnonzero(np.ravel(pattern)):
        goal = np.zeros(values.size)
        goal[j] = 1
        low = linprog(goal, A_eq=a, b_eq=b, bounds=bounds).fun
        high = -linprog(-goal, A_eq=a, b_eq=b, bounds=bounds).fun
        found.append((round(low), round(high)))
    return found


def protects(values, pattern, primary, upper, lower):
    bounds = linprog_bounds(values, pattern)
    cells = list(np.flatnonzero(np.ravel(pattern)))
    for s in np.flatnonzero(np.ravel(primary)):
        low, high = bounds[cells.index(s)]
        if high < values.ravel()[s] + upper.ravel()[s] - 1e-9:
            return False
        if low > values.ravel()[s] - lower.ravel()[s] + 1e-9:
            return False
    return True


def test_the_optimized_pattern_protects_and_no_cell_can_be_dropped(tb):
    values, pattern = tb["gain_values"], tb["optimal"]
    primary = tb["primary"].to_numpy()
    upper, lower = tb["upper_level"], tb["lower_level"]
    assert protects(values, pattern, primary, upper, lower)
    assert glued("sdc_all_protected") is True
    for cell in np.argwhere(pattern & ~primary):
        smaller = pattern.copy()
        smaller[tuple(cell)] = False
        assert not protects(values, smaller, primary, upper, lower)
    assert glued("sdc_optimal_cells") == pattern.sum()


def test_the_integer_program_is_optimal_on_small_tables(tb):
    rng = np.random.default_rng(31)
    for _ in range(6):
        values = rng.integers(0, 9, size=(2, 3))
        primary = np.zeros((2, 3), dtype=bool)
        primary[int(rng.integers(2)), int(rng.integers(3))] = True
        upper = np.where(primary, 2.0, 0.0)
        lower = np.minimum(upper, values)
        cost = values + 1
        chosen = tb["protect_table"](values, primary, upper, lower, cost)
        patterns = [
            np.array(bits).reshape(2, 3) | primary
            for bits in itertools.product([False, True], repeat=6)
        ]
        patterns.sort(key=lambda pattern: cost[pattern].sum())
        best = next(
            (
                cost[pattern].sum()
                for pattern in patterns
                if protects(values, pattern, primary, upper, lower)
            ),
            None,
        )
        if best is None:
            assert chosen.all()
        else:
            assert cost[chosen].sum() == best
            assert protects(values, chosen, primary, upper, lower)


def test_insider_claims(tb):
    assert glued("sdc_insider_naive_max") < 1 + tb["P_RULE"] / 100
    assert glued("sdc_insider_min") >= 1 + tb["P_RULE"] / 100
    assert glued("sdc_one_plus_p") == 1 + tb["P_RULE"] / 100


def test_count_table_claims(tb):
    counts = tb["count_values"]
    small = (counts >= 1) & (counts < 3)
    assert glued("sdc_small_cells") == small.sum()
    assert glued("sdc_kanon_people") == counts[small].sum()
    pattern = tb["count_pattern"]
    assert protects(
        counts,
        pattern,
        small,
        np.where(small, 3 - counts, 0),
        np.where(small, counts, 0),
    )
    assert glued("sdc_count_held") is True
    assert glued("sdc_count_suppressed") == pattern.sum()


# --- the data rule and bad arguments -----------------------------------------


ODD_TABLES = {
    "empty": pd.DataFrame({"a": [], "b": []}),
    "one NaN": pd.DataFrame({"a": [1.0, np.nan, 3.0, 2.0], "b": [1, 2, 3, 4]}),
    "out of range": pd.DataFrame({"a": [1, 2, 300, 4], "b": [1, 2, 3, 4]}),
    "non-numeric": pd.DataFrame({"a": [1, "x", 3, 4], "b": [1, 2, 3, 4]}),
}
ODD_BOUNDS = {"a": (0, 10), "b": (0, 10)}


@pytest.mark.parametrize("case", list(ODD_TABLES))
def test_numeric_mechanisms_follow_the_data_rule(tb, case):
    table = ODD_TABLES[case]
    rng = np.random.default_rng(0)
    micro, labels = tb["microaggregate"](table, ODD_BOUNDS, 2)
    noisy = tb["correlated_noise"](table, ODD_BOUNDS, 0.5, rng)
    swapped = tb["rank_swap"](table, ODD_BOUNDS, 50, rng)
    for released in (micro, noisy, swapped):
        assert released.shape == (len(table), 2)
        assert np.all(np.isfinite(released))
    if len(table):
        assert np.all((micro >= 0) & (micro <= 10))
        assert np.array_equal(
            np.sort(swapped[:, 0]),
            np.sort(tb["clamp_values"](table["a"], 0, 10)),
        )


@pytest.mark.parametrize(
    "values", [[], ["a", None, "b"], ["a", "zzz", 7], [np.nan]]
)
def test_pram_follows_the_data_rule(tb, values):
    after = tb["pram"](values, ["a", "b"], np.eye(2), np.random.default_rng(0))
    assert len(after) == len(values)
    expected = [v if v in ("a", "b") else "a" for v in values]
    assert list(after) == expected


def test_swapping_ignores_records_with_a_missing_key(tb):
    table = pd.DataFrame(
        {
            "region": ["1", "2", None, "3", "1"],
            "Sex": ["F", "F", "F", None, "F"],
        }
    )
    regions, swapped = tb["swap_regions"](
        table, "region", ["Sex"], [True] * 5, 1.0, np.random.default_rng(0)
    )
    assert not swapped[2] and not swapped[3]
    assert pd.isna(regions[2]) and regions[3] == "3"
    empty = table.iloc[:0]
    regions, swapped = tb["swap_regions"](
        empty, "region", ["Sex"], [], 1.0, np.random.default_rng(0)
    )
    assert len(regions) == 0


@pytest.mark.parametrize(
    "expression",
    [
        "mdav_groups(np.zeros((4, 2)), 0)",
        "mdav_groups(np.zeros((4, 2)), 2.5)",
        "mdav_groups(np.zeros((4, 2)), True)",
        "correlated_noise(public, QUASI_BOUNDS, 0, rng)",
        "correlated_noise(public, QUASI_BOUNDS, float('inf'), rng)",
        "kim_transform(original, original, -1)",
        "rank_swap(public, QUASI_BOUNDS, 101, rng)",
        "pram(['a'], ['a', 'b'], [[1, 0], [0.5, 0.6]], rng)",
        "pram(['a'], ['a', 'b'], [[1.0]], rng)",
        "swap_regions(census_file, 'region', KEY, at_risk, 1.5, rng)",
        "p_percent_upl(1, 1, 0, 0)",
        "dominance_sensitive(1, 1, 100)",
        "numeric_block(public, {'Age': (5, 1)})",
    ],
)
def test_bad_arguments_raise_value_error(tb, expression):
    with pytest.raises(ValueError):
        tb.value(expression)


@pytest.mark.parametrize(
    "expression",
    [
        "correlated_noise(public, QUASI_BOUNDS, 0.1, 7)",
        "rank_swap(public, QUASI_BOUNDS, 5, None)",
        "pram(['a'], ['a'], [[1.0]], 'seed')",
        "swap_regions(census_file, 'region', KEY, at_risk, 0.5, 1)",
    ],
)
def test_an_rng_that_is_not_a_generator_raises_type_error(tb, expression):
    with pytest.raises(TypeError):
        tb.value(expression)


def test_dob_and_zip_single_out_almost_everyone(tb):
    adult = tb["adult"]
    unique = ~adult.duplicated(["DOB", "Zip"], keep=False)
    assert glued("sdc_dob_zip_unique") == pytest.approx(unique.mean())
    assert glued("sdc_dob_zip_unique") > 0.99


# --- the chapter's assignment (graded exercises) -------------------------------


def test_the_book_s_solutions_get_full_marks(tb):
    assignments.assert_full_marks(tb, STEM)


def test_the_untouched_student_notebook_scores_zero(tb):
    assignments.assert_stubs_score_zero(tb, STEM)


WRONG_ANSWERS = [
    (
        "sdc-ex-rules",
        "def dominance_rule(contributions, n, k):\n"
        "    v = np.sort(np.asarray(contributions, float))[::-1]\n"
        "    return bool(v[:n].sum() > k * v.sum())\n\n\n"
        "def p_rule(contributions, p):\n"
        "    v = np.sort(np.asarray(contributions, float))[::-1]\n"
        "    return bool(v[2:].sum() < p / 100 * v[0])\n",
        "k percent",
    ),
    (
        "sdc-ex-rules",
        "def dominance_rule(contributions, n, k):\n"
        "    v = np.sort(np.asarray(contributions, float))[::-1]\n"
        "    return bool(v[:n].sum() > k / 100 * v.sum())\n\n\n"
        "def p_rule(contributions, p):\n"
        "    v = np.sort(np.asarray(contributions, float))[::-1]\n"
        "    return bool(v[1:].sum() < p / 100 * v[0])\n",
        "T - x1 - x2",
    ),
    (
        "sdc-ex-interval",
        "def suppressed_interval(table, suppressed, cell):\n"
        "    value = float(np.asarray(table)[tuple(cell)])\n"
        "    return value, value\n",
        "only the published cells and the margins are fixed",
    ),
    (
        "sdc-ex-interval",
        "def suppressed_interval(table, suppressed, cell):\n"
        "    table = np.asarray(table)\n"
        "    row = table[cell[0]]\n"
        "    hidden = np.asarray(suppressed)[cell[0]]\n"
        "    return 0.0, float(row[hidden].sum())\n",
        "row and column totals",
    ),
    (
        "sdc-ex-kim",
        "kim_c = 1 / np.sqrt(1.5)\nnoise_factor = 1 / np.sqrt(1.5)\n"
        "kim_factor = 1 / np.sqrt(1.5)\n",
        "that is the factor after Kim's transformation",
    ),
    (
        "sdc-ex-kim",
        "kim_c = 1 / np.sqrt(1.5)\nnoise_factor = 1 / 1.5\nkim_factor = 1.0\n",
        "not their covariance with income",
    ),
]


@pytest.mark.parametrize("label, code, reason", WRONG_ANSWERS)
def test_a_typical_wrong_answer_fails_with_its_reason(tb, label, code, reason):
    message = assignments.wrong_answer_message(tb, STEM, label, code)
    assert reason in message


PUBLIC_CATCHES = [
    (
        "sdc-ex-rules",
        "def dominance_rule(contributions, n, k):\n"
        "    v = np.sort(np.asarray(contributions, float))[::-1]\n"
        "    return bool(v[:n].sum() > k / 100 * v.sum())\n\n\n"
        "def p_rule(contributions, p):\n"
        "    v = np.sort(np.asarray(contributions, float))[::-1]\n"
        "    return bool(v[1:].sum() < p / 100 * v[0])\n",
        "rest T - x1 - x2 is 0",
    ),
    (
        "sdc-ex-rules",
        "def dominance_rule(contributions, n, k):\n"
        "    return bool(sum(contributions[:n]) > k / 100 * sum(contributions))"
        "\n\n\n"
        "def p_rule(contributions, p):\n"
        "    v = np.sort(np.asarray(contributions, float))[::-1]\n"
        "    return bool(v[2:].sum() < p / 100 * v[0])\n",
        "wherever they stand",
    ),
    (
        "sdc-ex-kim",
        "kim_c = 1 / 1.5\nnoise_factor = 1 / 1.5\nkim_factor = 1 / 1.5\n",
        "grow with its square",
    ),
]


@pytest.mark.parametrize("label, code, reason", PUBLIC_CATCHES)
def test_the_public_checks_catch_a_common_mistake(tb, label, code, reason):
    message = assignments.public_message(tb, STEM, label, code)
    assert message and reason in message

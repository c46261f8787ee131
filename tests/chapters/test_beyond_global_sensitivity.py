"""Tests for chapters/beyond-global-sensitivity.ipynb: the chapter's own
functions, run in its namespace."""

import assignments
import numpy as np
import pytest

from conftest import chapter_kernel, value_error_message


@pytest.fixture(scope="module")
def tb():
    with chapter_kernel("beyond-global-sensitivity") as notebook:
        yield notebook


# --- brute force, independent of the chapter's formulas ------------------


def lower_median(table):
    """x_(ceil(n/2)) of a sorted tuple; 0 for the empty table."""
    return float(table[(len(table) + 1) // 2 - 1]) if table else 0.0


def brute_local(table, upper):
    m = lower_median(table)
    moved = [
        lower_median(tuple(sorted(table + (v,)))) for v in range(upper + 1)
    ]
    moved += [
        lower_median(table[:i] + table[i + 1 :]) for i in range(len(table))
    ]
    return max(abs(v - m) for v in moved)


def brute_gaps(table, upper, k_max):
    """max LS over all tables within k add/remove steps, k = 0..k_max."""
    seen, frontier = {table}, {table}
    best = [brute_local(table, upper)]
    for _ in range(k_max):
        grown = {
            tuple(sorted(t + (v,))) for t in frontier for v in range(upper + 1)
        }
        shrunk = {t[:i] + t[i + 1 :] for t in frontier for i in range(len(t))}
        frontier = (grown | shrunk) - seen
        seen |= frontier
        best.append(
            max([best[-1]] + [brute_local(t, upper) for t in frontier])
        )
    return best


def brute_smooth(table, upper, beta):
    # A^(k) = upper once k >= n + 1, and exp(-beta k) * upper only falls
    # from there, so k up to n + 1 suffices for the maximum.
    gaps = brute_gaps(table, upper, len(table) + 1)
    return max(np.exp(-beta * k) * g for k, g in enumerate(gaps))


def random_tables(seed, count, upper, max_size):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        size = int(rng.integers(1, max_size + 1))
        yield tuple(sorted(rng.integers(0, upper + 1, size).tolist()))


# --- local and smooth sensitivity ----------------------------------------


def test_local_sensitivity_matches_every_neighbour(tb):
    for table in random_tables(1, 40, 9, 7):
        tb.inject(f"_t = {list(table)}")
        got = tb.value("local_sensitivity_median(_t, 9)")
        assert got == brute_local(table, 9), table


def test_gaps_within_k_steps_match_breadth_first_search(tb):
    for table in random_tables(2, 25, 6, 5):
        tb.inject(f"_t = {list(table)}")
        got = tb.value("median_gap_within(_t, 6, np.arange(4)).tolist()")
        assert got == brute_gaps(table, 6, 3), table


@pytest.mark.parametrize("beta", [0.1, 0.5, 1.5])
def test_smooth_sensitivity_matches_brute_force(tb, beta):
    for table in random_tables(3, 12, 5, 4):
        tb.inject(f"_t = {list(table)}")
        got = tb.value(f"smooth_sensitivity_median(_t, 5, {beta})")
        assert got == pytest.approx(brute_smooth(table, 5, beta), rel=1e-12)


def test_smooth_sensitivity_is_smooth_between_neighbours(tb):
    # S(D) <= e^beta S(D') for every neighbour D' (one value added at any
    # point of the grid, or one removed), and S >= LS.
    beta = 0.3
    for table in random_tables(4, 15, 8, 6):
        tb.inject(f"_t = {list(table)}")
        s = tb.value(f"smooth_sensitivity_median(_t, 8, {beta})")
        assert s >= tb.value("local_sensitivity_median(_t, 8)")
        neighbours = [sorted(table + (v,)) for v in range(9)]
        neighbours += [table[:i] + table[i + 1 :] for i in range(len(table))]
        for other in neighbours:
            if not other:
                continue
            tb.inject(f"_o = {list(other)}")
            s_other = tb.value(f"smooth_sensitivity_median(_o, 8, {beta})")
            assert s <= np.exp(beta) * s_other * (1 + 1e-12)


def test_cauchy_sliding_constant_is_exact(tb):
    # The proof's alpha = 2 sinh(eps/4): the largest log density ratio of
    # the standard Cauchy under a shift by alpha is eps/2, no more, no less.
    for eps in (0.1, 1.0, 3.0):
        alpha = 2 * np.sinh(eps / 4)
        z = np.linspace(-50, 50, 2_000_001)
        ratio = np.log((1 + (z + alpha) ** 2) / (1 + z**2))
        assert ratio.max() == pytest.approx(eps / 2, rel=1e-6)


def test_smooth_median_scale_and_clamp(tb):
    # 20,000 draws: the median |noise| of a Cauchy of scale s is s; the
    # table's bound is large enough that the clamp to [0, 125] is rarely hit.
    tb.inject(
        "_t = [20, 30, 40, 50, 60]\n"
        "_s = smooth_sensitivity_median(_t, 125, 0.5) / (2 * np.sinh(0.25))\n"
        "_d = smooth_median(_t, 125, 1.0, np.random.default_rng(5), 20_000)"
    )
    draws = np.array(tb.value("_d.tolist()"))
    scale = tb.value("_s")
    assert draws.min() >= 0 and draws.max() <= 125
    inner = np.median(np.abs(draws - 40))
    assert inner == pytest.approx(scale, rel=0.05)


# --- propose-test-release ------------------------------------------------


def test_ptr_distance_hand_example(tb):
    # Values x_1..x_6 = 0,10,10,10,10,20 in [0, 100], bound 5. The window
    # after k steps is x_ceil((5-k)/2) .. x_(floor((6+k)/2)+1):
    # k = 0: x_3..x_4 -> 0; k = 1: x_2..x_4 -> 0; k = 2: x_2..x_5 -> 0;
    # k = 3: x_1..x_5 -> 10 - 0 = 10 > 5 (remove three 10s: 0, 10, 20 has
    # local sensitivity 10). Distance 3.
    got = tb.value("ptr_distance_median([0, 10, 10, 10, 10, 20], 100, 5)")
    assert got == 3


def test_ptr_release_probability_formula(tb):
    # distance 4, eps_test 0.5, delta e^-1: T = 2, margin 0.5*4 - 1 = 1 ->
    # 1 - e^-1 / 2; distance 0: margin -1 -> e^-1 / 2.
    got = tb.value("ptr_release_probability(4, 0.5, np.exp(-1))")
    assert got == pytest.approx(1 - np.exp(-1) / 2, rel=1e-12)
    got = tb.value("ptr_release_probability(0, 0.5, np.exp(-1))")
    assert got == pytest.approx(np.exp(-1) / 2, rel=1e-12)


def test_ptr_measured_release_rate_matches_formula(tb):
    # Hand example above (distance 3) at total eps 1 (test eps 0.5) and
    # delta 0.3: T = ln(1/0.3)/0.5 = 2.41, margin 0.5*3 - 1.204 = 0.296.
    # 40,000 runs: standard error 0.0019; 5 s.e. is a fixed-seed margin.
    tb.inject(
        "_r = ptr_median([0, 10, 10, 10, 10, 20], 100, 5, 1.0, 0.3, "
        "np.random.default_rng(9), 40_000)"
    )
    measured = tb.value("float(np.mean(~np.isnan(_r)))")
    expected = 1 - 0.5 * np.exp(-(0.5 * 3 - np.log(1 / 0.3)))
    assert measured == pytest.approx(expected, abs=5 * 0.0019)
    released = np.array(tb.value("_r[~np.isnan(_r)].tolist()"))
    # released values are the median 10 plus Laplace(5 / 0.5): median |x|
    # of Laplace(b) is b ln 2.
    assert np.median(np.abs(released - 10)) == pytest.approx(
        10 * np.log(2), rel=0.05
    )


# --- sample-and-aggregate ------------------------------------------------


def test_clipped_block_mean_has_the_stated_sensitivity(tb):
    # Add or remove one person: only their block's estimate changes, so the
    # clipped mean moves by at most (high - low) / m; with blocks of about
    # three people an outlier swings a block's slope across the whole
    # range, so the bound is nearly reached.
    tb.inject(
        """
        _rng = np.random.default_rng(12)
        _ids = np.arange(24)
        _x = _rng.integers(18, 80, 24).astype(float)
        _y = _rng.integers(10, 60, 24).astype(float)
        _h = keyed_hashes(_ids, b"k" * 16)
        def _agg(ids_h, x, y):
            b = block_of(ids_h, 8)
            return clipped_block_mean(block_slopes(x, y, b, 8), (-1, 1))
        _base = _agg(_h, _x, _y)
        _moves = []
        for _v in range(50):
            _hn = keyed_hashes(np.append(_ids, 1000 + _v), b"k" * 16)
            for _px, _py in ((18.0, 168.0), (80.0, 0.0), (50.0, 40.0)):
                _moves.append(abs(_agg(_hn, np.append(_x, _px),
                                       np.append(_y, _py)) - _base))
        for _i in range(24):
            _keep = np.arange(24) != _i
            _moves.append(abs(_agg(_h[_keep], _x[_keep], _y[_keep]) - _base))
        """
    )
    moves = np.array(tb.value("_moves"))
    assert moves.max() <= 2 / 8 + 1e-12
    assert moves.max() > 0.5 * 2 / 8  # the bound is nearly reached


def test_keyed_blocks_change_only_for_the_person(tb):
    tb.inject(
        "_a = block_of(keyed_hashes(['p1', 'p2', 'p3'], b'x' * 16), 7)\n"
        "_b = block_of(keyed_hashes(['p1', 'p3'], b'x' * 16), 7)"
    )
    a, b = tb.value("_a.tolist()"), tb.value("_b.tolist()")
    assert [a[0], a[2]] == b


def test_aggregate_noise_scale(tb):
    # 5 estimates in (-1, 1): sensitivity 2/5, at eps 0.5 scale 0.8; the
    # standard deviation of Laplace(0.8) is 0.8 * sqrt(2).
    tb.inject(
        "_g = np.random.default_rng(3)\n"
        "_o = [aggregate_blocks([0.1, 0.2, 5, -5, 0], (-1, 1), 0.5, _g) "
        "for _ in range(40_000)]"
    )
    out = np.array(tb.value("_o"))
    assert out.mean() == pytest.approx(0.06, abs=0.02)
    assert out.std() == pytest.approx(0.8 * np.sqrt(2), rel=0.03)


# --- the attack -----------------------------------------------------------


def test_attack_beats_the_dp_ceiling_as_computed(tb):
    rate = tb.value("attack_rate")
    exact = tb.value("float(exact_rate)")
    bound = tb.value("float(dp_bound)")
    assert rate == pytest.approx(exact, abs=4 * np.sqrt(0.25 / 20_000))
    assert exact > bound + 0.05
    assert bound == pytest.approx(np.e / (1 + np.e))


# --- bad input -------------------------------------------------------------


@pytest.mark.parametrize(
    "expression, fragment",
    [
        ("smooth_sensitivity_median([1, 2], 10, 0)", "beta"),
        ("smooth_sensitivity_median([1, 2], 10, -1)", "beta"),
        ("smooth_sensitivity_median([], 10, 0.5)", "empty"),
        ("smooth_sensitivity_median([1, 20], 10, 0.5)", "range"),
        ("smooth_median([1, 2], 10, 0, np.random.default_rng(1))", "epsilon"),
        ("smooth_median([1, 2], 10, -1, np.random.default_rng(1))", "epsilon"),
        ("local_sensitivity_median([], 10)", "empty"),
        (
            "ptr_median([1, 2], 10, 1, 1.0, 0, np.random.default_rng(1))",
            "delta",
        ),
        (
            "ptr_median([1, 2], 10, 1, 1.0, 1, np.random.default_rng(1))",
            "delta",
        ),
        (
            "ptr_median([1, 2], 10, 1, 1.0, 1.5, np.random.default_rng(1))",
            "delta",
        ),
        (
            "ptr_median([1, 2], 10, 1, 0, 0.1, np.random.default_rng(1))",
            "epsilon",
        ),
        ("ptr_median([], 10, 1, 1.0, 0.1, np.random.default_rng(1))", "empty"),
        ("ptr_release_probability(3, 0.5, 0)", "delta"),
        ("ptr_distance_median([1, 2], 10, 10)", "below upper"),
        ("ptr_release_probability(3, 0, 0.1)", "epsilon"),
        (
            "aggregate_blocks([0.1], (-1, 1), 0, np.random.default_rng(1))",
            "epsilon",
        ),
        (
            "aggregate_blocks([], (-1, 1), 1, np.random.default_rng(1))",
            "non-empty",
        ),
        ("clipped_block_mean([0.1], (1, -1))", "low < high"),
        ("block_of(np.array([1], dtype=np.uint64), 0)", "n_blocks"),
    ],
)
def test_bad_input_is_rejected(tb, expression, fragment):
    assert fragment in value_error_message(tb, expression)


def test_rng_must_be_a_generator(tb):
    with pytest.raises(TypeError):
        tb.value("smooth_median([1, 2], 10, 1.0, 5)")
    with pytest.raises(TypeError):
        tb.value("ptr_median([1, 2], 10, 1, 1.0, 0.1, 5)")


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)

STEM = "beyond-global-sensitivity"


def test_the_book_s_solutions_get_full_marks(tb):
    assignments.assert_full_marks(tb, STEM)


def test_the_untouched_student_notebook_scores_zero(tb):
    assignments.assert_stubs_score_zero(tb, STEM)


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "bgs-ex-attack-epsilon",
            "ceiling_small = np.exp(0.1) / (1 + np.exp(0.1))\n"
            "rate_small = ceiling_small\n",
            "that is the ceiling; noise scaled to the local sensitivity",
        ),
        (
            "bgs-ex-brute-force",
            "def brute_gaps(table, upper, k_max):\n"
            "    # forgets removals: only adds values\n"
            "    def local(t):\n"
            "        m = median_of(t)\n"
            "        return max(\n"
            "            abs(median_of(sorted(t + (v,))) - m)\n"
            "            for v in range(upper + 1)\n"
            "        )\n"
            "    seen, frontier, best = {table}, {table}, [local(table)]\n"
            "    for _ in range(k_max):\n"
            "        frontier = {\n"
            "            tuple(sorted(t + (v,)))\n"
            "            for t in frontier for v in range(upper + 1)\n"
            "        } - seen\n"
            "        seen |= frontier\n"
            "        best.append(max([best[-1]] + [local(t) for t in frontier]))\n"
            "    return best\n",
            "a neighbour adds any value 0..6 or removes any one person",
        ),
        (
            "bgs-ex-ptr-bound",
            "bound_table = pd.DataFrame({\n"
            "    b: {\n"
            "        'distance': ptr_distance_median(gainers, GAIN_UPPER, b),\n"
            "        'release prob.': ptr_release_probability(\n"
            "            ptr_distance_median(gainers, GAIN_UPPER, b), 0.5, 1e-6\n"
            "        ),\n"
            "        'median |noise|': b * np.log(2),\n"
            "    }\n"
            "    for b in (10, 100, 1000, 5000)\n"
            "}).T\n",
            "the test spends half of eps = 1, so the noise has only 0.5",
        ),
        (
            "bgs-ex-sa-hours",
            "hour_medians = np.array([\n"
            "    median_of(hours[block_of(hashes_by_key[0], 100) == j])\n"
            "    for j in range(100)\n"
            "])\n"
            "sa_err = 168 * np.log(2) / 1000\n"
            "em_err = 0.0\n",
            "the noise has scale 168 / (100 eps)",
        ),
        (
            "bgs-ex-order-blocks",
            "def _slopes(x, y):\n"
            "    blocks = (np.arange(len(x)) * 100) // len(x)\n"
            "    return block_slopes(x, y, blocks, 100)\n"
            "changed_order = int(np.sum(\n"
            "    _slopes(age_float, hours)\n"
            "    != _slopes(age_float[:-1], hours[:-1])\n"
            "))\n"
            "changed_keyed = 1\n",
            "that removes the last person; remove the first",
        ),
    ],
)
def test_a_typical_wrong_answer_fails_with_its_reason(
    tb, label, code, expected
):
    message = assignments.wrong_answer_message(tb, STEM, label, code)
    assert expected in message, message


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_sampled_checks_accept_correct_answers_at_other_seeds(tb, seed):
    attack = (
        f"_g = np.random.default_rng({seed})\n"
        "_s = _g.random(20_000) < 0.5\n"
        "_c = np.where(_s, worlds['with'][0], worlds['without'][0])\n"
        "_w = np.where(_s, worlds['with'][1], worlds['without'][1])\n"
        "_y = _c + _g.laplace(0.0, _w / 0.1)\n"
        "rate_small = float(np.mean(guesses_with(_y, worlds, 0.1) == _s))\n"
        "ceiling_small = float(np.exp(0.1) / (1 + np.exp(0.1)))\n"
    )
    blocks = (
        f"_g = np.random.default_rng({seed})\n"
        "_b = block_of(hashes_by_key[0], 100)\n"
        "hour_medians = np.array(\n"
        "    [median_of(hours[_b == j]) for j in range(100)]\n"
        ")\n"
        "_r = np.array(\n"
        "    [aggregate_blocks(hour_medians, (0, 168), 1.0, _g)"
        " for _ in range(500)]\n"
        ")\n"
        "_e = private_quantile(hours, 0.5, np.arange(169), 1.0, _g, 500)\n"
        "sa_err = float(np.median(np.abs(_r - median_of(hours))))\n"
        "em_err = float(np.median(np.abs(_e - median_of(hours))))\n"
    )
    for label, code in (
        ("bgs-ex-attack-epsilon", attack),
        ("bgs-ex-sa-hours", blocks),
    ):
        found = assignments.exercise(STEM, label)
        assert assignments.failure(tb, found, code) is None, label

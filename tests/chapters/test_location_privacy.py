"""Tests for the functions defined in chapters/location-privacy.ipynb.

The notebook is executed once (about ten seconds); every test then runs code
in its kernel.
"""

import pytest
from conftest import chapter_kernel, value_error_message


@pytest.fixture(scope="module")
def tb():
    with chapter_kernel("location-privacy") as notebook:
        notebook.inject(
            '''
            def _raises_type_error(call):
                """True if call() raises TypeError."""
                try:
                    call()
                except TypeError:
                    return True
                return False


            def _reciprocity_violations(xy, boxes, k):
                """Users whose region holds < k users, or holds a user
                whose region differs, or does not hold the user."""
                xy = np.asarray(xy)
                box = boxes[["x0", "y0", "x1", "y1"]].to_numpy()
                bad = []
                for i, (x0, y0, x1, y1) in enumerate(box):
                    inside = ((xy[:, 0] >= x0) & (xy[:, 0] < x1)
                              & (xy[:, 1] >= y0) & (xy[:, 1] < y1))
                    same = np.all(box[inside] == box[i], axis=1)
                    if (not inside[i] or inside.sum() < k
                            or not same.all()):
                        bad.append(i)
                return bad
            ''',
            pop=True,
        )
        yield notebook


# --- unicity ---------------------------------------------------------------


def test_unicity_on_hand_made_traces(tb):
    # Persons 0 and 1 share their single point; person 2's point and both
    # of person 3's are their own: with one known point two people in four
    # are unique, whatever point is drawn. With two points, only person 3
    # (the only one with two points) counts, and is unique.
    tb.inject(
        """
        hand = pd.DataFrame({
            "person": [0, 1, 2, 3, 3],
            "hour": [5, 5, 5, 6, 7],
            "x_km": [0.2, 0.4, 3.5, 0.2, 0.2],
            "y_km": [0.2, 0.3, 0.5, 0.2, 0.2],
        })
        """,
        pop=True,
    )
    one = "unicity(hand, 1, 1.0, 1, np.random.default_rng(0))"
    two = "unicity(hand, 2, 1.0, 1, np.random.default_rng(0))"
    assert tb.value(one) == pytest.approx(2 / 4)
    assert tb.value(two) == 1.0
    # Slots of 24 hours merge hours 5, 6 and 7: person 3's points become
    # the point that persons 0 and 1 share, so only person 2 is unique.
    assert tb.value(
        "unicity(hand, 1, 1.0, 24, np.random.default_rng(0))"
    ) == pytest.approx(1 / 4)
    message = value_error_message(tb, "unicity(hand, 3, 1.0, 1, rng)")
    assert "nobody has 3" in message
    message = value_error_message(tb, "unicity(hand, 0, 1.0, 1, rng)")
    assert "n_points" in message
    message = value_error_message(tb, "unicity(hand, 1, 0.0, 1, rng)")
    assert "positive" in message


def test_unicity_grows_with_points_and_matches_the_prose(tb):
    shares = tb.value("unicity_table.iloc[:, 0].tolist()")
    assert shares == sorted(shares)
    # The prose says four points single out most people.
    assert tb.value("unicity_table.iloc[3, 0]") > 0.9


def test_the_example_trace_matches_only_its_owner(tb):
    assert tb.value("matching") == [tb.value("target")]


# --- spatial cloaking ------------------------------------------------------


def test_naive_quadtree_is_not_reciprocal_on_a_hand_made_city(tb):
    # City [0, 4)^2, k = 2. Users 0 and 1 share the 0.25 km square at
    # (0.5, 0.5); user 2 is alone in [1, 2)^2 and gets [0, 2)^2, which holds
    # three users but is reported by user 2 only; user 3 gets the city.
    tb.inject(
        """
        four = np.array([[0.5, 0.5], [0.7, 0.7], [1.5, 1.5], [3.0, 3.0]])
        hand_naive = quadtree_regions(four, 2, size=4.0)
        """,
        pop=True,
    )
    assert tb.value("hand_naive['side'].tolist()") == [0.25, 0.25, 2.0, 4.0]
    assert tb.value("cloak_anonymity_sets(hand_naive).tolist()") == [
        2,
        2,
        1,
        1,
    ]
    # Each square does hold at least k users: the naive scheme keeps its
    # own promise and still exposes users 2 and 3.
    tb.inject(
        """
        hand_boxes = hand_naive.assign(
            x1=hand_naive.x0 + hand_naive.side,
            y1=hand_naive.y0 + hand_naive.side,
        )
        """,
        pop=True,
    )
    assert tb.value("_reciprocity_violations(four, hand_boxes, 2)") == [2, 3]
    assert (
        tb.value(
            "_reciprocity_violations(four, kd_regions(four, 2, size=4.0), 2)"
        )
        == []
    )


def test_naive_attack_counts_match_a_brute_force_recount(tb):
    tb.inject(
        """
        keys = [tuple(row) for row in naive.to_numpy()]
        brute = np.array([keys.count(key) for key in keys])
        """,
        pop=True,
    )
    assert tb.value("bool(np.array_equal(brute, naive_sets))")
    assert tb.value("int((brute < K).sum())") == tb.value(
        "naive_attack[f'anonymity set < {K}']"
    )
    assert tb.value("int((brute == 1).sum())") >= 1
    assert tb.value("bool((exposure['exact'] > 0).any())")


@pytest.mark.parametrize("k", [1, 2, 5, 17])
def test_kd_regions_are_reciprocal_on_random_cities(tb, k):
    # Every user's region holds at least k users, all of whom get that
    # same region. Includes a city with many repeated positions (ties).
    tb.inject(
        f"""
        test_rng = np.random.default_rng(100 + {k})
        cities = [draw_homes(n, test_rng) for n in ({k}, 60, 500)]
        cities.append(np.floor(test_rng.uniform(0, 10, (300, 2))))
        kd_bad = [
            _reciprocity_violations(c, kd_regions(c, {k}), {k})
            for c in cities
        ]
        """,
        pop=True,
    )
    assert tb.value("kd_bad") == [[], [], [], []]


def test_chapter_release_is_reciprocal(tb):
    assert tb.value("_reciprocity_violations(homes, reciprocal, K)") == []
    assert tb.value("int(reciprocal_sets.min())") >= tb.value("K")


def test_cloaking_rejects_bad_input(tb):
    for name in ("quadtree_regions", "kd_regions"):
        message = value_error_message(tb, f"{name}(homes, 0)")
        assert "k must be" in message
        message = value_error_message(tb, f"{name}(homes[:3], 5)")
        assert "k=5" in message
        message = value_error_message(tb, f"{name}(homes + 20, 5)")
        assert "lie in" in message
    assert "no regions" in value_error_message(
        tb, "cloak_anonymity_sets(naive.iloc[:0])"
    )


# --- displacement ----------------------------------------------------------


def test_displacement_stays_in_the_disc_with_mean_two_thirds_r(tb):
    # Uniform in a disc of radius r: mean distance 2r/3, standard deviation
    # r * sqrt(1/2 - 4/9) = 0.236 r. With 50,000 draws the standard error
    # of the mean is 0.0011 r; we allow 0.005 r (more than 4 standard
    # errors).
    tb.inject(
        """
        moved = displace_in_disc(
            np.zeros((50_000, 2)), 3.0, np.random.default_rng(7)
        )
        moved_distance = np.linalg.norm(moved, axis=1)
        """,
        pop=True,
    )
    assert tb.value("float(moved_distance.max())") <= 3.0
    assert tb.value("float(moved_distance.mean())") == pytest.approx(
        2.0, abs=0.015
    )
    message = value_error_message(tb, "displace_in_disc(origin, 0, rng)")
    assert "radius" in message
    assert tb.value(
        "_raises_type_error(lambda: displace_in_disc(origin, 1.0, 3))"
    )


def test_displacement_errors_are_distributions_not_one_draw(tb):
    # The chapter reports the mean and percentiles of 100,000 single
    # reports and of 2,000 averaged months, not one draw. Single report,
    # r = 1 km: mean 2r/3 = 666.7 m (standard error 0.75 m, we allow 5 m);
    # 10th percentile r * sqrt(0.1) = 316 m (we allow 5 m).
    assert tb.value("float(one_report.mean())") == pytest.approx(666.7, abs=5)
    assert tb.value("float(np.quantile(one_report, 0.1))") == pytest.approx(
        316.2, abs=5
    )
    # Average of 30 reports: close to Rayleigh with sigma = r / (2 sqrt 30),
    # mean 114.4 m. The standard error of the mean over 2,000 months is
    # about 1%, and the normal approximation is off by a few per cent at
    # n = 30, so we allow 6%.
    assert tb.value("float(averaged.mean())") == pytest.approx(114.4, rel=0.06)


# --- planar Laplace --------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 3.0])
def test_planar_laplace_radius_is_gamma_and_angle_uniform(tb, epsilon):
    # The radius must follow Gamma(shape 2, scale 1/eps) and the angle must
    # be uniform on [0, 2 pi). KS tests at a fixed seed with 50,000 draws:
    # a correct sampler gives a p-value that is uniform over seeds, so the
    # threshold 0.001 fails a correct sampler for 1 seed in 1,000; a wrong
    # law (see the next test) gives p-values below 1e-100.
    tb.inject(
        f"""
        centre = np.array([[2.0, -1.0]])
        noisy = planar_laplace(
            np.repeat(centre, 50_000, axis=0), {epsilon},
            np.random.default_rng(11),
        )
        offset = noisy - centre
        radius = np.linalg.norm(offset, axis=1)
        angle = np.mod(np.arctan2(offset[:, 1], offset[:, 0]), 2 * np.pi)
        gamma_law = stats.gamma(a=2, scale=1 / {epsilon})
        radius_p = stats.kstest(radius, gamma_law.cdf).pvalue
        angle_p = stats.kstest(
            angle, stats.uniform(0, 2 * np.pi).cdf
        ).pvalue
        """,
        pop=True,
    )
    assert tb.value("float(radius_p)") > 0.001
    assert tb.value("float(angle_p)") > 0.001
    # Mean 2/eps; standard deviation sqrt(2)/eps, so the standard error of
    # the mean of 50,000 draws is 0.0063/eps. We allow 0.03/eps.
    mean = tb.value("float(radius.mean())")
    assert mean == pytest.approx(2 / epsilon, abs=0.03 / epsilon)


def test_the_radius_test_rejects_a_wrong_law(tb):
    # The same test rejects an exponential radius with the same scale,
    # the most common wrong sampler: the test above can fail.
    tb.inject(
        """
        wrong = np.random.default_rng(11).exponential(2.0, 50_000)
        wrong_p = stats.kstest(wrong, stats.gamma(a=2, scale=1.0).cdf).pvalue
        """,
        pop=True,
    )
    assert tb.value("float(wrong_p)") < 1e-10


def test_planar_laplace_odds_stay_within_exp_eps_d(tb):
    # Geo-indistinguishability for the half-plane S = {x > 0}: from x = 0
    # the report lands in S with probability 1/2; from x = -d the
    # probability is smaller by a factor of at most e^(eps d) (about 1.65
    # here). 400,000 draws each estimate the probabilities to within
    # +-0.0008 (one standard error); we allow 0.01 on the ratio.
    tb.inject(
        """
        eps, d = 0.01, 50.0
        here = planar_laplace(
            np.zeros((400_000, 2)), eps, np.random.default_rng(5)
        )
        there = planar_laplace(
            np.tile([-d, 0.0], (400_000, 1)), eps, np.random.default_rng(6)
        )
        odds = (here[:, 0] > 0).mean() / (there[:, 0] > 0).mean()
        """,
        pop=True,
    )
    bound = tb.value("float(np.exp(eps * d))")
    odds = tb.value("float(odds)")
    assert 1.0 < odds <= bound + 0.01


def test_planar_laplace_rejects_bad_input(tb):
    for bad in ("0", "-1.0", "np.inf", "np.nan"):
        message = value_error_message(
            tb, f"planar_laplace(origin[:3], {bad}, rng)"
        )
        assert "epsilon" in message
    message = value_error_message(tb, "planar_laplace(np.zeros(3), 1.0, rng)")
    assert "shape" in message
    message = value_error_message(
        tb, "planar_laplace(np.full((2, 2), np.nan), 1.0, rng)"
    )
    assert "finite" in message
    assert tb.value(
        "_raises_type_error(lambda: planar_laplace(origin, 1.0, 42))"
    )


# --- traces ----------------------------------------------------------------


def test_averaging_reports_finds_home(tb):
    # The error of the average falls with the number of reports, roughly
    # like 1/sqrt(n): 30 reports land well within a single report's error.
    errors = tb.value("trace_errors['mean error (m)'].tolist()")
    assert errors == sorted(errors, reverse=True)
    single = tb.value("2 / EPS_PER_M")
    assert tb.value("trace_errors.loc[30, 'mean error (m)']") < single / 4
    message = value_error_message(
        tb, "error_of_average(0, EPS_PER_M, 10, rng)"
    )
    assert "at least 1" in message


def test_population_generator_rejects_bad_input(tb):
    assert "at least 1" in value_error_message(tb, "draw_homes(0, rng)")
    assert "whole number" in value_error_message(tb, "draw_homes(2.5, rng)")
    message = value_error_message(tb, "simulate_week(10, rng, 0)")
    assert "record_prob" in message

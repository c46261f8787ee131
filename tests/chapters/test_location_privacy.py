"""Tests for the functions defined in chapters/location-privacy.ipynb.

The notebook is executed once (a few seconds); every test then runs code in
its kernel.
"""

import json

import assignments
import pytest
import support

from conftest import (
    CHAPTERS_DIR,
    chapter_kernel,
    glued_value,
    value_error_message,
)


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


            def _inclusive_violations(xy, boxes, k):
                """Users whose region holds < k users, or holds a user
                whose region differs (not inclusive), or does not hold
                the user."""
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
    assert tb.value("_raises_type_error(lambda: unicity(hand, 1, 1.0, 1, 0))")


def hand_traces(name: str, x: str) -> str:
    """Code that makes `name` the four people's hand-made traces of the
    data-rule tests, person 2's x being `x` (code)."""
    return f"""
        {name} = pd.DataFrame({{
            "person": [0, 1, 2, 3, 3],
            "hour": [5, 5, 5, 6, 7],
            "x_km": [0.2, 0.4, {x}, 0.2, 0.2],
            "y_km": [0.2, 0.3, 0.5, 0.2, 0.2],
        }})
        """


@pytest.mark.parametrize("x", ["np.nan", "'north'", "-3.5"])
def test_unicity_and_matching_follow_the_data_rule(tb, x):
    # The hand-made traces above, but person 2's x is missing, not a
    # number or west of the city: by the book's data rule it becomes 0,
    # and person 2's point falls in the cell that persons 0 and 1 share
    # (no invalid cast, no stray cell).
    tb.inject(
        hand_traces("_odd_hand", x)
        + """
        import warnings as _warnings
        _near = pd.DataFrame({"hour": [5], "x_km": [0.1], "y_km": [0.1]})
        with _warnings.catch_warnings():
            _warnings.simplefilter("error")
            _odd_unicity = unicity(
                _odd_hand, 1, 1.0, 1, np.random.default_rng(0)
            )
            _odd_matching = people_matching(_odd_hand, _near, 1.0, 1)
        """
    )
    assert tb.value("_odd_unicity") == pytest.approx(1 / 4)
    assert tb.value("_odd_matching") == [0, 1, 2]


@pytest.mark.parametrize("x", ["25.0", "np.inf", "10.0"])
def test_a_position_east_of_the_city_stays_in_its_own_cell(tb, x):
    # Person 2's x east of the city (or on its far edge) is moved to the
    # city's last column of cells, where nobody else is: not past it,
    # where the flat (slot, cell) key would read it as a cell of the next
    # hour's slot and match person 3's point at hour 6.
    tb.inject(
        hand_traces("_east_hand", x)
        + """
        _east_unicity = [
            unicity(_east_hand, 1, 1.0, 1, np.random.default_rng(seed))
            for seed in range(8)
        ]
        _at_six = pd.DataFrame({"hour": [6], "x_km": [0.1], "y_km": [0.1]})
        _east_matching = people_matching(_east_hand, _at_six, 1.0, 1)
        """
    )
    assert tb.value("_east_unicity") == [0.5] * 8
    assert tb.value("_east_matching") == [3]


def test_unicity_grows_with_points_and_matches_the_prose(tb):
    shares = tb.value("unicity_table.iloc[:, 0].tolist()")
    assert shares == sorted(shares)
    # The prose says four points single out most people.
    assert tb.value("unicity_table.iloc[3, 0]") > 0.9


def test_unicity_matches_a_brute_force_recount(tb):
    # Recount with Python sets: draw p distinct (slot, cell) points of each
    # person's trace and check whether anybody else has all of them. Both
    # are estimates over 2,000 people (standard error about 0.01 each, 0.014
    # for the difference); we allow 0.05.
    tb.inject(
        """
        def _brute_unicity(records, p, cell_km, slot_hours, seed):
            draw = np.random.default_rng(seed)
            points, owners = {}, {}
            for person, hour, x, y in records[
                ["person", "hour", "x_km", "y_km"]
            ].itertuples(index=False):
                key = (hour // slot_hours, int(x // cell_km),
                       int(y // cell_km))
                points.setdefault(person, set()).add(key)
                owners.setdefault(key, set()).add(person)
            unique = counted = 0
            for person, mine in points.items():
                if len(mine) < p:
                    continue
                counted += 1
                mine = sorted(mine)
                known = [mine[i] for i in draw.choice(len(mine), p, False)]
                same = set.intersection(*(owners[key] for key in known))
                unique += same == {person}
            return unique / counted
        """,
        pop=True,
    )
    for column, cell_km, slot_hours, p in [
        (0, 1.0, 1, 2),
        (1, 2.0, 4, 4),
        (1, 2.0, 4, 6),
    ]:
        brute = tb.value(
            f"_brute_unicity(records, {p}, {cell_km}, {slot_hours}, 1)"
        )
        table = tb.value(f"float(unicity_table.iloc[{p - 1}, {column}])")
        assert brute == pytest.approx(table, abs=0.05)


def test_unicity_shares_are_of_everybody(tb):
    # The prose says the shares at up to six points are of all people: every
    # person has at least six distinct points even at 2 km and 4 hours.
    assert tb.value("len(coarse_points)") == tb.value("N_PEOPLE")
    assert tb.value("int(coarse_points.min())") >= 6


def test_coarse_solution_counts_who_is_left(tb):
    # The exercise's shares for many points are of fewer people; the
    # solution must say so. Brute-force recount of people with >= p distinct
    # (day, 2.5 km cell) points.
    tb.inject(
        """
        _distinct = {}
        for person, hour, x, y in records[
            ["person", "hour", "x_km", "y_km"]
        ].itertuples(index=False):
            _distinct.setdefault(person, set()).add(
                (hour // 24, int(x // 2.5), int(y // 2.5))
            )
        _counted = [
            sum(len(s) >= p for s in _distinct.values())
            for p in range(2, 11, 2)
        ]
        """,
        pop=True,
    )
    counted = tb.value("_counted")
    assert counted == tb.value("coarse['people counted'].tolist()")
    assert counted[-1] < tb.value("N_PEOPLE") / 2


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
    assert tb.value("_inclusive_violations(four, hand_boxes, 2)") == [2, 3]
    assert (
        tb.value(
            "_inclusive_violations(four, kd_regions(four, 2, size=4.0), 2)"
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


def test_attack_on_a_hand_made_city(tb):
    # Naive cloaks of the hand-made city: users 2 and 3 are alone in their
    # anonymity sets (always named), users 0 and 1 share theirs (named half
    # the time). On the k-d partition everybody is named half the time.
    # 20,000 requests per user: standard error 0.0035, we allow 0.02.
    tb.inject(
        """
        four = np.array([[0.5, 0.5], [0.7, 0.7], [1.5, 1.5], [3.0, 3.0]])
        _senders = np.repeat(np.arange(4), 20_000)
        _rates = {}
        for _name, _regions in [
            ("naive", quadtree_regions(four, 2, size=4.0)),
            ("kd", kd_regions(four, 2, size=4.0)),
        ]:
            _wins = cloak_attack_success(
                _regions, _senders, np.random.default_rng(3)
            )
            _rates[_name] = _wins.reshape(4, -1).mean(axis=1).tolist()
        """,
        pop=True,
    )
    naive = tb.value("_rates['naive']")
    assert naive[2] == naive[3] == 1.0
    assert naive[:2] == pytest.approx([0.5, 0.5], abs=0.02)
    assert tb.value("_rates['kd']") == pytest.approx([0.5] * 4, abs=0.02)
    assert "senders" in value_error_message(
        tb, "cloak_attack_success(naive, [len(naive)], rng)"
    )
    assert tb.value(
        "_raises_type_error(lambda: cloak_attack_success(naive, [0], 1))"
    )


def test_measured_attack_matches_the_anonymity_sets(tb):
    # The played attack must agree with the exact expectations in the
    # prose: on exposed users mean(1/set) (about 8,800 requests, standard
    # error 0.005, we allow 0.02), and on the k-d partition mean(1/set)
    # over everybody (standard error 0.0008, we allow 0.005), below 1/k.
    exposed = tb.value("float(naive_wins[exposed_requests].mean())")
    assert exposed == pytest.approx(
        tb.value("float(np.mean(1 / naive_sets[below_k]))"), abs=0.02
    )
    assert exposed > 1.5 / tb.value("K")
    kd = tb.value("float(kd_wins.mean())")
    expected = tb.value("float(np.mean(1 / reciprocal_sets))")
    assert kd == pytest.approx(expected, abs=0.005)
    assert kd < 1 / tb.value("K")


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
            _inclusive_violations(c, kd_regions(c, {k}), {k})
            for c in cities
        ]
        """,
        pop=True,
    )
    assert tb.value("kd_bad") == [[], [], [], []]


def test_chapter_release_is_reciprocal(tb):
    assert tb.value("_inclusive_violations(homes, reciprocal, K)") == []
    assert tb.value("int(reciprocal_sets.min())") >= tb.value("K")


def test_hilbert_index_steps_between_neighbouring_cells(tb):
    # On an 8 x 8 grid (order 3) the curve visits every cell once, and
    # consecutive cells share a side.
    tb.inject(
        """
        _centres = np.array([[i + 0.5, j + 0.5] for i in range(8)
                             for j in range(8)])
        _walk = np.argsort(hilbert_index(_centres, size=8.0, order=3))
        _steps = np.abs(np.diff(_centres[_walk], axis=0)).sum(axis=1)
        """,
        pop=True,
    )
    assert tb.value(
        "sorted(hilbert_index(_centres, size=8.0, order=3).tolist())"
    ) == list(range(64))
    assert tb.value("_steps.tolist()") == [1.0] * 63


@pytest.mark.parametrize("k", [1, 2, 5, 17])
def test_hilbert_cloak_is_reciprocal(tb, k):
    # Kalnis et al.'s reciprocity: the anonymizing set of a user (their
    # run along the curve) has at least k members, all of whom report the
    # same region, so every anonymity set holds at least k users.
    tb.inject(
        f"""
        _rng = np.random.default_rng(300 + {k})
        _bad = []
        for _n in ({k}, 61, 500):
            _xy = draw_homes(_n, _rng)
            _boxes = hilbert_cloak(_xy, {k}).to_numpy()
            _order = np.argsort(hilbert_index(_xy), kind="stable")
            _runs = np.minimum(np.arange(_n) // {k}, _n // {k} - 1)
            for _run in np.unique(_runs):
                _members = _order[_runs == _run]
                if len(_members) < {k} or len(_members) > 2 * {k} - 1:
                    _bad.append(("size", _n, _run))
                if not (_boxes[_members] == _boxes[_members[0]]).all():
                    _bad.append(("region", _n, _run))
            if cloak_anonymity_sets(hilbert_cloak(_xy, {k})).min() < {k}:
                _bad.append(("anonymity", _n))
        """,
        pop=True,
    )
    assert tb.value("_bad") == []


def test_hilbert_cloak_is_not_inclusive_but_kd_is(tb):
    # Reciprocity does not imply inclusiveness: in the chapter's city many
    # users stand inside another run's rectangle (recounted here one user
    # at a time), while the k-d partition has no such user.
    tb.inject(
        """
        _tiles = hilbert.drop_duplicates().to_numpy()
        _foreign = 0
        for _i, (_x, _y) in enumerate(homes):
            _own = hilbert.iloc[_i].to_numpy()
            _hits = [t for t in _tiles
                     if t[0] <= _x <= t[2] and t[1] <= _y <= t[3]
                     and not (t == _own).all()]
            _foreign += bool(_hits)
        """,
        pop=True,
    )
    foreign = tb.value("_foreign")
    assert foreign == glued_value("location-privacy", "loc_hilbert_foreign")
    assert foreign > 0
    assert tb.value("len(_inclusive_violations(homes, hilbert, K))") > 0
    assert tb.value("_inclusive_violations(homes, reciprocal, K)") == []
    assert glued_value(
        "location-privacy", "loc_hilbert_smallest_set"
    ) >= tb.value("K")
    message = value_error_message(tb, "hilbert_cloak(homes, 0)")
    assert "whole number" in message


@pytest.mark.parametrize("users", [0, 1, 4])
@pytest.mark.parametrize(
    "name", ["quadtree_regions", "kd_regions", "hilbert_cloak"]
)
def test_fewer_than_k_users_all_get_the_whole_city(tb, name, users):
    """The data rule: a count of users never makes cloaking fail. With
    fewer than k = 5 users (none included) no region can hold k, and each
    user gets the whole city (not the box of the few users, which would
    narrow them down); with 40 users some regions are smaller again."""
    regions = tb.value(f"{name}(homes[:{users}], 5).to_numpy().tolist()")
    city = tb.value("CITY_KM")
    whole = [0.0, 0.0, city] if name == "quadtree_regions" else None
    whole = whole or [0.0, 0.0, city, city]
    assert regions == [whole] * users
    several = tb.value(f"{name}(homes[:40], 5).to_numpy().tolist()")
    assert any(region != whole for region in several)


def test_cloaking_rejects_bad_input(tb):
    for name in ("quadtree_regions", "kd_regions"):
        message = value_error_message(tb, f"{name}(homes, 0)")
        assert "k must be" in message
    # no users, no anonymity sets (the data rule: no exception)
    assert tb.value("cloak_anonymity_sets(naive.iloc[:0]).tolist()") == []


@pytest.mark.parametrize(
    "name", ["quadtree_regions", "kd_regions", "hilbert_cloak"]
)
def test_cloaking_follows_the_data_rule(tb, name):
    """One record never makes cloaking raise or warn (an error one record
    causes is itself a release): a position outside the city is moved to
    the nearest point of the city, a missing or non-numeric coordinate
    becomes 0, and the regions are those of the positions so moved."""
    tb.inject(
        f"""
        import warnings as _warnings
        _odd = homes[:40].astype(object)
        _odd[0] = [np.nan, 5.0]
        _odd[1] = [-3.0, 25.0]
        _odd[2] = ["north", np.inf]
        _odd[3] = [None, -np.inf]
        _moved = homes[:40].copy()
        _moved[:4] = [[0.0, 5.0], [0.0, INSIDE], [0.0, INSIDE], [0.0, 0.0]]
        with _warnings.catch_warnings():
            _warnings.simplefilter("error")
            _odd_regions = {name}(_odd, 5)
        _moved_regions = {name}(_moved, 5)
        """
    )
    assert tb.value("_odd_regions.equals(_moved_regions)")
    assert tb.value("bool(np.isfinite(_odd_regions.to_numpy()).all())")
    assert tb.value("len(_odd_regions)") == 40


def test_hilbert_index_follows_the_data_rule(tb):
    """A missing coordinate counts as 0 and a position outside the city as
    the nearest point of the city: no invalid cast, no stray index."""
    tb.inject(
        """
        import warnings as _warnings
        with _warnings.catch_warnings():
            _warnings.simplefilter("error")
            _odd_index = hilbert_index(
                np.array([[np.nan, 2.5], [-1.0, 9.0], [3.0, 1e9]])
            )
        _moved_index = hilbert_index(
            np.array([[0.0, 2.5], [0.0, 9.0], [3.0, INSIDE]])
        )
        """
    )
    assert tb.value("_odd_index.tolist() == _moved_index.tolist()")
    assert tb.value("bool((_odd_index >= 0).all())")
    assert tb.value("bool((_odd_index < 4 ** 16).all())")


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
    # mean 114.4 m. The standard error of the mean over 10,000 months is
    # 0.6 m (0.5%); the normal approximation is within 0.2% at n = 30
    # (checked with 1.2 million simulated months), so we allow 3%.
    assert tb.value("len(averaged)") == 10_000
    assert tb.value("float(averaged.mean())") == pytest.approx(114.4, rel=0.03)


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


def test_radius_inverts_the_distribution_function(tb):
    # C(r) = 1 - (1 + eps r) e^(-eps r); the radius for p must give back p,
    # including p = 0 exactly, where scipy's lambertw alone returns NaN.
    tb.inject(
        """
        _p = np.array([0.0, 1e-300, 2.0**-53, 0.1, 0.5, 0.9, 1 - 2.0**-53])
        _r = planar_laplace_radius(_p, 0.02)
        _back = 1 - (1 + 0.02 * _r) * np.exp(-0.02 * _r)
        """,
        pop=True,
    )
    assert tb.value("bool(np.all(np.isfinite(_r)))")
    assert tb.value("float(_r[0])") == 0.0
    assert tb.value("np.abs(_back - _p).max()") < 1e-12
    # 1 - p = 2^-53 is the largest p numpy draws: r is about 40.5 / eps.
    assert tb.value("float(_r[-1])") == pytest.approx(40.46 / 0.02, rel=1e-3)
    for bad in ("1.0", "-0.1", "np.nan"):
        message = value_error_message(tb, f"planar_laplace_radius({bad}, 1.0)")
        assert "[0, 1)" in message
    message = value_error_message(tb, "planar_laplace_radius(0.5, 0)")
    assert "epsilon" in message


def test_epsilon_per_metre_numbers(tb):
    # log 4 per 200 m: 0.0069315 per metre; 1 km is five times 200 m, so
    # the odds factor at 1 km is 4^5 = 1024; the mean error 2/eps is
    # 400 / log 4 = 288.54 m, and C(90th percentile) = 0.9.
    assert tb.value("float(EPS_PER_M * 200)") == pytest.approx(1.3862944)
    assert tb.value("float(np.exp(EPS_PER_M * 1000))") == pytest.approx(1024.0)
    assert tb.value("float(2 / EPS_PER_M)") == pytest.approx(288.539, abs=1e-3)
    p90 = tb.value("float(stats.gamma(a=2, scale=1 / EPS_PER_M).ppf(0.9))")
    eps = tb.value("float(EPS_PER_M)")
    assert 1 - (1 + eps * p90) * 2.718281828459045 ** (-eps * p90) == (
        pytest.approx(0.9)
    )


def test_the_radius_check_does_not_reject(tb):
    # The prose says the test does not reject the Gamma law at 5%.
    assert glued_value("location-privacy", "loc_check_ks_p") > 0.05


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
    # here). The exact factor is 0.5 / P(X > d), where X, one coordinate of
    # the noise, has density (eps^2 / pi) |x| K_1(eps |x|): 1.4204 for
    # eps d = 0.5. 400,000 draws each give the ratio to within 0.004 (one
    # standard error); we allow 0.015.
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
    assert odds == pytest.approx(1.4204, abs=0.015)
    assert odds <= bound


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


def test_averaging_attack_matches_the_normal_approximation(tb):
    # Each coordinate of the noise has variance 3 / eps^2, so the mean of 30
    # reports is about normal with sigma = sqrt(3 / 30) / eps and its
    # distance from home has mean sigma * sqrt(pi / 2) = 57.2 m. Over 1,000
    # trials the standard error is 1.7%; the approximation is within 1% at
    # n = 30, so we allow 6%.
    measured = tb.value("float(trace_errors.loc[30, 'mean error (m)'])")
    assert measured == pytest.approx(57.18, rel=0.06)
    # The whole-trace epsilon is 30 eps: odds 4^30 between homes 200 m apart.
    assert tb.value(
        "float(np.exp(trace_errors.loc[30, 'trace epsilon per m'] * 200))"
    ) == (pytest.approx(4.0**30, rel=1e-9))


def test_month_budget_ratio_is_above_sqrt_30(tb):
    # One report at eps / 30 misses by 30 * 2 / eps on average; the average
    # of 30 is about normal with sigma = sqrt(3 / 30) * 30 / eps per
    # coordinate, mean distance sigma * sqrt(pi / 2). Over 2 / eps that is
    # 15 sqrt(pi / 20) = 5.945, not sqrt(30) = 5.477. The measured ratio
    # (1,000 trials, standard error about 1.7%) is within 6% of 5.945.
    expected = glued_value("location-privacy", "loc_sol_budget_expected")
    assert expected == pytest.approx(15 * (3.141592653589793 / 20) ** 0.5)
    measured = glued_value("location-privacy", "loc_sol_budget_ratio")
    assert measured == pytest.approx(expected, rel=0.06)
    assert measured > 30**0.5


def test_glued_values_are_plain_python():
    # Every number in the prose is glued as a plain Python int, float or
    # str, so that what the page shows does not depend on numpy's repr.
    notebook = json.loads(
        (CHAPTERS_DIR / "location-privacy.ipynb").read_text()
    )
    records = [
        output["data"]["application/papermill.record/text/plain"]
        for cell in notebook["cells"]
        if cell["cell_type"] == "code"
        for output in cell.get("outputs", [])
        if "application/papermill.record/text/plain" in output.get("data", {})
    ]
    assert records, "the executed notebook holds no glued values"
    not_plain = [text for text in records if text.startswith("np.")]
    assert not not_plain


def test_population_generator_rejects_bad_input(tb):
    assert "at least 1" in value_error_message(tb, "draw_homes(0, rng)")
    assert "whole number" in value_error_message(tb, "draw_homes(2.5, rng)")
    message = value_error_message(tb, "simulate_week(10, rng, 0)")
    assert "record_prob" in message


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)

STEM = "location-privacy"


def test_the_book_s_solutions_get_full_marks(tb):
    assignments.assert_full_marks(tb, STEM)


def test_the_untouched_student_notebook_scores_zero(tb):
    assignments.assert_stubs_score_zero(tb, STEM)


COARSE = "half = int(coarse.index[coarse['unique share'] > 0.5][0])\n"
LARGER = (
    "naive_below = int((naive_10 < 10).sum())\n"
    "kd_min_set = int(cloak_anonymity_sets(kd_10).min())\n"
    "kd_median_area = float(kd_10_area.median())\n"
)
CALIBRATE = (
    "eps_500 = np.log(2) / 500\n"
    "expected_error = 2 / eps_500\n"
    "far_formula = (1 + eps_500 * 2000) * np.exp(-eps_500 * 2000)\n"
)
BUDGET = (
    "_g = np.random.default_rng(5)\n"
    "eps_each = EPS_PER_M / 30\n"
    "single = error_of_average(1, eps_each, 1000, _g)\n"
    "month = error_of_average(30, eps_each, 1000, _g)\n"
)
BY_HAND = (
    "naive_sides = [0.25, 0.25, 2.0, 4.0]\n"
    "naive_sets = [2, 2, 1, 1]\n"
    "kd_sets = [2, 2, 2, 2]\n"
)
WRONG_ANSWERS = [
    (
        "loc-ex-coarse",
        "half = 6\nhalf_people = int((daily_points >= 6).sum())\n",
        "known points single out",
    ),
    (
        "loc-ex-coarse",
        COARSE + "half_people = N_PEOPLE\n",
        "the unique share is a share of them only: that is everyone",
    ),
    (
        "loc-ex-coarse",
        COARSE + "half_people = int("
        "(records.groupby('person').size() >= half).sum())\n",
        "that counts records",
    ),
    (
        "loc-ex-larger-k",
        LARGER + "naive_below = int((naive_10 == 1).sum())\n",
        "that counts only the users identified exactly",
    ),
    (
        "loc-ex-larger-k",
        LARGER + "naive_below = int((naive_10 <= 10).sum())\n",
        "a set of exactly 10 senders is not below 10",
    ),
    (
        "loc-ex-larger-k",
        LARGER + "kd_median_area = float(kd_10_area.mean())\n",
        "that is the mean, not the median",
    ),
    (
        "loc-ex-larger-k",
        LARGER + "kd_median_area = float(kd_10_area.median() * 1e6)\n",
        "that is in square metres",
    ),
    (
        "loc-ex-calibrate",
        CALIBRATE + "eps_500 = 2 / 500\n",
        "so eps d = log 2, not 2",
    ),
    (
        "loc-ex-calibrate",
        CALIBRATE + "eps_500 = np.log(2) / 0.5\n",
        "that is per kilometre",
    ),
    (
        "loc-ex-calibrate",
        CALIBRATE + "expected_error = 1 / eps_500\n",
        "1/eps is the mean of one-dimensional Laplace noise",
    ),
    (
        "loc-ex-calibrate",
        CALIBRATE + "far_formula = np.exp(-eps_500 * 2000)\n",
        "is the tail of one-dimensional Laplace noise",
    ),
    (
        "loc-ex-budget",
        BUDGET.replace("EPS_PER_M / 30", "EPS_PER_M"),
        "would cost 30 times the month's budget",
    ),
    (
        "loc-ex-budget",
        BUDGET + "single = single / 2\n",
        "draw them with planar_laplace at eps_each",
    ),
    (
        "loc-ex-budget",
        BUDGET + "month = error_of_average(20, eps_each, 1000, _g)\n",
        "average 30 reports at eps_each",
    ),
    (
        "loc-ex-by-hand",
        BY_HAND.replace("[2, 2, 1, 1]", "[2, 2, 3, 1]"),
        "so only the third ever sends it",
    ),
    (
        "loc-ex-by-hand",
        BY_HAND.replace("[0.25, 0.25, 2.0", "[0.5, 0.5, 1.0"),
        "the third and the fourth must climb",
    ),
    (
        "loc-ex-by-hand",
        BY_HAND.replace("kd_sets = [2, 2, 2, 2]", "kd_sets = [2, 2, 1, 1]"),
        "and all of them send it",
    ),
]


@pytest.mark.parametrize(("label", "code", "expected"), WRONG_ANSWERS)
def test_a_typical_wrong_answer_fails_with_its_reason(
    tb, label, code, expected
):
    assignments.assert_wrong_answer_fails(tb, STEM, label, code, expected)


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        ("loc-ex-coarse", "half = 7\nhalf_people = 1000\n", "one of 2, 4"),
        (
            "loc-ex-coarse",
            COARSE + "half_people = N_PEOPLE\n",
            "is everyone, but few weeks hold",
        ),
        (
            "loc-ex-larger-k",
            LARGER + "kd_median_area = float(kd_10_area.median() * 1e6)\n",
            "give the area in km^2",
        ),
        (
            "loc-ex-larger-k",
            LARGER.replace("kd_10", "kd_regions(homes, 5)").replace(
                "kd_regions(homes, 5)_area", "kd_10_area"
            ),
            "the k-d partition is reciprocal",
        ),
        (
            "loc-ex-calibrate",
            CALIBRATE + "eps_500 = 2 / 500\n",
            "so eps d = log 2, not 2",
        ),
        (
            "loc-ex-calibrate",
            CALIBRATE + "eps_500 = np.log(2) / 0.5\n",
            "that epsilon is per kilometre",
        ),
        (
            "loc-ex-calibrate",
            CALIBRATE + "expected_error = 1 / eps_500\n",
            "1/eps is the mean of one-dimensional Laplace noise",
        ),
        (
            "loc-ex-calibrate",
            CALIBRATE + "far_formula = np.exp(-eps_500 * 2000)\n",
            "is the tail of one-dimensional Laplace noise",
        ),
        (
            "loc-ex-budget",
            BUDGET.replace("EPS_PER_M / 30", "EPS_PER_M"),
            "would cost 30 times the month's budget",
        ),
        (
            "loc-ex-budget",
            BUDGET + "single = single / 2\n",
            "draw them with planar_laplace at eps_each",
        ),
        (
            "loc-ex-budget",
            BUDGET + "month = error_of_average(20, eps_each, 1000, _g)\n",
            "average 30 reports at eps_each",
        ),
        (
            "loc-ex-by-hand",
            BY_HAND.replace("[2, 2, 1, 1]", "[2, 2, 3, 1]"),
            "so only the third ever sends it",
        ),
        (
            "loc-ex-by-hand",
            BY_HAND.replace("[0.25, 0.25,", "[0.3, 0.3,"),
            "halved a whole number of times",
        ),
        (
            "loc-ex-by-hand",
            BY_HAND.replace("[2, 2, 1, 1]", "[2, 1, 1, 1]"),
            "is a multiple of 2",
        ),
        (
            "loc-ex-by-hand",
            BY_HAND.replace(
                "kd_sets = [2, 2, 2, 2]", "kd_sets = [2, 2, 1, 1]"
            ),
            "and all of them send it",
        ),
    ],
)
def test_the_public_checks_catch_a_common_mistake(tb, label, code, expected):
    assignments.assert_public_checks_name(tb, STEM, label, code, expected)


@pytest.mark.parametrize(
    ("label", "code"),
    [
        (
            "loc-ex-coarse",
            "half = np.int64(coarse.index[coarse['unique share'] > 0.5][0])\n"
            "half_people = float(coarse.loc[half, 'people counted'])\n",
        ),
        (
            "loc-ex-larger-k",
            LARGER + "naive_below = np.int64(naive_below)\n"
            "kd_median_area = np.float32(f'{kd_median_area:.3g}')\n",
        ),
        # Each value rounded to 3 significant figures.
        (
            "loc-ex-calibrate",
            "eps_500 = 0.00139\nexpected_error = 1440.0\n"
            "far_formula = 0.236\n",
        ),
        (
            "loc-ex-budget",
            BUDGET + "single = single.astype(np.float32).tolist()\n"
            "month = tuple(month)\n",
        ),
        (
            "loc-ex-by-hand",
            "naive_sides = np.array([0.25, 0.25, 2, 4], dtype=np.float32)\n"
            "naive_sets = (np.int64(2), 2, 1, 1)\n"
            "kd_sets = np.full(4, 2.0)\n",
        ),
    ],
    ids=["numpy-ints", "rounded-area", "rounded", "float32-list", "arrays"],
)
def test_a_right_answer_in_another_form_gets_full_marks(tb, label, code):
    assignments.assert_answer_passes(tb, STEM, label, code)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_budget_check_accepts_a_correct_answer_at_other_seeds(tb, seed):
    code = (
        f"_rng = np.random.default_rng({seed})\n"
        "eps_each = EPS_PER_M / 30\n"
        "single = error_of_average(1, eps_each, 1000, _rng)\n"
        "month = error_of_average(30, eps_each, 1000, _rng)\n"
    )
    assignments.assert_answer_passes(tb, STEM, "loc-ex-budget", code)


# --- the error dial ----------------------------------------------------------


def _evaluate(expression, epsilon, datum):
    """A Vega expression of `epsilon` and `datum.x`, in Python."""
    import numpy as np  # noqa: PLC0415

    names = {f"_d_{k}": v for k, v in datum.items()}
    code = expression.replace("datum.", "_d_")
    return eval(code, {"exp": np.exp, "epsilon": epsilon, **names})


@pytest.mark.parametrize(
    "args",
    [
        "7.0, 1.0, 20.0, 0.5, max_km=0",  # no distances
        "30.0, 1.0, 20.0, 0.5",  # start above high
        "7.0, 0.0, 20.0, 0.5",  # low 0
        "7.0, 1.0, 20.0, 0",  # step 0
        "7.0, 1.0, float('inf'), 0.5",  # infinite high
        "7.0, 1.0, 20.0, float('nan')",  # step nan
    ],
)
def test_error_dial_rejects_bad_inputs(tb, args):
    value_error_message(tb, f"error_dial({args})")


def test_stored_error_dial_is_the_radial_law(tb):
    """At several epsilons the stored curve, evaluated at the radius that
    planar_laplace_radius gives for p, is 1 - p; the summary's mean is
    2 / epsilon; the slider's range is the glued one; Vega compiles it."""
    import numpy as np  # noqa: PLC0415

    spec = support.stored_vega_lite("location-privacy")
    assert "slider" in spec["description"]
    (param,) = spec["params"]
    assert param["value"] == glued_value("location-privacy", "loc_dial_start")
    assert param["bind"]["min"] == glued_value(
        "location-privacy", "loc_dial_low"
    )
    assert param["bind"]["max"] == glued_value(
        "location-privacy", "loc_dial_high"
    )
    rows = support.plotted_rows(spec)
    distances = [row["distance_km"] for row in rows]
    assert distances[0] == 0 and distances[-1] == 5.0
    (curve,) = [
        step["calculate"]
        for step in spec["layer"][0]["transform"]
        if step.get("as") == "beyond"
    ]
    summary = {
        step["as"]: step["calculate"] for step in spec["layer"][1]["transform"]
    }
    for epsilon in [1.0, 7.0, 20.0]:
        ps = np.array([0.0, 0.1, 0.5, 0.9, 0.999])
        radii = tb.value(
            f"planar_laplace_radius({ps.tolist()}, {epsilon}).tolist()"
        )
        shown = [_evaluate(curve, epsilon, {"distance_km": r}) for r in radii]
        assert shown == pytest.approx(1 - ps, rel=1e-9, abs=1e-12)
        assert _evaluate(summary["mean_km"], epsilon, {}) == pytest.approx(
            2 / epsilon
        )
    assert "epsilon" in support.vega_signals(spec)


def test_error_dial_prose_numbers_from_the_radial_law():
    """The glued numbers of the dial's prose, from the closed form of the
    Gamma(2, 1/epsilon) tail, (1 + epsilon r) exp(-epsilon r), and its mean
    2 / epsilon, with r in km and the means in metres."""
    import math  # noqa: PLC0415

    low = glued_value("location-privacy", "loc_dial_low")
    high = glued_value("location-privacy", "loc_dial_high")
    assert glued_value("location-privacy", "loc_dial_mean_low") == (
        pytest.approx(2000 / low)
    )
    assert glued_value("location-privacy", "loc_dial_mean_high") == (
        pytest.approx(2000 / high)
    )
    assert glued_value("location-privacy", "loc_dial_beyond_low") == (
        pytest.approx((1 + low) * math.exp(-low), rel=1e-12)
    )
    # The start is close to the chapter's log 4 per 200 m, in km.
    start = glued_value("location-privacy", "loc_dial_start")
    assert abs(start - 1000 * math.log(4) / 200) < 0.1

"""Tests for the helpers defined in chapters/deidentification.ipynb, run inside the notebook's kernel."""

import hashlib
import hmac
from pathlib import Path

import assignments
import nbformat
import numpy as np
import pandas as pd
import pytest

from conftest import chapter_kernel, glued_value, value_error_message

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "adult_with_pii.csv"
NOTEBOOK = ROOT / "chapters" / "deidentification.ipynb"


def glued(name):
    """The value the chapter glued under `name`, as a reader sees it."""
    return glued_value("deidentification", name)


# Small tables built inside the kernel; every expected value below is worked out by hand.
SETUP = """
tiny = pd.DataFrame({
    "DOB": ["1/1/1960", "1/1/1960", "2/2/1970", "3/3/1980", None, None],
    "Zip": ["00001", "00002", "00001", "00001", "00003", "00003"],
    "Age": [34, 34, 24, 14, 50, 51],
    "Target": [">50K", "<=50K", ">50K", "<=50K", "<=50K", ">50K"],
})
tiny_known = pd.DataFrame({"Name": ["Pat"], "DOB": ["1/1/1960"], "Zip": ["00001"]})
empty = tiny.iloc[0:0]
"""


@pytest.fixture(scope="module")
def tb():
    with chapter_kernel("deidentification") as notebook:
        notebook.inject(SETUP, pop=True)
        yield notebook


@pytest.fixture(scope="module")
def adult():
    return pd.read_csv(DATA, dtype={"Zip": str, "SSN": str})


# the data


def test_glued_columns_with_blanks_match_the_csv(adult):
    blanks = adult.isna().sum()
    expected = {name: int(n) for name, n in blanks.items() if n > 0}
    assert "Country" in expected  # the column an earlier draft forgot
    assert glued("deid_n_blank_columns") == len(expected)
    listed = dict(
        part.rsplit(" (", 1)
        for part in glued("deid_blank_columns").split(", ")
    )
    listed = {
        name: int(n.rstrip(")").replace(",", "")) for name, n in listed.items()
    }
    assert listed == expected


# the threat model: which columns are quasi-identifiers

# Written out here, independently of the chapter: what our attacker could know.
CENSUS_QI = [
    "Age",
    "Sex",
    "Race",
    "Country",
    "Marital Status",
    "Relationship",
    "Education",
    "Education-Num",
    "Workclass",
    "Occupation",
]
NEVER_QI = ["Target", "Capital Gain", "Capital Loss", "Hours per week"]


def test_quasi_identifiers_exclude_the_sensitive_columns(tb, adult):
    quasi = tb.value("QUASI_IDENTIFIERS")
    assert not set(quasi) & set(NEVER_QI)
    assert set(quasi) == set(CENSUS_QI) | {"DOB", "Zip"}
    assert set(tb.value("CENSUS_QUASI_IDENTIFIERS")) == set(CENSUS_QI)


def test_glued_census_uniqueness_recomputed_with_pandas(adult):
    sizes = adult.groupby(CENSUS_QI, dropna=False)["Age"].transform("size")
    expected = float((sizes == 1).mean())
    assert glued("deid_share_census_qi") == pytest.approx(expected)


def test_glued_selectivity_figures_recomputed_with_pandas(adult):
    def unique(columns):
        sizes = adult.groupby(columns, dropna=False)["Age"].transform("size")
        return sizes == 1

    n = len(adult)
    assert glued("deid_n_unique_dob") == int(unique(["DOB"]).sum())
    assert glued("deid_n_unique_zip") == int(unique(["Zip"]).sum())
    assert glued("deid_n_unique_dob_zip") == int(unique(["DOB", "Zip"]).sum())
    assert glued("deid_share_dob_sex_zip") == pytest.approx(
        unique(["DOB", "Sex", "Zip"]).sum() / n
    )
    assert glued("deid_share_age_sex_zip") == pytest.approx(
        unique(["Age", "Sex", "Zip"]).sum() / n
    )
    # The four facts of the friend, for everyone: a minority is unique.
    flagged = adult.assign(
        gain=adult["Capital Gain"] > 0, band=adult["Age"] // 10
    )
    for name, columns in [
        ("deid_share_unique_innocuous", ["Age", "Country", "Workclass"]),
        ("deid_share_unique_banded", ["band", "Country", "Workclass"]),
    ]:
        sizes = flagged.groupby(columns + ["gain"], dropna=False)[
            "Age"
        ].transform("size")
        assert glued(name) == pytest.approx(float((sizes == 1).mean()))
    assert glued("deid_share_unique_innocuous") < 0.5


# require_columns


def test_require_columns_accepts_a_string_or_a_list(tb):
    assert tb.value('require_columns(tiny, "DOB")') == ["DOB"]
    assert tb.value('require_columns(tiny, ("DOB", "Zip"))') == ["DOB", "Zip"]


@pytest.mark.parametrize(
    "code, fragment",
    [
        ('require_columns(tiny, ["Nope"])', "unknown column"),
        ('require_columns(tiny, "Nope")', "Nope"),
        ('require_columns(empty, ["DOB"])', "empty"),
        ("require_columns(tiny, [])", "at least one column"),
    ],
)
def test_require_columns_rejects_bad_input(tb, code, fragment):
    assert fragment in value_error_message(tb, code)


# linkage_attack


def test_auxiliary_data_holds_only_what_a_voter_roll_lists(tb):
    # The attacker's table names people next to the linking quasi-identifiers;
    # no SSN and nothing sensitive comes from outside the release.
    assert sorted(tb.value("list(auxiliary.columns)")) == [
        "DOB",
        "Name",
        "Zip",
    ]


def test_linkage_attack_counts_matches(tb):
    assert (
        tb.value('len(linkage_attack(tiny_known, tiny, ["DOB", "Zip"]))') == 1
    )
    assert tb.value('len(linkage_attack(tiny_known, tiny, "DOB"))') == 2
    assert tb.value('len(linkage_attack(tiny_known, tiny, "Zip"))') == 3
    assert tb.value(
        'sorted(linkage_attack(tiny_known, tiny, "Zip")["Age"].tolist())'
    ) == [14, 24, 34]


def test_linkage_attack_on_the_friend(tb, adult):
    friend = adult[adult["Name"] == "Ambrose Dalstrom"].iloc[0]
    same_zip = adult[adult["Zip"] == friend["Zip"]]
    assert tb.value('matches_dob_zip["Target"].tolist()') == [friend["Target"]]
    assert tb.value("len(matches_zip)") == len(same_zip)
    assert tb.value(
        'len(linkage_attack(friend_known, release, "DOB"))'
    ) == int((adult["DOB"] == friend["DOB"]).sum())


def test_glued_linkage_story_recomputed(adult):
    friend = adult[adult["Name"] == "Ambrose Dalstrom"].iloc[0]
    same_zip = adult[adult["Zip"] == friend["Zip"]]
    same_dob = adult[adult["DOB"] == friend["DOB"]]
    high = adult["Target"] == ">50K"
    assert glued("deid_n_match_dob_zip") == 1
    assert glued("deid_n_match_zip") == len(same_zip)
    assert glued("deid_n_match_dob") == len(same_dob)
    assert glued("deid_p_high_zip") == pytest.approx(
        high[same_zip.index].mean()
    )
    assert glued("deid_p_high_dob") == pytest.approx(
        high[same_dob.index].mean()
    )
    assert glued("deid_share_high_income") == pytest.approx(high.mean())
    # "An attacker who bets on the majority would guess wrong about Ambrose."
    assert glued("deid_p_high_dob") < 0.5 and friend["Target"] == ">50K"
    # "Workclass, or his age, would be enough" to tell the ZIP matches apart.
    for column in ["Workclass", "Age"]:
        assert (same_zip[column] == friend[column]).sum() == 1


@pytest.mark.parametrize(
    "code, fragment",
    [
        ('linkage_attack(tiny_known, tiny, ["Workclass"])', "unknown column"),
        ('linkage_attack(tiny_known, empty, ["DOB"])', "empty"),
        ('linkage_attack(tiny_known.iloc[0:0], tiny, ["DOB"])', "empty"),
    ],
)
def test_linkage_attack_rejects_bad_input(tb, code, fragment):
    assert fragment in value_error_message(tb, code)


# share_high_income


def test_share_high_income_by_hand(tb):
    assert tb.value("share_high_income(tiny)") == pytest.approx(3 / 6)
    assert tb.value(
        'share_high_income(tiny[tiny["Zip"] == "00001"])'
    ) == pytest.approx(2 / 3)


def test_share_high_income_for_the_friend(tb, adult):
    friend = adult[adult["Name"] == "Ambrose Dalstrom"].iloc[0]
    same_zip = adult[adult["Zip"] == friend["Zip"]]
    assert tb.value("share_high_income(matches_zip)") == pytest.approx(
        (same_zip["Target"] == ">50K").mean()
    )


@pytest.mark.parametrize(
    "code, fragment",
    [
        ("share_high_income(empty)", "empty"),
        ("share_high_income(tiny_known)", "unknown column"),
    ],
)
def test_share_high_income_rejects_bad_input(tb, code, fragment):
    assert fragment in value_error_message(tb, code)


# anonymity_set_sizes and uniqueness_table


def test_anonymity_set_sizes_by_hand(tb):
    assert tb.value('anonymity_set_sizes(tiny, "Zip").tolist()') == [
        3,
        1,
        3,
        3,
        2,
        2,
    ]
    # Missing values form one group of their own, they are not dropped.
    assert tb.value('anonymity_set_sizes(tiny, "DOB").tolist()') == [
        2,
        2,
        1,
        1,
        2,
        2,
    ]
    assert tb.value('anonymity_set_sizes(tiny, ["DOB", "Zip"]).tolist()') == [
        1,
        1,
        1,
        1,
        2,
        2,
    ]
    assert tb.value('anonymity_set_sizes(tiny, "Age").index.tolist()') == [
        0,
        1,
        2,
        3,
        4,
        5,
    ]


def test_anonymity_set_sizes_match_pandas_on_the_data(tb, adult):
    expected = adult.groupby(["DOB", "Zip"])["DOB"].transform("size")
    assert tb.value("int((sizes_dob_zip == 1).sum())") == int(
        (expected == 1).sum()
    )
    assert tb.value("sizes_dob_zip.tolist()") == expected.tolist()


@pytest.mark.parametrize(
    "code, fragment",
    [
        ('anonymity_set_sizes(tiny, ["Nope"])', "unknown column"),
        ('anonymity_set_sizes(empty, ["DOB"])', "empty"),
    ],
)
def test_anonymity_set_sizes_rejects_bad_input(tb, code, fragment):
    assert fragment in value_error_message(tb, code)


def test_uniqueness_table_by_hand(tb):
    tb.inject(
        'table = uniqueness_table(tiny, {"zip": ["Zip"], "both": ["DOB", "Zip"]})',
        pop=True,
    )
    assert tb.value('table.loc["zip", "unique records"].item()') == 1
    assert tb.value('table.loc["both", "unique records"].item()') == 4
    assert tb.value(
        'table.loc["both", "share unique"].item()'
    ) == pytest.approx(4 / 6)
    assert tb.value(
        'table.loc["zip", "median set size"].item()'
    ) == pytest.approx(2.5)


@pytest.mark.parametrize(
    "code, fragment",
    [
        ("uniqueness_table(tiny, {})", "at least one"),
        ('uniqueness_table(tiny, {"bad": ["Nope"]})', "unknown column"),
        ('uniqueness_table(empty, {"zip": ["Zip"]})', "empty"),
    ],
)
def test_uniqueness_table_rejects_bad_input(tb, code, fragment):
    assert fragment in value_error_message(tb, code)


# matching_rows and generalize_numeric


def test_matching_rows_by_hand(tb):
    assert tb.value(
        'matching_rows(tiny, {"Zip": "00001"}).index.tolist()'
    ) == [0, 2, 3]
    assert tb.value(
        'matching_rows(tiny, {"Zip": "00001", "Age": 34}).index.tolist()'
    ) == [0]
    assert (
        tb.value('len(matching_rows(tiny, {"Zip": "00001", "Age": 99}))') == 0
    )


def test_friend_is_alone_on_innocuous_facts(tb, adult):
    friend = adult[adult["Name"] == "Ambrose Dalstrom"]
    assert tb.value("candidates_exact.index.tolist()") == friend.index.tolist()
    in_band = (
        adult["Age"].between(30, 39)
        & (adult["Country"] == "United-States")
        & (adult["Workclass"] == "Federal-gov")
        & (adult["Capital Gain"] > 0)
    )
    assert tb.value("len(candidates_banded)") == int(in_band.sum())


@pytest.mark.parametrize(
    "code, fragment",
    [
        ("matching_rows(tiny, {})", "empty"),
        ('matching_rows(tiny, {"Nope": 1})', "unknown column"),
        ('matching_rows(empty, {"Zip": "00001"})', "empty"),
    ],
)
def test_matching_rows_rejects_bad_input(tb, code, fragment):
    assert fragment in value_error_message(tb, code)


def test_generalize_numeric_by_hand(tb):
    assert tb.value(
        "generalize_numeric(pd.Series([34, 40, 9, 39]), 10).tolist()"
    ) == ["30-39", "40-49", "0-9", "30-39"]
    assert tb.value("generalize_numeric(pd.Series([34, 35]), 5).tolist()") == [
        "30-34",
        "35-39",
    ]
    assert tb.value("generalize_numeric(pd.Series([34]), 1).tolist()") == [
        "34-34"
    ]


@pytest.mark.parametrize("width", ["0", "-5", "2.5", "True", "'10'"])
def test_generalize_numeric_rejects_bad_width(tb, width):
    code = f"generalize_numeric(pd.Series([34]), {width})"
    assert "width" in value_error_message(tb, code)


def test_coarsening_never_shrinks_an_anonymity_set(tb):
    # Banding ages can only merge anonymity sets: every row's set keeps all
    # its members. Hand-made ages 34, 35, 44 with width 10: sets 1, 1, 1 -> 2, 2, 1.
    tb.inject(
        'ages = pd.DataFrame({"Age": [34, 35, 44]})\n'
        'banded = ages.assign(Age=generalize_numeric(ages["Age"], 10))',
        pop=True,
    )
    assert tb.value('anonymity_set_sizes(ages, "Age").tolist()') == [1, 1, 1]
    assert tb.value('anonymity_set_sizes(banded, "Age").tolist()') == [2, 2, 1]
    # On the chapter's data, for the friend's four facts.
    before = "anonymity_set_sizes(census_view, INNOCUOUS)"
    after = "anonymity_set_sizes(banded_view, INNOCUOUS)"
    assert tb.value(f"bool(({after} >= {before}).all())")
    assert tb.value(f"int(({after} > {before}).sum())") > 0


def test_glued_top_code_matches_the_csv(adult):
    # UCI records every capital gain of 99,999 or more as 99,999.
    assert glued("deid_gain_top_code") == 99_999
    assert glued("deid_n_top_coded") == int(
        (adult["Capital Gain"] == 99_999).sum()
    )
    friend = adult[adult["Name"] == "Ambrose Dalstrom"].iloc[0]
    # The prose calls the friend's differenced gain exact: it is below the top code.
    assert (
        glued("deid_gain_difference") == int(friend["Capital Gain"]) < 99_999
    )


# Safe Harbor and the risk models


def test_safe_harbor_by_hand(tb):
    tb.inject(
        """
people = pd.DataFrame({
    "Name": ["Al", "Bo"], "SSN": ["900-00-0001", "900-00-0002"],
    "DOB": ["5/7/1960", "1/2/1903"], "Zip": ["68457", "09322"],
    "Age": [34, 91], "Sex": ["Male", "Female"],
})
harbored = safe_harbor(people)
""",
        pop=True,
    )
    assert tb.value("sorted(harbored.columns)") == [
        "Age",
        "Birth year",
        "Sex",
        "ZIP3",
    ]
    assert tb.value('harbored["Birth year"].tolist()') == [
        "1960",
        "90 or older",
    ]
    assert tb.value('harbored["ZIP3"].tolist()') == ["684", "093"]
    assert tb.value('harbored["Age"].tolist()') == [34, 90]
    assert "unknown column" in value_error_message(
        tb, 'safe_harbor(people.drop(columns="DOB"))'
    )


def test_reidentification_risks_by_hand(tb):
    # tiny's Zip classes in the population: 00001 x3 (rows 0, 2, 3),
    # 00002 x1, 00003 x2. Release rows 0, 2, 4: f = 2, 2, 1; F = 3, 3, 2.
    risks = tb.value(
        'reidentification_risks(tiny.loc[[0, 2, 4]], tiny, "Zip")'
    )
    assert risks["prosecutor, largest"] == pytest.approx(1)
    assert risks["prosecutor, average"] == pytest.approx(
        (1 / 2 + 1 / 2 + 1) / 3
    )
    assert risks["journalist, largest"] == pytest.approx(1 / 2)
    assert risks["marketer"] == pytest.approx((1 / 3 + 1 / 3 + 1 / 2) / 3)
    code = 'reidentification_risks(tiny.set_axis(range(10, 16)), tiny, "Zip")'
    assert "population" in value_error_message(tb, code)
    assert "unknown column" in value_error_message(
        tb, 'reidentification_risks(tiny, tiny, "Nope")'
    )


def test_glued_safe_harbor_and_risks_recomputed(adult):
    over_89 = adult["Age"] > 89
    harbor = pd.DataFrame(
        {
            "year": adult["DOB"].str[-4:].mask(over_89, "90+"),
            "zip3": adult["Zip"].str[:3],
        }
    ).join(adult[CENSUS_QI].assign(Age=adult["Age"].clip(upper=90)))

    def sizes(table, columns):
        return table.groupby(columns, dropna=False)["Age"].transform("size")

    threat = ["year", "zip3"] + CENSUS_QI
    unique = float((sizes(harbor, threat) == 1).mean())
    assert glued("deid_harbor_unique") == pytest.approx(unique)
    # The chapter's first draw from its seed is the released 10% sample.
    rng = np.random.default_rng(1994)
    sample = harbor.sample(frac=0.1, random_state=rng)
    assert glued("deid_risk_sample_size") == len(sample)
    roll = ["year", "zip3", "Sex", "Age"]
    for short, columns in [("qi", threat), ("roll", roll)]:
        f = sizes(sample, columns)
        big_f = sizes(harbor, columns)[sample.index]
        assert glued(f"deid_risk_{short}_prosecutor") == pytest.approx(
            (1 / f).mean()
        )
        assert glued(f"deid_risk_{short}_marketer") == pytest.approx(
            (1 / big_f).mean()
        )
        assert f.min() == big_f.min() == 1  # "the largest risks are 1"
    assert glued("deid_risk_largest") == 1
    assert glued("deid_risk_k") == glued("deid_risk_kmap") == 1
    assert glued("deid_risk_fraction") == 0.1
    # "many records unique in the sample have twins in the population"
    assert glued("deid_risk_roll_marketer") < glued(
        "deid_risk_roll_prosecutor"
    )
    sample_unique = sizes(sample, roll) == 1
    twins = sizes(harbor, roll)[sample.index][sample_unique] > 1
    # With the age matched too, about one in five of them.
    assert twins.mean() > 0.15
    # "With the threat model's quasi-identifiers the two measures nearly
    # agree": within one percentage point.
    assert (
        abs(glued("deid_risk_qi_prosecutor") - glued("deid_risk_qi_marketer"))
        < 0.01
    )


def test_glued_sampling_risk_exercise_recomputed(adult):
    # Voter-roll columns, then the census quasi-identifiers one at a time.
    over_89 = adult["Age"] > 89
    harbor = pd.DataFrame(
        {
            "year": adult["DOB"].str[-4:].mask(over_89, "90+"),
            "zip3": adult["Zip"].str[:3],
        }
    ).join(adult[CENSUS_QI].assign(Age=adult["Age"].clip(upper=90)))
    sample = harbor.sample(frac=0.1, random_state=np.random.default_rng(1994))

    def sizes(table, columns):
        return table.groupby(columns, dropna=False)["Age"].transform("size")

    columns = ["year", "zip3", "Sex", "Age"]
    steps = [columns]
    for name in CENSUS_QI:
        if name not in columns:
            columns = columns + [name]
            steps.append(columns)
    prosecutor = [(1 / sizes(sample, c)).mean() for c in steps]
    marketer = [(1 / sizes(harbor, c)[sample.index]).mean() for c in steps]
    assert glued("deid_ex_grow_n_start") == 4
    assert glued("deid_ex_grow_n_end") == len(steps[-1]) == 12
    assert glued("deid_ex_grow_gap_start") == pytest.approx(
        prosecutor[0] - marketer[0]
    )
    assert glued("deid_ex_grow_gap_end") == pytest.approx(
        prosecutor[-1] - marketer[-1]
    )
    reached = [
        len(c) for c, m in zip(steps, marketer, strict=True) if m >= 0.95
    ]
    first_95 = reached[0]
    assert glued("deid_ex_grow_n_95") == first_95
    # The prose: the gap shrinks as attributes are added.
    assert glued("deid_ex_grow_gap_end") < glued("deid_ex_grow_gap_start") / 10


def test_k_anonymity_implies_k_map(tb):
    # F >= f for every released record, so the largest journalist risk never
    # exceeds the largest prosecutor risk. Hand table: Zip classes 00001 x3,
    # 00002 x1, 00003 x2; the release of rows 0, 2 is 2-anonymous and 3-map.
    risks = tb.value('reidentification_risks(tiny.loc[[0, 2]], tiny, "Zip")')
    assert risks["prosecutor, largest"] == pytest.approx(1 / 2)
    assert risks["journalist, largest"] == pytest.approx(1 / 3)
    assert risks["marketer"] == pytest.approx(1 / 3)
    for rows in ([0, 1, 4], [1], [3, 4, 5], [0, 1, 2, 3, 4, 5]):
        risks = tb.value(
            f'reidentification_risks(tiny.loc[{rows}], tiny, "Zip")'
        )
        assert risks["journalist, largest"] <= risks["prosecutor, largest"]
        assert risks["marketer"] <= risks["prosecutor, average"]


# pseudonymization


def test_ssn_candidates_by_hand(tb):
    tb.inject("candidates = ssn_candidates(7)", pop=True)
    assert tb.value("len(candidates)") == 10**6
    assert tb.value("len(set(candidates))") == 10**6
    assert tb.value("candidates[0].decode()") == "007-00-0000"
    assert tb.value("candidates[123456].decode()") == "007-12-3456"
    assert tb.value("candidates[-1].decode()") == "007-99-9999"


@pytest.mark.parametrize("area", ["-1", "1000", "9.5", "True", "'966'"])
def test_ssn_candidates_reject_bad_area(tb, area):
    assert "area" in value_error_message(tb, f"ssn_candidates({area})")


def test_recovery_finds_the_original_ssns_on_one_area(tb, adult):
    # Hash independently of the chapter, then let the chapter's attack invert.
    area = "959"
    originals = adult.loc[adult["SSN"].str.startswith(area + "-"), "SSN"]
    assert len(originals) > 100
    digests = [hashlib.sha256(s.encode()).hexdigest() for s in originals]
    # One SSN from another area must not be "recovered".
    outsider = adult.loc[~adult["SSN"].str.startswith(area), "SSN"].iloc[0]
    digests.append(hashlib.sha256(outsider.encode()).hexdigest())
    tb.inject(f"found_959 = recover_ssns({digests!r}, {int(area)})", pop=True)
    found = tb.value("found_959")
    assert len(found) == len(originals)
    assert sorted(found.values()) == sorted(originals)
    assert all(
        found[d] == s for d, s in zip(digests[:-1], originals, strict=True)
    )


def test_glued_recovery_rate_and_keyed_hash(adult):
    friend = adult[adult["Name"] == "Ambrose Dalstrom"].iloc[0]
    area = int(friend["SSN"][:3])
    assert glued("deid_friend_area") == area
    assert glued("deid_n_in_area") == int(
        adult["SSN"].str.startswith(f"{area}-").sum()
    )
    assert glued("deid_share_recovered") == 1.0
    assert glued("deid_n_keyed_found") == 0
    assert glued("deid_n_joined") == len(adult)
    assert glued("deid_ssn_area_min") >= 900  # never issued: not real SSNs
    # "The whole space our data uses ... is N times larger" than one area.
    areas = adult["SSN"].str[:3].astype(int)
    assert (
        glued("deid_n_data_areas")
        == areas.nunique()
        == (areas.max() - areas.min() + 1)
    )


def test_rounded_percentages_do_not_read_as_all_or_none():
    # A share shown as "100%" or "0%" must be exactly 1 or 0: 99.7% rounded
    # to "100%" would tell the reader that every row is unique.
    import re

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    text = "\n".join(
        cell.source for cell in notebook.cells if cell.cell_type == "markdown"
    )
    pattern = r"\{glue:text\}`(deid_\w+):(\.\d+%)`"
    checked = 0
    for name, spec in set(re.findall(pattern, text)):
        value = glued(name)
        shown = format(value, spec)
        if float(shown.rstrip("%")) == 100:
            assert value == 1, (name, value, shown)
        if float(shown.rstrip("%")) == 0:
            assert value == 0, (name, value, shown)
        checked += 1
    assert checked > 20


def test_glued_count_of_valid_real_ssns_follows_the_rules():
    # Counted from the SSA's rules, one SSN at a time per part.
    areas = [a for a in range(1000) if 1 <= a <= 899 and a != 666]
    groups = range(1, 100)
    serials = range(1, 10_000)
    assert glued("deid_valid_real_ssns") == (
        len(areas) * len(groups) * len(serials)
    )


def test_displayed_tables_fit_the_page():
    # pandas wraps a table too wide for the page with a trailing backslash;
    # the chapter shows only the columns that matter instead.
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            text = output.get("data", {}).get("text/plain", "")
            assert not any(line.endswith("\\") for line in text.split("\n"))


def test_hmac_pseudonyms_by_hand(tb):
    key = "b'k' * 16"
    expected = hmac.new(b"k" * 16, b"900-00-0001", "sha256").hexdigest()
    assert (
        tb.value(f"hmac_pseudonyms(pd.Series(['900-00-0001']), {key}).iloc[0]")
        == expected
    )
    assert (
        tb.value(
            "hmac_pseudonyms(pd.Series(['900-00-0001']), b'x' * 16).iloc[0]"
        )
        != expected
    )
    for bad in ["b'short'", "'k' * 16"]:
        code = f"hmac_pseudonyms(pd.Series(['900-00-0001']), {bad})"
        assert "key" in value_error_message(tb, code)


# sum_query and the differencing attack


def test_sum_query_by_hand(tb):
    assert (
        tb.value('sum_query(tiny, "Age", tiny["Zip"] == "00001", min_rows=3)')
        == 72
    )
    assert (
        tb.value('sum_query(tiny, "Age", tiny["Age"] > 0, min_rows=1)') == 207
    )


@pytest.mark.parametrize(
    "code, fragment",
    [
        (
            'sum_query(tiny, "Age", tiny["Zip"] == "00001", min_rows=4)',
            "refused",
        ),
        (
            'sum_query(tiny, "Age", tiny["Zip"] == "00001", min_rows=0)',
            "min_rows",
        ),
        (
            'sum_query(tiny, "Nope", tiny["Age"] > 0, min_rows=1)',
            "unknown column",
        ),
        ('sum_query(tiny, "Age", tiny["Age"], min_rows=1)', "boolean"),
        (
            'sum_query(tiny, "Age", (tiny["Age"] > 0).iloc[:3], min_rows=1)',
            "boolean",
        ),
        ('sum_query(empty, "Age", empty["Age"] > 0, min_rows=1)', "empty"),
    ],
)
def test_sum_query_rejects_bad_input(tb, code, fragment):
    assert fragment in value_error_message(tb, code)


def test_differencing_attack_reveals_the_friend(tb, adult):
    friend = adult[adult["Name"] == "Ambrose Dalstrom"].iloc[0]
    assert tb.value("int(not_friend.sum())") == len(adult) - 1
    assert tb.value("total_age - total_age_without_friend") == int(
        friend["Age"]
    )
    assert tb.value("int(gain_difference)") == int(friend["Capital Gain"])
    assert tb.value("answers[0] + answers[1] - answers[2]") == int(
        friend["Age"]
    )


def test_differencing_attack_on_chosen_targets(tb, adult):
    # Chosen independently of the chapter: a person alone on ZIP code and
    # kind of employer, one who shares both with someone, one whose
    # employer is blank.
    sizes = adult.groupby(["Zip", "Workclass"], dropna=False)["Age"].transform(
        "size"
    )
    alone = adult.index[(sizes == 1) & adult["Workclass"].notna()][0]
    shared = adult.index[(sizes > 1) & adult["Workclass"].notna()][0]
    blank = adult.index[adult["Workclass"].isna() & (sizes == 1)][0]
    same = adult[
        (adult["Zip"] == adult.at[shared, "Zip"])
        & (adult["Workclass"] == adult.at[shared, "Workclass"])
    ]

    def attack(row):
        return tb.value(
            f'differencing_attack(release, "Age", {row}, ATTACKER_KNOWS)'
        )

    assert attack(alone) == int(adult.at[alone, "Age"])
    assert attack(shared) == int(same["Age"].sum()) != adult.at[shared, "Age"]
    assert attack(blank) == 0  # a blank is never selected: nothing learned
    assert "unknown column" in value_error_message(
        tb, 'differencing_attack(release, "Age", 0, ["Nope"])'
    )


def test_glued_differencing_rate_recomputed_against_its_baseline(adult):
    sizes = adult.groupby(["Zip", "Workclass"], dropna=False)["Age"].transform(
        "size"
    )
    exposed = float(((sizes == 1) & adult["Workclass"].notna()).mean())
    baseline = float(adult["Age"].value_counts(normalize=True).max())
    assert glued("deid_diff_exposed_share") == pytest.approx(exposed)
    assert glued("deid_diff_baseline") == pytest.approx(baseline)
    # 500 random targets: the measured rate is a binomial share around the
    # exact one, standard error sqrt(0.36 * 0.64 / 500) = 0.021; 4 standard
    # errors (0.086) is a tolerance no seed should need.
    n = glued("deid_diff_n_targets")
    assert n == 500
    tolerance = 4 * np.sqrt(exposed * (1 - exposed) / n)
    assert abs(glued("deid_diff_trial_success") - exposed) < tolerance
    assert glued("deid_diff_trial_success") > 5 * baseline


# The exercises' solutions (executed in the chapter; glued values are what
# the reader sees)


def unique_share(table, columns):
    sizes = table.groupby(columns, dropna=False)[columns[0]].transform("size")
    return float((sizes == 1).mean())


def test_glued_smallest_identifying_set_recomputed(adult):
    quasi = CENSUS_QI + ["DOB", "Zip"]
    singles = {name: unique_share(adult, [name]) for name in quasi}
    best = max(singles, key=singles.get)
    assert singles[best] < 0.9
    assert glued("deid_ex_best_single") == best
    assert glued("deid_ex_best_single_share") == pytest.approx(singles[best])
    pairs = {
        (a, b): unique_share(adult, [a, b])
        for i, a in enumerate(quasi)
        for b in quasi[i + 1 :]
    }
    best_pair = max(pairs, key=pairs.get)
    assert set(glued("deid_ex_best_pair").split(" + ")) == set(best_pair)
    assert glued("deid_ex_best_pair_share") == pytest.approx(pairs[best_pair])


def test_smallest_identifying_set_by_hand(tb):
    # tiny: Zip alone makes 1 of 6 unique, DOB + Zip makes 4 of 6.
    found, share = tb.value(
        'smallest_identifying_set(tiny, ["DOB", "Zip"], 0.6)'
    )
    assert list(found) == ["DOB", "Zip"]
    assert share == pytest.approx(4 / 6)
    assert tb.value(
        'smallest_identifying_set(tiny, ["DOB", "Zip"], 0.9) is None'
    )


def test_count_query_by_hand_and_refusals(tb):
    assert (
        tb.value('count_query(tiny, tiny["Zip"] == "00001", min_rows=3)') == 3
    )
    assert "refused" in value_error_message(
        tb, 'count_query(tiny, tiny["Zip"] == "00001", min_rows=4)'
    )
    assert "boolean" in value_error_message(
        tb, 'count_query(tiny, tiny["Age"], min_rows=1)'
    )


def test_count_differencing_finds_the_friend_income(adult):
    friend = adult[adult["Name"] == "Ambrose Dalstrom"].iloc[0]
    assert glued("deid_ex_count_group") == 1
    assert glued("deid_ex_count_high") == int(friend["Target"] == ">50K")


def test_glued_coarsening_shares_recomputed(adult):
    coarse = adult.assign(
        year=adult["DOB"].str[-4:], zip3=adult["Zip"].str[:3]
    )
    full = unique_share(adult, ["DOB", "Zip"])
    for name, columns in [
        ("deid_ex_dob_zip3", ["DOB", "zip3"]),
        ("deid_ex_year_zip", ["year", "Zip"]),
        ("deid_ex_year_zip3", ["year", "zip3"]),
    ]:
        share = unique_share(coarse, columns)
        assert glued(name) == pytest.approx(share)
        assert share <= full  # coarsening never makes more rows unique


def test_glued_sample_uniqueness_from_the_seed(adult):
    # A fresh generator with the chapter's seed, used as the chapter uses it
    # (a 10% released sample, 20 resamples, two keys of 32 bytes, 500 differencing
    # targets, then the 50 samples of the exercise), draws the same samples.
    rng = np.random.default_rng(1994)
    adult.sample(frac=0.1, random_state=rng)  # the released sample
    for _ in range(20):  # the resamples of the voter-roll risks
        adult.sample(frac=0.1, random_state=rng)
    rng.bytes(32)  # the secret key
    rng.bytes(32)  # the key of a separate release
    release = adult.drop(columns=["Name", "SSN"])
    rng.choice(release.index, size=500, replace=False)
    key = ["Age", "Sex", "Zip"]

    def sizes(table):
        return table.groupby(key, dropna=False)["Age"].transform("size")

    unique_in_table = sizes(release) == 1
    in_sample, also = [], []
    for _ in range(50):
        sample = release.sample(frac=0.1, random_state=rng)
        unique = sizes(sample) == 1
        in_sample.append(unique.mean())
        also.append(unique_in_table[sample.index][unique].mean())
    assert glued("deid_ex_n_samples") == 50
    for stat, function in [("mean", np.mean), ("min", min), ("max", max)]:
        assert glued(f"deid_ex_sample_unique_{stat}") == pytest.approx(
            function(in_sample)
        )
        assert glued(f"deid_ex_sample_true_{stat}") == pytest.approx(
            function(also)
        )
    # What the prose concludes, for every one of the 50 samples: a unique
    # match in the sample is often, but not always, unique in the table.
    assert 0.5 < min(also) and max(also) < 1


def test_three_queries_pass_the_audit_rule(adult):
    friend = adult[adult["Name"] == "Ambrose Dalstrom"].iloc[0]
    assert glued("deid_ex_three_query_age") == int(friend["Age"])
    assert glued("deid_ex_min_gap") >= 100


# Correctness pass 3


def _harbor(adult):
    over_89 = adult["Age"] > 89
    return pd.DataFrame(
        {
            "year": adult["DOB"].str[-4:].mask(over_89, "90+"),
            "zip3": adult["Zip"].str[:3],
            "Sex": adult["Sex"],
            "Age": adult["Age"].clip(upper=90),
        }
    )


def test_age_with_birth_year_tells_the_half_year(adult):
    # Finding 5: for everyone up to 89, (year of birth, age) determines
    # whether the birthday falls on or before the reference date, 1994-07-01.
    born = pd.to_datetime(adult["DOB"], format="%m/%d/%Y")
    passed = (born.dt.month < 7) | ((born.dt.month == 7) & (born.dt.day <= 1))
    young = adult["Age"] <= 89
    pairs = pd.DataFrame(
        {"year": born.dt.year, "age": adult["Age"], "passed": passed}
    )[young]
    assert pairs.groupby(["year", "age"])["passed"].nunique().max() == 1
    assert glued("deid_birthday_passed") == pytest.approx(float(passed.mean()))
    assert 0.45 < glued("deid_birthday_passed") < 0.55


def test_voter_roll_risks_with_age_and_their_spread(adult):
    # Finding 5: the voter roll holder matches the age too. The released
    # sample and 20 resamples are the chapter seed's first 21 draws.
    harbor = _harbor(adult)
    columns = ["year", "zip3", "Sex", "Age"]

    def sizes(table):
        return table.groupby(columns)["Age"].transform("size")

    rng = np.random.default_rng(1994)
    draws = [harbor.sample(frac=0.1, random_state=rng) for _ in range(21)]
    prosecutor = [float((1 / sizes(s)).mean()) for s in draws]
    marketer = [float((1 / sizes(harbor)[s.index]).mean()) for s in draws]
    assert glued("deid_risk_roll_prosecutor") == pytest.approx(prosecutor[0])
    assert glued("deid_risk_roll_marketer") == pytest.approx(marketer[0])
    assert glued("deid_risk_resamples") == 20
    for stat, pick in [("min", min), ("max", max)]:
        assert glued(f"deid_risk_roll_prosecutor_{stat}") == pytest.approx(
            pick(prosecutor[1:])
        )
        assert glued(f"deid_risk_roll_marketer_{stat}") == pytest.approx(
            pick(marketer[1:])
        )
    # Without the age both risks are lower in every sample: the age adds.
    without = ["year", "zip3", "Sex"]
    for s in draws:
        f = s.groupby(without)["Age"].transform("size")
        assert (1 / f).mean() < (1 / sizes(s)).mean()
    assert glued("deid_risk_roll_prosecutor_min") > 0.97
    assert glued("deid_risk_roll_marketer_max") < 0.9


def test_itin_share_of_the_synthetic_ssns(adult):
    # IRS ITIN group digits: 50-65, 70-88, 90-92, 94-99 (44 of 100 values).
    group = adult["SSN"].str[4:6].astype(int)
    itin = (
        group.between(50, 65)
        | group.between(70, 88)
        | group.between(90, 92)
        | group.between(94, 99)
    )
    assert glued("deid_itin_share") == pytest.approx(float(itin.mean()))
    assert glued("deid_itin_groups") == "50-65, 70-88, 90-92, 94-99"
    readme = (ROOT / "data" / "README.md").read_text()
    assert "no real number can appear" not in readme
    assert "ITIN" in readme
    assert f"{round(100 * float(itin.mean()))}% of our numbers" in readme


def test_separate_keys_do_not_link_releases(tb):
    assert glued("deid_n_joined_separate") == 0
    assert glued("deid_n_joined") == 32561
    tb.inject(
        """
        key_a, key_b = bytes(range(32)), bytes(range(1, 33))
        ssns = adult["SSN"].head(200)
        same_key = set(hmac_pseudonyms(ssns, key_a))
        other_key = set(hmac_pseudonyms(ssns, key_b))
        """,
        pop=True,
    )
    assert tb.value("len(same_key & other_key)") == 0
    assert tb.value("len(same_key)") == 200


def test_synthetic_first_names_do_not_depend_on_sex(adult):
    # The chapter and data/README.md say a name says nothing about sex in
    # this table; a chi-square test of first name against sex agrees.
    from scipy.stats import chi2_contingency

    first = adult["Name"].str.split().str[0]
    p_value = chi2_contingency(pd.crosstab(first, adult["Sex"]))[1]
    assert p_value > 0.001


def test_code_comments_do_not_mention_nbval():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            for line in cell.source.splitlines():
                if "#" in line:
                    assert "nbval" not in line.lower()


def test_reference_date_is_the_tables_and_matches_the_readme(adult):
    # The reference date belongs to the synthetic dates of birth (see
    # data/README.md), not to the survey; the glued date is the README's,
    # and every age holds on it.
    readme = (ROOT / "data" / "README.md").read_text()
    assert "**Reference date**: 1994-07-01" in readme
    assert glued("deid_reference_date") == "1 July 1994"
    born = pd.to_datetime(adult["DOB"], format="%m/%d/%Y")
    after = (born.dt.month > 7) | ((born.dt.month == 7) & (born.dt.day > 1))
    assert ((1994 - born.dt.year - after) == adult["Age"]).all()
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    text = " ".join(
        " ".join(cell.source.split())
        for cell in notebook.cells
        if cell.cell_type == "markdown"
    )
    assert "survey's reference date" not in text
    assert "the synthetic dates of birth were drawn" in text


# --- the chapter's assignment (graded exercises, scripts/make_assignments.py)

STEM = "deidentification"


def test_the_book_s_solutions_get_full_marks(tb):
    assignments.assert_full_marks(tb, STEM)


def test_the_untouched_student_notebook_scores_zero(tb):
    assignments.assert_stubs_score_zero(tb, STEM)


COUNT_QUERY = """
def count_query(table, where, min_rows=100):
    selected = int(where.sum())
    if {refuse}:
        raise ValueError("query refused")
    return {result}


group_size = count_query(release, everyone) - count_query(
    release, not_friend
)
_high = release["Target"] == ">50K"
is_high = {is_high}
"""
NO_MIN_ROWS = COUNT_QUERY.format(
    refuse="False", result="selected", is_high="1"
)
REFUSES_AT_MIN_ROWS = COUNT_QUERY.format(
    refuse="selected <= min_rows", result="selected", is_high="1"
)
# Right: a NumPy integer, another refusal test, and True for "1".
COUNT_QUERY_RIGHT = COUNT_QUERY.format(
    refuse="not selected >= min_rows",
    result="np.int64(table[where.to_numpy()].shape[0])",
    is_high="bool(count_query(release, _high)"
    " - count_query(release, _high & not_friend))",
)

GENERALIZE = """
share_dob_zip3 = {dob_zip3}
share_year_zip = {year_zip}
share_year_zip3 = {year_zip3}
more_identifying = {more}
"""
BOOK_SHARES = {
    "dob_zip3": "float(coarse_shares['DOB + ZIP3'])",
    "year_zip": "float(coarse_shares['year + ZIP'])",
    "year_zip3": "float(coarse_shares['year + ZIP3'])",
    "more": "'DOB'",
}
FULL_DOB_ZIP = (
    "float((anonymity_set_sizes(release, ['DOB', 'Zip']) == 1).mean())"
)

AUDIT = """
_friend = ~not_friend
_s = not_friend & ({split})
_t = not_friend & ~({split})
masks = {masks}
three_query_age = {age}
"""


@pytest.mark.parametrize(
    ("label", "code", "expected"),
    [
        (
            "deid-ex-count-differencing",
            NO_MIN_ROWS,
            "it must refuse groups below min_rows with ValueError",
        ),
        (
            "deid-ex-count-differencing",
            REFUSES_AT_MIN_ROWS,
            "it refuses only groups below min_rows",
        ),
        (
            "deid-ex-count-differencing",
            "is_high = 0\n",
            "the count of high earners minus the count of high earners",
        ),
        (
            "deid-ex-sampling-risk",
            "n_for_95 = growth.index[growth['marketer'] >= 0.95][0]"
            " - len(VOTER_ROLL_QI)\n",
            "count every column, the voter roll's included",
        ),
        (
            "deid-ex-sampling-risk",
            "n_for_95 = int(growth.index[growth['prosecutor'] >= 0.95][0])\n",
            "where the prosecutor's average risk reaches 95%",
        ),
        (
            "deid-ex-smallest-set",
            "best_set = ('DOB', 'Zip', 'Sex')\ncensus_search = None\n",
            "a set of 2 already makes at least 90% of the rows unique",
        ),
        (
            "deid-ex-smallest-set",
            "best_set = ('Zip',)\ncensus_search = None\n",
            "Zip makes only 19.1% of the rows unique, not 90%",
        ),
        (
            "deid-ex-smallest-set",
            "census_search = (('Age', 'Sex'), 0.5)\n",
            "no set of census quasi-identifiers reaches 90%",
        ),
        (
            "deid-ex-generalise",
            GENERALIZE.format(**{**BOOK_SHARES, "dob_zip3": FULL_DOB_ZIP}),
            "that is the share on the full DOB + ZIP: coarsen first",
        ),
        (
            "deid-ex-generalise",
            GENERALIZE.format(
                **{**BOOK_SHARES, "year_zip": BOOK_SHARES["dob_zip3"]}
            ),
            "that is the share on date of birth + 3-digit ZIP",
        ),
        (
            "deid-ex-generalise",
            GENERALIZE.format(**{**BOOK_SHARES, "more": "'Zip'"}),
            "the date carries more of the power",
        ),
        (
            "deid-ex-auditing",
            AUDIT.format(
                split="release['Sex'] == 'Female'",
                masks="(_s, _t, _s | _t)",
                age="0",
            ),
            "no combination of your three sums counts Ambrose once",
        ),
        (
            "deid-ex-auditing",
            AUDIT.format(
                split="release['Sex'] == 'Female'",
                masks="(_s | _friend, _t, _s)",
                age="0",
            ),
            "queries 1 and 3 differ by 1 rows",
        ),
        (
            "deid-ex-auditing",
            AUDIT.format(
                split="release['Sex'] == 'Female'",
                masks="(_s | _friend, _t, _s | _t)",
                age="35",
            ),
            "your age is 35, but that is not Ambrose's age",
        ),
    ],
    ids=[
        "no-refusal",
        "refuses-at-min-rows",
        "is-high-wrong",
        "columns-added-only",
        "prosecutor-not-marketer",
        "not-smallest",
        "one-column-short-of-90",
        "census-set-claimed",
        "share-before-coarsening",
        "shares-swapped",
        "zip-called-more-identifying",
        "masks-do-not-isolate-ambrose",
        "pair-too-close",
        "wrong-age",
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
            "deid-ex-count-differencing",
            NO_MIN_ROWS,
            "it must refuse groups below min_rows with ValueError",
        ),
        (
            "deid-ex-count-differencing",
            "is_high = 2\n",
            "is_high is 1 if Ambrose earns more than $50,000, else 0",
        ),
        (
            "deid-ex-sampling-risk",
            "n_for_95 = 4\n",
            "count every column, the voter roll's included, and read the "
            "marketer's risk",
        ),
        (
            "deid-ex-sampling-risk",
            "n_for_95 = 13\n",
            "there are 12 quasi-identifiers in all",
        ),
        (
            "deid-ex-smallest-set",
            "best_set = ('DOB', 'Zip', 'Sex')\ncensus_search = None\n",
            "a smaller set inside yours, already makes",
        ),
        (
            "deid-ex-smallest-set",
            "best_set = ('Zip',)\ncensus_search = None\n",
            "Zip makes only 19.1% of the rows unique, not 90%",
        ),
        (
            "deid-ex-smallest-set",
            "census_search = (('Age', 'Sex'), 0.5)\n",
            "census_search is None if no set",
        ),
        (
            "deid-ex-generalise",
            GENERALIZE.format(**{**BOOK_SHARES, "year_zip3": "0.99"}),
            "cannot make more rows unique than either",
        ),
        (
            "deid-ex-generalise",
            GENERALIZE.format(**{**BOOK_SHARES, "more": "'Zip'"}),
            "by your own shares, keeping the full DOB leaves more rows",
        ),
        (
            "deid-ex-auditing",
            AUDIT.format(
                split="release['Sex'] == 'Female'",
                masks="(_friend, _t, _s | _t)",
                age="0",
            ),
            "query 1 covers 1 rows: the office refuses fewer than 100",
        ),
        (
            "deid-ex-auditing",
            AUDIT.format(
                split="release['Sex'] == 'Female'",
                masks="(_s | _friend, _t, _s)",
                age="0",
            ),
            "queries 1 and 3 differ by 1 rows: the new rule refuses",
        ),
    ],
    ids=[
        "no-refusal",
        "is-high-not-0-or-1",
        "columns-added-only",
        "more-columns-than-there-are",
        "not-smallest",
        "one-column-short-of-90",
        "census-set-claimed",
        "coarser-pair-more-unique",
        "zip-called-more-identifying",
        "query-too-small",
        "pair-too-close",
    ],
)
def test_the_public_checks_catch_a_common_mistake(tb, label, code, expected):
    assignments.assert_public_checks_name(tb, STEM, label, code, expected)


@pytest.mark.parametrize(
    ("label", "code"),
    [
        (
            "deid-ex-smallest-set",
            "best_set = ['Zip', 'DOB']\ncensus_search = None\n",
        ),
        ("deid-ex-count-differencing", COUNT_QUERY_RIGHT),
        (
            "deid-ex-generalise",
            GENERALIZE.format(
                dob_zip3="round(float(coarse_shares['DOB + ZIP3']), 3)",
                year_zip="np.float32(coarse_shares['year + ZIP'])",
                year_zip3="round(float(coarse_shares['year + ZIP3']), 3)",
                more="np.str_('DOB')",
            ),
        ),
        ("deid-ex-sampling-risk", "n_for_95 = np.int64(8)\n"),
        ("deid-ex-sampling-risk", "n_for_95 = 8.0\n"),
        (
            "deid-ex-auditing",
            AUDIT.format(
                split="release['Age'] >= 40",
                masks="[np.asarray(_s | _friend), _t.to_numpy(), _s | _t]",
                age="np.float64(sum_query(release, 'Age', _s | _friend)"
                " + sum_query(release, 'Age', _t)"
                " - sum_query(release, 'Age', _s | _t))",
            ),
        ),
    ],
    ids=[
        "list-in-another-order",
        "numpy-count-and-true-for-1",
        "shares-to-3-figures-float32-numpy-str",
        "numpy-int",
        "float",
        "arrays-another-split-float-age",
    ],
)
def test_a_right_answer_in_another_form_gets_full_marks(tb, label, code):
    assignments.assert_answer_passes(tb, STEM, label, code)


def test_prose_spells_with_ize():
    """The book spells with -ize (docs/STYLE.md): the GDPR paragraph said
    "pseudonymisation", "pseudonymised" and "organisational"."""
    import re

    import nbformat

    from conftest import CHAPTERS_DIR

    cells = nbformat.read(
        CHAPTERS_DIR / "deidentification.ipynb", as_version=4
    ).cells
    prose = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    # Labels are identifiers (instructors.md links to them), not prose.
    prose = re.sub(r"(:label: |\{solution-start\} )\S+", "", prose)
    british = re.findall(
        r"\b(?:\w*is(?:ation|ational|ed|es|ing)|analys(?:e|ed|es|ing)"
        r"|\w*(?:pseudonym|organ|real|general|minim|optim|normal)ise)\b",
        prose,
        flags=re.IGNORECASE,
    )
    words = {w.lower() for w in british} - {"raised", "raises", "raising"}
    words = {w for w in words if not w.startswith(("promis", "exercis"))}
    words -= {"otherwise", "premises", "precised"}
    assert not words, words
    assert "**pseudonymization**" in prose
    assert "technical and organizational measures" in prose

"""The data set every chapter runs on: schema, integrity, provenance, reproducibility."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import re
import subprocess
import sys

import pandas as pd
import pytest

from conftest import DATA_DIR, ROOT

CSV = DATA_DIR / "adult_with_pii.csv"
README = DATA_DIR / "README.md"
UCI_SOURCE = ROOT.parent / "shared" / "data" / "uci-adult" / "adult.data"
UCI_SHA256 = "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"
N_RECORDS = 32_561
COLUMNS = [
    "Name",
    "DOB",
    "SSN",
    "Zip",
    "Workclass",
    "Education",
    "Education-Num",
    "Marital Status",
    "Occupation",
    "Relationship",
    "Race",
    "Sex",
    "Hours per week",
    "Country",
    "Target",
    "Age",
    "Capital Gain",
    "Capital Loss",
]
INTEGER_COLUMNS = [
    "Education-Num",
    "Hours per week",
    "Age",
    "Capital Gain",
    "Capital Loss",
]


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return pd.read_csv(CSV, dtype={"Zip": str, "SSN": str})


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def reference_date() -> dt.date:
    """The reference date that data/README.md states for DOB and Age."""
    match = re.search(
        r"Reference date\*\*: (\d{4}-\d{2}-\d{2})", README.read_text()
    )
    assert match, "data/README.md must state the reference date"
    return dt.date.fromisoformat(match.group(1))


def test_header_is_exactly_the_18_documented_columns():
    with CSV.open(newline="") as handle:
        header = next(csv.reader(handle))
    assert header == COLUMNS


def test_every_uci_record_is_present(adult):
    assert len(adult) == N_RECORDS


def test_column_types(adult):
    for column in INTEGER_COLUMNS:
        assert pd.api.types.is_integer_dtype(adult[column]), column
    assert adult["Zip"].str.fullmatch(r"\d{5}").all()
    assert adult["DOB"].str.fullmatch(r"\d{1,2}/\d{1,2}/\d{4}").all()
    assert adult["Name"].str.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+").all()
    assert set(adult["Target"]) == {"<=50K", ">50K"}
    assert set(adult["Sex"]) == {"Female", "Male"}


def test_identifiers_are_never_missing_and_categoricals_only_where_uci_has_gaps(
    adult,
):
    missing = adult.columns[adult.isna().any()].tolist()
    assert sorted(missing) == ["Country", "Occupation", "Workclass"]


def test_names_and_ssns_are_unique(adult):
    assert adult["Name"].is_unique
    assert adult["SSN"].is_unique


def test_ssns_use_only_never_issued_area_numbers(adult):
    parts = adult["SSN"].str.extract(r"^(\d{3})-(\d{2})-(\d{4})$").astype(int)
    assert parts.notna().all().all()
    assert parts[0].between(900, 999).all()
    assert (parts[1] > 0).all() and (parts[2] > 0).all()


def test_date_of_birth_is_consistent_with_age(adult):
    reference = pd.Timestamp(reference_date())
    born = pd.to_datetime(adult["DOB"], format="%m/%d/%Y")
    had_birthday = (born.dt.month < reference.month) | (
        (born.dt.month == reference.month) & (born.dt.day <= reference.day)
    )
    age = reference.year - born.dt.year - (~had_birthday).astype(int)
    assert (age == adult["Age"]).all()


def test_identifiers_make_the_attacks_realistic(adult):
    dob_group = adult.groupby("DOB")["DOB"].transform("size")
    dob_zip_group = adult.groupby(["DOB", "Zip"])["DOB"].transform("size")
    assert dob_group.median() <= 5, (
        "DOB alone should narrow most people to a handful"
    )
    assert (dob_group == 1).mean() < 0.5, (
        "DOB alone should not single out most people"
    )
    assert (dob_zip_group == 1).mean() > 0.95, (
        "DOB + ZIP should single out nearly everyone"
    )


def test_readme_states_the_sha256_of_the_file():
    stated = re.search(
        r"sha256 of `adult_with_pii.csv`\*\*: `([0-9a-f]{64})`",
        README.read_text(),
    )
    assert stated, "data/README.md must state the file's sha256"
    assert stated.group(1) == sha256(CSV)


def test_readme_states_provenance_and_license():
    text = README.read_text()
    for needed in (
        "UCI",
        "Becker",
        "Kohavi",
        "CC BY 4.0",
        "synthetic",
        UCI_SHA256,
    ):
        assert needed in text, needed


@pytest.mark.skipif(
    not UCI_SOURCE.exists(), reason="UCI source not beside the repo"
)
def test_non_identifier_columns_are_the_uci_records_in_order(adult):
    assert sha256(UCI_SOURCE) == UCI_SHA256
    uci = pd.read_csv(
        UCI_SOURCE,
        header=None,
        skipinitialspace=True,
        na_values="?",
        keep_default_na=False,
        names=[
            "Age",
            "Workclass",
            "fnlwgt",
            "Education",
            "Education-Num",
            "Marital Status",
            "Occupation",
            "Relationship",
            "Race",
            "Sex",
            "Capital Gain",
            "Capital Loss",
            "Hours per week",
            "Country",
            "Target",
        ],
    )
    ours = adult[uci.columns.drop("fnlwgt")]
    pd.testing.assert_frame_equal(
        ours, uci.drop(columns="fnlwgt"), check_dtype=False
    )


@pytest.mark.skipif(
    not UCI_SOURCE.exists(), reason="UCI source not beside the repo"
)
def test_regeneration_is_byte_identical(tmp_path):
    output = tmp_path / "adult_with_pii.csv"
    script = ROOT / "scripts" / "make_adult_with_pii.py"
    subprocess.run(
        [sys.executable, str(script), str(UCI_SOURCE), str(output)], check=True
    )
    assert output.read_bytes() == CSV.read_bytes()


def test_generator_rejects_wrong_usage(tmp_path):
    script = ROOT / "scripts" / "make_adult_with_pii.py"
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True
    )
    assert result.returncode == 2 and "usage" in result.stderr

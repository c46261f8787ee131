#!/usr/bin/env python3
"""Build ``adult_with_pii.csv``: the UCI Adult census extract with made-up identifiers.

Usage::

    python scripts/make_adult_with_pii.py SOURCE OUTPUT

SOURCE is UCI's ``adult.data`` (32,561 records); OUTPUT is the CSV to write.
Every record of SOURCE is written, in SOURCE's order, with synthetic ``Name``,
``DOB``, ``SSN`` and ``Zip`` columns added and ``fnlwgt`` dropped. All draws
come from one seeded generator, so two runs give byte-identical files.

Design of the synthetic identifiers (see ``data/README.md``):

* ``Name``: unique "First Last"; first names from a fixed list, last names
  built from invented syllables, so they look like names but belong to nobody.
* ``DOB``: ``M/D/YYYY``, uniform over the days on which a person born then has
  exactly the record's ``Age`` on the reference date ``REFERENCE_DATE``.
* ``SSN``: ``AAA-GG-SSSS`` with area numbers 900-999, which the US Social
  Security Administration never issues, so no real number can appear.
* ``Zip``: a 5-digit string drawn from a pool of ZIP-like codes whose sizes
  are skewed (a few crowded codes, many sparse ones), as real ZIP codes are.
"""

from __future__ import annotations

import csv
import datetime as dt
import sys
from pathlib import Path

import numpy as np

SEED = 20261122
REFERENCE_DATE = dt.date(1994, 7, 1)
N_ZIP_CODES = 20_000
ZIP_ZIPF_EXPONENT = 0.7

UCI_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
]
OUTPUT_COLUMNS = [
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
FROM_UCI = {
    "Workclass": "workclass",
    "Education": "education",
    "Education-Num": "education-num",
    "Marital Status": "marital-status",
    "Occupation": "occupation",
    "Relationship": "relationship",
    "Race": "race",
    "Sex": "sex",
    "Hours per week": "hours-per-week",
    "Country": "native-country",
    "Target": "income",
    "Age": "age",
    "Capital Gain": "capital-gain",
    "Capital Loss": "capital-loss",
}

FIRST_NAMES = """
Aaron Abigail Ada Adele Adrian Agnes Alba Albert Alec Alma Alvin Amara Ambrose
Amelia Anders Angus Anita Ansel Arden Ariel Arlo Astrid Audra Aurelio Avery
Basil Beatrix Belen Benedikt Bettina Blaise Bram Brenna Bruno Calla Calvin
Camille Carmen Casimir Cecily Cedric Celeste Chiara Clement Colette Cormac
Dagny Dalia Damaris Darian Delia Desmond Dimitra Dorian Dulcie Eamon Edda
Edmund Elin Eliot Elodie Emeric Enzo Esme Etta Ezra Fabian Faye Felix Fenna
Fiona Florian Freya Gabor Gemma Gideon Gilda Goran Greta Gwen Hadley Halvard
Hana Hector Helga Hollis Ida Ignatius Ilse Imogen Ines Ingrid Isidore Ivo
Jana Jasper Jolene Jonah Josefa Jude Juno Kai Kasimir Keira Kenji Klara Kofi
Laila Lars Leander Leona Lior Livia Lorcan Lucia Ludo Lysander Mabel Magnus
Maren Marius Matilda Maxim Meera Milo Mina Mirela Nadia Nell Nico Nina Noor
Odile Olaf Olena Orla Oskar Otto Paloma Paz Petra Philippa Quentin Quilla
Rafael Ramona Reuben Rhea Rocco Rosalind Rowan Rufus Sabine Saoirse Selma
Silas Sina Solveig Stellan Sunniva Talia Tamsin Teodor Thea Tobias Ulla Una
Valentin Vera Vesna Viggo Wanda Wilder Wren Xavier Yara Yusuf Zelda Zora
""".split()

SURNAME_STARTS = """
Ab Al Am Ar Ash Bal Bar Bel Ber Bran Brock Cal Car Cas Cor Dal Dor Dun El Ev
Fal Fen Gar Gil Gor Hal Har Hel Hol Ing Jar Kel Kin Lan Lar Lin Mal Mar Mor
Nor Or Pel Pen Quin Ral Rav Ros Sal Sel Sten Tal Tor Ul Val Ver Wal Wen Yar Zel
""".split()
SURNAME_ENDS = """
bank berg bourne brook by combe court dale dane den dorf field ford gate grave
ham hart holm hurst kin ley lock low mere mont more ney ridge rook sett shaw
stad stone strom ton tree vale vick wald well wick wood worth
""".split()


def read_uci(source: Path) -> list[dict[str, str]]:
    """Read UCI ``adult.data``; strip spaces, turn '?' into '' and skip blank lines."""
    records = []
    with source.open(newline="") as handle:
        for row in csv.reader(handle, skipinitialspace=True):
            if not row:
                continue
            if len(row) != len(UCI_COLUMNS):
                raise ValueError(
                    f"{source}: expected {len(UCI_COLUMNS)} fields, got {row!r}"
                )
            values = [
                "" if value.strip() == "?" else value.strip() for value in row
            ]
            records.append(dict(zip(UCI_COLUMNS, values, strict=False)))
    if not records:
        raise ValueError(f"{source}: no records")
    return records


def make_names(n: int, rng: np.random.Generator) -> list[str]:
    """Return ``n`` distinct made-up "First Last" names in random order."""
    surnames = [
        start + end for start in SURNAME_STARTS for end in SURNAME_ENDS
    ]
    n_pairs = len(FIRST_NAMES) * len(surnames)
    if n > n_pairs:
        raise ValueError(
            f"only {n_pairs} distinct names available, {n} requested"
        )
    picks = rng.choice(n_pairs, size=n, replace=False)
    return [
        f"{FIRST_NAMES[i // len(surnames)]} {surnames[i % len(surnames)]}"
        for i in picks
    ]


def shift_years(day: dt.date, years: int) -> dt.date:
    """The same calendar day ``years`` earlier (29 February becomes 28 February)."""
    try:
        return day.replace(year=day.year - years)
    except ValueError:
        return day.replace(year=day.year - years, day=28)


def make_birth_dates(ages: np.ndarray, rng: np.random.Generator) -> list[str]:
    """Draw, for each age, a birth date at which that person is ``age`` on REFERENCE_DATE."""
    dates = []
    for age, u in zip(ages, rng.random(len(ages)), strict=False):
        latest = shift_years(REFERENCE_DATE, int(age))
        earliest = shift_years(REFERENCE_DATE, int(age) + 1) + dt.timedelta(
            days=1
        )
        span = (latest - earliest).days + 1
        born = earliest + dt.timedelta(days=int(u * span))
        dates.append(f"{born.month}/{born.day}/{born.year}")
    return dates


def make_ssns(n: int, rng: np.random.Generator) -> list[str]:
    """Return ``n`` distinct SSN-shaped strings in the never-issued areas 900-999."""
    groups, serials = 99, 9999
    picks = rng.choice(100 * groups * serials, size=n, replace=False)
    area = 900 + picks // (groups * serials)
    group = 1 + (picks // serials) % groups
    serial = 1 + picks % serials
    return [
        f"{a:03d}-{g:02d}-{s:04d}"
        for a, g, s in zip(area, group, serial, strict=False)
    ]


def make_zips(n: int, rng: np.random.Generator) -> list[str]:
    """Draw ``n`` ZIP-like codes from a pool with Zipf-like (skewed) popularity."""
    pool = np.sort(
        rng.choice(np.arange(501, 99_951), size=N_ZIP_CODES, replace=False)
    )
    weights = 1.0 / np.arange(1, N_ZIP_CODES + 1) ** ZIP_ZIPF_EXPONENT
    rng.shuffle(weights)
    codes = rng.choice(pool, size=n, p=weights / weights.sum())
    return [f"{code:05d}" for code in codes]


def build_rows(
    records: list[dict[str, str]], seed: int = SEED
) -> list[list[str]]:
    """Add synthetic identifiers to the UCI records, keeping their order."""
    rng = np.random.default_rng(seed)
    n = len(records)
    ages = np.array([int(record["age"]) for record in records])
    identifiers = {
        "Name": make_names(n, rng),
        "DOB": make_birth_dates(ages, rng),
        "SSN": make_ssns(n, rng),
        "Zip": make_zips(n, rng),
    }
    rows = []
    for i, record in enumerate(records):
        rows.append(
            [
                identifiers[column][i]
                if column in identifiers
                else record[FROM_UCI[column]]
                for column in OUTPUT_COLUMNS
            ]
        )
    return rows


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        print("usage: make_adult_with_pii.py SOURCE OUTPUT", file=sys.stderr)
        return 2
    source, output = Path(argv[1]), Path(argv[2])
    rows = build_rows(read_uci(source))
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(OUTPUT_COLUMNS)
        writer.writerows(rows)
    print(f"wrote {len(rows)} records to {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

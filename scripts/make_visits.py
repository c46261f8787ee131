#!/usr/bin/env python3
"""Build ``visits.csv``: simulated shop visits of the census people.

Usage::

    python scripts/make_visits.py [ADULT_CSV] [OUTPUT] [--scale N]

Defaults: ``data/adult_with_pii.csv`` and ``data/visits.csv``, scale 1.

Each of the 32,561 census people gets a few to dozens of visits to shops in
a public directory of ``N_SHOPS`` shops. Everything is drawn, vectorised,
from one generator seeded with ``SEED``, so two runs give byte-identical
files. With ``--scale N`` every census person is copied N times and each
copy gets its own visits (the benchmark uses 10x; those files are
not stored).

The simulation, kept simple but not pure noise:

* Number of visits: 1 + Poisson(rate * G) with G ~ Gamma(shape 0.5, mean 1),
  a negative binomial: most people visit a few times, a few visit dozens of
  times. The rate grows with age and falls with weekly working hours.
* Shops: ``N_SHOPS`` shops whose popularity falls like rank^-1.5, so a few
  shops are busy and many are visited by one or two people. Each person has
  a favourite shop (drawn by popularity); each visit goes there with
  probability ``P_FAVOURITE`` and to a shop drawn by popularity otherwise.
* Spend: whole dollars, log-normal, higher for people earning >50K.

Columns: ``person`` (the census row number, 0-based, plus 32,561 times the
copy number: a pseudonymous id, not a name or an SSN), ``shop`` (``S0001``
... ``S1000``), ``spend`` (dollars). Rows are sorted by person, then in the
order drawn.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

SEED = 20261123
N_SHOPS = 1000
SHOP_EXPONENT = 1.5
BASE_RATE = 3.0
GAMMA_SHAPE = 0.5
P_FAVOURITE = 0.6
ROOT = Path(__file__).resolve().parents[1]


def shop_names(n_shops: int = N_SHOPS) -> list[str]:
    """The public shop directory: S0001, S0002, ..."""
    return [f"S{number:04d}" for number in range(1, n_shops + 1)]


def make_visits(adult: pd.DataFrame, scale: int = 1) -> pd.DataFrame:
    """Simulated visits of every census person (`scale` copies of each)."""
    if isinstance(scale, bool) or not isinstance(scale, (int, np.integer)):
        raise ValueError(f"scale must be a whole number, got {scale!r}")
    if scale < 1:
        raise ValueError(f"scale must be at least 1, got {scale}")
    rng = np.random.default_rng([SEED, scale])
    n_people = len(adult) * scale
    age = np.tile(adult["Age"].to_numpy(dtype=float), scale)
    hours = np.tile(adult["Hours per week"].to_numpy(dtype=float), scale)
    rich = np.tile((adult["Target"] == ">50K").to_numpy(), scale)

    rate = BASE_RATE * np.exp(0.02 * (age - 38) - 0.015 * (hours - 40))
    frailty = rng.gamma(GAMMA_SHAPE, 1 / GAMMA_SHAPE, n_people)
    n_visits = 1 + rng.poisson(rate * frailty)

    popularity = np.arange(1, N_SHOPS + 1, dtype=float) ** -SHOP_EXPONENT
    popularity /= popularity.sum()
    favourite = rng.choice(N_SHOPS, size=n_people, p=popularity)

    person = np.repeat(np.arange(n_people), n_visits)
    n_rows = len(person)
    elsewhere = rng.choice(N_SHOPS, size=n_rows, p=popularity)
    at_favourite = rng.random(n_rows) < P_FAVOURITE
    shop = np.where(at_favourite, favourite[person], elsewhere)

    log_mean = np.where(rich[person], 3.6, 3.2)
    spend = np.ceil(np.exp(log_mean + 0.8 * rng.standard_normal(n_rows)))

    names = np.array(shop_names())
    return pd.DataFrame(
        {
            "person": person,
            "shop": names[shop],
            "spend": spend.astype(np.int64),
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "adult", nargs="?", default=ROOT / "data" / "adult_with_pii.csv"
    )
    parser.add_argument(
        "output", nargs="?", default=ROOT / "data" / "visits.csv"
    )
    parser.add_argument("--scale", type=int, default=1)
    args = parser.parse_args(argv)
    adult = pd.read_csv(args.adult, dtype={"Zip": str, "SSN": str})
    visits = make_visits(adult, args.scale)
    visits.to_csv(args.output, index=False, lineterminator="\n")
    print(f"wrote {len(visits):,} visits to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Time one DP aggregation three ways as the visits grow (1x, 10x, 100x).

Usage: python scripts/bench_dp_at_scale.py [--scales 1 10 100] [--output CSV]
(also run by scripts/bench.py, that is `make bench`).

The aggregation is the chapter "DP at scale"'s: visits per shop of the
public directory, each person bounded to MAX_PARTITIONS shops and
MAX_PER_PARTITION visits per shop, Laplace noise at EPSILON. Engines:

* ``pandas``: the hand-written version (bounding by random ranks, groupby,
  numpy Laplace noise), from a DataFrame in memory;
* ``PipelineDP LocalBackend``: from the DataFrame's rows, one Python tuple
  at a time;
* ``PipelineDP Spark local[2]``: Spark reads the CSV file (written to a
  temporary folder, not timed) and parses it, then the same pipeline runs.
  The session start and a first small job (Python workers starting and
  importing PipelineDP) are timed once, as the row ``Spark start-up``.

The 10x and 100x data come from ``make_visits(adult, scale)``; they are
not stored. Results go to ``data/dp-at-scale-timings.csv`` with the
machine's label. Wall-clock times are measured, not asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from make_visits import make_visits, shop_names  # noqa: E402

EPSILON = 1.0
MAX_PARTITIONS = 4
MAX_PER_PARTITION = 5


def machine_label() -> str:
    """CPU count, processor and platform of this machine."""
    processor = platform.processor() or platform.machine()
    return (
        f"{os.cpu_count()} CPUs, {processor}, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}"
    )


def pandas_counts(visits: pd.DataFrame, rng: np.random.Generator):
    """The hand-written version: bound, count per shop, add Laplace noise."""
    order = rng.permutation(len(visits))
    rows = visits.iloc[order]
    rows = rows[
        rows.groupby(["person", "shop"]).cumcount() < MAX_PER_PARTITION
    ]
    pairs = rows[["person", "shop"]].drop_duplicates()
    pairs = pairs.iloc[rng.permutation(len(pairs))]
    pairs = pairs[pairs.groupby("person").cumcount() < MAX_PARTITIONS]
    rows = rows.merge(pairs, on=["person", "shop"])
    counts = rows.groupby("shop").size().reindex(shop_names(), fill_value=0)
    scale = MAX_PARTITIONS * MAX_PER_PARTITION / EPSILON
    return counts + rng.laplace(0.0, scale, len(counts))


def pipeline_counts(backend, rows):
    """The PipelineDP version; returns the backend's (lazy) collection."""
    import pipeline_dp

    accountant = pipeline_dp.NaiveBudgetAccountant(
        total_epsilon=EPSILON, total_delta=0
    )
    engine = pipeline_dp.DPEngine(accountant, backend)
    params = pipeline_dp.AggregateParams(
        metrics=[pipeline_dp.Metrics.COUNT],
        noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        max_partitions_contributed=MAX_PARTITIONS,
        max_contributions_per_partition=MAX_PER_PARTITION,
    )
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda row: row[0],
        partition_extractor=lambda row: row[1],
        value_extractor=lambda row: 0,
    )
    result = engine.aggregate(
        rows, params, extractors, public_partitions=shop_names()
    )
    accountant.compute_budgets()
    return result


def parse_line(line: str):
    person, shop, spend = line.split(",")
    return int(person), shop, int(spend)


def start_spark():
    """One local[2] session, quiet; returns (session, seconds incl. warm-up)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    start = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("dp-at-scale-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    import pipeline_dp

    small = spark.sparkContext.parallelize([(0, "S0001", 1)] * 100, 2)
    pipeline_counts(pipeline_dp.SparkRDDBackend(spark.sparkContext), small)
    # a first job starts the Python workers, which import PipelineDP
    pipeline_counts(
        pipeline_dp.SparkRDDBackend(spark.sparkContext), small
    ).collect()
    return spark, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument(
        "--output", default=ROOT / "data" / "dp-at-scale-timings.csv"
    )
    parser.add_argument(
        "--no-spark", action="store_true", help="skip the Spark runs"
    )
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=FutureWarning)  # pyspark
    import pipeline_dp

    adult = pd.read_csv(
        ROOT / "data" / "adult_with_pii.csv", dtype={"Zip": str, "SSN": str}
    )
    machine = machine_label()
    print(f"machine: {machine}")
    records = []

    def record(engine, scale, rows, seconds):
        records.append(
            {
                "engine": engine,
                "scale": scale,
                "rows": rows,
                "seconds": round(seconds, 3),
                "machine": machine,
            }
        )
        print(f"{engine:28s} {scale:4d}x {rows:>12,} rows {seconds:8.2f} s")

    spark = None
    if not args.no_spark:
        spark, seconds = start_spark()
        record("Spark start-up", 0, 0, seconds)
    rng = np.random.default_rng(2026)
    with tempfile.TemporaryDirectory() as folder:
        for scale in args.scales:
            visits = make_visits(adult, scale)
            n_rows = len(visits)
            start = time.perf_counter()
            pandas_counts(visits, rng)
            record("pandas", scale, n_rows, time.perf_counter() - start)

            start = time.perf_counter()
            rows = visits.itertuples(index=False, name=None)
            dict(pipeline_counts(pipeline_dp.LocalBackend(), rows))
            seconds = time.perf_counter() - start
            record("PipelineDP LocalBackend", scale, n_rows, seconds)

            if spark is not None:
                path = Path(folder) / f"visits-{scale}.csv"
                visits.to_csv(path, index=False, header=False)
                start = time.perf_counter()
                lines = spark.sparkContext.textFile(str(path), 2)
                backend = pipeline_dp.SparkRDDBackend(spark.sparkContext)
                pipeline_counts(backend, lines.map(parse_line)).collect()
                seconds = time.perf_counter() - start
                record("PipelineDP Spark local[2]", scale, n_rows, seconds)
                path.unlink()
            del visits
    if spark is not None:
        spark.stop()
    pd.DataFrame(records).to_csv(args.output, index=False, lineterminator="\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

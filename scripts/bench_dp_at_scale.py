#!/usr/bin/env python3
"""Time the chapter "DP at scale"'s aggregation three ways (1x and 10x).

Usage: python scripts/bench_dp_at_scale.py [--scales 1 10] [--runs 5]
[--output CSV] (also run by scripts/bench.py, that is `make bench`).

One source: the functions timed are the chapter's own. Their definitions
(``pandas_visit_counts``, ``bound_contributions``, ``visits_per_shop``,
``laplace_mechanism``, ``require_columns``, ``visit_count_pipeline``) are
read from the code cells of ``chapters/dp-at-scale.ipynb`` and executed
here, and the bounds k and m and the counts' epsilon are the values the
chapter glued (its privately chosen k and m, and COUNT_EPSILON). Visits
per shop of the public directory, each person bounded to k shops and m
visits per shop, Laplace noise of scale k m / epsilon.

Like for like: every engine starts from the data in memory, as in the
chapter, and nothing else is timed:

* ``pandas``: ``pandas_visit_counts(visits, k, m, eps, rng)`` on the frame;
* ``PipelineDP LocalBackend``: ``visit_count_pipeline`` on the list of
  (person, shop, spend) tuples, materialized with ``dict``;
* ``PipelineDP Spark local[2]``: the same list handed to Spark with
  ``parallelize(rows, 2)``, then the same pipeline, ``collect()``-ed.
  The session start and a first small job (Python workers starting and
  importing PipelineDP) are timed once, as the row ``Spark start-up``.

Each engine is measured ``--runs`` times, the engines and sizes
interleaved (run 1 of every engine and size, then run 2, ...), so that a
change in the machine's load hits all of them alike. Every row records
the one-minute load average when it started. The 10x data come from
``make_visits(adult, 10)`` (new people, not copies); they are not stored.
The 100x size (13.6 million rows) is left out by default: on a shared
two-core machine one interleaved round of it takes several minutes.
Wall-clock times are measured, not asserted.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "chapters" / "dp-at-scale.ipynb"
sys.path.insert(0, str(ROOT / "scripts"))

from make_visits import make_visits, shop_names  # noqa: E402

CHAPTER_FUNCTIONS = (
    "require_columns",
    "laplace_mechanism",
    "bound_contributions",
    "visits_per_shop",
    "pandas_visit_counts",
    "visit_count_pipeline",
)
SPARK = "PipelineDP Spark local[2]"


def chapter_cells() -> list[dict]:
    """The chapter's cells, read as JSON (no Jupyter needed)."""
    return json.loads(CHAPTER.read_text(encoding="utf-8"))["cells"]


def chapter_sources() -> dict[str, str]:
    """Source of each of CHAPTER_FUNCTIONS, as defined in the chapter."""
    sources = {}
    for cell in chapter_cells():
        if cell["cell_type"] != "code":
            continue
        text = "".join(cell["source"])
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef):
                if node.name in CHAPTER_FUNCTIONS:
                    sources[node.name] = ast.get_source_segment(text, node)
    missing = set(CHAPTER_FUNCTIONS) - set(sources)
    if missing:
        raise RuntimeError(f"the chapter no longer defines {sorted(missing)}")
    return sources


def chapter_glued(name: str):
    """A value the chapter glued (from its stored outputs)."""
    for cell in chapter_cells():
        for output in cell.get("outputs", []):
            scrapbook = output.get("metadata", {}).get("scrapbook", {})
            if scrapbook.get("name") == name:
                data = output["data"]
                return ast.literal_eval(
                    data["application/papermill.record/text/plain"]
                )
    raise RuntimeError(f"the chapter glues no value named {name!r}")


def chapter_aggregation() -> dict:
    """The chapter's functions and parameters, in one namespace."""
    import pipeline_dp

    namespace = {
        "np": np,
        "pd": pd,
        "pipeline_dp": pipeline_dp,
        "SHOP_DIRECTORY": shop_names(),
    }
    for source in chapter_sources().values():
        exec(compile(source, str(CHAPTER), "exec"), namespace)
    namespace["K"] = int(chapter_glued("scale_k"))
    namespace["M"] = int(chapter_glued("scale_m"))
    namespace["EPSILON"] = float(chapter_glued("scale_count_epsilon"))
    return namespace


def machine_label() -> str:
    """CPU count, processor and platform of this machine."""
    processor = platform.processor() or platform.machine()
    return (
        f"{os.cpu_count()} CPUs, {processor}, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}"
    )


def start_spark(chapter):
    """One local[2] session, quiet; returns (session, seconds incl. warm-up)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pipeline_dp
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
    # a first job starts the Python workers, which import PipelineDP
    small = spark.sparkContext.parallelize([(0, "S0001", 1)] * 100, 2)
    chapter["visit_count_pipeline"](
        pipeline_dp.SparkRDDBackend(spark.sparkContext), small, 1, 1, 1.0
    ).collect()
    return spark, time.perf_counter() - start


def engines(chapter, spark):
    """name -> function(frame, tuples, rng) running one release."""
    import pipeline_dp

    k, m, eps = chapter["K"], chapter["M"], chapter["EPSILON"]
    pipeline = chapter["visit_count_pipeline"]

    def by_pandas(frame, rows, rng):
        chapter["pandas_visit_counts"](frame, k, m, eps, rng)

    def by_local(frame, rows, rng):
        dict(pipeline(pipeline_dp.LocalBackend(), rows, k, m, eps))

    def by_spark(frame, rows, rng):
        rdd = spark.sparkContext.parallelize(rows, 2)
        backend = pipeline_dp.SparkRDDBackend(spark.sparkContext)
        pipeline(backend, rdd, k, m, eps).collect()

    named = {"pandas": by_pandas, "PipelineDP LocalBackend": by_local}
    if spark is not None:
        named[SPARK] = by_spark
    return named


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--output", default=ROOT / "data" / "dp-at-scale-timings.csv"
    )
    parser.add_argument(
        "--no-spark", action="store_true", help="skip the Spark runs"
    )
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=FutureWarning)  # pyspark
    chapter = chapter_aggregation()
    adult = pd.read_csv(
        ROOT / "data" / "adult_with_pii.csv", dtype={"Zip": str, "SSN": str}
    )
    machine = machine_label()
    print(
        f"machine: {machine}; k = {chapter['K']}, m = {chapter['M']}, "
        f"epsilon = {chapter['EPSILON']}"
    )
    records = []

    def record(engine, scale, rows, run, seconds, load):
        records.append(
            {
                "engine": engine,
                "scale": scale,
                "rows": rows,
                "run": run,
                "seconds": round(seconds, 3),
                "load": round(load, 2),
                "k": chapter["K"],
                "m": chapter["M"],
                "epsilon": chapter["EPSILON"],
                "machine": machine,
            }
        )
        print(
            f"{engine:26s} {scale:4d}x run {run} {rows:>11,} rows "
            f"{seconds:8.2f} s (load {load:.1f})",
            flush=True,
        )

    spark = None
    if not args.no_spark:
        load = os.getloadavg()[0]
        spark, seconds = start_spark(chapter)
        record("Spark start-up", 0, 0, 1, seconds, load)
    data = {}
    for scale in args.scales:
        frame = make_visits(adult, scale)
        data[scale] = (frame, list(frame.itertuples(index=False, name=None)))
    rng = np.random.default_rng(2026)
    named = engines(chapter, spark)
    for run in range(1, args.runs + 1):
        # rotate the order of the engines from run to run
        shift = (run - 1) % len(named)
        order = list(named)[shift:] + list(named)[:shift]
        for scale, (frame, rows) in data.items():
            for engine in order:
                load = os.getloadavg()[0]
                start = time.perf_counter()
                named[engine](frame, rows, rng)
                seconds = time.perf_counter() - start
                record(engine, scale, len(frame), run, seconds, load)
    if spark is not None:
        spark.stop()
    pd.DataFrame(records).to_csv(args.output, index=False, lineterminator="\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

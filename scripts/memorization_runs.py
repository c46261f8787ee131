#!/usr/bin/env python3
"""The training runs behind the chapter "Models that memorize".

Usage: python scripts/memorization_runs.py [--output CSV] [--only RUN ...]

One source: the functions (record_lines, train_language_model, the
exposure and extraction helpers, dpsgd_epsilon) and the settings
(N_MEMBERS, the seeds, EPOCHS, ...) are read from the code cells of
chapters/memorization.ipynb and executed here. Every run is seeded, so
running the script again writes the same file (on the same BLAS kernel;
another kernel can move the last bits of the bits-per-character columns).

Each run trains the chapter's character model on the same 300 census
members plus canaries, and writes one row per canary: its rank among
all fills of its secret (exact, by enumeration) and the run's settings
and measurements (epsilon by dp-accounting's Renyi accountant, bits per
character on members and outsiders, SSNs extracted by greedy decoding).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "chapters" / "memorization.ipynb"
OUTPUT = ROOT / "data" / "memorization-runs.csv"


def chapter_namespace() -> dict:
    """The chapter's imports, functions and UPPER_CASE settings."""
    cells = json.loads(CHAPTER.read_text(encoding="utf-8"))["cells"]
    namespace: dict = {}
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        tree = ast.parse("".join(cell["source"]))
        keep = [
            node
            for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef))
            or (
                isinstance(node, ast.Assign)
                and all(
                    isinstance(t, (ast.Name, ast.Tuple)) for t in node.targets
                )
                and all(
                    n.id.isupper()
                    for t in node.targets
                    for n in ast.walk(t)
                    if isinstance(n, ast.Name)
                )
            )
        ]
        code = compile(ast.Module(keep, []), str(CHAPTER), "exec")
        exec(code, namespace)
    return namespace


# name: (canary digits, canaries per copy count, dedup, pseudonyms,
#        epochs, clip norm, noise multiplier)
RUNS = {
    "base": (5, "copies", False, False, 40, np.inf, 0.0),
    **{
        f"epochs-{e}": (5, "copies", False, False, e, np.inf, 0.0)
        for e in (5, 10, 20)
    },
    "dedup": (5, "copies", True, False, 40, np.inf, 0.0),
    "pseudonyms": (5, "copies", False, True, 40, np.inf, 0.0),
    "clipped": (5, "copies", False, False, 40, 5.0, 0.0),
    **{
        f"dp-{sigma}": (5, "copies", False, False, 40, 5.0, float(sigma))
        for sigma in (1, 2, 3, 4, 5, 6)
    },
    "audit": (4, "once", False, False, 40, 5.0, 4.0),
    "audit-nonprivate": (4, "once", False, False, 40, np.inf, 0.0),
}
N_AUDIT = 200


def run(ch: dict, adult: pd.DataFrame, name: str) -> pd.DataFrame:
    digits, layout, dedup, pseudonyms, epochs, clip, sigma = RUNS[name]
    members, outsiders = ch["split_people"](
        adult, ch["N_MEMBERS"], np.random.default_rng(ch["SPLIT_SEED"])
    )
    canary_rng = np.random.default_rng([ch["CANARY_SEED"], digits])
    if layout == "copies":
        per = ch["CANARIES_PER_COPY"]
        canaries = ch["make_canaries"](
            len(ch["COPIES"]) * per, digits, canary_rng
        )
        copies = np.repeat(ch["COPIES"], per)
    else:
        canaries = ch["make_canaries"](N_AUDIT, digits, canary_rng)
        copies = np.ones(N_AUDIT, dtype=int)
    trained = members
    if pseudonyms:
        tokens = np.random.default_rng(ch["SPLIT_SEED"] + 1).permutation(
            10_000
        )[: len(members)]
        trained = members.assign(Name=[f"Person {t:04d}" for t in tokens])
    canary_text = ch["canary_lines"](canaries, copies)
    if dedup:
        canary_text = list(dict.fromkeys(canary_text))
    lines = ch["record_lines"](trained) + canary_text
    model = ch["train_language_model"](
        lines,
        epochs=epochs,
        rng=np.random.default_rng(ch["TRAIN_SEED"]),
        sampling_rate=ch["SAMPLING_RATE"],
        learning_rate=ch["LEARNING_RATE"],
        clip_norm=clip,
        noise_multiplier=sigma,
    )
    return measure(
        ch,
        model,
        name,
        members,
        outsiders,
        canaries,
        copies,
        lines,
        trained,
        epochs,
        clip,
        sigma,
        dedup,
        pseudonyms,
    )


def measure(
    ch,
    model,
    name,
    members,
    outsiders,
    canaries,
    copies,
    lines,
    trained,
    epochs,
    clip,
    sigma,
    dedup,
    pseudonyms,
):
    predict = ch["mlp_predictor"](model)
    steps = ch["training_steps"](epochs, ch["SAMPLING_RATE"])
    epsilon = np.inf
    if sigma > 0:
        epsilon = ch["dpsgd_epsilon"](
            sigma, ch["SAMPLING_RATE"], steps, ch["DELTA"]
        )
    extracted = {
        group: ch["extracted_ssns"](predict, table)
        for group, table in [("members", trained), ("outsiders", outsiders)]
    }
    ranks, candidates = [], []
    for row in canaries.itertuples():
        totals = ch["candidate_log_likelihoods"](
            predict, row.prefix, row.template
        )
        ranks.append(ch["secret_rank"](totals, row.index))
        candidates.append(len(totals))
    return pd.DataFrame(
        {
            "run": name,
            "epochs": epochs,
            "steps": steps,
            "records": len(lines),
            "clip_norm": clip,
            "noise_multiplier": sigma,
            "epsilon": epsilon,
            "dedup": dedup,
            "pseudonyms": pseudonyms,
            "bits_members": ch["bits_per_character"](
                predict, ch["record_lines"](trained)
            ),
            "bits_outsiders": ch["bits_per_character"](
                predict, ch["record_lines"](outsiders)
            ),
            "ssn_members": int(extracted["members"].sum()),
            "ssn_outsiders": int(extracted["outsiders"].sum()),
            "canary": np.arange(len(canaries)),
            "copies": copies,
            "digits": [len(t) - t.count("-") for t in canaries["template"]],
            "rank": ranks,
            "candidates": candidates,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--only", nargs="*", default=list(RUNS))
    args = parser.parse_args()
    ch = chapter_namespace()
    ch["threadpool_limits"](limits=1)
    adult = ch["load_adult"](str(ROOT / "data" / "adult_with_pii.csv"))
    tables = []
    for name in args.only:
        start = time.process_time()
        tables.append(run(ch, adult, name))
        print(
            f"{name}: {time.process_time() - start:.1f} s of CPU",
            file=sys.stderr,
        )
    table = pd.concat(tables, ignore_index=True)
    table.to_csv(args.output, index=False, float_format="%.12g")


if __name__ == "__main__":
    main()

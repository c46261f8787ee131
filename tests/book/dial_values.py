"""What each dial of the book must show (tests/book/dials.py): the rows
the chapter's Python gives at the slider values, and the texts the chart
writes, as closed forms recomputed here or from the grid the chapter
stored. `<figure>_rows(values)` returns a list of row dicts (the dial's
fields); `<figure>_texts(values)` the strings the chart must show.
"""

from __future__ import annotations

import json

from conftest import ROOT


def laplace_rows(values):
    import numpy as np  # noqa: PLC0415
    from scipy import stats  # noqa: PLC0415

    epsilon = values["epsilon"]
    outputs = np.round(np.arange(-8, 7.01, 0.1), 1)
    on_d = stats.laplace.pdf(outputs, loc=0, scale=1 / epsilon)
    on_neighbour = stats.laplace.pdf(outputs, loc=-1, scale=1 / epsilon)
    return [
        {"output": x, "D": a, "neighbour": b, "log_ratio": np.log(a / b)}
        for x, a, b in zip(outputs, on_d, on_neighbour, strict=True)
    ]


def laplace_texts(values):
    import numpy as np  # noqa: PLC0415

    epsilon = values["epsilon"]
    return [
        f"density ratio between {np.exp(-epsilon):.2f}"
        f" and {np.exp(epsilon):.2f}"
    ]


def _rr_posterior(prior, epsilon):
    """Bayes' rule for one randomized-response answer, truth probability p."""
    import numpy as np  # noqa: PLC0415

    p = np.tanh(epsilon / 2)
    yes_if_yes, yes_if_no = (1 + p) / 2, (1 - p) / 2
    after_yes = (
        prior * yes_if_yes / (prior * yes_if_yes + (1 - prior) * yes_if_no)
    )
    after_no = (
        prior
        * (1 - yes_if_yes)
        / (prior * (1 - yes_if_yes) + (1 - prior) * (1 - yes_if_no))
    )
    return after_yes, after_no


def rr_rows(values):
    import numpy as np  # noqa: PLC0415

    priors = np.round(np.arange(0.005, 1, 0.005), 3)
    after_yes, after_no = _rr_posterior(priors, values["epsilon"])
    return [
        {"prior": q, "after_yes": y, "after_no": n}
        for q, y, n in zip(priors, after_yes, after_no, strict=True)
    ]


def rr_texts(values):
    def percent(belief):  # a belief is never 0% or 100%
        if belief < 0.01:
            return "under 1%"
        return "over 99%" if belief > 0.99 else f"{belief:.0%}"

    prior = values["prior"]
    after_yes, after_no = _rr_posterior(prior, values["epsilon"])
    return [
        f"prior {prior:.0%}: a yes moves it to {percent(after_yes)},"
        f" a no to {percent(after_no)}"
    ]


def _stored_datasets(chapter: str) -> list:
    """Every dataset of the one Vega-Lite output the chapter stored."""
    spec = next(
        output["data"]["application/vnd.vegalite.v5+json"]
        for cell in json.loads(
            (ROOT / "chapters" / f"{chapter}.ipynb").read_text("utf-8")
        )["cells"]
        for output in cell.get("outputs", [])
        if "application/vnd.vegalite.v5+json" in output.get("data", {})
    )
    return list(spec["datasets"].values())


def _stored_grid(chapter: str) -> list:
    """The data rows of the one Vega-Lite output the chapter stored (its
    longest dataset)."""
    return max(_stored_datasets(chapter), key=len)


def composition_rows(values):
    """The three bounds at the slider's epsilon, recomputed from their closed
    forms (delta' = 1e-6) on the k values the chapter stored."""
    import math  # noqa: PLC0415

    log_term = math.log(1 / 1e-6)
    rows = []
    for row in _stored_grid("composition"):
        eps, k = row["epsilon"], row["k"]
        if abs(eps - values["epsilon"]) > 1e-9:
            continue
        spread = math.sqrt(2 * k * log_term) * eps
        rows.append(
            {
                "epsilon": eps,
                "k": k,
                "basic": k * eps,
                "advanced": spread + k * eps * (math.exp(eps) - 1),
                "kov": spread + k * eps * math.tanh(eps / 2),
            }
        )
    return rows


def composition_texts(values):
    """First k where each bound beats k * eps: k > 2 ln(1/delta') /
    (2 - e^eps)^2 (advanced, never from eps = ln 2 on) and
    k > ln(1/delta') (e^eps + 1)^2 / 2 (Kairouz et al.)."""
    import math  # noqa: PLC0415

    eps, log_term = composition_rows(values)[0]["epsilon"], math.log(1e6)
    advanced = (
        f"from k = {math.floor(2 * log_term / (2 - math.exp(eps)) ** 2) + 1:,}"
        if eps < math.log(2)
        else "never"
    )
    kov = math.floor(log_term * (math.exp(eps) + 1) ** 2 / 2) + 1
    return [
        f"below k ε: advanced {advanced},",
        f"Kairouz et al. from k = {kov:,}",
    ]


def oracle_rows(values):
    """The standard deviation of a rare value's count (true count near 0)
    among the book's n = 32,561 people: n q (1 - q) / (p - q)^2 with each
    oracle's (p, q), and the central Lap(2 / eps) for replace-one."""
    import numpy as np  # noqa: PLC0415

    n, e = 32_561, np.exp(values["epsilon"])
    rows = []
    for d in np.unique(np.round(np.geomspace(2, 1_000, 40))).astype(int):
        g = max(2, int(np.floor(e + 1 + 0.5)))  # Vega's round: half up
        p_q = {
            "GRR": (e / (e + d - 1), 1 / (e + d - 1)),
            "SUE": (np.sqrt(e) / (np.sqrt(e) + 1), 1 / (np.sqrt(e) + 1)),
            "OUE": (0.5, 1 / (e + 1)),
            "OLH": (e / (e + g - 1), 1 / g),
            "HR": (e / (e + 1), 0.5),
        }
        for p, q in p_q.values():
            rows.append({"d": d, "sd": np.sqrt(n * q * (1 - q)) / (p - q)})
        rows.append({"d": d, "sd": np.sqrt(8) / values["epsilon"]})
    return rows


def oracle_texts(values):
    """The line above the chart (GRR beats OUE while d < 3 e^eps + 2,
    Wang et al.) and each line's label: its name and its value at the
    largest d."""
    import numpy as np  # noqa: PLC0415

    epsilon = values["epsilon"]
    rows = oracle_rows(values)
    last = rows[-6:]  # the six lines at the largest d, in the order above
    assert {row["d"] for row in last} == {max(row["d"] for row in rows)}
    names = ["GRR", "SUE", "OUE", "OLH", "HR", "central"]
    labels = [
        f"{name} {row['sd']:.1f}"
        if row["sd"] < 100
        else f"{name} {row['sd']:,.0f}"
        for name, row in zip(names, last, strict=True)
    ]
    crossing = 3 * np.exp(epsilon) + 2
    return [
        f"ε = {epsilon:.1f}: GRR beats OUE for d below {crossing:,.1f}",
        *labels,
    ]


def range_rows(values):
    """RMSE / epsilon for each range length. The identity line is the
    closed form sqrt(2 L) (L ages, each with Lap(1) noise at eps = 1,
    rounded as stored); the tree lines, exact variances the chapter's
    tests hold, are read from the stored spec."""
    import math  # noqa: PLC0415

    rows = []
    for row in _stored_grid("many-queries"):
        at_one = row["rmse_at_1"]
        if row["strategy"].startswith("identity"):
            assert at_one == round(math.sqrt(2 * row["length"]), 3), row
        rows.append(
            {"length": row["length"], "rmse": at_one / values["epsilon"]}
        )
    return rows


def continual_rows(values):
    """Each design's error sd by day at epsilon 1, from the closed forms:
    fresh sqrt(2) T, increments sqrt(2 t), tree L sqrt(2 popcount(t)),
    optimal L sqrt(2 sum of 2^j / (2^(j+1) - 1) over the 1-bits j of t)."""
    import numpy as np  # noqa: PLC0415

    horizon = int(round(values["horizon"]))
    levels = horizon.bit_length()
    rows = []
    for day in range(1, horizon + 1):
        bits = [j for j in range(levels) if day >> j & 1]
        weight = sum(2**j / (2 ** (j + 1) - 1) for j in bits)
        rows.append(
            {
                "day": day,
                "fresh": np.sqrt(2) * horizon,
                "increments": np.sqrt(2 * day),
                "tree": levels * np.sqrt(2 * len(bits)),
                "tree_optimal": levels * np.sqrt(2 * weight),
            }
        )
    return rows


def continual_texts(values):
    last = continual_rows(values)[-1]
    return [
        f"day {last['day']}: fresh {last['fresh']:.1f}, increments"
        f" {last['increments']:.1f},",
        f"tree {last['tree']:.1f}, optimal {last['tree_optimal']:.1f}",
    ]


def gaussian_rows(values):
    """Classical and analytic sigma (sensitivity 1) at the chosen delta,
    for every epsilon of the stored grid: Dwork and Roth's formula, and
    the root of Balle and Wang's exact delta, found here."""
    import numpy as np  # noqa: PLC0415
    from scipy.optimize import brentq  # noqa: PLC0415
    from scipy.stats import norm  # noqa: PLC0415

    exponent = values["log10_delta"]
    delta = 10.0**exponent
    epsilons = sorted(
        {row["epsilon"] for row in _stored_grid("gaussian-and-accounting")}
    )

    def excess(sigma, epsilon):
        a, b = 1 / (2 * sigma), epsilon * sigma
        return norm.cdf(a - b) - np.exp(epsilon) * norm.cdf(-a - b) - delta

    return [
        {
            "epsilon": epsilon,
            "log10_delta": exponent,
            "classical": np.sqrt(2 * np.log(1.25 / delta)) / epsilon,
            "analytic": brentq(
                excess, 1e-3, 1e4, args=(epsilon,), xtol=1e-15, rtol=1e-15
            ),
        }
        for epsilon in epsilons
    ]


def gaussian_texts(values):
    (row,) = [
        r
        for r in gaussian_rows(values)
        if abs(r["epsilon"] - values["epsilon"]) < 1e-9
    ]
    first = (
        f"ε = {row['epsilon']:.2f}, δ = 1e{int(values['log10_delta'])}:"
        f" analytic σ (solid) = {row['analytic']:.2f}"
    )
    if row["epsilon"] >= 1:
        return [first, "classical formula: proved only for ε < 1"]
    ratio = row["classical"] / row["analytic"]
    return [
        first,
        f"classical σ (dashed) = {row['classical']:.2f},"
        f" {ratio:.2f} times as much",
    ]


def selection_rows(values):
    """Exponential-mechanism probabilities of the stored occupation
    counts (sensitivity 1), computed here with the shift by the maximum."""
    import numpy as np  # noqa: PLC0415

    rows = _stored_grid("private-selection")
    counts = np.array([row["count"] for row in rows], dtype=float)
    weights = np.exp(values["epsilon"] * (counts - counts.max()) / 2)
    return [
        {"count": c, "probability": w / weights.sum()}
        for c, w in zip(counts, weights, strict=True)
    ]


def selection_texts(values):
    top = max(_stored_grid("private-selection"), key=lambda r: r["count"])
    (best, *_) = sorted(
        selection_rows(values), key=lambda r: -r["probability"]
    )
    return [
        f"ε = {values['epsilon']:.3f}: {top['candidate']} is chosen with"
        f" probability {best['probability']:.1%}"
    ]


def release_rows(values):
    return [
        row
        for row in _stored_grid("k-anonymity")
        if row["k"] == round(values["k"])
    ]


def release_texts(values):
    (row,) = release_rows(values)
    return [
        f"k = {row['k']}: the best release publishes {row['classes']:,}"
        " classes",
        f"intervals: age {row['age_width']} years, education"
        f" {row['edu_width']} levels, ZIP {row['zip_width']:,} codes",
        f"{row['suppressed']:,} rows suppressed; {row['loss']:.1%} of the"
        " precision lost",
    ]


def microaggregation_rows(values):
    """The stored MDAV grid's row at the slider's k (disclosure-control)."""
    return [
        row
        for row in _stored_grid("disclosure-control")
        if row["k"] == round(values["k"])
    ]


def microaggregation_texts(values):
    (row,) = microaggregation_rows(values)
    return [
        f"k = {row['k']}: {row['relink']:.1%} re-linked,"
        f" {row['interval']:.1%} within the interval",
        f"{row['loss']:.1%} of the sum of squares lost",
    ]


def stats_rows(values):
    return [
        row
        for row in _stored_grid("dp-statistics")
        if abs(row["epsilon"] - values["epsilon"]) < 1e-9
    ]


def stats_texts(values):
    (row,) = [r for r in stats_rows(values) if r["n"] == 1000]
    return [
        f"n = 1,000: the naive interval covers {row['naive_coverage']:.1%}"
    ]


def _deploy_row(values):
    """The dial's point in chapters/deploying-dp: closed forms at epsilon."""
    import numpy as np  # noqa: PLC0415

    epsilon, beta, prior = values["epsilon"], 0.05, 0.25
    error = max(
        0.0,
        np.ceil(np.log(2 / (beta * (1 + np.exp(-epsilon)))) / epsilon - 1),
    )
    odds = prior / (1 - prior) * np.exp(2 * epsilon)
    return {"epsilon": epsilon, "error": error, "posterior": odds / (1 + odds)}


def deploy_rows(values):
    return [_deploy_row(values)]


def deploy_texts(values):
    row = _deploy_row(values)
    return [
        f"ε = {row['epsilon']:.2f}: counts within ±{int(row['error'])} (95%);",
        f"a 25% suspicion can reach {row['posterior']:.0%}",
    ]


def error_rows(values):
    """The tail of the planar Laplace radius, Gamma(2, 1/epsilon) per km,
    from scipy on the distances the chapter stored."""
    from scipy import stats  # noqa: PLC0415

    law = stats.gamma(a=2, scale=1 / values["epsilon"])
    return [
        {"distance_km": d, "beyond": float(law.sf(d))}
        for d in (
            row["distance_km"] for row in _stored_grid("location-privacy")
        )
    ]


def error_texts(values):
    from scipy import stats  # noqa: PLC0415

    epsilon = values["epsilon"]
    far = stats.gamma(a=2, scale=1 / epsilon).sf(1.0)
    return [
        f"ε = {epsilon:.1f} per km: mean error {2000 / epsilon:,.0f} m",
        f"{far:.1%} of reports farther than 1 km",
    ]


def _stored_glue(chapter: str, name: str) -> str:
    """The text a chapter stored for its glued value `name`."""
    for cell in json.loads(
        (ROOT / "chapters" / f"{chapter}.ipynb").read_text("utf-8")
    )["cells"]:
        for output in cell.get("outputs", []):
            if (
                output.get("metadata", {}).get("scrapbook", {}).get("name")
                == name
            ):
                text = output["data"][
                    "application/papermill.record/text/plain"
                ]
                return "".join(text) if isinstance(text, list) else text
    raise KeyError(name)


def _partition_threshold(epsilon, delta, k):
    """Smallest whole T >= 2 with Pr[1 + Z >= T] = a^(T-1) / (1 + a) at
    most delta / k, for two-sided geometric Z, a = exp(-epsilon / k)."""
    import math  # noqa: PLC0415

    alpha = math.exp(-epsilon / k)
    t = 2
    while alpha ** (t - 1) / (1 + alpha) > delta / k:
        t += 1
    return t


def _partition_probability(n, t, epsilon, k):
    """Pr[n + Z >= t]: Pr[Z >= j] = a^j / (1 + a) for j >= 1."""
    import math  # noqa: PLC0415

    alpha = math.exp(-epsilon / k)
    gap = t - n
    if gap >= 1:
        return alpha**gap / (1 + alpha)
    return 1 - alpha ** (1 - gap) / (1 + alpha)


def partition_rows(values):
    """Release probability on the stored grid of shop sizes, at the
    threshold found here by search (k as the chapter glued it)."""
    k = int(_stored_glue("dp-at-scale", "scale_k"))
    epsilon, delta = values["epsilon"], 10.0 ** values["log10_delta"]
    t = _partition_threshold(epsilon, delta, k)
    (spec_rows,) = [
        rows
        for rows in _stored_datasets("dp-at-scale")
        if rows and "n" in rows[0]
    ]
    return [
        {
            "n": r["n"],
            "probability": _partition_probability(r["n"], t, epsilon, k),
        }
        for r in spec_rows
    ]


def partition_texts(values):
    k = int(_stored_glue("dp-at-scale", "scale_k"))
    epsilon, log10_delta = values["epsilon"], round(values["log10_delta"])
    t = _partition_threshold(epsilon, 10.0**log10_delta, k)
    (shops,) = [
        rows
        for rows in _stored_datasets("dp-at-scale")
        if rows and "shops" in rows[0]
    ]
    expected = sum(
        r["shops"] * _partition_probability(r["people"], t, epsilon, k)
        for r in shops
    )
    total = sum(r["shops"] for r in shops)
    return [
        f"ε = {epsilon:.2f}, δ = 1e{log10_delta}: threshold {t} people",
        f"{expected:.1f} of {total} shops expected in the list",
    ]


def memorization_rows(values):
    """Mean exposure by copies for the stored DP run at the slider's
    noise multiplier (the grid the chapter stored)."""
    return [
        row
        for row in _stored_grid("memorization")
        if abs(row["sigma"] - values["sigma"]) < 1e-9
    ]


def memorization_texts(values):
    (row,) = [r for r in memorization_rows(values) if r["copies"] == 1]
    return [
        f"σ = {values['sigma']:g}: ε = {row['epsilon']:.2f} per record"
        " (δ = 1e-5); 16 copies: up to 16 ε"
    ]

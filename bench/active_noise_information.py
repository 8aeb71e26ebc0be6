"""Why wrong answers cost what they cost: an information view of issue #4's noise target.

An answer flipped with probability ``eps`` carries at most ``1 - H(eps)`` bits about the true
answer (binary symmetric channel), and that is the most it can tell about the clustering, since
the clustering reaches the answer only through the true answer. Relative to the noise-free answer
to the same question, asked with the same past, the share is

    r(p) = (H(p (1 - 2 eps) + eps) - H(eps)) / H(p)        (p = P("yes" | past))

which is largest, ``1 - H(eps)``, at p = 1/2 (0.531 at 10% wrong) and falls towards 0 as the
answer becomes predictable. So 200 noisy answers carry at most the information 0.531 x 200 = 106
answers would carry noise-free, if every one of those were a coin flip beforehand.

This script reads the noise-free and noisy learning curves of ``bench.active`` (5 trials each)
and reports, for each dataset and mode:

* ``equivalent_budget``: the noise-free budget whose ARI (interpolated on the curve) equals the
  noisy ARI at 200 questions: how many noise-free questions the 200 noisy ones were worth;
* ``free_at_capacity_over_free_at_200``: the noise-free ARI at ``(1 - H(eps)) x 200`` questions
  over the noise-free ARI at 200: the ratio a session would reach if wrong answers cost exactly
  the information they destroy at best, and the session lost nothing else.

It runs nothing; it reads the JSON that ``bench.active`` wrote. Findings: bench/README.md,
"Active questions".

    python -m bench.active_noise_information --out bench/results/active_noise_information.json
"""

import argparse
import json

import numpy as np

DEFAULT_IN = "bench/results/active_verify.json"
MODES = [("URASC+N/verify", "unknown"), ("URASC+N/verify", "known"), ("URASC+N/verify/B10", "unknown")]


def binary_entropy(p):
    """H(p) in bits; p in [0, 1], scalar or array."""
    p = np.clip(np.asarray(p, dtype=float), 1e-300, 1.0)
    q = np.clip(1.0 - p, 1e-300, 1.0)
    return -(p * np.log2(p) + q * np.log2(q))


def information_share(p, eps):
    """r(p): information a noisy answer carries over what the noise-free one would (see module)."""
    h = binary_entropy(p)
    return (binary_entropy(p * (1 - 2 * eps) + eps) - binary_entropy(eps)) / h


def equivalent_budget(budgets, curve, value):
    """The budget at which the piecewise linear ``curve`` over ``budgets`` first reaches ``value``
    (None if it never does; the first budget if it starts above)."""
    for i, (b, a) in enumerate(zip(budgets, curve)):
        if a >= value:
            if i == 0:
                return float(b)
            b0, a0 = budgets[i - 1], curve[i - 1]
            return float(b0 + (value - a0) / (a - a0) * (b - b0))
    return None


def analyse(summary, budgets, eps=0.1, at=200):
    rows = []
    capacity = float(1.0 - binary_entropy(eps))
    datasets = sorted({key.split("|")[0] for key in summary})
    for ds in datasets:
        for method, k_mode in MODES:
            free = summary.get(f"{ds}|{method}|{k_mode}|0.0")
            noisy = summary.get(f"{ds}|{method}|{k_mode}|{eps}")
            if free is None or noisy is None:
                continue
            curve = [free["ari_mean"][str(b)] for b in budgets]
            free_at, noisy_at = free["ari_mean"][str(at)], noisy["ari_mean"][str(at)]
            rows.append({
                "dataset": ds, "method": method, "k_mode": k_mode,
                "noise_free_ari": free_at, "noisy_ari": noisy_at, "ratio": noisy_at / free_at,
                "equivalent_budget": equivalent_budget(budgets, curve, noisy_at),
                "free_at_capacity_over_free_at_200": float(np.interp(capacity * at, budgets, curve)) / free_at,
            })
    return {"eps": eps, "budget": at, "capacity_bits": capacity, "capacity_budget": capacity * at,
            "share_at_p": {str(p): float(information_share(p, eps)) for p in (0.5, 0.7, 0.8, 0.9, 0.95)},
            "rows": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inp", default=DEFAULT_IN, help="a bench.active results file with noise 0 and 0.1 rows")
    ap.add_argument("--out", default="bench/results/active_noise_information.json")
    args = ap.parse_args(argv)
    with open(args.inp) as fh:
        data = json.load(fh)
    res = analyse(data["summary"], data["meta"]["budgets"])
    print(f"10% wrong: at most {res['capacity_bits']:.3f} of a bit per answer; 200 answers ~ "
          f"{res['capacity_budget']:.0f} coin-flip answers. Share r(p) at P(yes) = "
          + ", ".join(f"{p}: {v:.2f}" for p, v in res["share_at_p"].items()))
    head = ("dataset", "mode", "free", "noisy", "ratio", "worth", "free@106/free@200")
    print("{:11s} {:28s} {:>5s} {:>5s} {:>5s} {:>6s} {:>18s}".format(*head))
    for r in res["rows"]:
        worth = "-" if r["equivalent_budget"] is None else f"{r['equivalent_budget']:.0f}"
        print(f"{r['dataset']:11s} {r['method'] + ' ' + r['k_mode']:28s} {r['noise_free_ari']:5.2f} "
              f"{r['noisy_ari']:5.2f} {r['ratio']:5.2f} {worth:>6s} {r['free_at_capacity_over_free_at_200']:18.2f}")
    if args.out:
        res["input"] = args.inp
        with open(args.out, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()

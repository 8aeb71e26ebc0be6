"""Merge the per-method passive result files into ``bench/results/passive.json``
and print the comparison with the papers and the open-source peers.

``python -m bench.report [--merge]``: without ``--merge`` only prints.
"""

import argparse
import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

# shared/anchors.md, passive pairwise: best open-source peer and COP-RF paper (clean, 15% flipped).
PEERS = {"iris": (3.66, 2.51), "wine": (3.62, 3.59), "ionosphere": (1.69, 1.11), "wdbc": (2.86, 2.71),
         "segment": (2.05, 1.91)}
PAPER_COP_RF = {"iris": (3.51, 3.39), "ionosphere": (2.15, 1.38), "segment210": (2.19, 2.11)}


def load_all():
    merged, sources = {}, {}
    files = sorted(RESULTS.glob("passive*.json"), key=lambda p: (p.name != "passive.json", p.name))
    for path in files:
        doc = json.loads(path.read_text())
        # rows that the merged file took from a per-method file are re-read from that file,
        # so a renamed or re-run row never survives in its stale merged copy
        stale = {k for k, src in doc.get("sources", {}).items() if src != path.name}
        for ds, per in doc.get("results", {}).items():
            for method, entry in per.items():
                if f"{ds}/{method}" in stale:
                    continue
                if isinstance(entry, dict) and "clean" in entry:
                    merged.setdefault(ds, {})[method] = entry
                    sources[f"{ds}/{method}"] = path.name
    return merged, sources


def table(merged):
    lines = [f"{'dataset':<11} {'method':<16} {'AUC clean':>9} {'AUC 15%':>8} {'ARI@100':>8} {'fit s':>7} "
             f"{'fails':>6} {'trials':>6}"]
    for ds in sorted(merged):
        for m, e in sorted(merged[ds].items()):
            noisy = e.get("noisy", {})
            na = noisy.get("auc") if noisy.get("n_fits", 1) else None
            fails = e["clean"].get("failures", 0) + (noisy.get("failures", 0) if noisy else 0)
            t = e.get("median_fit_seconds")
            lines.append(f"{ds:<11} {m:<16} {e['clean']['auc']:>9.2f} {'-' if na is None else f'{na:.2f}':>8} "
                         f"{e['clean']['mean_ari'][-1]:>8.3f} {'-' if t is None else f'{t:.2f}':>7} {fails:>6} "
                         f"{e.get('n_trials', '?'):>6}")
    return "\n".join(lines)


def targets(merged):
    lines = ["", f"{'dataset':<11} {'ours best (clean)':>26} {'peer':>5} {'ours best (15%)':>26} {'peer':>5}"]
    for ds, (pc, pn) in PEERS.items():
        per = merged.get(ds, {})
        # every row of our two estimators: the defaults and the parameter settings a job can select
        cand = {m: e for m, e in per.items() if m.startswith(("cop_rf", "ccskl"))}
        if not cand:
            continue
        bc = max(cand, key=lambda m: cand[m]["clean"]["auc"])
        bn = max(cand, key=lambda m: cand[m].get("noisy", {}).get("auc", -9))
        c, n = cand[bc]["clean"]["auc"], cand[bn].get("noisy", {}).get("auc", float("nan"))
        lines.append(f"{ds:<11} {bc + f' {c:.2f}':>26} {pc:>5.2f} {bn + f' {n:.2f}':>26} {pn:>5.2f}"
                     f"  {'ok' if c >= pc else f'short {pc - c:.2f}'} / {'ok' if n >= pn else f'short {pn - n:.2f}'}")
    for ds, (pc, pn) in PAPER_COP_RF.items():
        rows = {m: e for m, e in merged.get(ds, {}).items() if m.startswith("cop_rf") and "noisy" in e}
        e = rows.get("cop_rf")
        if e:
            lines.append(f"COP-RF paper {ds}: ours {e['clean']['auc']:.2f} / {e['noisy']['auc']:.2f} "
                         f"vs paper {pc} / {pn}")
        if rows:  # the best COP-RF setting a job can select, clean and noisy separately
            bc = max(rows, key=lambda m: rows[m]["clean"]["auc"])
            bn = max(rows, key=lambda m: rows[m]["noisy"]["auc"])
            lines.append(f"COP-RF paper {ds}, best setting: {bc} {rows[bc]['clean']['auc']:.2f} / "
                         f"{bn} {rows[bn]['noisy']['auc']:.2f} vs paper {pc} / {pn}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--merge", action="store_true", help="write the merged table to bench/results/passive.json")
    args = p.parse_args(argv)
    merged, sources = load_all()
    print(table(merged))
    print(targets(merged))
    if args.merge:
        out = RESULTS / "passive.json"
        doc = json.loads(out.read_text()) if out.exists() else {}
        doc["results"] = merged
        doc["sources"] = sources
        out.write_text(json.dumps(doc, indent=1))
        print(f"written {out}")


if __name__ == "__main__":
    main()

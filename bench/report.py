"""Rebuild every table of ``bench/README.md`` from the files in ``bench/results/``.

``python -m bench.report`` prints the tables; ``python -m bench.report --write`` rewrites each block
``<!-- table:NAME -->`` ... ``<!-- /table -->`` of ``bench/README.md`` in place; ``--check`` exits 1
when the committed README differs from what the results files give.
"""

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
README = HERE / "README.md"

# shared/anchors.md, passive pairwise: best open-source peer and COP-RF paper (clean, 15% flipped).
PEERS = {"iris": (3.66, 2.51), "wine": (3.62, 3.59), "ionosphere": (1.69, 1.11), "wdbc": (2.86, 2.71),
         "segment": (2.05, 1.91)}
PAPER_COP_RF = {"iris": (3.51, 3.39), "ionosphere": (2.15, 1.38), "segment210": (2.19, 2.11)}

BLOCK = re.compile(r"(<!-- table:([a-z0-9_-]+) -->\n)(.*?)(<!-- /table -->)", re.S)


def _load(name):
    return json.loads((RESULTS / name).read_text())


def _f(x, fmt=".2f"):
    return "-" if x is None else format(x, fmt)


def load_passive():
    """Rows of ``passive.json``: ``{dataset: {method: entry}}`` for the rows with a clean score."""
    doc = _load("passive.json")
    return {ds: {m: e for m, e in per.items() if isinstance(e, dict) and "clean" in e}
            for ds, per in doc.get("results", {}).items()}


def passive_table(merged=None):
    """One row per dataset and method: AUC clean / 15% flipped, ARI at 100 pairs, fit seconds, failures."""
    merged = load_passive() if merged is None else merged
    lines = ["| dataset | method | AUC clean | AUC 15% | ARI@100 | fit s | fails | trials |",
             "|---|---|---|---|---|---|---|---|"]
    for ds in sorted(merged):
        for m, e in sorted(merged[ds].items()):
            noisy = e.get("noisy", {})
            na = noisy.get("auc") if noisy.get("n_fits", 1) else None
            fails = e["clean"].get("failures", 0) + (noisy.get("failures", 0) if noisy else 0)
            lines.append(f"| {ds} | `{m}` | {e['clean']['auc']:.2f} | {_f(na)} | {e['clean']['mean_ari'][-1]:.3f} "
                         f"| {_f(e.get('median_fit_seconds'))} | {fails} | {e.get('n_trials', '?')} |")
    return "\n".join(lines)


def passive_targets(merged=None):
    """Best COP-RF / CCSKL row per dataset against the best open-source peer and the COP-RF paper."""
    merged = load_passive() if merged is None else merged
    lines = ["| dataset | ours best, clean | peer | ours best, 15% | peer | COP-RF default | COP-RF paper |",
             "|---|---|---|---|---|---|---|"]
    for ds in sorted(set(PEERS) | set(PAPER_COP_RF)):
        per = merged.get(ds, {})
        cand = {m: e for m, e in per.items() if m.startswith(("cop_rf", "ccskl"))}
        if not cand:
            continue
        bc = max(cand, key=lambda m: cand[m]["clean"]["auc"])
        bn = max(cand, key=lambda m: cand[m].get("noisy", {}).get("auc", -9))
        c, n = cand[bc]["clean"]["auc"], cand[bn].get("noisy", {}).get("auc")
        pc, pn = PEERS.get(ds, (None, None))
        d = per.get("cop_rf")
        default = f"{d['clean']['auc']:.2f} / {_f(d.get('noisy', {}).get('auc'))}" if d else "-"
        paper = "{} / {}".format(*PAPER_COP_RF[ds]) if ds in PAPER_COP_RF else "-"
        lines.append(f"| {ds} | `{bc}` {c:.2f} | {_f(pc)} | `{bn}` {_f(n)} | {_f(pn)} | {default} | {paper} |")
    return "\n".join(lines)


def active_table(name, budgets=None):
    """Mean ARI (± std) per dataset, method, K mode and noise of a ``bench.active`` results file."""
    doc = _load(name)
    budgets = [str(b) for b in (budgets or doc["meta"]["budgets"])]
    lines = ["| dataset | method | K | noise | trials | " + " | ".join(f"ARI@{b}" for b in budgets)
             + " | next batch s (median / max) |",
             "|---|---|---|---|---|" + "---|" * len(budgets) + "---|"]
    for row in sorted(doc["summary"].values(), key=lambda r: (r["dataset"], r["method"], r["k_mode"], r["noise"])):
        cells = [f"{row['ari_mean'][b]:.3f} ± {row['ari_std'][b]:.3f}" if b in row["ari_mean"] else ""
                 for b in budgets]
        speed = (f"{row['suggest_s_median']:.3f} / {row['suggest_s_max']:.3f}"
                 if row.get("suggest_s_median") is not None else "-")
        lines.append(f"| {row['dataset']} | `{row['method']}` | {row['k_mode']} | {row['noise']:g} | {row['n_trials']} | "
                     + " | ".join(cells) + f" | {speed} |")
    return "\n".join(lines)


def relative_table(names):
    """Mean ARI / F-measure per dataset, method, wrong level and triplet count (``bench.relative``'s tables)."""
    from bench.relative import summary_tables

    records = [r for n in names for r in _load(n)["records"]]
    return summary_tables(records).strip()


def crowd_aggregation_table():
    """Mean fraction of questions aggregated right, per pair mix, crowd and model, after each question count."""
    mixes = {"random pairs": "crowd_aggregation_random.json", "50% must-link": "crowd_aggregation_ml50.json",
             "80% must-link": "crowd_aggregation_ml80.json"}
    docs = {mix: _load(name) for mix, name in mixes.items()}
    counts = sorted({c for d in docs.values() for c in d["runs"]}, key=int)
    lines = ["| pairs | crowd | model | " + " | ".join(f"after {c}" for c in counts) + " |",
             "|---|---|---|" + "---|" * len(counts)]
    for mix, doc in docs.items():
        first = doc["runs"][counts[0]]["accuracy"]
        for crowd, models in first.items():
            for model in models:
                cells = []
                for c in counts:
                    acc = doc["runs"].get(c, {}).get("accuracy", {}).get(crowd, {}).get(model)
                    cells.append(f"{sum(acc) / len(acc):.3f}" if acc else "")
                lines.append(f"| {mix} | {crowd} | `{model}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def crowd_ties_table():
    """Mean ARI and accepted answers per aggregation, URASC rule and worker error rate."""
    doc = _load("crowd_ties.json")
    lines = ["| aggregation | URASC rule | p wrong | seeds | ARI | answers accepted | told dont_know |",
             "|---|---|---|---|---|---|---|"]
    for c in doc["cells"]:
        lines.append(f"| {c['aggregation']} | `{c['rule']}` | {c['noise']:g} | {c['seeds']} | {c['ari']:.3f} "
                     f"| {c['answers_accepted']:.1f} | {c['told_dont_know']:.2f} |")
    return "\n".join(lines)


def active_triplets_table(name):
    """Mean ARI per dataset, wrong-answer rate and strategy after each number of answers."""
    doc = _load(name)
    budgets = sorted({b for row in doc["summary"] for b in row["ari"]}, key=int)
    lines = ["| dataset | wrong | strategy | trials | " + " | ".join(f"ARI@{b}" for b in budgets)
             + " | pass s (median) |", "|---|---|---|---|" + "---|" * len(budgets) + "---|"]
    for row in doc["summary"]:
        cells = [f"{row['ari'][b]:.3f}" if b in row["ari"] else "" for b in budgets]
        lines.append(f"| {row['dataset']} | {row['wrong']:g} | `{row['strategy']}` | {row['trials']} | "
                     + " | ".join(cells) + f" | {_f(row.get('pass_seconds_median'))} |")
    return "\n".join(lines)


def scale_limits_table():
    from bench.scale_limits import table

    return table(_load("scale_limits.json"))


def results_index():
    """Every file in ``bench/results/`` with the command that writes it (``FILES`` below)."""
    lines = ["| file | what it measures | written by |", "|---|---|---|"]
    names = sorted(p.name for p in RESULTS.glob("*.json"))
    missing = [n for n in names if n not in FILES]
    if missing:
        raise SystemExit(f"bench/report.py FILES does not describe {missing}")
    for n in names:
        what, cmd = FILES[n]
        lines.append(f"| `{n}` | {what} | `{cmd}` |")
    return "\n".join(lines)


TABLES = {
    "passive": passive_table,
    "passive-targets": passive_targets,
    "active": lambda: active_table("active.json"),
    "active-verify": lambda: active_table("active_verify.json"),
    "active-crowd": lambda: active_table("active_crowd.json"),
    "relative-dcrc": lambda: relative_table(["relative_dcrc.json"]),
    "relative-recon": lambda: relative_table(["relative_recon_clean.json", "relative_recon_noisy10_small.json",
                                              "relative_recon_noisy10_digits-389.json",
                                              "relative_recon_noisy10_letters-ijlt.json"]),
    "crowd-aggregation": crowd_aggregation_table,
    "crowd-ties": crowd_ties_table,
    "active-triplets": lambda: active_triplets_table("active_triplets.json"),
    "scale-limits": scale_limits_table,
    "results": results_index,
}

_A = "python -m bench.active"
# What each results file measures and the command that writes it (its default name where the script
# has one); a re-run overwrites the file, git keeps the earlier measurements.
FILES = {
    "passive.json": ("passive pairwise protocol, every method and dataset, clean and 15% flipped",
                     "python -m bench.passive --methods M --datasets D --merge"),
    "active.json": ("active pairwise protocol (K known / unknown, noise 0 / 2% / 10%, ablations, B = 10)",
                    f"{_A} --configs final --out P; {_A} --merge bench/results/active.json P "
                    "--out bench/results/active.json"),
    "active_verify.json": ("active protocol under k_growth='verify' (noise 0 / 10%, K known / unknown)",
                           f"{_A} --configs verify --out P; {_A} --merge bench/results/active_verify.json P "
                           "--out bench/results/active_verify.json"),
    "active_crowd.json": ("active protocol with three answers per question (majority vote, 10% wrong per worker)",
                          f"{_A} --configs crowd --out P; {_A} --merge bench/results/active_crowd.json P "
                          "--out bench/results/active_crowd.json"),
    "active_known_segment_t5-19.json": ("segment, K known, URASC+N, trials 5-19 (20 trials with active.json's 0-4)",
                                        f"{_A} --configs final_main --methods URASC+N --k-mode known "
                                        "--datasets segment --trials 15 --trial-start 5"),
    "active_letter.json": ("next-batch latency on letter (20000 rows), unlimited BLAS threads",
                           f"{_A} --letter-only --out bench/results/active_letter.json"),
    "active_letter_1thread.json": ("the same with one BLAS thread (as the workers run)",
                                   f"OPENBLAS_NUM_THREADS=1 {_A} --letter-only --out bench/results/active_letter_1thread.json"),
    "active_letter_busy.json": ("letter latency on a loaded machine, unlimited BLAS threads",
                                f"{_A} --letter-only --out bench/results/active_letter_busy.json"),
    "active_letter_busy_1thread.json": ("letter latency on a loaded machine, one BLAS thread",
                                        f"OPENBLAS_NUM_THREADS=1 {_A} --letter-only "
                                        "--out bench/results/active_letter_busy_1thread.json"),
    "active_verify_iono_t5-9.json": ("verify rows of ionosphere, trials 5-9",
                                     f"{_A} --configs verify --datasets ionosphere --trials 5 --trial-start 5"),
    "active_verify_segment20.json": ("segment, K unknown, sequential verify rows, 20 trials",
                                     f"{_A} --configs verify_unknown --methods URASC+N/verify --datasets segment "
                                     "--trials 20"),
    "active_verify_segment40.json": ("the same over 40 trials", "as active_verify_segment20.json, --trials 40"),
    "active_verify_known_segment20.json": ("segment, K known, sequential verify rows, 20 trials",
                                           f"{_A} --configs verify --methods URASC+N/verify --k-mode known "
                                           "--datasets segment --trials 20"),
    "active_verify_b10_segment40.json": ("segment, verify rows in batches of 10, 40 trials",
                                         f"{_A} --configs verify --methods URASC+N/verify/B10 --datasets segment "
                                         "--trials 40"),
    "active_noise_information.json": ("information an answer carries at 10% noise, from active_verify.json",
                                      "python -m bench.active_noise_information"),
    "active_noise_information_segment20.json": ("the same from active_verify_segment20.json (segment, 20 trials)",
                                                "python -m bench.active_noise_information --inp "
                                                "bench/results/active_verify_segment20.json --out "
                                                "bench/results/active_noise_information_segment20.json"),
    "active_prune_bound.json": ("segment, K unknown, sequential verify: ARI with oracles that drop wrong set "
                                "members or duplicate sets, 20 trials",
                                "python -m bench.active_prune_bound --trials 20 --jobs 2"),
    "active_prune_bound_b10.json": ("the same oracles in batches of 10, 20 trials",
                                    "python -m bench.active_prune_bound --methods URASC+N/verify/B10 --trials 20 "
                                    "--jobs 2 --out bench/results/active_prune_bound_b10.json"),
    "active_forest_labels.json": ("URASC with COP-RF labels at the end (segment, 5 trials)",
                                  "python -m bench.active_forest_labels --datasets segment --trials 5"),
    "active_triplets.json": ("active triplet questions (ActiveDCRC against random triplets)",
                             "python -m bench.active_triplets"),
    "active_triplets_maxiter30.json": ("the same with max_iter=30, uncertainty strategy",
                                       "python -m bench.active_triplets --strategies uncertainty --max-iter 30 "
                                       "--out bench/results/active_triplets_maxiter30.json"),
    "active_triplets_segment300.json": ("the same on segment, 300 questions, no wrong answers, 3 trials",
                                        "python -m bench.active_triplets --datasets segment --wrong 0 --trials 3 "
                                        "--budgets 50,100,200,300 --out bench/results/active_triplets_segment300.json"),
    "crowd_aggregation_random.json": ("crowd aggregation over random pairs (majority vote against one-coin EM)",
                                      "python -m bench.crowd_aggregation"),
    "crowd_aggregation_ml50.json": ("the same with 50% must-link pairs",
                                    "python -m bench.crowd_aggregation --must-link-rate 0.5 "
                                    "--out bench/results/crowd_aggregation_ml50.json"),
    "crowd_aggregation_ml80.json": ("the same with 80% must-link pairs",
                                    "python -m bench.crowd_aggregation --must-link-rate 0.8 "
                                    "--out bench/results/crowd_aggregation_ml80.json"),
    "crowd_ties.json": ("tied crowd questions on the whole stack", "python -m bench.crowd_ties --seeds 40"),
    "relative_dcrc.json": ("relative triplets protocol, DCRC and DCRC-YN, 0% and 10% wrong answers",
                           "python -m bench.relative --methods kmeans dcrc_rel dcrc dcrc_yn --wrong 0 0.1 "
                           "--out bench/results/relative_dcrc.json"),
    "relative_recon_clean.json": ("relative triplets protocol, ReCon and hierarchical baselines, no wrong answers",
                                  "python -m bench.relative --methods kmeans centroid ward recon recon_info "
                                  "--wrong 0 --out bench/results/relative_recon_clean.json"),
    "relative_recon_noisy10_small.json": ("ReCon with 10% wrong answers: iris, wine, ionosphere, sk-digits-389",
                                          "python -m bench.relative --datasets iris wine ionosphere sk-digits-389 --methods recon "
                                          "recon_info --wrong 0.1 --out bench/results/relative_recon_noisy10_small.json"),
    "relative_recon_noisy10_digits-389.json": ("ReCon with 10% wrong answers: Digits-389",
                                               "python -m bench.relative --datasets digits-389 --methods recon recon_info --wrong 0.1 "
                                               "--trials 1 --out bench/results/relative_recon_noisy10_digits-389.json"),
    "relative_recon_noisy10_letters-ijlt.json": ("ReCon with 10% wrong answers: Letters-IJLT",
                                                 "python -m bench.relative --datasets letters-ijlt --methods recon recon_info --wrong 0.1 "
                                                 "--trials 1 --out bench/results/relative_recon_noisy10_letters-ijlt.json"),
    "scale_limits.json": ("peak memory and seconds per method and size (what sets the row limits)",
                          "python -m bench.scale_limits"),
    "speed_active_triplets.json": ("ActiveDCRC's time per question", "python -m bench.speed_active_triplets"),
    "speed_answer_batch.json": ("time to accept one large answer batch over HTTP",
                                "python -m bench.speed_answer_batch --trials 7"),
    "speed_ccskl.json": ("CCSKL fit time", "python -m bench.speed_ccskl"),
    "speed_cop_rf.json": ("COP-RF fit time (1000 trees, 100 constraints)", "python -m bench.speed_cop_rf"),
    "speed_cop_rf_drop_violated.json": ("the same with drop_violated=True",
                                        "python -m bench.speed_cop_rf --drop-violated "
                                        "--out bench/results/speed_cop_rf_drop_violated.json"),
    "speed_cop_rf_rca.json": ("the same with the passive targets' setting (rca_components='all', drop_violated)",
                              "python -m bench.speed_cop_rf --params '{\"rca_components\": \"all\"}' "
                              "--out bench/results/speed_cop_rf_rca.json"),
    "speed_crowd.json": ("accepted answers per second with a crowd on the whole stack",
                         "python -m bench.speed_crowd --pool-sizes 10,50 --crowds 3,12,48 --seeds 0,1,2"),
    "speed_relative.json": ("ReCon and DCRC fit time, Letters-IJLT, 3000 triplets", "python -m bench.speed_relative"),
    "speed_session_pass.json": ("time of a session's learning pass",
                                "python -m bench.speed_session_pass --datasets wdbc,segment,letter --passes 10"),
    "speed_session_long.json": ("the same over 150 passes (1500 answers), segment",
                                "python -m bench.speed_session_pass --datasets segment --passes 150 "
                                "--out bench/results/speed_session_long.json"),
    "worker_loss.json": ("recovery when a worker dies mid-job / mid-pass", "python -m bench.worker_loss --reps 3"),
    "annotator_page.json": ("the annotator page in Chromium: page load and answer -> next question, ARI by clicks",
                            "python -m bench.annotator_page"),
    "fair_dispatch.json": ("another tenant's single job behind one tenant's backlog, with and without fair dispatch",
                           "python -m bench.fair_dispatch --backlog 200"),
    "tenant_flood.json": ("a quiet tenant's GET latency and job start while another tenant floods the API",
                          "python -m bench.tenant_flood --connections 50 --seconds 30 --nice-worker"),
    "slow_clients.json": ("/healthz latency with slow-header and slow-body connections held open",
                          "python -m bench.slow_clients --slow-header 100 --slow-body 20 --seconds 20"),
    "upload.json": ("1 000 000 x 384 float32 uploaded as .npy, resumed .npy and Parquet: time and API memory",
                    "python -m bench.upload --rows 1000000 --dims 384"),
    "scale_limits_large.json": ("spectral_learning, cop_kmeans, ccskl and the pairwise session's first pass from "
                                "100 000 to 1 000 000 rows of 128 columns, 2000 constraints (one probe at a time)",
                                "python -m bench.scale_limits --methods spectral_learning cop_kmeans ccskl "
                                "session_urasc --n 100000 250000 500000 1000000 --d 128 --constraints 2000 "
                                "--as-bytes 14000000000 --timeout 1200 --out bench/results/scale_limits_large.json"),
    "scale_ari_letter.json": ("ARI on letter (20 000 rows, K = 26) with 2000 random ground-truth pairs: cop_kmeans, "
                              "spectral_learning and their fits without pairs, ccskl, spectral and cop_rf, 2 seeds",
                              "python -m bench.scale_ari --seeds 2 --cop-rf"),
    "auto_iris_t2.json": ("method auto on the passive protocol, iris, 2 trials, against every candidate setting alone "
                          "and the default cop_rf job (time)",
                          "python -m bench.auto --datasets iris --trials 2 --out bench/results/auto_iris_t2.json"),
    "auto_wine_t1.json": ("method auto on the passive protocol, wine, 1 trial, against every candidate setting "
                          "alone", "python -m bench.auto --datasets wine --trials 1 --out bench/results/auto_wine_t1.json"),
    "auto_segment_t1.json": ("method auto on the passive protocol, segment, 1 trial, auto and the default cop_rf "
                             "job only", "python -m bench.auto --datasets segment --trials 1 --no-alone "
                             "--out bench/results/auto_segment_t1.json"),
    "auto_t10.json": ("method auto on the passive protocol, iris, wine, ionosphere and wdbc, 10 trials, auto and the "
                      "default cop_rf job (the best single settings are passive.json's)",
                      "python -m bench.auto --datasets iris,wine,ionosphere,wdbc --trials 10 --no-alone "
                      "--out bench/results/auto_t10.json"),
    "relative_auto_iris_wine_t2.json": ("relative triplets protocol, auto against DCRC and ReCon, iris and wine",
                                        "python -m bench.relative --datasets iris wine --methods auto_rel recon "
                                        "dcrc_rel --trials 2 --wrong 0 --fractions 1.0 "
                                        "--out bench/results/relative_auto_iris_wine_t2.json"),
    "relative_auto_iono_digits_t2.json": ("the same on ionosphere and digits 3/8/9",
                                          "python -m bench.relative --datasets ionosphere digits-389 --methods "
                                          "auto_rel recon dcrc_rel --trials 2 --wrong 0 --fractions 1.0 "
                                          "--out bench/results/relative_auto_iono_digits_t2.json"),
    "crowd_quality.json": ("5 workers of whom 2 answer at random, the session as served (gold first, flagged workers "
                           "stop) and every worker on every question: ARI kept with each aggregation (ours and "
                           "crowd-kit's), gold asked", "python -m bench.crowd_quality"),
    "scale_limits_150k_spectral.json": ("spectral on 150 000 x 128 (the approximate-graph and multigrid paths)",
                                        "python -m bench.scale_limits --methods spectral --n 150000 --d 128 "
                                        "--out bench/results/scale_limits_150k_spectral.json"),
}


def render(name):
    """The markdown of table ``name`` (a key of ``TABLES``), computed from ``bench/results/``."""
    if name not in TABLES:
        raise KeyError(f"no table {name!r}; known: {', '.join(TABLES)}")
    return TABLES[name]()


def rebuild(text):
    """``text`` with every ``<!-- table:NAME -->`` ... ``<!-- /table -->`` block regenerated."""
    return BLOCK.sub(lambda m: f"{m.group(1)}{render(m.group(2))}\n{m.group(4)}", text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="rewrite the tables of bench/README.md in place")
    g.add_argument("--check", action="store_true", help="exit 1 if bench/README.md's tables are not up to date")
    p.add_argument("--readme", default=str(README), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    path = Path(args.readme)
    text = path.read_text()
    new = rebuild(text)
    if args.write:
        if new != text:
            path.write_text(new)
        print(f"{path}: {len(BLOCK.findall(new))} tables {'rewritten' if new != text else 'already current'}")
    elif args.check:
        if new != text:
            print(f"{path}: tables differ from bench/results/; run python -m bench.report --write", file=sys.stderr)
            return 1
        print(f"{path}: {len(BLOCK.findall(new))} tables current")
    else:
        for name in TABLES:
            print(f"## {name}\n{render(name)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Prints docs/experiments/simulate.md's tables of `simulate` runs as Markdown, from the runs' summary.json.

    docs/experiments/tables.py defaults   OUT   # simulate at the defaults on the three datasets
    docs/experiments/tables.py mechanisms OUT   # every mechanism on Diabetes and synthetic data
    docs/experiments/tables.py mechanisms OUT dp-sgd-bst   # only the rows of that --mechanism

It runs the `simulate` commands it prints (target/release/dpagg-aggregator, or $DPAGG_AGGREGATOR),
writing into OUT, and builds each table from the summary.json they wrote, so no number in those
tables is copied by hand. A run that is refused is shown with the first line of its error.
"""
import json, os, pathlib, subprocess, sys

BIN = os.environ.get("DPAGG_AGGREGATOR", "target/release/dpagg-aggregator")


def simulate(out, name, args):
    folder = pathlib.Path(out) / name
    cmd = [BIN, "simulate", *args, "--out", str(folder)]
    shown = "dpagg-aggregator simulate " + " ".join(args)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        lines = [l for l in done.stderr.splitlines() if l.strip()]
        return shown, None, lines[-1] if lines else f"exit {done.returncode}"
    return shown, json.loads((folder / "summary.json").read_text()), None


def cell(s):
    return f"{s['mean']:.3f} ± {s['sd']:.3f}"


def defaults(out):
    for dataset in ("synthetic", "diabetes", "breast-cancer"):
        shown, s, error = simulate(out, dataset, ["--dataset", dataset])
        print(f"`{shown}`" + (f": refused: {error}" if error else ""))
        if error:
            continue
        print(f"({s['orgs']} organisations × {s['rows_per_org']} rows, {s['trials']} trials, "
              f"{s['mechanism']}, β = {s['beta']:g}, seed {s['seed']}; local and centralised "
              f"tuned by cross-validation; centralised {s['centralised_accuracy']:.3f})\n")
        print("| ε | λ (private) | local (tuned) | private learner | aggregate | + own learner "
              "| uniform avg | best single | non-private agg | improved |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in s["rows"]:
            lam = r.get("private_lambda")
            print(f"| {r['epsilon']:g} | {lam:.3g} | {cell(r['local_accuracy'])} "
                  f"| {cell(r['private_learner_accuracy'])} | {cell(r['aggregate_accuracy'])} "
                  f"| {cell(r['with_own_accuracy'])} | {cell(r['uniform_average_accuracy'])} "
                  f"| {cell(r['best_single_accuracy'])} | {cell(r['nonprivate_aggregate_accuracy'])} "
                  f"| {r['improved_orgs']['mean']:.1f} / {s['orgs']} |")
        print()


MECHANISMS = [
    ("objective perturbation (ε-DP)", []),
    ("objective perturbation (ε, δ)", ["--delta", "1e-5"]),
    ("objective perturbation, CMS 2011 Alg. 2", ["--mechanism", "objective-perturbation-cms2011"]),
    ("output perturbation", ["--mechanism", "output-perturbation"]),
    ("DP-SGD ¹", ["--delta", "1e-5", "--mechanism", "dp-sgd"]),
    ("DP-SGD, BST 2014 ³", ["--delta", "1e-5", "--mechanism", "dp-sgd-bst"]),
    ("Gibbs posterior, unproven sampler ²", ["--delta", "1e-5", "--mechanism", "gibbs-posterior-unproven"]),
    ("Langevin chain (proven)", ["--delta", "1e-5", "--mechanism", "langevin"]),
]
EPSILONS = ["0.5", "1", "2", "5"]


def mechanisms(out, only=None):
    rows = [(l, a) for l, a in MECHANISMS if only is None or only in a]
    for dataset in ("diabetes", "synthetic"):
        print(f"**{dataset}**: aggregate accuracy, mean ± sd over (trial, organisation), the "
              "individual private learners' mean in parentheses; one `simulate` per row and ε\n")
        print("| mechanism | " + " | ".join(f"ε = {e}" for e in EPSILONS) + " | command |")
        print("|---|" + "---|" * len(EPSILONS) + "---|")
        notes = []
        for label, args in rows:
            cells = []
            for e in EPSILONS:
                name = f"{dataset}-{'-'.join(a.strip('-') for a in args) or 'default'}-{e}"
                shown, s, error = simulate(out, name, ["--dataset", dataset, "--epsilon", e, *args])
                if error:
                    cells.append("refused")
                    notes.append(f"`{shown}`: {error}")
                else:
                    r = s["rows"][0]
                    cells.append(f"{cell(r['aggregate_accuracy'])} "
                                 f"({r['private_learner_accuracy']['mean']:.3f})")
            command = "`simulate --dataset " + dataset + " --epsilon ε" + (" " + " ".join(args) if args else "") + "`"
            print(f"| {label} | " + " | ".join(cells) + f" | {command} |")
        print()
        for n in notes:
            print(f"- {n}")
        print()


if __name__ == "__main__":
    if not 3 <= len(sys.argv) <= 4 or sys.argv[1] not in ("defaults", "mechanisms") or (
            len(sys.argv) == 4 and sys.argv[1] != "mechanisms"):
        sys.exit(__doc__)
    {"defaults": defaults, "mechanisms": mechanisms}[sys.argv[1]](*sys.argv[2:])

"""diffprivlib beside dpagg, on exactly the same rows. Not part of CI.

    python tests/peers/run.py RESULTS_DIR

RESULTS_DIR is the output of `dpagg-aggregator experiment learners --out RESULTS_DIR`. The script
reads its splits.csv (every trial's training and test rows, and a seed), synthetic.csv, clinic.csv and
learners_trials.csv, trains diffprivlib's LogisticRegression on each trial's training rows at each
epsilon of the experiment, and writes

- RESULTS_DIR/diffprivlib_trials.csv: one line per (dataset, size, trial, epsilon), in the format
  of learners_trials.csv;
- RESULTS_DIR/comparison.md (printed too): the must-show table of the individual learners (all
  training rows, epsilon in {0.5, 1, 2}, Diabetes and Breast Cancer: dpagg's default epsilon-DP
  learner against diffprivlib, with the paired margin) and diffprivlib beside every dpagg learner everywhere.

diffprivlib is run this way: each feature mapped from the schema's declared [lo, hi]
onto [-1, 1], rows clipped to norm 1, LogisticRegression(epsilon, data_norm=1) with its defaults
(C = 1, fit_intercept = True). Synthetic rows are already on the unit sphere and are used as they
are. Its random_state in a trial is the trial's peer_seed plus the index of epsilon.
"""
import csv
import math
import sys
import tomllib
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np

warnings.filterwarnings("ignore")
import diffprivlib  # noqa: E402
from diffprivlib.models import LogisticRegression  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DATA = {"diabetes": "diabetes", "breast-cancer": "breast_cancer"}
PEER = "diffprivlib LogisticRegression (C = 1)"
DEFAULT = "objective perturbation (default), ε-DP"
EPS_DP_DEFAULTS = [DEFAULT, "output perturbation, ε-DP"]


def real_rows(name):
    """The bundled CSV mapped for diffprivlib: bounds to [-1, 1], rows
    clipped to norm 1; labels +1 / -1 by the schema."""
    stem = DATA[name]
    schema = tomllib.loads((REPO / "data" / f"{stem}.schema.toml").read_text())
    with open(REPO / "data" / f"{stem}.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    feats = schema["features"]
    lo = np.array([float(x["lo"]) for x in feats])
    hi = np.array([float(x["hi"]) for x in feats])
    X = np.array([[float(r[x["name"]]) for x in feats] for r in rows])
    y = np.array([1 if r[schema["label"]["column"]] == schema["label"]["positive"] else -1 for r in rows])
    Z = 2 * (np.clip(X, lo, hi) - lo) / (hi - lo) - 1
    norm = np.linalg.norm(Z, axis=1)
    return Z / np.maximum(1.0, norm)[:, None], y


def generated_rows(results, name):
    with open(results / f"{name}.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    X = np.array([[float(v) for k, v in r.items() if k != "label"] for r in rows])
    y = np.array([int(float(r["label"])) for r in rows])
    return X, y


def read_trials(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def run_peer(results, epsilons):
    data = {name: real_rows(name) for name in DATA}
    for name in ["synthetic", "clinic"]:
        data[name] = generated_rows(results, name)
    out = []
    with open(results / "splits.csv", newline="") as f:
        for s in csv.DictReader(f):
            X, y = data[s["dataset"]]
            train = [int(i) for i in s["train"].split()]
            test = [int(i) for i in s["test"].split()]
            for e, eps in enumerate(epsilons):
                clf = LogisticRegression(epsilon=eps, data_norm=1.0,
                                         random_state=int(s["peer_seed"]) + e)
                clf.fit(X[train], y[train])
                acc = float((clf.predict(X[test]) == y[test]).mean())
                out.append(dict(dataset=s["dataset"], size=s["size"], trial=s["trial"], learner=PEER,
                                epsilon=fmt_eps(eps), accuracy=f"{acc:.4f}", lambda_=""))
    with open(results / "diffprivlib_trials.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["dataset", "size", "trial", "learner", "epsilon", "accuracy", "lambda"])
        for r in out:
            w.writerow([r["dataset"], r["size"], r["trial"], r["learner"], r["epsilon"], r["accuracy"], ""])
    return [dict(r, **{"lambda": ""}) for r in out]


def fmt_eps(e):
    return f"{e:.4f}".rstrip("0").rstrip(".")


def by_cell(rows):
    cells = defaultdict(dict)
    for r in rows:
        if r["accuracy"].startswith("refused"):
            continue
        cells[(r["dataset"], r["size"], r["learner"], r["epsilon"])][int(r["trial"])] = float(r["accuracy"])
    return cells


def paired(a, b):
    """Mean of a - b over common trials, and its standard error."""
    common = sorted(set(a) & set(b))
    d = np.array([a[t] - b[t] for t in common])
    return d.mean(), d.std(ddof=1) / math.sqrt(len(d))


def mean(c):
    return float(np.mean(list(c.values())))


def must_show(cells):
    lines = ["| data | ε | diffprivlib | dpagg objective perturbation (default) | margin ± se (paired) | "
             "best ε-DP dpagg default | its margin |", "|---|---|---|---|---|---|---|"]
    margins = []
    ok = True
    for data in ["diabetes", "breast-cancer"]:
        for eps in ["0.5", "1", "2"]:
            peer = cells[(data, "all", PEER, eps)]
            ours = cells[(data, "all", DEFAULT, eps)]
            m, se = paired(ours, peer)
            best = max(EPS_DP_DEFAULTS, key=lambda k: mean(cells[(data, "all", k, eps)]))
            bm, _ = paired(cells[(data, "all", best, eps)], peer)
            margins.append(bm)
            ok &= bm >= 0
            lines.append(f"| {data} | {eps} | {mean(peer):.3f} | {mean(ours):.3f} | {m:+.3f} ± {se:.3f} | "
                         f"{best} {mean(cells[(data, 'all', best, eps)]):.3f} | {bm:+.3f} |")
    avg = float(np.mean(margins))
    lines.append("")
    lines.append(f"Best ε-DP default ≥ diffprivlib in every cell: {'yes' if ok else 'NO'}; "
                 f"average margin {avg:+.3f} (target ≥ +0.020).")
    return lines


def everything(cells, epsilons, learners):
    lines = []
    for data in ["diabetes", "breast-cancer", "synthetic", "clinic"]:
        for size in ["org", "all"]:
            lines += ["", f"**{data}, {size}**", "",
                      "| learner | " + " | ".join(f"ε = {fmt_eps(e)}" for e in epsilons) + " |",
                      "|---|" + "---|" * len(epsilons)]
            for lrn in [PEER] + learners:
                row = []
                for e in epsilons:
                    c = cells.get((data, size, lrn, fmt_eps(e)))
                    row.append(f"{mean(c):.3f}" if c else "–")
                lines.append(f"| {lrn} | " + " | ".join(row) + " |")
    return lines


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    results = Path(sys.argv[1])
    ours = read_trials(results / "learners_trials.csv")
    epsilons = sorted({float(r["epsilon"]) for r in ours})
    learners = list(dict.fromkeys(r["learner"] for r in ours))
    peer = run_peer(results, epsilons)
    cells = by_cell(ours + peer)
    trials = len({r["trial"] for r in ours})
    head = [f"diffprivlib {diffprivlib.__version__}, numpy {np.__version__}; {trials} trials; "
            f"accuracy on each trial's test rows, mean over trials.", "",
            "**Must-show: all training rows, pure ε-DP, dpagg defaults vs diffprivlib**", ""]
    text = "\n".join(head + must_show(cells) + ["", "**Every learner**"] +
                     everything(cells, epsilons, learners)) + "\n"
    (results / "comparison.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()

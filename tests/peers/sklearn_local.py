"""scikit-learn's LogisticRegressionCV beside dpagg's tuned local model, on exactly the same rows.
Not part of CI.

    python tests/peers/sklearn_local.py RESULTS_DIR [--trials N]

For three datasets -- diabetes, breast-cancer and digits (data/*.csv with the bounds-only schemas
data/*.bounds.toml; data/digits.csv is scikit-learn's bundled load_digits(): pixels p00..p63, label
"large" for digits >= 5, else "small") -- the script runs

    dpagg-aggregator experiment utility --dataset CSV --schema SCHEMA --trials N --epsilons 1
        --orgs 10 --seed 1 --out RESULTS_DIR/<name>/default

and the same with a copy of the schema that selects the paper map (RESULTS_DIR/<name>.paper.toml,
out RESULTS_DIR/<name>/paper). The binary is $DPAGG_BIN, by default target/release/dpagg-aggregator
of this repository. Then, for each trial of the default run, on exactly the own, node and test rows
of its utility_splits.csv, it fits

- LogisticRegressionCV() with its defaults (10 Cs, stratified 5-fold, lbfgs, max_iter = 100) on
  the own rows and on all training rows (own + nodes), each feature clipped to the schema's
  [lo, hi] and mapped onto [-1, 1]: the same bounds dpagg is given;
- make_pipeline(StandardScaler(), LogisticRegressionCV()) on the raw own rows, as a typical
  scikit-learn user would (its scaling is derived from the rows, not from public bounds).

It writes RESULTS_DIR/comparison.md (printed too): dpagg's tuned local and centralised models
against scikit-learn with paired differences, the private aggregates at epsilon = 1 with the default
map against the paper map, the must-show lines and the versions used.
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import numpy as np
import sklearn
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegressionCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

warnings.filterwarnings("ignore", category=ConvergenceWarning)

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "data"
NODES = [f"node{k}" for k in range(1, 10)]


def datasets(results):
    """(name, CSV, bounds-only schema) of the three datasets."""
    return [("diabetes", REPO / "data" / "diabetes.csv", SCHEMAS / "diabetes.bounds.toml"),
            ("breast-cancer", REPO / "data" / "breast_cancer.csv", SCHEMAS / "breast_cancer.bounds.toml"),
            ("digits", REPO / "data" / "digits.csv", SCHEMAS / "digits.bounds.toml")]


def run_dpagg(binary, csv_path, schema, out, trials):
    cmd = [str(binary), "experiment", "utility", "--dataset", str(csv_path), "--schema", str(schema),
           "--trials", str(trials), "--epsilons", "1", "--orgs", "10", "--seed", "1", "--out", str(out)]
    print("$ " + " ".join(cmd), flush=True)
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"dpagg-aggregator failed (exit code {done.returncode}) on {csv_path}")


def load(csv_path, schema):
    """Raw feature matrix (schema order), labels +1 / -1, and the bounds-mapped features."""
    label = schema["label"]
    feats = schema["features"]
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    X = np.array([[float(r[x["name"]]) for x in feats] for r in rows])
    y = np.array([1 if r[label["column"]] == label["positive"] else -1 for r in rows])
    if not all(r[label["column"]] in (label["positive"], label["negative"]) for r in rows):
        sys.exit(f"{csv_path}: a label is neither {label['positive']!r} nor {label['negative']!r}")
    lo = np.array([float(x["lo"]) for x in feats])
    hi = np.array([float(x["hi"]) for x in feats])
    Z = 2 * (np.clip(X, lo, hi) - lo) / (hi - lo) - 1
    return X, y, Z


def read_splits(out):
    """{trial: {role: row indices}} from utility_splits.csv."""
    splits = {}
    with open(out / "utility_splits.csv", newline="") as f:
        for r in csv.DictReader(f):
            splits.setdefault(int(r["trial"]), {})[r["role"]] = np.array([int(i) for i in r["rows"].split()])
    return splits


def read_runs(out):
    """{column: {trial: accuracy}} at epsilon = 1 from utility_runs.csv."""
    cols = {}
    with open(out / "utility_runs.csv", newline="") as f:
        for r in csv.DictReader(f):
            if float(r["epsilon"]) != 1.0:
                continue
            for k, v in r.items():
                if k not in ("scenario", "epsilon", "trial", "chosen"):
                    cols.setdefault(k, {})[int(r["trial"])] = float(v)
    return cols


def accuracy(model, X, y, train, test):
    model.fit(X[train], y[train])
    return float((model.predict(X[test]) == y[test]).mean())


def sklearn_trials(X, y, Z, splits):
    """{column: {trial: accuracy}} of the scikit-learn fits on each trial's rows."""
    out = {"bounds own": {}, "bounds all": {}, "scaler own": {}}
    for t, s in sorted(splits.items()):
        own, test = s["own"], s["test"]
        train = np.concatenate([own] + [s[n] for n in NODES])
        out["bounds own"][t] = accuracy(LogisticRegressionCV(), Z, y, own, test)
        out["bounds all"][t] = accuracy(LogisticRegressionCV(), Z, y, train, test)
        out["scaler own"][t] = accuracy(make_pipeline(StandardScaler(), LogisticRegressionCV()), X, y, own, test)
    return out


def mean(c):
    return 100 * float(np.mean(list(c.values())))


def paired(a, b):
    """Mean of a - b in points over common trials, and the half-width of its 95 % interval."""
    d = 100 * np.array([a[t] - b[t] for t in sorted(set(a) & set(b))])
    return float(d.mean()), 1.96 * float(d.std(ddof=1)) / math.sqrt(len(d))


def pm(p):
    return f"{p[0]:+.2f} ± {p[1]:.2f}"


def report(results, rows, trials):
    local = ["| data | n own | d | dpagg tuned local | sklearn LRCV, bounds, own | dpagg − sklearn (pts, 95 %) "
             "| sklearn StandardScaler + LRCV, own (data-derived scaling) | dpagg centralised "
             "| sklearn LRCV, bounds, all training | dpagg − sklearn (pts, 95 %) |", "|---|" + "---|" * 9]
    maps = ["| data | final model, default map | final model, paper map | default − paper (pts, 95 %) "
            "| mirror averaging, default map | mirror averaging, paper map | default − paper (pts, 95 %) |",
            "|---|" + "---|" * 6]
    must = []
    for r in rows:
        ours, paper, sk = r["default"], r["paper"], r["sklearn"]
        own_diff = paired(ours["tuned local"], sk["bounds own"])
        fin_diff = paired(ours["final model"], paper["final model"])
        mir_diff = paired(ours["mirror averaging"], paper["mirror averaging"])
        local.append(f"| {r['name']} | {r['n_own']} | {r['d']} | {mean(ours['tuned local']):.1f} "
                     f"| {mean(sk['bounds own']):.1f} | {pm(own_diff)} | {mean(sk['scaler own']):.1f} "
                     f"| {mean(ours['centralised']):.1f} | {mean(sk['bounds all']):.1f} "
                     f"| {pm(paired(ours['centralised'], sk['bounds all']))} |")
        maps.append(f"| {r['name']} | {mean(ours['final model']):.1f} | {mean(paper['final model']):.1f} "
                    f"| {pm(fin_diff)} | {mean(ours['mirror averaging']):.1f} "
                    f"| {mean(paper['mirror averaging']):.1f} | {pm(mir_diff)} |")
        must.append(f"- {r['name']}: tuned local ≥ sklearn − 0.5 point: {'yes' if own_diff[0] >= -0.5 else 'no'} "
                    f"({own_diff[0]:+.2f}); private aggregate (mirror averaging) at ε = 1 no worse than with "
                    f"the paper map: {'yes' if mir_diff[0] >= 0 else 'no'} ({pm(mir_diff)}); final model "
                    f"(mostly the non-private local one): {pm(fin_diff)}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=REPO).returncode != 0
    versions = (f"Python {sys.version.split()[0]}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
                f"dpagg {commit.stdout.strip() or '?'}{' (working tree modified)' if dirty else ''}.")
    text = "\n".join(
        [f"{trials} trials, seed 1, 10 organisations (organisation 1 = own rows), 20 % stratified test rows; "
         "test accuracy in %, mean over trials; differences are paired by trial, in points, mean ± 1.96·sd/√trials.",
         "", "**Tuned local and centralised: dpagg against scikit-learn on the same rows and bounds**", ""]
        + local + ["", "sklearn LRCV = LogisticRegressionCV() with its defaults on features clipped to the "
                   "schema's [lo, hi] and mapped onto [−1, 1]. The StandardScaler column scales by the own "
                   "rows' mean and sd (data-derived, not public bounds) and is a reference only.",
                   "", "**Private aggregates at ε = 1: dpagg's default map against the paper map**", ""]
        + maps + ["", "**Must-show** (mean paired differences: tuned local − sklearn ≥ −0.5 point; mirror "
                  "averaging, the private aggregate, default − paper map ≥ 0; the final model's difference is "
                  "shown, not judged: it is the local model in most trials)", ""]
        + must + ["", versions]) + "\n"
    (results / "comparison.md").write_text(text)
    print(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", metavar="RESULTS_DIR", type=Path)
    ap.add_argument("--trials", type=int, default=20)
    args = ap.parse_args()
    binary = Path(os.environ.get("DPAGG_BIN", REPO / "target" / "release" / "dpagg-aggregator"))
    if not binary.is_file():
        sys.exit(f"dpagg binary not found: {binary}\nbuild it with `cargo build --release -p dpagg-aggregator` "
                 "in the repository, or point DPAGG_BIN at it")
    results = args.results.resolve()
    results.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, csv_path, bounds in datasets(results):
        paper_schema = results / f"{name}.paper.toml"
        paper_schema.write_text(bounds.read_text() + '\n[normalisation]\nmode = "paper"\n')
        run_dpagg(binary, csv_path, bounds, results / name / "default", args.trials)
        run_dpagg(binary, csv_path, paper_schema, results / name / "paper", args.trials)
        splits = read_splits(results / name / "default")
        if (results / name / "default" / "utility_splits.csv").read_text() != \
                (results / name / "paper" / "utility_splits.csv").read_text():
            print(f"warning: {name}: the default and paper runs split the rows differently; "
                  "default − paper is then paired by trial index only", file=sys.stderr)
        schema = tomllib.loads(bounds.read_text())
        X, y, Z = load(csv_path, schema)
        rows.append(dict(name=name, n_own=round(np.mean([len(s["own"]) for s in splits.values()])),
                         d=X.shape[1], default=read_runs(results / name / "default"),
                         paper=read_runs(results / name / "paper"), sklearn=sklearn_trials(X, y, Z, splits)))
    report(results, rows, args.trials)


if __name__ == "__main__":
    main()

"""dpagg against diffprivlib from Python, in one process and one run.

Prints (and with ``--out FILE`` writes as Markdown):

1. **Speed.** Fits of n × 20 (n = 1e5 and 1e6) on the same synthetic rows at ε = 1 with
   ``dpagg.LogisticRegression`` (objective perturbation, the default) and diffprivlib's
   ``LogisticRegression`` (Chaudhuri et al.'s objective perturbation, vector mechanism), median of
   ``--repeats`` fits each (after a pause, see ``timed``), and the ratio, also against
   diffprivlib with numpy's BLAS on one thread; and how long the map of the rows into the unit
   ball takes on its own (``map_.transform``).
2. **Accuracy at ε = 1** on the bundled Diabetes and Breast Cancer data, ``--trials`` random 80/20
   splits (seed 1), the same split for every learner (paired): dpagg with the data's public
   schema; diffprivlib as a user would run it with the same public information (rows clipped to
   the norm of the schema's upper bounds, ``data_norm`` that norm); and diffprivlib on dpagg's
   mapped rows (``data_norm = 1``), which compares the learners alone. Mean accuracy and the
   paired mean difference with its 95 % interval.

Needs diffprivlib (``pip install ./python[bench]``; diffprivlib 0.6 imports with scikit-learn up
to 1.6). Usage: ``python python/bench.py [--quick] [--out docs/experiments/python.md]``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import statistics
import sys
import time
import warnings

import numpy as np
import pandas as pd

# Run as `python python/bench.py`, this file's folder comes first on the path. Unless the
# extension was built in place (maturin develop), the sources there have no compiled `_native`
# and would shadow the installed dpagg, so the folder is dropped.
HERE = pathlib.Path(__file__).resolve().parent
if not any((HERE / "dpagg").glob("_native*.so")) and not any((HERE / "dpagg").glob("_native*.pyd")):
    sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE]

import dpagg  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
D = 20
# Seconds of rest before each library's timed fits (see `timed`).
PAUSE = 0.5


def timed(fit, repeats):
    """Median of ``repeats`` fits, after a pause and one untimed fit.

    The pause lets threads left busy by whatever ran before go to sleep: numpy's BLAS threads
    spin for a while after each call (diffprivlib's fits and the data's generation both make
    such calls), and on a machine of few cores they would take the next fit's cores."""
    time.sleep(PAUSE)
    fit()  # untimed: thread pools, first allocations and caches warm for both libraries alike
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fit()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def speed(n, repeats, lines):
    """Times both libraries at n × D; (diffprivlib / dpagg as installed, and with diffprivlib's
    BLAS on one thread)."""
    from diffprivlib.models import LogisticRegression as DplLR
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (n, D)) / np.sqrt(D)
    y = (X @ rng.normal(size=D) + 0.1 * rng.normal(size=n) > 0).astype(int)
    model = dpagg.LogisticRegression(epsilon=1.0, bounds=(-1 / np.sqrt(D), 1 / np.sqrt(D)))
    ours = timed(lambda: model.fit(X, y), repeats)
    mapping = timed(lambda: model.map_.transform(X), repeats)
    theirs = timed(lambda: DplLR(epsilon=1.0, data_norm=1.0).fit(X, y), repeats)

    def one_thread():
        with threadpool_limits(limits=1, user_api="blas"):
            DplLR(epsilon=1.0, data_norm=1.0).fit(X, y)

    theirs_one = timed(one_thread, repeats)
    lines.append(
        f"| {n:.0e} × {D} | {ours:.3f} s | {mapping:.3f} s ({100 * mapping / ours:.0f} %) "
        f"| {theirs:.3f} s | {theirs / ours:.1f}× | {theirs_one:.3f} s | {theirs_one / ours:.1f}× |"
    )
    return theirs / ours, theirs_one / ours


def paired(diffs):
    m = float(np.mean(diffs))
    half = 1.96 * float(np.std(diffs, ddof=1)) / np.sqrt(len(diffs))
    return m, m - half, m + half


def accuracy(name, trials, lines):
    from diffprivlib.models import LogisticRegression as DplLR
    from sklearn.model_selection import train_test_split

    schema = ROOT / "data" / f"{name}.schema.toml"
    frame = pd.read_csv(ROOT / "data" / f"{name}.csv")
    label = {"diabetes": "diabetes", "breast_cancer": "diagnosis"}[name]
    y = frame.pop(label).to_numpy()
    probe = dpagg.LogisticRegression(schema=str(schema), random_state=0).fit(frame.iloc[:50], y[:50])
    names = probe.map_.feature_names
    X = frame[names].to_numpy(dtype=np.float64)
    hi = np.array([json_bound(probe, f) for f in names])
    norm = float(np.linalg.norm(hi))
    scores = {"dpagg": [], "diffprivlib (raw, public norm)": [], "diffprivlib (dpagg's map)": []}
    for t in range(trials):
        tr, te = train_test_split(np.arange(len(y)), test_size=0.2, random_state=1000 + t, stratify=y)
        ours = dpagg.LogisticRegression(epsilon=1.0, schema=str(schema)).fit(frame.iloc[tr], y[tr])
        scores["dpagg"].append(ours.score(frame.iloc[te], y[te]))
        clipped = X * np.minimum(1.0, norm / np.maximum(np.linalg.norm(X, axis=1), 1e-300))[:, None]
        raw = DplLR(epsilon=1.0, data_norm=norm).fit(clipped[tr], y[tr])
        scores["diffprivlib (raw, public norm)"].append(raw.score(clipped[te], y[te]))
        mapped, _ = ours.map_.transform(np.ascontiguousarray(X))
        onmap = DplLR(epsilon=1.0, data_norm=1.0, fit_intercept=False).fit(mapped[tr], y[tr])
        scores["diffprivlib (dpagg's map)"].append(onmap.score(mapped[te], y[te]))
    base = np.array(scores["dpagg"])
    for who, s in scores.items():
        s = np.array(s)
        if who == "dpagg":
            lines.append(f"| {name} | {who} | {s.mean():.3f} | |")
        else:
            m, lo, hi_ = paired(base - s)
            lines.append(f"| {name} | {who} | {s.mean():.3f} | {100 * m:+.1f} [{100 * lo:+.1f}, {100 * hi_:+.1f}] |")
    return {who: float(np.mean(s)) for who, s in scores.items()}


def json_bound(model, feature):
    import json

    schema = json.loads(model.map_.to_json())
    for f in schema["features"]:
        if f["name"] == feature:
            return max(abs(f["lo"]), abs(f["hi"]))
    raise KeyError(feature)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1e4 and 1e5 rows, 3 trials: a smoke run")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--out", help="write the results as Markdown to this file")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import diffprivlib
    import sklearn

    sizes = [10_000, 100_000] if args.quick else [100_000, 1_000_000]
    trials = 3 if args.quick else args.trials
    lines = [
        "# dpagg from Python against diffprivlib",
        "",
        f"Written by `python python/bench.py{' --quick' if args.quick else ''} --out …` "
        f"(dpagg {dpagg.__version__ if hasattr(dpagg, '__version__') else '0.1.0'}, diffprivlib "
        f"{diffprivlib.__version__}, scikit-learn {sklearn.__version__}, numpy {np.__version__}, "
        f"Python {platform.python_version()}, {os.cpu_count()} CPU(s)). Same process, same data, ε = 1.",
        "",
        "## Fit time (median of {} fits)".format(args.repeats),
        "",
        f"Each library fits the same rows {args.repeats} times in a row, after a pause of "
        f"{PAUSE} s and one",
        "untimed fit: numpy's BLAS threads spin for a while after each call (diffprivlib's fits and",
        "the data's generation make such calls), and on a machine of few cores the pause keeps them",
        "from taking the cores of the fits that follow.",
        "",
        "The map column times `map_.transform` alone: the rows mapped into the unit ball as a new",
        "n × (d + 1) numpy array. The fit maps them the same way into a buffer of its own, in huge",
        "pages where the kernel allows (fewer page faults), which the release then reads.",
        "",
        "The last two columns time diffprivlib with numpy's BLAS limited to one thread",
        "(`threadpoolctl`), which on a machine of few cores can be its faster setting.",
        "",
        "| rows × columns | dpagg | of which the map | diffprivlib | diffprivlib / dpagg "
        "| diffprivlib, BLAS on 1 thread | it / dpagg |",
        "|---|---|---|---|---|---|---|",
    ]
    ratios = [speed(n, args.repeats, lines) for n in sizes]
    lines += [
        "",
        f"## Accuracy at ε = 1 ({trials} paired 80/20 splits, seed 1)",
        "",
        "| data | learner | mean accuracy | dpagg − it, points [95 % CI] |",
        "|---|---|---|---|",
    ]
    means = {name: accuracy(name, trials, lines) for name in ("diabetes", "breast_cancer")}
    speed_ok = all(r >= 10 for r, _ in ratios)
    speed_one_ok = all(r >= 10 for _, r in ratios)
    acc_ok = all(m["dpagg"] >= max(v for k, v in m.items() if k != "dpagg") for m in means.values())
    lines += [
        "",
        f"speed: dpagg ≥ 10× diffprivlib at every size: {'yes' if speed_ok else 'no'} "
        f"({', '.join(f'{r:.1f}×' for r, _ in ratios)})",
        f"speed: dpagg ≥ 10× diffprivlib with its BLAS on one thread at every size: "
        f"{'yes' if speed_one_ok else 'no'} ({', '.join(f'{r:.1f}×' for _, r in ratios)})",
        f"accuracy: dpagg's mean ≥ every diffprivlib column on both data sets: {'yes' if acc_ok else 'no'}",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text)


if __name__ == "__main__":
    sys.exit(main())

"""Times diffprivlib's LogisticRegression on the rows `dpagg-aggregator bench` fits.
Not part of CI; `bench` runs it when a Python with diffprivlib is available.

    python tests/peers/diffprivlib_fit.py [--repeats R] FILE N P [FILE N P ...]

Each FILE holds one data set as `bench` generated it, raw little-endian f64: the N x P features
row by row, then the N labels (+1 / -1). Rows are already in the unit ball. For each file the
script fits LogisticRegression(epsilon=1, data_norm=1) with its other defaults (C = 1, intercept
fitted, lbfgs, random_state=0) R times and prints one line

    fit N P SECONDS

with SECONDS the fastest of the R fits (as `bench` reports its own fits), timed around `fit` only
(not the file read). A last line `versions python ... numpy ... scikit-learn ... diffprivlib ...`
names what was measured. Versions used for the numbers in the README: requirements.txt here.
"""
import argparse
import platform
import sys
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore")
import diffprivlib  # noqa: E402
import sklearn  # noqa: E402
from diffprivlib.models import LogisticRegression  # noqa: E402


def load(path, n, p):
    raw = np.fromfile(path, dtype="<f8")
    if raw.size != n * p + n:
        sys.exit(f"{path}: {raw.size} values, expected {n} x {p} features and {n} labels")
    return raw[: n * p].reshape(n, p), raw[n * p :]


def best_fit_seconds(X, y, repeats):
    best = float("inf")
    for _ in range(repeats):
        clf = LogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0)
        start = time.perf_counter()
        clf.fit(X, y)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("cases", nargs="+", help="FILE N P triples")
    args = parser.parse_args()
    if len(args.cases) % 3 != 0:
        parser.error("cases come as FILE N P triples")
    for i in range(0, len(args.cases), 3):
        path, n, p = args.cases[i], int(args.cases[i + 1]), int(args.cases[i + 2])
        X, y = load(path, n, p)
        seconds = best_fit_seconds(X, y, args.repeats)
        print(f"fit {n} {p} {seconds:.6f}", flush=True)
    print(
        f"versions python {platform.python_version()} numpy {np.__version__} "
        f"scikit-learn {sklearn.__version__} diffprivlib {diffprivlib.__version__}"
    )


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# What the categorical columns of data/anes96.csv add: `experiment utility` on the same rows
# (same seed, so the same deal over 10 organisations), 20 trials at ε = 1, once with the schema
# that declares party identification and education as categorical features and once with its
# numeric columns alone. Prints the mean accuracies and the paired difference per model with a
# 95 % interval, and fails if the final model with the categorical columns is below the one
# without them on average. docs/experiments/categorical.md quotes this printout.
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for schema in anes96 anes96.numeric; do
  target/release/dpagg-aggregator experiment utility --dataset data/anes96.csv \
    --schema "data/$schema.schema.toml" --trials 20 --epsilons 1 --out "$work/$schema" >/dev/null
done
python3 - "$work/anes96/utility_runs.csv" "$work/anes96.numeric/utility_runs.csv" <<'PY'
import csv, math, sys
with_, without = (list(csv.DictReader(open(p))) for p in sys.argv[1:3])
assert len(with_) == len(without) == 20, (len(with_), len(without))
print("anes96, 944 rows over 10 organisations, ε = 1, 20 trials (same rows and seeds):")
print("| model | with categorical | numeric only | with − without, points [95 % interval] |")
print("|---|---|---|---|")
failed = False
for model in ["tuned local", "final model", "mirror averaging", "trusted curator", "centralised"]:
    a = [float(r[model]) for r in with_]
    b = [float(r[model]) for r in without]
    d = [100 * (x - y) for x, y in zip(a, b)]
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in d) / (n - 1))
    half = 2.093 * sd / math.sqrt(n)   # Student t, 19 degrees of freedom
    print(f"| {model} | {sum(a)/n:.3f} | {sum(b)/n:.3f} | {mean:+.1f} [{mean-half:+.1f}, {mean+half:+.1f}] |")
    failed |= model == "final model" and mean < 0
if failed:
    sys.exit("FAIL: the final model with the categorical columns is below the one without them")
print("final model with the categorical columns ≥ without them: yes")
PY

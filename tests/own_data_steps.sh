#!/usr/bin/env bash
# Runs docs/own-data.md ("Your own data in six steps"), or the page given as the first argument
# (docs/own-data-categorical.md, the same steps on a table with text columns), exactly as
# written: every sh block after
# the `<!-- ci: own-data -->` marker, in order, from the repository root. Then checks what the page
# promises: `predict` on the run's test file reproduces the report's test accuracy exactly, and the
# page's Python snippet (after `<!-- ci: predict.py -->`, numpy only, in a throw-away virtualenv)
# (always docs/own-data.md's) reproduces `predict`'s probabilities and margins to 1e-12, on the run's model and on the same
# model weighing both of its maps (the clinic's own and the agreed one); with DPAGG_PYTHON set, that
# the Python package's dpagg.Model gives predict's output bit for bit. Nodes left behind are
# stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
page="${1:-docs/own-data.md}"
block="$(awk '/<!-- ci: own-data -->/ {m = 1} m && /^```sh/ {b = 1; next} b && /^```/ {b = 0; next} b {print}' "$page")"
snippet="$(awk '/<!-- ci: predict.py -->/ {m = 1; next} m && /^```python/ {b = 1; next} b && /^```/ {exit} b {print}' docs/own-data.md)"
if [ -z "$block" ] || [ -z "$snippet" ]; then
  echo "own_data_steps.sh: the sh blocks or the Python snippet of $page are missing" >&2
  exit 1
fi
work="$(mktemp -d)"
rm -rf owndata
setsid bash -euo pipefail -c "$block" > "$work/steps.log" 2>&1 &
pid=$!
trap 'kill -- "-$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
if ! wait "$pid"; then
  cat "$work/steps.log" >&2
  echo "own_data_steps.sh: a command of $page failed" >&2
  exit 1
fi
grep -E "^(wrote|final model|Joining|no trap)" "$work/steps.log" || true

# predict on the run's test rows gives exactly the report's test accuracy.
line="$(grep '^wrote .* prediction(s) to scores.csv' "$work/steps.log")"
said="$(sed -n 's/.*; accuracy \([^ ]*\) against .* on its test rows)$/\1/p' <<<"$line")"
report="$(python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["final_model"]["test_accuracy"]))' owndata/report/report.json)"
python3 - "$said" "$report" <<'PY'
import sys
said, report = float(sys.argv[1]), float(sys.argv[2])
if said != report:
    sys.exit(f"predict's accuracy {said!r} is not the report's test accuracy {report!r}")
print(f"predict reproduces the report's test accuracy exactly: {said!r}")
PY

# The page's Python snippet reproduces predict to 1e-12: on the run's model, and on the same
# model with random weights on every column, so that both maps count (the run's final model may
# weigh only the clinic's own block).
printf '%s\n' "$snippet" > "$work/predict.py"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check "numpy>=1.26,<3"
compare() {
  python3 - "$1" "$2" <<'PY'
import csv, sys
ours = list(csv.reader(open(sys.argv[1])))[1:]
theirs = list(csv.reader(open(sys.argv[2])))
if len(ours) != len(theirs) or not ours:
    sys.exit(f"{len(ours)} rows from predict, {len(theirs)} from the snippet")
worst = 0.0
for a, b in zip(ours, theirs):
    if a[:2] != b[:2]:
        sys.exit(f"row {a[0]}: predict says {a[1]}, the snippet {b[1]}")
    for x, y in ((float(a[2]), float(b[2])), (float(a[3]), float(b[3]))):
        worst = max(worst, abs(x - y) / max(1.0, abs(x)))
if worst > 1e-12:
    sys.exit(f"the snippet differs from predict by {worst:.3e} (> 1e-12)")
print(f"the Python snippet reproduces predict on {len(ours)} rows (largest difference {worst:.1e})")
PY
}
"$work/venv/bin/python" "$work/predict.py" owndata/report/model.json owndata/clinic-heldout.csv > "$work/python.csv"
compare owndata/scores.csv "$work/python.csv"
python3 - owndata/report/model.json "$work/both.json" <<'PY'
import json, random, sys
model = json.load(open(sys.argv[1]))
if not model.get("learner_schema", {}).get("subspace"):
    sys.exit("model.json has no agreed map with a subspace: the page's map step did not reach it")
random.seed(1)
model["weights"] = [random.uniform(-3, 3) for _ in model["weights"]]
json.dump(model, open(sys.argv[2], "w"))
PY
target/release/dpagg-aggregator predict --model "$work/both.json" --data owndata/clinic-heldout.csv --out "$work/both.csv" >/dev/null
"$work/venv/bin/python" "$work/predict.py" "$work/both.json" owndata/clinic-heldout.csv > "$work/python-both.csv"
compare "$work/both.csv" "$work/python-both.csv"
# With DPAGG_PYTHON (a Python with the dpagg package, `pip install ./python`): dpagg.Model equals
# predict bit for bit on both models, from the CSV and from a DataFrame.
if [ -n "${DPAGG_PYTHON:-}" ]; then
  "$DPAGG_PYTHON" python/tests/model_matches_predict.py owndata/report/model.json owndata/clinic-heldout.csv owndata/scores.csv
  "$DPAGG_PYTHON" python/tests/model_matches_predict.py "$work/both.json" owndata/clinic-heldout.csv "$work/both.csv"
fi
echo "$page: six steps run, predict and the Python snippet agree"

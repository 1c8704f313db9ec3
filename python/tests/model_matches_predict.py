"""Checks that ``dpagg.Model.load(MODEL).predict(DATA)`` equals ``dpagg-aggregator predict``'s
output PREDICT_CSV row for row (labels, probabilities and margins bit for bit), with DATA given
as a CSV path and as a DataFrame. Run by tests/own_data_steps.sh on the six-step example.

Usage: model_matches_predict.py MODEL DATA PREDICT_CSV
"""

import csv
import sys

import pandas as pd

import dpagg


def main(model_path, data_path, predict_csv):
    want = list(csv.reader(open(predict_csv, newline="")))[1:]
    model = dpagg.Model.load(model_path)
    frame = pd.read_csv(data_path, dtype=str, keep_default_na=False, sep=model._native.separator)
    for how, data in (("CSV path", data_path), ("DataFrame", frame)):
        got = model.predict(data)
        if len(got) != len(want):
            sys.exit(f"{how}: {len(got)} rows from dpagg.Model, {len(want)} from predict")
        for (row, label, p, m), (i, g) in zip(want, got.iterrows()):
            if (str(i), label, float(p), float(m)) != (row, g.predicted, g.probability, g.margin):
                sys.exit(f"{how}: row {row}: predict says {label},{p},{m}; dpagg.Model {g.predicted},{g.probability!r},{g.margin!r}")
    print(f"dpagg.Model equals predict on {len(want)} rows (CSV path and DataFrame), bit for bit")


if __name__ == "__main__":
    main(*sys.argv[1:])

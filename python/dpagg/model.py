"""A federation's final model (``model.json``) from Python.

:meth:`Model.predict` gives what ``dpagg-aggregator predict`` writes, row for row: the Rust core
reads the rows with the model's schema (the same CSV loader, map, missing markers and categories)
and scores them with the same weights. A DataFrame is written to a temporary CSV first, so that it
goes through that same loader (with the separator the model's schema declares).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Dict

import numpy as np

from . import _native


class Model:
    """The final model of a dpagg run, read and checked from ``model.json``."""

    def __init__(self, native: "_native.Model"):
        self._native = native

    @classmethod
    def load(cls, path: "str | os.PathLike[str]") -> "Model":
        """Reads ``model.json`` (its format, its schemas against their fingerprints, its weights)."""
        return cls(_native.Model.load(os.fspath(path)))

    @property
    def candidate(self) -> str:
        """The candidate the run chose (``local``, ``mirror-averaging``, …)."""
        return self._native.candidate

    @property
    def columns(self):
        """The mapped columns, in the order of :attr:`weights`."""
        return self._native.columns

    @property
    def weights(self) -> np.ndarray:
        """θ."""
        return np.asarray(self._native.weights)

    @property
    def feature_columns(self):
        """The CSV columns the model reads."""
        return self._native.feature_columns

    @property
    def label(self):
        """(label column, positive value, negative value)."""
        return self._native.label

    @property
    def privacy(self) -> str:
        """The model's privacy, in words."""
        return self._native.privacy

    @property
    def test_accuracy(self) -> float:
        """Accuracy on the run's own test rows."""
        return self._native.test_accuracy

    def _score(self, data: Any):
        if isinstance(data, (str, os.PathLike)):
            return self._native.score_csv(os.fspath(data))
        if not hasattr(data, "to_csv"):
            raise TypeError("data must be a CSV path or a pandas DataFrame")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "rows.csv")
            data.to_csv(path, index=False, sep=self._native.separator)
            return self._native.score_csv(path)

    def predict(self, data: Any) -> Dict[str, Any]:
        """Scores every row of ``data`` (a CSV path or a DataFrame with the model's columns):
        ``predicted`` (labels as the CSV spells them), ``probability`` (P(positive)) and
        ``margin``, as arrays; with a DataFrame installed, a DataFrame with those columns."""
        predicted, probability, margin, _ = self._score(data)
        result = {
            "predicted": np.asarray(predicted, dtype=object),
            "probability": np.asarray(probability),
            "margin": np.asarray(margin),
        }
        try:
            import pandas as pd
        except ImportError:
            return result
        return pd.DataFrame(result, index=pd.RangeIndex(1, len(margin) + 1, name="row"))

    def score(self, data: Any) -> float:
        """Accuracy on the rows of ``data`` that carry one of the model's two labels."""
        _, _, margin, labels = self._score(data)
        if labels is None:
            raise ValueError(f"the data have no label column `{self.label[0]}`")
        labels = np.asarray(labels)
        known = labels != 0
        if not known.any():
            raise ValueError("no row has one of the model's two labels")
        return float(np.mean((np.asarray(margin)[known] >= 0) == (labels[known] > 0)))

    def __repr__(self) -> str:
        return f"Model(candidate={self.candidate!r}, columns={len(self.columns)}, test_accuracy={self.test_accuracy:.4g})"

"""dpagg's private learners as a scikit-learn estimator.

:class:`LogisticRegression` maps each row into the unit ball with a *public* map (bounds given as
``bounds=`` or a schema file given as ``schema=``), then trains one of dpagg's registered private
learners on the mapped rows with the Rust core, exactly as a dpagg node does.

**No bounds, no fit.** Bounds read off the data would make the map a function of the private rows
and void the guarantee (dpagg's invariant: bounds, clipping norms and hyper-parameters come from
public quantities, never from private rows). diffprivlib warns and reads them off the data; dpagg
refuses the fit with a ``ValueError`` saying what to give. Values outside the bounds are clipped
(a :class:`DataClippedWarning` says how many).

**Noise** is drawn from a cryptographically secure generator (ChaCha20 keyed by the operating
system). ``random_state`` makes the noise reproducible: such a fit is *not* private, says so with a
:class:`NotPrivateWarning`, and records ``seeded = True`` in ``metadata_``.
"""

from __future__ import annotations

import json
import numbers
import warnings
from typing import Any, Dict, List, NamedTuple, Optional

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import assert_all_finite, check_is_fitted, validate_data

from . import _native
from .accountant import mechanism_curve


class NotPrivateWarning(UserWarning):
    """A fit whose noise was seeded (``random_state``): reproducible, and not private."""


class DataClippedWarning(UserWarning):
    """Values outside the public bounds were clipped to them (the data's bounds were wrong)."""


class Guarantee(NamedTuple):
    """The privacy of a fit: (ε, δ)-DP under ``relation`` (``replace-one`` or
    ``add/remove-one``)."""

    epsilon: float
    delta: float
    relation: str


def mechanisms() -> List[Dict[str, Any]]:
    """The registered learners a dpagg node offers: ``name``, ``summary`` (guarantee, neighbour
    relation, paper), ``proven``, ``proof`` (what the proof covers: ``noise-as-sampled``,
    ``real-arithmetic`` or ``none``) and ``options`` (name, default, meaning)."""
    return _native.mechanisms()


def _binary_labels(y: np.ndarray):
    """``classes_`` (sorted, as ``np.unique`` gives them) and y as ±1 (+1 for ``classes_[1]``);
    a ``ValueError`` unless y has exactly two classes. Numeric labels with two distinct finite
    whole-number values are recognised in a few vector passes (minimum, maximum, two
    comparisons); any other y goes through scikit-learn's ``check_classification_targets`` and
    ``np.unique``, which give the same classes and the errors scikit-learn's estimators give."""
    if y.dtype.kind in "biuf" and y.size:
        lo, hi = y.min(), y.max()
        whole = y.dtype.kind != "f" or (
            np.isfinite(lo) and np.isfinite(hi) and float(lo).is_integer() and float(hi).is_integer()
        )
        if whole and lo != hi:
            positive = y == hi
            if np.count_nonzero(positive) + np.count_nonzero(y == lo) == y.size:
                return np.array([lo, hi], dtype=y.dtype), np.where(positive, 1.0, -1.0)
    check_classification_targets(y)
    classes = np.unique(y)
    if len(classes) != 2:
        raise ValueError(
            f"Only binary classification is supported: y has {len(classes)} class(es) "
            f"({type_of_target(y)} target), dpagg's LogisticRegression needs exactly 2"
        )
    return classes, np.where(y == classes[1], 1.0, -1.0)


def _seed(random_state: Any) -> Optional[int]:
    if random_state is None:
        return None
    if isinstance(random_state, numbers.Integral):
        return int(random_state) % (1 << 64)
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**63 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    raise ValueError(f"random_state must be None, an int or a numpy generator, not {random_state!r}")


class LogisticRegression(ClassifierMixin, BaseEstimator):
    """Differentially private binary logistic regression (dpagg's private learners).

    Parameters
    ----------
    epsilon, delta : the privacy parameters; ``delta = 0`` selects the pure ε-DP form where the
        mechanism has one.
    mechanism : a registered mechanism (:func:`mechanisms`): ``objective-perturbation`` (default;
        Chaudhuri, Monteleoni & Sarwate 2011, Theorem 9), ``output-perturbation``, ``dp-sgd``,
        ``dp-sgd-bst``, ``gibbs-posterior``, ``langevin``, …
    lambda_ : the L2 regulariser λ, or ``"auto"`` (a function of n, d and ε only).
    bounds : ``(lower, upper)``, each a number or one number per column: the public range of
        every feature. Required unless ``schema`` is given.
    schema : path of a dpagg schema file (numeric features; public bounds, centres, scales,
        transforms); a DataFrame's columns are taken by the schema's names.
    random_state : ``None`` (secure noise) or a seed (reproducible noise, **not private**).
    options : the mechanism's options by name (e.g. ``{"steps": 500}`` for ``dp-sgd``).
    accountant : a :class:`dpagg.Budget` charged before each fit (refused beyond its total).

    Attributes
    ----------
    classes_ : the two labels; ``classes_[1]`` is the positive one.
    coef_ : shape (1, k), the weights on the *mapped* columns (``map_.columns``: the features,
        then ``(intercept)``), so ``decision_function(X) == map_.transform(X)[0] @ coef_[0]``.
    intercept_ : ``[0.0]``: the intercept is the weight of the map's constant column in ``coef_``.
    map_ : the public map (``transform``, ``columns``, ``fingerprint``).
    guarantee_ : :class:`Guarantee` (ε, δ, neighbour relation) of the fit.
    metadata_ : the release metadata, as a node records it (paper, parameters, ``seeded``).
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 0.0,
        mechanism: str = "objective-perturbation",
        lambda_: Any = "auto",
        bounds: Any = None,
        schema: Any = None,
        random_state: Any = None,
        options: Optional[Dict[str, float]] = None,
        accountant: Any = None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.lambda_ = lambda_
        self.bounds = bounds
        self.schema = schema
        self.random_state = random_state
        self.options = options
        self.accountant = accountant

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.non_deterministic = self.random_state is None
        return tags

    def __sklearn_is_fitted__(self):
        return hasattr(self, "coef_")

    # -- the map ---------------------------------------------------------------------------
    def _map(self, n_features: int, names: Optional[List[str]]):
        if self.schema is not None:
            return _native.Map.from_schema(str(self.schema))
        if self.bounds is None:
            raise ValueError(
                "no bounds: give bounds=(lower, upper) (public ranges of the features, e.g. from "
                "a data dictionary) or schema='file.schema.toml'; dpagg does not read bounds off "
                "the private rows, which would void the privacy guarantee"
            )
        try:
            lower, upper = self.bounds
        except (TypeError, ValueError):
            raise ValueError("bounds must be a pair (lower, upper)") from None
        lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), (n_features,))
        hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), (n_features,))
        names = names or [f"x{j}" for j in range(n_features)]
        return _native.Map.from_bounds(lo.tolist(), hi.tolist(), [str(n) for n in names])

    def _schema_columns(self, X):
        """A DataFrame's columns the schema reads, in its order (others, such as an id or the
        label, are left out); X itself otherwise."""
        if self.schema is None or not hasattr(X, "columns"):
            return X
        names = _native.Map.from_schema(str(self.schema)).feature_names
        missing = [n for n in names if n not in X.columns]
        if missing:
            raise ValueError(f"X has no column(s) {missing} that the schema reads")
        return X[names]

    def _rows(self, X, reset: bool):
        """X as a C-contiguous float64 array, a DataFrame's columns taken by the schema's names."""
        X = validate_data(self, self._schema_columns(X), reset=reset, dtype=np.float64, order="C")
        return np.ascontiguousarray(X, dtype=np.float64)

    # -- fit ---------------------------------------------------------------------------------
    def fit(self, X, y):
        """Trains the private learner on (X, y); y must have exactly two classes. (No
        ``sample_weight``: weights would change the privacy analysis.)"""
        # X's NaN and ±∞ are refused by the core while it maps the rows (a ValueError worded
        # as scikit-learn's, before anything is released), which spares a pass over X here.
        X_checked, y = validate_data(
            self, self._schema_columns(X), y, dtype=np.float64, order="C", ensure_all_finite=False
        )
        self.classes_, signed = _binary_labels(y)
        names = list(getattr(self, "feature_names_in_", [])) or None
        self.map_ = self._map(X_checked.shape[1], names)
        lam = None if isinstance(self.lambda_, str) and self.lambda_ == "auto" else float(self.lambda_)
        options = {k: float(v) for k, v in (self.options or {}).items()}
        seed = _seed(self.random_state)
        if self.accountant is not None:
            # A fit refused for its input must not spend the budget: here X's NaN and ±∞ are
            # refused before the charge, not by the core after it.
            assert_all_finite(X_checked, estimator_name=type(self).__name__, input_name="X")
            self.accountant.charge(
                mechanism_curve(self.mechanism, self.epsilon, self.delta, self.lambda_, options)
            )
        if seed is not None:
            warnings.warn(
                "random_state gives seeded, reproducible noise: this fit is NOT private "
                "(leave random_state=None for secure noise)",
                NotPrivateWarning,
                stacklevel=2,
            )
        coef, metadata, clipped, _ = _native.fit(
            self.map_, X_checked, signed, self.mechanism, float(self.epsilon),
            float(self.delta), lam, options, seed,
        )
        if clipped:
            warnings.warn(
                f"{clipped} value(s) outside the public bounds were clipped to them",
                DataClippedWarning,
                stacklevel=2,
            )
        self.metadata_ = json.loads(metadata)
        g = self.metadata_["guarantee"]
        self.guarantee_ = Guarantee(g["epsilon"], g["delta"], g["relation"])
        self.coef_ = np.asarray(coef, dtype=np.float64).reshape(1, -1)
        self.intercept_ = np.zeros(1)
        return self

    # -- predict ---------------------------------------------------------------------------
    def decision_function(self, X):
        """The margins ⟨θ, map(x)⟩; ≥ 0 predicts ``classes_[1]``."""
        check_is_fitted(self)
        return self.map_.margins(self._rows(X, reset=False), self.coef_[0].tolist())

    def predict_proba(self, X):
        """[P(classes_[0]), P(classes_[1])] per row, σ of the margin."""
        p = expit(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """``classes_[1]`` where the margin is ≥ 0, else ``classes_[0]``."""
        positive = self.decision_function(X) >= 0
        return self.classes_[positive.astype(int)]

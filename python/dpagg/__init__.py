"""dpagg from Python: differentially private logistic regression on dpagg's Rust core.

- :class:`LogisticRegression` — a scikit-learn estimator that trains one of dpagg's registered
  private learners (objective perturbation by default) exactly as a dpagg node does.
- :class:`Model` — a federation's ``model.json`` applied to a CSV or a DataFrame exactly as
  ``dpagg-aggregator predict`` applies it.
- :mod:`dpagg.accountant` — the RDP calculators (DP-SGD ε for q, σ, steps; σ for a target ε; a
  mechanism's curve) and :class:`Budget`, an in-process budget that refuses a fit beyond its total.

Every number comes from the same Rust crate the node and the aggregator link (``dpagg-shared``);
nothing is implemented twice. See docs/python.md in the repository.
"""

from ._native import MODEL_FORMAT
from .accountant import Budget, BudgetExceeded, calibrate_sigma, dp_sgd_epsilon, mechanism_curve
from .estimator import (
    DataClippedWarning,
    Guarantee,
    LogisticRegression,
    NotPrivateWarning,
    mechanisms,
)
from .model import Model

__all__ = [
    "Budget",
    "BudgetExceeded",
    "DataClippedWarning",
    "Guarantee",
    "LogisticRegression",
    "MODEL_FORMAT",
    "Model",
    "NotPrivateWarning",
    "calibrate_sigma",
    "dp_sgd_epsilon",
    "mechanism_curve",
    "mechanisms",
]

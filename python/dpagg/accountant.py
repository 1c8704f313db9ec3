"""The accountant: dpagg's RDP calculators and an in-process privacy budget.

The numbers are the Rust crate's (``dpagg_shared::privacy::accounting``), the same functions
``dpagg-aggregator privacy dp-sgd`` and ``privacy calibrate`` print and a node's ledger uses.
"""

from __future__ import annotations

import threading
from typing import Dict, List, NamedTuple, Optional, Tuple

from . import _native


class EpsilonBound(NamedTuple):
    """ε of a DP-SGD run and the Rényi order that gave it."""

    epsilon: float
    order: float


class Curve(NamedTuple):
    """A mechanism's guarantee known before any data: (ε, δ) under ``relation``, whether it is
    proven, and its Rényi-DP curve (``orders``, ``values``) when it is analysed in RDP."""

    epsilon: float
    delta: float
    relation: str
    proven: bool
    orders: Optional[List[float]]
    values: Optional[List[float]]


def dp_sgd_epsilon(q: float, sigma: float, steps: int, delta: float) -> EpsilonBound:
    """ε of ``steps`` steps of DP-SGD (Poisson sampling rate ``q``, noise multiplier ``sigma``) at
    ``delta``, under add/remove-one (Mironov, Talwar & Zhang 2019 for the subsampled Gaussian)."""
    return EpsilonBound(*_native.dp_sgd_epsilon(float(q), float(sigma), int(steps), float(delta)))


def calibrate_sigma(q: float, steps: int, epsilon: float, delta: float) -> float:
    """The smallest noise multiplier σ (rounded up) such that ``steps`` steps of DP-SGD at
    sampling rate ``q`` are (``epsilon``, ``delta``)-DP under add/remove-one."""
    return _native.calibrate_sigma(float(q), int(steps), float(epsilon), float(delta))


def mechanism_curve(
    mechanism: str = "objective-perturbation",
    epsilon: float = 1.0,
    delta: float = 0.0,
    lambda_: object = "auto",
    options: Optional[Dict[str, float]] = None,
) -> Curve:
    """What a fit of ``mechanism`` with these parameters guarantees, before any data."""
    lam = None if lambda_ == "auto" else float(lambda_)  # type: ignore[arg-type]
    eps, dlt, relation, proven, rdp = _native.guarantee(
        mechanism, float(epsilon), float(delta), lam, dict(options or {})
    )
    orders, values = rdp if rdp is not None else (None, None)
    return Curve(eps, dlt, relation, proven, orders, values)


class BudgetExceeded(RuntimeError):
    """A fit would take a :class:`Budget` beyond its total; nothing was trained or charged."""


class Budget:
    """A privacy budget for the fits of one Python process, composed as a node's ledger composes
    its releases (RDP where every charge has a curve, else by adding; add/remove-one converted to
    replace-one, so totals are under replace-one).

    Give it to estimators as ``accountant=``: a fit is charged *before* it trains, and refused
    with :class:`BudgetExceeded` when the total would pass ``epsilon`` or ``delta``. A charge
    stands even if the fit then fails (as on a node). A budget is an account, not a value:
    ``copy.deepcopy`` (which scikit-learn's ``clone`` applies to parameters) returns the same
    budget, so cloned estimators spend from it too.
    """

    def __init__(self, epsilon: float, delta: float = 0.0):
        if not (epsilon > 0):
            raise ValueError(f"Budget: epsilon = {epsilon} must be > 0")
        if not (0 <= delta < 1):
            raise ValueError(f"Budget: delta = {delta} must be in [0, 1)")
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self._charges: List[Tuple[float, float, str, Optional[Tuple[List[float], List[float]]]]] = []
        self._lock = threading.Lock()

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self

    def spent(self) -> Tuple[float, float]:
        """(ε, δ) spent so far, under replace-one."""
        with self._lock:
            return _native.compose(list(self._charges)) if self._charges else (0.0, 0.0)

    def remaining(self) -> Tuple[float, float]:
        """(ε, δ) still available."""
        eps, dlt = self.spent()
        return max(self.epsilon - eps, 0.0), max(self.delta - dlt, 0.0)

    def charge(self, curve: Curve) -> None:
        """Records ``curve``'s guarantee, or raises :class:`BudgetExceeded` (recording nothing)."""
        rdp = (curve.orders, curve.values) if curve.orders is not None else None
        charge = (curve.epsilon, curve.delta, curve.relation, rdp)
        with self._lock:
            eps, dlt = _native.compose(self._charges + [charge])
            if eps > self.epsilon * (1 + 1e-12) or dlt > self.delta * (1 + 1e-12):
                raise BudgetExceeded(
                    f"this fit would bring the budget to ε = {eps:.6g}, δ = {dlt:.3g} "
                    f"(replace-one), over its total ε = {self.epsilon:g}, δ = {self.delta:g}: "
                    "nothing was trained or charged"
                )
            self._charges.append(charge)

    def __len__(self) -> int:
        return len(self._charges)

    def __repr__(self) -> str:
        eps, dlt = self.spent()
        return f"Budget(epsilon={self.epsilon:g}, delta={self.delta:g}; spent ε = {eps:.6g}, δ = {dlt:.3g} in {len(self)} fit(s))"

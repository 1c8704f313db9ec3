"""The Python accountant gives the Rust calculators' numbers (``dpagg-aggregator privacy``)."""

import re
import subprocess

import pytest

import dpagg

CASES = [(0.01, 1.1, 1000, 1e-5), (0.001, 0.8, 20000, 1e-6), (0.1, 2.0, 50, 1e-5)]


def cli(binary, *args):
    return subprocess.run([str(binary), "privacy", *args], check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("q,sigma,steps,delta", CASES)
def test_dp_sgd_epsilon_equals_the_rust_calculator(aggregator_bin, q, sigma, steps, delta):
    out = cli(aggregator_bin, "dp-sgd", "--q", str(q), "--sigma", str(sigma), "--steps", str(steps), "--delta", str(delta))
    want = float(re.match(r"epsilon = (\S+) ", out).group(1))
    order = float(re.search(r"RDP order (\S+)\)", out).group(1))
    got = dpagg.dp_sgd_epsilon(q, sigma, steps, delta)
    assert abs(got.epsilon - want) <= 1e-12 * max(1.0, want), (got, out)
    assert got.order == order


@pytest.mark.parametrize("q,sigma,steps,delta", CASES)
def test_calibrate_sigma_equals_the_rust_calculator_and_meets_its_target(aggregator_bin, q, sigma, steps, delta):
    out = cli(aggregator_bin, "calibrate", "--q", str(q), "--steps", str(steps), "--epsilon", "1", "--delta", str(delta))
    want = float(re.match(r"sigma = (\S+) ", out).group(1))
    got = dpagg.calibrate_sigma(q, steps, 1.0, delta)
    assert abs(got - want) <= 1e-12 * want
    assert dpagg.dp_sgd_epsilon(q, got, steps, delta).epsilon <= 1.0


def test_a_mechanisms_curve_is_known_before_any_data():
    c = dpagg.mechanism_curve("dp-sgd", epsilon=1.0, delta=1e-5)
    assert (c.epsilon, c.delta, c.relation, c.proven) == (1.0, 1e-5, "add/remove-one", True)
    assert len(c.orders) == len(c.values) > 10
    pure = dpagg.mechanism_curve("objective-perturbation", epsilon=0.5)
    assert (pure.epsilon, pure.delta, pure.relation, pure.orders) == (0.5, 0.0, "replace-one", None)


def test_bad_arguments_are_value_errors_in_one_line():
    with pytest.raises(ValueError, match="q"):
        dpagg.dp_sgd_epsilon(1.5, 1.0, 10, 1e-5)
    with pytest.raises(ValueError, match="unknown mechanism|did you mean|not a mechanism"):
        dpagg.mechanism_curve("objective-pertubation")

"""Shared fixtures: the repository's bundled data and the release binaries (built by CI before
pytest runs; set DPAGG_BIN to use others)."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def root():
    return ROOT


@pytest.fixture(scope="session")
def aggregator_bin():
    path = pathlib.Path(os.environ.get("DPAGG_BIN", ROOT / "target" / "release")) / "dpagg-aggregator"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `cargo build --release -p dpagg-aggregator` (or set DPAGG_BIN)")
    # The production build (`--no-default-features`, e.g. left by deploy/build-images.sh --no-cargo
    # or a hand build) has no lab, so no `privacy` calculators to compare with.
    probe = subprocess.run([str(path), "privacy", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail(
            f"{path} has no `privacy` command (a production build without the lab?): "
            "run `cargo build --release -p dpagg-aggregator` (or set DPAGG_BIN)"
        )
    return path

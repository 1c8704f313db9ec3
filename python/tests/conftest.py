"""Shared fixtures: the repository's bundled data and the release binaries (built by CI before
pytest runs; set DPAGG_BIN to use others)."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def root():
    return ROOT


@pytest.fixture
def aggregator_bin():
    path = pathlib.Path(os.environ.get("DPAGG_BIN", ROOT / "target" / "release")) / "dpagg-aggregator"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `cargo build --release -p dpagg-aggregator` (or set DPAGG_BIN)")
    return path

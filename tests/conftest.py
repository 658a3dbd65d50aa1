"""Shared fixtures for the core tests: a tiny config that trains in about a second, and one run of it."""
from __future__ import annotations

import os

import pytest
import torch

from assignadd_core.core.config import RunConfig

from scopes import shared
from tiny import TINY, torch_threads


@pytest.fixture(scope="session", autouse=True)
def fresh_caches_under_mutation_testing():
    """mutmut (`make mutate`) runs each mutant's tests in a fork of a process that has run the tests already:
    the split, pools and exact sets cached there were computed by the unmutated code, and a mutant in the
    functions that build them would never run. Under mutation testing (mutmut sets MUTANT_UNDER_TEST) the
    caches start empty; otherwise nothing changes."""
    if "MUTANT_UNDER_TEST" in os.environ:  # set, possibly empty, in every mutmut phase
        from assignadd_core.core import data
        from assignadd_core.experiments import fast_data
        from assignadd_core.measure import measures
        for cached in (data.make_split, data.eval_pools, data.exact_sets, fast_data._layout, fast_data._smallest_network,
                       fast_data._training_tables, fast_data.agrees, measures.measurement_batch):
            getattr(cached, "cache_clear", lambda: None)()
    yield


@pytest.fixture(scope="module")
def single_thread():
    with torch_threads(1):
        yield


@pytest.fixture(scope="session")
def tiny_config() -> RunConfig:
    return RunConfig().replace(**TINY)


@pytest.fixture(scope="session")
def paper_config() -> RunConfig:
    return RunConfig()


@pytest.fixture(scope=shared("session"))
def tiny_run(tiny_config, tmp_path_factory):
    """One finished tiny run, shared read-only by the tests that only inspect a run."""
    from assignadd_core.experiments.training import train
    with torch_threads(1):
        return train(tiny_config, tmp_path_factory.mktemp("runs") / "tiny", progress=False)

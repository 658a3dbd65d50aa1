"""Shared fixtures for the core tests: a tiny config that trains in about a second, and one run of it."""
from __future__ import annotations

import contextlib

import pytest
import torch

from assignadd_core.config import RunConfig

from tiny import TINY


@contextlib.contextmanager
def torch_threads(n: int):
    """Tiny models gain nothing from threads, and on a busy machine extra threads cost 5-10x."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


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


@pytest.fixture(scope="session")
def tiny_run(tiny_config, tmp_path_factory):
    """One finished tiny run, shared read-only by the tests that only inspect a run."""
    from assignadd_core.trainer import train
    with torch_threads(1):
        return train(tiny_config, tmp_path_factory.mktemp("runs") / "tiny", progress=False)

"""A second task built from outside the package, as a follow-up would: assignment with modular multiplication. The
operation is registered with the core (`config.OPERATIONS`), a study profile names it, the core's loop trains a tiny
run of it with the project's logged quantities, and a progress measure is read through `series`. Nothing inside
`assignadd_core` knows of multiplication."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from assignadd_core.analysis.quantities import LOGGED
from assignadd_core.analysis.series import series
from assignadd_core.core import config as core_config
from assignadd_core.core import trainer
from assignadd_core.core.config import ConfigError, RunConfig
from assignadd_core.core.data import eval_pools, sample_queries
from assignadd_core.measure.measures import MEASURE_NAMES
from assignadd_core.rules.study import profile
from tiny import TINY, torch_threads

PROFILE = """\
# A follow-up study: the same sequences, the answer a product.
overrides:
  task.operation: mul
  task.modulus: 7
"""


@pytest.fixture
def multiplication(monkeypatch):
    monkeypatch.setitem(core_config.OPERATIONS, "mul", lambda a, b, n: (a * b) % n)


def test_an_unregistered_operation_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="operation must be one of add") as error:
        RunConfig().replace(**{"task.operation": "mul"})
    assert "\n" not in str(error.value)


def test_the_paper_task_keeps_its_hash_and_the_new_one_gets_its_own(multiplication):
    paper = RunConfig()
    assert paper.replace(**{"task.operation": "add"}).hash() == paper.hash()  # every committed run keeps its hash
    assert paper.replace(**{"task.operation": "mul"}).hash() != paper.hash()


def test_a_second_task_trains_with_the_core_and_reads_a_measure_through_series(multiplication, tmp_path):
    path = tmp_path / "mul.yaml"
    path.write_text(PROFILE)
    overrides = profile(str(path))["overrides"]
    config = RunConfig().replace(**{k: v for k, v in TINY.items() if k != "modulus"}, **overrides)
    assert (config.task.operation, config.task.modulus) == ("mul", 7)

    batch = sample_queries(config.task, 256, torch.Generator().manual_seed(0))
    assert torch.equal(batch.answers, (batch.lhs_val * batch.rhs_val) % 7)
    pool = next(iter(eval_pools(config.task).values()))
    assert torch.equal(pool.answers, (pool.lhs_val * pool.rhs_val) % 7)

    with torch_threads(1):
        run = trainer.fit(config, tmp_path / "mul", LOGGED, progress=False)
    assert run.is_complete() and run.config.task.operation == "mul"
    measures = series(run, "measures")
    assert list(measures.index) == [1, 11, 21, 30]
    assert set(MEASURE_NAMES[:-1]) <= set(measures.columns) and np.isfinite(measures.to_numpy()).all()
    pools = series(run, "pools", steps="final")
    assert 0.0 <= float(pools["1var_train"].iloc[0]) <= 1.0

"""Run.nearest_checkpoint: the checkpoint step closest to a requested step, the earlier one on a tie."""
from __future__ import annotations

import pytest

from assignadd_core.core.checkpoint import CheckpointError
from assignadd_core.core.run_folder import Run


@pytest.fixture()
def run(tmp_path):
    run = Run(tmp_path / "r")
    run.checkpoint_dir.mkdir(parents=True)
    for step in (1001, 1, 201, 101):  # only the names matter to the lookup
        run.checkpoint_path(step).write_bytes(b"")
    (run.checkpoint_dir / ".step_000500.safetensors.x1y2.tmp").write_bytes(b"")  # an interrupted write
    return run


def test_checkpoint_steps_are_sorted_and_ignore_temporary_files(run):
    assert run.checkpoint_steps() == [1, 101, 201, 1001]


@pytest.mark.parametrize("step, nearest", [(101, 101), (150, 101), (151, 101), (152, 201), (0, 1), (-5, 1),
                                           (500, 201), (601, 201), (602, 1001), (10**6, 1001)])
def test_nearest_checkpoint(run, step, nearest):
    assert run.nearest_checkpoint(step) == nearest


def test_no_checkpoint_is_an_error(tmp_path):
    empty = Run(tmp_path / "empty")
    with pytest.raises(CheckpointError, match="no checkpoints"):
        empty.nearest_checkpoint(100)
    empty.checkpoint_dir.mkdir(parents=True)
    with pytest.raises(CheckpointError, match="no checkpoints"):
        empty.nearest_checkpoint(100)

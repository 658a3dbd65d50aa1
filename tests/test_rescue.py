"""Branches of a run: train on from its saved state under other settings, with the history kept."""
import json
import shutil

import pandas as pd
import pytest
import torch

from assignadd_core.core import trainer
from assignadd_core.experiments import rescue, training
from assignadd_core.core.config import ConfigError
from assignadd_core.core.run_folder import Run
from assignadd_core.experiments.named_runs import train_or_load
from tiny import torch_threads


@pytest.fixture
def source(tiny_config, tmp_path):
    with torch_threads(1):
        return training.train(tiny_config, tmp_path / "src", progress=False)


def test_a_branch_without_changes_continues_exactly(source, tiny_config, tmp_path):
    """No change: the branch is the straight run to more steps (the stream is a function of seed and step)."""
    longer = tiny_config.replace(steps=50)
    with torch_threads(1):
        rescue.branch(source, "cont", longer, root=tmp_path)
        branched = train_or_load(longer, "cont", root=tmp_path, progress=False)
        straight = training.train(longer, tmp_path / "straight", progress=False)
    a, b = (r.metrics().drop(columns=["elapsed_s"]).set_index("step") for r in (branched, straight))
    pd.testing.assert_frame_equal(a.loc[[41, 50]], b.loc[[41, 50]], check_exact=False, rtol=1e-6)
    # row 31's loss averages the steps since the source's extra row at 30 (step 31 alone); the rest is equal
    pd.testing.assert_frame_equal(a.loc[[31]].drop(columns="loss"), b.loc[[31]].drop(columns="loss"))
    assert a.index.tolist()[:4] == [1, 11, 21, 30]  # the source's rows up to the branch point are kept
    info = json.loads((branched.path / "branch.json").read_text())
    assert info["step"] == 30 and info["changed"] == {"train.steps": [30, 50]} and info["edit"] is None


def test_changed_settings_apply_from_the_branch_point(source, tiny_config, tmp_path):
    faster = tiny_config.replace(steps=40, lr=3e-3, data_seed=5)
    run = rescue.branch(source, "fast", faster, root=tmp_path)
    state = torch.load(run.resume_dir / "state.pt", weights_only=True)
    assert all(group["lr"] == 3e-3 for group in state["optimizer"]["param_groups"])
    assert json.loads((run.path / "branch.json").read_text())["changed"] == {
        "train.steps": [30, 40], "train.lr": [0.001, 0.003], "train.data_seed": [None, 5]}
    assert rescue.branch(source, "fast", faster, root=tmp_path).path == run.path  # made once
    with pytest.raises(ConfigError, match="another config"):
        rescue.branch(source, "fast", tiny_config.replace(steps=60), root=tmp_path)


def test_an_edit_redraws_the_named_weights_and_their_moments(source, tiny_config, tmp_path):
    run = rescue.branch(source, "redrawn", tiny_config.replace(steps=40), edit="redraw_layer1_qk", root=tmp_path)
    before = torch.load(source.resume_dir / "state.pt", weights_only=True)
    after = torch.load(run.resume_dir / "state.pt", weights_only=True)
    names = list(before["model"])
    for name in names:
        same = torch.equal(before["model"][name], after["model"][name])
        assert same == (name not in ("blocks.0.attn.W_Q", "blocks.0.attn.W_K")), name
    index = names.index("blocks.0.attn.W_Q")
    assert float(after["optimizer"]["state"][index]["exp_avg"].abs().max()) == 0.0
    with pytest.raises(ConfigError, match="edit must be one of"):
        rescue.branch(source, "bad", tiny_config.replace(steps=40), edit="shuffle", root=tmp_path)


def test_a_branch_must_keep_the_shape_and_go_beyond_the_source(source, tiny_config, tmp_path):
    with pytest.raises(ConfigError, match="keeps the model's shape"):
        rescue.branch(source, "wide", tiny_config.replace(steps=40, d_model=32), root=tmp_path)
    with pytest.raises(ConfigError, match="must go beyond the branch point"):
        rescue.branch(source, "short", tiny_config, root=tmp_path)


def test_arms_chain_their_stages_and_history_follows_them(source, tiny_config, tmp_path, monkeypatch):
    monkeypatch.setitem(rescue.ARMS, "tiny_temporary", [({"task.two_var_rate": 0.5}, 10, None), ({}, 10, None)])
    assert rescue.rescue("tiny_temporary", source, root=tmp_path) is None  # not trained, not asked to
    with torch_threads(1):
        first, second = rescue.rescue("tiny_temporary", source, root=tmp_path, train_missing=True)
    assert (first.config.task.two_var_rate, first.config.train.steps) == (0.5, 40)
    assert (second.config.task.two_var_rate, second.config.train.steps) == (1.0, 50)
    assert second.metrics()["step"].tolist()[-2:] == [41, 50]
    chain = rescue.history(second)
    assert [c["run"] for c in chain] == [first.name, second.name] and chain[0]["source"] == "src"
    assert chain[1]["changed"] == {"task.two_var_rate": [0.5, 1.0], "train.steps": [40, 50]}
    again = rescue.rescue("tiny_temporary", source, root=tmp_path)  # finished: read, not trained again
    assert [r.path for r in again] == [first.path, second.path]
    for stage in again:  # the committed branches keep their metrics, not their weights: still read
        stage.model_path.unlink()
    assert [r.path for r in rescue.rescue("tiny_temporary", source, root=tmp_path)] == [first.path, second.path]
    with pytest.raises(ConfigError, match="unknown rescue arm"):
        rescue.arm_stages("pray", source)

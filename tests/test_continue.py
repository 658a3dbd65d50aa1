"""A finished run continued to more steps is the longer run: same metrics, same final weights."""
import pytest
import torch

from assignadd_core.core.checkpoint import CheckpointError
from assignadd_core.cli import main
from assignadd_core.core.config import ConfigError
from assignadd_core.core.run_folder import Run
from assignadd_core.experiments.named_runs import continue_run, train_or_load

pytestmark = pytest.mark.usefixtures("single_thread")


def test_continued_run_equals_the_longer_run(tiny_config, tmp_path):
    short = train_or_load(tiny_config, "short", root=tmp_path, progress=False)
    longer = tiny_config.replace(steps=60)
    continued = continue_run(short, longer, "continued", root=tmp_path)
    continued = train_or_load(longer, "continued", root=tmp_path, progress=False)
    straight = train_or_load(longer, "straight", root=tmp_path, progress=False)
    a, b = continued.load_model().state_dict(), straight.load_model().state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    m_cont, m_straight = continued.metrics(), straight.metrics()
    extra = set(m_cont["step"]) - set(m_straight["step"])
    assert extra == {30}  # the short run's own last row
    cols = [c for c in m_straight.columns if c != "elapsed_s"]
    merged = m_cont[m_cont["step"] != 30].reset_index(drop=True)[cols]
    # the logged loss averages the steps since the previous row: after the join, row 31 averages step 31 only
    first_after = merged["step"] == 31
    assert merged[~first_after].equals(m_straight[cols][~first_after])
    assert merged[first_after].drop(columns="loss").equals(m_straight[cols][first_after].drop(columns="loss"))


def test_continuation_refuses_other_settings_and_missing_state(tiny_config, tmp_path):
    short = train_or_load(tiny_config, "short", root=tmp_path, progress=False)
    with pytest.raises(ConfigError):
        continue_run(short, tiny_config.replace(steps=60, lr=2e-3), "x", root=tmp_path)
    with pytest.raises(ConfigError):
        continue_run(short, tiny_config.replace(steps=20), "y", root=tmp_path)
    import shutil
    shutil.rmtree(short.resume_dir)
    with pytest.raises(CheckpointError):
        continue_run(short, tiny_config.replace(steps=60), "z", root=tmp_path)


def test_cli_continue_from(tiny_config, tmp_path, capsys):
    flags = ["--modulus", "7", "--n-vars", "4", "--n-left-only", "1", "--n-right-only", "1", "--d-model", "16",
             "--d-mlp", "32", "--batch-size", "32", "--eval-every", "10", "--probe-every", "20", "--pool-size", "50",
             "--root", str(tmp_path), "--no-progress", "--threads", "1"]
    assert main(["train", "--name", "a", "--steps", "30", *flags]) == 0
    assert main(["train", "--name", "b", "--steps", "50", "--continue-from", "a", *flags]) == 0
    assert Run(tmp_path / "b").final()["last_step"] == 50
    assert main(["train", "--steps", "50", "--continue-from", "a", *flags]) == 2  # needs --name
    assert "--continue-from needs --name" in capsys.readouterr().err

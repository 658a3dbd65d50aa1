"""Command line: help, train, eval (table and the stable --json object), config, and its errors."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from assignadd_core.analysis.authors_format import reference_weights_path
from assignadd_core.cli import main
from assignadd_core.core.config import RunConfig, all_keys
from assignadd_core.core.data import EXACT_NAMES, POOL_NAMES

pytestmark = pytest.mark.usefixtures("single_thread")
TINY_FLAGS = ["--modulus", "7", "--n-vars", "4", "--n-left-only", "1", "--n-right-only", "1", "--d-model", "16",
              "--d-mlp", "32", "--steps", "12", "--batch-size", "32", "--eval-every", "5", "--pool-size", "50"]
REPO = Path(__file__).resolve().parent.parent


def test_help_runs_as_a_module():
    done = subprocess.run([sys.executable, "-m", "assignadd_core", "--help"], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "train" in done.stdout and "eval" in done.stdout and "config" in done.stdout


@pytest.mark.parametrize("command", ["train", "eval", "config"])
def test_subcommand_help(command, capsys):
    with pytest.raises(SystemExit) as excinfo:
        main([command, "--help"])
    assert excinfo.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage:")
    if command != "eval":  # a flag for every config field
        for key in all_keys():
            flag = "--" + key.split(".", 1)[1].replace("_", "-")
            assert flag in out, flag


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_runs")
    assert main(["train", *TINY_FLAGS, "--root", str(root), "--name", "tiny", "--no-progress"]) == 0
    return root / "tiny"


def test_train_writes_a_run(cli_run):
    assert RunConfig.from_json((cli_run / "config.json").read_text()) == RunConfig().replace(
        modulus=7, n_vars=4, n_left_only=1, n_right_only=1, d_model=16, d_mlp=32, steps=12, batch_size=32,
        eval_every=5, pool_size=50)
    assert (cli_run / "model.safetensors").is_file() and (cli_run / "final.json").is_file()
    assert (cli_run / "metrics.csv").read_text().count("\n") == 1 + 4  # header + steps 1, 6, 11, 12


def test_train_again_loads_the_finished_run(cli_run, capsys):
    before = (cli_run / "metrics.csv").stat().st_mtime_ns
    assert main(["train", *TINY_FLAGS, "--root", str(cli_run.parent), "--name", "tiny", "--no-progress"]) == 0
    assert (cli_run / "metrics.csv").stat().st_mtime_ns == before
    assert "0-var held-out exact" in capsys.readouterr().out


def eval_json(path, capsys) -> dict:
    assert main(["eval", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one JSON object on one line
    return json.loads(out)


def test_eval_json_is_the_stable_object(cli_run, capsys):
    result = eval_json(cli_run, capsys)
    assert list(result) == ["pools", "exact"]
    assert list(result["pools"]) == list(POOL_NAMES) == [
        "0var_train", "0var_add_restricted", "1var_train", "1var_add_restricted", "1var_var_restricted",
        "2var_train", "2var_add_restricted", "2var_var_restricted_1", "2var_var_restricted_2"]
    assert list(result["exact"]) == list(EXACT_NAMES) == ["0var_heldout", "2var_union"]
    assert all(0.0 <= v <= 1.0 for part in result.values() for v in part.values())
    final = json.loads((cli_run / "final.json").read_text())
    assert result == {"pools": final["pools"], "exact": final["exact"]}


def test_eval_accepts_checkpoints_and_tl_state_dicts(cli_run, capsys, tmp_path):
    by_dir = eval_json(cli_run, capsys)
    assert eval_json(cli_run / "model.safetensors", capsys) == by_dir
    # a .pth state dict is read with the paper's config (the authors' format), so tiny weights
    # in one must be refused cleanly, naming the file
    from safetensors.torch import load_file
    path = tmp_path / "tiny.pth"
    torch.save(load_file(str(cli_run / "model.safetensors")), path)
    assert main(["eval", str(path), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(path) in err and err.count("\n") == 1


def test_eval_table(cli_run, capsys):
    assert main(["eval", str(cli_run)]) == 0
    out = capsys.readouterr().out
    for name in (*POOL_NAMES, *EXACT_NAMES):
        assert name in out, name


def test_config_prints_json_and_hash(capsys):
    assert main(["config", "--seed", "43", "--train-fraction", "0.5"]) == 0
    captured = capsys.readouterr()
    config = RunConfig.from_json(captured.out)
    assert config == RunConfig().replace(seed=43, train_fraction=0.5)
    assert captured.err.strip() == f"hash {config.hash()}"


def test_unknown_flag_exits_2(capsys):
    with pytest.raises(SystemExit) as excinfo:
        main(["train", "--not-a-flag", "3"])
    assert excinfo.value.code == 2
    assert "unrecognized arguments: --not-a-flag" in capsys.readouterr().err


def test_ill_typed_value_exits_2(capsys):
    with pytest.raises(SystemExit) as excinfo:
        main(["config", "--modulus", "many"])
    assert excinfo.value.code == 2
    assert "--modulus" in capsys.readouterr().err


@pytest.mark.parametrize("args, name", [
    (["config", "--train-fraction", "1.5"], "train_fraction"),
    (["config", "--modulus", "1"], "modulus"),
    (["config", "--two-var-rate", "-0.5"], "two_var_rate"),
    (["train", "--train-fraction", "0.01", "--steps", "1", "--no-progress"], "train_fraction"),
    (["eval", "no/such/run"], "no/such/run"),
])
def test_bad_value_is_one_error_line_and_exit_2(args, name, capsys, tmp_path):
    if args[0] == "train":
        args = [*args, "--root", str(tmp_path)]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ") and captured.err.count("\n") == 1, captured.err
    assert name in captured.err
    assert captured.out == ""


@pytest.mark.paper
@pytest.mark.skipif(reference_weights_path() is None,
                    reason="the authors' reference weights are absent (set ASSIGNADD_REFERENCE to their .pth)")
def test_eval_of_the_reference_weights(capsys):
    """The authors' final model, through our pools and exact sets: about 30 s on 2 cores."""
    result = eval_json(reference_weights_path(), capsys)
    assert list(result["pools"]) == list(POOL_NAMES) and list(result["exact"]) == list(EXACT_NAMES)
    for part in result.values():
        for name, accuracy in part.items():
            assert accuracy > 0.95, (name, accuracy)


def test_eval_config_reads_a_state_dict_with_that_config(cli_run, capsys, tmp_path):
    """`--config` tells eval how to read a .pth state dict: with the run's own config, the tiny weights load
    and give the run's own numbers (without it they are refused, see above)."""
    from safetensors.torch import load_file
    path = tmp_path / "tiny.pth"
    torch.save(load_file(str(cli_run / "model.safetensors")), path)
    assert main(["eval", str(path), "--json", "--config", str(cli_run / "config.json")]) == 0
    assert json.loads(capsys.readouterr().out) == eval_json(cli_run, capsys)


def test_train_threads_sets_torchs_threads(tmp_path, monkeypatch):
    """`--threads N` is in effect when training starts (the trainer stand-in records it, then stops)."""
    import assignadd_core.experiments.named_runs as runs
    seen = []

    def record(*args, **kwargs):
        seen.append(torch.get_num_threads())
        raise KeyboardInterrupt

    monkeypatch.setattr(runs, "train_or_load", record)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert main(["train", *TINY_FLAGS, "--root", str(tmp_path), "--name", "t", "--threads", "1"]) == 130
        assert seen == [1]
        assert main(["train", *TINY_FLAGS, "--root", str(tmp_path), "--name", "t", "--threads", "0"]) == 2
        assert seen == [1]  # refused before training
    finally:
        torch.set_num_threads(before)


def test_ctrl_c_exits_130_and_says_how_to_resume(tmp_path):
    """A real Ctrl-C (SIGINT) in the middle of training: exit code 130, a line naming the resume step, and the
    same command resumes."""
    import signal
    import time
    cmd = [sys.executable, "-m", "assignadd_core", "train", *TINY_FLAGS[:-6], "--steps", "4000", "--batch-size", "32",
           "--eval-every", "5", "--pool-size", "50", "--root", str(tmp_path), "--name", "c", "--no-progress",
           "--threads", "1"]
    # a shell's background job inherits SIGINT ignored, and Python then never turns it into KeyboardInterrupt:
    # give the child the default disposition, as a terminal would
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    metrics = tmp_path / "c" / "metrics.csv"
    deadline = time.time() + 120
    while (not metrics.is_file() or metrics.read_text().count("\n") < 4) and time.time() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "resumes from step" in out + err

"""Trainer details that a rerun-equals-rerun test cannot see: device and bf16 probes, the optimizer's settings,
the wall clock, the bf16 step count across a resume, the progress bar, the messages, and what final.json and
metrics.csv hold. Each test fails for a one-line change of the code it names (checked by `make mutate`)."""
from __future__ import annotations

import json
import math
import re
import subprocess
import warnings
from pathlib import Path

import pytest
import torch

from assignadd_core.core.loss import autocast_context
from assignadd_core.core import trainer
from assignadd_core.experiments import training
from assignadd_core.core.config import ConfigError
from assignadd_core.core.model import initial_model
from assignadd_core.core.run_folder import Run

from test_trainer import interrupt_at

pytestmark = pytest.mark.usefixtures("single_thread")
REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------- devices
@pytest.mark.parametrize("name", ["gpu", "CUDA", "cuda0", "tpu"])
def test_unknown_device_names_are_config_errors(name):
    with pytest.raises(ConfigError) as error:
        trainer.resolve_device(name)
    assert str(error.value) == f"device must be 'cpu' or 'cuda', got {name!r}"


@pytest.mark.parametrize("name", ["cuda", "cuda:1"])
def test_cuda_without_a_gpu_is_a_device_error_and_with_one_is_accepted(name, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(trainer.DeviceError) as error:
        trainer.resolve_device(name)
    assert str(error.value) == f"device {name!r} requested but torch sees no CUDA GPU on this machine"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert trainer.resolve_device(name) == torch.device(name)  # nothing is allocated: no GPU needed
    assert trainer.resolve_device("cpu") == torch.device("cpu")


def fake_cpu(monkeypatch, *, mkldnn=True, mkldnn_bf16=True, machine="x86_64", avx512_bf16=False, amx=False):
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: mkldnn)
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: mkldnn_bf16)
    monkeypatch.setattr(trainer.platform, "machine", lambda: machine)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)


@pytest.mark.parametrize("cpu, native", [
    (dict(), False),  # plain AVX-512: oneDNN's check passes, bf16 is emulated
    (dict(avx512_bf16=True), True), (dict(amx=True), True), (dict(avx512_bf16=True, amx=True), True),
    (dict(machine="AMD64", amx=True), True), (dict(machine="AMD64"), False),
    (dict(mkldnn=False, avx512_bf16=True), False), (dict(mkldnn_bf16=False, amx=True), False),
    (dict(machine="aarch64"), True), (dict(machine="aarch64", mkldnn_bf16=False), False),
])
def test_native_bf16_truth_table_on_cpu(cpu, native, monkeypatch):
    fake_cpu(monkeypatch, **cpu)
    assert trainer.native_bf16(torch.device("cpu")) is native


def test_native_bf16_on_cuda_asks_for_hardware_bf16(monkeypatch):
    asked = []
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: asked.append(including_emulation) or True)
    assert trainer.native_bf16(torch.device("cuda")) is True
    assert asked == [False]


def test_use_bf16_asks_about_the_device_it_is_given(tiny_config, monkeypatch, capsys):
    monkeypatch.setattr(trainer, "native_bf16", lambda device: device.type == "cpu")
    assert trainer.use_bf16(tiny_config.replace(bf16=True), torch.device("cpu")) is True
    assert trainer.use_bf16(tiny_config, torch.device("cpu")) is False
    assert trainer.use_bf16(tiny_config.replace(bf16=True), torch.device("cuda")) is False
    assert capsys.readouterr().err == (
        "warning: bf16 requested but this cuda has no native bf16 (emulated bf16 is several times slower than"
        " fp32); training in fp32, recorded as bf16_used false in final.json\n")


def test_autocast_context_uses_bf16_on_every_device(tiny_config):
    # CUDA's autocast defaults to fp16: the dtype must be asked for (the context is only built here, never entered)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "CUDA is not available" on a machine without a GPU
        context = autocast_context(tiny_config, torch.device("cuda"), bf16=True)
    assert context.fast_dtype == torch.bfloat16


# ---------------------------------------------------------------------------- optimizer
def test_optimizer_takes_every_setting_from_the_config(tiny_config):
    config = tiny_config.replace(lr=3e-3, beta1=0.8, beta2=0.95, eps=1e-6, weight_decay=0.1)
    model = initial_model(config)
    group = trainer.make_optimizer(model, config).param_groups[0]
    assert (group["lr"], group["betas"], group["eps"], group["weight_decay"]) == (3e-3, (0.8, 0.95), 1e-6, 0.1)
    assert len(group["params"]) == len(list(model.parameters()))


# ---------------------------------------------------------------------------- the loop
def test_run_dir_parents_are_created(tiny_config, tmp_path):
    run = training.train(tiny_config.replace(steps=2, eval_every=1), tmp_path / "a" / "b" / "run", progress=False)
    assert run.is_complete()


def test_bad_keep_checkpoints_is_refused_with_its_choices(tiny_config, tmp_path):
    with pytest.raises(ConfigError) as error:
        training.train(tiny_config, tmp_path / "r", progress=False, keep_checkpoints="some")
    assert str(error.value) == "keep_checkpoints must be one of ('all', 'none'), got 'some'"


def test_a_non_finite_loss_stops_the_run_naming_the_step(tiny_config, tmp_path, monkeypatch):
    monkeypatch.setattr(trainer, "train_step", lambda *args: math.nan)
    with pytest.raises(FloatingPointError) as error:
        training.train(tiny_config, tmp_path / "r", progress=False)
    assert str(error.value) == "training loss became nan at step 1; lower lr or disable bf16"


def test_loss_column_is_the_mean_over_the_steps_since_the_last_row(tiny_config, tmp_path, monkeypatch):
    losses = iter([float(step) for step in range(1, 31)])  # step s has loss s
    monkeypatch.setattr(trainer, "train_step", lambda *args: next(losses))
    run = training.train(tiny_config, tmp_path / "r", progress=False)
    # rows at steps 1, 11, 21, 30 average steps {1}, {2..11}, {12..21}, {22..30}
    assert run.metrics()["loss"].tolist() == [1.0, 6.5, 16.5, 26.0]


def test_elapsed_time_counts_the_clock_from_zero(tiny_config, tmp_path, monkeypatch):
    ticks = iter(1.23456 * i for i in range(10_000))  # every perf_counter() call advances the clock by 1.23456 s
    monkeypatch.setattr(trainer.time, "perf_counter", lambda: next(ticks))
    run = training.train(tiny_config, tmp_path / "r", progress=False)
    # one clock read at the start and one per row; rows keep 2 decimals, final.json 1
    assert run.metrics()["elapsed_s"].tolist() == [1.23, 2.47, 3.7, 4.94]
    assert run.final()["wall_time_s"] == 4.9


def test_bf16_step_count_survives_a_resume_and_an_older_state(tiny_config, tmp_path, monkeypatch):
    """A run that asked for bf16 on a CPU without it trained 0 bf16 steps, also when resumed; a state saved
    before the count existed counts its steps as the config asked."""
    config = tiny_config.replace(bf16=True)
    monkeypatch.setattr(trainer, "native_bf16", lambda device: False)
    interrupt_at(monkeypatch, "train_step", lambda call, args: call == 15)
    with pytest.raises(KeyboardInterrupt):
        training.train(config, tmp_path / "fp32", progress=False)
    monkeypatch.undo()
    monkeypatch.setattr(trainer, "native_bf16", lambda device: False)
    assert training.train(config, tmp_path / "fp32", progress=False).final()["bf16_steps"] == 0

    for bf16, expected in ((True, 30), (False, 0)):  # an older state: no bf16_steps saved
        path = tmp_path / f"old-{bf16}"
        cfg = tiny_config.replace(bf16=bf16)
        interrupt_at(monkeypatch, "train_step", lambda call, args: call == 15)
        with pytest.raises(KeyboardInterrupt):
            training.train(cfg, path, progress=False)
        monkeypatch.undo()
        monkeypatch.setattr(trainer, "native_bf16", lambda device: True)
        state_path = Run(path).resume_dir / trainer.RESUME_FILE
        state = torch.load(state_path, weights_only=False)
        del state["bf16_steps"]
        torch.save(state, state_path)
        final = training.train(cfg, path, progress=False).final()
        assert final["bf16_steps"] == expected and final["bf16_used"] is bf16


def test_one_bf16_step_counts_as_bf16_used(tiny_config, tmp_path, monkeypatch):
    monkeypatch.setattr(trainer, "native_bf16", lambda device: True)
    final = training.train(tiny_config.replace(bf16=True, steps=1), tmp_path / "r", progress=False).final()
    assert final["bf16_steps"] == 1 and final["bf16_used"] is True


def test_interrupt_says_where_the_run_resumes(tiny_config, tmp_path, monkeypatch, capsys):
    interrupt_at(monkeypatch, "train_step", lambda call, args: call == 15)
    with pytest.raises(KeyboardInterrupt):
        training.train(tiny_config, tmp_path / "r", progress=False)
    assert capsys.readouterr().out == f"\ninterrupted; {tmp_path / 'r'} resumes from step 11\n"
    assert trainer.last_saved_step(Run(tmp_path / "r")) == 11
    assert trainer.last_saved_step(Run(tmp_path / "never-trained")) == 0


class RecordingBar:
    """Stands in for tqdm: records what the trainer asks the bar to show (a real bar, drawn in mutmut's forked
    test process, hung there whenever the test failed)."""
    made: list["RecordingBar"] = []

    def __init__(self, **kwargs):
        self.kwargs, self.updates, self.postfix, self.closed = kwargs, 0, None, False
        RecordingBar.made.append(self)

    def update(self, n):
        self.updates += n

    def set_postfix(self, **postfix):
        self.postfix = postfix

    def close(self):
        self.closed = True


def test_progress_bar_by_default(tiny_config, tmp_path, monkeypatch):
    RecordingBar.made = []
    monkeypatch.setattr(trainer, "tqdm", RecordingBar)
    training.train(tiny_config, tmp_path / "barred")  # progress is on unless switched off
    bar, = RecordingBar.made
    assert bar.kwargs == dict(total=30, initial=0, disable=False, desc="barred", unit="step", mininterval=2.0,
                              dynamic_ncols=True)
    assert bar.updates == 30 and bar.closed
    assert set(bar.postfix) == {"loss", "v1", "v2", "refresh"} and bar.postfix["refresh"] is False
    assert re.fullmatch(r"\d+\.\d{3}", bar.postfix["loss"]) and re.fullmatch(r"\d\.\d\d", bar.postfix["v1"])
    assert re.fullmatch(r"\d\.\d\d", bar.postfix["v2"])
    training.train(tiny_config, tmp_path / "quiet", progress=False)
    assert RecordingBar.made[-1].kwargs["disable"] is True
    # a resumed run's bar starts where the run stopped
    interrupt_at(monkeypatch, "train_step", lambda call, args: call == 15)
    with pytest.raises(KeyboardInterrupt):
        training.train(tiny_config, tmp_path / "resumed", progress=False)
    assert RecordingBar.made[-1].closed  # closed before the message, also when interrupted
    monkeypatch.undo()
    monkeypatch.setattr(trainer, "tqdm", RecordingBar)
    training.train(tiny_config, tmp_path / "resumed")
    assert RecordingBar.made[-1].kwargs["initial"] == 11 and RecordingBar.made[-1].updates == 19


# ---------------------------------------------------------------------------- what the files hold
def test_final_json_is_indented_and_names_the_machine(tiny_run, monkeypatch):
    text = tiny_run.final_path.read_text()
    assert text.startswith('{\n  "last_step": 30,\n') and text.endswith("}\n")
    final = json.loads(text)
    assert final["device"] == "cpu" and final["device_name"] == trainer.cpu_name()


def test_environment_records_the_commit_and_wait_policy_from_anywhere(tmp_path, monkeypatch):
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=REPO)
    monkeypatch.chdir(tmp_path)  # not a git checkout: the commit is the package's, not the working directory's
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    info = trainer.environment_info(torch.device("cpu"))
    assert info["omp_wait_policy"] == "PASSIVE"
    assert info["git_commit"] == (head.stdout.strip() if head.returncode == 0 else None)
    assert info["threads"] == torch.get_num_threads() and info["torch"] == torch.__version__
    monkeypatch.setattr(trainer.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 128, "", ""))
    assert trainer.environment_info(torch.device("cpu"))["git_commit"] is None  # git failed: no commit

    def no_git(*args, **kwargs):
        raise FileNotFoundError("git")
    monkeypatch.setattr(trainer.subprocess, "run", no_git)
    assert trainer.environment_info(torch.device("cpu"))["git_commit"] is None  # no git at all


def test_environment_names_the_gpu_on_cuda(monkeypatch):
    asked = []
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: asked.append(device) or "Some GPU")
    info = trainer.environment_info(torch.device("cuda:0"))
    assert info["device"] == "cuda" and info["device_name"] == "Some GPU" and asked == [torch.device("cuda:0")]


def test_cpu_name_reads_the_model_name_and_falls_back(monkeypatch):
    lines = "processor\t: 0\nvendor_id\t: X\nmodel name\t: Some CPU @ 2.0GHz\nflags\t: a b\n"
    monkeypatch.setattr(trainer.Path, "read_text", lambda self: lines if str(self) == "/proc/cpuinfo" else "")
    assert trainer.cpu_name() == "Some CPU @ 2.0GHz"

    def unreadable(self):
        raise OSError("no such file")
    monkeypatch.setattr(trainer.Path, "read_text", unreadable)
    monkeypatch.setattr(trainer.platform, "processor", lambda: "armv8")
    assert trainer.cpu_name() == "armv8"
    monkeypatch.setattr(trainer.platform, "processor", lambda: "")
    assert trainer.cpu_name() == "cpu"


def test_metrics_rows_write_floats_with_six_digits_and_integers_whole(tmp_path):
    path = tmp_path / "metrics.csv"
    trainer.append_metrics(path, {name: 0.123456789 for name in training.METRIC_COLUMNS} | {"step": 1234567},
                           training.METRIC_COLUMNS)
    header, row = path.read_text().splitlines()
    assert header == ",".join(training.METRIC_COLUMNS)
    assert row == "1234567," + ",".join(["0.123457"] * (len(training.METRIC_COLUMNS) - 1))

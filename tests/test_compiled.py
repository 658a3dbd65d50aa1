"""The compiled training step, and the separate seeds of initialization and data order.

Compiling changes how the step is computed, never what the run is: same config and hash, same stream;
the compiled loss rounds differently from the eager one (fused kernels sum in another order), so a
compiled run is compared with an eager one through bounds on one step, not bit for bit."""
import json

import pytest
import torch

from assignadd_core.core.loss import fused_loss
from assignadd_core.core import trainer
from assignadd_core.experiments import training
from assignadd_core.core.config import ConfigError, RunConfig
from assignadd_core.core.data import TrainStream
from assignadd_core.core.model import initial_model
from assignadd_core.core.run_folder import Run
from assignadd_core.experiments.sweep import SWEEPS
from assignadd_core.experiments.sweep.grid import FACTORIAL_SEEDS
from tiny import torch_threads
from test_trainer import interrupt_at

# Measured on the tiny model: logits within 4e-7, gradients within 3e-7 (relative); a wrong function is off by O(1).
LOGIT_TOLERANCE, GRADIENT_TOLERANCE = 1e-5, 1e-4


def loss_and_grads(model, loss_fn, tokens, answers):
    model.zero_grad(set_to_none=True)
    loss = loss_fn(tokens, answers)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


def test_compiled_loss_and_gradients_match_eager_within_bounds(tiny_config):
    model = initial_model(tiny_config)
    optimizer = trainer.make_optimizer(model, tiny_config)
    cpu = torch.device("cpu")
    step = trainer.TrainingStep(model, optimizer, tiny_config, cpu, bf16=False, compiled=True)
    assert step.compiled
    tokens, answers = TrainStream(tiny_config.task, 64, seed=3).batch(1)
    with torch.no_grad():
        compiled_logits, eager_logits = torch.compile(model.fused_logits)(tokens), model.fused_logits(tokens)
    assert float((compiled_logits - eager_logits).abs().max()) <= LOGIT_TOLERANCE * float(eager_logits.abs().max())
    eager_loss, eager_grads = loss_and_grads(model, step._loss, tokens, answers)
    compiled_loss, compiled_grads = loss_and_grads(model, step._compiled_loss, tokens, answers)
    assert abs(float(compiled_loss - eager_loss)) <= LOGIT_TOLERANCE * float(eager_loss)
    for name, grad in eager_grads.items():
        change = float((compiled_grads[name] - grad).norm() / grad.norm())
        assert change <= GRADIENT_TOLERANCE, f"{name}: relative gradient difference {change:.2e}"
    # and a wrong loss would not pass these bounds: the gradient of twice the loss is off by 100 %
    doubled = {n: 2 * g for n, g in compiled_grads.items()}
    assert any(float((doubled[n] - g).norm() / g.norm()) > GRADIENT_TOLERANCE for n, g in eager_grads.items())


def test_a_run_resumes_across_compiled_and_eager_processes(tiny_config, tmp_path, monkeypatch):
    path = tmp_path / "mixed"
    interrupt_at(monkeypatch, "train_step", lambda call, args: call == 7)  # eager, killed during step 7
    with pytest.raises(KeyboardInterrupt):
        training.train(tiny_config, path, progress=False, compile="off")
    monkeypatch.undo()
    assert json.loads((Run(path).resume_dir / "state.json").read_text())["step"] == 1
    # ... resumed by a compiled process to the end, with its config and hash unchanged
    resumed = training.train(tiny_config, path, progress=False, compile="on")
    final = resumed.final()
    assert final["compiled"] is True and final["compile"] == "on"
    assert final["compiled_steps"] == tiny_config.train.steps - 1  # steps 2..30 compiled, step 1 eager
    assert resumed.config == tiny_config and resumed.config.hash() == tiny_config.hash()
    assert resumed.metrics()["step"].tolist() == [1, 11, 21, 30]


def test_compiling_that_fails_falls_back_to_eager_with_one_line(tiny_config, tmp_path, monkeypatch, capsys):
    def unavailable(*args, **kwargs):
        raise RuntimeError("no C++ compiler on this machine\nmore detail")

    monkeypatch.setattr(torch, "compile", unavailable)
    run = training.train(tiny_config, tmp_path / "fallback", progress=False, compile="on")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "torch.compile is unavailable here" in err and "training eager" in err
    final = run.final()
    assert final["compiled"] is False and final["compiled_steps"] == 0 and final["compile"] == "on"


def test_compile_auto_is_for_long_single_thread_cpu_runs_only():
    cpu = torch.device("cpu")
    with torch_threads(1):
        assert trainer.compile_wanted("auto", cpu, 40_000)
        assert not trainer.compile_wanted("auto", cpu, trainer.COMPILE_MIN_STEPS - 1)  # compiling costs more
        assert not trainer.compile_wanted("off", cpu, 40_000)
    with torch_threads(2):  # measured slower at two threads
        assert not trainer.compile_wanted("auto", cpu, 40_000) and trainer.compile_wanted("on", cpu, 10)
    assert not trainer.compile_wanted("auto", torch.device("meta"), 40_000)
    with pytest.raises(ConfigError, match="compile must be one of"):
        trainer.compile_wanted("yes", cpu, 40_000)


# ---------------------------------------------------------------------------- init_seed and data_seed
def test_init_and_data_seeds_default_to_seed_and_keep_every_hash(tiny_config):
    paper = RunConfig()
    assert (paper.train.weights_seed, paper.train.stream_seed) == (42, 42)
    # setting either to the seed is the same run: the same config and hash
    assert paper.replace(init_seed=42, data_seed=42) == paper
    assert paper.replace(init_seed=42).hash() == paper.hash()
    moved = paper.replace(init_seed=7)
    assert moved.hash() != paper.hash() and (moved.train.weights_seed, moved.train.stream_seed) == (7, 42)
    assert RunConfig.from_json(moved.to_json()) == moved
    with pytest.raises(ConfigError, match="init_seed must be an integer"):
        paper.replace(init_seed=1.5)
    with pytest.raises(ConfigError, match="data_seed must be an integer"):
        paper.replace(data_seed="7")


def test_every_committed_config_keeps_its_hash():
    """Each sweep line stores its config and the hash it was run under; main runs are named by seed."""
    from assignadd_core.core.run_folder import DEFAULT_ROOT
    from assignadd_core.experiments.sweep import read_records
    checked = 0
    for path in (DEFAULT_ROOT / "sweeps").glob("*.jsonl"):
        for record in read_records(path):
            if "config" in record:
                # a point trained in a stated mode carries it after the hash ("<hash>-compiled")
                key = record["key"].removesuffix(f"-{record['mode']}") if record.get("mode") else record["key"]
                assert RunConfig.from_dict(record["config"]).hash() == key, (path.name, record["key"])
                checked += 1
    assert checked >= 100
    seed42 = Run(DEFAULT_ROOT / "seed42").config
    assert seed42.hash() == "35c0d33b9461" and seed42.train.init_seed is None is seed42.train.data_seed


def test_init_seed_moves_the_weights_and_data_seed_the_stream(tiny_config):
    base = initial_model(tiny_config).state_dict()
    other_data = initial_model(tiny_config.replace(data_seed=99)).state_dict()
    other_init = initial_model(tiny_config.replace(init_seed=99)).state_dict()
    assert all(torch.equal(base[n], other_data[n]) for n in base)
    assert not torch.equal(base["embed.W_E"], other_init["embed.W_E"])
    reseeded = tiny_config.replace(seed=99)
    assert torch.equal(initial_model(reseeded).state_dict()["embed.W_E"], other_init["embed.W_E"])


def test_factorial_cells_cross_initializations_with_data_orders():
    sweep = SWEEPS["composition_factorial"]
    configs = {(p.params["train.init_seed"], p.seed): RunConfig().replace(**p.overrides) for p in sweep.points()}
    assert len(configs) == 32 and len({c.hash() for c in configs.values()}) == 32
    composers, failers = FACTORIAL_SEEDS[:4], FACTORIAL_SEEDS[4:]
    for inits in (composers, failers):  # 8 cells in each of the four blocks, each seed 4 times per role
        for datas in (composers, failers):
            assert sum((i, d) in configs for i in inits for d in datas) == 8
    for seed in FACTORIAL_SEEDS:
        assert sum(i == seed for i, _ in configs) == 4 and sum(d == seed for _, d in configs) == 4
        assert (seed, seed) in configs
    cell = configs[(42, 43)].train
    assert (cell.weights_seed, cell.stream_seed) == (42, 43)
    # a diagonal cell is the plain seed run of the seeds study: one folder, one result
    seeds_point = next(p for p in SWEEPS["composition_seeds"].points() if p.seed == 44)
    assert configs[(44, 44)].hash() == seeds_point.key


def test_with_values_keeps_the_grid_points():
    sweep = SWEEPS["f_sweep"].with_seeds([44]).with_values([0.159, 0.208])
    assert sweep.name == "f_sweep" and sweep.grid["task.train_fraction"] == (0.159326, 0.208189)
    full = {p.key for p in SWEEPS["f_sweep"].with_seeds([44]).points()}
    assert {p.key for p in sweep.points()} <= full
    with pytest.raises(ConfigError, match="grid fields, not one"):
        SWEEPS["composition_seeds"].with_values([0.1])


@pytest.mark.paper
def test_at_the_papers_size_the_compiled_step_differs_from_eager_by_rounding_only():
    """The paper-size model at its initial weights: the compiled gradient is the eager one up to fp32 rounding (seed
    58's checkpoints measure 3e-7 to 4e-7 relative, chapter 4), far below any difference a wrong kernel would make."""
    config = trainer.RunConfig()
    model = initial_model(config)
    cpu = torch.device("cpu")
    tokens, answers = TrainStream(config.task, config.train.batch_size, seed=58).batch(1)
    eager_loss = lambda t, a: fused_loss(model, t, a, config, cpu)  # noqa: E731
    _, eager = loss_and_grads(model, eager_loss, tokens, answers)
    _, compiled = loss_and_grads(model, torch.compile(eager_loss), tokens, answers)
    flat = lambda grads: torch.cat([g.reshape(-1).double() for g in grads.values()])  # noqa: E731
    difference = float((flat(compiled) - flat(eager)).norm() / flat(eager).norm())
    assert 0 <= difference <= 1e-5, f"relative gradient difference {difference:.2e}"

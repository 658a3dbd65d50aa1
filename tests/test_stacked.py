"""Stacked runs (`assignadd_core.experiments.stacked`): K runs trained in one process write what each would write alone.

Eager on CPU a stacked run is bit-identical to the run alone: vmap runs each operation as one batched
kernel whose per-run numbers are those of the single kernel, and AdamW is elementwise. Compiled, the stack
rounds differently (as a compiled single run does), so it is compared through bounds on one step."""
import pandas as pd
import pytest
import torch

from assignadd_core.core.loss import fused_loss
from assignadd_core.core import trainer
from assignadd_core.experiments import early_stop, stacked, training
from assignadd_core.core.checkpoint import load_torch_dict
from assignadd_core.cli import main
from assignadd_core.core.config import ConfigError
from assignadd_core.core.data import TrainStream
from assignadd_core.core.locks import BusyError
from assignadd_core.core.model import initial_model
from assignadd_core.core.run_folder import Run
from assignadd_core.experiments.sweep import Sweep, read_records, results_path, run_sweep
from test_compiled import GRADIENT_TOLERANCE, LOGIT_TOLERANCE
from tiny import TINY

pytestmark = pytest.mark.usefixtures("single_thread")


def three(tiny_config):
    """Three runs of one shape that differ in what stacking must keep per run: seed, data seed, r."""
    return [tiny_config.replace(seed=1), tiny_config.replace(seed=2, data_seed=5),
            tiny_config.replace(seed=3, two_var_rate=0.5)]


def same_run(alone: Run, stack: Run) -> None:
    """Every file of the run folder equal, up to the wall clock (and final.json's record of how it trained)."""
    assert alone.config_path.read_bytes() == stack.config_path.read_bytes()
    pd.testing.assert_frame_equal(alone.metrics().drop(columns="elapsed_s"), stack.metrics().drop(columns="elapsed_s"))
    assert sorted(p.relative_to(alone.path) for p in alone.path.rglob("*") if ".lock" not in p.name) == sorted(
        p.relative_to(stack.path) for p in stack.path.rglob("*") if ".lock" not in p.name)
    for step in [None, *alone.checkpoint_steps()]:
        a, b = alone.load_model(step).state_dict(), stack.load_model(step).state_dict()
        assert all(torch.equal(a[n], b[n]) for n in a), step
    a, b = (load_torch_dict(r.resume_dir / trainer.RESUME_FILE) for r in (alone, stack))
    assert all(torch.equal(a["model"][n], b["model"][n]) for n in a["model"])
    for index, moments in a["optimizer"]["state"].items():
        assert all(torch.equal(v, b["optimizer"]["state"][index][k]) for k, v in moments.items())
    assert a["optimizer"]["param_groups"] == b["optimizer"]["param_groups"]
    fa, fb = alone.final(), stack.final()
    assert (fa["exact"], fa["pools"]) == (fb["exact"], fb["pools"])


@pytest.fixture(scope="module")
def alone_runs(tiny_config, tmp_path_factory):
    root = tmp_path_factory.mktemp("alone")
    return [training.train(c, root / f"r{i}", progress=False, compile="off") for i, c in enumerate(three(tiny_config))]


def test_three_runs_stacked_are_bit_identical_to_the_runs_alone(tiny_config, alone_runs, tmp_path):
    runs = stacked.train_stacked(three(tiny_config), [tmp_path / f"s{i}" for i in range(3)], progress=False,
                                 compile="off")
    for alone, stack in zip(alone_runs, runs):
        same_run(alone, stack)
        final = stack.final()
        assert final["stacked"] == 3 and final["stacked_steps"] == tiny_config.train.steps
        assert stack.config.hash() == alone.config.hash()
    assert alone_runs[0].final()["stacked"] == 1 and alone_runs[0].final()["stacked_steps"] == 0


def kill_stacked_step_at(monkeypatch, call: int) -> None:
    """The stacked step raises KeyboardInterrupt at its `call`-th call (a stack killed at step `call`)."""
    calls = []
    real = stacked.StackedStep.__call__

    def killed(self, tokens, answers, step=None):
        calls.append(1)
        if len(calls) == call:
            raise KeyboardInterrupt
        return real(self, tokens, answers, step)

    monkeypatch.setattr(stacked.StackedStep, "__call__", killed)


def test_a_killed_stack_resumes_every_run_even_from_different_steps(tiny_config, alone_runs, tmp_path, monkeypatch):
    configs, paths = three(tiny_config), [tmp_path / f"s{i}" for i in range(3)]
    kill_stacked_step_at(monkeypatch, 17)
    with pytest.raises(KeyboardInterrupt):
        stacked.train_stacked(configs, paths, progress=False, compile="off")
    monkeypatch.undo()
    assert [trainer.last_saved_step(Run(p)) for p in paths] == [11, 11, 11]
    # run 1 goes on alone to step 21, run 2 is wiped: the stack starts from steps 0, 11 and 21
    trainer_calls = []
    real_step = trainer.train_step

    def killed_at_15(*args, **kwargs):
        trainer_calls.append(1)
        if len(trainer_calls) == 15:  # step 26
            raise KeyboardInterrupt
        return real_step(*args, **kwargs)

    monkeypatch.setattr(trainer, "train_step", killed_at_15)
    with pytest.raises(KeyboardInterrupt):
        training.train(configs[1], paths[1], progress=False, compile="off")
    monkeypatch.undo()
    import shutil
    shutil.rmtree(paths[2])
    assert [trainer.last_saved_step(Run(p)) for p in paths] == [11, 21, 0]

    segments = []
    real_group = stacked._train_group

    def recorded(configs, runs, *args):
        segments.append(([r.name for r in runs], args[3]))
        return real_group(configs, runs, *args)

    monkeypatch.setattr(stacked, "_train_group", recorded)
    runs = stacked.train_stacked(configs, paths, progress=False, compile="off")
    # the furthest behind catch up (stacked among themselves) to where the next run stopped, then train together
    assert segments == [(["s2"], 11), (["s0", "s2"], 21), (["s0", "s1", "s2"], 30)]
    for alone, stack in zip(alone_runs, runs):
        same_run(alone, stack)
    # run 1: steps 1-11 and 22-30 in a stack, 12-21 alone; run 2: 1-11 alone (a stack of one), 12-30 stacked
    assert [r.final()["stacked_steps"] for r in runs] == [30, 20, 19]


def test_finished_runs_are_left_alone_and_a_finished_stack_trains_nothing(tiny_config, alone_runs, tmp_path):
    configs = three(tiny_config)
    before = alone_runs[0].final_path.read_text()
    runs = stacked.train_stacked(configs[:1] + configs[1:2], [alone_runs[0].path, tmp_path / "new"], progress=False,
                                 compile="off")
    assert alone_runs[0].final_path.read_text() == before  # finished: not retrained, not rewritten
    same_run(alone_runs[1], runs[1])
    assert runs[1].final()["stacked"] == 1  # the only unfinished run trained on its own


def test_runs_of_another_shape_or_optimizer_are_refused(tiny_config, tmp_path):
    for field, value in (("d_model", 8), ("lr", 1e-2), ("eval_every", 5), ("modulus", 11), ("bf16", True)):
        with pytest.raises(ConfigError, match=f"must share .*{field}"):
            stacked.train_stacked([tiny_config, tiny_config.replace(**{field: value})],
                                  [tmp_path / "a", tmp_path / "b"], progress=False)
    with pytest.raises(ConfigError, match="same run folder twice"):
        stacked.train_stacked([tiny_config, tiny_config], [tmp_path / "a", tmp_path / "a"], progress=False)
    assert not list(tmp_path.iterdir())  # refused before anything is written
    # what may differ: every seed, the data fields, the init scale
    stacked.check_stackable([tiny_config, tiny_config.replace(seed=9, init_seed=3, data_seed=4, train_fraction=0.9,
                                                               two_var_rate=0.2, init_std_scale=1.0)])


def test_a_run_written_by_another_process_stops_the_stack_at_once(tiny_config, tmp_path):
    configs, paths = three(tiny_config)[:2], [tmp_path / "a", tmp_path / "b"]
    paths[1].mkdir()
    with Run(paths[1]).writer_lock():
        with pytest.raises(BusyError, match="is being written by pid"):
            stacked.train_stacked(configs, paths, progress=False)
    assert not Run(paths[0]).exists()  # nothing trained, and the other run's lock was released
    assert not any(r.exists() for r in map(Run, paths))


def test_the_device_flows_through_and_a_missing_gpu_is_refused_up_front(tiny_config, tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(trainer.DeviceError, match="no CUDA GPU"):
        stacked.train_stacked(three(tiny_config), [tmp_path / f"s{i}" for i in range(3)], device="cuda")
    assert not list(tmp_path.iterdir())
    seen = []

    def as_cpu(device):  # stands in for a GPU: every tensor goes to whatever device this returns
        seen.append(device)
        return torch.device("cpu")

    monkeypatch.setattr(trainer, "resolve_device", as_cpu)
    monkeypatch.setattr(trainer, "native_bf16", lambda device: True)  # as on a GPU with bf16
    config = tiny_config.replace(bf16=True, steps=3, eval_every=2)
    runs = stacked.train_stacked([config, config.replace(seed=2)], [tmp_path / "a", tmp_path / "b"],
                                 device="cuda:1", progress=False)
    assert seen == ["cuda:1"]
    assert all(r.final()["bf16_used"] and r.final()["bf16_steps"] == 3 for r in runs)


def test_compiled_stack_matches_eager_within_bounds_and_falls_back_in_one_line(tiny_config, tmp_path, monkeypatch,
                                                                             capsys):
    configs = three(tiny_config)
    models = [initial_model(c) for c in configs]
    stack = stacked.Stack(models, tiny_config, torch.device("cpu"), False)
    batches = [TrainStream(c.task, c.train.batch_size, c.train.stream_seed).batch(1) for c in configs]
    tokens, answers = torch.stack([t for t, _ in batches]), torch.stack([a for _, a in batches])

    def losses_and_grads(loss_fn):
        stack.zero_grad(set_to_none=True)
        losses = loss_fn(tokens, answers)
        losses.sum().backward()
        return losses.detach(), [w.grad.clone() for w in stack.weights]

    eager, eager_grads = losses_and_grads(stack)
    compiled, compiled_grads = losses_and_grads(torch.compile(stack))
    assert float((compiled - eager).abs().max()) <= LOGIT_TOLERANCE * float(eager.max())
    for name, a, b in zip(stack.names, eager_grads, compiled_grads):
        for k in range(3):
            assert float((b[k] - a[k]).norm() / a[k].norm()) <= GRADIENT_TOLERANCE, (name, k)
    # each run's gradient is its own loss's gradient, as the run alone computes it
    single = models[1]
    fused_loss(single, tokens[1], answers[1], tiny_config, torch.device("cpu")).backward()
    assert all(torch.equal(p.grad, g[1]) for p, g in zip(single.parameters(), eager_grads))

    config = tiny_config.replace(steps=3, eval_every=2)
    runs = stacked.train_stacked([config, config.replace(seed=2)], [tmp_path / "c0", tmp_path / "c1"],
                                 progress=False, compile="on")
    assert all(r.final()["compiled"] and r.final()["compiled_steps"] == 3 and r.final()["compile"] == "on"
               for r in runs)

    def unavailable(*args, **kwargs):
        raise RuntimeError("no C++ compiler on this machine\nmore detail")

    capsys.readouterr()
    monkeypatch.setattr(torch, "compile", unavailable)
    runs = stacked.train_stacked([config, config.replace(seed=2)], [tmp_path / "e0", tmp_path / "e1"],
                                 progress=False, compile="on")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "torch.compile is unavailable here" in err
    assert all(r.final()["compiled"] is False for r in runs)


# ---------------------------------------------------------------------------- train --seeds and sweeps
def tiny_flags(**more) -> list[str]:
    flags = {**TINY, **more}
    return [f"--{k.replace('_', '-')}={v}" for k, v in flags.items()]


def test_train_seeds_trains_one_run_per_seed_stacked(tiny_config, tmp_path, capsys):
    assert main(["train", "--seeds", "1", "2", "3", "--stack", "3", "--name", "s{seed}", "--root", str(tmp_path),
                 "--no-progress", "--compile", "off", *tiny_flags()]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 3 and "s2: 0-var held-out exact" in out
    alone = training.train(tiny_config.replace(seed=2), tmp_path / "alone2", progress=False, compile="off")
    same_run(alone, Run(tmp_path / "s2"))
    assert Run(tmp_path / "s3").final()["stacked"] == 3
    # again: every run finished, nothing trained; a name without {seed} would put every seed in one folder
    assert main(["train", "--seeds", "1", "2", "--name", "s{seed}", "--root", str(tmp_path), "--no-progress",
                 *tiny_flags()]) == 0
    assert main(["train", "--seeds", "1", "2", "--name", "same", "--root", str(tmp_path), *tiny_flags()]) == 2
    assert "{seed}" in capsys.readouterr().err


def test_a_sweep_trains_its_points_in_stacks_with_the_records_of_single_runs(tmp_path):
    sweep = Sweep("tiny", {"task.train_fraction": (0.05, 0.6, 0.9)}, metric="0var_heldout", base=TINY, seeds=(1, 2))
    alone = run_sweep(sweep, results_dir=tmp_path / "alone", workers=1, progress=False, stack=1)
    together = run_sweep(sweep, results_dir=tmp_path / "stacked", workers=1, progress=False, stack=4)
    assert alone == together == {"done": 4, "failed": 2, "error": 0, "skipped": 0}
    a = {r["key"]: r for r in read_records(results_path(sweep, tmp_path / "alone"))}
    b = {r["key"]: r for r in read_records(results_path(sweep, tmp_path / "stacked"))}
    assert a.keys() == b.keys()
    for key, record in a.items():
        for field in ("status", "exact", "pools", "controls", "seed", "params", "config"):
            assert record.get(field) == b[key].get(field), (key, field)
        if record["status"] == "done":  # the 0.05 points, which cannot exist, took two of
            # the first stack's four places (the worker checks splits), so each stack trained two runs
            assert (record["stacked"], b[key]["stacked"]) == (1, 2)
            kept = [pd.read_csv(tmp_path / name / "tiny" / f"{key}.csv").drop(columns="elapsed_s")
                    for name in ("alone", "stacked")]
            pd.testing.assert_frame_equal(*kept)
            assert not (tmp_path / "stacked" / "scratch" / key / "resume").exists()
    assert run_sweep(sweep, results_dir=tmp_path / "stacked", workers=1, progress=False, stack=4)["skipped"] == 6
    with pytest.raises(ConfigError, match="stack must be"):
        run_sweep(sweep, results_dir=tmp_path / "bad", stack=0)


def test_stack_groups_follow_the_run_order_and_the_shape(tiny_config):
    from assignadd_core.experiments.sweep.driver import stack_jobs
    tasks = [{"key": str(i), "overrides": {**TINY, "train.seed": i, **({"d_model": 8} if i in (1, 3) else {})}}
             for i in range(6)] + [{"key": "bad", "overrides": {**TINY, "train_fraction": 2.0}}]
    jobs = stack_jobs(tasks, 2)
    assert [[t["key"] for t in job] if isinstance(job, list) else job["key"] for job in jobs] == [
        ["0", "2"], ["1", "3"], ["4", "5"], "bad"]
    assert stack_jobs(tasks, 1) == tasks


def perturbed(tiny_config):
    """Runs with each per-run change a stack must apply on its own slice: a nudge of the initial weights, a nudge
    after step 12, gradient noise at every step, steering over steps 5-20, a wrong-pairs sham steered for 10 steps
    from a trigger on measure 5 (recorded at an eval step), the identity's row contrasts held over 10 steps."""
    return [tiny_config.replace(seed=1, jitter=1e-2, perturb_seed=1),
            tiny_config.replace(seed=2, jitter=1e-2, jitter_step=12, perturb_seed=2),
            tiny_config.replace(seed=3, grad_noise=1e-3, perturb_seed=3),
            tiny_config.replace(seed=4, steer_from=5, steer_to=20, steer_share=0.0),
            tiny_config.replace(seed=5, steer_trigger=0.01, steer_window=10, steer_direction="wrong_pairs",
                                steer_write="smallest", stop_when_composed=1),
            tiny_config.replace(seed=6, steer_trigger=0.01, steer_window=10, steer_write="hold")]


def test_nudged_noisy_and_steered_runs_in_a_stack_are_bit_identical_to_the_runs_alone(tiny_config, tmp_path):
    configs = perturbed(tiny_config)
    alone = [training.train(c, tmp_path / f"a{i}", progress=False, compile="off") for i, c in enumerate(configs)]
    runs = stacked.train_stacked(configs, [tmp_path / f"s{i}" for i in range(len(configs))], progress=False,
                                 compile="off")
    for a, s in zip(alone, runs):
        same_run(a, s)
    plain = training.train(tiny_config.replace(seed=1), tmp_path / "plain", progress=False, compile="off")
    assert not plain.metrics().equals(alone[0].metrics())  # the nudge did change the run


def test_runs_that_stop_once_composed_leave_the_stack_as_they_would_stop_alone(tiny_config, tmp_path, monkeypatch):
    configs = [tiny_config.replace(seed=s, stop_when_composed=1) for s in (1, 2, 3)]
    probe = [training.train(c.replace(stop_when_composed=0), tmp_path / f"p{i}", progress=False, compile="off")
             for i, c in enumerate(configs)]
    # "composed" made a level of the tiny runs' own loss, so that they stop at different eval steps: the middle of
    # their losses at step 11
    at_11 = sorted(float(run.metrics().set_index("step").loc[11, "loss"]) for run in probe)
    level = at_11[1]
    monkeypatch.setattr(early_stop, "composed_row", lambda row: row["loss"] <= level)
    alone = [training.train(c, tmp_path / f"a{i}", progress=False, compile="off") for i, c in enumerate(configs)]
    runs = stacked.train_stacked(configs, [tmp_path / f"s{i}" for i in range(3)], progress=False, compile="off")
    steps = [r.final()["last_step"] for r in alone]
    assert len(set(steps)) > 1 and min(steps) < tiny_config.train.steps  # some left early, at different steps
    for a, s in zip(alone, runs):
        same_run(a, s)
        assert s.final()["last_step"] == a.final()["last_step"]


def test_a_stack_may_save_its_resume_state_less_often_and_still_resumes_exactly(tiny_config, alone_runs, tmp_path,
                                                                              monkeypatch):
    configs, paths = three(tiny_config), [tmp_path / f"s{i}" for i in range(3)]
    kill_stacked_step_at(monkeypatch, 25)
    with pytest.raises(KeyboardInterrupt):
        stacked.train_stacked(configs, paths, progress=False, compile="off", state_every_s=1e9)
    monkeypatch.undo()
    assert [trainer.last_saved_step(Run(p)) for p in paths] == [1, 1, 1]  # only the first eval step saved its state
    assert all(len(Run(p).metrics()) == 3 for p in paths)  # rows of steps 1, 11 and 21 were written
    runs = stacked.train_stacked(configs, paths, progress=False, compile="off")
    for alone, stack in zip(alone_runs, runs):
        same_run(alone, stack)


def test_a_stack_fed_by_prefetch_workers_is_bit_identical_to_the_runs_alone(tiny_config, alone_runs, tmp_path):
    runs = stacked.train_stacked(three(tiny_config), [tmp_path / f"s{i}" for i in range(3)], progress=False,
                                 compile="off", data_workers=1)
    for alone, stack in zip(alone_runs, runs):
        same_run(alone, stack)


def test_a_gpu_sweep_stacks_as_many_runs_as_half_the_free_memory_holds(monkeypatch):
    import torch as torch_module

    from assignadd_core.experiments.sweep.driver import MAX_GPU_STACK, gpu_stack_size
    from assignadd_core.experiments.sweep.grid import get_sweep
    sweep = get_sweep("r_sweep_power")
    monkeypatch.setattr(torch_module.cuda, "mem_get_info", lambda device=None: (139e9, 143e9))
    assert gpu_stack_size(sweep, "cuda") == MAX_GPU_STACK
    monkeypatch.setattr(torch_module.cuda, "mem_get_info", lambda device=None: (200e6, 143e9))
    small = gpu_stack_size(sweep, "cuda")
    assert 1 <= small < 32  # 100 MB hold a handful of runs of about 5 MB each and their activations

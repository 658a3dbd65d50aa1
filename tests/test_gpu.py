"""The GPU path of stacked training (`stacked.GraphedStep`, `stack_eval` on CUDA), run only where torch sees a GPU
(CI has none: these tests skip there). On a GPU the kernels round differently from the CPU's and atomic additions
make runs not bit-reproducible, so the graph is compared with the eager stacked step on the same GPU through bounds,
and the batched evaluation with the run-by-run one through the share of rows that agree."""
import math

import pytest
import torch

from assignadd_core.core import trainer
from assignadd_core.experiments import stacked
from assignadd_core.core.config import RunConfig
from assignadd_core.core.data import TrainStream
from assignadd_core.core.model import initial_model
from assignadd_core.analysis.quantities import logged_row
from assignadd_core.core.run_folder import Run
from assignadd_core.experiments.stack_eval import StackEvaluator

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch sees none here)")
CUDA = torch.device("cuda")


def _stack(configs, optimizer_graphed: bool):
    models = [initial_model(c).to(CUDA) for c in configs]
    stack = stacked.Stack(models, configs[0], CUDA, bf16=False)
    return stack, stacked.make_stack_optimizer(stack, configs[0], optimizer_graphed), models


def test_the_graphed_step_trains_as_the_eager_stacked_step(paper_config):
    configs = [paper_config.replace(seed=s) for s in (1, 2, 3)]
    eager_stack, eager_opt, models = _stack(configs, False)
    eager = stacked.StackedStep(eager_stack, eager_opt, configs[0], CUDA, False, False)
    graph_stack, graph_opt, _ = _stack(configs, True)
    graphed = stacked.GraphedStep(graph_stack, graph_opt, configs[0], CUDA, False)
    assert all(torch.equal(a, b) for a, b in zip(eager_stack.weights, graph_stack.weights))  # warm-up undone
    streams = [TrainStream(c.task, c.train.batch_size, c.train.stream_seed) for c in configs]
    for step in range(1, 21):
        batches = [s.batch(step) for s in streams]
        tokens = torch.stack([t for t, _ in batches]).to(CUDA)
        answers = torch.stack([a for _, a in batches]).to(CUDA)
        eager(tokens, answers, step)
        graphed(tokens, answers, step)
    for a, b in zip(eager_stack.weights, graph_stack.weights):
        assert torch.allclose(a, b, rtol=1e-3, atol=1e-5), float((a - b).abs().max())
    assert torch.allclose(eager.loss_sums, graphed.loss_sums, rtol=1e-4)


def test_the_batched_evaluation_on_a_gpu_agrees_with_run_by_run(paper_config):
    configs = [paper_config.replace(seed=s) for s in (1, 2)] + [paper_config.replace(seed=3, two_var_rate=0.5)]
    models = [initial_model(c).to(CUDA).eval() for c in configs]
    for i, model in enumerate(models):
        generator = torch.Generator().manual_seed(i)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.3 * torch.randn(p.shape, generator=generator).to(CUDA))
    weights = [torch.stack([p.detach() for p in ps]) for ps in zip(*(m.parameters() for m in models))]
    rows = StackEvaluator(models[0], configs, CUDA).rows(weights, with_probe=True)
    for row, model in zip(rows, models):
        own = logged_row(model, 1, with_probe=True)
        for key, value in own.items():  # accuracies over thousands of rows: a flipped argmax moves them by 1e-3
            assert math.isclose(row[key], value, abs_tol=2e-3) or (math.isnan(row[key]) and math.isnan(value)), key


def test_a_gpu_stack_trains_stops_early_and_writes_each_run(tmp_path):
    configs = [RunConfig().replace(seed=s, steps=301, stop_when_composed=2 if s == 1 else 0) for s in (1, 2)]
    runs = stacked.train_stacked(configs, [tmp_path / "a", tmp_path / "b"], device="cuda", progress=False,
                                 keep_checkpoints="none", state_every_s=60.0)
    for run in runs:
        assert run.is_complete() and len(run.metrics()) == 4
        assert run.final()["device"] == "cuda" and run.final()["stacked"] == 2
    assert all(math.isfinite(x) for x in runs[0].metrics()["loss"])
    assert Run(runs[1].path).final()["last_step"] == 301


def test_a_gpu_stack_with_per_run_work_trains_eager(tmp_path):
    configs = [RunConfig().replace(seed=1, steps=101, grad_noise=1e-3, perturb_seed=1), RunConfig().replace(seed=2, steps=101)]
    runs = stacked.train_stacked(configs, [tmp_path / "a", tmp_path / "b"], device="cuda", progress=False,
                                 keep_checkpoints="none")
    assert all(r.is_complete() for r in runs)
    assert trainer.last_saved_step(runs[0]) == 101

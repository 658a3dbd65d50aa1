"""Evaluating a stack at once (`stack_eval`) gives every run the row `quantities.logged_row` gives it alone, exactly
(on a CPU): the pools, measures 1-6 and the probe, for runs of one task and of several (f and r differ)."""
import math

import pytest
import torch

from assignadd_core.core.config import RunConfig
from assignadd_core.core.loss import autocast_context
from assignadd_core.core.model import initial_model
from assignadd_core.analysis.quantities import logged_row
from assignadd_core.experiments.stack_eval import StackEvaluator, batched
from tiny import TINY

pytestmark = pytest.mark.usefixtures("single_thread")


def trained_looking(configs):
    """Models whose measures are not all at their initial values: the initial weights plus a large random step."""
    models = []
    for i, config in enumerate(configs):
        model = initial_model(config).eval()
        generator = torch.Generator().manual_seed(i)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.3 * torch.randn(p.shape, generator=generator))
        models.append(model)
    return models


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("bf16", [False, True])
@pytest.mark.parametrize("configs", [
    [RunConfig().replace(**TINY, seed=s) for s in (1, 2, 3)],
    [RunConfig().replace(**TINY, seed=1, two_var_rate=0.5), RunConfig().replace(**TINY, seed=2, train_fraction=0.9),
     RunConfig().replace(**TINY, seed=3)],
], ids=["one task", "three tasks"])
def test_a_stack_evaluated_at_once_gives_each_run_its_own_row(configs, bf16):
    models = trained_looking(configs)
    weights = [torch.stack([p.detach() for p in ps]) for ps in zip(*(m.parameters() for m in models))]
    device = torch.device("cpu")
    with autocast_context(configs[0], device, bf16):
        rows = StackEvaluator(initial_model(configs[0]), configs, device).rows(weights, with_probe=True)
        alone = [logged_row(m, 1, with_probe=True) for m in models]
    for row, own in zip(rows, alone):
        assert list(row) == list(own)
        assert all(same(row[k], own[k]) for k in own), {k: (row[k], own[k]) for k in own if not same(row[k], own[k])}
    assert len({row["m3_l2_var_identity_qk"] for row in rows} | {row["1var_train"] for row in rows}) > 2  # not constant


def test_the_paper_shape_is_evaluated_at_once_and_other_shapes_run_by_run():
    assert batched(RunConfig()) and batched(RunConfig().replace(**TINY))
    assert not batched(RunConfig().replace(n_layers=3, n_heads=2, mlp_layers=(2,)))


def test_the_paper_config_rows_match_with_the_probe_off():
    configs = [RunConfig().replace(seed=s) for s in (1, 2)]
    models = trained_looking(configs)
    weights = [torch.stack([p.detach() for p in ps]) for ps in zip(*(m.parameters() for m in models))]
    rows = StackEvaluator(initial_model(configs[0]), configs, torch.device("cpu")).rows(weights, with_probe=False)
    for row, model in zip(rows, models):
        own = logged_row(model, 1, with_probe=False)
        assert all(same(row[k], own[k]) for k in own)

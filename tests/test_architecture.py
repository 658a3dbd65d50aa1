"""The architecture is in ModelConfig: other shapes build, train, evaluate and measure through the hooked forward
(tests/test_roles.py: the roles the measures read), and the paper's shape keeps every committed run's hash."""
import math

import pytest
import torch

from assignadd_core.core import trainer
from assignadd_core.experiments import training
from assignadd_core.core.config import ConfigError, RunConfig
from assignadd_core.core.evaluation import evaluate
from assignadd_core.measure.measures import all_measures
from assignadd_core.core.model import AssignAddTransformer
from tiny import torch_threads


@pytest.mark.parametrize("shape", [{"n_layers": 3, "mlp_layers": [2]}, {"n_heads": 2},
                                   {"n_layers": 3, "n_heads": 4, "mlp_layers": [0, 1, 2]}])
def test_other_shapes_train_and_evaluate(shape, tiny_config, tmp_path):
    config = tiny_config.replace(**shape)
    model = AssignAddTransformer(config)
    m = config.model
    assert len(model.blocks) == m.n_layers and model.blocks[0].attn.W_Q.shape == (m.n_heads, m.d_model, m.d_head)
    assert [b.mlp is not None for b in model.blocks] == [i in m.mlp_layers for i in range(m.n_layers)]
    assert model.W_in.shape == (m.n_layers, m.d_model, m.d_mlp)
    tokens = torch.randint(0, config.task.modulus, (4, config.task.seq_len))
    # training and evaluation take the last-position path: the hooked forward's logits at `=` (to rounding)
    assert torch.allclose(model.fused_logits(tokens), model(tokens)[:, -1], rtol=1e-5, atol=1e-6)
    with torch_threads(1):
        run = training.train(config, tmp_path / "run", progress=False)
    final = run.final()
    assert set(final["pools"]) and 0 <= final["exact"]["0var_heldout"] <= 1
    assert math.isfinite(run.metrics()["m3_l2_var_identity_qk"].iloc[-1])  # the measures read the roles' heads
    assert all(math.isfinite(v) for v in all_measures(run.load_model()).values())
    assert run.load_model().blocks[0].attn.W_Q.shape[0] == m.n_heads and evaluate(run.load_model())["pools"]


def test_the_paper_shape_is_the_default_and_keeps_its_hash():
    paper = RunConfig()
    assert paper.model.paper_shape and (paper.model.n_layers, paper.model.n_heads, paper.model.mlp_layers) == (2, 1, (1,))
    assert paper.replace(mlp_layers=[1]) == paper and paper.hash() == "35c0d33b9461"  # seed 42's committed run
    assert paper.replace(n_layers=3, mlp_layers=[2]).hash() != paper.hash()
    assert RunConfig.from_json(paper.replace(n_heads=2).to_json()).model.n_heads == 2


@pytest.mark.parametrize("key, value, words", [("n_layers", 0, "n_layers must be"), ("n_heads", 3, "divides d_model"),
                                               ("mlp_layers", [2], "mlp_layers must list block indices in 0..1")])
def test_bad_shapes_are_one_line_errors(key, value, words):
    with pytest.raises(ConfigError, match=words):
        RunConfig().replace(**{key: value})


def test_the_cli_takes_the_shape(capsys):
    from assignadd_core.cli import main
    assert main(["config", "--n-layers", "3", "--mlp-layers", "1", "2", "--n-heads", "2"]) == 0
    out = capsys.readouterr().out
    assert '"mlp_layers": [\n      1,\n      2\n    ]' in out and '"n_heads": 2' in out

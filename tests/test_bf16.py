"""bf16 autocast: it really computes in bf16 when asked, its error on the fused training path is of the
size of the full forward's, and a bf16 run trains and resumes to the same result as an uninterrupted one.
(Autocast on a CPU without native bf16 is emulated: slow, but exact enough to test.)"""
import pytest
import torch
import torch.nn.functional as F

from assignadd_core.core.loss import autocast_context
from assignadd_core.core import trainer
from assignadd_core.experiments import training
from assignadd_core.core.config import RunConfig
from assignadd_core.core.data import TrainStream
from assignadd_core.core.model import initial_model

from test_trainer import final_weights, interrupt_at

pytestmark = pytest.mark.usefixtures("single_thread")
CPU = torch.device("cpu")


def test_autocast_context_computes_in_bf16_only_when_asked(tiny_config):
    model = initial_model(tiny_config)
    tokens, _ = TrainStream(tiny_config.task, 8, 0).batch(1)
    with autocast_context(tiny_config.replace(bf16=True), CPU):
        assert model.fused_logits(tokens).dtype == torch.bfloat16
    with autocast_context(tiny_config, CPU):
        assert model.fused_logits(tokens).dtype == torch.float32
    with autocast_context(tiny_config.replace(bf16=True), CPU, bf16=False):  # the fallback
        assert model.fused_logits(tokens).dtype == torch.float32


def relative_errors(model, tokens, answers, path: str) -> tuple[float, float]:
    """Relative error of logits and of the gradient (all parameters) in bf16 against fp32."""
    def run(bf16):
        model.zero_grad(set_to_none=True)
        ctx = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else torch.autocast("cpu", enabled=False)
        with ctx:
            logits = model.fused_logits(tokens) if path == "fused" else model(tokens)[:, -1]
        F.cross_entropy(logits.float(), answers).backward()
        grad = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        return logits.float().detach(), grad.clone()

    (l32, g32), (l16, g16) = run(False), run(True)
    return float((l16 - l32).norm() / l32.norm()), float((g16 - g32).norm() / g32.norm())


def test_fused_bf16_error_is_that_of_the_full_forward():
    config = RunConfig()  # the paper's model: bf16 rounding at its real width
    model = initial_model(config)
    tokens, answers = TrainStream(config.task, 256, 0).batch(1)
    fused, full = relative_errors(model, tokens, answers, "fused"), relative_errors(model, tokens, answers, "full")
    assert 1e-4 < fused[0] and 1e-4 < fused[1]  # bf16 did something
    assert fused[0] <= 2 * full[0] and fused[1] <= 2 * full[1], (fused, full)


def test_bf16_run_trains_and_resumes(tiny_config, tmp_path, monkeypatch):
    """Killed during step 17 and resumed, a bf16 run ends with the weights of an uninterrupted bf16 run,
    which differ from the fp32 run's (so bf16 was really on)."""
    config = tiny_config.replace(bf16=True)
    monkeypatch.setattr(trainer, "native_bf16", lambda device: True)
    straight = training.train(config, tmp_path / "straight", progress=False)
    interrupt_at(monkeypatch, "train_step", lambda call, args: call == 17)
    with pytest.raises(KeyboardInterrupt):
        training.train(config, tmp_path / "killed", progress=False)
    monkeypatch.undo()
    monkeypatch.setattr(trainer, "native_bf16", lambda device: True)
    resumed = training.train(config, tmp_path / "killed", progress=False)
    a, b = final_weights(resumed), final_weights(straight)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert resumed.final()["bf16_used"] is True
    fp32 = training.train(tiny_config, tmp_path / "fp32", progress=False)
    assert not torch.equal(final_weights(fp32)["unembed.W_U"], b["unembed.W_U"])

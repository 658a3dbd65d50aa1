"""Evaluation against models of known accuracy: the hand-built solver of `handbuilt` (right on every
sequence) and the same solver with its addition table rigged to be wrong exactly when n1 = n2, so
each accuracy is the share of rows with n1 != n2, known from the data alone. Batches are cut into
several chunks (small chunk sizes), including a last partial one."""
from __future__ import annotations

import math

import pytest
import torch

from assignadd_core.core import evaluation
from assignadd_core.core.data import EXACT_NAMES, POOL_NAMES, eval_pools, exact_sets, sample_queries

import handbuilt

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.fixture(scope="module")
def rigged():
    return handbuilt.exact_model(answer=handbuilt.wrong_on_doubles)


@pytest.fixture(scope="module")
def batch():
    return sample_queries(handbuilt.CONFIG.task, 50, torch.Generator().manual_seed(9))


def counting(model, monkeypatch):
    """Record the batch size and the train/eval mode of every fused_logits call."""
    calls = []
    real = model.fused_logits

    def fused_logits(tokens):
        calls.append((tokens.shape[0], model.training))
        return real(tokens)

    monkeypatch.setattr(model, "fused_logits", fused_logits)
    return calls


def test_the_rigged_model_is_wrong_exactly_on_doubles(rigged, batch):
    doubles = batch.lhs_val == batch.rhs_val
    assert 0 < int(doubles.sum()) < len(batch)
    predicted = rigged(batch.tokens)[:, -1].argmax(-1)  # full hooked forward, independent of the fused path
    assert torch.equal(predicted == batch.answers, ~doubles)


@pytest.mark.parametrize("chunk", [1, 7, 49, 50, 8192])
def test_batch_correct_across_chunks(rigged, batch, chunk, monkeypatch):
    calls = counting(rigged, monkeypatch)
    correct = evaluation.batch_correct(rigged, batch, chunk=chunk)
    assert torch.equal(correct, batch.lhs_val != batch.rhs_val)
    sizes = [size for size, _ in calls]
    assert sizes == [min(chunk, len(batch) - lo) for lo in range(0, len(batch), chunk)]


def test_batch_accuracy_is_the_share_right(rigged, batch):
    expected = int((batch.lhs_val != batch.rhs_val).sum()) / len(batch)
    assert evaluation.batch_accuracy(rigged, batch, chunk=7) == pytest.approx(expected, abs=1e-12)
    assert evaluation.batch_accuracy(handbuilt.exact_model(), batch, chunk=7) == 1.0
    assert math.isnan(evaluation.batch_accuracy(rigged, batch[:0]))
    assert evaluation.batch_correct(rigged, batch[:0]).shape == (0,)


def test_evaluate_gives_the_known_accuracy_of_every_pool_and_exact_set(rigged, monkeypatch):
    """Through the stable entry point, with the chunk size cut to 7 so every pool (50 rows) and the
    2-var union (275 rows) cross several chunks."""
    # wrap instead of patching __defaults__: mutation testing replaces the function by a trampoline
    real = evaluation.batch_accuracy
    monkeypatch.setattr(evaluation, "batch_accuracy", lambda model, batch, chunk=7: real(model, batch, chunk))
    calls = counting(rigged, monkeypatch)
    rigged.train()
    try:
        result = evaluation.evaluate(rigged)
        assert rigged.training  # the caller's mode is restored ...
    finally:
        rigged.eval()
    assert calls and not any(training for _, training in calls)  # ... and evaluation ran in eval mode
    assert max(size for size, _ in calls) == 7 and len(calls) > len(POOL_NAMES) + len(EXACT_NAMES)
    task = rigged.config.task
    assert list(result) == ["pools", "exact"]
    assert list(result["pools"]) == list(POOL_NAMES) and list(result["exact"]) == list(EXACT_NAMES)
    sets = {"pools": eval_pools(task), "exact": exact_sets(task)}
    shares = []
    for group, batches in sets.items():
        for name, b in batches.items():
            expected = float((b.lhs_val != b.rhs_val).double().mean())
            assert result[group][name] == pytest.approx(expected, abs=1e-12), name
            shares.append(expected)
    assert len(set(shares)) > 3  # the pools differ, so a mixed-up name would show
    assert min(shares) < 1.0


def test_evaluate_keeps_eval_mode(rigged):
    rigged.eval()
    result = evaluation.evaluate(rigged)
    assert not rigged.training
    solver = evaluation.evaluate(handbuilt.exact_model())
    assert all(v == 1.0 for v in solver["pools"].values()) and all(v == 1.0 for v in solver["exact"].values())
    held = exact_sets(rigged.config.task)["0var_heldout"]
    assert result["exact"]["0var_heldout"] == pytest.approx(int((held.lhs_val != held.rhs_val).sum()) / len(held))


def test_an_exact_set_above_the_cap_is_a_fixed_sample_of_the_whole_set(monkeypatch):
    """A task larger than the paper's evaluates its 2-var union on a fixed uniform sample of EXACT_SAMPLE_CAP
    sequences: queries of the whole set, the same sample twice, and its size reported by exact_set_sizes."""
    from assignadd_core.core import data
    task = handbuilt.CONFIG.task
    whole = data.exact_sets.__wrapped__(task)["2var_union"]
    cap = len(whole) // 3
    monkeypatch.setattr(data, "EXACT_SAMPLE_CAP", cap)
    sample = data.exact_sets.__wrapped__(task)["2var_union"]
    assert len(sample) == cap and data.exact_set_sizes(task)["2var_union"] == (cap, len(whole))
    assert torch.equal(data.exact_sets.__wrapped__(task)["2var_union"].tokens, sample.tokens)

    def queries(batch):  # (operand pair, variable pair) of each row, whatever its prefix
        return {tuple(row) for row in torch.stack([batch.lhs_val, batch.rhs_val, batch.lhs_var, batch.rhs_var], 1).tolist()}
    assert queries(sample) < queries(whole)
    assert data.exact_set_sizes(task)["0var_heldout"][0] == data.exact_set_sizes(task)["0var_heldout"][1]

"""The logged row of every run of a stack in one batched pass: what `quantities.logged_row` gives run by run (the
nine pool accuracies, progress measures 1-6 and, at probe steps, the probe), computed with `torch.func.vmap` over
the stacked weights, so K runs cost a few large kernels instead of K times a few hundred small ones (on a GPU the
single-run evaluation is launch-bound).

The paper's shape only (the fused forward, the roles at their places); a stack of another shape is evaluated run
by run. Each number follows the single-run code's arithmetic (same products in the same order, the same dtypes:
a measure that the single run reads as a float32 mean is a float32 mean here), so on a CPU the rows equal
`logged_row`'s (tests/test_stack_eval.py); runs whose tasks differ (f, r) are evaluated in groups of one task.
"""
from __future__ import annotations

import math
from collections import defaultdict

import torch
from torch.func import functional_call, vmap

from ..measure import roles
from ..core.config import RunConfig
from ..core.data import POOL_NAMES, Vocab, eval_pools
from ..measure.measures import (MEASURE_NAMES, PROBE, fused_forward, measurement_batch, operand_pairs, probe_accuracy,
                                value_positions)
from ..core.model import AssignAddTransformer

RUNS_PER_PASS = 64  # runs evaluated in one vmap call: bounds the memory of the activations ([K, 2,304, 16, 16])


def batched(config: RunConfig) -> bool:
    """Whether a stack of this config's shape is evaluated at once (the paper's shape, where the roles sit)."""
    return config.model.paper_shape and config.model.has_circuit


class _Reader(torch.nn.Module):
    """The template model whose weights `functional_call` replaces with one run's: `forward(fn, *args)` is
    fn(model, *args) on that run's weights."""

    def __init__(self, model: AssignAddTransformer):
        super().__init__()
        self.model = model

    def forward(self, fn, *args):
        return fn(self.model, *args)


def _pool_counts(model, tokens, answers):
    """Correct answers of one run on one pool (an integer tensor)."""
    return (model.fused_logits(tokens).argmax(-1) == answers).sum()


def _weight_measures(model):
    """Measures 1-3 of one run from its weights: float32 m1, the m2 hit count, float32 m3 (as `measures` computes)."""
    task = model.config.task
    pairs = operand_pairs(task.modulus).to(model.W_E.device)
    ov = model.W_E[: task.modulus] @ roles.ov(model, roles.LOOKUP).AB
    x = ov[pairs[:, 0]] + ov[pairs[:, 1]]
    mlp = roles.addition_mlp(model)
    logits = (x + torch.relu(x @ mlp.W_in) @ mlp.W_out) @ model.W_U
    m1 = (logits.argmax(-1) == pairs.sum(1) % task.modulus).float().mean()

    n_pos = task.prefix_len
    pos = model.W_pos[:n_pos]
    scores = pos @ roles.bilinear(model, roles.COPY) @ pos.T
    q, k = torch.arange(n_pos, device=pos.device)[:, None], torch.arange(n_pos, device=pos.device)[None, :]
    allowed = (k < q) & (k != q - 2)  # measure 2: earlier keys, the key two back left out
    hits = scores.masked_fill(~allowed, float("-inf"))[1:].argmax(-1) == torch.arange(n_pos - 1, device=pos.device)

    var0, n_vars = Vocab(task).var0, task.n_vars
    copied = model.W_E[var0: var0 + n_vars] @ roles.ov(model, roles.COPY).AB
    qk_map = copied @ roles.qk(model, roles.LOOKUP).AB @ copied.T
    m3 = (qk_map.argmax(-1) == torch.arange(n_vars, device=qk_map.device)).float().mean()
    return m1, hits.sum(), m3


def _activations(model, tokens):
    out = fused_forward(model, tokens)
    return out.pattern1.float(), out.pattern2.float(), out.resid_mid0.float()


class StackEvaluator:
    """Evaluates K stacked weight sets (`weights`: tensors [K, ...] in the template model's parameter order) of runs
    `configs` (one shape; tasks may differ): `rows(weights, with_probe)` gives their rows in `logged_row`'s keys."""

    def __init__(self, template: AssignAddTransformer, configs: list[RunConfig], device: torch.device):
        self.reader = _Reader(template)
        self.names = [f"model.{name}" for name, _ in template.named_parameters()]
        self.device, self.configs = device, configs
        self.groups = defaultdict(list)  # task -> run indices: every run of a group reads the same pools
        for i, config in enumerate(configs):
            self.groups[config.task].append(i)
        self._pools = {task: self._pool_tensors(task) for task in self.groups}
        self._measurement = {task: self._measurement_tensors(task) for task in self.groups}

    def _pool_tensors(self, task):
        pools = eval_pools(task)
        return {name: (pools[name].tokens.to(self.device), pools[name].answers.to(self.device), len(pools[name]))
                for name in POOL_NAMES}

    def _measurement_tensors(self, task):
        batch = measurement_batch(task)
        few_vars = ((batch.lhs_var >= 0).long() + (batch.rhs_var >= 0).long()) <= 1
        rows, cols = torch.nonzero(value_positions(batch, task), as_tuple=True)
        lhs, rhs = (torch.full((int(few_vars.sum()),), position) for position in task.operand_positions)
        put = lambda t: t.to(self.device)  # noqa: E731
        return {"tokens": put(batch.tokens), "few_vars": put(few_vars), "rows": put(rows), "cols": put(cols),
                "eq_lhs": put(lhs), "eq_rhs": put(rhs), "lhs_src": put(batch.lhs_src), "rhs_src": put(batch.rhs_src),
                "labels": batch.tokens[rows, cols - 1] - Vocab(task).var0}

    def _per_run(self, fn):
        """fn(model, *args) as a function of one run's weights (to be mapped over the stack)."""
        def one(weights, *args):
            return functional_call(self.reader, dict(zip(self.names, weights)), (fn, *args))
        return one

    @torch.no_grad()
    def rows(self, weights, with_probe: bool) -> list[dict[str, float]]:
        """The logged row of every run (without step, loss and elapsed time), in the runs' order."""
        out: list[dict | None] = [None] * len(self.configs)
        for task, members in self.groups.items():
            for lo in range(0, len(members), RUNS_PER_PASS):
                part = members[lo: lo + RUNS_PER_PASS]
                index = torch.tensor(part, device=weights[0].device)
                chunk = tuple(w.index_select(0, index) for w in weights)
                for i, row in zip(part, self._rows_of_group(task, chunk, with_probe)):
                    out[i] = row
        return out

    def _rows_of_group(self, task, weights, with_probe: bool) -> list[dict]:
        k = weights[0].shape[0]
        rows = [dict() for _ in range(k)]
        for name, (tokens, answers, n) in self._pools[task].items():
            if n == 0:
                for row in rows:
                    row[name] = math.nan
                continue
            counts = vmap(self._per_run(_pool_counts), in_dims=(0, None, None))(weights, tokens, answers).tolist()
            for row, count in zip(rows, counts):
                row[name] = count / n
        m1, m2_hits, m3 = (t.tolist() for t in vmap(self._per_run(_weight_measures))(weights))
        n_rows_m2 = task.prefix_len - 1
        m = self._measurement[task]
        p1, p2, resid = vmap(self._per_run(_activations), in_dims=(0, None))(weights, m["tokens"])
        m4 = top2_match_runs(p1[:, m["few_vars"], -1], m["eq_lhs"], m["eq_rhs"]).float().mean(-1).tolist()
        m5 = (p1[:, m["rows"], m["cols"]].argmax(-1) == m["cols"] - 1).float().mean(-1).tolist()
        m6 = top2_match_runs(p2, m["lhs_src"], m["rhs_src"]).float().mean(-1).tolist()
        features = resid[:, m["rows"], m["cols"]].cpu() if with_probe else None
        for j, row in enumerate(rows):
            row.update({"m1_addition_module": m1[j], "m2_l1_prev_token_qk": int(m2_hits[j]) / n_rows_m2,
                        "m3_l2_var_identity_qk": m3[j], "m4_l1_eq_to_operands": m4[j], "m5_l1_value_prev_token": m5[j],
                        "m6_l2_eq_to_values": m6[j],
                        PROBE: probe_accuracy(features[j], m["labels"], task.n_vars) if with_probe else math.nan})
        return [{name: row[name] for name in (*POOL_NAMES, *MEASURE_NAMES)} for row in rows]


def top2_match_runs(pattern: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """`measures.top2_match` with a leading run axis: pattern [K, B, n], a and b [B] -> bool [K, B]."""
    top = pattern.topk(2, dim=-1).indices
    return (top == a[None, :, None]).any(-1) & (top == b[None, :, None]).any(-1)

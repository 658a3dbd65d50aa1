"""Circuit read-outs from the weights and from attention patterns (claims C4, C5).

* `positional_qk_map` (from `measures`): layer-1 scores between prefix positions, W_pos QK1 W_posᵀ
  (previous-token head); `previous_token_rows` reads measure 2 off it row by row.
* `variable_qk_map` (from `measures`): layer-2 scores between OV1-copied variable embeddings (unscaled);
  `identity_rows` reads measure 3 off it row by row.
* `eq_to_variable_scores`: the layer-1 score from `=` to each variable sitting at the lhs / rhs
  position, i.e. how strongly `=` copies each variable's identity (what the refinement phase fixes);
  `eq_score_values` flattens it with its four parts for the `eq_variable_scores` quantity, `eq_score_tables`
  and `circuit_maps_of` turn `series` rows back into tables.
* `attention_patterns` / `example_batch`: both layers' patterns for one sequence per query type.
Scores are pre-softmax and, except the variable map, include the 1/sqrt(d_head) scale, as the model
computes them.
"""
from __future__ import annotations

import torch

from ..measure import roles
from ..core.data import QUERY_TYPE_NAMES, Batch, Vocab, eval_pools
# The maps behind progress measures 2 and 3 and their row tests live with the measures (one definition each).
from ..measure.measures import identity_rows, positional_qk_map, previous_token_rows, variable_qk_map  # noqa: F401
from ..core.model import AssignAddTransformer
from .diagnostics import DECOMPOSITION_PARTS, eq_query_decomposition


def diagonal_contrast(matrix: torch.Tensor) -> float:
    """(mean diagonal - mean off-diagonal) / RMS of all entries: > 0 when the diagonal stands out,
    independent of the matrix' overall scale."""
    m = matrix.double()
    n = m.shape[0]
    off = ~torch.eye(n, dtype=torch.bool)
    rms = m.pow(2).mean().sqrt()
    return float((m.diagonal().mean() - m[off].mean()) / rms) if rms > 0 else float("nan")


@torch.no_grad()
def eq_to_variable_scores(model: AssignAddTransformer) -> torch.Tensor:
    """[n_vars, 2] layer-1 score from `=` (at the last position) to variable v at the lhs position
    (column 0) and the rhs position (column 1): token + position embeddings on both sides."""
    task = model.config.task
    vocab = Vocab(task)
    n = task.seq_len
    query = model.W_E[vocab.eq] + model.W_pos[n - 1]
    var_emb = model.W_E[vocab.var0: vocab.var0 + task.n_vars]
    keys = var_emb[:, None] + model.W_pos[list(task.operand_positions)][None]  # [v, side (lhs, rhs), d]
    qk = roles.bilinear(model, roles.COPY)
    return (keys @ (query @ qk)).cpu()  # score = x_query QK x_keyᵀ


# The tables of the `eq_variable_scores` quantity, with the prefix of their columns: the score and its four parts.
EQ_TABLES = dict(zip(("score", *DECOMPOSITION_PARTS), ("score", "tt", "tp", "pt", "pp")))


def eq_score_columns(task) -> tuple[str, ...]:
    """The values of `eq_score_values`: the cells [variable, side] of each of `EQ_TABLES`."""
    return tuple(f"{prefix}_{v}_{s}" for prefix in EQ_TABLES.values() for v in range(task.n_vars) for s in range(2))


@torch.no_grad()
def eq_score_values(model: AssignAddTransformer) -> dict[str, float]:
    """`eq_to_variable_scores` and its four bilinear parts (`diagnostics.eq_query_decomposition`), flattened."""
    tables = {"score": eq_to_variable_scores(model), **eq_query_decomposition(model)}
    return {f"{EQ_TABLES[name]}_{v}_{s}": float(table[v, s]) for name, table in tables.items()
            for v in range(table.shape[0]) for s in range(2)}


def _cells(row, prefix: str, rows: int, cols: int) -> torch.Tensor:
    """The cells `prefix_i_j` of a `series` row as a float32 tensor, the dtype they were computed in: the numbers
    are the model's own."""
    return torch.tensor([[row[f"{prefix}_{i}_{j}"] for j in range(cols)] for i in range(rows)], dtype=torch.float32)


def eq_score_tables(row, task) -> dict[str, torch.Tensor]:
    """A row of `series(run, "eq_variable_scores", steps)` as {"score" or part name: [n_vars, 2]}."""
    return {name: _cells(row, prefix, task.n_vars, 2) for name, prefix in EQ_TABLES.items()}


def circuit_maps_of(row, task) -> dict[str, torch.Tensor]:
    """A row of `series(run, "circuit_maps", steps)` as its two maps: "qk" the layer-2 variable QK map
    [n_vars, n_vars], "l1" the copy head's pattern on the 2-var example [seq_len, seq_len]."""
    return {"qk": _cells(row, "qk", task.n_vars, task.n_vars), "l1": _cells(row, "l1", task.seq_len, task.seq_len)}


def example_batch(task, pools: dict[str, Batch] | None = None) -> Batch:
    """One sequence per query type (0-var, 1-var left, 1-var right, 2-var), the first of its kind in
    the training-pair pools, so every chapter shows the same examples."""
    pools = pools or eval_pools(task)
    source = Batch.cat([pools["0var_train"], pools["1var_train"], pools["2var_train"]])
    picks = []
    for qtype in range(len(QUERY_TYPE_NAMES)):
        hits = torch.nonzero(source.query_type == qtype).flatten()
        if len(hits):
            picks.append(int(hits[0]))
    return source[torch.tensor(picks)]


@torch.no_grad()
def attention_patterns(model: AssignAddTransformer, tokens: torch.Tensor) -> torch.Tensor:
    """[batch, layer, q, k] attention patterns of every layer (full hooked forward): in each block the head that
    plays a role there (`roles.block_head`: the copy head in the copy block, ...), head 0 elsewhere."""
    names = [roles.act_name("pattern", i) for i in range(len(model.blocks))]
    _, cache = model.run_with_cache(tokens.to(model.W_E.device), names_filter=lambda name: name in names)
    return torch.stack([cache[name][:, roles.block_head(model, i)] for i, name in enumerate(names)], 1).float().cpu()


def token_labels(task, tokens: torch.Tensor) -> list[str]:
    """Axis labels 'pos:token' for one sequence (positions keep repeated tokens apart)."""
    vocab = Vocab(task)
    return [f"{i}:{vocab.names[int(t)]}" for i, t in enumerate(tokens)]


def restricted_minus_trained(table: torch.Tensor, split) -> float:
    """Mean of a [variable, side] table (side 0: left operand, 1: right) over the position-restricted cells
    (variables never on that side in training: k, l on the left, a, b on the right) minus its mean over the
    trained cells."""
    mask = torch.zeros(table.shape, dtype=torch.bool)
    mask[split.left_forbidden_vars, 0] = True
    mask[split.right_forbidden_vars, 1] = True
    return float(table[mask].mean() - table[~mask].mean())

"""The lookup's route (chapter 9): what carries the in-context lookup at `=`, part by part of the residual.

The residual that enters the lookup head at position p is a sum of five parts (the paper's shape has no LayerNorm,
no biases and no MLP in block 0):

    token             W_E[t_p]
    position          W_pos[p]
    variable          layer 1's copy of the variable: at an assigned value, A1[p, p-1] W_E[t_{p-1}] OV1 (its own
                      variable); at `=`, A1[=, s] W_E[t_s] OV1 from the query's variable operand s (the queried one)
    copied_positions  Σ_s A1[p, s] W_pos[s] OV1
    copied_other      Σ_s A1[p, s] W_E[t_s] OV1 less the variable part

(A1 is the copy head's attention, OV1 its W_V W_O.) The lookup's score margin on a 1-var query is the score of the
queried value's position minus the mean score of the sequence's other assigned values (1/sqrt(d_head) included); it
is bilinear in the parts, so it splits exactly into 5 x 5 terms (query part, key part). The identity pattern that
measure 3 reads is the (variable, variable) term's map over all 12 variables; the in-context lookup compares a
queried variable only with the sequence's other assigned ones.

The causal test ablates one key-side part at the assigned values (replaced by its mean over the batch's assigned
values, so the keys keep their average and lose what varies) and reads the lookup again: how often the full score
picks the queried value among the assigned ones, and the 1-var answers, through layer 2's value path, MLP and
unembedding unchanged.
"""
from __future__ import annotations

import torch

from ..core.data import Batch, Vocab
from ..measure import roles
from ..measure.measures import identity_rows, measurement_batch, variable_qk_map

PARTS = ("token", "position", "variable", "copied_positions", "copied_other")
IDENTITY_TERM = ("variable", "variable")  # the term measure 3's map is made of


def one_var_rows(batch: Batch) -> Batch:
    """The rows with exactly one variable operand and at least one other assigned value to compare it with."""
    one = (batch.lhs_var >= 0) ^ (batch.rhs_var >= 0)
    return batch[one & (batch.n_assign >= 2)]


def lookup_batch(task) -> Batch:
    """The measurement batch's 1-var rows (`one_var_rows`): the rows every route reading uses."""
    return one_var_rows(measurement_batch(task))


def _query_variable_position(batch: Batch, task) -> torch.Tensor:
    lhs, rhs = task.operand_positions
    return torch.where(batch.lhs_var >= 0, torch.full_like(batch.lhs_var, lhs), torch.full_like(batch.lhs_var, rhs))


def _queried_value_position(batch: Batch) -> torch.Tensor:
    return torch.where(batch.lhs_var >= 0, batch.lhs_src, batch.rhs_src)


def _assigned(batch: Batch, task) -> torch.Tensor:
    """Bool [B, n]: prefix positions holding an assigned value (a number right after a variable)."""
    var0 = Vocab(task).var0
    mask = torch.zeros_like(batch.tokens, dtype=torch.bool)
    mask[:, 1: task.prefix_len] = batch.tokens[:, : task.prefix_len - 1] >= var0
    return mask


@torch.no_grad()
def residual_parts(model, batch: Batch) -> torch.Tensor:
    """[5, B, n, d] float64: the lookup head's input split into PARTS (their sum is the residual after block 0)."""
    task = model.config.task
    tokens = batch.tokens.to(model.W_E.device)
    n = tokens.shape[1]
    W_E, W_pos = model.W_E.double(), model.W_pos[:n].double()
    ov = roles.ov(model, roles.COPY).AB.double()
    copy = model.blocks[roles.copy_block(model)].attn
    h = roles.head(model, roles.COPY)
    x0 = W_E[tokens] + W_pos
    scores = torch.einsum("bqd,de,bke->bqk", x0, copy.W_Q[h].double() @ copy.W_K[h].double().T, x0) * copy.scale
    scores = scores.masked_fill(~torch.ones(n, n, dtype=torch.bool, device=tokens.device).tril(), float("-inf"))
    pattern = scores.softmax(-1)  # [B, q, k]
    copied_tokens = torch.einsum("bqk,bkd->bqkd", pattern, W_E[tokens] @ ov)  # per source
    source = torch.full(tokens.shape, -1, dtype=torch.long, device=tokens.device)  # each position's variable source
    assigned = _assigned(batch, task).to(tokens.device)
    source[assigned] = (torch.arange(n, device=tokens.device).expand_as(tokens) - 1)[assigned]
    source[:, -1] = _query_variable_position(batch, task).to(tokens.device)
    picked = torch.nn.functional.one_hot(source.clamp(min=0), n).to(torch.float64) * (source >= 0)[..., None]
    variable = torch.einsum("bqk,bqkd->bqd", picked, copied_tokens)
    copied_other = copied_tokens.sum(2) - variable
    copied_positions = torch.einsum("bqk,kd->bqd", pattern, W_pos @ ov)
    return torch.stack([W_E[tokens], W_pos.expand_as(x0), variable, copied_positions, copied_other])


def _lookup_weights(model):
    attn = model.blocks[roles.lookup_block(model)].attn
    h = roles.head(model, roles.LOOKUP)
    return attn, h


@torch.no_grad()
def margin_terms(model, batch: Batch) -> dict:
    """The lookup's margin on `batch`'s 1-var rows split into PARTS x PARTS: {"terms": [5, 5] mean over rows,
    "margin": their sum, "rows": how many}."""
    parts = residual_parts(model, batch)
    attn, h = _lookup_weights(model)
    qk = attn.W_Q[h].double() @ attn.W_K[h].double().T * attn.scale
    queries = parts[:, :, -1]  # [5, B, d]
    scores = torch.einsum("ibd,de,jbke->ijbk", queries, qk, parts)  # [5, 5, B, n]
    right, others = _contenders(batch, model.config.task, scores.device)
    margin = (scores * right).sum(-1) - (scores * others).sum(-1) / others.sum(-1)
    terms = margin.mean(-1)
    return {"terms": terms.cpu(), "margin": float(terms.sum()), "rows": int(margin.shape[-1])}


def _contenders(batch: Batch, task, device) -> tuple[torch.Tensor, torch.Tensor]:
    """One-hot [B, n] of the queried value's position and of the other assigned values' positions."""
    assigned = _assigned(batch, task).to(device)
    right = torch.nn.functional.one_hot(_queried_value_position(batch).to(device), batch.tokens.shape[1]).bool()
    return right.double(), (assigned & ~right).double()


@torch.no_grad()
def lookup_readout(model, batch: Batch, ablate: str | None = None, side: str = "key") -> dict:
    """With the part `ablate` (one of PARTS, or None) replaced on one side of the lookup's score: the keys at the
    assigned values (`side` "key": by its mean over the batch's assigned values) or the query at `=` ("query": by its
    mean over the batch); {"lookup": share of rows whose score is highest at the queried value among the assigned
    values, "answers": share of 1-var answers right, through layer 2's value path, MLP and unembedding}."""
    task = model.config.task
    parts = residual_parts(model, batch)
    resid = parts.sum(0)
    keys, query = resid.clone(), resid[:, -1].clone()
    assigned = _assigned(batch, task).to(resid.device)
    if ablate is not None and side == "key":
        part = parts[PARTS.index(ablate)]
        keys[assigned] += part[assigned].mean(0) - part[assigned]
    elif ablate is not None:
        part = parts[PARTS.index(ablate)][:, -1]
        query += part.mean(0) - part
    attn, h = _lookup_weights(model)
    q = query @ attn.W_Q[h].double()
    k = keys @ attn.W_K[h].double()
    scores = torch.einsum("be,bke->bk", q, k) * attn.scale
    right, others = _contenders(batch, task, scores.device)
    best_other = scores.masked_fill(others == 0, float("-inf")).max(-1).values
    lookup = ((scores * right).sum(-1) > best_other).double().mean()
    pattern = scores.softmax(-1)
    out = resid[:, -1] + (pattern[..., None] * (resid @ attn.W_V[h].double())).sum(1) @ attn.W_O[h].double()
    mlp = roles.addition_mlp(model)
    out = out + torch.relu(out @ mlp.W_in.double()) @ mlp.W_out.double()
    answers = (out @ model.W_U.double()).argmax(-1).cpu() == batch.answers
    return {"lookup": float(lookup), "answers": float(answers.double().mean())}


@torch.no_grad()
def identity_in_context(model, batch: Batch) -> float:
    """Measure 3's map read in context: the share of rows whose queried variable's row of the variable QK map
    (`variable_qk_map`) is higher at its own variable than at every other variable assigned in the sequence."""
    task, var0 = model.config.task, Vocab(model.config.task).var0
    qmap = variable_qk_map(model).double()
    queried = torch.where(batch.lhs_var >= 0, batch.lhs_var, batch.rhs_var)
    prefix = batch.tokens[:, : task.prefix_len]
    present = torch.zeros(len(batch), task.n_vars, dtype=torch.bool)
    rows, cols = torch.nonzero(prefix >= var0, as_tuple=True)
    present[rows, prefix[rows, cols] - var0] = True
    present[torch.arange(len(batch)), queried] = False
    row = qmap[queried]  # [B, n_vars]
    rival = row.masked_fill(~present, float("-inf")).max(-1).values
    return float((row[torch.arange(len(batch)), queried] > rival).double().mean())


def measure3(model) -> float:
    return float(identity_rows(variable_qk_map(model)).float().mean())


def checkpoint_reading(model, batch: Batch | None = None) -> dict:
    """One checkpoint: the margin's 25 terms (columns "q_<part>__k_<part>"), the margin, measure 3, the identity
    read in context, the lookup and the 1-var answers."""
    batch = lookup_batch(model.config.task) if batch is None else batch
    terms = margin_terms(model, batch)
    row = {f"q_{a}__k_{b}": float(terms["terms"][i, j]) for i, a in enumerate(PARTS) for j, b in enumerate(PARTS)}
    row.update(margin=terms["margin"], rows=terms["rows"], m3=measure3(model),
               identity_in_context=identity_in_context(model, batch), **lookup_readout(model, batch))
    return row


QUERY_ABLATED = ("variable", "copied_positions", "copied_other")  # the query-side parts read beside the rule


def ablation_reading(model, batch: Batch | None = None) -> dict:
    """The lookup and the answers with nothing ablated, with each key-side part ablated in turn, and (descriptive,
    beside R3's rule, which ablates keys) with each of QUERY_ABLATED ablated at `=` (`lookup_readout`): {"none":
    {...}, part: {...}, "query_" + part: {...}}."""
    batch = lookup_batch(model.config.task) if batch is None else batch
    return {"none": lookup_readout(model, batch), **{p: lookup_readout(model, batch, p) for p in PARTS},
            **{f"query_{p}": lookup_readout(model, batch, p, "query") for p in QUERY_ABLATED}}


def key_part_totals(row) -> dict:
    """Each key-side part's whole share of the margin (summed over the query-side parts) from a reading's terms."""
    return {b: sum(float(row[f"q_{a}__k_{b}"]) for a in PARTS) for b in PARTS}

"""Causal checks with TransformerLens hooks (`run_with_hooks`) on the full hooked forward: the book's tools that
change an activation and watch the answer (measurements that only read activations live in `circuits` and
`diagnostics`; the reviewer's controls of a claim, built from these tools, in `controls`).

* Ablation (`ablation_hook`, `ablation_table`: the one factory and the one table): replace an activation (e.g.
  the layer-1 (copy) head's output, `blocks.0.hook_attn_out` in the paper's shape) by zero or by its per-position
  mean over training sequences, everywhere or only at some positions (`position_mask`: the prefix value tokens,
  `=`), and measure pool accuracies.
* Value patching: run a counterfactual copy of each sequence in which one operand's value token holds
  another number, and paste the counterfactual residual stream at that position (the layer-2 (lookup) input,
  `blocks.1.hook_resid_pre`) into the clean run: if layer 2 reads the operand from there, the answer
  follows the pasted value.
* Attention redirection: at `=`, move the layer-2 attention weight from an operand's value position
  to a distractor's value position: the answer should follow the distractor's value.

The hooks and heads are the roles' (`roles`), so every check reads any declared shape.
"""
from __future__ import annotations

import pandas as pd
import torch

from ..measure import roles
from ..core.config import ModelConfig
from ..core.data import Batch, sample_queries
from ..measure.measures import value_positions
from ..core.model import AssignAddTransformer


def copy_out_hook(model) -> str:
    """The copy head's block's attention output (layer 1's output in the paper)."""
    return roles.hook(model, "attn_out", roles.COPY)


def lookup_input_hook(model) -> str:
    """The residual stream the lookup head's block reads (layer 2's input in the paper)."""
    return roles.hook(model, "resid_pre", roles.LOOKUP)


def lookup_pattern_hook(model) -> str:
    """The lookup head's block's attention pattern [batch, head, q, k] (the head is `roles.head(model, "lookup")`)."""
    return roles.hook(model, "pattern", roles.LOOKUP)


# The three hooks in the paper's shape
_PAPER = ModelConfig()
LAYER1_OUT, LAYER2_INPUT = copy_out_hook(_PAPER), lookup_input_hook(_PAPER)
LAYER2_PATTERN = lookup_pattern_hook(_PAPER)


@torch.no_grad()
def predict(model: AssignAddTransformer, tokens: torch.Tensor, fwd_hooks=()) -> torch.Tensor:
    """argmax of the `=` logits [batch], with optional (hook name, function) pairs applied."""
    logits = model.run_with_hooks(tokens.to(model.W_E.device), fwd_hooks=list(fwd_hooks))
    return logits[:, -1].argmax(-1).cpu()


@torch.no_grad()
def mean_activation(model: AssignAddTransformer, hook_name: str, n: int = 4096, seed: int = 0) -> torch.Tensor:
    """Per-position mean of an activation over fresh training sequences: [pos, ...]."""
    batch = sample_queries(model.config.task, n, torch.Generator().manual_seed(seed))
    _, cache = model.run_with_cache(batch.tokens.to(model.W_E.device), names_filter=lambda name: name == hook_name)
    return cache[hook_name].mean(0)


def position_mask(batch: Batch, task, where: str) -> torch.Tensor:
    """Bool [B, seq]: 'values' = prefix value tokens, 'eq' = the last position, 'all' = everywhere."""
    if where == "values":
        return value_positions(batch, task)
    mask = torch.zeros_like(batch.tokens, dtype=torch.bool)
    if where == "eq":
        mask[:, -1] = True
    elif where == "all":
        mask[:] = True
    else:
        raise ValueError(f"where must be 'values', 'eq' or 'all', got {where!r}")
    return mask


def ablation_hook(mode: str, mean: torch.Tensor | None = None, mask: torch.Tensor | None = None):
    """A hook replacing the activation by zeros ('zero') or by a per-position mean ('mean'), everywhere or only
    where `mask` [B, seq] is True; the activation keeps its dtype."""
    if mode not in ("zero", "mean"):
        raise ValueError(f"ablation mode must be 'zero' or 'mean', got {mode!r}")
    if mode == "mean" and mean is None:
        raise ValueError("mean ablation needs the mean activation")

    def hook(act, hook):  # noqa: ARG001 (TransformerLens passes the hook point)
        replaced = torch.zeros_like(act) if mode == "zero" else mean.to(act.dtype).expand_as(act).clone()
        if mask is None:
            return replaced
        return torch.where(mask.to(act.device)[..., None], replaced, act)
    return hook


def has_distractor(batch: Batch) -> torch.Tensor:
    """Bool [B]: the prefix assigns at least one variable the query does not use. Without one, a
    reader that averages every value token in the prefix can answer without knowing which is which."""
    return batch.n_assign > (batch.lhs_var >= 0).long() + (batch.rhs_var >= 0).long()


def ablation_table(model: AssignAddTransformer, pools: dict[str, Batch], hook_name: str | None = None,
                   modes: tuple[str, ...] = ("zero", "mean"), wheres: tuple[str, ...] = (),
                   by_distractor: bool = False, distractor_only: bool = False) -> pd.DataFrame:
    """Accuracy per pool (rows): clean, with `hook_name` (default: the copy head's block's output) ablated
    everywhere in each of `modes` ("zero-ablated", "mean-ablated"), and mean-ablated only at each kind of position
    in `wheres` ("ablated at values", ...). `distractor_only`: read only the sequences with a distractor assignment
    (where lookup by label is needed); `by_distractor`: also each accuracy on those sequences, beside the whole
    pool."""
    task = model.config.task
    hook_name = hook_name or copy_out_hook(model)
    mean = mean_activation(model, hook_name) if ("mean" in modes or wheres) else None
    rows = []
    for name, batch in pools.items():
        if distractor_only:
            keep = has_distractor(batch)
            batch = batch[keep] if bool(keep.any()) else batch
        right = {"clean": predict(model, batch.tokens) == batch.answers}
        for mode in modes:
            right[f"{mode}-ablated"] = predict(model, batch.tokens, [(hook_name, ablation_hook(mode, mean))]) == batch.answers
        for where in wheres:
            hook = ablation_hook("mean", mean, position_mask(batch, task, where))
            right[f"ablated at {where}"] = predict(model, batch.tokens, [(hook_name, hook)]) == batch.answers
        row = {"pool": name, **{k: float(v.float().mean()) for k, v in right.items()}}
        if by_distractor:
            keep = has_distractor(batch)
            row.update({f"{k}, with distractor": float(v[keep].float().mean()) for k, v in right.items()})
            row["share with distractor"] = float(keep.float().mean())
        if wheres:
            row["n"] = int(len(batch))
        rows.append(row)
    return pd.DataFrame(rows).set_index("pool")


def _operand(batch: Batch, operand: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(value, position holding it, the other operand's value) for operand 'lhs' or 'rhs'."""
    if operand == "lhs":
        return batch.lhs_val, batch.lhs_src, batch.rhs_val
    if operand == "rhs":
        return batch.rhs_val, batch.rhs_src, batch.lhs_val
    raise ValueError(f"operand must be 'lhs' or 'rhs', got {operand!r}")


@torch.no_grad()
def patch_value_residual(model: AssignAddTransformer, batch: Batch, operand: str = "lhs",
                         hook_name: str | None = None, seed: int = 0,
                         new_value: torch.Tensor | None = None) -> dict[str, float]:
    """Paste, at the operand's value position only, the activation `hook_name` (default: the lookup block's input)
    of a counterfactual run whose value token there holds another number v' (random, or `new_value`). Returns the
    fractions of sequences answering the original sum, the counterfactual sum (v' + other) mod N, and something
    else."""
    n = model.config.task.modulus
    hook_name = hook_name or lookup_input_hook(model)
    value, src, other = _operand(batch, operand)
    rows = torch.arange(len(batch))
    if new_value is None:
        shift = torch.randint(1, n, (len(batch),), generator=torch.Generator().manual_seed(seed))
        new_value = (value + shift) % n
    counter = batch.tokens.clone()
    counter[rows, src] = new_value
    _, cache = model.run_with_cache(counter.to(model.W_E.device), names_filter=lambda name: name == hook_name)
    source = cache[hook_name]
    src_dev = src.to(source.device)

    def paste(act, hook):
        act = act.clone()
        act[rows, src_dev] = source[rows, src_dev]
        return act

    pred = predict(model, batch.tokens, [(hook_name, paste)])
    return _follow_fractions(pred, batch.answers, (new_value + other) % n)


def distractor_positions(batch: Batch, task, seed: int = 0) -> torch.Tensor:
    """For each sequence, one random value position that is neither operand's source (-1 if none)."""
    candidates = value_positions(batch, task)
    rows = torch.arange(len(batch))
    candidates[rows, batch.lhs_src.clamp(max=task.seq_len - 1)] = False
    candidates[rows, batch.rhs_src.clamp(max=task.seq_len - 1)] = False
    keys = torch.rand(candidates.shape, generator=torch.Generator().manual_seed(seed))
    keys[~candidates] = -1.0
    pick = keys.argmax(-1)
    return torch.where(candidates.any(-1), pick, torch.full_like(pick, -1))


def distractor_with_other_value(batch: Batch, task, value: torch.Tensor, seed: int = 0):
    """(position, value, usable) of one random distractor value per sequence; usable where the sequence has a
    distractor and its value differs from `value` (otherwise moving to it could not change the answer)."""
    target = distractor_positions(batch, task, seed)
    target_value = batch.tokens[torch.arange(len(batch)), target.clamp(min=0)]
    return target, target_value, (target >= 0) & (target_value != value)


@torch.no_grad()
def redirect_layer2_attention(model: AssignAddTransformer, batch: Batch, operand: str = "lhs",
                              seed: int = 0) -> dict[str, float]:
    """At `=`, move layer 2's attention weight on the operand's value position onto a distractor's
    value position. Only sequences with a distractor whose value differs from the operand's count.
    Returns the fractions answering the original sum, (distractor value + other) mod N, or else."""
    task = model.config.task
    value, src, other = _operand(batch, operand)
    target, target_value, keep = distractor_with_other_value(batch, task, value, seed)
    batch, src, target, target_value, other = batch[keep], src[keep], target[keep], target_value[keep], other[keep]
    rows = torch.arange(len(batch))
    head = roles.head(model, roles.LOOKUP)

    def move(pattern, hook):
        pattern = pattern.clone()
        moved = pattern[rows, head, -1, src]
        pattern[rows, head, -1, src] = 0.0
        pattern[rows, head, -1, target] += moved
        return pattern

    pred = predict(model, batch.tokens, [(lookup_pattern_hook(model), move)])
    result = _follow_fractions(pred, batch.answers, (target_value + other) % task.modulus)
    result["n"] = int(len(batch))
    return result


def _follow_fractions(pred: torch.Tensor, original: torch.Tensor, patched: torch.Tensor) -> dict[str, float]:
    same = pred == original
    follows = pred == patched
    return {"original": float(same.float().mean()), "patched": float(follows.float().mean()),
            "other": float((~same & ~follows).float().mean()), "n": int(len(pred))}


def patching_table(model: AssignAddTransformer, pools: dict[str, Batch], operand: str = "lhs") -> pd.DataFrame:
    """For each pool: clean accuracy, then where the answer goes under value patching and under
    layer-2 attention redirection (fractions answering the original vs the patched sum)."""
    rows = []
    for name, batch in pools.items():
        clean = float((predict(model, batch.tokens) == batch.answers).float().mean())
        value = patch_value_residual(model, batch, operand)
        redirect = redirect_layer2_attention(model, batch, operand)
        rows.append({"pool": name, "clean": clean,
                     "value patch: original": value["original"], "value patch: follows patch": value["patched"],
                     "redirect: original": redirect["original"], "redirect: follows distractor": redirect["patched"],
                     "redirect: n": redirect["n"]})
    return pd.DataFrame(rows).set_index("pool")

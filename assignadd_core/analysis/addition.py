"""One addition module, reused (claim C6): does the layer-2 MLP see the same input whether the
operands are written as literals or fetched from variables?

Twins: for every operand pair (n1, n2) a variable-operand sequence and its literal twin, identical
token for token except that the query's variable operands are replaced by their values (the
prefix, now all distractors, stays). Three read-outs at `=` (the last position):

* cosine similarity of the MLP input (`blocks.1.hook_resid_mid` in the paper's shape) between twins (matched) and
  between sequences of different pairs (mismatched; the swapped pair (n2, n1) is kept apart:
  addition is commutative, so its input may legitimately be the same);
* cosine similarity of the weights-only prediction OV2(W_E[n1]) + OV2(W_E[n2]) with the actual
  layer-2 (lookup) attention output (`blocks.1.hook_attn_out`);
* the causal version: patch the MLP input of one twin into the other with `run_with_hooks` and
  check the output does not change (and, as a control, that a mismatched donor does change it).

The hooks are the roles' (`roles`): the addition MLP's input and the lookup block's attention output.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..measure import roles
from ..core.config import ModelConfig, TaskConfig
from ..core.data import LITERAL, Batch, build_sequences, make_split
from ..measure.measures import operand_pairs, two_operand_input
from ..core.model import AssignAddTransformer


def mlp_input_hook(model) -> str:
    """The addition MLP's input (the residual after its block's attention)."""
    return roles.hook(model, "resid_mid", roles.MLP)


def attn_out_hook(model) -> str:
    """The lookup head's block's attention output: what it fetched for the addition MLP."""
    return roles.hook(model, "attn_out", roles.LOOKUP)


# The two hooks in the paper's shape (the chapters name them)
MLP_INPUT_HOOK, ATTN_OUT_HOOK = mlp_input_hook(ModelConfig()), attn_out_hook(ModelConfig())
TWIN_KINDS = ("2var", "1var_left", "1var_right")
GROUPS = ("matched", "swapped", "mismatched")


def twin_batches(task: TaskConfig, kind: str = "2var", seed: int = 0,
                 pairs: torch.Tensor | None = None) -> tuple[Batch, Batch]:
    """(literal, variable) batches, row i of both holding pair i (default: all N² pairs).

    kind: "2var" (both operands variables, one of the training-allowed ordered variable pairs),
    "1var_left" / "1var_right" (one training-allowed variable on that side).
    """
    if kind not in TWIN_KINDS:
        raise ValueError(f"kind must be one of {TWIN_KINDS}, got {kind!r}")
    pairs = operand_pairs(task.modulus) if pairs is None else pairs
    split, gen = make_split(task), torch.Generator().manual_seed(seed)
    b = pairs.shape[0]
    lit = torch.full((b,), LITERAL, dtype=torch.long)

    def pick(rows: torch.Tensor) -> torch.Tensor:
        return rows[torch.randint(0, rows.shape[0], (b,), generator=gen)]

    if kind == "2var":
        var_pairs = pick(split.allowed_var_pairs)
        lhs_var, rhs_var = var_pairs[:, 0], var_pairs[:, 1]
    elif kind == "1var_left":
        lhs_var, rhs_var = pick(split.left_vars), lit
    else:
        lhs_var, rhs_var = lit, pick(split.right_vars)
    variable = build_sequences(task, pairs[:, 0], pairs[:, 1], lhs_var, rhs_var, gen)
    tokens = variable.tokens.clone()
    lhs_pos, rhs_pos = task.operand_positions
    tokens[:, lhs_pos], tokens[:, rhs_pos] = variable.lhs_val, variable.rhs_val
    literal = Batch(tokens=tokens, answers=variable.answers, lhs_val=variable.lhs_val, rhs_val=variable.rhs_val,
                    lhs_var=lit, rhs_var=lit, lhs_src=torch.full((b,), lhs_pos), rhs_src=torch.full((b,), rhs_pos),
                    n_assign=variable.n_assign)
    return literal, variable


@torch.no_grad()
def last_position(model: AssignAddTransformer, tokens: torch.Tensor, names: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """Activations at the last position (`=`) for the given hook names: {name: [B, d]}."""
    was_training = model.training
    model.eval()
    try:
        _, cache = model.run_with_cache(tokens.to(model.W_E.device), names_filter=lambda n: n in names)
    finally:
        model.train(was_training)
    return {name: cache[name][:, -1].float().cpu() for name in names}


def ov2_prediction(model: AssignAddTransformer, batch: Batch) -> torch.Tensor:
    """OV2(W_E[n1]) + OV2(W_E[n2]) for every row: the layer-2 attention output with equal weight on two
    clean operand embeddings."""
    return two_operand_input(model, batch.lhs_val, batch.rhs_val).float().cpu()


def cosine_matrix(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """cos(a_i, b_j) for all rows: [len(a), len(b)]."""
    a = a / a.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    b = b / b.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return a @ b.T


def cosine_groups(a: torch.Tensor, b: torch.Tensor, pairs: torch.Tensor) -> dict[str, np.ndarray]:
    """Cosines between rows of a and b (row i of both belongs to operand pair i), grouped into
    matched (same pair), swapped ((n1, n2) vs (n2, n1), n1 ≠ n2) and mismatched (every other pair)."""
    cos = cosine_matrix(a.float(), b.float())
    key = pairs[:, 0] * (int(pairs.max()) + 1) + pairs[:, 1]
    swapped_key = pairs[:, 1] * (int(pairs.max()) + 1) + pairs[:, 0]
    same = key[:, None] == key[None, :]
    swapped = (swapped_key[:, None] == key[None, :]) & ~same
    return {"matched": cos[same].numpy(), "swapped": cos[swapped].numpy(), "mismatched": cos[~same & ~swapped].numpy()}


def summarize(groups: dict[str, np.ndarray]) -> pd.DataFrame:
    """One row per group: count, mean, std, 5 % quantile, min, max."""
    rows = []
    for name, values in groups.items():
        v = np.asarray(values, dtype=np.float64)
        rows.append({"group": name, "n": v.size, "mean": v.mean(), "std": v.std(), "q05": np.quantile(v, 0.05),
                     "min": v.min(), "max": v.max()})
    return pd.DataFrame(rows).set_index("group")


def shared_addition_test(model: AssignAddTransformer, kind: str = "2var", seed: int = 0) -> dict:
    """The two cosine tests of C6 on all N² twins.

    Returns {"mlp_input": groups, "ov_literal": groups, "ov_variable": groups, "literal": Batch,
    "variable": Batch}, groups as in `cosine_groups`.
    """
    literal, variable = twin_batches(model.config.task, kind, seed)
    mlp_input, attn_out = mlp_input_hook(model), attn_out_hook(model)
    names = (mlp_input, attn_out)
    lit_act, var_act = last_position(model, literal.tokens, names), last_position(model, variable.tokens, names)
    pairs = torch.stack([literal.lhs_val, literal.rhs_val], 1)
    predicted = ov2_prediction(model, literal)
    return {
        "mlp_input": cosine_groups(lit_act[mlp_input], var_act[mlp_input], pairs),
        "ov_literal": cosine_groups(predicted, lit_act[attn_out], pairs),
        "ov_variable": cosine_groups(predicted, var_act[attn_out], pairs),
        "literal": literal,
        "variable": variable,
    }


# ----------------------------------------------------------------------------- causal version
@torch.no_grad()
def patched_logits(model: AssignAddTransformer, receiver: torch.Tensor, donor: torch.Tensor,
                   hook: str | None = None) -> torch.Tensor:
    """Logits at `=` of the receiver sequences with their activation at `hook` (default: the addition MLP's
    input), last position, replaced by the donor's (row by row): [B, N]. `donor` is token ids [B, seq] or the
    activations [B, d] themselves."""
    hook = hook or mlp_input_hook(model)
    donor_act = donor if donor.is_floating_point() else last_position(model, donor, (hook,))[hook]
    donor_act = donor_act.to(model.W_E.device)

    def replace(act, hook):  # noqa: ARG001 (TransformerLens passes the hook point)
        act = act.clone()
        act[:, -1] = donor_act.to(act.dtype)
        return act

    was_training = model.training
    model.eval()
    try:
        logits = model.run_with_hooks(receiver.to(model.W_E.device), fwd_hooks=[(hook, replace)])
    finally:
        model.train(was_training)
    return logits[:, -1].float().cpu()


@torch.no_grad()
def patch_report(model: AssignAddTransformer, literal: Batch, variable: Batch, seed: int = 0,
                 hook: str | None = None) -> pd.DataFrame:
    """Patch `hook` (default: the addition MLP's input) at `=` between twins (both ways) and, as a control, from a
    mismatched donor.

    Columns: same_argmax (patched argmax = the receiver's own clean argmax), correct (= the receiver's
    answer), follows_donor (= the donor's answer), donor_argmax (= the donor's own clean argmax),
    rel_logit_change (‖patched − clean‖ / ‖clean‖, mean over rows).
    """
    hook = hook or mlp_input_hook(model)
    device = model.W_E.device
    was_training = model.training
    model.eval()
    try:  # clean answers at `=` only (the fused path computes the same function, cheaper)
        clean = {id(b): model.fused_logits(b.tokens.to(device)).float().cpu() for b in (literal, variable)}
    finally:
        model.train(was_training)
    acts = {id(b): last_position(model, b.tokens, (hook,))[hook] for b in (literal, variable)}
    # The control's donors: the twins of other pairs (rows rolled by a random shift).
    gen = torch.Generator().manual_seed(seed)
    perm = torch.roll(torch.arange(len(literal)), int(torch.randint(1, len(literal), (1,), generator=gen)))
    cases = [("variable → literal", literal, variable, slice(None)),
             ("literal → variable", variable, literal, slice(None)),
             ("mismatched variable → literal (control)", literal, variable, perm)]
    rows = []
    for name, receiver, donor, rows_of_donor in cases:
        base, donor_base = clean[id(receiver)], clean[id(donor)][rows_of_donor]
        patched = patched_logits(model, receiver.tokens, acts[id(donor)][rows_of_donor], hook)
        guess = patched.argmax(-1)
        rows.append({
            "patch": name,
            "clean_accuracy": float((base.argmax(-1) == receiver.answers).float().mean()),
            "same_argmax": float((guess == base.argmax(-1)).float().mean()),
            "correct": float((guess == receiver.answers).float().mean()),
            "follows_donor": float((guess == donor.answers[rows_of_donor]).float().mean()),
            "donor_argmax": float((guess == donor_base.argmax(-1)).float().mean()),
            "rel_logit_change": float(((patched - base).norm(dim=-1) / base.norm(dim=-1)).mean()),
        })
    return pd.DataFrame(rows).set_index("patch")

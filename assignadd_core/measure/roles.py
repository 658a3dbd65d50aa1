"""Roles, not indices: where the paper's circuit sits in a model, as hook names and weights.

The circuit has three parts (`ModelConfig`'s role fields say which block and head plays each): the copy head
(the paper's layer 1, a previous-token head that writes each variable's identity onto its value), the lookup
head (layer 2, whose QK matches the query's variables with those copies: the associative memory) and the
addition MLP. Every measure and analysis asks this module for "the lookup head's pattern" or "the addition
MLP's input", never for `blocks.1`, so they read any declared shape the same way.

Hook names come from TransformerLens' `get_act_name` (imported on first use: importing TransformerLens' utilities
is slow, and the training loop never needs a hook name).
"""
from __future__ import annotations

import functools
from typing import Any

from ..core.config import ModelConfig

COPY, LOOKUP, MLP = "copy", "lookup", "mlp"


def model_config(of: Any) -> ModelConfig:
    """The ModelConfig of a model, a RunConfig or a ModelConfig."""
    of = getattr(of, "config", of)  # a model carries its RunConfig
    return getattr(of, "model", of)


def block(of: Any, role: str) -> int:
    """The block (0-based) that plays `role` in a model / config; an error where the shape has no such block."""
    block = model_config(of).role_block(role)
    if block is None:
        raise ValueError(f"this model has no block for the {role} role (no MLP)")
    return block


def copy_block(of: Any) -> int:
    return block(of, COPY)


def lookup_block(of: Any) -> int:
    return block(of, LOOKUP)


def mlp_block(of: Any) -> int:
    return block(of, MLP)


def head(of: Any, role: str) -> int:
    """The head that plays `role` ("copy" or "lookup") in its block."""
    return model_config(of).role_head(role)


def block_head(of: Any, block: int) -> int:
    """The head of `block` that plays a role there (the copy head before the lookup head), head 0 elsewhere."""
    config = model_config(of)
    for role in (COPY, LOOKUP):
        if config.role_block(role) == block:
            return config.role_head(role)
    return 0


@functools.lru_cache(maxsize=None)
def act_name(name: str, block: int) -> str:
    """TransformerLens' hook name of activation `name` ("pattern", "resid_pre", "attn_out", "pre", ...) in `block`."""
    from transformer_lens.utilities import get_act_name  # here, not at the top: a slow import (see above)
    return get_act_name(name, block)


def hook(of: Any, name: str, role: str) -> str:
    """The hook name of activation `name` in the block that plays `role`, e.g. hook(model, "pattern", "copy")."""
    return act_name(name, block(of, role))


def attention(model, role: str):
    """The attention module of the block that plays `role` (its weights carry a leading head axis)."""
    return model.blocks[block(model, role)].attn


def addition_mlp(model):
    """The MLP module that plays the addition."""
    return model.blocks[mlp_block(model)].mlp


def qk(model, role: str):
    """W_Q W_Kᵀ of the role's head, a FactoredMatrix [d_model, d_model] (no 1/sqrt(d_head) scale)."""
    return model.QK[block(model, role), head(model, role)]


def ov(model, role: str):
    """W_V W_O of the role's head, a FactoredMatrix [d_model, d_model]: what attending to x writes."""
    return model.OV[block(model, role), head(model, role)]


def bilinear(model, role: str):
    """The role head's attention score as a bilinear form [d_model, d_model] (scale included)."""
    return model.attention_bilinear(block(model, role), head(model, role))

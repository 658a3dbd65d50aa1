"""C10's causal test: steer the identity component of every layer-2 QK update in a window of steps
(`TrainConfig.steer_from`, `steer_to`, `steer_share`, `steer_sham`).

The identity direction. With U the variable copies (`measures.variable_copies`: u_v = W_E[v] OV1, what layer 1
writes for variable v), a change Δ of W_QK2 = W_Q2 W_K2ᵀ changes the 12 × 12 variable QK map by U Δ Uᵀ. Its
diagonal contrast (the mean same-variable score minus the mean other-variable score, what measure 3 needs to
rise) is linear in Δ: ⟨Δ, Uᵀ C U⟩ with C = I/n − (J − I)/(n(n − 1)). The unit matrix D = Uᵀ C U / ‖Uᵀ C U‖ is
the direction of W_QK2 that raises that contrast fastest; its coefficient in an update is the update's identity
component.

The steering. Right after each optimizer step in [steer_from, steer_to], the update Δ of W_QK2 is changed so
that its component along D is `steer_share` × ‖Δ‖: 0 removes the identity component (the map's contrast does
not move with that step, for the copies as they are), 0.5 pushes every update toward the identity block by half
its size. The sham (`steer_sham`) does the same along a fixed random direction made orthogonal to D, drawn from
`perturb_seed`: a push of the same size that is not the identity block. The change is written into W_Q2 (W_K2
and the optimizer's moments are left alone): W_Q2 += c D (W_K2ᵀ)⁺, exact where W_K2 is square and invertible,
as in the paper's shape (d_head = d_model).

A steered run is a pure function of its config like any other (reruns are bit-identical on CPU, a resumed run
equals an uninterrupted one).
"""
from __future__ import annotations

import functools

import torch

from . import roles
from .config import RunConfig
from .measures import variable_copies
from .perturb import stream_generator

_SHAM_STREAM = 3  # beside perturb's jitter (1) and gradient-noise (2) streams of the same seed


def due(config: RunConfig, step: int | None) -> bool:
    """Whether step `step`'s update is steered."""
    t = config.train
    return step is not None and t.steer_to > 0 and t.steer_from <= step <= t.steer_to


def qk2(model) -> torch.Tensor:
    """W_QK2 [d, d] in float64: the lookup head's (layer 2's in the paper), whose QK forms the associative
    memory (C5, C10)."""
    attn, h = roles.attention(model, roles.LOOKUP), roles.head(model, roles.LOOKUP)
    return (attn.W_Q[h].double() @ attn.W_K[h].double().T).detach()


def identity_direction(model) -> torch.Tensor:
    """D [d, d]: the unit direction of W_QK2 along which the variable QK map's diagonal contrast rises fastest."""
    copies = variable_copies(model).detach().double()
    n = copies.shape[0]
    eye = torch.eye(n, dtype=torch.float64, device=copies.device)
    contrast = eye / n - (1 - eye) / (n * (n - 1))
    direction = copies.T @ contrast @ copies
    return direction / direction.norm()


@functools.lru_cache(maxsize=4)
def _sham_draw(perturb_seed: int, d: int) -> torch.Tensor:
    """The sham's fixed random matrix [d, d] (drawn once per seed, not at every steered step; never modified)."""
    return torch.randn(d, d, generator=stream_generator(_SHAM_STREAM, perturb_seed), dtype=torch.float64)


def sham_direction(config: RunConfig, identity: torch.Tensor) -> torch.Tensor:
    """A fixed random unit direction (drawn from `perturb_seed`), made orthogonal to `identity` at this step."""
    raw = _sham_draw(config.train.perturb_seed, identity.shape[0]).to(identity.device)
    raw = raw - (raw * identity).sum() * identity
    return raw / raw.norm()


@torch.no_grad()
def steer(model, config: RunConfig, before: torch.Tensor) -> float:
    """Set the component of this step's W_QK2 update (`before` → now) along the steered direction to
    `steer_share` × the update's norm; returns the coefficient c added along that direction."""
    identity = identity_direction(model)
    direction = sham_direction(config, identity) if config.train.steer_sham else identity
    update = qk2(model) - before
    c = config.train.steer_share * float(update.norm()) - float((update * direction).sum())
    attn, h = roles.attention(model, roles.LOOKUP), roles.head(model, roles.LOOKUP)
    w_k = attn.W_K[h].double()
    # X W_Kᵀ = c D  <=>  W_K Xᵀ = c Dᵀ: least squares, exact for a square invertible W_K
    change = torch.linalg.lstsq(w_k, (c * direction).T).solution.T
    attn.W_Q[h] += change.to(attn.W_Q.dtype)
    return c

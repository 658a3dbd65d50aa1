"""C10's causal test: steer the identity component of every layer-2 QK update in a window of steps, fixed
(`steer_from`, `steer_to`) or started by a trigger (`steer_trigger`, `steer_window`), with `steer_share` and
`steer_direction` (or `steer_sham`): the plug-in `Steering` and its settings (`SteeringSettings`).

The identity direction. With U the variable copies (`measures.variable_copies`: u_v = W_E[v] OV1, what layer 1
writes for variable v), a change Δ of W_QK2 = W_Q2 W_K2ᵀ changes the 12 × 12 variable QK map by U Δ Uᵀ. Its
diagonal contrast (the mean same-variable score minus the mean other-variable score, what measure 3 needs to
rise) is linear in Δ: ⟨Δ, Uᵀ C U⟩ with C = I/n − (J − I)/(n(n − 1)). The unit matrix D = Uᵀ C U / ‖Uᵀ C U‖ is
the direction of W_QK2 that raises that contrast fastest; its coefficient in an update is the update's identity
component.

The shams. "wrong_pairs" (`wrong_pairs_direction`) is built as D is, from the contrast of a pairing without a
fixed point, π(v) = v + 1 mod n (each variable's query with the next variable's key, a stated rule, not a draw):
C_π = P_π/n − (J − P_π)/(n(n − 1)), then Uᵀ C_π U made exactly orthogonal to D and of unit norm: a direction in the
same subspace of matrices Uᵀ M U, of D's norm, that raises the score of the wrong pairs. The random sham
(`steer_sham`) is a fixed random unit direction orthogonal to D, drawn from `perturb_seed`: not in that subspace.

The steering. Right after each steered optimizer step, the update Δ of W_QK2 is changed so that its component
along the steered direction is `steer_share` × a size: 0 removes that component (for D: the map's contrast does not
move with that step, for the copies as they are), 0.5 pushes toward it by half the size, 2 by twice. The change
is written into W_Q2 (W_K2 and the optimizer's moments are left alone), in one of two ways (`steer_write`).

"exact" (the fixed windows of 2026-12-03): the size is ‖Δ‖, and W_Q2 += c D (W_K2ᵀ)⁺, so that W_QK2 changes by
exactly c D where W_K2 is square and invertible, as in the paper's shape (d_head = d_model). Where W_K2 is
ill-conditioned that change of W_Q2 is large (at step 3,601 of a stuck run, initialization 2434 with data order
2460: 17 |c|, against 0.19 |c| for the smallest write below), the next updates of W_QK2 grow with W_Q2, and so
does the next push: from that state a push of share 1 took ‖W_Q2‖ from 14 to 2·10¹³ within 100 steps. (With the
smallest write and the size ‖Δ‖, the same push still grew it to 3·10⁵ over 3,000 steps.)

"smallest" (the onset test): the size is the norm of the change of W_QK2 that W_Q2's own step made, W_K2 held (the
steering's own changes of W_Q2 do not feed into it), and the change X of W_Q2 is the smallest that moves the
component of W_QK2 along the direction by c while, for a sham, holding its component along D: X lies in the span of
direction·W_K2 and D·W_K2 (no inverse of W_K2). It changes W_QK2 off those directions too.

"hold" (stated 2026-12-04, after the update removal failed its manipulation check in the first onset cells: the
variable map's identity pattern formed anyway, moved by the copies U as much as by W_QK2's update): right after each
steered step, the smallest change of W_Q2 (W_K2 held) that brings each row's contrast of the variable QK map
M = U W_QK2 Uᵀ for the direction's pairing back to its value before the step: r_v = M[v, π(v)] − mean_j M[v, j],
π the identity ("identity") or the wrong pairing ("wrong_pairs"), twelve constraints ⟨W_QK2, Uᵀ C_v U⟩ = r_v read
with the copies of the step (`hold_rows`). The identity arm holds the map's diagonal where it was at the window's
start, so measure 3 cannot rise by either route; the wrong-pairs arm holds twelve contrasts of the same kind that
are not the identity's.

"double_hold" (stated 2026-12-06, R3's second part, after R3 found the held runs' lookup carried by the copy head's
positional copy at `=` against the values' variable copies): the hold, and in the same write the row contrasts of the
queries' map Q̄ W_QK2 Uᵀ held as well (Q̄: the lookup head's input at `=` averaged over the measurement batch's 1-var
rows that query each variable, `queried_means`: every query-side part at once, so every route from the query to the
values' variable copies is held, the identity pattern's among them); twenty-four constraints, one smallest change.

"clamp" (stated 2026-12-06, C10's sufficiency, after no push formed the pattern): right after each steered step, the
smallest change X of W_Q2 (W_K2 held) that sets the variable QK map M = U W_QK2 Uᵀ (the copies of now) to a target
T: every entry as it is, except each row's paired entry M[v, π(v)], raised where it is not already that far to the
row's largest other entry plus the margin (`steer_share`, in the lookup's score units: M's entries times
1/sqrt(d_head)). π is the identity (the clamp: measure 3 reads 1 after every write) or the wrong pairing (the sham,
with the same margin). Each round takes the rows still short of the margin and makes the smallest X that closes each
one's gap to its top rival (the other entries move as they will), until none is short (`clamp_rows`; an exact target
for all 144 entries needed changes of W_Q2 a hundred times its norm, which broke the lookup it was to hold).

The trigger. With `steer_trigger` > 0, the first eval step at which measure 5 (layer 1 copies the variables)
reaches it is recorded in the run's counters (`record_trigger`: saved with the resume state, so a resumed run
keeps it, and in final.json as `steer_started_after`); the steps after it, `steer_window` of them, are steered.
Direction "none" (the twin) records the trigger and steers nothing. An early stop (`early_stop.EarlyStop`) waits for
the window's end (`pending`).

A steered run is a pure function of its config like any other (reruns are bit-identical on CPU, a resumed run
equals an uninterrupted one).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from ..core import trainer
from ..core.config import ConfigError, RunConfig, Settings
from ..measure import roles
from ..measure.measures import variable_copies
from .perturb import stream_generator

_SHAM_STREAM = 3  # beside perturb's jitter (1) and gradient-noise (2) streams of the same seed
TRIGGER_KEY = "steer_started_after"  # the counter (and final.json field) of the trigger's eval step
# What a steering changes (`steer`): the identity direction, the sham that pairs the wrong variables, the random sham
# (stored as steer_sham), or nothing (the twin of a triggered steering).
STEER_DIRECTIONS = ("identity", "wrong_pairs", "random", "none")
STEER_WRITES = ("exact", "smallest", "hold", "double_hold", "clamp")  # how a steering's change is written into W_Q2 (`steer`)


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def _real(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


@dataclass(frozen=True)
class SteeringSettings(Settings):
    """In the updates of steps steer_from..steer_to (0: none), the component of the layer-2 QK update along the
    identity direction is set to steer_share x the update's norm (0 removes it); steer_sham: along a fixed random
    direction orthogonal to it instead (drawn from perturb_seed), the control. Or steering that starts on a trigger:
    after the first eval at which measure 5 (layer 1 copies) reaches steer_trigger (0: no trigger), for the next
    steer_window steps. steer_direction (STEER_DIRECTIONS) is what is steered: "identity"; "wrong_pairs", the sham in
    the identity's subspace that pairs each variable with another; "random" (stored as steer_sham, its first
    spelling); "none", the twin: nothing is changed, but the trigger is recorded and an early stop waits for the
    window's end, as in the steered arms. steer_write (STEER_WRITES) is how the change is written into W_Q2 (the
    module's text: "exact", "smallest", "hold", "double_hold", "clamp")."""

    name = "steering"
    steer_from: int = 0
    steer_to: int = 0
    steer_share: float = 0.0
    steer_sham: bool = False
    steer_trigger: float = 0.0
    steer_window: int = 0
    steer_direction: str = "identity"
    steer_write: str = "exact"

    def __post_init__(self) -> None:
        for name in ("steer_from", "steer_to"):
            value = getattr(self, name)
            _check(isinstance(value, int) and not isinstance(value, bool) and value >= 0,
                   f"{name} must be an integer >= 0, got {value!r}")
        _check(0 <= _real(self.steer_share) < math.inf,
               f"steer_share must be a finite number >= 0, got {self.steer_share!r}")
        _check(isinstance(self.steer_sham, bool), f"steer_sham must be true or false, got {self.steer_sham!r}")
        _check(0 <= _real(self.steer_trigger) <= 1,
               f"steer_trigger must lie in [0, 1] (a measure-5 level; 0: no trigger), got {self.steer_trigger!r}")
        _check(isinstance(self.steer_window, int) and not isinstance(self.steer_window, bool)
               and self.steer_window >= 0, f"steer_window must be an integer >= 0, got {self.steer_window!r}")
        _check(self.steer_direction in STEER_DIRECTIONS,
               f"steer_direction must be one of {', '.join(STEER_DIRECTIONS)}, got {self.steer_direction!r}")
        _check(self.steer_write in STEER_WRITES,
               f"steer_write must be one of {', '.join(STEER_WRITES)}, got {self.steer_write!r}")
        _check(self.steer_write != "clamp" or (_real(self.steer_share) > 0
                                               and self.steer_direction in ("identity", "wrong_pairs")
                                               and not self.steer_sham),
               "steer_write 'clamp' keeps a pairing's entries (identity or wrong_pairs) above the rest of their rows"
               " by the margin steer_share > 0 (in the lookup's score units),"
               f" got steer_direction {self.steer_direction!r}, steer_share {self.steer_share!r}")
        holding = self.steer_write in ("hold", "double_hold")
        _check(not holding or (_real(self.steer_share) == 0 and not self.steer_sham
                               and self.steer_direction in ("identity", "wrong_pairs", "none")),
               "steer_write 'hold' holds a pairing's contrasts (identity or wrong_pairs) at steer_share 0,"
               f" got steer_direction {self.steer_direction!r}, steer_share {self.steer_share!r}")
        if self.steer_to:
            _check(1 <= self.steer_from <= self.steer_to,
                   f"steering needs 1 <= steer_from <= steer_to <= steps, got {self.steer_from}..{self.steer_to}")
        if self.steer_trigger:
            _check(not self.steer_to, "steer_trigger and steer_from/steer_to exclude each other: a steering window"
                                      " is either triggered or fixed")
            _check(self.steer_window >= 1, f"a triggered steering needs steer_window >= 1, got {self.steer_window}")
        _check(not (self.steer_sham and self.steer_direction not in ("identity", "random")),
               f"steer_sham is the random direction; it excludes steer_direction {self.steer_direction!r}")
        if self.steer_direction == "random":  # one spelling per config: the sham's first (its runs keep their hashes)
            object.__setattr__(self, "steer_sham", True)
            object.__setattr__(self, "steer_direction", "identity")
        # Settings that do nothing take their defaults: an unsteered run has one config and one hash.
        if not self.steered:
            for name, default in (("steer_from", 0), ("steer_share", 0.0), ("steer_sham", False),
                                  ("steer_trigger", 0.0), ("steer_window", 0), ("steer_direction", "identity"),
                                  ("steer_write", "exact")):
                object.__setattr__(self, name, default)
        else:
            object.__setattr__(self, "steer_trigger", float(self.steer_trigger))
            object.__setattr__(self, "steer_share", 0.0 if self.steer_direction == "none" else float(self.steer_share))
            if self.steer_direction == "none":  # nothing is written
                object.__setattr__(self, "steer_write", "exact")

    def settle(self, config: RunConfig) -> "SteeringSettings":
        _check(self.steer_to <= config.train.steps,
               f"steering needs 1 <= steer_from <= steer_to <= steps ({config.train.steps}),"
               f" got {self.steer_from}..{self.steer_to}")
        return self

    @property
    def steered(self) -> bool:
        """Whether the run asks for steering: a fixed or a triggered window (the "none" twin too: its early stop
        waits for the window's end)."""
        return self.steer_to > 0 or self.steer_trigger > 0


def window(config: RunConfig, counters: dict | None = None) -> tuple[int, int] | None:
    """The steps steered, (first, last): the fixed window, or the `steer_window` steps after the recorded trigger
    (None: no steering asked for, or a trigger not reached yet)."""
    s = config.interventions
    if s.steer_to > 0:
        return s.steer_from, s.steer_to
    after = (counters or {}).get(TRIGGER_KEY) if s.steer_trigger > 0 else None
    return None if after is None else (after + 1, min(after + s.steer_window, config.train.steps))


def due(config: RunConfig, step: int | None, counters: dict | None = None) -> bool:
    """Whether step `step`'s update is steered (`counters`: the run's, which hold a triggered window's start)."""
    steps = window(config, counters)
    return step is not None and steps is not None and config.interventions.steer_direction != "none" and \
        steps[0] <= step <= steps[1]


def pending(config: RunConfig, counters: dict, step: int) -> bool:
    """Whether a window the run asks for is not behind it at `step` (an early stop waits for its end). A trigger
    never reached leaves nothing pending: that run is never steered."""
    steps = window(config, counters)
    return steps is not None and step <= steps[1]


def record_trigger(config: RunConfig, counters: dict, row: dict) -> None:
    """At an eval row: the first whose measure 5 reaches `steer_trigger` starts the window after its step."""
    level = config.interventions.steer_trigger
    if level > 0 and counters.get(TRIGGER_KEY) is None and row["m5_l1_value_prev_token"] >= level:
        counters[TRIGGER_KEY] = int(row["step"])


def saved_counters(config: RunConfig, state: dict) -> dict:
    """The trigger's counter of a triggered run, from its saved state (None: not reached), else nothing."""
    return {TRIGGER_KEY: state.get(TRIGGER_KEY)} if config.interventions.steer_trigger > 0 else {}


def final_fields(config: RunConfig, counters: dict) -> dict:
    """What final.json says of a triggered steering: the trigger's eval step (null: never reached)."""
    return {TRIGGER_KEY: counters.get(TRIGGER_KEY)} if config.interventions.steer_trigger > 0 else {}


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
    return _pairing_direction(copies, eye)


def _pairing_direction(copies: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
    """Uᵀ C U / ‖Uᵀ C U‖ for the contrast C = P/n − (J − P)/(n(n − 1)) of a pairing P (a permutation matrix)."""
    n = copies.shape[0]
    contrast = pairs / n - (1 - pairs) / (n * (n - 1))
    direction = copies.T @ contrast @ copies
    return direction / direction.norm()


def wrong_pairing(n: int) -> list[int]:
    """π: each variable v paired with v + 1 mod n (no fixed point for n >= 2)."""
    return [(v + 1) % n for v in range(n)]


def wrong_pairs_direction(model, identity: torch.Tensor) -> torch.Tensor:
    """The sham in D's subspace: the direction of the wrong pairing's contrast (`wrong_pairing`), made orthogonal
    to `identity` (D at this step) and of unit norm."""
    copies = variable_copies(model).detach().double()
    n = copies.shape[0]
    pairs = torch.zeros(n, n, dtype=torch.float64, device=copies.device)
    pairs[torch.arange(n), torch.tensor(wrong_pairing(n))] = 1.0
    raw = _pairing_direction(copies, pairs)
    raw = raw - (raw * identity).sum() * identity
    return raw / raw.norm()


@functools.lru_cache(maxsize=4)
def _sham_draw(perturb_seed: int, d: int) -> torch.Tensor:
    """The sham's fixed random matrix [d, d] (drawn once per seed, not at every steered step; never modified)."""
    return torch.randn(d, d, generator=stream_generator(_SHAM_STREAM, perturb_seed), dtype=torch.float64)


def sham_direction(config: RunConfig, identity: torch.Tensor) -> torch.Tensor:
    """A fixed random unit direction (drawn from `perturb_seed`), made orthogonal to `identity` at this step."""
    raw = _sham_draw(config.interventions.perturb_seed, identity.shape[0]).to(identity.device)
    raw = raw - (raw * identity).sum() * identity
    return raw / raw.norm()


class Before(NamedTuple):
    """What a steered step is measured against: W_QK2, W_Q2 and the variable copies U before the optimizer step
    (float64); for the double hold also the queries Q̄ (`queried_means`)."""
    qk: torch.Tensor
    w_q: torch.Tensor
    copies: torch.Tensor
    queries: torch.Tensor | None = None


def snapshot(model, config: RunConfig | None = None) -> Before:
    attn, h = roles.attention(model, roles.LOOKUP), roles.head(model, roles.LOOKUP)
    queries = queried_means(model) if config is not None and config.interventions.steer_write == "double_hold" else None
    return Before(qk2(model), attn.W_Q[h].detach().double().clone(), variable_copies(model).detach().double(), queries)


QUERY_ROWS = 16  # rows per queried variable that Q̄ averages (the double hold computes it at every steered step)


@functools.lru_cache(maxsize=4)
def _query_rows(task):
    """The first QUERY_ROWS 1-var rows of the measurement batch (`analysis.route.lookup_batch`) that query each
    variable: a fixed set, the same before and after every step."""
    from ..analysis.route import lookup_batch
    batch = lookup_batch(task)
    queried = torch.where(batch.lhs_var >= 0, batch.lhs_var, batch.rhs_var)
    keep = torch.cat([torch.nonzero(queried == v)[:QUERY_ROWS, 0] for v in range(task.n_vars)]).sort().values
    return batch[keep]


def _weights_version(model) -> tuple:
    """What Q̄ depends on (the embeddings and the copy head), by identity and in-place version: a step changes it,
    the steering's own write (W_Q2 only) does not."""
    copy = roles.attention(model, roles.COPY)
    return tuple((id(w), w._version) for w in (model.embed.W_E, model.pos_embed.W_pos, copy.W_Q, copy.W_K, copy.W_V,
                                                copy.W_O))


_QUERIES: dict = {}  # the last Q̄ computed, by `_weights_version`: the next step's snapshot reads the same weights


@torch.no_grad()
def queried_means(model) -> torch.Tensor:
    """Q̄ [n_vars, d] (float64): the lookup head's input at `=` (the residual after the copy head's block), averaged
    over `_query_rows` per queried variable: every query-side part at once, the queried variable's copy and what
    else the copy head writes there (the double hold)."""
    key = _weights_version(model)
    if key not in _QUERIES:
        _QUERIES.clear()
        _QUERIES[key] = _queried_means(model)
    return _QUERIES[key]


def _queried_means(model) -> torch.Tensor:
    batch = _query_rows(model.config.task)
    tokens = batch.tokens.to(model.W_E.device)
    copy, h = roles.attention(model, roles.COPY), roles.head(model, roles.COPY)
    W_E, W_pos = model.W_E.double(), model.W_pos.double()[: tokens.shape[1]]
    ov = roles.ov(model, roles.COPY).AB.double()
    x0 = W_E[tokens] + W_pos
    scores = torch.einsum("bd,bkd->bk", x0[:, -1] @ (copy.W_Q[h].double() @ copy.W_K[h].double().T), x0) * copy.scale
    copied = (W_E @ ov)[tokens] + W_pos @ ov  # x0 OV1 from two small tables
    resid = x0[:, -1] + torch.einsum("bk,bkd->bd", scores.softmax(-1), copied)
    queried = torch.where(batch.lhs_var >= 0, batch.lhs_var, batch.rhs_var).to(tokens.device)
    n = model.config.task.n_vars
    sums = torch.zeros(n, resid.shape[1], dtype=torch.float64, device=tokens.device).index_add_(0, queried, resid)
    counts = torch.bincount(queried, minlength=n).clamp(min=1).to(torch.float64)
    return sums / counts[:, None]


def row_contrast_matrices(copies: torch.Tensor, pairing: list[int], left: torch.Tensor | None = None) -> torch.Tensor:
    """[n, d, d]: G_v = Lᵀ C_v U with C_v = e_v e_π(v)ᵀ − e_v 1ᵀ/n, so that ⟨W_QK2, G_v⟩ is row v's contrast
    M[v, π(v)] − mean_j M[v, j] of the map M = L W_QK2 Uᵀ: the variable map (L = U, the default) or, for the double
    hold, the queries' map (L = Q̄)."""
    left = copies if left is None else left
    n = copies.shape[0]
    rows = torch.zeros(n, n, n, dtype=copies.dtype, device=copies.device)
    index = torch.arange(n, device=copies.device)
    rows[index, index, :] -= 1.0 / n
    rows[index, index, torch.tensor(pairing, device=copies.device)] += 1.0
    return torch.einsum("vab,ai,bj->vij", rows, left, copies)


def hold_pairing(config: RunConfig, n: int) -> list[int]:
    return wrong_pairing(n) if config.interventions.steer_direction == "wrong_pairs" else list(range(n))


@torch.no_grad()
def hold_rows(model, config: RunConfig, before: Before) -> torch.Tensor:
    """The "hold" write: the smallest change X of W_Q2 (W_K2 held) with ⟨(W_Q2 + X) W_K2ᵀ, G_v⟩ = the row contrasts
    before the step, for every v (`row_contrast_matrices` with the copies of now and of before); X lies in the span
    of the G_v W_K2, from their Gram matrix (least squares). Returns the rows' contrasts after the write."""
    pairing = hold_pairing(config, before.copies.shape[0])
    target = torch.einsum("ij,vij->v", before.qk, row_contrast_matrices(before.copies, pairing))
    copies = variable_copies(model).detach().double()
    now = row_contrast_matrices(copies, pairing)
    if config.interventions.steer_write == "double_hold":  # the queries' map's row contrasts too, held alike
        target = torch.cat([target, torch.einsum("ij,vij->v", before.qk, row_contrast_matrices(
            before.copies, pairing, before.queries))])
        now = torch.cat([now, row_contrast_matrices(copies, pairing, queried_means(model))])
    attn, h = roles.attention(model, roles.LOOKUP), roles.head(model, roles.LOOKUP)
    w_k = attn.W_K[h].double()
    missing = target - torch.einsum("ij,vij->v", qk2(model), now)
    reach = now @ w_k  # ⟨X W_Kᵀ, G_v⟩ = ⟨X, G_v W_K⟩
    gram = torch.einsum("aij,bij->ab", reach, reach)
    weights = torch.linalg.lstsq(gram, missing[:, None]).solution[:, 0]
    attn.W_Q[h] += torch.einsum("a,aij->ij", weights, reach).to(attn.W_Q.dtype)
    return torch.einsum("ij,vij->v", qk2(model), now)[: len(pairing)]  # the variable map's rows


CLAMP_ROUNDS = 20  # the clamp's rounds at most: each fixes the rows still short of the margin, against their top rival
CLAMP_LEVEL = 5 / 6  # the share of rows clamped: measure 3 of the composing twins at their composition (median of 9)


def rows_clamped(n: int) -> int:
    """How many of the map's n rows the clamp holds: CLAMP_LEVEL of them, rounded up (10 of 12)."""
    return math.ceil(CLAMP_LEVEL * n - 1e-9)


@torch.no_grad()
def clamp_rows(model, config: RunConfig) -> float:
    """The "clamp" write (see the module's text): returns the largest shortfall of a row's margin it found, in score
    units (0: every paired entry already led its row by the margin)."""
    copies = variable_copies(model).detach().double()
    n = copies.shape[0]
    pairing = torch.tensor(hold_pairing(config, n), device=copies.device)
    attn, h = roles.attention(model, roles.LOOKUP), roles.head(model, roles.LOOKUP)
    keys = copies @ attn.W_K[h].double()  # [n, d_head]
    rows, first, chosen = torch.arange(n, device=copies.device), None, None
    for _ in range(CLAMP_ROUNDS):
        scores = copies @ qk2(model) @ copies.T * attn.scale  # the map in score units
        rivals = scores.clone()
        rivals[rows, pairing] = float("-inf")
        rival = rivals.max(-1)
        short = config.interventions.steer_share - (scores[rows, pairing] - rival.values)
        first = float(short.clamp(min=0).max()) if first is None else first
        chosen = short.argsort()[:rows_clamped(n)] if chosen is None else chosen  # the rows nearest the margin
        todo = chosen[short[chosen] > 1e-9 * config.interventions.steer_share]
        if len(todo) == 0:
            break
        # row v's margin moves by ⟨X, u_vᵀ (u_π(v) − u_rival) W_K⟩ · scale: the smallest X that closes each
        # shortfall, in the span of those k matrices (their Gram matrix)
        reach = torch.einsum("vi,vj->vij", copies[todo], keys[pairing[todo]] - keys[rival.indices[todo]])
        gram = torch.einsum("aij,bij->ab", reach, reach)
        weights = torch.linalg.lstsq(gram, (short[todo] / attn.scale)[:, None]).solution[:, 0]
        attn.W_Q[h] += torch.einsum("a,aij->ij", weights, reach).to(attn.W_Q.dtype)
    return first


@torch.no_grad()
def steer(model, config: RunConfig, before: Before) -> float:
    """Set the component of this step's W_QK2 update (`before` → now) along the steered direction to `steer_share`
    × a size: the update's norm ("exact" write), or the norm of the change of W_QK2 that W_Q2's own step made, W_K2
    held ("smallest" write: a size the steering's own changes of W_Q2 do not feed back into). Returns the
    coefficient c added along the direction (the "hold" write: the largest change it made to a row's contrast)."""
    if config.interventions.steer_write == "clamp":
        return clamp_rows(model, config)
    if config.interventions.steer_write in ("hold", "double_hold"):
        before_rows = torch.einsum("ij,vij->v", qk2(model), row_contrast_matrices(
            variable_copies(model).detach().double(), hold_pairing(config, before.copies.shape[0])))
        return float((hold_rows(model, config, before) - before_rows).abs().max())
    identity = identity_direction(model)
    if config.interventions.steer_sham:
        direction = sham_direction(config, identity)
    elif config.interventions.steer_direction == "wrong_pairs":
        direction = wrong_pairs_direction(model, identity)
    else:
        direction = identity
    attn, h = roles.attention(model, roles.LOOKUP), roles.head(model, roles.LOOKUP)
    w_k = attn.W_K[h].double()
    update = qk2(model) - before.qk
    smallest = config.interventions.steer_write == "smallest"
    size = (attn.W_Q[h].double() - before.w_q) @ w_k.T if smallest else update
    c = config.interventions.steer_share * float(size.norm()) - float((update * direction).sum())
    if smallest:
        # the smallest X with ⟨X W_Kᵀ, direction⟩ = c (and, for a sham, ⟨X W_Kᵀ, D⟩ = 0): X in the span of
        # direction W_K (and D W_K), from their Gram matrix; no inverse of W_K
        reach = torch.stack([direction @ w_k] + ([identity @ w_k] if direction is not identity else []))
        target = torch.zeros(len(reach), dtype=torch.float64, device=reach.device)
        target[0] = c
        change = torch.einsum("a,aij->ij", torch.linalg.solve(torch.einsum("aij,bij->ab", reach, reach), target), reach)
    else:
        # X W_Kᵀ = c D  <=>  W_K Xᵀ = c Dᵀ: least squares, exact for a square invertible W_K
        change = torch.linalg.lstsq(w_k, (c * direction).T).solution.T
    attn.W_Q[h] += change.to(attn.W_Q.dtype)
    return c


@trainer.register
class Steering(trainer.Plugin):
    Settings = SteeringSettings
    order = 20  # after the gradient noise; its change of W_Q2 before a jitter after the same step

    def __init__(self, config: RunConfig):
        super().__init__(config)
        self.before = None

    @property
    def acts_on_steps(self) -> bool:
        return self.settings.steered and self.settings.steer_direction != "none"

    def restore(self, state):
        return saved_counters(self.config, state)  # a triggered window's start (None: not reached yet)

    def on_gradient(self, model, step, counters):
        self.before = snapshot(model, self.config) if due(self.config, step, counters) else None

    def after_update(self, model, step, counters):
        if self.before is not None:
            steer(model, self.config, self.before)
            self.before = None

    def at_eval(self, row, counters):
        record_trigger(self.config, counters, row)

    def holds_back(self, counters, step):
        return pending(self.config, counters, step)

    def final_fields(self, counters, last_step):
        return final_fields(self.config, counters)

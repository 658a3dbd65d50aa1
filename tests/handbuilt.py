"""A transformer that solves the assign-and-add task exactly, with every weight set by hand.

Tests use it where they need a model whose answer under an intervention is known in advance: the
reference weights are not needed, and a wrong intervention, read-out or loop changes a number that
is exactly 0 or 1 here. (A module of its own, like `tiny`, so several test files can share it.)

The tiny task (N = 7, 4 variables, 16 positions) with d_model = 64. Residual-stream directions:

    NUM[n]   number token n            VAR[v]   variable token v
    PLUS, EQ, PAD                      ISNUM    1 on every number token
    POS[p]   position p                COPY[v]  "the previous token was variable v" (written by layer 1)
    OPER[n]  operand value n (written by layer 2 at `=`)      OUT[c]  logit of class c (written by the MLP)

* Layer 1 (positional): prefix position p >= 1 attends to p - 1, position 0 to itself, 12-14 to the
  `+` at 12, and `=` half and half to 13 and 14. OV1 copies VAR[v] to COPY[v], so every value token
  of the prefix carries the variable it was assigned to, and `=` carries half of each query variable.
* Layer 2 at `=`: score = C (COPY at `=` · COPY at the key) + B [key is a number] + C/2 [key at 13
  or 14]. The two operand values (a variable's value token, or a literal at 13/14) score C/2 + B,
  every other key at most max(B, C/2) = C/2: attention is 1/2 on each operand. OV2 copies NUM[n]
  to OPER[n], so the MLP input is (OPER[n1] + OPER[n2]) / 2.
* MLP: a lookup table. One neuron per unordered pair {a, b}, a != b, reads OPER[a] + OPER[b] - 0.75 EQ
  and fires (0.25) for {a, b} only among pairs with a != b (and for {a, a}, {b, b}); one neuron per
  {a, a} reads OPER[a] - 0.75 EQ and writes 10x stronger. Each writes OUT[(a + b) mod N]; W_U reads OUT.

Scores are scaled by 1/sqrt(64) = 1/8 inside the model, so the margins below are 50 after scaling:
softmax is a hard choice to float precision.
"""
from __future__ import annotations

import itertools

import torch

from assignadd_core.core.config import RunConfig
from assignadd_core.core.data import Vocab
from assignadd_core.core.model import AssignAddTransformer

from tiny import TINY

D_MODEL = 64
CONFIG = RunConfig().replace(**{**TINY, "d_model": D_MODEL, "d_mlp": 32})
N = CONFIG.task.modulus
N_VARS = CONFIG.task.n_vars
SEQ = CONFIG.task.seq_len

NUM = list(range(0, N))
VAR = list(range(N, N + N_VARS))
PLUS, EQ, PAD, ISNUM = N + N_VARS, N + N_VARS + 1, N + N_VARS + 2, N + N_VARS + 3
POS = list(range(ISNUM + 1, ISNUM + 1 + SEQ))
COPY = list(range(POS[-1] + 1, POS[-1] + 1 + N_VARS))
OPER = list(range(COPY[-1] + 1, COPY[-1] + 1 + N))
OUT = list(range(OPER[-1] + 1, OPER[-1] + 1 + N))
assert OUT[-1] < D_MODEL

SCALE = D_MODEL ** 0.5  # the model divides scores by this
HARD = 50.0 * SCALE  # layer-1 positional score
C = 100.0 * SCALE  # layer-2 variable match
B = 50.0 * SCALE  # layer-2 "key is a number"


def _zero(model: AssignAddTransformer) -> None:
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()


def _set_head(model: AssignAddTransformer, layer: int, qk: torch.Tensor, ov: torch.Tensor) -> None:
    """W_Q W_Kᵀ = qk and W_V W_O = ov (W_Q = W_V = I)."""
    attn = model.blocks[layer].attn
    eye = torch.eye(D_MODEL)
    with torch.no_grad():
        attn.W_Q[0], attn.W_K[0] = eye, qk.T.clone()
        attn.W_V[0], attn.W_O[0] = eye, ov.clone()


def layer1_previous_token(model: AssignAddTransformer) -> None:
    prefix = CONFIG.task.prefix_len
    qk = torch.zeros(D_MODEL, D_MODEL)
    qk[POS[0], POS[0]] = HARD
    for q in range(1, prefix):
        qk[POS[q], POS[q - 1]] = HARD
    for q in (prefix, prefix + 1, prefix + 2):  # `+`, lhs, rhs: all look at the `+` (copies nothing)
        qk[POS[q], POS[prefix]] = HARD
    qk[POS[SEQ - 1], POS[SEQ - 3]] = qk[POS[SEQ - 1], POS[SEQ - 2]] = HARD
    ov = torch.zeros(D_MODEL, D_MODEL)
    for v in range(N_VARS):
        ov[VAR[v], COPY[v]] = 1.0
    _set_head(model, 0, qk, ov)


def layer2_operand_reader(model: AssignAddTransformer) -> None:
    qk = torch.zeros(D_MODEL, D_MODEL)
    for v in range(N_VARS):
        qk[COPY[v], COPY[v]] = C
    qk[EQ, ISNUM] = B
    qk[EQ, POS[SEQ - 3]] = qk[EQ, POS[SEQ - 2]] = C / 2
    ov = torch.zeros(D_MODEL, D_MODEL)
    for n in range(N):
        ov[NUM[n], OPER[n]] = 1.0
    _set_head(model, 1, qk, ov)


def addition_table(model: AssignAddTransformer, answer=lambda a, b: (a + b) % N) -> None:
    """The MLP lookup table; `answer(a, b)` is the class each operand pair is sent to."""
    pairs = list(itertools.combinations(range(N), 2)) + [(a, a) for a in range(N)]
    mlp = model.blocks[1].mlp
    assert len(pairs) <= mlp.W_in.shape[1]
    with torch.no_grad():
        mlp.W_in.zero_()
        mlp.W_out.zero_()
        for j, (a, b) in enumerate(pairs):
            mlp.W_in[OPER[a], j] = mlp.W_in[OPER[b], j] = 1.0
            mlp.W_in[EQ, j] = -0.75
            mlp.W_out[j, OUT[answer(a, b)]] = 1.0 if a != b else 10.0


def exact_model(answer=lambda a, b: (a + b) % N) -> AssignAddTransformer:
    """The hand-built solver (in eval mode); `answer` replaces the addition table (to rig its errors)."""
    model = AssignAddTransformer(CONFIG)
    _zero(model)
    vocab = Vocab(CONFIG.task)
    with torch.no_grad():
        for n in range(N):
            model.embed.W_E[n, NUM[n]] = 1.0
            model.embed.W_E[n, ISNUM] = 1.0
        for v in range(N_VARS):
            model.embed.W_E[vocab.var_token(v), VAR[v]] = 1.0
        model.embed.W_E[vocab.plus, PLUS] = 1.0
        model.embed.W_E[vocab.eq, EQ] = 1.0
        model.embed.W_E[vocab.pad, PAD] = 1.0
        for p in range(SEQ):
            model.pos_embed.W_pos[p, POS[p]] = 1.0
        for c in range(N):
            model.unembed.W_U[OUT[c], c] = 1.0
    layer1_previous_token(model)
    layer2_operand_reader(model)
    addition_table(model, answer)
    return model.eval()


def wrong_on_doubles(a: int, b: int) -> int:
    """An addition table that is right except for n1 = n2, which it sends to 2a + 1."""
    return (a + b + (a == b)) % N

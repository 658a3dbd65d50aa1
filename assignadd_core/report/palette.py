"""The book's colours, in one place: a colour means the same thing in every figure of every chapter.

* Pools: one colour per query type (0-var blue, 1-var green, 2-var vermillion), the line style tells the pools of a
  type apart (train solid, add-restricted dotted, var-restricted dashed); an exact set takes its query type's colour.
* Parts of the circuit: the embedding W_E, layer 1's copy (previous-token) head, layer 2's lookup (the identity QK
  pattern), layer 2's OV move of the operand values to `=`, the Fourier addition MLP, the unembedding W_U.
* Roles: ours and the clean model in ink, the paper's numbers and windows in slate grey, baselines and what did not
  run in light greys, the variants of an ablation in a grey ramp, verdict words in their own colours.
* Identities (seeds, variables, arms of an experiment): a cycle that carries no meaning beyond "which one".

The categorical colours are Okabe and Ito's colour-blind-safe set and Paul Tol's muted set; every one is drawn on the
figures' white background (the book's dark mode leaves a figure's background white), so all read in both modes.
"""
from __future__ import annotations

from ..core.data import pool_spec

# ------------------------------------------------------------------ pools
QUERY_TYPE = {0: "#0072B2", 1: "#009E73", 2: "#D55E00"}  # variable operands per query: 0-var, 1-var, 2-var
POOL_DASH = {"train": "solid", "heldout": "dot", "forbidden": "dash"}  # by the pool's pairs, then its variables


def pool_style(name: str) -> dict:
    """Line colour, dash and width of an evaluation pool (data.POOLS), from its query type and what it holds out."""
    spec = pool_spec(name)
    restricted = "forbidden" in spec.variables
    dash = POOL_DASH["forbidden"] if restricted else POOL_DASH["heldout" if spec.pairs == "heldout" else "train"]
    both = spec.variables == "both_forbidden_pairs"  # the second 2-var var-restricted pool: a thinner line
    return {"color": QUERY_TYPE[spec.query], "dash": "longdash" if both else dash, "width": 1.4 if both else 2}


def pool_colour(name: str) -> str:
    """A pool's or an exact set's colour: its query type's ("0var_heldout" is 0-var, "2var_union" 2-var)."""
    return QUERY_TYPE[int(name[0])]


# ------------------------------------------------------------------ parts of the circuit
PARTS = {
    "embed": "#332288",  # W_E: the token embedding (indigo)
    "copy": "#E69F00",  # layer 1: the previous-token head that copies a variable's identity onto its value (orange)
    "lookup": "#CC79A7",  # layer 2 QK: the identity (associative-memory) pattern that finds the queried value (pink)
    "move": "#56B4E9",  # layer 2 OV: moves the operand values to `=` (sky blue)
    "mlp": "#999933",  # the Fourier-feature addition MLP (olive)
    "unembed": "#882255",  # W_U: the unembedding (wine)
}
# The progress measures by the part each one reads (measures.MEASURE_NAMES), with a dash each within a part.
MEASURE_PART = {"m1_addition_module": ("mlp", "solid"), "m2_l1_prev_token_qk": ("copy", "solid"),
                "m3_l2_var_identity_qk": ("lookup", "solid"), "m4_l1_eq_to_operands": ("copy", "dot"),
                "m5_l1_value_prev_token": ("copy", "dash"), "m6_l2_eq_to_values": ("move", "solid"),
                "m7_probe_var_identity": ("copy", "dashdot")}


def measure_style(name: str) -> dict:
    part, dash = MEASURE_PART[name]
    return {"color": PARTS[part], "dash": dash, "width": 2}


# ------------------------------------------------------------------ roles
INK = "#1f2328"  # ours, the clean model, a mean over seeds, a fit
PAPER = "#6e7781"  # the paper's numbers (dashed lines) and windows (bands)
GREY = "#8c959f"  # baselines, controls, what has not run
LIGHT = "#d0d7de"  # background categories (inactive neurons, unrelated pairs)
ABLATED = ("#57606a", "#8c959f", "#afb8c1", "#d0d7de")  # the variants of an ablation, beside the clean model (INK)
BAND_OPACITY = 0.18  # a shaded window (the paper's, a steering window)

VERDICT_COLORS = {"reproduced": "#1a7f37", "partly": "#9a6700", "not reproduced": "#cf222e",
                  "not yet run": "#6e7781", "finding": "#0969da", "inconclusive": "#8250df"}
# A chapter that checks a setting against the paper's (the task, the model), not a claim: its chip in the key results.
CHECK_COLORS = {"same as the paper": "#1a7f37", "differs from the paper": "#cf222e"}
# The crossed design's outcome of a cell: which of its two modes composed (chapter 4).
OUTCOME_COLORS = {"both modes compose": "#1a7f37", "only compiled composes": "#54aeff",
                  "only eager composes": "#d4a72c", "neither composes": "#cf222e"}

# The numerical modes of one seed's training (chapter 4): eager is the reference (ink), compiled and fp64 each have a
# colour of their own, and a single compiled stage takes compiled's colour with a dash of its own.
MODE_COLORS = {"eager": INK, "compiled": "#8250df", "fp64": "#bf8700"}
MODE_DASH = {"compiled_attention": "dot", "compiled_mlp": "dash", "compiled_unembed": "dashdot"}


def mode_style(mode: str) -> dict:
    """A numerical mode's line: its colour (a single compiled stage: compiled's) and dash."""
    return {"color": MODE_COLORS.get(mode, MODE_COLORS["compiled"]), "dash": MODE_DASH.get(mode, "solid")}


def pair_style(pair: str) -> dict:
    """The line of a distance between two modes ('compiled_vs_eager'): the colour of the mode that is not eager (of
    the first, when neither is), dotted."""
    modes = pair.split("_vs_")
    other = next((m for m in modes if m != "eager"), modes[0])
    return {"color": MODE_COLORS.get(other, MODE_COLORS["compiled"]), "dash": "dot" if "eager" in modes else "dash"}


# ------------------------------------------------------------------ identities and scales
IDENTITY = ("#1f2328", "#44AA99", "#AA4499", "#DDAA33", "#6e7781", "#CC6677", "#88CCEE", "#117733", "#A6761D",
            "#4B4B8F", "#99CC66", "#E7298A")  # ten seeds (42-51) never meet the last two, the closest to others


def identity(index: int) -> str:
    """The colour of the index-th seed, variable or arm of a figure (a cycle: it means only "which one")."""
    return IDENTITY[index % len(IDENTITY)]


DIVERGING = "RdBu_r"  # scores around 0 (QK, OV maps, pre-activations, gradients): red positive, blue negative
SEQUENTIAL = "Blues"  # shares from 0 up (attention)


def tint(colour: str, amount: float) -> str:
    """`colour` ("#rrggbb") mixed with white: amount 0 keeps it, 1 is white (a lighter shade of the same meaning)."""
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * amount):02x}" for c in rgb)

"""The named quantities of a checkpoint or a final model, each with a version: what `series` computes and caches.

A quantity maps (model, step) to a few named floats. Its settings (pool rows, seeds, twin kind) are fixed
here, not by a chapter's parameters, so a verdict read from a quantity cannot be moved by a profile. Change
what a quantity computes and you raise its `version`: every cached value of the old version is then
recomputed, never read. `logged` quantities are the ones the trainer writes into metrics.csv at every eval
step (`logged_row`); the rest are computed on demand by `series.series` and cached beside the run.

Where a new per-checkpoint number goes: a function in the analysis module of its topic (analysis/), and one
`Quantity` here that calls it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from ..measure import roles
from ..core.config import RunConfig
from ..core.data import EXACT_NAMES, POOL_NAMES, eval_pools
from ..core.evaluation import exact_accuracies, pool_accuracies
from ..core.model import AssignAddTransformer
from ..core.trainer import Logged
from ..measure.measures import MEASURE_NAMES, PROBE, all_measures, variable_qk_map
from .controls import mlp_input_cosines, relabel_patch, swap_heldout_accuracy
from .interventions import ablation_table
from . import addition, controls, fourier, generalization as gen
from .theory import STAT_COLUMNS, gradient_identity, update_white_contrast
from .numerics import compiled_gradient_differences, relative_distance
from .circuits import attention_patterns, eq_score_columns, eq_score_values, example_batch
from .generalization import SIDES, restricted_by_side, restricted_columns
from .generality import found_roles, heads_mask

CAUSAL_ROWS = 400  # sequences per pool in the causal checks (ablation, relabel patch) of a final model
TWIN_KIND, TWIN_SEED = "2var", 0  # C6's literal/variable twins


@dataclass(frozen=True)
class Quantity:
    name: str
    version: int
    columns: tuple[str, ...]
    # (model in eval mode, step) -> values; a pair: (model a, model b, a, b); across: (weights a, weights b), the
    # checkpoint files' tensors as saved (an fp64 run's weights stay fp64)
    compute: Callable[..., dict[str, float]]
    description: str
    logged: bool = False  # written by the trainer into metrics.csv at eval steps
    in_final: str | None = None  # the key under which the trainer records its final value in final.json
    # The columns of a run of a given config, where they depend on the task's size (`columns`: the paper's task).
    sized_columns: Callable[[RunConfig], tuple[str, ...]] | None = None
    pair: bool = False  # read between two checkpoints (series' steps are (from, to) pairs)
    needs_grad: bool = False  # computed with autograd
    across: bool = False  # read between two runs' weights at the same step (`series.across`)

    def columns_for(self, config: RunConfig) -> tuple[str, ...]:
        """The columns of this quantity for a run of `config`."""
        return self.columns if self.sized_columns is None else self.sized_columns(config)


def _pools(model, step):
    return pool_accuracies(model)


def _measures(model, step):
    values = all_measures(model, with_probe=False)
    return {name: values[name] for name in MEASURE_NAMES[:-1]}


def _probe(model, step):
    return {PROBE: all_measures(model, with_probe=True)[PROBE]}


def _exact(model, step):
    return exact_accuracies(model)


def _swap_control(model, step):
    out = swap_heldout_accuracy(model)
    return {k: float(out[k]) for k in ("swap_heldout", "swap_in_training", "n_swap_heldout", "n_swap_in_training")}


def _causal_pools(model) -> dict:
    return {name: batch[:CAUSAL_ROWS] for name, batch in eval_pools(model.config.task).items()}


def _value_ablation(model, step):
    """C4: layer 1's output mean-ablated at the prefix value positions only (sequences with a distractor)."""
    pools = _causal_pools(model)
    table = ablation_table(model, {k: pools[k] for k in ("0var_train", "1var_train")}, modes=(), wheres=("values",),
                           distractor_only=True)
    return {"1var_clean": float(table.loc["1var_train", "clean"]),
            "1var_ablated_at_values": float(table.loc["1var_train", "ablated at values"]),
            "0var_ablated_at_values": float(table.loc["0var_train", "ablated at values"])}


def _relabel(model, step):
    """C5: the relabel patch over 1-var and 2-var training sequences, both operands, weighted by rows."""
    pools = _causal_pools(model)
    parts = [relabel_patch(model, pools[pool], side) for pool in ("1var_train", "2var_train") for side in ("lhs", "rhs")]
    n = sum(p["n"] for p in parts)
    out = {"n": float(n)}
    for key in ("attention_follows_label", "answer_follows_label"):
        out[key] = sum(p[key] * p["n"] for p in parts if p["n"]) / n if n else math.nan
    return out


def _shared_addition(model, step):
    """C6: MLP-input cosines of literal/variable twins against their baselines, and the attention-output patch."""
    cosines = mlp_input_cosines(model, kind=TWIN_KIND, seed=TWIN_SEED)
    literal, variable = addition.twin_batches(model.config.task, TWIN_KIND, TWIN_SEED)
    report = addition.patch_report(model, literal, variable, seed=TWIN_SEED, hook=addition.attn_out_hook(model))
    return {"matched": cosines["matched"], "ceiling": cosines["ceiling (literal vs literal)"],
            "same_sum": cosines["same sum"], "one_shared_operand": cosines["one shared operand"],
            "unrelated": cosines["unrelated"], "patch_kept": float(report.loc["variable → literal", "same_argmax"])}


def _fourier(model, step):
    """C7: the embedding's spectrum and the single-frequency fits of the layer-2 neurons, with their null."""
    maps = fourier.neuron_preactivations(model, source="sequences")
    summary = fourier.fourier_summary(model, source="sequences", maps=maps)
    null = controls.fourier_null(model, source="sequences")
    power = fourier.embedding_power(model)
    return {"n_frequencies": float(fourier.n_frequencies(model.config.task.modulus)),
            "n_key_frequencies_70": float(len(controls.frequencies_for_share(power, 0.7))),
            "n_key_frequencies_factor": float(len(summary["embedding_key_frequencies"])),
            "share_above_09": float(summary["frac_active_above_0.9"]),
            "n_above_09": float(round(summary["frac_active_above_0.9"] * summary["n_active"])),
            "best_r2": float(summary["best_r2"]), "median_r2": float(null["median_r2"]),
            "null_q99": float(null["null_q99"]), "n_active": float(summary["n_active"])}


def _qk2_gradient(model, step):
    """C10: the negative gradient on layer 2's QK on the next training batches, seen on the variable copies."""
    out = gradient_identity(model, step)
    return {k: float(out[k]) for k in ("grad_contrast", "grad_diag_argmax", "qk2_contrast", "grad_white_contrast",
                                       "grad_fraction_in_subspace")}


THEORY_BATCHES = 4  # training batches (of 512) per gradient in the theory chapter's table and the C10 window


def _gradient_identity_columns(config: RunConfig) -> tuple[str, ...]:
    """The gradient's statistics (`theory.STAT_COLUMNS`), then the n_vars x n_vars cells of G."""
    n = config.task.n_vars
    return (*STAT_COLUMNS, *(f"G_{i}_{j}" for i in range(n) for j in range(n)))


def _gradient_identity(model, step):
    """C10: the projected negative gradient G on layer 2's QK (every cell) and its statistics, on THEORY_BATCHES."""
    out = gradient_identity(model, step, THEORY_BATCHES)
    g = out["G"]
    return {**{k: float(out[k]) for k in STAT_COLUMNS},
            **{f"G_{i}_{j}": float(g[i, j]) for i in range(g.shape[0]) for j in range(g.shape[1])}}


def _qk2_update(model, later, step, later_step):
    """C10: the whitened contrast of the update actually taken on layer 2's QK between two checkpoints."""
    return {"update_white_contrast": update_white_contrast(model, later)}


DIFFERENCE_BATCHES = 8  # successive training batches at each checkpoint of the compiled-vs-eager difference
DIFFERENCE_VALUES = ("relative_size", "cosine_with_gradient", "cosine_with_previous")
STEP_DIFFERENCE_COLUMNS = ("threads", *(f"{name}_{b}" for b in range(1, DIFFERENCE_BATCHES + 1)
                                         for name in DIFFERENCE_VALUES))


def _compiled_step_difference(model, step):
    """The mode study: compiled minus eager training gradient on the next DIFFERENCE_BATCHES batches, at the
    process's thread count (recorded: the compiled kernels round differently at another)."""
    rows = compiled_gradient_differences(model, step, DIFFERENCE_BATCHES)
    return {"threads": float(torch.get_num_threads()),
            **{f"{name}_{b}": row[name] for b, row in enumerate(rows, start=1) for name in DIFFERENCE_VALUES}}


def _weight_distance(weights, reference):
    return {"relative_distance": relative_distance(weights, reference)}


def _circuit_map_columns(config: RunConfig) -> tuple[str, ...]:
    """n_vars x n_vars cells of the variable QK map, then seq_len x seq_len cells of the copy head's pattern."""
    n_vars, n_pos = config.task.n_vars, config.task.seq_len
    return (*(f"qk_{i}_{j}" for i in range(n_vars) for j in range(n_vars)),
            *(f"l1_{q}_{k}" for q in range(n_pos) for k in range(n_pos)))


def _circuit_maps(model, step):
    """The two maps the circuits chapter watches across a jump: layer 2's variable QK map (measure 3's, 12 x 12 in
    the paper's task) and the layer-1 (copy head's) attention pattern on the chapter's 2-var example sequence
    (16 x 16), flattened."""
    qk = variable_qk_map(model)
    pattern = attention_patterns(model, example_batch(model.config.task)[3:4].tokens)[0, roles.copy_block(model)]
    return {**{f"qk_{i}_{j}": float(qk[i, j]) for i in range(qk.shape[0]) for j in range(qk.shape[1])},
            **{f"l1_{q}_{k}": float(pattern[q, k]) for q in range(pattern.shape[0]) for k in range(pattern.shape[1])}}


def _variable_side_columns(config: RunConfig) -> tuple[str, ...]:
    return tuple(f"{v} ({side})" for v in config.task.var_names for side in SIDES)


def _variable_side(model, step):
    """Accuracy on the 1-var var-restricted pool by variable and side (NaN where the pool has no such operand)."""
    table = gen.variable_side_accuracy(gen.evaluate_table(model, eval_pools(model.config.task)["1var_var_restricted"]))
    return {f"{v} ({side})": float(table.loc[v, side]) if v in table.index else math.nan
            for v in model.config.task.var_names for side in gen.SIDES}


def _restricted_by_side_columns(config: RunConfig) -> tuple[str, ...]:
    return restricted_columns(config.task)


def _restricted_by_side(model, step):
    """The var-restricted pools (all their rows) by forbidden (variable, side): accuracy, n and errors."""
    return restricted_by_side(model)


def _eq_variable_score_columns(config: RunConfig) -> tuple[str, ...]:
    return eq_score_columns(config.task)


def _eq_variable_scores(model, step):
    """The layer-1 score from `=` to each variable at the operand positions, and its four bilinear parts."""
    return eq_score_values(model)


def _found_roles(model, step):
    """G2's roles of a model (the search over heads and blocks where a shape has several), its measures there (measure
    6 on the union of the lookup heads), the lookup heads as a mask (`analysis.generality.mask_heads`) and the best
    single head's measure 6."""
    found = found_roles(model)
    return {"copy_block": float(found["copy"][0]), "copy_head": float(found["copy"][1]),
            "lookup_block": float(found["lookup"][0]), "lookup_head": float(found["lookup"][1]),
            "lookup_heads": heads_mask(found["lookup_heads"]), "searched": float(found["searched"]),
            **{name: found[name] for name in MEASURE_NAMES}, "m6_single_head": found["m6_single_head"]}


QUANTITIES: dict[str, Quantity] = {q.name: q for q in (
    Quantity("pools", 1, POOL_NAMES, _pools, "accuracy on the nine evaluation pools", logged=True),
    Quantity("measures", 1, MEASURE_NAMES[:-1], _measures, "progress measures 1-6", logged=True),
    Quantity("probe", 1, (PROBE,), _probe, "progress measure 7, the linear probe", logged=True),
    Quantity("exact", 1, EXACT_NAMES, _exact, "the two exhaustive exact sets", in_final="exact"),
    Quantity("swap_control", 1, ("swap_heldout", "swap_in_training", "n_swap_heldout", "n_swap_in_training"),
             _swap_control, "0-var held-out exact accuracy by whether the swapped pair was trained on (C2)"),
    Quantity("value_ablation", 1, ("1var_clean", "1var_ablated_at_values", "0var_ablated_at_values"),
             _value_ablation, "layer 1 mean-ablated at value positions only (C4)"),
    Quantity("relabel", 1, ("attention_follows_label", "answer_follows_label", "n"), _relabel,
             "the relabel patch: does layer 2 follow the copied label (C5)"),
    Quantity("shared_addition", 1, ("matched", "ceiling", "same_sum", "one_shared_operand", "unrelated",
                                    "patch_kept"), _shared_addition, "one addition MLP for literals and variables (C6)"),
    Quantity("fourier", 1, ("n_frequencies", "n_key_frequencies_70", "n_key_frequencies_factor", "share_above_09", "n_above_09",
                            "best_r2", "median_r2", "null_q99", "n_active"), _fourier,
             "Fourier features of the embedding and the layer-2 neurons, with the null (C7)"),
    Quantity("circuit_maps", 1, _circuit_map_columns(RunConfig()), _circuit_maps,
             "the variable QK map of layer 2 and layer 1's pattern on the 2-var example",
             sized_columns=_circuit_map_columns),
    Quantity("variable_side", 1, _variable_side_columns(RunConfig()), _variable_side,
             "1-var var-restricted accuracy by variable and side", sized_columns=_variable_side_columns),
    Quantity("restricted_by_side", 1, _restricted_by_side_columns(RunConfig()), _restricted_by_side,
             "the var-restricted pools by forbidden operand (variable, side)",
             sized_columns=_restricted_by_side_columns),
    Quantity("eq_variable_scores", 1, _eq_variable_score_columns(RunConfig()), _eq_variable_scores,
             "layer 1's score from `=` to each variable at the operand positions, and its parts",
             sized_columns=_eq_variable_score_columns),
    # version 2 (2026-12-04): measure 6 on the union of the lookup heads, the heads' mask and the best single head's
    Quantity("found_roles", 2, ("copy_block", "copy_head", "lookup_block", "lookup_head", "lookup_heads", "searched",
                                *MEASURE_NAMES, "m6_single_head"),
             _found_roles, "which heads copy and look up (searched where a shape has several) and the measures there,"
             " measure 6 on the union of the lookup heads (G2)"),
    Quantity("qk2_gradient", 1, ("grad_contrast", "grad_diag_argmax", "qk2_contrast", "grad_white_contrast",
                                 "grad_fraction_in_subspace"), _qk2_gradient,
             "the negative gradient on layer 2's QK, on the variable copies (C10)", needs_grad=True),
    Quantity("gradient_identity", 1, _gradient_identity_columns(RunConfig()), _gradient_identity,
             f"the projected negative gradient G on layer 2's QK, every cell, on {THEORY_BATCHES} batches (C10)",
             sized_columns=_gradient_identity_columns, needs_grad=True),
    Quantity("qk2_update", 1, ("update_white_contrast",), _qk2_update,
             "the whitened contrast of layer 2's QK update from one checkpoint to another (C10)", pair=True),
    Quantity("compiled_step_difference", 1, STEP_DIFFERENCE_COLUMNS, _compiled_step_difference,
             f"compiled minus eager training gradient on the next {DIFFERENCE_BATCHES} batches (the mode study)",
             needs_grad=True),
    Quantity("weight_distance", 1, ("relative_distance",), _weight_distance,
             "the relative distance of a run's weights from another run's at the same step (the mode study)",
             across=True),
)}
LOGGED_VERSIONS = {name: q.version for name, q in QUANTITIES.items() if q.logged}


def get_quantity(name: str) -> Quantity:
    if name not in QUANTITIES:
        raise KeyError(f"unknown quantity {name!r}; quantities are {', '.join(QUANTITIES)}")
    return QUANTITIES[name]


@torch.no_grad()
def logged_row(model: AssignAddTransformer, step: int, with_probe: bool) -> dict[str, float]:
    """What the trainer writes at an eval step: the logged quantities (the probe only when `with_probe`)."""
    row = {**QUANTITIES["pools"].compute(model, step), **QUANTITIES["measures"].compute(model, step)}
    row.update(QUANTITIES["probe"].compute(model, step) if with_probe else {PROBE: math.nan})
    return row


# What this project's runs log (`core.trainer`): the pools and measures as metrics.csv's columns, 1-var and 2-var train
# accuracy on the progress bar.
LOGGED = Logged((*POOL_NAMES, *MEASURE_NAMES), LOGGED_VERSIONS, logged_row, shown=(("v1", "1var_train"),
                                                                                ("v2", "2var_train")))

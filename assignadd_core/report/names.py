"""Display names: the one table that turns the code's keys (pool, measure, exact-set, quantity and phase names)
into the words readers see in figures and tables. Figures (`plots`) and chapter tables (`readable`) use it."""
from __future__ import annotations

import re

import pandas as pd

from ..core.data import POOLS

POOL_LABELS = {spec.name: spec.label for spec in POOLS}
MEASURE_LABELS = {
    "m1_addition_module": "1 addition module alone", "m2_l1_prev_token_qk": "2 layer-1 previous-token QK",
    "m3_l2_var_identity_qk": "3 layer-2 variable identity QK", "m4_l1_eq_to_operands": "4 layer-1 = → operands",
    "m5_l1_value_prev_token": "5 layer-1 value → previous token", "m6_l2_eq_to_values": "6 layer-2 = → values",
    "m7_probe_var_identity": "7 probe: variable identity",
}
EXACT_LABELS = {"0var_heldout": "exact: 0-var held-out", "2var_union": "exact: 2-var union"}
OTHER_LABELS = {
    # per-seed deciding numbers (per_seed.numbers) and quantity columns
    "m2": "measure 2", "m3": "measure 3", "m5": "measure 5", "m6": "measure 6",
    "1var_clean": "1-var train (distractor), clean", "1var_ablated_at_values": "1-var train, values ablated",
    "0var_ablated_at_values": "0-var train, values ablated",
    "attention_follows_label": "relabel: attention follows", "answer_follows_label": "relabel: answer follows",
    "answer_original": "relabel: answer unchanged",
    "matched": "cosine: matched twin", "ceiling": "cosine: literal vs literal", "same_sum": "cosine: same sum",
    "one_shared_operand": "cosine: one shared operand", "unrelated": "cosine: unrelated", "patch_kept": "patch: answer kept",
    "n_frequencies": "frequencies", "n_key_frequencies_70": "frequencies holding 70 %",
    "n_key_frequencies_factor": "key frequencies (spectrum)", "share_above_09": "share of active neurons R² > 0.9",
    "n_above_09": "active neurons R² > 0.9", "best_r2": "best neuron R²", "median_r2": "median R² (active)",
    "null_q99": "null: 99th percentile", "n_active": "active neurons",
    "swap_heldout": "swap held out too", "swap_in_training": "swap in training",
    "n_swap_heldout": "pairs (swap held out)", "n_swap_in_training": "pairs (swap in training)",
    # activation patching (chapter 7): the receiver's answer after the patch, and where it was patched
    "clean_accuracy": "accuracy unpatched", "same_argmax": "answer unchanged", "correct": "correct after patch",
    "follows_donor": "donor's sum", "donor_argmax": "donor's answer", "rel_logit_change": "relative logit change",
    # flip rates (chapter 4)
    "interval_runs": "95 % interval (runs)", "interval_cells": "95 % interval (cells resampled)",
    "cells_flipped": "cells with a flip", "cells_with_a_flip": "cells with a flip",
    # phases
    "addition": "addition", "composition": "composed", "jump": "jump", "refinement_start": "final rise starts",
    "refinement": "final rise (halfway)", "refinement_end": "final rise ends", "addition_first": "addition first",
    # sweeps
    "train_fraction": "training fraction f", "two_var_rate": "2-var rate r", "1var_train": POOL_LABELS["1var_train"],
}
# The rescue arms of chapter 4 (experiments.rescue.ARMS): what each does to the stuck run, in words
ARM_LABELS = {"continue": "continue unchanged", "fewer_2var_queries": "fewer 2-var queries for a while",
              "higher_lr": "higher learning rate for a while", "lower_lr": "lower learning rate",
              "redraw_layer1_qk": "layer-1 QK re-drawn", "redraw_layer2_qk": "layer-2 QK re-drawn",
              "other_data_seed": "another data order"}
# The measures by their role, for a sentence that names one beside its number ("measure 5, layer-1 copying")
MEASURE_ROLES = {"m1_addition_module": "the addition module", "m2_l1_prev_token_qk": "previous-token pattern",
                 "m3_l2_var_identity_qk": "identity pattern", "m4_l1_eq_to_operands": "= reads the operands",
                 "m5_l1_value_prev_token": "layer-1 copying", "m6_l2_eq_to_values": "= attends to the values",
                 "m7_probe_var_identity": "variable probe"}  # as the glossary names them (book/glossary.md)
LABELS = {**POOL_LABELS, **MEASURE_LABELS, **EXACT_LABELS, **OTHER_LABELS, **ARM_LABELS}


# Hook names where patching happens (chapter 7), read by their block as the paper counts layers (1-based), whatever
# block plays the role: "blocks.1.hook_resid_mid" is the "layer-2 MLP input".
_HOOK_LABELS = {"hook_resid_mid": "MLP input", "hook_attn_out": "attention output"}
_HOOK_PATTERN = re.compile(rf"(?<![\w.])blocks\.(\d+)\.({'|'.join(_HOOK_LABELS)})(?![\w])")


def _hook_label(match: re.Match) -> str:
    return f"layer-{int(match.group(1)) + 1} {_HOOK_LABELS[match.group(2)]}"


def label(key: str) -> str:
    """The display name of a key (the key itself when it has none)."""
    hook = _HOOK_PATTERN.fullmatch(key) if isinstance(key, str) and key not in LABELS else None
    return _hook_label(hook) if hook else LABELS.get(key, key)


# Keys a reader would see as code (an underscore or a dot in them), longest first so that "2var_var_restricted_1"
# is replaced before a key it contains.
_CODE_KEYS = sorted((k for k in LABELS if "_" in k or "." in k), key=len, reverse=True)
_KEY_PATTERN = re.compile("|".join(rf"(?<![\w.]){re.escape(k)}(?![\w])" for k in _CODE_KEYS))


def measure_named(key: str) -> str:
    """A progress measure by its number and role, as a sentence names it: 'measure 5, layer-1 copying'; another key's
    display name."""
    if key in MEASURE_ROLES:
        return f"measure {MEASURE_LABELS[key].split()[0]}, {MEASURE_ROLES[key]}"
    return label(key)


def display_text(text: str) -> str:
    """`text` with every code key in it (pool, measure, hook, quantity names) replaced by its display name."""
    if not isinstance(text, str):
        return text
    return _HOOK_PATTERN.sub(_hook_label, _KEY_PATTERN.sub(lambda m: LABELS[m.group(0)], text))


def readable(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with display names for its column names, for index values that are keys and for the index's name
    (a table indexed by `two_var_rate` shows its header as the rate's name)."""
    by_name = lambda key: display_text(key) if isinstance(key, str) else key  # noqa: E731  (numbers stay as they are)
    shown = frame.rename(columns=by_name, index=by_name)
    shown.index = shown.index.set_names([by_name(name) for name in shown.index.names])
    return shown

"""Each final-model claim's rule applied to one model, from its quantities: a run's final model (through `series`,
cached beside the run) or any model in memory, such as the authors' released weights (computed directly).

`seed_claims(claim, runs)` gives the per-seed verdicts and their deciding numbers, the table every claim chapter
shows; `model_claim(claim, model)` the same rule on one model (the appendix's positive control, a null model).
"""
from __future__ import annotations

import pandas as pd
import torch

from ..rules import verdicts
from ..rules.stats import bootstrap_mean_interval
from ..analysis.phases import detect_phases
from ..core.data import VAR_RESTRICTED
from ..analysis.quantities import QUANTITIES
from ..core.run_folder import Run
from ..analysis.series import cached_steps, final_values, series


def values_of(source, quantity: str) -> dict[str, float]:
    """The quantity of a run's final model (cached), or of a model in memory (computed now)."""
    if isinstance(source, Run):
        return final_values(source, quantity)
    with torch.no_grad():
        return {k: float(v) for k, v in QUANTITIES[quantity].compute(source.eval(), 0).items()}


def numbers(claim: str, source) -> dict[str, float]:
    """The deciding numbers of a final-model claim (C2-C7) for one model."""
    if claim == "C2":
        exact, swap = values_of(source, "exact"), values_of(source, "swap_control")
        return {"0var_heldout": exact["0var_heldout"], "swap_heldout": swap["swap_heldout"]}
    if claim == "C3":
        pools = values_of(source, "pools")
        return {name: pools[name] for name in VAR_RESTRICTED}
    measures = values_of(source, "measures")
    if claim == "C4":
        ablation = values_of(source, "value_ablation")
        return {"m2": measures["m2_l1_prev_token_qk"], "m5": measures["m5_l1_value_prev_token"],
                "1var_clean": ablation["1var_clean"], "1var_ablated_at_values": ablation["1var_ablated_at_values"],
                "0var_ablated_at_values": ablation["0var_ablated_at_values"]}
    if claim == "C5":
        relabel = values_of(source, "relabel")
        return {"m3": measures["m3_l2_var_identity_qk"], "m6": measures["m6_l2_eq_to_values"],
                "attention_follows_label": relabel["attention_follows_label"],
                "answer_follows_label": relabel["answer_follows_label"]}
    if claim == "C6":
        return values_of(source, "shared_addition")
    if claim == "C7":
        return values_of(source, "fourier")
    raise KeyError(f"{claim} is not a claim about one final model (C2-C7)")


def rule(claim: str, n: dict[str, float]) -> verdicts.Verdict:
    """The claim's per-seed rule on its deciding numbers."""
    if claim == "C2":
        return verdicts.c2_seed(n["0var_heldout"], n["swap_heldout"])
    if claim == "C3":
        return verdicts.c3_seed({k: n[k] for k in VAR_RESTRICTED})
    if claim == "C4":
        return verdicts.c4_previous_token(n["m2"], n["m5"], n["1var_ablated_at_values"], n["0var_ablated_at_values"],
                                          n["1var_clean"])
    if claim == "C5":
        return verdicts.c5_identity(n["m3"], n["m6"], n["attention_follows_label"], n["answer_follows_label"])
    if claim == "C6":
        baselines = {"same sum": n["same_sum"], "one shared operand": n["one_shared_operand"],
                     "unrelated": n["unrelated"]}
        return verdicts.c6_shared_addition(n["matched"], n["ceiling"], baselines, n["patch_kept"])
    if claim == "C7":
        return verdicts.c7_fourier(int(n["n_key_frequencies_70"]), int(n["n_above_09"]), n["median_r2"],
                                   n["null_q99"], n["best_r2"], int(n["n_frequencies"]))
    raise KeyError(f"{claim} is not a claim about one final model (C2-C7)")


def c7_before_2026_12(n: dict[str, float]) -> verdicts.Verdict:
    """C7's earlier rule on the same numbers (printed beside the new verdict)."""
    return verdicts.c7_fourier_before_2026_12(int(n["n_key_frequencies_70"]), n["share_above_09"], n["median_r2"],
                                              n["null_q99"])


def model_claim(claim: str, source) -> verdicts.Verdict:
    return rule(claim, numbers(claim, source))


def seed_claims(claim: str, runs: dict[str, Run]) -> tuple[dict[str, verdicts.Verdict], pd.DataFrame]:
    """Per run: the claim's verdict, and a table of the deciding numbers (one row per run)."""
    table = {name: numbers(claim, run) for name, run in runs.items()}
    return {name: rule(claim, n) for name, n in table.items()}, pd.DataFrame.from_dict(table, orient="index")


def composed_runs(runs: dict[str, Run]) -> dict[str, Run]:
    """The runs whose final 1-var train accuracy says they learned variable assignment."""
    return {name: run for name, run in runs.items() if verdicts.composed(run.final()["pools"]["1var_train"])}


# ---------------------------------------------------------------------------- C10 over seeds, from dense checkpoints
def c10_seed(run, every: int = 100) -> dict:
    """One seed's C10 gradient numbers from a run with dense checkpoints (`verdicts.c10_gradient`, C10's first rule):
    the premise window (measures 5 and 4 high, measure 3 low, before the run composes), and the mean whitened
    contrast of the negative gradient over the checkpoints where layer 1 copies (measure 5 high) before it
    composes (to the run's end for a run that never does), read on the `every`-step grid plus every window
    checkpoint. The gradients come from `series(run, "qk2_gradient", ...)`, computed once and cached."""
    metrics = run.metrics().sort_values("step")
    composition = detect_phases(metrics)["composition"]
    end = composition if composition is not None else int(metrics["step"].max())
    m = metrics.set_index("step").loc[:end]
    copying = m.index[m["m5_l1_value_prev_token"] >= verdicts.C10_COPY]
    window = m.index[(m["m5_l1_value_prev_token"] >= verdicts.C10_COPY) & (m["m4_l1_eq_to_operands"] >= verdicts.C10_EQ)
                     & (m["m3_l2_var_identity_qk"] < verdicts.C10_IDENTITY_LOW)]
    read = sorted({int(s) for s in copying if s % every == 1} | {int(s) for s in window})
    # a step cached for another version or config counts: series then fails on it rather than the reading skip it
    available = set(run.checkpoint_steps()) | set(cached_steps(run, "qk2_gradient", current=False))
    read = [s for s in read if s in available]
    contrast = series(run, "qk2_gradient", read)["grad_white_contrast"] if read else None
    grid = [s for s in read if s % every == 1]
    return {"composed": composition is not None, "composition": composition,
            "window_n": int(len(window)),
            "window_steps": (int(window.min()), int(window.max())) if len(window) else None,
            "copy_step": int(copying.min()) if len(copying) else None, "contrast_n": len(grid),
            "mean_contrast": float(contrast.loc[grid].mean()) if grid else float("nan"),
            "window_contrast": float(contrast.loc[[int(s) for s in window if int(s) in read]].mean())
            if len(window) and contrast is not None else float("nan"),
            "share_positive": float((contrast.loc[grid] > 0).mean()) if grid else float("nan")}


def c10_over_seeds(per_seed: dict[str, dict]) -> dict:
    """Bootstrap intervals over seeds of the per-seed mean contrast, for the composed seeds and for the control."""
    out = {}
    for group, flag in (("composed", True), ("control", False)):
        values = [p["mean_contrast"] for p in per_seed.values()
                  if p["composed"] == flag and p["mean_contrast"] == p["mean_contrast"]]  # NaN: none measured
        out[group] = bootstrap_mean_interval(values) if len(values) >= 2 else None
        out[f"{group}_n"] = len(values)
    return out

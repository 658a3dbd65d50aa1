"""The readings of the circuits chapter (*Circuits: a previous-token head feeding an associative memory*), one function
per section, each returning the numbers and tables the chapter shows and writes its sentences from: layer 1's
previous-token head, layer 2's identity map, the attention patterns on examples, the circuit across the jump and the
refinement, the causal checks (ablation, patching, relabelling) and where a seed's measure 3 departs from the
mechanism (its dense re-run)."""
from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import torch

from ..analysis import circuits, controls, diagnostics, interventions
from ..analysis.series import series
from ..core.data import QUERY_TYPE_NAMES, Batch
from ..core.run_folder import DEFAULT_ROOT, Run, run_path
from ..rules import verdicts
from ..rules.study import current
from .names import POOL_LABELS

PAPER_EXAMPLE = "PAD PAD a 40 PAD j 18 PAD PAD PAD k 9 + a 27 ="  # the paper's own example; `a` holds 40


def layer1(model, final: Mapping) -> dict:
    """Layer 1's positional map over the prefix and the query positions where the previous one wins (measure 2),
    beside measures 5 and 7 of the final model (`final`: measures.all_measures)."""
    pos_map = circuits.positional_qk_map(model)
    won = circuits.previous_token_rows(pos_map)
    return {"map": pos_map, "won": int(won.sum()), "positions": len(won), "m2": float(won.float().mean()),
            "m5": final["m5_l1_value_prev_token"], "m7": final["m7_probe_var_identity"]}


def layer2(model, var_names, final: Mapping) -> dict:
    """Layer 2's map between the variable copies: the rows that peak on the diagonal (measure 3), those that do not,
    the diagonal contrast, and measure 6."""
    var_map = circuits.variable_qk_map(model)
    rows = circuits.identity_rows(var_map)
    return {"map": var_map, "rows": int(rows.sum()), "n": len(rows), "m3": float(rows.float().mean()),
            "off": [var_names[i] for i in torch.nonzero(~rows).flatten().tolist()],
            "contrast": float(circuits.diagonal_contrast(var_map)), "m6": final["m6_l2_eq_to_values"]}


def examples(model, task, vocab) -> dict:
    """The first sequence of each query type with both layers' attention and the model's answers, and the paper's own
    example (None in a task without its tokens)."""
    batch = circuits.example_batch(task)
    predicted = interventions.predict(model, batch.tokens)
    out = {"batch": batch, "patterns": circuits.attention_patterns(model, batch.tokens), "predicted": predicted,
           "labels": [circuits.token_labels(task, t) for t in batch.tokens],
           "right": int((predicted == batch.answers).sum()), "paper": None}
    if all(word in vocab.ids for word in PAPER_EXAMPLE.split()):
        tokens = vocab.encode(PAPER_EXAMPLE)[None]
        out["paper"] = {"tokens": tokens, "answer": (40 + 27) % task.modulus,
                        "model": int(interventions.predict(model, tokens)[0]),
                        "patterns": circuits.attention_patterns(model, tokens),
                        "labels": [circuits.token_labels(task, tokens[0])]}
    return out


def around_jump(run, phases: Mapping, task) -> dict:
    """The kept checkpoints on either side of the detected jump (`before`, `after`), the pools and measures there,
    and the circuit's maps (layer 1's attention on the 2-var example, layer 2's variable map) with the map's identity
    rows and diagonal contrast; `maps` is empty when the run has no checkpoint on both sides."""
    jump, steps = phases["jump"], run.checkpoint_steps()
    before = max((s for s in steps if jump is not None and s < jump), default=None)
    after = min((s for s in steps if jump is not None and s >= jump), default=None)
    maps = {s: circuits.circuit_maps_of(row, task)
            for s, row in series(run, "circuit_maps", [s for s in (before, after) if s is not None]).iterrows()}
    at = run.metrics().set_index("step")
    table = pd.DataFrame({s: {"1-var train": at.loc[s, "1var_train"], "2-var train": at.loc[s, "2var_train"],
                              "measure 3": at.loc[s, "m3_l2_var_identity_qk"],
                              "measure 5": at.loc[s, "m5_l1_value_prev_token"],
                              "identity rows": float(circuits.identity_rows(m["qk"]).float().mean()),
                              "diagonal contrast": float(circuits.diagonal_contrast(m["qk"]))}
                          for s, m in maps.items()}).T.rename_axis("step") if len(maps) == 2 else None
    return {"jump": jump, "before": before, "after": after, "maps": maps if len(maps) == 2 else {}, "table": table}


def refinement(run, phases: Mapping, task, split) -> dict:
    """Layer 1's score from `=` to each variable at the operand positions on every kept checkpoint from the jump on
    (and the final weights): the scores, the table of the restricted (variable, side) cells against the trained
    variables' mean, the restricted-minus-trained gap of the score and of each of its four parts, and the detected
    window of the final rise (None when none)."""
    steps, jump = run.checkpoint_steps(), phases["jump"]
    last = int(run.metrics()["step"].max())
    kept = [s for s in steps if (jump is None or s >= jump) and s != last]
    found = series(run, "eq_variable_scores", [*kept, "final"])  # the final weights close the series
    window_steps = [int(s) for s in found.index]
    tables = [circuits.eq_score_tables(row, task) for _, row in found.iterrows()]
    scores = [t["score"] for t in tables]
    new_left, new_right = split.left_forbidden_vars.tolist(), split.right_forbidden_vars.tolist()
    names = list(task.var_names)
    trained_left = [v for v in range(task.n_vars) if v not in new_left]
    trained_right = [v for v in range(task.n_vars) if v not in new_right]
    failing = pd.DataFrame([{**{f"{names[v]} on the left": float(t[v, 0]) for v in new_left},
                             "trained on the left (mean)": float(t[trained_left, 0].mean()),
                             **{f"{names[v]} on the right": float(t[v, 1]) for v in new_right},
                             "trained on the right (mean)": float(t[trained_right, 1].mean())}
                            for t in scores], index=pd.Index(window_steps, name="step"))
    gaps = {name: [circuits.restricted_minus_trained(t[name], split) for t in tables]
            for name in diagnostics.DECOMPOSITION_PARTS}
    return {"steps": window_steps, "scores": scores, "failing": failing, "gaps": gaps,
            "score_gap": [circuits.restricted_minus_trained(t, split) for t in (scores[0], scores[-1])] if scores else [],
            "window": (phases["refinement_start"], phases["refinement_end"]) if phases["refinement_end"] else None,
            "new_left": [names[v] for v in new_left], "new_right": [names[v] for v in new_right]}


def ablation(model, pools: Mapping) -> dict:
    """Layer 1's output zero- and mean-ablated on every pool (with and without a distractor assignment): the table,
    the 0-var pools' and the variable pools' accuracies, the share of 2-var training sequences without a distractor,
    and whether the variable queries break (below C4's level on the sequences with a distractor) while addition stays."""
    table = interventions.ablation_table(model, pools, by_distractor=True)
    zero_var = table.index.str.startswith("0var")
    ablated = table[["zero-ablated", "mean-ablated"]]
    with_distractor = table.loc[~zero_var, ["zero-ablated, with distractor", "mean-ablated, with distractor"]]
    return {"table": table, "addition": ablated[zero_var].stack(), "addition_clean": table.loc[zero_var, "clean"],
            "variables": ablated[~zero_var].stack(), "variables_clean": table.loc[~zero_var, "clean"],
            "with_distractor": with_distractor.stack(),
            "without_distractor": 1 - table.loc["2var_train", "share with distractor"],
            "broken": bool(with_distractor.max().max() < verdicts.LOOKUP_BROKEN),
            "kept": bool(ablated[zero_var].min().min() >= verdicts.ADDITION_KEPT)}


def position_ablation(model, pools: Mapping) -> pd.DataFrame:
    """Layer 1 mean-ablated at the prefix value positions only, at `=` only and everywhere, on the sequences with a
    distractor of four pools."""
    return interventions.ablation_table(
        model, {k: pools[k] for k in ("0var_train", "1var_train", "2var_train", "1var_var_restricted")},
        modes=(), wheres=("values", "eq", "all"), distractor_only=True)


def patching(model, pools: Mapping) -> dict:
    """Value patching and attention redirection on either operand, per query type and var-restricted pool: the table,
    the shares that follow (for the figure) and their ranges."""
    train = Batch.cat([pools["0var_train"], pools["1var_train"], pools["2var_train"]])
    by_pool = {QUERY_TYPE_NAMES[t]: train[train.query_type == t] for t in range(len(QUERY_TYPE_NAMES))}
    by_pool |= {POOL_LABELS[k]: pools[k] for k in ("1var_var_restricted", "2var_var_restricted_1",
                                                   "2var_var_restricted_2")}
    table = pd.concat({side: interventions.patching_table(model, by_pool, side) for side in ("lhs", "rhs")},
                      names=["operand"])
    follow = table[["value patch: follows patch", "redirect: follows distractor"]].rename(
        columns={"value patch: follows patch": "value patch", "redirect: follows distractor": "attention redirect"})
    follow.index = [f"{p} ({side})" for side, p in follow.index]
    return {"table": table, "follow": follow, "value": table["value patch: follows patch"].dropna(),
            "redirect": table.loc[table["redirect: n"] > 0, "redirect: follows distractor"]}


def relabel(model, pools: Mapping) -> dict:
    """The relabel patch on the 1-var and 2-var training pools, either operand: the table and its shares over every
    row, weighted by their sequences (attention follows the label, the answer does, the answer stays the original)."""
    table = pd.DataFrame({f"{pool} ({side})": controls.relabel_patch(model, pools[pool], side)
                          for pool in ("1var_train", "2var_train") for side in ("lhs", "rhs")}).T
    table = table[table["n"] > 0]
    weights = table["n"] / table["n"].sum()
    return {"table": table, "n": int(table["n"].sum()),
            **{k: float((table[c] * weights).sum()) for k, c in (("attention", "attention_follows_label"),
                                                                  ("answer", "answer_follows_label"),
                                                                  ("kept", "answer_original"))}}


def departure(main_run: str) -> dict | None:
    """Where a composed seed's measure 3 departs from the mechanism (the study profile's `dense_followed` seed): in its
    committed run, the step measure 3 peaks, the step it falls to 0 after that and its highest after; its dense re-run
    (every few steps, the seed's own weights) beside it: the diagonal contrast and the relabel patch at every 400th
    step from 3,001, and how many of the evaluated steps' pool accuracies equal the committed run's. None when the
    dense re-run is not in this runs folder or `main_run` is not the study's main run."""
    runs = current()["runs"]
    followed = runs["dense_followed"]
    dense, later = (Run(run_path(followed[k], DEFAULT_ROOT / "dense")) for k in ("run", "continued"))
    if not later.final_path.is_file() or main_run != runs["main"]["name"]:
        return None
    metrics = later.metrics().set_index("step")
    look = [s for s in metrics.index if s % 400 == 201 and s >= 3001]
    parts = [(dense, [s for s in look if s <= dense.config.train.steps]),
             (later, [s for s in look if s > dense.config.train.steps])]
    maps = pd.concat([series(run, "qk2_gradient", steps) for run, steps in parts if steps])
    follows = pd.concat([series(run, "relabel", steps) for run, steps in parts if steps])
    table = pd.DataFrame({"1-var train": metrics.loc[look, "1var_train"],
                          "measure 3": metrics.loc[look, "m3_l2_var_identity_qk"],
                          "diagonal contrast": maps["qk2_contrast"],
                          "relabel: attention follows": follows["attention_follows_label"],
                          "relabel: answer follows": follows["answer_follows_label"]})
    end = later.config.train.steps
    committed = Run(run_path(followed["run"])).metrics().set_index("step")
    m3 = committed.loc[:end, "m3_l2_var_identity_qk"]
    peak = int(m3.idxmax())  # the first step at its highest, then the first step it is back at 0
    zero = m3.index[(m3 == 0) & (m3.index > peak)]
    out = {"run": followed["run"], "table": table, "end": end, "peak": peak, "peak_m3": float(m3.loc[peak]),
           "fall": int(zero[0]) if len(zero) else None}
    if out["fall"] is None:
        return out
    low = committed.loc[out["fall"]:end]
    after = table.loc[table.index >= out["fall"]]
    common = committed.index.intersection(metrics.index)
    pools = [c for c in committed.columns if c.endswith("_train") or "restricted" in c]
    out.update(low=low, after=after, common=len(common),
               same=int((committed.loc[common, pools] - metrics.loc[common, pools]).abs().max(axis=1).le(1e-9).sum()),
               held=bool(after["diagonal contrast"].min() > 0
                         and after["relabel: attention follows"].min() >= verdicts.RELABEL_LEVEL))
    return out

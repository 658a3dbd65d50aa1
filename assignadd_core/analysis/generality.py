"""The generality chapter's readings: which head plays each role in a shape with several candidates (G2), and the
paired 12- against 24-variable runs of the coverage question (G5).

Roles are found on the final model, by the rule stated in `verdicts.RULES["G2"]`: the copy head is the (block, head)
with the highest measure 2 among the blocks before the last, the lookup head the (block, head) after the copy's
block, up to the MLP's, with the highest measure 6 given that copy head. A shape with one candidate for each (the
paper's 2 layers of 1 head) keeps its declared roles.
"""
from __future__ import annotations

from ..config import RunConfig
from ..measures import all_measures
from ..model import AssignAddTransformer


def with_roles(model: AssignAddTransformer, copy: tuple[int, int], lookup: tuple[int, int]) -> AssignAddTransformer:
    """The same weights, read with the copy role at (block, head) `copy` and the lookup role at `lookup`."""
    config = model.config.replace(**{"model.copy_block": copy[0], "model.copy_head": copy[1],
                                     "model.lookup_block": lookup[0], "model.lookup_head": lookup[1]})
    twin = AssignAddTransformer(config).to(model.W_E.device)
    twin.load_state_dict(model.state_dict())
    return twin.eval()


def candidates(config: RunConfig) -> tuple[list[tuple[int, int]], dict[tuple[int, int], list[tuple[int, int]]]]:
    """(copy candidates, lookup candidates of each copy candidate) as (block, head) pairs."""
    m = config.model
    mlp = m.role_block("mlp")
    copies = [(b, h) for b in range(m.n_layers - 1) for h in range(m.n_heads)]
    lookups = {copy: [(b, h) for b in range(copy[0] + 1, (mlp if mlp is not None else m.n_layers - 1) + 1)
                      for h in range(m.n_heads)] for copy in copies}
    return copies, lookups


def found_roles(model: AssignAddTransformer) -> dict:
    """G2's roles of a final model and its measures read there: {"copy": (block, head), "lookup": (block, head),
    "searched": whether there was more than one candidate, and every measure of MEASURE_NAMES}."""
    copies, lookups = candidates(model.config)
    m = model.config.model
    declared = ((m.role_block("copy"), m.role_head("copy")), (m.role_block("lookup"), m.role_head("lookup")))
    if len(copies) == 1 and len(lookups[copies[0]]) == 1:
        return {"copy": declared[0], "lookup": declared[1], "searched": False, **all_measures(model)}
    first_lookup = {copy: lookups[copy][0] for copy in copies}
    copy = max(copies, key=lambda c: all_measures(with_roles(model, c, first_lookup[c]), with_probe=False)
               ["m2_l1_prev_token_qk"])
    scored = {lookup: all_measures(with_roles(model, copy, lookup)) for lookup in lookups[copy]}
    lookup = max(scored, key=lambda key: scored[key]["m6_l2_eq_to_values"])
    return {"copy": copy, "lookup": lookup, "searched": True, **scored[lookup]}


def paired_differences(rows_24: list[dict], rows_12: list[dict], metric: str = "exact_2var_union",
                       composed_metric: str = "1var_train", level: float = 0.9) -> list[dict]:
    """G5's pairs: each 24-variable run with the 12-variable run of the same seed and r (both composed), and the
    difference of their 2-var union exact accuracies. Rows are sweep records (`sweep.store`)."""
    def key(row):
        return int(row["seed"]), round(float(row["two_var_rate"]), 4)
    twelve = {key(row): row for row in rows_12}
    pairs = []
    for row in rows_24:
        other = twelve.get(key(row))
        if other is None:
            continue
        both = float(row[composed_metric]) >= level and float(other[composed_metric]) >= level
        pairs.append({"seed": key(row)[0], "r": key(row)[1], "vars24": float(row[metric]),
                      "vars12": float(other[metric]), "difference": float(row[metric]) - float(other[metric]),
                      "both_composed": both})
    return pairs


# ---------------------------------------------------------------------------- the chapter's readings, shape by shape
def finished_runs(root, shapes, seeds) -> dict[str, dict[int, "Run"]]:
    """{shape: {seed: Run}} of the study's finished runs under `root` (a run still training is left out)."""
    from ..generality import run_name
    from ..run_folder import Run
    out = {}
    for shape in shapes:
        runs = {seed: Run(root / run_name(shape, seed)) for seed in seeds}
        out[shape] = {seed: run for seed, run in runs.items() if run.is_complete()}
    return out


def shape_readings(runs: dict[int, "Run"]) -> dict:
    """One shape's numbers and G1-G3 verdicts: {"phases", "roles", "fourier": DataFrames by seed,
    "composed": seeds that composed, "added": seeds whose addition is learned, "G1", "G2", "G3": Verdicts}."""
    import pandas as pd

    from .. import verdicts
    from ..series import FINAL, series
    from .phases import detect_phases
    finals = {seed: run.final()["pools"] for seed, run in runs.items()}
    composed = [seed for seed, pools in finals.items() if verdicts.composed(pools["1var_train"])]
    added = [seed for seed, pools in finals.items() if pools["0var_train"] >= verdicts.LEARNED_LEVEL]
    phases = {seed: detect_phases(run.metrics()) for seed, run in runs.items()}
    roles = {seed: series(run, "found_roles", FINAL).iloc[0] for seed, run in runs.items()}
    fourier = {seed: series(run, "fourier", FINAL).iloc[0] for seed, run in runs.items()}
    name = "seed {}".format
    g1 = verdicts.g1_phases({name(s): phases[s] for s in composed}) if composed else None
    g2 = verdicts.over_seeds({name(s): verdicts.g2_seed(roles[s]["m2_l1_prev_token_qk"], roles[s]["m3_l2_var_identity_qk"],
                                                        roles[s]["m6_l2_eq_to_values"]) for s in composed}) if composed else None
    g3 = verdicts.over_seeds({name(s): verdicts.c7_fourier(
        int(fourier[s]["n_key_frequencies_70"]), int(fourier[s]["n_above_09"]), fourier[s]["median_r2"],
        fourier[s]["null_q99"], fourier[s]["best_r2"], int(fourier[s]["n_frequencies"])) for s in added},
        who="seeds whose addition is learned") if added else None
    return {"phases": pd.DataFrame(phases).T.rename_axis("seed"), "roles": pd.DataFrame(roles).T.rename_axis("seed"),
            "fourier": pd.DataFrame(fourier).T.rename_axis("seed"), "composed": composed, "added": added,
            "G1": g1, "G2": g2, "G3": g3}


def composition_count(sweep_csv, level: float = 0.9) -> tuple[int, int]:
    """(runs that composed, finished runs) of a sweep's results table (1-var train at the end)."""
    import pandas as pd
    table = pd.read_csv(sweep_csv)
    done = table[table["status"] == "done"]
    return int((done["1var_train"] >= level).sum()), int(len(done))


def coverage_pairs(vars24_csv, vars12_csv) -> list[dict]:
    """G5's pairs from the two sweeps' results tables (finished runs only; a missing table gives no pairs)."""
    import pandas as pd
    from pathlib import Path
    if not Path(vars24_csv).is_file():
        return []
    rows = [pd.read_csv(path) for path in (vars24_csv, vars12_csv)]
    done = [table[table["status"] == "done"].to_dict(orient="records") for table in rows]
    return paired_differences(*done)

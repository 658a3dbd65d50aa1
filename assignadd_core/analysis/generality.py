"""The generality chapter's readings: which head plays each role in a shape with several candidates (G2), and the
paired 12- against 24-variable runs of the coverage question (G5).

Roles are found on the final model, by the rule stated in `verdicts.RULES["G2"]`: the copy head is the (block, head)
with the highest measure 2 among the blocks before the last, the lookup head the (block, head) after the copy's
block, up to the MLP's, with the highest measure 6 given that copy head. A shape with one candidate for each (the
paper's 2 layers of 1 head) keeps its declared roles.
"""
from __future__ import annotations

from ..config import RunConfig
from ..measures import all_measures, previous_token_qk_score
from ..model import AssignAddTransformer
from ..verdicts import composed


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
    copy = max(copies, key=lambda c: previous_token_qk_score(with_roles(model, c, first_lookup[c])))
    scored = {lookup: all_measures(with_roles(model, copy, lookup)) for lookup in lookups[copy]}
    lookup = max(scored, key=lambda key: scored[key]["m6_l2_eq_to_values"])
    return {"copy": copy, "lookup": lookup, "searched": True, **scored[lookup]}


def paired_differences(rows_24: list[dict], rows_12: list[dict], metric: str = "exact_2var_union",
                       composed_metric: str = "1var_train") -> list[dict]:
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
        both = composed(float(row[composed_metric])) and composed(float(other[composed_metric]))
        pairs.append({"seed": key(row)[0], "r": key(row)[1], "vars24": float(row[metric]),
                      "vars12": float(other[metric]), "difference": float(row[metric]) - float(other[metric]),
                      "both_composed": both})
    return pairs

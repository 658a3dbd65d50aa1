"""The generality chapter's readings: which head plays each role in a shape with several candidates (G2), and the
paired 12- against 24-variable runs of the coverage question (G5).

Roles are found on the final model, by the rule stated in `verdicts.RULES["G2"]`: the copy head is the (block, head)
with the highest measure 2 among the blocks before the last; the lookup is read over heads (since 2026-12-04): in
each block after the copy's, up to the MLP's, measure 6 is read on the union of a set of its heads' attention from
`=` (the sum of their patterns, `union_eq_to_values`) for every non-empty set of heads, and the lookup heads are the
(block, set) with the highest measure 6 (the fewest heads on a tie), so that a lookup split across two heads (one
fetching each operand) is seen. A shape with one candidate for each (the paper's 2 layers of 1 head) keeps its
declared roles and reads exactly the measures of `all_measures`.
"""
from __future__ import annotations

import itertools

import torch

from ..measure import roles
from ..core.config import RunConfig
from ..measure.measures import all_measures, measurement_batch, previous_token_qk_score, top2_match
from ..core.model import AssignAddTransformer
from ..rules.verdicts import composed

M6 = "m6_l2_eq_to_values"
M3 = "m3_l2_var_identity_qk"


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


def head_sets(heads) -> list[tuple[int, ...]]:
    """Every non-empty set of `heads`, the smaller sets first: (0,), (1,), (0, 1) for two heads."""
    heads = sorted(heads)
    return [subset for size in range(1, len(heads) + 1) for subset in itertools.combinations(heads, size)]


def union_eq_to_values(eq_patterns: torch.Tensor, heads, lhs_src: torch.Tensor, rhs_src: torch.Tensor) -> float:
    """Measure 6 over heads: `eq_patterns` [batch, head, key] is one block's attention from `=`; the share of rows in
    which the top 2 of the summed patterns of `heads` are the two operands' value positions. For one head it is
    measure 6 itself; two heads that each fetch one operand read 1 together and about 0 alone."""
    union = eq_patterns[:, list(heads)].sum(1)
    return float(top2_match(union, lhs_src.to(union.device), rhs_src.to(union.device)).float().mean())


@torch.no_grad()
def eq_patterns(model: AssignAddTransformer, blocks) -> dict[int, torch.Tensor]:
    """{block: [batch, head, key]} every head's attention from `=` in `blocks`, on the measures' batch."""
    batch = measurement_batch(model.config.task)
    names = {block: roles.act_name("pattern", block) for block in blocks}
    _, cache = model.run_with_cache(batch.tokens.to(model.W_E.device),
                                    names_filter=lambda name: name in names.values())
    return {block: cache[name][:, :, -1].float().cpu() for block, name in names.items()}


def found_roles(model: AssignAddTransformer) -> dict:
    """G2's roles of a final model and its measures read there: {"copy": (block, head), "lookup": (block, head),
    "lookup_heads": the heads of the lookup block whose union is read, "searched": whether there was more than one
    candidate, every measure of MEASURE_NAMES, and "m6_single_head": the highest measure 6 of one head (the reading
    before 2026-12-04)}. Where several heads look up together, measure 6 is their union's, measure 3 the lowest of
    theirs (each must match variables), the other measures those of the one of them with the highest measure 6."""
    copies, lookups = candidates(model.config)
    m = model.config.model
    declared = ((m.role_block("copy"), m.role_head("copy")), (m.role_block("lookup"), m.role_head("lookup")))
    if len(copies) == 1 and len(lookups[copies[0]]) == 1:
        measures = all_measures(model)
        return {"copy": declared[0], "lookup": declared[1], "lookup_heads": (declared[1][1],), "searched": False,
                **measures, "m6_single_head": measures[M6]}
    first_lookup = {copy: lookups[copy][0] for copy in copies}
    copy = max(copies, key=lambda c: previous_token_qk_score(with_roles(model, c, first_lookup[c])))
    scored = {lookup: all_measures(with_roles(model, copy, lookup)) for lookup in lookups[copy]}
    blocks = sorted({block for block, _ in lookups[copy]})
    patterns, batch = eq_patterns(model, blocks), measurement_batch(model.config.task)
    unions = {(block, heads): union_eq_to_values(patterns[block], heads, batch.lhs_src, batch.rhs_src)
              for block in blocks for heads in head_sets(h for b, h in lookups[copy] if b == block)}
    # the highest union; on a tie the fewest heads, then the earliest block (the dict's order)
    block, heads = max(unions, key=lambda key: (unions[key], -len(key[1])))
    lookup = max(((block, h) for h in heads), key=lambda key: scored[key][M6])
    measures = {**scored[lookup], M3: min(scored[(block, h)][M3] for h in heads), M6: unions[(block, heads)]}
    return {"copy": copy, "lookup": lookup, "lookup_heads": heads, "searched": True, **measures,
            "m6_single_head": max(values[M6] for values in scored.values())}


def heads_mask(heads) -> float:
    """A set of heads as one number (the sum of 2**head), as a series column holds it; `mask_heads` reads it."""
    return float(sum(2 ** int(h) for h in heads))


def mask_heads(mask: float) -> tuple[int, ...]:
    mask = int(mask)
    return tuple(h for h in range(mask.bit_length()) if mask >> h & 1)


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

"""The lookup's route (`analysis.route`) and R3's rule (`verdicts.r3_route`)."""
from __future__ import annotations

import pytest
import torch

from assignadd_core.analysis import route
from assignadd_core.core.model import initial_model
from assignadd_core.measure.measures import measurement_batch
from assignadd_core.rules import verdicts

import handbuilt


@pytest.fixture(scope="module")
def random_model(tiny_config):
    torch.manual_seed(0)
    return initial_model(tiny_config)


def test_parts_sum_to_the_residual_after_block_0(random_model):
    batch = route.lookup_batch(random_model.config.task)[:64]
    parts = route.residual_parts(random_model, batch)
    _, cache = random_model.run_with_cache(batch.tokens, names_filter=lambda n: n == "blocks.0.hook_resid_post")
    assert torch.allclose(parts.sum(0).float(), cache["blocks.0.hook_resid_post"], atol=1e-5)


def test_margin_terms_sum_to_the_margin_of_the_model_s_own_scores(random_model):
    batch = route.lookup_batch(random_model.config.task)[:64]
    terms = route.margin_terms(random_model, batch)
    _, cache = random_model.run_with_cache(batch.tokens, names_filter=lambda n: n == "blocks.1.attn.hook_attn_scores")
    scores = cache["blocks.1.attn.hook_attn_scores"][:, 0, -1].double()
    right, others = route._contenders(batch, random_model.config.task, scores.device)
    margin = (scores * right).sum(-1) - (scores * others).sum(-1) / others.sum(-1)
    assert terms["margin"] == pytest.approx(float(margin.mean()), abs=1e-6)
    assert terms["rows"] == len(batch) and terms["terms"].shape == (5, 5)


def test_the_readout_without_ablation_is_the_model_s_own_answers(random_model):
    batch = route.lookup_batch(random_model.config.task)
    with torch.no_grad():
        own = (random_model(batch.tokens)[:, -1].argmax(-1) == batch.answers).double().mean()
    assert route.lookup_readout(random_model, batch)["answers"] == pytest.approx(float(own), abs=1e-9)


def test_the_hand_built_lookup_is_carried_by_the_variable_copies():
    model = handbuilt.exact_model()
    batch = route.lookup_batch(model.config.task)
    reading = route.checkpoint_reading(model, batch)
    assert reading["lookup"] == 1.0 and reading["answers"] == 1.0 and reading["identity_in_context"] == 1.0
    totals = route.key_part_totals(reading)
    assert max(totals, key=totals.get) == "variable"
    ablated = route.ablation_reading(model, batch)
    assert ablated["variable"]["lookup"] < 0.6 and ablated["copied_positions"]["lookup"] == 1.0


def _held(term=("variable", "variable"), gap=0.6, runs=9, against=0):
    out = []
    for i in range(runs):
        terms = {verdicts.route_term(q, k): 0.01 for q in route.PARTS for k in route.PARTS}
        terms[verdicts.route_term(*term)] = 2.0
        totals = {k: sum(terms[verdicts.route_term(q, k)] for q in route.PARTS) for k in route.PARTS}
        drops = {k: 0.0 for k in route.PARTS}
        drops[term[1]] = -gap if i < against else gap
        out.append({"run": f"r{i}", "terms": terms, "totals": totals, "drops": drops})
    return out


def test_r3_names_the_identity_term_when_it_carries_the_lookup():
    v = verdicts.r3_route(_held())
    assert v.verdict == verdicts.FINDING and "carries the lookup" in v.text and "identity pattern's own" in v.text


def test_r3_finds_a_second_route_when_another_term_carries_it():
    v = verdicts.r3_route(_held(term=("variable", "copied_positions")))
    assert "a second route" in v.text


def test_r3_does_not_call_a_route_without_its_causal_test():
    assert "not shown to carry" in verdicts.r3_route(_held(gap=0.1)).text  # too small a drop
    assert "not shown to carry" in verdicts.r3_route(_held(against=3)).text  # the sign test does not reject
    assert verdicts.r3_route(_held(runs=7)).verdict == verdicts.NOT_YET_RUN


def _double(n=9, held_at=None, twin_at=4001, sham_at=4101):
    reading = lambda at, m3=0.8: {"trigger": 2001, "m3_max": m3, "m3_min": m3, "m5_mean": 0.99, "composed_at": at,
                                  "held": at is not None}
    return [{"cell": f"{i}/{i}", "twin": reading(twin_at), "removal": reading(held_at, 0.2), "sham": reading(sham_at)}
            for i in range(n)]


def test_r3_reads_the_double_hold_only_where_a_second_route_is_found():
    second = _held(term=("copied_positions", "variable"))
    waiting = verdicts.r3_route(second, [{"cell": "a", "twin": None, "removal": None, "sham": None}])
    assert "the double hold: not yet run (0 of 2 runs finished)" in waiting.text
    blocked = verdicts.r3_route(second, _double())
    assert "holding every route from the query to the values' variable copies delays composition" in blocked.text
    assert "prevents it during the hold" in blocked.text
    assert "the double hold" not in verdicts.r3_route(_held(), _double()).text  # the identity term: no double hold


def test_the_double_hold_runs_in_the_cells_that_passed_c10s_checks():
    from assignadd_core.experiments import c10_route
    from assignadd_core.experiments.sweep.designs import C10_ROUTE_CELLS
    assert sorted(C10_ROUTE_CELLS) == sorted(tuple(map(int, c.split("/"))) for c in c10_route.passing_cells())


def test_the_hand_built_query_reaches_the_keys_through_its_variable_copy():
    model = handbuilt.exact_model()
    ablated = route.ablation_reading(model, route.lookup_batch(model.config.task))
    assert ablated["query_variable"]["lookup"] < 0.6 and ablated["query_copied_positions"]["lookup"] == 1.0

"""The phrases of the composition chapter (*When composition fails*), one function per section, from the readings of
`composition_study`: each returns {glue name: phrase}, and the chapter glues them into the sentences of its
Markdown (`present.glue_text(**phrases)`). Every phrase is written with `wording`, so its words follow the numbers
("none of the 7 interventions rescues it", "shown" or "not shown", "at least as fast" or "more slowly"); a reading
that is not there (a study not run yet, a fork's tiny runs) gives "–" or "not read yet", never a missing name.
"""
from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from . import wording as w
from .names import measure_named
from ..rules import verdicts

from .composition_study import MODE_WORDS

NOT_READ = "not read yet"


def _seeds(values) -> str:
    """Seeds of a design (initializations, data orders) as their names: '4315, 7157 and 9206', no thousands comma."""
    return w.listing(str(int(v)) for v in values)


def _where(init, both, once) -> str:
    """Where an initialization composed: '1029 composes on data orders 4315 and 7157 in both modes and on 2460 once'."""
    parts = ([f"{w.verb(len(both), 'data order', 'data orders')} {_seeds(both)} in both modes"] if both else []) + \
        ([f"{w.verb(len(once), 'data order', 'data orders') if not both else ''} {_seeds(once)} once".strip()]
         if once else [])
    return f"{init} composes on " + (" and on ".join(parts) if parts else "no data order")


def _tests(p_values: Mapping | None) -> dict:
    return {k: w.tested(v, verdicts.ODDS_LEVEL) for k, v in (p_values or {}).items()}


def design(main: Mapping, kinds: Mapping, trained: tuple, budget: int, hold: int, continued_steps: int,
           design_table: pd.DataFrame, nudged: pd.DataFrame, planned: Mapping[str, int]) -> dict:
    """The introduction's and the design's phrases: the main seeds that did not compose and their continuations
    (`composition_study.main_outcomes`), the budget, the latest composition step of the design's eager and compiled
    runs and of its nudged replicates, the perturbations by kind (`perturbation_kinds`), where the replicates trained
    (`where_trained`) and how many runs each study states (`planned`: design, replicates, flips)."""
    devices, modes = trained
    return dict(
        stuck_main_k=w.capital(w.k_of_n(len(main["stuck"]), len(main["main"]), "main seeds")),
        stuck_main_seeds=w.seeds(main["stuck"]), main_steps=w.number(main["steps"]),
        late_k=w.k_of_n(len(main["late"]), len(main["continued"])), continued_steps=w.number(continued_steps),
        late_verb=w.verb(max(len(main["late"]), 1), "composes", "compose"), budget=w.number(budget),
        main_by=w.by_step(list(main["composed"].values()), "seeds"), learned_level=verdicts.LEARNED_LEVEL,
        design_latest=w.number(w.latest(design_table.get("composition", [])) or 0),
        nudged_latest=w.number(w.latest(nudged.get("composition", [])) or 0),
        hold=w.number(hold), replicates=w.number(verdicts.R2_MIN_REPLICATES),
        nudged_per_cell=w.number(verdicts.R2_MIN_REPLICATES - 2),
        design_runs=w.number(planned["design"]), replicate_runs=w.number(planned["replicates"]),
        flip_runs=w.number(planned["flips"]),
        replicate_devices=f"{w.listing(devices)}, {w.listing(modes, 'or')}" if devices else "nothing yet",
        nudges_at_0=w.listing(w.exponent(v) for v, _ in kinds["at_0"]),
        nudges_at_0_seeds=w.listing(sorted({n for _, n in kinds["at_0"]})),
        nudges_later=w.listing(f"{w.exponent(v)} at step {w.number(step)}" for v, step, _ in kinds["later"]),
        nudges_later_seeds=w.listing(sorted({n for _, _, n in kinds["later"]})),
        noises=w.listing(w.exponent(v) for v, _ in kinds["noise"]),
        noise_seeds=w.listing(sorted({n for _, n in kinds["noise"]})))


def r2(D: Mapping, inits: Mapping, move: Mapping | None) -> dict:
    """R2's reading: its tests on the replicated cells (`rep_*`) and on the eager and compiled runs alone (`two_*`),
    the initializations that compose often and those that do not (`composition_study.initializations`), the model's
    shares and how far they move with the prior (`prior_move`), and the answer's shares and advice."""
    rep, two = _tests(D["replicated_p"]), _tests(D["p_values"])
    counts, prob = inits["counts"], D.get("probabilities")
    prob = prob.set_index("init") if prob is not None else None
    low = counts.loc[inits["low"]]
    shares, observed = D["shares"], D["observed"]
    share = lambda table, part: f"{table[part][0]:.2f}" if part in table else "–"  # noqa: E731
    vary = [name for k, name in (("init", "several initializations"), ("data", "several data orders"))
            if (D["replicated_p"] or {}).get(k, 1) < verdicts.ODDS_LEVEL]
    return dict(
        n_replicated=w.number(D["n_replicated"]), whole=w.number(D["whole"]), fitted_on=D["fitted_on"],
        **{f"rep_{k}": rep.get(k, NOT_READ) for k in ("init", "data", "cell")},
        **{f"two_{k}": two.get(k, NOT_READ) for k in ("init", "data", "cell")},
        high_k=w.capital(w.k_of_n(len(inits["high"]), len(counts), "initializations")),
        high_span=w.span(counts.loc[inits["high"], "sum"]), runs_each=w.number(counts["count"].max() or 0),
        low_k=w.others(len(inits["low"]), "initializations"), low_often=w.which(inits["rarely"], "rarely", "less often"),
        low_list=w.listing(f"{i} on {int(r['sum'])} of {int(r['count'])}" + (
            " (probability on a new data order {:.2f}, {:.2f}–{:.2f})".format(*prob.loc[i, ["probability", "low", "high"]])
            if prob is not None else "") for i, r in low.iterrows()),
        data_span=w.span(D["per_data"]["sum"]), data_runs=w.number(D["per_data"]["count"].max() or 0),
        low_where=w.capital("; ".join(_where(i, v["both"], v["once"]) for i, v in inits["where"].items())),
        rescuers=w.which(bool(inits["rescuers"]), f"only {_seeds(inits['rescuers'])}"
                         f" {w.verb(len(inits['rescuers']), 'does', 'do')}", "no data order does"),
        latent_shares=w.listing(f"{part} {w.estimate(*v)}" for part, v in shares.items()),
        observed_shares=w.listing(f"{part} {w.estimate(*v)}" for part, v in observed.items()),
        other_scales=w.listing(f"{s:g}" for s in D["other_scales"]),
        prior_move=w.number(move["move"], 2) if move else "–",
        prior_most=(f"{move['part']} on the {move['scale']} scale, {move['from']:.2f} → {move['to']:.2f} at"
                    f" {move['prior_scale']:g}" if move else "–"),
        init_latent=w.estimate(*shares["initialization"]) if "initialization" in shares else "–",
        init_observed=share(observed, "initialization"), pair_latent=share(shares, "the pair"),
        pair_observed=share(observed, "the pair"), own_latent=share(shares, "a run's own chance"),
        own_observed=share(observed, "a run's own chance"),
        try_what=w.which(bool(vary), f"try {w.listing(vary)}", "neither factor is shown to decide"),
        carries=w.which((D["replicated_p"] or {}).get("cell", 1) < verdicts.ODDS_LEVEL, "does not carry", "may carry"))


POWER_NAMES = ("date", "runs", "sims", "cells", "replicates", "level", "sd_init", "sd_data", "sd_cell", "cell", "init",
               "data", "posterior", "null")


def power(found: Mapping | None) -> dict:
    """The phrases of R2's power calculation (`composition_study.r2_power`): each test's rejections with their
    interval, at the fitted values, over the posterior and without a pair effect; '–' for each before it is run."""
    if found is None:
        return {f"power_{k}": "–" for k in POWER_NAMES}

    def rejects(scenario, test):
        r = found["rows"][(scenario, test)]
        return f"{r['rejected']} of {r['sims']} ({w.interval(r['low'], r['high'], 0, '%')})"
    return dict(power_date=found["computed"], power_runs=w.number(found["runs"]), power_sims=w.number(found["sims"]),
                power_cells=w.number(found["cells"]), power_replicates=w.number(found["replicates"]),
                power_level=found["level"], **{f"power_{k}": f"{found['fit'][k][0]:.1f}"
                                               for k in ("sd_init", "sd_data", "sd_cell")},
                power_cell=rejects("as fitted", "cell"), power_init=rejects("as fitted", "init"),
                power_data=rejects("as fitted", "data"), power_posterior=rejects("over the posterior", "cell"),
                power_null=rejects("no pair effect", "cell"))


FLIP_COLUMNS = ["kind", "step", "flips", "runs", "size", "cells", "cells_with_a_flip"]
NO_BASIN = {"p": 1.0, "reading": NOT_READ, "cells": 0, "mean_difference": 0.0, "by_runs": {"p": 1.0, "reading": NOT_READ}}


def flips(M: Mapping | None, F: Mapping, mode_effect) -> dict:
    """Eager against compiled (`odds.mode_comparison`, with the model's mode effect), and the perturbations' flips
    and basin or chaos (`composition_study.flips`)."""
    rows = F["rows"] if len(F["rows"]) else pd.DataFrame(columns=FLIP_COLUMNS)
    at0 = rows[(rows["kind"] == "nudge") & (rows["step"] == 0)]
    later, noise = rows[(rows["kind"] == "nudge") & (rows["step"] > 0)], rows[rows["kind"] != "nudge"]
    b = F["basin"] or NO_BASIN
    f = (M or {}).get("flips", {"flips": 0, "runs": 0, "rate": 0.0, "low": 0.0, "high": 0.0})
    return dict(
        eager_n=w.number(M["eager"].successes if M else 0), compiled_n=w.number(M["compiled"].successes if M else 0),
        disagree_k=w.k_of_n(f["flips"], f["runs"], "cells"), disagree_rate=f"{f['rate']:.1%}",
        disagree_interval=f"{f['low']:.1%}–{f['high']:.1%}", agree_k=w.k_of_n(f["runs"] - f["flips"], f["runs"], "cells"),
        only_compiled=w.number(M["only_compiled"] if M else 0), only_eager=w.number(M["only_eager"] if M else 0),
        mode_tested=w.tested(M["p"], verdicts.ODDS_LEVEL) if M else NOT_READ,
        mode_effect="{:+.2f} ({:+.2f} to {:+.2f})".format(*mode_effect),
        at0_list=w.listing(f"{r.flips} of {r.runs} at {w.exponent(r.size)}" + (
            f" (in {w.k_of_n(r.cells_with_a_flip, r.cells, 'cells')})" if r.flips else "") for r in at0.itertuples()),
        later_list=w.listing(f"{r.flips} of {r.runs} at step {w.number(r.step)}" for r in later.itertuples()),
        noise_list=w.listing(f"{r.flips} of {r.runs} at σ = {w.exponent(r.size)}" for r in noise.itertuples()),
        basin_tested=w.tested(b["p"], verdicts.ODDS_LEVEL), basin_cells=w.number(b["cells"]),
        basin_mean=w.signed(b["mean_difference"]), basin_reading=b["reading"],
        differ_k=w.k_of_n(F["differ"], b["cells"], "cells"), smallest_p=f"{2.0 ** -F['differ']:.2g}",
        fisher_same=w.which(b["by_runs"]["reading"] == b["reading"], "the same", b["by_runs"]["reading"]),
        fisher_p=w.p_value(b["by_runs"]["p"]),
        uneven=w.which(any(0 < r.cells_with_a_flip < r.cells for r in rows.itertuples()), "are not spread evenly over",
                       "are spread over all of"))


def modes(MS: Mapping, mode_seed: int, distance_at) -> dict:
    """The mode seed in its modes (`composition_study.modes`): its fp32 modes' outcomes, fp64's, the replays, the
    compiled step's gradient against eager's, and the weight distances (`distance_at(column, step)`)."""
    runs = MS["runs"]
    by_mode = runs.set_index("mode") if len(runs) else pd.DataFrame(columns=["precision", "composed", "one_var_train",
                                                                              "composition"])
    fp32, diffs, replay = by_mode.index[by_mode["precision"] == "fp32"], MS["differences"], MS["replay"]
    fp64 = by_mode.loc["fp64"] if "fp64" in by_mode.index else None
    last = int(MS["distances"]["step"].max()) if len(MS["distances"]) > 1 else None
    cos = diffs["cosine_with_previous"] if diffs is not None else None
    return dict(
        mode_seed_cap=w.capital(w.seeds([mode_seed])), fp32_modes=w.listing(MODE_WORDS.get(m, m) for m in fp32),
        fp32_k=w.k_of_n(int(by_mode.loc[fp32, "composed"].sum()), len(fp32), "fp32 modes"),
        fp32_end=w.span(by_mode.loc[fp32, "one_var_train"], 3),
        loss_equal=w.listing(MODE_WORDS.get(m, m) for m in MS["loss_equal"]),
        fp64_outcome=w.which(fp64 is not None and bool(fp64["composed"]), "composes", "does not compose"),
        fp64_end=f"{fp64['one_var_train']:.3f}" if fp64 is not None else "–",
        fp64_step=w.number(int(fp64["composition"])) if fp64 is not None and fp64["composed"] else "–",
        replay_steps=w.number(int(replay["steps"].max())) if replay is not None else "–",
        replay_diff=f"{replay['largest_loss_difference'].abs().max():g}" if replay is not None else "–",
        grad_diff=(f"{diffs['relative_size'].min():.1e} to {diffs['relative_size'].max():.1e}" if diffs is not None
                   else "–"),
        correlated=w.which(cos is not None and cos.abs().max() < 0.1, "uncorrelated", "correlated"),
        cosines=f"{cos.min():+.2f} to {cos.max():+.2f}" if cos is not None else "–",
        d_first=f"{distance_at('compiled_vs_eager', 1):.1e}" if last else "–",
        d_list=w.listing(f"{100 * distance_at('compiled_vs_eager', s):.0f} % by step {w.number(s)}"
                         for s in ((101, 1001, last) if last else ())),
        fp64_pace=w.which(bool(last) and distance_at("eager_vs_fp64", last) >= distance_at("compiled_vs_eager", last),
                          "at least as fast", "more slowly"),
        d_fp64=f"{100 * distance_at('eager_vs_fp64', last):.0f} %" if last else "–", d_last=w.number(last or 0))


def rates(R: Mapping, SW: Mapping, near: Mapping, fact: Mapping | None, half: Mapping | None) -> dict:
    """How often a run composes (`composition_study.rates`) and the earlier studies read again: the sweeps by seed,
    the near values, the old factorial with the initialization as the unit, and bf16."""
    rate, by_init = R["rate"], fact["by_init"] if fact else None
    moved: dict[str, list] = {}
    for label, c in near["changes"].items():
        moved.setdefault(c["moves"], []).append(label)
    p = [c["p"] for c in near["changes"].values()]
    count = lambda r: f"{r.successes} of {r.trials}"  # noqa: E731
    return dict(
        rate_k=w.k_of_n(rate.successes, rate.trials), rate_pct=f"{rate.value:.0%}",
        rate_interval=f"{rate.low:.0%}–{rate.high:.0%}",
        design_counts=w.listing(r.successes for r in R["design"].values()), design_modes=w.listing(R["design"]),
        design_pcts=w.listing(f"{r.value:.0%}" for r in R["design"].values()),
        fact_composers=count(by_init["counts"]["composers"]) if by_init else "–",
        fact_failers=count(by_init["counts"]["failers"]) if by_init else "–",
        mw_p=w.p_value(by_init["mann_whitney_p"]) if by_init else "–",
        fact_tested=w.tested(by_init["permutation_p"], verdicts.ODDS_LEVEL) if by_init else NOT_READ,
        old_answer=fact["old"]["answer"] if fact else "–", old_p=w.p_value(fact["old"]["p_init"]) if fact else "–",
        sweep_seeds_n=w.number(len(SW["counts"])), sweep_runs=w.number(len(SW["runs"])),
        sweep_seed_counts=w.listing(f"{n} from seed {s}" for s, n in SW["counts"].items()),
        withdrawn_p=w.p_value(SW["withdrawn_p"]) if len(SW["runs"]) else "–",
        most_k=w.k_of_n(int((SW["per_seed"] >= 0.5).sum()), len(SW["per_seed"])),
        stuck_seeds=w.seeds(SW["stuck_at_paper"]),
        stuck_counts=w.listing(f"{k} of {n}" for k, n in SW["stuck_at_paper"].values()),
        near_summary=w.listing(f"{moves} at {w.listing(labels)}" for moves, labels in moved.items())
        + (f" (McNemar p = {min(p):.2g}–{max(p):.2g})" if p else ""),
        bf16_runs=w.number(half["runs"] if half else 0),
        bf16_k=w.k_of_n(half["differ"], len(half["both"])) if half else "no seeds")


def predictor(found: Mapping | None, earliest: int | None) -> dict:
    """The early predictor (`composition_study.predictor`) beside the earliest composition step of the seeds it was
    chosen on: the measure by its number and role, its step and both AUCs."""
    best = (found or {}).get("best")
    last = found["last_step"] if found else 0
    return dict(
        last_step=w.number(last), earliest=w.number(earliest or 0),
        earliest_side=w.against(earliest or 0, last, below="before", above="after"),
        n_train=w.number(len(found["train"]) if found else 0), n_test=w.number(len(found["test"]) if found else 0),
        best_quantity=measure_named(best["quantity"]) if best else "–",
        best_step=w.number(int(best["step"])) if best else "–", train_auc=f"{best['train_auc']:.2f}" if best else "–",
        test_auc=f"{found['test_auc']:.2f}" if found else "–",
        auc_interval=w.interval(*found["interval"]) if found else "–",
        perfectly=w.which(bool(found) and found["test_auc"] < 1, "but not perfectly", "and perfectly"))


def rescue_and_saving(arms: Mapping, saving: Mapping) -> dict:
    """The rescue arms (`composition_study.rescue`) and what stopping once composed saved (`odds.early_stop_saving`)."""
    return dict(
        rescue_steps=w.number(max(arms["steps"], default=0)),
        rescued_k=w.k_of_n(len(arms["rescued"]), len(arms["arms"]), "interventions"),
        rescues_verb=w.verb(max(len(arms["rescued"]), 1), "rescues", "rescue"),
        stopped_k=w.capital(w.k_of_n(saving["stopped"], saving["runs"], "runs")),
        steps_share=f"{saving['steps_share']:.0%}", cpu_h=f"{saving['cpu_h']:.1f}",
        cpu_h_without=f"{saving['cpu_h_without']:.1f}")

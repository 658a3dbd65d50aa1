"""Chapter 9's phrases (C10 at copying onset, R3's route): each a phrase computed from the study's readings, glued into
the chapter's Markdown. Every function returns {glue name: phrase}; a reading not run yet gives phrases that say so.
"""
from __future__ import annotations

from statistics import median

from ..rules import verdicts
from . import wording as w

NOT_RUN = "not run yet"


def _steps(value) -> str:
    return f"{w.number(int(value))} steps"


def necessity_phrases(need: dict | None) -> dict:
    """The hold's reading (`verdicts.c10_necessity` with `c10_study.delay_summary`'s numbers under "delays_summary")."""
    keys = ("need_entered", "need_delay_twin", "need_delay_sham", "need_later_twin", "need_later_sham", "need_p_twin",
            "need_p_sham", "need_delay_word", "need_prevent", "need_during", "need_twins_during", "need_block",
            "need_p_block", "need_conclusion")
    if need is None:
        return {k: NOT_RUN for k in keys}
    s, block = need["delays_summary"], need["block"]
    (t_later, t_earlier, t_p), (s_later, s_earlier, s_p) = need["against"]["twin"], need["against"]["sham"]
    n = len(need["cells"])

    def delay(arm):
        if s[f"{arm}_median"] is None:
            return "no measurable delay"
        low, high = s[f"{arm}_range"]
        return f"a median of {_steps(s[f'{arm}_median'])} ({w.number(low)} to {w.number(high)})"
    return {"need_entered": w.k_of_n(n, need["read"], "cells"),
            "need_delay_twin": delay("twin"), "need_delay_sham": delay("sham"),
            "need_later_twin": w.k_of_n(t_later, n, "cells"), "need_later_sham": w.k_of_n(s_later, n, "cells"),
            "need_p_twin": w.p_value(t_p), "need_p_sham": w.p_value(s_p),
            "need_delay_word": w.which(need["reading"] == "shown", "delays composition",
                                       "is not shown to delay composition"),
            "need_prevent": w.which(block["reading"] == "shown", "prevented it while the hold lasted",
                                    "did not prevent it" if block["held_during"] else "is not shown to prevent it"),
            "need_during": w.k_of_n(block["held_during"], block["cells"], "held runs"),
            "need_twins_during": w.k_of_n(block["twins_during"], block["cells"], "twins"),
            "need_block": w.tested(block["p"], verdicts.C10_ONSET_P), "need_p_block": w.p_value(block["p"]),
            "need_conclusion": w.which(block["reading"] == "shown",
                                       "the identity pattern was needed while the hold lasted",
                                       "a delay is what these runs show, not that the identity pattern is necessary")}


def push_phrases(out: dict, share: float, m3_max: float | None) -> dict:
    """The pushes at one strength (`c10_study.push_outcomes`), read as what they are: an arm whose check failed."""
    return {"push_share": f"{share:g}", "push_composed": w.k_of_n(out["pushed"], out["cells"], "stuck cells"),
            "push_twins": w.k_of_n(out["twins"], out["cells"], "twins"),
            "push_shams": w.k_of_n(out["shams"], out["cells"], "shams"),
            "push_checked": w.k_of_n(out["checked"], out["cells"], "cells"),
            "push_m3": NOT_RUN if m3_max is None else f"{m3_max:.2f}"}


def clamp_phrases(enough: dict | None, finished: tuple[int, int], cells: list) -> dict:
    """The clamp's reading (`verdicts.c10_clamp`) and, descriptive over every cell read, what its arms did: the lowest
    measure 3 the clamp kept in its window, how far its layer-1 copying fell below the twin's, and how many runs of
    each arm ended composed; or how many of its runs have finished."""
    done, planned = finished
    keys = ("clamp_entered", "clamp_shown", "clamp_m3", "clamp_copying", "clamp_composed", "clamp_twins",
            "clamp_shams")
    if enough is None:
        return {"clamp_runs": f"{NOT_RUN} ({w.k_of_n(done, planned, 'runs')} finished)", **{k: NOT_RUN for k in keys}}
    n = len(cells)
    gaps = [c["twin"]["m5_mean"] - c["clamp"]["m5_mean"] for c in cells]
    return {"clamp_runs": w.k_of_n(done, planned, "runs"), "clamp_entered": w.k_of_n(len(enough["cells"]), n, "cells"),
            "clamp_shown": enough["reading"], "clamp_m3": f"{min(c['clamp']['m3_min'] for c in cells):.2f}",
            "clamp_copying": f"{min(gaps):.2f} to {max(gaps):.2f}",
            "clamp_composed": w.k_of_n(sum(bool(c["clamp"]["held"]) for c in cells), n, "clamped runs"),
            "clamp_twins": w.k_of_n(sum(bool(c["twin"]["held"]) for c in cells), n, "twins"),
            "clamp_shams": w.k_of_n(sum(bool(c["sham"]["held"]) for c in cells), n, "wrong-pairs clamps")}


def double_phrases(double: list, finished: tuple[int, int]) -> dict:
    """Descriptive beside R3's reading of the double hold (`verdicts.r3_route`), over every cell read: how many pass the
    checks, how far the double-held runs' layer-1 copying fell below the twin's, the shams' highest measure 3 (their
    check needs it at or above C10's level) and how many double-held runs composed; or how many runs have finished."""
    done, planned = finished
    keys = ("double_entered", "double_copying", "double_sham_m3", "double_composed", "double_tested")
    read = [c for c in double if all(c.get(arm) is not None for arm in ("twin", "removal", "sham"))]
    if done < planned or not read:
        return {"double_runs": f"{NOT_RUN} ({w.k_of_n(done, planned, 'runs')} finished)", **{k: NOT_RUN for k in keys}}
    need = verdicts.c10_necessity(read)
    gaps = [c["twin"]["m5_mean"] - c["removal"]["m5_mean"] for c in read]
    return {"double_runs": w.k_of_n(done, planned, "runs"),
            "double_entered": w.k_of_n(len(need["cells"]), len(read), "cells"),
            "double_copying": f"{min(gaps):.2f} to {max(gaps):.2f}",
            "double_sham_m3": f"{max(c['sham']['m3_max'] for c in read):.2f}",
            "double_tested": {"shown": "is shown", "not shown": "is not shown"}.get(need["reading"], "is not tested"),
            "double_composed": w.k_of_n(sum(c["removal"]["composed_at"] is not None for c in read), len(read),
                                        "double-held runs")}


def query_phrases(drops: dict) -> dict:
    """The query-side ablations in phrases: how much the lookup drops when `=`'s variable copy or its copy of positions
    is ablated, in the held runs and in their twins (`c10_route.query_drops`)."""
    def drop(arm, part):
        return f"{drops[arm][part]:.2f}" if part in drops.get(arm, {}) else NOT_RUN
    return {f"route_{arm}_{short}": drop(arm, part) for arm in ("held", "twin")
            for short, part in (("qvar", "variable"), ("qpos", "copied_positions"))}


def route_phrases(held: list[dict], twins: list[dict], seed42: dict | None, candidate: tuple[str, str] | None,
                  disagreement: dict) -> dict:
    """R3's first part in phrases: the held runs' margin and its largest term, the identity term, the causal test's
    drop; the same terms in the twins and seed 42; measure 3 against the same map read in context."""
    if not held or candidate is None:
        return {k: NOT_RUN for k in ("route_margin", "route_query", "route_key", "route_term", "route_identity",
                                     "route_drop", "route_twin_identity", "route_seed42_identity", "route_gap_max",
                                     "route_gap_median", "route_gap_where")}
    query, key = candidate
    term = verdicts.route_term(query, key)
    identity = verdicts.route_term(*verdicts.ROUTE_IDENTITY)
    return {"route_margin": f"{median(h['margin'] for h in held):.2f}",
            "route_query": PART_WORDS[query], "route_key": PART_WORDS[key],
            "route_term": f"{median(h['terms'][term] for h in held):.2f}",
            "route_identity": f"{median(h['terms'][identity] for h in held):.2f}",
            "route_drop": f"{median(h['drops'][key] for h in held):.2f}",
            "route_twin_identity": f"{median(t['terms'][identity] for t in twins):.2f}" if twins else NOT_RUN,
            "route_seed42_identity": f"{seed42['terms'][identity]:.2f}" if seed42 else NOT_RUN,
            "route_gap_max": f"{disagreement['max']:.2f}", "route_gap_median": f"{disagreement['median']:.2f}",
            "route_gap_where": w.k_of_n(disagreement["apart"], disagreement["checkpoints"], "checkpoints")}


PART_WORDS = {"token": "the token's embedding", "position": "the position's embedding",
              "variable": "layer 1's copy of the variable", "copied_positions": "layer 1's copy of positions",
              "copied_other": "layer 1's copy of other tokens"}


def dense_phrases(rows: dict, over: dict) -> dict:
    """The dense study's reading (C10's rule before 2026-12-03) in phrases."""
    composing = [r for r in rows.values() if r["composed"]]
    if not composing:
        return {"dense_windows": NOT_RUN, "dense_positive": NOT_RUN, "dense_control": NOT_RUN}
    control = over.get("control")
    return {"dense_windows": w.k_of_n(sum(bool(r["window_n"]) for r in composing), len(composing), "composed seeds"),
            "dense_positive": w.k_of_n(sum(r["mean_contrast"] > 0 for r in composing), len(composing),
                                       "composed seeds"),
            "dense_control": f"{control[0]:+.3f} to {control[1]:+.3f}" if control else "not computed (one seed)"}


def glue_key_results(c10: verdicts.Verdict, r3: verdicts.Verdict, need: dict | None, clamp: dict | None) -> None:
    """Chapter 9's key-results box: C10's verdict with its delay, its block and its clamp; R3's route."""
    from .claims import CLAIMS
    from .present import Answer, KeyResults, Quote, because, glue_key_results as glue
    p = necessity_phrases(need)
    c10_words = (NOT_RUN if need is None else
                 f"holding the identity pattern {p['need_delay_word']} ({p['need_delay_twin']} later than the twin)"
                 f" but {p['need_prevent']} ({p['need_during']} composed during the hold)")
    clamp_words = "the clamp: " + (NOT_RUN if clamp is None else f"sufficiency {clamp['reading']}")
    route = ("a second route to the values' variable copies" if "a second route" in r3.text else
             "the identity pattern's own term" if "carries the lookup" in r3.text else NOT_RUN)
    glue(KeyResults(
        "Once layer 1 copies, is the identity pattern why composition emerges?",
        Quote(CLAIMS["C10"].statement, "the paper's summary"),
        [Answer.of("C10", c10, because(c10_words, clamp_words).rstrip(".")),
         Answer.of("R3", r3, f"held runs compose through {route}")],
        why="a gradient's direction cannot show a cause: the verdict comes from holding the pattern back and on"))


def route_setting(checkpoints, main_seed: int) -> dict:
    """The route's setting in phrases: how many terms the margin splits into, the re-runs' checkpoint spacing, the
    map measure 3 reads, the level at which measure 3 and its in-context reading count as apart."""
    from ..analysis.route import PARTS
    from ..experiments.c10_route import APART
    from ..core.config import RunConfig
    from ..rules.study import study_overrides
    steps = sorted(checkpoints["step"].unique()) if len(checkpoints) else []
    spacing = min((b - a for a, b in zip(steps, steps[1:])), default=None)
    n = RunConfig().replace(**study_overrides()).task.n_vars
    return {"route_terms": w.number(len(PARTS) ** 2), "route_other_terms": w.number(len(PARTS) ** 2 - 2),
            "route_every": NOT_RUN if spacing is None else w.number(int(spacing)), "map_size": f"{n} × {n}",
            "route_apart": f"{APART:g}", "main_seed": f"seed {main_seed}"}


def fixed_window_phrases() -> dict:
    """The experiment of 2026-12-03's windows in phrases (steps removed; steps pushed)."""
    from ..experiments.sweep.grid import C10_ADD, C10_REMOVE
    return {"fixed_remove": f"{w.number(C10_REMOVE['train.steer_from'])}–{w.number(C10_REMOVE['train.steer_to'])}",
            "fixed_add": f"{w.number(C10_ADD['train.steer_from'])}–{w.number(C10_ADD['train.steer_to'])}"}


def dense_every(names) -> str:
    """The dense study's checkpoint spacing (its runs' eval_every), or 'not run yet'."""
    from ..core.run_folder import DEFAULT_ROOT, Run, run_path
    runs = [Run(run_path(name, DEFAULT_ROOT / "dense")) for name in names]
    every = sorted({run.config.train.eval_every for run in runs if run.config_path.is_file()})
    return w.number(every[0]) if every else NOT_RUN


def identical_words(checkpoints) -> str:
    """How many of R3's re-runs equal their committed runs bit for bit (the tables' "identical" column)."""
    runs = checkpoints[checkpoints["arm"] != "seed 42"].drop_duplicates("run") if len(checkpoints) else checkpoints
    if not len(runs):
        return "none re-run here"
    return w.k_of_n(int(runs["identical"].astype(bool).sum()), len(runs), "re-runs")

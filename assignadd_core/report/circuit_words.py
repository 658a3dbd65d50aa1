"""The phrases of the circuits chapter, one function per section, from the readings of `circuit_study`: each
returns {glue name: phrase} for the sentences of the chapter's Markdown. A reading that is not there (no checkpoint
around the jump, no dense re-run) gives '–', never a missing name."""
from __future__ import annotations

from collections.abc import Mapping

from . import wording as w
from ..rules import verdicts


def f3(value: float) -> str:
    """A measure or an accuracy as the chapter's tables print it: '0.998'."""
    return f"{value:.3f}"


def _gap(value: float) -> str:
    """A restricted-minus-trained gap as its size and side: '0.92 below', '0.06 above'."""
    return f"{abs(value):.2f} {w.against(value, 0, 2)}"


def _change(values) -> str:
    """A series from its first to its last value, signed: '-0.59 → -0.03' (no '-0.00')."""
    return f"{round(values[0], 2) + 0.0:+.2f} → {round(values[-1], 2) + 0.0:+.2f}"


def mechanism(L1: Mapping, L2: Mapping, ex: Mapping, final: Mapping) -> dict:
    """Layer 1's head (measures 2, 5 and 7), layer 2's identity map (measures 3 and 6, the diagonal contrast) and
    the example sequences' patterns (measure 4, the model's answers)."""
    return dict(l1_won=w.k_of_n(L1["won"], L1["positions"], "query positions"), m2=f3(L1["m2"]), m5=f3(L1["m5"]),
                m7=f3(L1["m7"]), l2_rows=w.k_of_n(L2["rows"], L2["n"], "rows"), m3=f3(L2["m3"]),
                off_rows=w.listing(L2["off"]), contrast=f"{L2['contrast']:.2f}", m6_pct=w.percent(L2["m6"]),
                m6=f3(L2["m6"]), m4=f3(final["m4_l1_eq_to_operands"]),
                examples_right=w.k_of_n(ex["right"], len(ex["predicted"]), "example sequences"),
                paper_answer=w.number(ex["paper"]["answer"]) if ex["paper"] else "–",
                paper_model_answer=(w.number(ex["paper"]["model"]) if ex["paper"] else
                                    "nothing (the example is not a sequence of this task)"))


def jump(J: Mapping, R: Mapping, m5_end: float) -> dict:
    """The circuit across the jump (`circuit_study.around_jump`) and the refinement window (`refinement`)."""
    t, window = J["table"], R["window"]
    b, a = (t.loc[J["before"]], t.loc[J["after"]]) if t is not None else (None, None)
    move = lambda column: f"{b[column]:.3f} to {a[column]:.3f}" if t is not None else "–"  # noqa: E731
    return dict(jump_step=w.number(J["jump"]) if J["jump"] else "–",
                before=w.number(J["before"]) if J["before"] else "–", after=w.number(J["after"]) if J["after"] else "–",
                jump_1var=move("1-var train"), jump_2var=move("2-var train"), jump_rows=move("identity rows"),
                jump_contrast=f"{b['diagonal contrast']:.2f} to {a['diagonal contrast']:.2f}" if t is not None else "–",
                m5_before=f3(b["measure 5"]) if t is not None else "–", m5_end=f3(m5_end),
                copies_when=w.which(t is not None and b["measure 5"] >= verdicts.COPY_LEVEL,
                                    "already copies before the jump: the previous-token head forms first",
                                    "is still forming its copy when the jump comes"),
                window=w.span(window) if window else "not detected in this run",
                restricted_sides=f"{w.listing(R['new_left'])} on the left, {w.listing(R['new_right'])} on the right",
                gap_first=_gap(R["score_gap"][0]) if R["scores"] else "–",
                gap_last=_gap(R["score_gap"][1]) if R["scores"] else "–",
                first_step=w.number(R["steps"][0]) if R["steps"] else "–",
                last_step=w.number(R["steps"][-1]) if R["steps"] else "–",
                gap_parts=w.listing(f"{name} {_change(values)}" for name, values in R["gaps"].items() if values))


def causal(A: Mapping, pa, PT: Mapping, RL: Mapping, modulus: int) -> dict:
    """The causal checks: layer 1 ablated (`circuit_study.ablation`), ablated by position (`position_ablation`),
    value patching and redirection (`patching`) and the relabel patch (`relabel`)."""
    follows = min(PT["value"].min(), PT["redirect"].min()) >= verdicts.RELABEL_LEVEL
    at = lambda pool, column: f3(pa.loc[pool, column]) if pool in pa.index else "–"  # noqa: E731
    return dict(addition=w.span(A["addition"], 3), addition_clean=w.span(A["addition_clean"], 3),
                variables=w.span(A["variables"], 3), variables_clean=w.span(A["variables_clean"], 3),
                without_distractor=w.share(round(1000 * A["without_distractor"]), 1000),
                with_distractor=w.span(A["with_distractor"], 3),
                split_words=w.which(A["broken"] and A["kept"], "the variable queries break and addition stays",
                                    "the variable queries and addition do not split cleanly"),
                chance_side=w.against(A["with_distractor"].min(), 1 / modulus), chance_level=f"1/{modulus}",
                one_clean=at("1var_train", "clean"), one_values=at("1var_train", "ablated at values"),
                two_clean=at("2var_train", "clean"), two_values=at("2var_train", "ablated at values"),
                zero_values=at("0var_train", "ablated at values"), one_eq=at("1var_train", "ablated at eq"),
                value_follows=w.percents(PT["value"]), redirect_follows=w.percents(PT["redirect"]),
                fetched=w.which(follows, "is fetched", "is not only fetched"),
                relabel_n=w.number(RL["n"]), relabel_attention=w.percent(RL["attention"]),
                relabel_answer=w.percent(RL["answer"]), relabel_kept=w.percent(RL["kept"]),
                label_match=w.which(min(RL["attention"], RL["answer"]) >= verdicts.RELABEL_LEVEL,
                                    "finds its operand by matching the label layer 1 copied",
                                    "does not only match the label layer 1 copied"))


def departure(DP: Mapping | None, n_vars: int) -> dict:
    """Where a seed's measure 3 departs from the mechanism (`circuit_study.departure`)."""
    names = ("dep_run", "dep_peak_m3", "dep_peak", "dep_fall", "dep_low_max", "dep_end", "dep_1var", "dep_2var",
             "dep_2var_trend", "dep_same", "dep_contrast", "dep_attention", "dep_answer", "dep_answer_trend",
             "dep_match", "dep_proxy")
    if DP is None or DP["fall"] is None:
        return {"n_vars": w.number(n_vars), **{k: "–" for k in names}}
    low, after = DP["low"], DP["after"]
    return dict(n_vars=w.number(n_vars), dep_run=w.seeds([DP["run"]]), dep_peak_m3=f3(DP["peak_m3"]),
                dep_peak=w.number(DP["peak"]), dep_fall=w.number(DP["fall"]),
                dep_low_max=f3(low["m3_l2_var_identity_qk"].max()), dep_end=w.number(DP["end"]),
                dep_1var=w.percents(low["1var_train"]), dep_2var=w.percents(low["2var_train"]),
                dep_2var_trend=w.trend(low["2var_train"].iloc[0], low["2var_train"].iloc[-1]),
                dep_same=w.k_of_n(DP["same"], DP["common"], "steps"),
                dep_contrast=w.span(after["diagonal contrast"].round(2), 2),
                dep_attention=w.percents(after["relabel: attention follows"]),
                dep_answer=w.percents(after["relabel: answer follows"]),
                dep_answer_trend=w.trend(after["relabel: answer follows"].iloc[0],
                                         after["relabel: answer follows"].iloc[-1]),
                dep_match=w.which(DP["held"], "is there throughout", "falls short too"),
                dep_proxy=w.which(DP["held"], "a proxy for the mechanism, and a brittle one",
                                  "not only a proxy: the mechanism departs too"))

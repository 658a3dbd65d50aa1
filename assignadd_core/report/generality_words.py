"""Chapter 14's tables and phrases (the mechanism on other tasks and shapes): the at-a-glance table with what each
shape fell short of, G4's fresh-seed table, and the phrases the chapter's Markdown pastes."""
from __future__ import annotations

import re

import pandas as pd

from ..rules import verdicts
from . import wording as w

NOT_RUN = "not yet run"


def shortfall(verdict: verdicts.Verdict | None) -> str:
    """Which seeds a shape's over-seeds verdict (`verdicts.over_seeds`) fell short in, and why: the text between its
    count and its per-seed numbers ('' where every seed reproduces it)."""
    if verdict is None or verdict.verdict == verdicts.REPRODUCED:
        return ""
    lead, _, seeds = verdict.text.partition("; per seed: ")
    reasons = {}  # a seed's own reason, where its numbers end with one in parentheses ("... (no sharp jump)")
    for entry in ("; " + seeds).split("; seed ")[1:]:
        name, _, rest = entry.partition(" ")
        if rest.endswith(")") and "(" in rest:
            reasons[f"seed {name}"] = rest[rest.rindex("("):]
    def with_reason(named: str) -> str:  # "partly in seed 43" or "seed 44", with its reason where it has none yet
        seed = re.search(r"seed \d+$", named)
        return f"{named} {reasons[seed.group()]}" if seed and seed.group() in reasons else named
    return "; ".join(", ".join(with_reason(n) for n in part.strip().split(", ")) for part in lead.split("; ")[1:])


def glance(runs: dict, reads: dict, labels: dict, seeds: int) -> pd.DataFrame:
    """One row per task or shape: seeds finished and composed, G1-G3's verdict words, and what fell short of them."""
    def word(read, g):
        return NOT_RUN if read is None or read.get(g) is None else read[g].verdict
    rows = {}
    for shape, shape_runs in runs.items():
        read = reads.get(shape)
        short = "; ".join(f"{g}: {shortfall(read[g])}" for g in ("G1", "G2", "G3")
                          if read is not None and shortfall(read.get(g)))
        rows[labels[shape]] = {"seeds finished": f"{len(shape_runs)} of {seeds}",
                               "composed": len(read["composed"]) if read else 0,
                               **{name: word(read, g) for g, name in (("G1", "G1 three phases"),
                                                                       ("G2", "G2 measures 2, 3, 6"),
                                                                       ("G3", "G3 Fourier features"))},
                               "short of the rule": short or "–"}
    return pd.DataFrame(rows).T.rename_axis("task or shape")


def fresh_table(outcomes: dict, labels: dict, planned: int) -> pd.DataFrame:
    """G4's fresh seeds: per shape, the runs finished and how many composed, with their exact interval."""
    from ..rules.stats import Rate
    rows = {}
    for shape, label in labels.items():
        done = [o[shape] for o in outcomes.values() if shape in o]
        rows[label] = {"runs finished": f"{len(done)} of {planned}",
                       "composed": Rate(sum(done), len(done)).text() if done else "–"}
    return pd.DataFrame(rows).T.rename_axis("task or shape")


def verdict_groups(reads: dict, labels: dict, g: str) -> str:
    """A rule's verdicts over the shapes, grouped: 'reproduced in modulus 97 and modulus 113; partly in ...'."""
    groups: dict[str, list[str]] = {}
    for shape, read in reads.items():
        if read.get(g) is not None:
            groups.setdefault(read[g].verdict, []).append(labels[shape])
    return "; ".join(f"{verdict} in {w.listing(names)}" for verdict, names in groups.items()) or "no seed composed"


def g4_phrases(g4: verdicts.Verdict, finished: int, planned: int) -> dict:
    """G4's reading on the fresh seeds in phrases: how many runs finished, and the test's words."""
    shown = ("a different rate: shown" if "different rate from the paper shape's: shown" in g4.text else
             "a different rate: not shown" if g4.verdict != verdicts.NOT_YET_RUN else NOT_RUN)
    return {"g4_finished": w.k_of_n(finished, planned, "fresh runs"), "g4_shown": shown}


def rows_per_pair(task) -> int:
    """How many 2-var training rows one operand pair can appear in (one per pair of variable labels a row may carry)."""
    from ..core.data import split_summary
    summary = split_summary(task)
    return summary["two_var_rows"] // summary["train_pairs"]


def paper_shape_words(config) -> str:
    """What the paper trains, as its quote: 'one configuration (modulus 59, 12 variables, 2 layers of 1 head); ...'."""
    shape = f"modulus {config.task.modulus}, {config.task.n_vars} variables, {config.model.n_layers} layers of" \
            f" {config.model.n_heads} head"
    return f"one configuration ({shape}); no statement about others"

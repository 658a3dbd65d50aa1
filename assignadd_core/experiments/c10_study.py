"""C10's experiments at copying onset and R3's double hold, read from their sweeps (chapter 9): each cell's arms in the
form the rules read (`analysis.steering`), the verdicts, and the counts the chapter's sentences give.

The arms, one name each (the book's glossary): the **twin** (no steering), the **held run** (the identity pattern
held), the **sham** (the wrong pairing held), the **push** and its sham (the identity component of each update
enlarged), the **clamp** and the **wrong-pairs clamp** (ten of twelve rows made to peak on their own or the next
variable), the **double-held run** and its sham (R3's second part).
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from ..analysis import steering
from ..rules import verdicts
from ..rules.study import current
from .sweep.store import finished_metrics, results_frame


@dataclass(frozen=True)
class OnsetStudy:
    held: list  # the necessity cells (`steering.hold_cells`): twin, removal (the held run), sham
    removal: list  # the update removal stated first (`steering.onset_cells` on c10_onset)
    push: list  # the push cells: twin, push and sham by share
    clamp: list  # the clamp cells: twin, clamp, sham
    double: list  # R3's double hold: twin, removal (the double-held run), sham
    finished: dict  # {sweep: (finished runs, planned runs)}
    c10: verdicts.Verdict


def hold_evals() -> int:
    return int(current()["composition"]["odds_hold"])


def read(names: dict | None = None) -> OnsetStudy:
    """Every onset sweep read (`names`: {"onset", "held", "push", "clamp", "double"}: their sweeps, by default the
    study's), and C10 by its rule."""
    from .sweep import SWEEPS  # the study's sweeps, read from its profile on first use (not at import)
    from .sweep.grid import C10_PUSH_SHARES, onset_cells
    names = {"onset": "c10_onset", "held": "c10_onset_hold", "push": "c10_onset_push", "clamp": "c10_onset_clamp",
             "double": "c10_onset_double_hold", **(names or {})}
    records = {role: results_frame(SWEEPS[name]) for role, name in names.items()}
    metrics = {k: v for role, name in names.items() for k, v in finished_metrics(SWEEPS[name], records[role]).items()}
    finished = {name: (int((records[role]["status"] == "done").sum()), len(SWEEPS[name].points()))
                for role, name in names.items()}
    hold = hold_evals()
    held = steering.hold_cells(records["onset"], records["held"], metrics, onset_cells(SWEEPS[names["onset"]]), hold)
    removal = steering.onset_cells(records["onset"], metrics, onset_cells(SWEEPS[names["onset"]]), hold)
    push = steering.onset_cells(records["push"], metrics, onset_cells(SWEEPS[names["push"]]), hold,
                                shares=C10_PUSH_SHARES)
    clamp = steering.clamp_cells(records["push"], records["clamp"], metrics, onset_cells(SWEEPS[names["clamp"]]),
                                 hold, verdicts.c10_design().C10_CLAMP_MARGIN)
    double = steering.hold_cells(records["onset"], records["double"], metrics, onset_cells(SWEEPS[names["double"]]),
                                 hold)
    return OnsetStudy(held, removal, push, clamp, double, finished, verdicts.c10_onset(held, push, clamp))


def complete(cells: list, arms=("twin", "removal", "sham")) -> bool:
    return bool(cells) and all(c[arm] is not None for c in cells for arm in arms)


def push_outcomes(push: list, share: float) -> dict:
    """At one push strength: how many stuck cells ended composed (and held) under the push, its sham and the twin,
    and in how many the push passed its check (measure 3 reached the identity level in its window)."""
    cells = [c for c in push if c["push"].get(share) is not None and c["twin"] is not None]
    return {"cells": len(cells), "pushed": sum(bool(c["push"][share]["held"]) for c in cells),
            "shams": sum(bool(c["sham"][share]["held"]) for c in cells if c["sham"].get(share) is not None),
            "twins": sum(bool(c["twin"]["held"]) for c in cells),
            "checked": sum(c["push"][share]["m3_max"] >= verdicts.C10_IDENTITY_LOW for c in cells)}


def delay_summary(cells: list) -> dict:
    """The necessity cells that entered the rule: the held run's delay against the twin and the sham (median and
    range, in steps), and how many held runs composed inside the hold."""
    delays = {arm: [d for d in verdicts._delays(cells, arm) if d is not None] for arm in ("twin", "sham")}
    return {**{f"{arm}_median": median(v) if v else None for arm, v in delays.items()},
            **{f"{arm}_range": (min(v), max(v)) if v else None for arm, v in delays.items()},
            "during": sum(verdicts._during(c["removal"]) for c in cells), "cells": len(cells)}


def dense_table(names) -> tuple:
    """The dense study (C10's rule before 2026-12-03): per finished dense run under runs/dense/, its C10 gradient
    numbers (`per_seed.c10_seed`) and the largest pool difference to its committed run on the steps both evaluated
    (zero where the dense run is the committed run's own). Returns (rows {run: numbers}, table)."""
    import pandas as pd

    from ..core.data import POOL_NAMES
    from ..core.run_folder import DEFAULT_ROOT, Run, run_path
    from .per_seed import c10_seed
    runs = {name: Run(run_path(name, DEFAULT_ROOT / "dense")) for name in names}
    runs = {name: run for name, run in runs.items() if run.final_path.is_file()}
    same = {}
    for name, run in runs.items():
        committed = Run(run_path(name.split("_")[0]))  # seed43_to8000 is seed 43
        if committed.metrics_path.is_file():
            a, b = run.metrics().set_index("step"), committed.metrics().set_index("step")
            both = [s for s in b.index if s in a.index and s <= int(a.index.max())]
            same[name] = float((a.loc[both, POOL_NAMES] - b.loc[both, POOL_NAMES]).abs().max().max()) if both else None
    rows = {name: c10_seed(run) for name, run in runs.items()}
    table = pd.DataFrame(rows).T
    if len(table):
        table["largest pool difference to the committed run"] = pd.Series(same)
    return rows, table


def fixed_windows(remove: str, add: str) -> dict:
    """C10's experiment of 2026-12-03 (fixed windows): each sweep's arms table (`steering.arms_table`) and metrics,
    the rule's inputs and its verdict (`verdicts.c10_causal`)."""
    from .sweep import SWEEPS
    arms = {}
    for name in (remove, add):
        records = results_frame(SWEEPS[name])
        metrics = finished_metrics(SWEEPS[name], records) if len(records) else {}
        arms[name] = (steering.arms_table(records if len(records) else records.assign(status=[]), metrics), metrics)
    removal = steering.removal_inputs(arms[remove][0], SWEEPS[remove].seeds)
    addition = steering.addition_inputs(arms[add][0], SWEEPS[add].seeds)
    return {"arms": arms, "removal": removal, "addition": addition,
            "verdict": verdicts.c10_causal(removal, addition)}


def sign_power_table(counts: dict, later=(0.6, 0.75, 0.9)):
    """What an exact one-sided sign test at C10's level can detect over each number of untied pairs ({what: pairs}):
    the pairs needed to reject and the probability of rejecting if each goes the stated way with probability `later`."""
    import pandas as pd

    from ..rules.stats import sign_test_power
    rows = []
    for what, pairs in counts.items():
        tests = [sign_test_power(pairs, q, verdicts.C10_ONSET_P) for q in later]
        rows.append({"test": what, "pairs": pairs, "needed to reject": tests[0]["needed"] or "none can",
                     **{f"power at {q:g}": round(t["power"], 2) for q, t in zip(later, tests)}})
    return pd.DataFrame(rows).set_index("test")


ARM_NAMES = {"twin": "twin", "removal": "held run", "sham": "sham"}


def _since(reading) -> int | None:
    if reading is None or reading["composed_at"] is None:
        return None
    return int(reading["composed_at"]) - int(reading["trigger"])


def figure_cells(entered: list, double: list) -> dict:
    """The onset figure's rows: per cell that entered C10's necessity test, each arm's time to compose after copying
    onset (None: never), with R3's double-held run and its sham where they have finished."""
    doubles = {c["cell"]: c for c in double}
    out = {}
    for c in entered:
        row = {ARM_NAMES[arm]: _since(c[arm]) for arm in ARM_NAMES}
        other = doubles.get(c["cell"])
        for arm, name in (("removal", "double-held run"), ("sham", "double sham")):
            if other is not None and other[arm] is not None:
                row[name] = _since(other[arm])
        out[c["cell"]] = row
    return out


def cells_table(held: list, clamp: list):
    """Every cell of the necessity and the clamp arms: the step its window followed, and per arm its highest and lowest
    measure 3 in the window, its mean measure 5 there and its time to compose."""
    import pandas as pd

    def arm(reading):
        if reading is None:
            return ["not run yet"] * 3
        return [f"{reading['m3_min']:.2f}–{reading['m3_max']:.2f}", round(reading["m5_mean"], 3),
                "never" if reading["composed_at"] is None else f"{reading['composed_at']:,}"]
    rows = []
    for study, cells, arms in (("necessity", held, ARM_NAMES),
                               ("clamp", clamp, {"twin": "twin", "clamp": "clamp", "sham": "wrong-pairs clamp"})):
        for c in cells:
            trigger = next((c[a]["trigger"] for a in arms if c[a] is not None), None)
            for key, name in arms.items():
                rows.append(["necessity" if study == "necessity" else "sufficiency", c["cell"],
                             "–" if trigger is None else f"{trigger:,}", name, *arm(c[key])])
    return pd.DataFrame(rows, columns=["test", "cell", "onset at", "arm", "measure 3 in the window",
                                       "measure 5, mean", "composed at"]).set_index(["test", "cell", "arm"])


def first_push(push: list) -> tuple:
    """The weakest push strength with its outcomes (`push_outcomes`) and its highest measure 3 in any window."""
    share = min((float(s) for c in push for s in c["push"]), default=0.0)
    readings = [c["push"].get(share) for c in push if c["push"].get(share) is not None]
    return push_outcomes(push, share), share, max((r["m3_max"] for r in readings), default=None)

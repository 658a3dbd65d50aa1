"""How reliable are the three phases? Statistics of the detected phases over many seeds of one config.

* `phase_steps`: one row per run with the detector's steps, whether it composed (`verdicts.composed` of its
  last eval row's `1var_train`), whether the detector found a sharp jump, and whether it found all three phases.
* `step_statistics`: median and range of each transition over the runs that reached it.
* `composition_rate`: the share of runs that composed, with an exact (Clopper–Pearson) binomial interval.
"""
from __future__ import annotations

import pandas as pd
import torch

from ..rules.stats import Rate
from ..rules.verdicts import LEARNED_LEVEL, composed  # noqa: F401  (LEARNED_LEVEL re-exported)
from .phases import detect_phases
from ..measure.measures import eq_attends_to_operands, role_activations, value_positions
from ..core.data import eval_pools, sample_queries
from .interventions import predict

TRANSITIONS = ("addition", "composition", "jump", "refinement_start", "refinement", "refinement_end")


def phase_steps(metrics_by_run: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Detected steps per run (None where not found), plus `composed` (variable assignment learned by the end),
    `sharp_jump` (the detector found the jump), `all_three` (jump and final rise found) and the last step."""
    rows = []
    for name, metrics in metrics_by_run.items():
        p = detect_phases(metrics)
        learned = composed(metrics.sort_values("step")["1var_train"].iloc[-1])
        rows.append({"run": name, **{k: p[k] for k in TRANSITIONS}, "composed": learned,
                     "sharp_jump": p["jump"] is not None,
                     "all_three": p["jump"] is not None and p["refinement"] is not None,
                     "last_step": int(metrics["step"].max())})
    return pd.DataFrame(rows).set_index("run")


def step_statistics(steps: pd.DataFrame) -> pd.DataFrame:
    """Per transition: how many runs reached it, median, min and max step."""
    rows = []
    for key in TRANSITIONS:
        values = pd.to_numeric(steps[key], errors="coerce").dropna()
        rows.append({"transition": key, "runs": int(len(values)),
                     "median": float(values.median()) if len(values) else None,
                     "min": int(values.min()) if len(values) else None,
                     "max": int(values.max()) if len(values) else None})
    return pd.DataFrame(rows).set_index("transition")


def composition_rate(successes: int, trials: int, level: float = 0.95) -> Rate:
    """The share with its exact binomial (Clopper–Pearson) interval."""
    return Rate(successes, trials, level)


# ---------------------------------------------------------------------------- what a model that never composed answers
SHORTCUTS = ("correct", "most recent value", "first value", "literal twice", "literal alone")


def shortcut_answers(task, batch) -> dict:
    """The answer each rule gives on 1-var sequences: the correct sum; the most recent or the first value in
    the prefix plus the literal (lookup by position instead of by variable); twice the literal; the literal."""
    n = task.modulus
    literal = torch.where(batch.lhs_var >= 0, batch.rhs_val, batch.lhs_val)
    is_value = value_positions(batch, task)
    positions = torch.arange(batch.tokens.shape[1])
    last = torch.where(is_value, positions, -1).max(1).values.clamp(min=0)
    first = torch.where(is_value, positions, batch.tokens.shape[1]).min(1).values.clamp(max=task.prefix_len - 1)
    rows = torch.arange(len(batch))
    return {"correct": batch.answers,
            "most recent value": (batch.tokens[rows, last] + literal) % n,
            "first value": (batch.tokens[rows, first] + literal) % n,
            "literal twice": (2 * literal) % n,
            "literal alone": literal % n}


def shortcut_batch(task, n: int, seed: int = 0):
    """Up to n 1-var training sequences (variable on an allowed side) in which the correct answer and the
    first four rules' answers all differ, so that each answer names one rule."""
    pool = sample_queries(task, 20 * n, torch.Generator().manual_seed(seed), kind="1var_train")
    answers = shortcut_answers(task, pool)
    values = torch.stack([answers[k] for k in SHORTCUTS[:4]], 1)
    distinct = (values[:, :, None] != values[:, None, :]).sum((1, 2)) == values.shape[1] * (values.shape[1] - 1)
    return pool[torch.nonzero(distinct).flatten()[:n]]


def shortcut_table(model, n: int = 2000, seed: int = 0) -> dict[str, float]:
    """Share of the model's answers on `shortcut_batch` that each rule predicts (they can add up to less
    than 1: 'other'), and how many sequences were used."""
    task = model.config.task
    batch = shortcut_batch(task, n, seed)
    guess = predict(model, batch.tokens)
    answers = shortcut_answers(task, batch)
    out = {rule: float((guess == answers[rule]).float().mean()) for rule in SHORTCUTS}
    named = sum((guess == answers[rule]) for rule in SHORTCUTS) > 0
    out["other"] = float((~named).float().mean())
    out["n"] = int(len(batch))
    return out


# ---------------------------------------------------------------------------- where `=` looks in layer 1
def eq_attention_by_query(model, rows: int = 256, pools=("0var_train", "1var_train", "1var_var_restricted")):
    """Layer-1 attention from `=` on the first `rows` sequences of each pool: the share whose top 2 are the
    two operand positions (progress measure 4, per pool) and where the top 1 falls: the operand that is a
    variable, the literal operand (1-var only), or elsewhere. Measure 4 pools 0-var and 1-var rows, so a
    model that attends to the operands only when both are numbers scores exactly the 0-var share of its batch."""
    task = model.config.task
    lhs_at, rhs_at = task.operand_positions
    table = []
    with torch.no_grad():
        for name in pools:
            batch = eval_pools(task)[name][:rows]
            eq = role_activations(model, batch.tokens).copy_pattern[:, -1].float().cpu()
            top = eq.argmax(-1)
            var_pos = torch.where(batch.lhs_var >= 0, lhs_at, torch.where(batch.rhs_var >= 0, rhs_at, -1))
            lit_pos = torch.where(batch.lhs_var >= 0, rhs_at, torch.where(batch.rhs_var >= 0, lhs_at, -1))
            table.append({"pool": name, "top 2 = both operands": float(eq_attends_to_operands(eq, task).float().mean()),
                          "top 1 = variable operand": float((top == var_pos).float().mean()),
                          "top 1 = literal operand": float((top == lit_pos).float().mean()),
                          "n": int(len(batch))})
    return pd.DataFrame(table).set_index("pool")


# ---------------------------------------------------------------------------- the reliability chapter's readings
STALL_COLUMNS = ["gradient: whitened contrast", "gradient: share in span of the copies",
                 *(f"answers: {k}" for k in (*SHORTCUTS, "other"))]  # `stall_table`'s columns beside the measures


def sweep_flips(by_seed: dict) -> dict:
    """The first seed that composes at the paper's settings but not at some sweep setting (`down`) and the first that
    does not but composes at one (`up`): (seed, its settings), or None."""
    down = next(((s, r["failed"]) for s, r in by_seed.items() if r["at_paper"] is True and r["failed"]), None)
    up = next(((s, r["won"]) for s, r in by_seed.items() if r["at_paper"] is False and r["won"]), None)
    return {"down": down, "up": up}


def stall_table(runs: dict, models: dict, measures: list[str], shortcut_rows: int) -> pd.DataFrame:
    """At the end of training, per run: its progress measures and pool accuracies (`measures`, from the metrics'
    last row), the final model's gradient on W_QK2 against the variable copies (whitened contrast, share in their
    span; cached beside the run) and what it answers on designed 1-var sequences (`shortcut_table`)."""
    import torch
    from .series import final_values
    rows = {}
    for name, model in models.items():
        with torch.enable_grad():  # the final model's gradient on the batches after its last step, cached
            g = final_values(runs[name], "gradient_identity")
        shortcuts = shortcut_table(model, shortcut_rows)
        rows[name] = {**runs[name].metrics().iloc[-1][measures].to_dict(),
                      "gradient: whitened contrast": g["grad_white_contrast"],
                      "gradient: share in span of the copies": g["grad_fraction_in_subspace"],
                      **{f"answers: {k}": shortcuts[k] for k in (*SHORTCUTS, "other")}}
    return pd.DataFrame(rows).T


def uniform_pick(task, n: int) -> float:
    """The share of designed 1-var sequences a uniform pick among the prefix values answers right."""
    batch = shortcut_batch(task, n)
    return float((1 / batch.n_assign.double()).mean())


def measure4_pools() -> tuple[int, int]:
    """How many 0-var and 1-var pools measure 4 reads (as many rows of each)."""
    from ..core.data import POOLS
    return sum(s.query == 0 for s in POOLS), sum(s.query == 1 for s in POOLS)


def measure4_share() -> float:
    """The 0-var share of the rows measure 4 reads: what a model scores that attends to both operands only when both
    are numbers."""
    zero, one = measure4_pools()
    return zero / (zero + one)


def r1_text(composed: Rate, all_three: Rate, steps: int, jump: pd.Series, missing: list) -> str:
    """R1's record: the seeds that composed and those with all three phases (with their intervals), the median jump
    and its range (`jump`: step_statistics' row), and how many seeds are not run yet."""
    return (f"{composed.describe()} seeds composed within {steps:,} steps, {all_three.describe()} with all three phases"
            + (f"; median jump {jump['median']:,.0f} (range {jump['min']:,.0f}–{jump['max']:,.0f})" if jump["runs"] else "")
            + (f"; {len(missing)} seeds not yet run" if missing else ""))

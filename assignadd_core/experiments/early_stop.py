"""Stopping once composed (`EarlyStop`, its setting `stop_when_composed`): a composition study needs a run's outcome,
not the rest of the run. A stuck run runs to `train.steps`."""
from __future__ import annotations

from dataclasses import dataclass

from ..core import trainer
from ..core.config import ConfigError, Settings
from ..rules.verdicts import LEARNED_LEVEL


@dataclass(frozen=True)
class EarlyStopSettings(Settings):
    """Stop once 1-var train accuracy >= LEARNED_LEVEL has held for `stop_when_composed` evaluations in a row (0:
    never stop early)."""

    name = "early_stop"
    stop_when_composed: int = 0

    def __post_init__(self) -> None:
        value = self.stop_when_composed
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
            raise ConfigError(f"stop_when_composed must be an integer >= 0, got {value!r}")


def composed_row(row: dict) -> bool:
    return bool(row["1var_train"] >= LEARNED_LEVEL)


@trainer.register
class EarlyStop(trainer.Plugin):
    """Stop once composition has held for `stop_when_composed` evaluations in a row (0: never); a steered run's
    composition counts once it holds without the steering (the other plug-ins hold the stop back until then). The
    streak is counted in every run that logs 1-var train accuracy (a resumed or branched run keeps it)."""

    Settings = EarlyStopSettings
    order = 40

    def restore(self, state):
        return {"composed_streak": state.get("composed_streak", 0)}  # evals in a row with 1-var train composed

    def at_eval(self, row, counters):
        if "1var_train" in row:
            counters["composed_streak"] = counters["composed_streak"] + 1 if composed_row(row) else 0

    def should_stop(self, counters, step):
        wanted = self.settings.stop_when_composed
        return wanted > 0 and counters["composed_streak"] >= wanted

    def final_fields(self, counters, last_step):
        steps = self.config.train.steps  # only runs that may stop early say so
        return {"step_budget": steps, "stopped_early": "composed" if last_step < steps else None} \
            if self.settings.stop_when_composed else {}

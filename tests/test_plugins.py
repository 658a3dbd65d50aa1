"""A new intervention is one plug-in with its settings, registered once: the settings join every run's config and its
hash (every committed run keeps its key), and the plug-in acts alike in a run trained alone, in a stack and in a
sweep."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from assignadd_core.core import config as config_module
from assignadd_core.core import trainer
from assignadd_core.core.config import ConfigError, RunConfig, Settings, all_keys
from assignadd_core.core.run_folder import Run
from assignadd_core.experiments import stacked, training
from assignadd_core.experiments.sweep import Sweep, read_records, results_path, run_sweep, scratch_dir
from test_stacked import same_run
from tiny import TINY

SEED42_HASH = "35c0d33b9461"


@dataclass(frozen=True)
class ShrinkSettings(Settings):
    """After every update from step `shrink_from` on, every weight *= 1 - shrink (0: never)."""

    name = "shrink"
    shrink: float = 0.0
    shrink_from: int = 1

    def __post_init__(self) -> None:
        if not (isinstance(self.shrink, (int, float)) and not isinstance(self.shrink, bool) and 0 <= self.shrink < 1):
            raise ConfigError(f"shrink must lie in [0, 1), got {self.shrink!r}")

    def settle(self, config: RunConfig) -> "ShrinkSettings":
        if self.shrink_from > config.train.steps:
            raise ConfigError(f"shrink_from must not come after the last step ({config.train.steps}),"
                              f" got {self.shrink_from}")
        return self if self.shrink else ShrinkSettings()  # without a size it does nothing: the plain run


class Shrink(trainer.Plugin):
    Settings = ShrinkSettings

    @property
    def acts_on_steps(self) -> bool:
        return self.settings.shrink > 0

    def restore(self, state):
        return {"shrunk": state.get("shrunk", 0)}

    @torch.no_grad()
    def after_update(self, model, step, counters):
        if self.settings.shrink and step >= self.settings.shrink_from:
            for p in model.parameters():
                p.mul_(1 - self.settings.shrink)
            counters["shrunk"] += 1

    def final_fields(self, counters, last_step):
        return {"shrunk_steps": counters["shrunk"]} if self.settings.shrink else {}


@pytest.fixture
def shrink():
    trainer.register(Shrink)
    yield
    trainer.PLUGINS.remove(Shrink)
    del config_module.INTERVENTIONS["shrink"]


def test_its_settings_join_every_config_and_its_hash_and_leave_every_other_key(shrink):
    plain = RunConfig().replace(**TINY)
    shrunk = plain.replace(shrink=0.05, shrink_from=11)
    assert shrunk.interventions.shrink == 0.05 and shrunk.interventions.of("shrink").shrink_from == 11
    assert shrunk.to_dict()["interventions"] == {"shrink": 0.05, "shrink_from": 11}
    assert RunConfig.from_json(shrunk.to_json()) == shrunk == plain.replace(**{"interventions.shrink": 0.05,
                                                                              "shrink_from": 11})
    assert shrunk.hash() != plain.hash() != plain.replace(shrink=0.05).hash() != shrunk.hash()
    assert plain.replace(shrink=0.0, shrink_from=20) == plain and RunConfig().hash() == SEED42_HASH
    assert {"interventions.shrink", "interventions.shrink_from"} <= set(all_keys())  # a command-line flag each
    for bad, message in (({"shrink": 1.5}, "shrink must lie in"), ({"shrink": 0.1, "shrink_from": 99}, "shrink_from")):
        with pytest.raises(ConfigError, match=message) as caught:
            plain.replace(**bad)
        assert "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match=r"its name or a setting \(shrink, shrink_from\) names another"):
        trainer.register(type("Again", (trainer.Plugin,), {"Settings": type(
            "Clash", (ShrinkSettings,), {"name": "clash", "__annotations__": {}})}))


def test_a_plugin_registered_once_acts_in_a_single_a_stacked_and_a_swept_run(shrink, tmp_path, single_thread):
    plain = RunConfig().replace(**TINY)
    shrunk = plain.replace(shrink=0.05)
    alone = training.train(shrunk, tmp_path / "alone", progress=False, compile="off")
    assert alone.final()["shrunk_steps"] == TINY["steps"]
    untouched = training.train(plain, tmp_path / "plain", progress=False, compile="off")
    assert "shrunk_steps" not in untouched.final() and not alone.metrics()["loss"].equals(untouched.metrics()["loss"])
    # stacked beside a run without it: the shrunk run is the run alone, bit for bit, and the other is left alone
    runs = stacked.train_stacked([shrunk, plain], [tmp_path / "s0", tmp_path / "s1"], progress=False, compile="off")
    same_run(alone, runs[0])
    same_run(untouched, runs[1])
    assert runs[0].final()["shrunk_steps"] == TINY["steps"] and runs[0].final()["stacked"] == 2
    # swept: the point's config carries the setting, its key is the shrunk run's hash, its result the run alone's
    sweep = Sweep("shrunk", {}, metric="0var_heldout", base={**TINY, "interventions.shrink": 0.05}, seeds=(42,))
    assert run_sweep(sweep, results_dir=tmp_path / "sweep", workers=1, progress=False, compile="off")["done"] == 1
    record, = read_records(results_path(sweep, tmp_path / "sweep"))
    assert record["key"] == shrunk.hash() and RunConfig.from_dict(record["config"]) == shrunk
    assert record["exact"] == alone.final()["exact"] and record["pools"] == alone.final()["pools"]
    swept = Run(scratch_dir(tmp_path / "sweep") / record["key"])
    assert swept.final()["shrunk_steps"] == TINY["steps"]

"""The glossary page's values (book/glossary.md): the levels, windows, strengths and counts its definitions state, read
from where the code and the study profile set them, so that the page never states another value than the runs used.

The page writes them as MyST substitutions (`{{ window_steps }}`); this module is also a Sphinx extension (listed in
_config.yml) that hands `values()` to the parser when the book is built. `ANCHORS` are the terms' anchors
(glossary.html#twin …): a chapter links a term as `[twin](#twin)` (MyST finds the label on the glossary page) or {ref}`twin`; the book's tests check
that the page defines every one of them.
"""
from __future__ import annotations

ANCHORS = (
    # C10's experiment at copying onset: its arms, and when and how long they act
    "twin", "held-run", "sham", "push", "clamp", "wrong-pairs-clamp", "window", "copying-onset",
    # runs and their outcomes
    "cell", "initialization", "data-order", "composed", "time-to-compose", "replicate", "nudge", "gradient-noise",
    "basin", "chaos",
    # the progress measures, by number and role
    "progress-measures", "measure-1", "measure-2", "measure-3", "measure-4", "measure-5", "measure-6", "measure-7",
    # the data
    "query-types", "pools", "train-pool", "add-restricted", "var-restricted", "exact-sets", "f", "r",
    # the lookup's route
    "route",
)


def _number(value: float) -> str:
    """A level or a count as the book writes it: 0.9, 0.95, 3,000, 16, 1.74."""
    return f"{value:,}" if float(value).is_integer() and abs(value) >= 1000 else f"{value:g}"


def values() -> dict[str, str]:
    """Every substitution of book/glossary.md, as text."""
    from ..core.config import RunConfig
    from ..core.data import POOLS
    from ..measure.measures import MEASURE_NAMES
    from ..experiments.qk_steering import rows_clamped
    from ..rules.study import current
    from ..rules.verdicts import LEARNED_LEVEL, R2_MIN_REPLICATES
    study = current()
    onset, composition = study["c10"]["onset"], study["composition"]
    config = RunConfig()
    shares = [_number(s) for s in onset["push_shares"]]
    return {
        "composed_level": _number(LEARNED_LEVEL),
        "copying_level": _number(onset["trigger"]),
        "window_steps": _number(onset["window"]),
        "push_shares": " or ".join(shares),
        "clamp_rows": str(rows_clamped(config.task.n_vars)),
        "n_vars": str(config.task.n_vars),
        "clamp_margin": _number(onset["clamp_margin"]),
        "hold_evaluations": str(composition["odds_hold"]),
        "eval_every": _number(config.train.eval_every),
        "replicates": str(R2_MIN_REPLICATES),
        "replicate_nudge": f"{composition['odds_nudge']['jitter']:.0e}".replace("e-0", "e-"),
        "paper_f": _number(config.task.train_fraction),
        "paper_r": _number(config.task.two_var_rate),
        "nudge_seeds": ", ".join(str(s) for s in composition["odds_nudge"]["perturb_seeds"]),
        "modulus": str(config.task.modulus),
        "pool_count": str(len(POOLS)),
        "measure_count": str(len(MEASURE_NAMES)),
    }


def _substitute(app, config) -> None:
    config.myst_substitutions = {**(config.myst_substitutions or {}), **values()}


def setup(app):
    app.connect("config-inited", _substitute)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""What every chapter does in its second cell: `P = start_chapter(globals())`.

It fills the parameters left at None from the study profile (`STUDY_PARAMETERS`: the runs and sweeps a chapter
reads are named in `studies/`, not in the chapters), validates the parameters (papermill passes unknown names
through silently, so a misspelled one would otherwise be ignored), prints the one-line "parameters of this
execution", and sets up plotly's renderer, seeds and warning filters (see `plots.setup_plotly`), and pandas to show
every table cell whole.

This module is every chapter's first import, so it imports the rest of the package (and IPython) inside the functions
that use them: the chapter's warning filters are set (`start_chapter`) before torch and the trainer load and warn.
"""
from __future__ import annotations

import ast
import json
import textwrap
import warnings
from types import SimpleNamespace

INJECTED_MARK = "# Parameters"  # papermill starts its injected cell with this comment
TABLE_ROWS = 200  # the most rows a chapter's table shows whole


def _main_seeds() -> list[int]:
    from ..rules.study import current, seed_range
    return list(seed_range(current()["runs"]["seeds"]))


def _main_runs() -> list[str]:
    return [f"seed{seed}" for seed in _main_seeds()]


def _profile_value(*path: str):
    """A value of a study profile by its keys; "paper" is the study this process runs (`study.current`)."""
    from ..rules.study import current, profile
    value = current() if path[0] == "paper" else profile(path[0])
    for key in path[1:]:
        value = value[key]
    return value


# A chapter parameter left at None takes this value from the study profile (by parameter name).
STUDY_PARAMETERS = {
    "run": lambda: _profile_value("paper", "runs", "main", "name"),
    "seed": lambda: _profile_value("paper", "runs", "main", "seed"),
    "steps": lambda: _profile_value("paper", "paper_numbers", "main_steps", "value"),
    "runs": _main_runs,
    "main_runs": _main_runs,
    "seed_runs": _main_runs,
    "seeds": _main_seeds,
    "dense_runs": lambda: _profile_value("paper", "runs", "dense"),
    "rescue_source": lambda: _profile_value("paper", "runs", "rescue_source"),
    "continued_steps": lambda: _profile_value("paper", "runs", "continued_steps"),
    "near_sweeps": lambda: _profile_value("paper", "runs", "near_sweeps"),
    "steering_sweeps": lambda: _profile_value("paper", "runs", "steering_sweeps"),
    "onset_sweeps": lambda: _profile_value("paper", "runs", "onset_sweeps"),
    "paper_composition_sweep": lambda: _profile_value("paper", "runs", "composition_sweep"),
    "design": lambda: _profile_value("paper", "runs", "composition_design"),
    "replicates": lambda: _profile_value("paper", "runs", "composition_replicates"),
    "flips": lambda: _profile_value("paper", "runs", "composition_flips"),
    "sweeps": lambda: _profile_value("paper", "runs", "composition_sweeps"),
    "mode_seed": lambda: _profile_value("paper", "runs", "mode_seed"),
    "shapes": lambda: list(_profile_value("generality", "shapes")),
    "study_seeds": lambda: _profile_value("generality", "seeds"),
    "study_folder": lambda: _profile_value("generality", "folder"),
    "paper_runs": lambda: _profile_value("generality", "paper_runs"),
    "coverage_sweep": lambda: _profile_value("generality", "coverage_sweeps", "vars24"),
    "reference_sweep": lambda: _profile_value("generality", "coverage_sweeps", "vars12"),
}


class ParameterError(ValueError):
    """A chapter parameter is unknown or has the wrong type."""


def _assigned_literals(source: str) -> dict[str, object]:
    """Names assigned at top level of a parameters cell, with their literal values."""
    values = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                values[node.targets[0].id] = None  # not a literal: no type check
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            values[node.target.id] = ast.literal_eval(node.value)
    return values


def _left_at_none(source: str) -> list[str]:
    """Names a parameters cell assigns the literal None (not an expression it cannot read)."""
    return [node.targets[0].id for node in ast.parse(source).body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant) and node.value.value is None]


def _compatible(default: object, value: object) -> bool:
    if default is None or value is None:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, (int, float)) and isinstance(value, (int, float)):
        return not (isinstance(default, int) and isinstance(value, float) and not value.is_integer())
    if isinstance(default, (list, tuple)) and isinstance(value, (list, tuple)):
        return True
    return isinstance(value, type(default))


def check_parameters(history: list[str], namespace: dict) -> dict[str, object]:
    """From the kernel's input history: the parameters cell is the first executed cell (or the one
    before papermill's injected cell); a parameter left at None there that `STUDY_PARAMETERS` names takes the
    study profile's value (written into `namespace` unless injected); every injected name must be one of its
    names, with a value of a compatible type (the profile's value's type, for those). A list, tuple or dict
    parameter given as a string (papermill's `-p` passes strings) is parsed (JSON, then a Python literal) and the
    parsed value written back into `namespace`.
    Returns the parameters' current values."""
    cells = [c for c in history if c.strip()]
    injected = [i for i, c in enumerate(cells) if c.lstrip().startswith(INJECTED_MARK)]
    if injected:
        index = injected[-1]
        params_source, injected_source = (cells[index - 1] if index > 0 else ""), cells[index]
    else:
        params_source, injected_source = (cells[0] if cells else ""), ""
    defaults = _assigned_literals(params_source)
    given = _assigned_literals(injected_source)
    for name in _left_at_none(params_source):
        if name in STUDY_PARAMETERS:
            defaults[name] = STUDY_PARAMETERS[name]()
            if name not in given:
                namespace[name] = defaults[name]
    for name, value in given.items():
        if name not in defaults:
            raise ParameterError(f"unknown chapter parameter {name!r}; this chapter takes: {', '.join(defaults)}")
        parsed = _parse_container(defaults[name], value)
        if parsed is not _NOT_PARSED:
            namespace[name] = value = parsed  # the chapter uses the list/dict, not papermill's string
        if not _compatible(defaults[name], value):
            hint = (f" (papermill -p passes text: write it as JSON, e.g. -p {name} '{json.dumps(defaults[name])}')"
                    if isinstance(value, str) and isinstance(defaults[name], (list, tuple, dict)) else "")
            raise ParameterError(f"parameter {name!r} should be a {type(defaults[name]).__name__} like"
                                 f" {defaults[name]!r}, got {value!r}{hint}")
    return {name: namespace.get(name) for name in defaults}


_NOT_PARSED = object()


def _parse_container(default: object, value: object) -> object:
    """papermill's `-p NAME VALUE` injects VALUE as a string unless it reads as a number, bool or None,
    so `-p runs '["seed7"]'` arrives as the text '["seed7"]'. For a list, tuple or dict parameter, such a
    string is read as JSON, else as a Python literal; the value is returned when it then has a compatible
    type, otherwise `_NOT_PARSED` (and the type check names the parameter)."""
    if not isinstance(default, (list, tuple, dict)) or not isinstance(value, str):
        return _NOT_PARSED
    for parse in (json.loads, ast.literal_eval):
        try:
            parsed = parse(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if not isinstance(parsed, str) and _compatible(default, parsed):
            return parsed
    return _NOT_PARSED


def start_chapter(namespace: dict, show: bool = True) -> SimpleNamespace:
    """Validate parameters, print them in one line, set up plotting; returns them as attributes."""
    params = check_parameters(list(namespace.get("In", [])), namespace)
    warnings.filterwarnings("ignore", category=UserWarning, module="tqdm")  # before the imports below, which load it
    warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm.auto without ipywidgets: text bar
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    import pandas as pd

    from .plots import setup_plotly
    setup_plotly()
    # a table shows every cell whole (pandas cuts a cell at 50 characters with "...") and, up to TABLE_ROWS rows, every
    # row (pandas shows 10 of a table over 60 rows, with a row of "..."); a longer table belongs in a download
    pd.set_option("display.max_colwidth", None)
    pd.set_option("display.max_rows", TABLE_ROWS)
    if show:
        show_parameters(params)
    return SimpleNamespace(**params)


def show_parameters(params: dict) -> None:
    """The execution's parameters, folded: a one-line summary that opens onto a table in the book, the wrapped
    line in a terminal (papermill --log-output) and in text-only frontends."""
    import html

    from IPython.display import HTML, display
    text = "Parameters of this execution: " + (", ".join(f"{k}={v!r}" for k, v in params.items()) or "none")
    rows = "".join(f"<tr><td><code>{html.escape(k)}</code></td><td><code>{html.escape(repr(v))}</code></td></tr>"
                   for k, v in params.items())

    class Folded(HTML):
        def __repr__(self) -> str:
            return textwrap.fill(text, width=110, subsequent_indent="    ", break_long_words=False)

    display(Folded(f'<details class="parameters"><summary>Parameters of this execution ({len(params)})</summary>'
                   f"<table><tbody>{rows}</tbody></table></details>"))


def chapter_run(P: SimpleNamespace, analysis_only: bool = True):
    """The run a single-run chapter reads, from its `run`, `seed`, `steps`, `overrides` and `device`
    parameters: (config, Run, final model in eval mode). The run is trained first when it does not exist
    (with a progress bar). With `analysis_only`, gradients are switched off afterwards for the kernel."""
    import torch

    from ..core.config import RunConfig
    from ..experiments.named_runs import train_or_load
    config = RunConfig().replace(seed=P.seed, steps=P.steps, **P.overrides)
    run = train_or_load(config, name=P.run, device=P.device)
    if analysis_only:
        torch.set_grad_enabled(False)
    return config, run, run.load_model().eval()

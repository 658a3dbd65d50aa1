"""Chapter parameters (`notebook.check_parameters`): papermill's injected cell may only set names of the
parameters cell, with values of a compatible type; anything else stops the chapter with a message."""
from __future__ import annotations

import pytest

from assignadd_core.notebook import ParameterError, check_parameters

DEFAULTS = """\
steps = 300
rate = 0.5
flag = False
runs = ["seed42"]
label = "book"
device = None
seeds = list(range(3))
"""
NAMESPACE = {"steps": 300, "rate": 0.5, "flag": False, "runs": ["seed42"], "label": "book", "device": None,
             "seeds": [0, 1, 2], "other": 1}


def history(injected: str | None) -> list[str]:
    cells = ["import os", DEFAULTS] if injected is None else [DEFAULTS, f"# Parameters\n{injected}\n"]
    return cells + ["P = start_chapter(globals())"]


def check(injected: str | None):
    return check_parameters(history(injected) if injected is not None else [DEFAULTS, "P = 1"], NAMESPACE)


def test_returns_the_current_values_of_the_parameters_cell():
    expected = {k: NAMESPACE[k] for k in ("steps", "rate", "flag", "runs", "label", "device", "seeds")}
    assert check(None) == expected
    assert check("steps = 10\nruns = ['a', 'b']") == expected  # values come from the kernel's namespace


@pytest.mark.parametrize("injected", [
    "steps = 40", "steps = 40.0",  # an integral float for an int
    "rate = 1", "rate = 0.25",  # an int for a float
    "flag = True",
    "runs = ('seed1', 'seed2')", "runs = []",  # any list or tuple for a list
    "label = 'ci'",
    "device = 'cuda'", "device = 3",  # None default: anything
    "seeds = [1, 2]",  # not a literal default: no type check
    "steps = None",  # None injected: no check
])
def test_compatible_values_pass(injected):
    check(injected)


@pytest.mark.parametrize("injected, message", [
    ("steps = 'forty'", "parameter 'steps' should be a int like 300, got 'forty'"),
    ("steps = 2.5", "parameter 'steps' should be a int"),
    ("steps = True", "parameter 'steps' should be a int"),
    ("flag = 1", "parameter 'flag' should be a bool like False, got 1"),
    ("flag = 'yes'", "parameter 'flag' should be a bool"),
    ("rate = '0.5'", "parameter 'rate' should be a float"),
    ("rate = False", "parameter 'rate' should be a float"),
    ("runs = 'seed42'", "parameter 'runs' should be a list like ['seed42'], got 'seed42'"),
    ("label = 3", "parameter 'label' should be a str"),
    ("label = ['book']", "parameter 'label' should be a str"),
])
def test_type_errors_name_the_parameter(injected, message):
    with pytest.raises(ParameterError) as err:
        check(injected)
    assert str(err.value).startswith(message)


def test_unknown_name_lists_the_chapters_parameters():
    with pytest.raises(ParameterError, match=r"unknown chapter parameter 'step'; this chapter takes: steps, rate,"):
        check("step = 10")


def test_parameters_cell_is_the_one_before_the_injected_cell():
    """With earlier cells run first (re-executions in one kernel), the last injected cell and the cell
    right before it decide; the first executed cell is the parameters cell only without injection."""
    cells = ["x = 1", "# Parameters\nx = 2", DEFAULTS, "# Parameters\nsteps = 7", "P = start_chapter(globals())"]
    assert set(check_parameters(cells, NAMESPACE)) == {"steps", "rate", "flag", "runs", "label", "device", "seeds"}
    with pytest.raises(ParameterError, match="unknown chapter parameter 'steps'; this chapter takes: x$"):
        check_parameters(["x = 1", "# Parameters\nsteps = 7"], NAMESPACE)
    assert check_parameters(["", "  ", DEFAULTS, "P = 1"], NAMESPACE)["steps"] == 300  # blank cells skipped

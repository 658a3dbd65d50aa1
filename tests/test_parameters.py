"""Chapter parameters (`notebook.check_parameters`): papermill's injected cell may only set names of the
parameters cell, with values of a compatible type; anything else stops the chapter with a message."""
from __future__ import annotations

import pytest

from assignadd_core.report.chapter import ParameterError, check_parameters

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


# ------------------------------------------------------------------ papermill -p: strings for lists and dicts
CONTAINERS = """\
runs = ["seed42"]
seeds = [42]
pair = (1, 2)
overrides = {}
steps = 300
label = "book"
"""


def check_injected(injected: str, namespace: dict) -> dict:
    return check_parameters([CONTAINERS, f"# Parameters\n{injected}\n", "P = start_chapter(globals())"], namespace)


@pytest.mark.parametrize("injected, name, expected", [
    ("runs = '[\"seed7\"]'", "runs", ["seed7"]),  # what `papermill -p runs '["seed7"]'` injects
    ("seeds = '[7]'", "seeds", [7]),
    ("seeds = '[7, 8]'", "seeds", [7, 8]),
    ("runs = \"['seed7', 'seed8']\"", "runs", ["seed7", "seed8"]),  # a Python literal when it is not JSON
    ("runs = '[]'", "runs", []),
    ("pair = '[3, 4]'", "pair", [3, 4]),
    ("pair = '(3, 4)'", "pair", (3, 4)),
    ("overrides = '{\"modulus\": 7, \"bf16\": true}'", "overrides", {"modulus": 7, "bf16": True}),
    ("overrides = \"{'modulus': 7}\"", "overrides", {"modulus": 7}),
])
def test_a_string_for_a_list_or_dict_is_parsed_and_used(injected, name, expected):
    namespace = {"runs": ["seed42"], "seeds": [42], "pair": (1, 2), "overrides": {}, "steps": 300, "label": "book"}
    exec(injected, {}, namespace)  # what the injected cell did in the kernel: the string is in the namespace
    assert isinstance(namespace[name], str)
    values = check_injected(injected, namespace)
    assert values[name] == expected and type(values[name]) is type(expected)
    assert namespace[name] == expected, "the chapter must see the parsed value"


def test_the_notebook_namespace_gets_every_parsed_value():
    namespace = {"runs": '["seed7"]', "seeds": "[7]", "pair": (1, 2), "overrides": {}, "steps": 300, "label": "x"}
    values = check_injected("runs = '[\"seed7\"]'\nseeds = '[7]'\nlabel = 'x'", namespace)
    assert values["runs"] == ["seed7"] and values["seeds"] == [7] and values["label"] == "x"
    assert namespace["runs"] == ["seed7"] and namespace["seeds"] == [7]


@pytest.mark.parametrize("injected, message", [
    ("runs = 'seed7'", "parameter 'runs' should be a list like ['seed42'], got 'seed7'"),  # neither JSON nor a literal
    ("runs = '[seed7]'", "parameter 'runs' should be a list like ['seed42'], got '[seed7]'"),
    ("runs = '{\"a\": 1}'", "parameter 'runs' should be a list"),  # parses, to the wrong type
    ("runs = '\"[1]\"'", "parameter 'runs' should be a list"),  # a JSON string is still a string
    ("overrides = '[1, 2]'", "parameter 'overrides' should be a dict like {}, got '[1, 2]'"),
    ("overrides = 'modulus=7'", "parameter 'overrides' should be a dict"),
    ("seeds = '[7'", "parameter 'seeds' should be a list"),
])
def test_a_string_that_does_not_parse_to_the_type_stops_with_one_line(injected, message):
    namespace = {}
    exec(injected, {}, namespace)
    before = dict(namespace)
    with pytest.raises(ParameterError) as err:
        check_injected(injected, namespace)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
    assert "write it as JSON" in str(err.value)
    assert namespace == before, "nothing is written back for a value that is refused"


@pytest.mark.parametrize("injected", ["steps = '300'", "label = '[1]'"])
def test_strings_are_only_parsed_for_list_tuple_and_dict_parameters(injected):
    namespace = {}
    exec(injected, {}, namespace)
    if injected.startswith("steps"):
        with pytest.raises(ParameterError, match="parameter 'steps' should be a int like 300, got '300'$"):
            check_injected(injected, namespace)
    else:
        assert check_injected(injected, namespace)["label"] == "[1]" and namespace["label"] == "[1]"


def test_a_parameter_left_at_none_takes_the_study_profiles_value():
    from assignadd_core.rules.study import current, seed_range
    main = current()["runs"]["main"]["name"]
    mains = [f"seed{s}" for s in seed_range(current()["runs"]["seeds"])]
    namespace = {"run": None, "runs": None, "device": None}
    values = check_parameters(["run = None\nruns = None\ndevice = None", "P = 1"], namespace)
    assert values == {"run": main, "runs": mains, "device": None}  # device is not a study parameter: stays None
    assert namespace["run"] == main and namespace["runs"] == mains, "the chapter must see the profile's values"
    namespace = {"run": None, "runs": '["seed7"]'}  # a reader's value wins, parsed to the profile value's type
    values = check_parameters(["run = None\nruns = None", "# Parameters\nruns = '[\"seed7\"]'\n", "P = 1"], namespace)
    assert values == {"run": main, "runs": ["seed7"]} and namespace["runs"] == ["seed7"]
    with pytest.raises(ParameterError, match="parameter 'runs' should be a list"):
        check_parameters(["runs = None", "# Parameters\nruns = 'seed7'\n", "P = 1"], {"runs": "seed7"})

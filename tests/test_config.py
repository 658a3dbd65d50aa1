"""Config: paper defaults, one-line errors naming the parameter, JSON round trip, stable hash."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from assignadd_core.core.config import ConfigError, RunConfig, TaskConfig, all_keys
from assignadd_core.core.data import make_split


def assert_one_line_error(excinfo, *words: str) -> None:
    message = str(excinfo.value)
    assert "\n" not in message, message
    for word in words:
        assert word in message, f"{word!r} not named in: {message}"


def test_paper_defaults(paper_config):
    t, m, tr = paper_config.task, paper_config.model, paper_config.train
    assert (t.modulus, t.n_vars, t.seq_len, t.train_fraction, t.two_var_rate) == (59, 12, 16, 0.7, 1.0)
    assert t.var_names[: t.n_left_only] == ("a", "b") and t.var_names[-t.n_right_only:] == ("k", "l")
    assert t.vocab_size == 74 and t.pool_size == 2000
    assert (m.d_model, m.d_mlp) == (128, 512)
    assert (tr.lr, tr.weight_decay, tr.beta1, tr.beta2, tr.eps) == (1e-3, 0.02, 0.9, 0.999, 1e-8)
    assert (tr.batch_size, tr.steps, tr.eval_every, tr.seed) == (512, 40_000, 100, 42)


@pytest.mark.parametrize("key, value, name", [
    ("modulus", 1, "modulus"),
    ("modulus", 0, "modulus"),
    ("train_fraction", 0.0, "train_fraction"),
    ("train_fraction", -0.2, "train_fraction"),
    ("train_fraction", 1.01, "train_fraction"),
    ("two_var_rate", -0.01, "two_var_rate"),
    ("two_var_rate", 1.5, "two_var_rate"),
    ("seq_len", 5, "seq_len"),
    ("seq_len", 7, "seq_len"),  # a 2-var query needs two assignments: 4 + 4 tokens
    ("n_vars", 1, "n_vars"),
    ("steps", 0, "steps"),
    ("batch_size", 0, "batch_size"),
    ("lr", 0.0, "lr"),
    ("beta2", 1.0, "beta2"),
])
def test_invalid_value_is_one_line_error_naming_parameter(key, value, name):
    with pytest.raises(ConfigError) as excinfo:
        RunConfig().replace(**{key: value})
    assert_one_line_error(excinfo, name)


@pytest.mark.parametrize("key, value", [("train_fraction", 1.0), ("two_var_rate", 0.0), ("two_var_rate", 1.0),
                                        ("modulus", 2)])
def test_boundary_values_are_accepted(key, value):
    assert getattr(RunConfig().replace(**{key: value}).task, key) == value


def test_restricting_too_many_variables_is_refused():
    # 6 left-only + 6 right-only of 12 leaves no variable usable on both sides
    with pytest.raises(ConfigError) as excinfo:
        RunConfig().replace(n_left_only=6, n_right_only=6)
    assert_one_line_error(excinfo, "n_left_only")


def test_split_leaving_a_number_out_of_training_is_refused():
    # 1 % of 59 * 59 = 34 pairs cannot cover all 59 numbers
    task = TaskConfig(train_fraction=0.01)
    with pytest.raises(ConfigError) as excinfo:
        make_split(task)
    assert_one_line_error(excinfo, "train_fraction", "leaves number")


def test_unknown_keys_on_load_are_refused():
    data = RunConfig().to_dict()
    data["task"]["not_a_setting"] = 3
    with pytest.raises(ConfigError) as excinfo:
        RunConfig.from_dict(data)
    assert_one_line_error(excinfo, "task.not_a_setting")
    with pytest.raises(ConfigError) as excinfo:
        RunConfig.from_json(json.dumps({"optimizer": {}}))
    assert_one_line_error(excinfo, "optimizer")
    with pytest.raises(ConfigError) as excinfo:
        RunConfig().replace(not_a_setting=1)
    assert_one_line_error(excinfo, "not_a_setting")
    with pytest.raises(ConfigError) as excinfo:
        RunConfig.from_json("{not json")
    assert_one_line_error(excinfo, "JSON")


@pytest.mark.parametrize("key, value", [("train_fraction", "0.7"), ("lr", None), ("two_var_rate", [1]),
                                        ("modulus", 7.5), ("steps", "300"), ("beta1", True)])
def test_wrong_type_on_load_is_one_line_error_naming_parameter(key, value):
    section, name = {"train_fraction": "task", "lr": "train", "two_var_rate": "task", "modulus": "task",
                     "steps": "train", "beta1": "train"}[key], key
    with pytest.raises(ConfigError) as excinfo:
        RunConfig.from_json(json.dumps({section: {name: value}}))
    assert_one_line_error(excinfo, name)


def test_json_round_trip(tiny_config):
    for config in (RunConfig(), tiny_config, RunConfig().replace(bf16=True, two_var_rate=0.3, seed=9)):
        assert RunConfig.from_json(config.to_json()) == config
        assert RunConfig.from_dict(config.to_dict()) == config


def test_partial_json_falls_back_to_defaults():
    assert RunConfig.from_json(json.dumps({"train": {"steps": 300}})) == RunConfig().replace(steps=300)


def test_replace_accepts_dotted_and_bare_keys():
    assert RunConfig().replace(**{"train.steps": 5}) == RunConfig().replace(steps=5)
    assert RunConfig().replace(steps=5).train.steps == 5


def test_hash_is_stable_across_processes_and_construction_order(tiny_config):
    a = RunConfig().replace(seed=7, modulus=7, n_vars=4, n_left_only=1, n_right_only=1)
    b = RunConfig().replace(n_right_only=1, n_left_only=1, n_vars=4, modulus=7).replace(seed=7)
    assert a.hash() == b.hash()
    assert len(a.hash()) == 12 and int(a.hash(), 16) >= 0
    # a fresh interpreter with another string-hash seed computes the same hash
    code = ("from assignadd_core.core.config import RunConfig; import sys, json;"
            "print(RunConfig.from_json(sys.stdin.read()).hash())")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    for config in (RunConfig(), tiny_config):
        out = subprocess.run([sys.executable, "-c", code], input=config.to_json(), capture_output=True,
                             text=True, env=env, check=True)
        assert out.stdout.strip() == config.hash()


@pytest.mark.parametrize("key, value", [
    ("modulus", 61), ("n_vars", 10), ("train_fraction", 0.5), ("two_var_rate", 0.5), ("split_seed", 1),
    ("eval_seed", 2), ("pool_size", 100), ("n_left_only", 1), ("d_model", 64), ("d_mlp", 256),
    ("init_std_scale", 1.0), ("steps", 300), ("batch_size", 256), ("lr", 3e-4), ("weight_decay", 0.1),
    ("seed", 43), ("bf16", True), ("eval_every", 50),
])
def test_hash_changes_with_result_relevant_settings(key, value):
    assert RunConfig().replace(**{key: value}).hash() != RunConfig().hash()


def test_every_key_is_overridable():
    # all_keys() drives the CLI flags: each must resolve and survive a round trip
    for key in all_keys():
        section, name = key.split(".")
        value = getattr(getattr(RunConfig(), section), name)
        assert RunConfig().replace(**{key: value}) == RunConfig()


@pytest.mark.parametrize("seq_len", [8, 16, 20])
def test_operand_positions_are_the_query_operands(seq_len):
    # `+ lhs rhs =` ends every sequence, so the operands sit 3 and 2 from the end whatever the length
    import torch
    from assignadd_core.core.data import Vocab, sample_queries
    task = TaskConfig(seq_len=seq_len)
    lhs, rhs = task.operand_positions
    assert (lhs, rhs) == (seq_len - 3, seq_len - 2)
    batch = sample_queries(task, 64, torch.Generator().manual_seed(0))
    vocab = Vocab(task)
    assert bool((batch.tokens[:, lhs - 1] == vocab.plus).all() and (batch.tokens[:, rhs + 1] == vocab.eq).all())
    literal = batch.lhs_var < 0
    assert torch.equal(batch.tokens[literal, lhs], batch.lhs_val[literal])

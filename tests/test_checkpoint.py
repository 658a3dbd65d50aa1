"""Checkpoints: our safetensors files, TransformerLens-format state dicts, and one-line errors."""
from __future__ import annotations

import json

import pytest
import torch

from assignadd_core.analysis.authors_format import load_any, load_tl_state_dict, reference_weights_path
from assignadd_core.core.checkpoint import CheckpointError, load_model, save_model
from assignadd_core.core.config import RunConfig
from assignadd_core.core.data import eval_pools, sample_queries
from assignadd_core.core.evaluation import batch_accuracy
from assignadd_core.core.model import AssignAddTransformer

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.fixture()
def tiny_model(tiny_config):
    torch.manual_seed(3)
    return AssignAddTransformer(tiny_config)


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return set(sa) == set(sb) and all(torch.equal(sa[k], sb[k]) for k in sa)


def tl_state_dict(model: AssignAddTransformer) -> dict[str, torch.Tensor]:
    """What a TransformerLens HookedTransformer of our shape saves (as the authors' file does):
    our weights plus all-zero biases, an all-zero block-0 MLP and the attention mask buffers."""
    cfg = model.cfg
    d, n_ctx = cfg.d_model, cfg.n_ctx
    state = {k: v.clone() for k, v in model.state_dict().items()}
    for i in range(2):
        for b in "QKV":
            state[f"blocks.{i}.attn.b_{b}"] = torch.zeros(1, d)
        state[f"blocks.{i}.attn.b_O"] = torch.zeros(d)
        state[f"blocks.{i}.attn.mask"] = torch.tril(torch.ones(n_ctx, n_ctx, dtype=torch.bool))
        state[f"blocks.{i}.attn.IGNORE"] = torch.tensor(-torch.inf)
        state[f"blocks.{i}.mlp.b_in"] = torch.zeros(cfg.d_mlp)
        state[f"blocks.{i}.mlp.b_out"] = torch.zeros(d)
    state["blocks.0.mlp.W_in"] = torch.zeros(d, cfg.d_mlp)
    state["blocks.0.mlp.W_out"] = torch.zeros(cfg.d_mlp, d)
    state["unembed.b_U"] = torch.zeros(cfg.d_vocab_out)
    return state


def assert_one_line(excinfo, *words) -> None:
    message = str(excinfo.value)
    assert "\n" not in message, message
    for word in words:
        assert str(word) in message, f"{word!r} not in: {message}"


# ---------------------------------------------------------------------------- our format
def test_save_load_round_trip(tmp_path, tiny_model, tiny_config):
    path = tmp_path / "m.safetensors"
    save_model(tiny_model, path)
    loaded = load_model(path)
    assert loaded.config == tiny_config  # the config travels in the file's metadata
    assert same_weights(loaded, tiny_model)
    tokens = sample_queries(tiny_config.task, 16, torch.Generator().manual_seed(0)).tokens
    assert torch.equal(loaded(tokens), tiny_model(tokens))
    assert same_weights(load_any(path), tiny_model)
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left no temporary file


def test_checkpoint_of_another_shape_is_refused(tmp_path, tiny_model, tiny_config):
    path = tmp_path / "tiny.safetensors"
    save_model(tiny_model, path)
    with pytest.raises(CheckpointError) as excinfo:
        load_model(path, RunConfig())  # paper config, tiny weights
    assert_one_line(excinfo, path, "shape")


def test_config_not_matching_weights_is_refused(tmp_path, tiny_model, tiny_config):
    path = tmp_path / "m.safetensors"
    save_model(tiny_model, path)
    with pytest.raises(CheckpointError) as excinfo:
        load_model(path, tiny_config.replace(d_mlp=64))
    assert_one_line(excinfo, path, "blocks.1.mlp.W_in")
    with pytest.raises(CheckpointError) as excinfo:
        load_model(path, tiny_config.replace(modulus=11))
    assert_one_line(excinfo, path)


def test_run_directory_whose_config_does_not_match_its_weights(tmp_path, tiny_model, tiny_config):
    run = tmp_path / "run"
    run.mkdir()
    save_model(tiny_model, run / "model.safetensors")
    (run / "config.json").write_text(tiny_config.replace(d_model=32).to_json())
    with pytest.raises(CheckpointError) as excinfo:
        load_any(run)
    assert_one_line(excinfo, run / "model.safetensors", "shape")


def test_missing_or_extra_weights_are_refused(tmp_path, tiny_model):
    from safetensors.torch import save_file
    tensors = {k: v.contiguous() for k, v in tiny_model.state_dict().items()}
    path = tmp_path / "missing.safetensors"
    save_file({k: v for k, v in tensors.items() if k != "unembed.W_U"}, str(path),
              metadata={"config": tiny_model.config.to_json()})
    with pytest.raises(CheckpointError) as excinfo:
        load_model(path)
    assert_one_line(excinfo, path, "missing", "unembed.W_U")
    path = tmp_path / "extra.safetensors"
    save_file({**tensors, "blocks.0.mlp.W_in": torch.zeros(16, 32)}, str(path),
              metadata={"config": tiny_model.config.to_json()})
    with pytest.raises(CheckpointError) as excinfo:
        load_model(path)
    assert_one_line(excinfo, path, "unexpected", "blocks.0.mlp.W_in")


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "missing"])
def test_truncated_or_corrupted_checkpoint_is_refused(tmp_path, tiny_model, damage):
    path = tmp_path / "m.safetensors"
    save_model(tiny_model, path)
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x13\x00" + bytes(range(256)) * 20)
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        path.unlink()
    with pytest.raises(CheckpointError) as excinfo:
        load_model(path)
    assert_one_line(excinfo, path)
    with pytest.raises(CheckpointError) as excinfo:
        load_any(path)
    assert_one_line(excinfo, path)


def test_unknown_file_type_is_refused(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"0" * 10)
    with pytest.raises(CheckpointError) as excinfo:
        load_any(path)
    assert_one_line(excinfo, path)


# ---------------------------------------------------------------------------- TransformerLens format
def test_tl_state_dict_loads(tmp_path, tiny_model, tiny_config):
    path = tmp_path / "tl.pth"
    torch.save(tl_state_dict(tiny_model), path)
    loaded = load_tl_state_dict(path, tiny_config)
    assert same_weights(loaded, tiny_model)
    assert same_weights(load_any(path, tiny_config), tiny_model)


@pytest.mark.parametrize("name", ["blocks.1.attn.b_Q", "blocks.0.attn.b_O", "blocks.1.mlp.b_in", "unembed.b_U",
                                  "blocks.0.mlp.W_in", "blocks.0.mlp.W_out"])
def test_tl_state_dict_with_nonzero_extra_tensor_is_refused(tmp_path, tiny_model, tiny_config, name):
    state = tl_state_dict(tiny_model)
    state[name] = state[name].clone()
    state[name].view(-1)[0] = 0.25
    path = tmp_path / "tl.pth"
    torch.save(state, path)
    with pytest.raises(CheckpointError) as excinfo:
        load_tl_state_dict(path, tiny_config)
    assert_one_line(excinfo, path, name, "must be zero")


def test_tl_state_dict_of_another_shape_is_refused(tmp_path, tiny_model):
    path = tmp_path / "tl.pth"
    torch.save(tl_state_dict(tiny_model), path)
    with pytest.raises(CheckpointError) as excinfo:
        load_tl_state_dict(path)  # paper config
    assert_one_line(excinfo, path, "shape")


@pytest.mark.parametrize("damage", ["truncated", "garbage", "not_a_dict"])
def test_corrupted_tl_file_is_refused(tmp_path, tiny_model, tiny_config, damage):
    path = tmp_path / "tl.pth"
    torch.save(tl_state_dict(tiny_model), path)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:300])
    elif damage == "garbage":
        path.write_bytes(b"not a pickle at all" * 10)
    else:
        torch.save([torch.zeros(3)], path)
    with pytest.raises(CheckpointError) as excinfo:
        load_tl_state_dict(path, tiny_config)
    assert_one_line(excinfo, path)


# ---------------------------------------------------------------------------- the authors' weights
@pytest.mark.skipif(reference_weights_path() is None,
                    reason="the authors' reference weights are absent (set ASSIGNADD_REFERENCE to their .pth)")
def test_reference_weights_load_and_solve_0var_train(paper_config):
    model = load_tl_state_dict(reference_weights_path())
    model.eval()
    assert model.n_params() == 281_216
    accuracy = batch_accuracy(model, eval_pools(paper_config.task)["0var_train"])
    assert accuracy > 0.95, accuracy


def test_final_reads_the_last_step_under_its_current_name(tmp_path):
    # final.json written before the rename says `steps` for the last step trained: readers see `last_step`
    from assignadd_core.core.run_folder import Run, upgraded
    run = Run(tmp_path / "old")
    run.path.mkdir()
    run.final_path.write_text(json.dumps({"steps": 21, "step_budget": 30, "pools": {}}))
    assert run.final() == {"last_step": 21, "step_budget": 30, "pools": {}}
    assert upgraded({"last_step": 5}) == {"last_step": 5}

"""Model files: our safetensors checkpoints (+ config JSON) and `torch.save` dicts of tensors and plain values (the trainer's resume state), always read back with
`weights_only=True` (no code runs on load).

Every failure is a `CheckpointError` with one line naming the file and what is wrong.
"""
from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save

from .config import ConfigError, RunConfig
from .model import AssignAddTransformer


class CheckpointError(ValueError):
    """A model file cannot be used; the message names the file and the problem."""


def _umask_mode() -> int:
    """0o666 minus the process umask: what a plain open() would have given (mkstemp gives 0o600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write via a temporary file and rename, so an interrupted write never leaves a torn file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def save_tensors(tensors: dict[str, torch.Tensor], path: Path, metadata: dict[str, str] | None = None) -> None:
    atomic_write_bytes(path, save({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, metadata=metadata))


def load_tensors(path: Path) -> dict[str, torch.Tensor]:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise CheckpointError(f"{path}: not a readable safetensors file (truncated or corrupted?): "
                              f"{str(err).splitlines()[0] if str(err) else type(err).__name__}") from None


def save_model(model: AssignAddTransformer, path: Path) -> None:
    """Weights as safetensors, with the run config in the file's metadata (no pickle anywhere)."""
    save_tensors(dict(model.state_dict()), Path(path), metadata={"config": model.config.to_json()})


def config_from_checkpoint(path: Path) -> RunConfig | None:
    try:
        with safe_open(str(path), framework="pt") as handle:
            meta = handle.metadata() or {}
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise CheckpointError(f"{path}: not a readable safetensors file (truncated or corrupted?): {err}") from None
    if "config" not in meta:
        return None
    try:
        return RunConfig.from_json(meta["config"])
    except ConfigError as err:
        raise CheckpointError(f"{path}: its stored config is invalid: {err}") from None


def load_weights_into(model: AssignAddTransformer, tensors: dict[str, torch.Tensor], source: Path) -> None:
    """Copy tensors into the model, with one-line errors for missing, extra or mis-shaped weights."""
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing[:4])}{' …' if len(missing) > 4 else ''}")
        if extra:
            parts.append(f"unexpected {', '.join(extra[:4])}{' …' if len(extra) > 4 else ''}")
        raise CheckpointError(f"{source}: weights do not match this model ({'; '.join(parts)})")
    for name, value in expected.items():
        if tuple(tensors[name].shape) != tuple(value.shape):
            raise CheckpointError(f"{source}: {name} has shape {tuple(tensors[name].shape)}, the config expects"
                                  f" {tuple(value.shape)} (checkpoint of another model or task size?)")
    model.load_state_dict({k: v.to(expected[k].dtype) for k, v in tensors.items()})


def load_model(path: Path, config: RunConfig | None = None) -> AssignAddTransformer:
    """Load one of our checkpoints; `config` overrides the one stored in the file."""
    path = Path(path)
    tensors = load_tensors(path)
    config = config or config_from_checkpoint(path)
    if config is None:
        raise CheckpointError(f"{path}: no config stored in the file; pass the run's config")
    model = AssignAddTransformer(config)
    load_weights_into(model, tensors, path)
    return model


def save_torch_dict(state: dict, path: Path) -> None:
    """torch.save, atomically (an interrupted write leaves the previous file)."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    atomic_write_bytes(path, buffer.getvalue())


def load_torch_dict(path: Path) -> dict:
    """A `torch.save`d dict, on the CPU; weights_only=True: tensors and plain values only, no code runs."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many types for a bad file; we only report it
        raise CheckpointError(f"{path}: cannot be read as a PyTorch state dict (truncated or corrupted?):"
                              f" {str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: holds a {type(state).__name__}, not a state dict")
    return state


def read_json(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such file") from None
    except json.JSONDecodeError as err:
        raise CheckpointError(f"{path}: not valid JSON ({err})") from None

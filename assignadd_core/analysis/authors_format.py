"""The authors' format and weights: a TransformerLens-format state dict (`.pth`, what the authors released) read into
our model, where their released final weights are (for cross-checks only, never committed), and `load_any`: a model
from a run folder, one of our `.safetensors` files or one of their `.pth` files (the command line's `eval`).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import torch

from ..core.checkpoint import CheckpointError, load_model, load_torch_dict, load_weights_into
from ..core.config import RunConfig
from ..core.model import AssignAddTransformer
from ..core.run_folder import Run


def tl_state_dict_to_ours(state: dict[str, torch.Tensor], source: Path,
                          mlp_layers: tuple[int, ...]) -> dict[str, torch.Tensor]:
    """Drop what a TransformerLens HookedTransformer adds: biases (must be zero), the MLPs of the blocks that
    have none here (not in `mlp_layers`; must be zero: the paper's layer-1 MLP) and the attention mask buffers."""
    ours = {}
    for name, value in state.items():
        if not isinstance(value, torch.Tensor):
            raise CheckpointError(f"{source}: entry {name!r} is not a tensor")
        leaf = name.rsplit(".", 1)[-1]
        if leaf in ("mask", "IGNORE"):
            continue
        is_bias = leaf.startswith("b_")
        mlp_of = re.match(r"blocks\.(\d+)\.mlp\.", name)
        is_dead_mlp = mlp_of is not None and int(mlp_of.group(1)) not in mlp_layers
        if is_bias or is_dead_mlp:
            if bool(value.float().abs().max() > 0) if value.numel() else False:
                what = "bias" if is_bias else "MLP weight of a block without an MLP"
                raise CheckpointError(f"{source}: {name} is a {what} that must be zero for this model,"
                                      f" but its largest entry is {float(value.float().abs().max()):.3g}")
            continue
        ours[name] = value
    return ours


def load_tl_state_dict(path: Path, config: RunConfig | None = None) -> AssignAddTransformer:
    """Load a TransformerLens-format `.pth` state dict (tensors only: weights_only=True)."""
    path = Path(path)
    state = load_torch_dict(path)
    model = AssignAddTransformer(config or RunConfig())
    load_weights_into(model, tl_state_dict_to_ours(state, path, model.config.model.mlp_layers), path)
    return model


REFERENCE_ENV = "ASSIGNADD_REFERENCE"
_REFERENCE_DEFAULT = Path(__file__).resolve().parents[3] / "shared" / "reference" / "authors_final_state_dict.pth"


def reference_weights_path() -> Path | None:
    """The authors' released final weights, for cross-checks only (never committed).

    Taken from $ASSIGNADD_REFERENCE, else from `shared/reference/` beside the repository; None when
    absent, so callers can say so and skip.
    """
    value = os.environ.get(REFERENCE_ENV)
    path = Path(value) if value else _REFERENCE_DEFAULT
    return path if path.is_file() else None


def load_any(path: Path, config: RunConfig | None = None) -> AssignAddTransformer:
    """A run directory (its final checkpoint), one of our .safetensors files, or a TL .pth state dict."""
    path = Path(path)
    if path.is_dir():
        return Run(path).load_model()
    if path.suffix == ".safetensors":
        return load_model(path, config)
    if path.suffix in (".pth", ".pt"):
        return load_tl_state_dict(path, config)
    if not path.exists():
        raise CheckpointError(f"{path}: no such file or run directory")
    raise CheckpointError(f"{path}: unknown model file type (expected a run directory, .safetensors or .pth)")

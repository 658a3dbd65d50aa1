"""Torch CPU threads: one setter for the command line and the sweep workers."""
from __future__ import annotations

import torch

from ..core.config import ConfigError


def set_threads(threads: int | None) -> None:
    """Use `threads` torch CPU threads; None leaves torch's default."""
    if threads is not None:
        if threads < 1:
            raise ConfigError(f"--threads must be >= 1, got {threads}")
        torch.set_num_threads(int(threads))

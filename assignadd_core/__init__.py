"""assign-add: reproduction of "Assign and Add: A Mechanistic Study of Compositional Arithmetic"."""
# No OpenMP setting here: a passive wait policy made a 2-thread training step 2-3x slower. Only a
# sweep's single-thread workers, which share the cores, wait passively (see `sweep`).
from .core import config as _config

# The package's own interventions (plug-ins with their settings), in the modules that register them: imported when a
# config first names one of their settings or a run is trained, not here (they import torch and the model).
_config.BUILTIN_MODULES[:] = ["assignadd_core.experiments.perturb", "assignadd_core.experiments.qk_steering",
                              "assignadd_core.experiments.early_stop"]

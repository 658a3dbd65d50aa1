"""Settings of a run: the task, the model and the training (the optimizer), with the paper's protocol as defaults, and
the settings of the interventions a run has, each declared by its plug-in (`Settings`, `RunConfig.interventions`).

Every value is validated on construction with a one-line error naming the parameter.
`RunConfig.hash()` covers only the settings that change results (not logging or device).
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import math
import string
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar


class ConfigError(ValueError):
    """A setting is invalid; the message names the parameter and what is wrong."""


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def _real(value: Any) -> float:
    """The value as a float, or NaN (which fails every range check) when it is not a number."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


TWO_VAR_RULES = ("paper_rows", "ablation_share_only")
# How the training step runs (not a setting of the run: it never enters the config or its hash)
COMPILE_CHOICES = ("auto", "on", "off")


def add_mod(a, b, n):
    """(a + b) mod n for operands in 0..n-1, branch-free on integer arrays."""
    total = a + b
    total -= (total >= n) * n
    return total


# The task's operation on the operand values (integer arrays, the modulus): "add" is the paper's task. A new
# operation is registered here, from anywhere, before a config naming it is built (`TaskConfig.operation`).
OPERATIONS = {"add": add_mod}


@dataclass(frozen=True)
class TaskConfig:
    """The assign-and-add task (book/protocol.md: the task, what is held out, the mix); `operation` may name another
    operation on the operand values (the same sequences, another answer)."""

    modulus: int = 59  # N: numbers 0..N-1, answer (lhs + rhs) mod N
    n_vars: int = 12  # variables a, b, c, ...
    seq_len: int = 16  # every sequence; the query `+ lhs rhs =` fills the last 4
    train_fraction: float = 0.7  # f: share of the N*N ordered operand pairs used in training
    two_var_rate: float = 1.0  # r: each 2-var training row is kept with this probability
    # How r acts. "paper_rows" (the paper's): a fixed per-row draw keeps each 2-var row, so r also decides
    # which operand pairs ever appear in a 2-var query. "ablation_share_only" (not the paper's): r only
    # scales the 2-var share of the mix and every training pair still appears in 2-var queries.
    two_var_rule: str = "paper_rows"
    n_left_only: int = 2  # the first variables (a, b) are query operands only on the left in training
    n_right_only: int = 2  # the last variables (k, l) are query operands only on the right in training
    split_seed: int = 42  # draws the train/held-out operand pairs
    eval_seed: int = 1234  # draws the fixed evaluation pools and the exact sets' prefixes
    pool_size: int = 2000  # sequences per evaluation pool
    operation: str = "add"  # the answer's operation on the operand values (`OPERATIONS`)

    def __post_init__(self) -> None:
        _require(self.operation in OPERATIONS,
                 f"operation must be one of {', '.join(OPERATIONS)} (registered in config.OPERATIONS), got"
                 f" {self.operation!r}")
        _require(isinstance(self.modulus, int) and self.modulus >= 2,
                 f"modulus must be an integer >= 2, got {self.modulus!r}")
        _require(isinstance(self.n_vars, int) and 2 <= self.n_vars <= 26,
                 f"n_vars must be an integer in 2..26, got {self.n_vars!r}")
        _require(isinstance(self.seq_len, int) and self.seq_len >= 8,
                 f"seq_len must be >= 8 (a 2-var query needs two assignments of 2 tokens plus the 4-token"
                 f" query `+ lhs rhs =`), got {self.seq_len!r}")
        _require(0.0 < _real(self.train_fraction) <= 1.0,
                 f"train_fraction must lie in (0, 1], got {self.train_fraction!r}")
        _require(0.0 <= _real(self.two_var_rate) <= 1.0,
                 f"two_var_rate must lie in [0, 1], got {self.two_var_rate!r}")
        _require(self.two_var_rule in TWO_VAR_RULES,
                 f"two_var_rule must be one of {', '.join(TWO_VAR_RULES)}, got {self.two_var_rule!r}")
        _require(isinstance(self.n_left_only, int) and self.n_left_only >= 0,
                 f"n_left_only must be an integer >= 0, got {self.n_left_only!r}")
        _require(isinstance(self.n_right_only, int) and self.n_right_only >= 0,
                 f"n_right_only must be an integer >= 0, got {self.n_right_only!r}")
        _require(self.n_left_only + self.n_right_only <= self.n_vars - 2,
                 f"n_left_only + n_right_only must leave at least 2 unrestricted variables"
                 f" (n_vars={self.n_vars}), got {self.n_left_only} + {self.n_right_only}")
        _require(isinstance(self.pool_size, int) and self.pool_size >= 1,
                 f"pool_size must be an integer >= 1, got {self.pool_size!r}")
        # A split with fewer than N pairs cannot contain every number as an operand.
        _require(self.n_train_pairs >= 1,
                 f"train_fraction={self.train_fraction} leaves no training pair at modulus={self.modulus}")

    # Derived sizes (properties, never stored, so they cannot go stale).
    @property
    def prefix_len(self) -> int:
        return self.seq_len - 4

    @property
    def operand_positions(self) -> tuple[int, int]:
        """Positions of the query's lhs and rhs tokens: `+ lhs rhs =` ends every sequence."""
        return self.seq_len - 3, self.seq_len - 2

    @property
    def max_assignments(self) -> int:
        return self.prefix_len // 2

    @property
    def n_train_pairs(self) -> int:
        return int(self.train_fraction * self.modulus * self.modulus)

    @property
    def var_names(self) -> tuple[str, ...]:
        return tuple(string.ascii_lowercase[: self.n_vars])

    @property
    def vocab_size(self) -> int:
        return self.modulus + 3 + self.n_vars


ROLES = ("copy", "lookup", "mlp")  # the parts of the paper's circuit (see ModelConfig's role fields)


@dataclass(frozen=True)
class ModelConfig:
    """The transformer: no LayerNorm, no biases; the paper's shape (2 layers, 1 head, an MLP in the last layer
    only) by default, whose training path is folded (`model._fused`). The progress measures and mechanistic
    analyses read the circuit's roles (which block and head copies, looks up, adds), not block indices:
    `roles` turns them into hook names and weights."""

    d_model: int = 128
    d_mlp: int = 512
    init_std_scale: float = 0.8  # every weight ~ N(0, scale / sqrt(d_model)), TransformerLens "gpt2" init
    n_layers: int = 2
    n_heads: int = 1  # d_head = d_model // n_heads, as in TransformerLens
    mlp_layers: tuple[int, ...] = (1,)  # the blocks (0-based) that have an MLP
    # The circuit's roles (block indices 0-based; None: the default, which follows the shape). The copy head (the
    # paper's layer 1) writes each variable's identity onto the next position; the lookup head (layer 2) matches
    # the query's variables with those copies through its QK (the associative memory) and fetches their values;
    # the addition MLP adds the two values. Given explicitly, they must form that circuit in that order.
    copy_block: int | None = field(default=None, metadata={"help": "default 0"})
    lookup_block: int | None = field(default=None, metadata={"help": "default: the last block"})
    mlp_block: int | None = field(default=None, metadata={"help": "default: the last block in mlp_layers"})
    copy_head: int = 0
    lookup_head: int = 0

    def __post_init__(self) -> None:
        _require(isinstance(self.d_model, int) and self.d_model >= 1,
                 f"d_model must be an integer >= 1, got {self.d_model!r}")
        _require(isinstance(self.d_mlp, int) and self.d_mlp >= 1,
                 f"d_mlp must be an integer >= 1, got {self.d_mlp!r}")
        _require(_real(self.init_std_scale) > 0, f"init_std_scale must be > 0, got {self.init_std_scale!r}")
        _require(isinstance(self.n_layers, int) and not isinstance(self.n_layers, bool) and self.n_layers >= 1,
                 f"n_layers must be an integer >= 1, got {self.n_layers!r}")
        _require(isinstance(self.n_heads, int) and not isinstance(self.n_heads, bool) and self.n_heads >= 1
                 and self.d_model % self.n_heads == 0,
                 f"n_heads must be an integer >= 1 that divides d_model ({self.d_model}), got {self.n_heads!r}")
        layers = self.mlp_layers
        if isinstance(layers, int) and not isinstance(layers, bool):
            layers = (layers,)
        _require(isinstance(layers, (list, tuple)) and all(isinstance(i, int) and not isinstance(i, bool)
                                                           and 0 <= i < self.n_layers for i in layers),
                 f"mlp_layers must list block indices in 0..{self.n_layers - 1}, got {self.mlp_layers!r}")
        object.__setattr__(self, "mlp_layers", tuple(sorted(set(layers))))  # JSON gives a list: one form
        self._check_roles()

    def _check_roles(self) -> None:
        last = self.n_layers - 1
        for role in ROLES:
            block = getattr(self, f"{role}_block")
            _require(block is None or (isinstance(block, int) and not isinstance(block, bool) and 0 <= block <= last),
                     f"{role}_block must be a block index in 0..{last}, got {block!r}")
        _require(self.mlp_block is None or self.mlp_block in self.mlp_layers,
                 f"mlp_block must be a block with an MLP (mlp_layers={list(self.mlp_layers)}), got {self.mlp_block}")
        for role in ("copy", "lookup"):
            head = getattr(self, f"{role}_head")
            _require(isinstance(head, int) and not isinstance(head, bool) and 0 <= head < self.n_heads,
                     f"{role}_head must be a head index in 0..{self.n_heads - 1}, got {head!r}")
        if any(getattr(self, f"{role}_block") is not None for role in ROLES):
            # Declared roles must form the circuit; the defaults of a shape without one only leave it undefined.
            copy, lookup, mlp = (self.role_block(role) for role in ROLES)
            _require(mlp is not None, "mlp_block: the model has no MLP (mlp_layers is empty) to play the addition")
            _require(copy < lookup, f"copy_block ({copy}) must come before lookup_block ({lookup}):"
                                    " the lookup reads the identities the copy head wrote")
            _require(lookup <= mlp, f"mlp_block ({mlp}) must not come before lookup_block ({lookup}):"
                                    " the addition MLP reads the values the lookup head fetched")
        for role in ROLES:  # a role given at its default is the default: one config, one hash
            if getattr(self, f"{role}_block") == self._default_block(role):
                object.__setattr__(self, f"{role}_block", None)

    def _default_block(self, role: str) -> int | None:
        return {"copy": 0, "lookup": self.n_layers - 1, "mlp": self.mlp_layers[-1] if self.mlp_layers else None}[role]

    def role_block(self, role: str) -> int | None:
        """The block that plays `role` ("copy", "lookup" or "mlp"); None for the MLP of a model without one."""
        _require(role in ROLES, f"role must be one of {', '.join(ROLES)}, got {role!r}")
        block = getattr(self, f"{role}_block")
        return self._default_block(role) if block is None else block

    def role_head(self, role: str) -> int:
        """The head that plays `role` ("copy" or "lookup") in its block."""
        _require(role in ("copy", "lookup"), f"only the copy and lookup roles have a head, got {role!r}")
        return getattr(self, f"{role}_head")

    @property
    def has_circuit(self) -> bool:
        """Whether the roles form the paper's circuit: copy before lookup, the addition MLP at or after the lookup.
        Declared roles always do; the defaults of e.g. a 1-layer or an MLP-less model do not."""
        copy, lookup, mlp = (self.role_block(role) for role in ROLES)
        return mlp is not None and copy < lookup <= mlp

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def paper_shape(self) -> bool:
        """2 layers, 1 head, an MLP in block 1 only: the shape the fused training path knows. Its roles can only
        be the paper's (copy 0 before lookup 1, the MLP in block 1, head 0), so the fused path's two patterns are
        the copy and lookup heads'."""
        return (self.n_layers, self.n_heads, self.mlp_layers) == (2, 1, (1,))


@dataclass(frozen=True)
class TrainConfig:
    """AdamW training (book/protocol.md, 'Training'). What a study does to training besides (a nudge, gradient noise,
    steering, an early stop) is an intervention with its own settings (`Settings`, `RunConfig.interventions`)."""

    steps: int = 40_000
    batch_size: int = 512
    lr: float = 1e-3
    weight_decay: float = 0.02
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    seed: int = 42  # the run's seed: initialization and data order, unless one of the two below is set
    init_seed: int | None = None  # seeds the initial weights instead of `seed` (None: `seed`)
    data_seed: int | None = None  # seeds the training stream instead of `seed` (None: `seed`)
    bf16: bool = False  # bf16 autocast (what the authors used on GPU); fp32 by default on CPU
    eval_every: int = 100  # metrics + checkpoint at steps 1, 1+eval_every, ... and the last step
    probe_every: int = 1000  # the linear probe (progress measure 7) is slower: run it less often

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "eval_every", "probe_every"):
            value = getattr(self, name)
            _require(isinstance(value, int) and not isinstance(value, bool) and value >= 1,
                     f"{name} must be an integer >= 1, got {value!r}")
        _require(_real(self.lr) > 0, f"lr must be > 0, got {self.lr!r}")
        _require(_real(self.weight_decay) >= 0, f"weight_decay must be >= 0, got {self.weight_decay!r}")
        for name in ("beta1", "beta2"):
            _require(0 <= _real(getattr(self, name)) < 1, f"{name} must lie in [0, 1), got {getattr(self, name)!r}")
        _require(_real(self.eps) > 0, f"eps must be > 0, got {self.eps!r}")
        _require(isinstance(self.seed, int) and not isinstance(self.seed, bool),
                 f"seed must be an integer, got {self.seed!r}")
        for name in ("init_seed", "data_seed"):
            value = getattr(self, name)
            _require(value is None or (isinstance(value, int) and not isinstance(value, bool)),
                     f"{name} must be an integer (or unset, to follow seed), got {value!r}")
            if value == self.seed:  # the same run as leaving it unset: one config, one hash
                object.__setattr__(self, name, None)
        _require(isinstance(self.bf16, bool), f"bf16 must be true or false, got {self.bf16!r}")

    @property
    def weights_seed(self) -> int:
        """The seed of the initial weights."""
        return self.seed if self.init_seed is None else self.init_seed

    @property
    def stream_seed(self) -> int:
        """The seed of the training stream (which rows, prefixes and order each step sees)."""
        return self.seed if self.data_seed is None else self.data_seed


# ---------------------------------------------------------------------------- interventions
class Settings:
    """An intervention's settings (`trainer.Plugin`): a frozen dataclass in the plug-in's own module, each field
    defaulting to the run without the intervention and checked in `__post_init__` (one-line errors); `settle(config)`
    checks it against the rest of the run's config and returns its normal form (settings that do nothing take their
    defaults: one run, one config, one hash)."""

    name: ClassVar[str]  # the intervention's name

    def settle(self, config: "RunConfig") -> "Settings":
        return self


INTERVENTIONS: dict[str, type] = {}  # name -> its Settings class (`register_settings`, called by `trainer.register`)
# The modules of the package's own interventions, named by the package's `__init__`, imported when first needed (a
# config is read, a run trained) rather than with the core: they import the model and the measures.
BUILTIN_MODULES: list[str] = []


def _names(klass: type) -> set[str]:
    return {f.name for f in fields(klass)}


def register_settings(klass: type) -> type:
    """Every config gets the intervention's settings; its name and theirs must be new to the config."""
    if INTERVENTIONS.get(klass.name) is not klass:
        taken = set().union(*map(_names, (*SECTIONS.values(), *INTERVENTIONS.values()))) & _names(klass)
        _require(klass.name not in INTERVENTIONS and not taken, f"intervention {klass.name!r}: its name or a setting"
                                                                f" ({', '.join(sorted(taken))}) names another already")
        INTERVENTIONS[klass.name] = klass
    return klass


def load_builtin_interventions() -> None:
    while BUILTIN_MODULES:
        importlib.import_module(BUILTIN_MODULES.pop(0))


def _owner(setting: str) -> type | None:
    """The registered Settings class that has `setting` (None: none has)."""
    load_builtin_interventions()
    return next((klass for klass in INTERVENTIONS.values() if setting in _names(klass)), None)


@dataclass(frozen=True)
class Interventions:
    """The settings of the interventions a run has, one section of its config: `interventions.jitter` is a setting's
    value (its default where the run does not have that intervention), `interventions.of("perturb")` one
    intervention's settings. In the config's JSON and in its hash: the settings away from their defaults."""

    held: tuple[Settings, ...] = ()  # one per intervention the run has, by name

    def __post_init__(self) -> None:
        object.__setattr__(self, "held", tuple(sorted((s for s in self.held if s != type(s)()), key=lambda s: s.name)))

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> "Interventions":
        """From {setting: value}, settings of any registered intervention."""
        grouped: dict[type, dict] = {}
        for name, value in values.items():
            klass = _owner(name)
            _require(klass is not None, f"unknown config key interventions.{name}")
            grouped.setdefault(klass, {})[name] = value
        return cls(tuple(klass(**given) for klass, given in grouped.items()))

    def of(self, name: str) -> Settings:
        """The settings of intervention `name` (its defaults when the run does not have it)."""
        held = {s.name: s for s in self.held}
        if name not in held:
            load_builtin_interventions()
            _require(name in INTERVENTIONS, f"no intervention named {name!r} is registered")
        return held.get(name) or INTERVENTIONS[name]()

    def __getattr__(self, setting: str) -> Any:
        klass = None if setting.startswith("__") else _owner(setting)
        if klass is None:
            raise AttributeError(f"no intervention has a setting {setting!r}")
        return getattr(self.of(klass.name), setting)

    def __bool__(self) -> bool:
        return bool(self.held)

    def values(self) -> dict[str, Any]:
        """{setting: value} of every setting away from its default."""
        return {f.name: getattr(s, f.name) for s in self.held for f in fields(s) if getattr(s, f.name) != f.default}


@dataclass(frozen=True)
class RunConfig:
    task: TaskConfig = field(default_factory=TaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    interventions: Interventions = field(default_factory=Interventions)

    def __post_init__(self) -> None:
        object.__setattr__(self, "interventions", Interventions(tuple(s.settle(self) for s in self.interventions.held)))

    def to_dict(self) -> dict[str, Any]:
        return {"task": dataclasses.asdict(self.task), "model": dataclasses.asdict(self.model),
                "train": dataclasses.asdict(self.train), "interventions": self.interventions.values()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunConfig":
        """From `to_dict`'s form; a config written before interventions had their section (their settings among the
        training settings) reads the same."""
        if not isinstance(data, dict):
            raise ConfigError(f"a run config must be a JSON object, got {type(data).__name__}")
        unknown = set(data) - {*SECTIONS, "interventions"}
        _require(not unknown, f"unknown config section(s): {', '.join(sorted(unknown))}"
                              " (expected task, model, train, interventions)")
        parts, interventions = {}, dict(data.get("interventions", {}))
        for section, klass in SECTIONS.items():
            values = dict(data.get(section, {}))
            known = _names(klass)
            if section == "train":  # interventions' settings as they were written before their section existed
                interventions.update({k: values.pop(k) for k in set(values) - known if _owner(k) is not None})
            bad = set(values) - known
            _require(not bad, f"unknown config key(s) {', '.join(sorted(f'{section}.{k}' for k in bad))}")
            parts[section] = klass(**values)
        return cls(**parts, interventions=Interventions.from_values(interventions))

    @classmethod
    def from_json(cls, text: str) -> "RunConfig":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ConfigError(f"config is not valid JSON: {err}") from None
        return cls.from_dict(data)

    def replace(self, **overrides: Any) -> "RunConfig":
        """Copy with dotted or bare overrides, e.g. replace(**{"train.steps": 300}) or replace(seed=7)."""
        data = self.to_dict()
        for key, value in overrides.items():
            section, name = resolve_key(key)
            data[section][name] = value
        return RunConfig.from_dict(data)

    def hash(self) -> str:
        """Stable 12-hex-digit hash of every setting that changes results (eval cadence included). A field added after
        runs were committed counts only when set away from its default (`ADDED_LATER`), an intervention's settings only
        when away from theirs, read beside the training settings (where the first ones were): every earlier run keeps
        its hash and its folder."""
        data = self.to_dict()
        data["train"].update(data.pop("interventions"))
        for (section, name), default in ADDED_LATER.items():
            if data[section][name] == default:
                del data[section][name]
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]


# Fields added after runs were committed, with the default that reproduces those runs.
ADDED_LATER = {("task", "operation"): "add", ("train", "init_seed"): None, ("train", "data_seed"): None,
               ("model", "n_layers"): 2, ("model", "n_heads"): 1, ("model", "mlp_layers"): (1,),
               ("model", "copy_block"): None, ("model", "lookup_block"): None, ("model", "mlp_block"): None,
               ("model", "copy_head"): 0, ("model", "lookup_head"): 0}

SECTIONS = {"task": TaskConfig, "model": ModelConfig, "train": TrainConfig}


def resolve_key(key: str) -> tuple[str, str]:
    """Map 'train.steps' or a unique bare name like 'steps' to (section, field). An intervention's setting is
    ('interventions', name), given bare, as 'interventions.name' or as 'train.name' (its key before the section)."""
    section, _, name = key.rpartition(".")
    if not section:
        section = next((s for s, klass in SECTIONS.items() if name in _names(klass)), "")
    if section in SECTIONS and name in _names(SECTIONS[section]):
        return section, name
    _require(section in ("", "train", "interventions") and _owner(name) is not None, f"unknown config key {key!r}")
    return "interventions", name


def all_keys() -> list[str]:
    """Every setting's dotted key (the command line's flags): the sections' and every registered intervention's."""
    load_builtin_interventions()
    return [f"{s}.{f.name}" for s, k in (*SECTIONS.items(), *(("interventions", k) for k in INTERVENTIONS.values()))
            for f in fields(k)]

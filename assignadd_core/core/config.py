"""Settings of a run: the task, the model and the training, with the paper's protocol as defaults.

Every value is validated on construction with a one-line error naming the parameter.
`RunConfig.hash()` covers only the settings that change results (not logging or device).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import string
from dataclasses import dataclass, field, fields
from typing import Any


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
COMPOSED_LEVEL = 0.9  # a run has learned variable assignment once its 1-var train accuracy reaches this
# What a steering changes (`steer`): the identity direction, the sham that pairs the wrong variables, the random sham
# (stored as steer_sham), or nothing (the twin of a triggered steering).
STEER_DIRECTIONS = ("identity", "wrong_pairs", "random", "none")
STEER_WRITES = ("exact", "smallest", "hold", "double_hold", "clamp")  # how a steering's change is written into W_Q2 (`steer.steer`)


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
    only) by default. Other shapes train through the hooked forward. The progress measures and mechanistic
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
        if role == "copy":
            return 0
        if role == "lookup":
            return self.n_layers - 1
        return self.mlp_layers[-1] if self.mlp_layers else None

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
    """AdamW training (book/protocol.md, 'Training')."""

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
    # Perturbations that keep a run's (initialization, data order) cell: replicates of the cell. Each size is
    # relative to the spread (standard deviation) of the tensor it is added to; 0 is the unperturbed run.
    jitter: float = 0.0  # one-time nudge: every weight tensor += jitter * its std * N(0, 1) ...
    jitter_step: int = 0  # ... after this step's update (0: the initial weights)
    grad_noise: float = 0.0  # every step: every gradient tensor += grad_noise * its std * N(0, 1), before AdamW
    perturb_seed: int = 0  # draws the nudge and the gradient noise (apart from the init and data seeds)
    # Stop once 1-var train accuracy >= COMPOSED_LEVEL has held for this many evaluations in a row (0: never stop
    # early): a composition study needs the outcome, not the rest of the run. A stuck run runs to `steps`.
    stop_when_composed: int = 0
    # C10's causal test (`steer`): in the updates of steps steer_from..steer_to (0: none), the component of the
    # layer-2 QK update along the identity direction is set to steer_share x the update's norm (0 removes it);
    # steer_sham: along a fixed random direction orthogonal to it instead (drawn from perturb_seed), the control.
    steer_from: int = 0
    steer_to: int = 0
    steer_share: float = 0.0
    steer_sham: bool = False
    # Or steering that starts on a trigger: after the first eval at which measure 5 (layer 1 copies) reaches
    # steer_trigger (0: no trigger), for the next steer_window steps. steer_direction (STEER_DIRECTIONS) is what is
    # steered: "identity"; "wrong_pairs", the sham in the identity's subspace that pairs each variable with another;
    # "random" (stored as steer_sham, its first spelling); "none", the twin: nothing is changed, but the trigger is
    # recorded and an early stop waits for the window's end, as in the steered arms.
    steer_trigger: float = 0.0
    steer_window: int = 0
    steer_direction: str = "identity"
    # How the change is written into W_Q2 (STEER_WRITES): "exact" (the fixed windows of 2026-12-03) changes W_QK2 by
    # exactly c x the direction, through W_K2's inverse, which an ill-conditioned W_K2 amplifies; "smallest" makes
    # the smallest change of W_Q2 that moves the component along the direction by c (`steer`); "hold" (stated
    # 2026-12-04) makes the smallest change of W_Q2 that holds each row's contrast of the variable QK map for the
    # direction's pairing at its value before the step, whatever moved it (W_QK2 or the copies); steer_share 0.
    # "clamp" (stated 2026-12-06) makes the smallest change of W_Q2 after each step that sets each row's paired
    # entry of that map at least steer_share (the margin, in the lookup's score units) above the row's other entries.
    # "double_hold" (stated 2026-12-06) holds the queries' map Q̄ W_QK2 Uᵀ's row contrasts beside the hold's.
    steer_write: str = "exact"
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
        for name in ("jitter", "grad_noise"):
            value = _real(getattr(self, name))
            _require(0 <= value < math.inf, f"{name} must be a finite number >= 0, got {getattr(self, name)!r}")
        for name in ("jitter_step", "perturb_seed", "stop_when_composed", "steer_from", "steer_to"):
            value = getattr(self, name)
            _require(isinstance(value, int) and not isinstance(value, bool) and value >= 0,
                     f"{name} must be an integer >= 0, got {value!r}")
        _require(self.jitter_step < self.steps,
                 f"jitter_step must come before the last step ({self.steps}), got {self.jitter_step}")
        self._check_steering()
        if self.jitter == 0:
            object.__setattr__(self, "jitter", 0.0)
            object.__setattr__(self, "jitter_step", 0)
        if self.jitter == 0 and self.grad_noise == 0:
            object.__setattr__(self, "grad_noise", 0.0)
            if not self.steer_sham:  # the sham's direction is drawn from perturb_seed
                object.__setattr__(self, "perturb_seed", 0)

    def _check_steering(self) -> None:
        _require(0 <= _real(self.steer_share) < math.inf,
                 f"steer_share must be a finite number >= 0, got {self.steer_share!r}")
        _require(isinstance(self.steer_sham, bool), f"steer_sham must be true or false, got {self.steer_sham!r}")
        _require(0 <= _real(self.steer_trigger) <= 1,
                 f"steer_trigger must lie in [0, 1] (a measure-5 level; 0: no trigger), got {self.steer_trigger!r}")
        _require(isinstance(self.steer_window, int) and not isinstance(self.steer_window, bool)
                 and self.steer_window >= 0, f"steer_window must be an integer >= 0, got {self.steer_window!r}")
        _require(self.steer_direction in STEER_DIRECTIONS,
                 f"steer_direction must be one of {', '.join(STEER_DIRECTIONS)}, got {self.steer_direction!r}")
        _require(self.steer_write in STEER_WRITES,
                 f"steer_write must be one of {', '.join(STEER_WRITES)}, got {self.steer_write!r}")
        _require(self.steer_write != "clamp" or (_real(self.steer_share) > 0
                                                 and self.steer_direction in ("identity", "wrong_pairs")
                                                 and not self.steer_sham),
                 "steer_write 'clamp' keeps a pairing's entries (identity or wrong_pairs) above the rest of their rows"
                 " by the margin steer_share > 0 (in the lookup's score units),"
                 f" got steer_direction {self.steer_direction!r}, steer_share {self.steer_share!r}")
        _require(self.steer_write not in ("hold", "double_hold") or (_real(self.steer_share) == 0
                                                and self.steer_direction in ("identity", "wrong_pairs", "none")
                                                and not self.steer_sham),
                 "steer_write 'hold' holds a pairing's contrasts (identity or wrong_pairs) at steer_share 0,"
                 f" got steer_direction {self.steer_direction!r}, steer_share {self.steer_share!r}")
        if self.steer_to:
            _require(1 <= self.steer_from <= self.steer_to <= self.steps,
                     f"steering needs 1 <= steer_from <= steer_to <= steps ({self.steps}),"
                     f" got {self.steer_from}..{self.steer_to}")
        if self.steer_trigger:
            _require(not self.steer_to, "steer_trigger and steer_from/steer_to exclude each other: a steering window"
                                        " is either triggered or fixed")
            _require(self.steer_window >= 1, f"a triggered steering needs steer_window >= 1, got {self.steer_window}")
        _require(not (self.steer_sham and self.steer_direction not in ("identity", "random")),
                 f"steer_sham is the random direction; it excludes steer_direction {self.steer_direction!r}")
        if self.steer_direction == "random":  # one spelling per config: the sham's first (its runs keep their hashes)
            object.__setattr__(self, "steer_sham", True)
            object.__setattr__(self, "steer_direction", "identity")
        # Settings that do nothing take their defaults: an unperturbed run has one config and one hash.
        if self.steer_to == 0 and self.steer_trigger == 0:
            for name, default in (("steer_from", 0), ("steer_share", 0.0), ("steer_sham", False),
                                  ("steer_trigger", 0.0), ("steer_window", 0), ("steer_direction", "identity"),
                                  ("steer_write", "exact")):
                object.__setattr__(self, name, default)
        else:
            object.__setattr__(self, "steer_trigger", float(self.steer_trigger))
            object.__setattr__(self, "steer_share", 0.0 if self.steer_direction == "none" else float(self.steer_share))
            if self.steer_direction == "none":  # nothing is written
                object.__setattr__(self, "steer_write", "exact")

    @property
    def steered(self) -> bool:
        """Whether the run asks for steering: a fixed or a triggered window (the "none" twin too: its early stop
        waits for the window's end)."""
        return self.steer_to > 0 or self.steer_trigger > 0

    @property
    def perturbed(self) -> bool:
        """Whether the run carries a nudge, gradient noise or steering (not its cell's unperturbed run)."""
        return self.jitter > 0 or self.grad_noise > 0 or self.steered

    @property
    def weights_seed(self) -> int:
        """The seed of the initial weights."""
        return self.seed if self.init_seed is None else self.init_seed

    @property
    def stream_seed(self) -> int:
        """The seed of the training stream (which rows, prefixes and order each step sees)."""
        return self.seed if self.data_seed is None else self.data_seed


@dataclass(frozen=True)
class RunConfig:
    task: TaskConfig = field(default_factory=TaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunConfig":
        if not isinstance(data, dict):
            raise ConfigError(f"a run config must be a JSON object, got {type(data).__name__}")
        unknown = set(data) - {"task", "model", "train"}
        _require(not unknown, f"unknown config section(s): {', '.join(sorted(unknown))}"
                              " (expected task, model, train)")
        parts = {}
        for section, klass in (("task", TaskConfig), ("model", ModelConfig), ("train", TrainConfig)):
            values = data.get(section, {})
            known = {f.name for f in fields(klass)}
            bad = set(values) - known
            _require(not bad, f"unknown config key(s) {', '.join(sorted(f'{section}.{k}' for k in bad))}")
            parts[section] = klass(**values)
        return cls(**parts)

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
        """Stable 12-hex-digit hash of every setting that changes results (eval cadence included).

        A field added after runs were committed counts only when set away from its default
        (`ADDED_LATER`), so every earlier run keeps its hash and its folder."""
        data = self.to_dict()
        for (section, name), default in ADDED_LATER.items():
            if data[section][name] == default:
                del data[section][name]
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]


# Fields added after runs were committed, with the default that reproduces those runs.
ADDED_LATER = {("task", "operation"): "add", ("train", "init_seed"): None, ("train", "data_seed"): None, ("model", "n_layers"): 2,
               ("model", "n_heads"): 1, ("model", "mlp_layers"): (1,), ("train", "jitter"): 0.0,
               ("train", "jitter_step"): 0, ("train", "grad_noise"): 0.0, ("train", "perturb_seed"): 0,
               ("train", "stop_when_composed"): 0, ("train", "steer_from"): 0, ("train", "steer_to"): 0,
               ("train", "steer_share"): 0.0, ("train", "steer_sham"): False, ("train", "steer_trigger"): 0.0,
               ("train", "steer_window"): 0, ("train", "steer_direction"): "identity",
               ("train", "steer_write"): "exact", ("model", "copy_block"): None,
               ("model", "lookup_block"): None, ("model", "mlp_block"): None, ("model", "copy_head"): 0,
               ("model", "lookup_head"): 0}

SECTIONS = {"task": TaskConfig, "model": ModelConfig, "train": TrainConfig}


def resolve_key(key: str) -> tuple[str, str]:
    """Map 'train.steps' or a unique bare name like 'steps' to (section, field)."""
    if "." in key:
        section, name = key.split(".", 1)
        _require(section in SECTIONS and name in {f.name for f in fields(SECTIONS[section])},
                 f"unknown config key {key!r}")
        return section, name
    owners = [s for s, k in SECTIONS.items() if key in {f.name for f in fields(k)}]
    _require(len(owners) == 1, f"unknown config key {key!r}" if not owners else f"ambiguous config key {key!r}")
    return owners[0], key


def all_keys() -> list[str]:
    return [f"{s}.{f.name}" for s, k in SECTIONS.items() for f in fields(k)]

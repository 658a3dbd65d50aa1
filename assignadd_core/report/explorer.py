"""The explorer page (book/explorer.md): the trained models run in the reader's browser, offline.

Which models it ships: the study profile's `explorer` section (final models of some seeds, and the main run at
its committed checkpoints) and the reader's own runs, listed in `book/explorer_runs.yaml` by
`python -m assignadd_core explorer add RUN`. The book build exports their weights from the runs folder into the
built HTML (`_build/html/_static/explorer/`), never into the repository.

What a model file holds: the weights the page's forward pass (book/_static/explorer_model.js) multiplies, folded
as the paper reads them (one head per layer: W_QK = W_Q W_Kᵀ and W_OV = W_V W_O of each layer; W_out W_U, what
each neuron adds to the logits; W_E, W_pos, W_in, W_U), 180,352 numbers at the paper's shape. Each row is stored
as 24-bit integers times a float32 scale (its largest |value| / (2^23 - 1)): 547 kB, base64 in a script with the
neurons' frequencies (735 kB, so that the page also works opened from disk, where a browser reads no file). 16-bit
storage (fp16, or int16 per row) moved the logits by 2e-3 to 3e-2; at 24 bits they stay within PyTorch's own fp32
rounding (up to 9e-5 over the book's models), and each model's entry states its measured error. Only the paper's
shape (2 layers, 1 head, an MLP in the last block only, no LayerNorm, no biases) is exported; the task's size
(modulus, variables, widths) may differ.
"""
from __future__ import annotations

import base64
import hashlib
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import yaml

from ..core.config import ConfigError
from ..measure import roles
from ..core.data import POOLS, POOL_NAMES, eval_pools, make_split
from ..analysis import fourier
from ..rules.study import current
from ..analysis.phases import detect_phases
from ..rules.verdicts import composed
from ..core.checkpoint import CheckpointError
from ..core.run_folder import Run, current_root

ROOT = Path(__file__).resolve().parents[2]
OWN_RUNS = ROOT / "book" / "explorer_runs.yaml"  # the reader's own runs (`explorer add`)
BUILT = ROOT / "_build" / "html" / "_static" / "explorer"  # where the book build puts the models
FORMAT = 1  # of the model files; the page refuses another
BITS = 24
LEVELS = 2 ** (BITS - 1) - 1
TENSORS = ("W_E", "W_pos", "QK1", "OV1", "QK2", "OV2", "W_in", "W_outU", "W_U")  # in the file, in this order
MANIFEST_CALL = "AssignAddExplorer.manifest("  # how models.js hands the page its manifest
PER_POOL = 200  # sequences of each evaluation pool the stated error (and the browser test) is measured on
FIT_THRESHOLD = 0.7  # a neuron belongs to its best frequency when that frequency explains this share (chapter 8's)


class ExplorerError(ConfigError):
    """A model cannot go into the explorer; the message says why."""


def page_colours() -> dict[str, str]:
    """The explorer's colours, from the book's palette (the manifest hands them to the page, which sets its CSS
    variables --ae-NAME from them): each layer's attention in its part's colour (layer 1 the copy head, layer 2 the
    lookup), the operands' values in the colour of the part that moves them to `=`, the neurons in the MLP's, a
    variable's token in a tint of the embedding's, right and wrong in the verdicts' colours."""
    from .palette import PARTS, VERDICT_COLORS, tint
    return {"layer1": PARTS["copy"], "layer2": PARTS["lookup"], "values": PARTS["move"], "neurons": PARTS["mlp"],
            "variable": tint(PARTS["embed"], 0.85), "right": VERDICT_COLORS["reproduced"],
            "wrong": VERDICT_COLORS["not reproduced"], "note": VERDICT_COLORS["partly"]}


# ----------------------------------------------------------------------------- weights
def folded_weights(model) -> dict[str, np.ndarray]:
    """The page's weights [rows, cols] in float64, folded from the model's (see the module docstring)."""
    m = model.config.model
    if not m.paper_shape:
        raise ExplorerError(f"the explorer runs the paper's shape only (2 layers, 1 head, an MLP in block 1); this"
                            f" model has {m.n_layers} layers, {m.n_heads} head(s), MLPs in blocks"
                            f" {list(m.mlp_layers)}")

    def f64(t):
        return t.detach().double().cpu()
    copy, lookup = roles.attention(model, roles.COPY), roles.attention(model, roles.LOOKUP)
    mlp = roles.addition_mlp(model)
    W_U = f64(model.W_U)
    weights = {"W_E": f64(model.W_E), "W_pos": f64(model.W_pos),
               "QK1": f64(copy.W_Q[0]) @ f64(copy.W_K[0]).T, "OV1": f64(copy.W_V[0]) @ f64(copy.W_O[0]),
               "QK2": f64(lookup.W_Q[0]) @ f64(lookup.W_K[0]).T, "OV2": f64(lookup.W_V[0]) @ f64(lookup.W_O[0]),
               "W_in": f64(mlp.W_in), "W_outU": f64(mlp.W_out) @ W_U, "W_U": W_U}
    return {name: weights[name].numpy() for name in TENSORS}


def quantise(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(float32 scales [rows], integers [rows, cols] in ±LEVELS) with matrix ≈ integers * scales[:, None]."""
    peak = np.abs(matrix).max(axis=1)
    scales = np.where(peak > 0, peak / LEVELS, 1.0).astype(np.float32)
    integers = np.rint(matrix / scales[:, None].astype(np.float64)).clip(-LEVELS, LEVELS).astype(np.int32)
    return scales, integers


def encode(weights: dict[str, np.ndarray]) -> tuple[bytes, list]:
    """The model file's bytes (per tensor: its float32 row scales, then its integers, 3 bytes each, little-endian)
    and its layout [[name, rows, cols], ...]."""
    parts, layout = [], []
    for name in TENSORS:
        scales, integers = quantise(weights[name])
        parts.append(scales.astype("<f4").tobytes())
        parts.append(integers.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes())
        layout.append([name, *integers.shape])
    return b"".join(parts), layout


def decode(data: bytes, layout: list) -> dict[str, np.ndarray]:
    """The weights (float64) a model file holds: what the page computes with."""
    weights, at = {}, 0
    for name, rows, cols in layout:
        scales = np.frombuffer(data, "<f4", rows, at).astype(np.float64)
        at += 4 * rows
        raw = np.frombuffer(data, np.uint8, 3 * rows * cols, at).reshape(-1, 3).astype(np.int32)
        at += 3 * rows * cols
        integers = raw[:, 0] | (raw[:, 1] << 8) | (raw[:, 2] << 16)
        integers = np.where(integers >= 1 << 23, integers - (1 << 24), integers)
        weights[name] = integers.reshape(rows, cols) * scales[:, None]
    if at != len(data):
        raise ExplorerError(f"model file holds {len(data)} bytes, its layout {at}")
    return weights


@torch.no_grad()
def forward(weights: dict[str, np.ndarray], tokens: torch.Tensor, scale: float) -> dict[str, torch.Tensor]:
    """The page's forward pass in float64 (explorer_model.js computes the same, sequence by sequence): logits at `=`,
    both layers' attention patterns [batch, query, key] and the MLP's activations at `=`."""
    w = {name: torch.from_numpy(np.ascontiguousarray(value)) for name, value in weights.items()}
    n = tokens.shape[1]
    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))

    def attend(x, qk):
        scores = (x @ qk @ x.transpose(1, 2)) * scale
        return scores.masked_fill(~causal, -math.inf).softmax(-1)
    x0 = w["W_E"][tokens] + w["W_pos"][:n]
    pattern1 = attend(x0, w["QK1"])
    x1 = x0 + pattern1 @ x0 @ w["OV1"]
    pattern2 = attend(x1, w["QK2"])
    last = x1[:, -1] + (pattern2[:, -1:] @ x1)[:, 0] @ w["OV2"]
    post = torch.relu(last @ w["W_in"])
    return {"logits": last @ w["W_U"] + post @ w["W_outU"], "pattern1": pattern1, "pattern2": pattern2, "post": post}


def check_tokens(task) -> torch.Tensor:
    """The first PER_POOL sequences of each evaluation pool, pool after pool: every query type, held-out pairs and
    variables in held-out positions included."""
    pools = eval_pools(task)
    return torch.cat([pools[name].tokens[:PER_POOL] for name in POOL_NAMES])


# ----------------------------------------------------------------------------- one model
def neuron_table(model) -> dict:
    """Each addition-MLP neuron's best frequency k, how much of its pre-activation over the operand grid that
    frequency explains (r2), and its importance relative to the largest (chapter 8's reading)."""
    maps = fourier.neuron_preactivations(model)
    fit = fourier.fit_two_operand_frequency(maps)
    importance = fourier.neuron_importance(model, maps)
    active = fourier.active_neurons(importance)
    return {"k": [int(k) for k in fit.k], "r2": [round(float(r), 3) for r in fit.r2],
            "active": [int(a) for a in active], "fit_threshold": FIT_THRESHOLD}


def task_entry(task) -> tuple[str, dict]:
    """(key, what the page needs of a task): its sizes, names and split (training pairs and the pairs of kept 2-var
    rows as 0/1 strings over the row-major pairs, the variables held out of a side)."""
    split = make_split(task)
    n = task.modulus
    covered = torch.zeros(n, n, dtype=torch.bool)
    if split.two_var_row_pairs.numel():
        covered[split.two_var_row_pairs[:, 0], split.two_var_row_pairs[:, 1]] = True
    entry = {"modulus": n, "n_vars": task.n_vars, "seq_len": task.seq_len, "var_names": list(task.var_names),
             "left_only": split.right_forbidden_vars.tolist(), "right_only": split.left_forbidden_vars.tolist(),
             "train_pairs": "".join("1" if v else "0" for v in split.train_mask.flatten().tolist()),
             "two_var_pairs": "".join("1" if v else "0" for v in covered.flatten().tolist()),
             "train_fraction": task.train_fraction, "two_var_rate": task.two_var_rate}
    key = hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()[:12]
    return key, entry


def export_model(model, model_id: str, out_dir: Path) -> dict:
    """Write `<model_id>.js` into out_dir; returns its manifest entry (sizes, stated error, neurons' frequencies)."""
    weights = folded_weights(model)
    data, layout = encode(weights)
    tokens = check_tokens(model.config.task)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        reference = model(tokens)[:, -1].double()
    model.train(was_training)
    scale = model.blocks[0].attn.scale
    page = forward(decode(data, layout), tokens, scale)["logits"]
    meta = {"id": model_id, "format": FORMAT, "layout": layout, "scale": scale, "neurons": neuron_table(model)}
    text = (f"// {model_id}: weights of the assign-add explorer (assignadd_core/report/explorer.py), {BITS}-bit rows\n"
            f"AssignAddExplorer.weights({json.dumps(meta, separators=(',', ':'))},\n"
            f"\"{base64.b64encode(data).decode()}\");\n")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{model_id}.js").write_text(text)
    return {"file": f"{model_id}.js", "bytes": len(data), "file_bytes": len(text.encode()),
            "parameters": int(sum(rows * cols for _, rows, cols in layout)),
            "logit_error": float((page - reference).abs().max()),
            "answers_agree": float((page.argmax(-1) == reference.argmax(-1)).double().mean()),
            "checked_on": int(tokens.shape[0])}


# ----------------------------------------------------------------------------- which models
@dataclass
class Series:
    """A run in the page's model picker: one model (a final one) or several steps of it (a slider)."""

    run: str  # a folder name under the runs folder, or a path
    label: str
    group: str
    steps: tuple[int | None, ...] = (None,)  # None: the final model

    def path(self, root: Path) -> Path:
        return Path(self.run) if "/" in self.run else root / self.run

    def model_id(self, step: int | None) -> str:
        name = Path(self.run).name
        return name if step is None else f"{name}-step{step:06d}"


def study_series() -> list[Series]:
    """The study profile's explorer models: final models of `seeds` (grouped as composed or stuck by their final
    1-var train accuracy, where the run is here), then `across_training` at its `steps` and its end."""
    spec = current().get("explorer") or {}
    series = [Series(name, name.replace("seed", "seed ", 1), "") for name in spec.get("seeds", [])]
    across = spec.get("across_training")
    if across:
        steps = tuple(int(s) for s in across.get("steps", ())) + (None,)
        series.append(Series(across["run"], f"{across['run'].replace('seed', 'seed ', 1)} across training",
                             "the main run across training", steps))
    return series


def own_series(path: Path | None = None) -> list[Series]:
    """The reader's runs added with `explorer add` (book/explorer_runs.yaml)."""
    path = Path(path or OWN_RUNS)
    if not path.is_file():
        return []
    entries = yaml.safe_load(path.read_text()) or []
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "run" in e for e in entries):
        raise ExplorerError(f"{path}: expected a list of {{run, label, steps}} entries")
    return [Series(str(e["run"]), str(e.get("label") or e["run"]), "your runs",
                   tuple(int(s) for s in e.get("steps") or ()) + (None,)) for e in entries]


def stop_entry(run, step: int | None) -> dict:
    """What the page says of one model: its step, and the pools' accuracies there (metrics.csv, or final.json)."""
    if step is None:
        final = run.final()
        return {"step": int(final["last_step"]), "final": True,
                "accuracy": {name: round(float(final["pools"][name]), 4) for name in POOL_NAMES}}
    metrics = run.metrics()
    row = metrics[metrics["step"] == step]
    accuracy = {name: round(float(row.iloc[0][name]), 4) for name in POOL_NAMES} if len(row) else {}
    return {"step": int(step), "final": False, "accuracy": accuracy}


def phases_of(run) -> dict:
    """The run's jump and final rise (the steps chapter 2 reads off its metrics), for the page's training slider."""
    found = detect_phases(run.metrics())
    return {key: found[key] for key in ("jump", "refinement") if found.get(key)}


def group_of(run, group: str) -> tuple[str, str]:
    """(group, state): a seed's group from its final 1-var train accuracy (composed or stuck) unless given."""
    one_var = float(run.final()["pools"]["1var_train"])
    state = "composed" if composed(one_var) else "stuck"
    return (group or f"{state} seeds (final models)"), state


def source_key(weights_file: Path) -> str:
    """What an exported model is a function of: the weights file and this module (a changed exporter exports anew)."""
    digest = hashlib.sha256(Path(weights_file).read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()[:16]


def read_manifest(out_dir: Path) -> dict | None:
    """The manifest an earlier export wrote into out_dir (None when there is none, or it is unreadable)."""
    path = Path(out_dir) / "models.js"
    try:
        text = path.read_text()
        start = text.index(MANIFEST_CALL) + len(MANIFEST_CALL)
        return json.loads(text[start: text.rindex(")")])
    except (OSError, ValueError):
        return None


def export(out_dir: Path | None = None, root: Path | None = None, series: list[Series] | None = None,
           log=print) -> dict:
    """Export every model of the explorer into out_dir and write its manifest (`models.js`); a model exported before
    from the same weights file and exporter is kept as it is; a run whose weights are not here is left out with one
    line. Returns the manifest."""
    root = Path(root or current_root())
    series = study_series() + own_series() if series is None else series
    out_dir = Path(out_dir or BUILT)
    out_dir.mkdir(parents=True, exist_ok=True)
    previous = read_manifest(out_dir) or {}
    before, tasks_before = previous.get("models", {}), previous.get("tasks", {})
    manifest = {"format": FORMAT, "bits": BITS, "pools": [{"name": p.name, "label": p.label} for p in POOLS],
                "colours": page_colours(), "tasks": {}, "models": {}, "series": []}
    tic, fresh = time.perf_counter(), 0
    for item in series:
        run = Run(item.path(root))
        try:
            group, state = group_of(run, item.group)
            stops = []
            for step in item.steps:
                model_id = item.model_id(step)
                if model_id not in manifest["models"]:
                    key = source_key(run.model_path if step is None else run.checkpoint_path(step))
                    old = before.get(model_id, {})
                    if (old.get("source") == key and old.get("task") in tasks_before
                            and (out_dir / old["file"]).is_file()):
                        manifest["models"][model_id] = old
                        manifest["tasks"][old["task"]] = tasks_before[old["task"]]
                    else:
                        model = run.load_model(step)
                        task_key, task = task_entry(model.config.task)
                        manifest["tasks"][task_key] = task
                        m = model.config.model
                        manifest["models"][model_id] = {**export_model(model, model_id, out_dir), "source": key,
                                                        "task": task_key, "d_model": m.d_model, "d_mlp": m.d_mlp}
                        fresh += 1
                stops.append({"model": model_id, **stop_entry(run, step)})
        except (CheckpointError, ConfigError, OSError, KeyError) as err:
            log(f"explorer: {item.run} left out: {str(err).splitlines()[0]}")
            continue
        manifest["series"].append({"id": Path(item.run).name + ("-training" if len(stops) > 1 else ""),
                                   "label": item.label, "group": group, "state": state, "run": Path(item.run).name,
                                   "stops": stops, "phases": phases_of(run) if len(stops) > 1 else {}})
    (out_dir / "models.js").write_text("// the assign-add explorer's models (assignadd_core/report/explorer.py)\n"
                                       f"{MANIFEST_CALL}{json.dumps(manifest, separators=(',', ':'))});\n")
    shipped = {entry["file"] for entry in manifest["models"].values()} | {"models.js"}
    for stale in out_dir.glob("*.js"):
        if stale.name not in shipped:
            stale.unlink()
    models = manifest["models"].values()
    if models:
        log(f"explorer: {len(models)} model(s), {fresh} exported now ({time.perf_counter() - tic:.0f} s),"
            f" {sum(m['file_bytes'] for m in models) / 1e6:.1f} MB; logits within"
            f" {max(m['logit_error'] for m in models):.1e} of PyTorch's on {PER_POOL} sequences of each pool")
    return manifest


# ----------------------------------------------------------------------------- the reader's runs
def _read_own(path: Path) -> list[dict]:
    return (yaml.safe_load(path.read_text()) or []) if path.is_file() else []


def _write_own(path: Path, entries: list[dict]) -> None:
    header = ("# Your runs in the explorer page (book/explorer.md): `python -m assignadd_core explorer add RUN`"
              " adds one,\n# `explorer remove RUN` takes it out; the book build exports their weights.\n")
    path.write_text(header + yaml.safe_dump(entries, sort_keys=False))


def add(run_arg: str, label: str | None = None, steps: list[int] | None = None, root: Path | None = None,
        own: Path | None = None) -> Series:
    """Check a run for the explorer (its weights, its shape) and list it in `own` (replacing an earlier entry)."""
    root = Path(root or current_root())
    path = Path(run_arg)
    name = run_arg if "/" not in run_arg else (path.name if path.resolve().parent == root.resolve() else str(path))
    series = Series(name, label or path.name, "your runs", tuple(steps or ()) + (None,))
    run = Run(series.path(root))
    try:
        for step in series.steps:
            folded_weights(run.load_model(step))  # refuses another shape
        run.final()
    except CheckpointError as err:
        raise ExplorerError(f"{run_arg}: {str(err).splitlines()[0]}") from None
    own = Path(own or OWN_RUNS)
    entries = [e for e in _read_own(own) if str(e.get("run")) != name]
    entries.append({"run": name, "label": series.label, **({"steps": list(steps)} if steps else {})})
    _write_own(own, entries)
    return series


def remove(run_arg: str, own: Path | None = None) -> bool:
    own = Path(own or OWN_RUNS)
    entries = _read_own(own)
    kept = [e for e in entries if str(e.get("run")) not in (run_arg, Path(run_arg).name)]
    if len(kept) == len(entries):
        return False
    _write_own(own, kept)
    return True


# ----------------------------------------------------------------------------- command line
def register_cli(sub) -> None:
    ex = sub.add_parser("explorer", help="the models of the book's explorer page: list them, add your own run",
                        description="The explorer page runs trained models in the browser. `add RUN` lists a run of"
                                    " yours (a folder under the runs folder, or a path) in book/explorer_runs.yaml"
                                    " and, when the book is built, exports it into _build/html at once; `export`"
                                    " is what the book build does.")
    ex.add_argument("action", choices=("list", "add", "remove", "export"))
    ex.add_argument("run", nargs="?", help="add, remove: the run (e.g. seed7 or runs/seed7)")
    ex.add_argument("--label", help="add: its name in the page's model picker (default: the run's name)")
    ex.add_argument("--steps", type=int, nargs="+", metavar="STEP",
                    help="add: checkpoints to ship besides the final model (a slider in the page)")
    ex.add_argument("--out", type=Path, default=None, help=f"export: the folder (default {BUILT.relative_to(ROOT)})")
    ex.set_defaults(func=cmd_explorer)


def cmd_explorer(args) -> int:
    if args.action in ("add", "remove") and not args.run:
        raise ExplorerError(f"explorer {args.action} needs the run, e.g. `explorer {args.action} seed7`")
    if args.action == "add":
        series = add(args.run, args.label, args.steps)
        what = "final model" + (f" and steps {', '.join(map(str, args.steps))}" if args.steps else "")
        print(f"added {series.run} ({what}) to the explorer as {series.label!r} ({OWN_RUNS.relative_to(ROOT)})")
        if BUILT.parent.is_dir():
            export(BUILT)
            print(f"exported into {BUILT.relative_to(ROOT)}: reload _build/html/book/explorer.html")
        else:
            print("the book is not built yet: `python -m assignadd_core.report.book build` builds it with this model")
    elif args.action == "remove":
        removed = remove(args.run)
        print(f"removed {args.run} from the explorer" if removed else f"{args.run} is not among your explorer runs")
        if removed and BUILT.parent.is_dir():
            export(BUILT)
    elif args.action == "export":
        export(args.out or BUILT)
    else:
        root = current_root()
        for item in study_series() + own_series():
            run = Run(item.path(root))
            here = all((run.model_path if s is None else run.checkpoint_path(s)).is_file() for s in item.steps)
            try:
                group = group_of(run, item.group)[0]
            except (CheckpointError, KeyError):
                group = item.group or "seeds"
            steps = "final" if item.steps == (None,) else f"{len(item.steps)} steps"
            print(f"{item.run:<24} {steps:<10} {group}: {item.label}" + ("" if here else "  (weights not here: left out)"))
    return 0

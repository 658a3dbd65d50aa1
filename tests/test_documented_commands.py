"""Every command of the ```bash blocks of README.md and book/reproduce.md runs as written.

The commands run in a copy of the working tree (so `book execute` writes the copy's book/chapters/ and
`book build` its _build/, never the real ones), with its own runs folder (ASSIGNADD_RUNS, and the copy's
package first on PYTHONPATH, also for the kernels papermill starts), so nothing under runs/ is written.
A command that would train for minutes or hours runs with a tiny model and a few steps instead, by the
rules below; every other one runs exactly as written. What the rules change, and only that:

* `train`: tiny model and batch flags (replacing the documented ones, e.g. `--eval-every`), and `--steps`
  divided by 2,000 (at least 20);
* `sweep run`: `--steps 20 --points 1`, one seed;
* `generality run`: `--steps 20 --shapes mod97` (its share of the three mod-97 runs, 20 steps each);
* `power`: `--sims 10` (10 simulated data sets per seed count instead of 200); `power r2`: `--sims 10` on the
  committed crossed design;
* `rescue` (seven branches of 10,000 steps from seed 43's saved state): in an empty runs folder, its one-line
  refusal (tests/test_rescue.py trains tiny branches);
* papermill on a chapter: `-p steps 60 -p overrides <tiny>`; `book execute --profile P`: P with the same
  tiny settings added to each chapter;
* `--device cuda` where torch sees no GPU: the documented refusal (one line, non-zero exit) is checked;
  a Ray `--address HOST:PORT`: an address on this machine where nothing listens, and the documented
  refusal; `path/to/authors_state_dict.pth`: the authors' file where it is present, else our seed42
  weights saved in their (TransformerLens) format;
* `book build`: the runs folder gets copies of the committed files the book links (the main runs' metrics,
  the claims table);
* `explorer add seed7`: as written, on the tiny `seed7` the line before trained, into the sandbox's built book when
  an earlier command built it;
* `make TARGET` (after any VAR=value settings): `make -n TARGET` (the recipe exists and expands; `make book` and `make test` run in CI
  and take many minutes); mutmut's report without a `make mutate` run: its one-line refusal.

A command no rule knows fails the test: a new documented command needs a rule (or runs as written).
Commands of one block of README.md share a fresh runs folder unless a rule needs its own; book/reproduce.md
is a walkthrough, so its commands share one runs folder in order (the continuations need the runs
trained before them).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("README.md", "book/reproduce.md")


def linked_runs_files() -> tuple[str, ...]:
    """The runs' files the chapters link for download (`{download}` targets under ../../runs/), relative to runs/:
    a strict build fails on a link it cannot read, so the copy the build runs in needs every one."""
    found = set()
    for chapter in (ROOT / "book" / "chapters").glob("*.ipynb"):
        found.update(re.findall(r"<\.\./\.\./runs/([^>]+)>", chapter.read_text()))
    return tuple(sorted(found))


# The paper's task (chapter 5 shows the paper's own example sequence, which needs its 59 numbers and
# 12 variables), a tiny model, small batches and pools.
TINY = {"d_model": 16, "d_mlp": 32, "batch_size": 32, "eval_every": 20, "probe_every": 40, "pool_size": 50}
TINY_FLAGS = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in TINY.items())
TIMEOUT = 1800  # per command: a loop of five trainings, niced, beside other training on two cores


# ------------------------------------------------------------------ reading the documents
@dataclass
class Command:
    doc: str
    block: int  # index of the ```bash block in its document
    text: str  # as written: continuation lines joined, a for loop whole
    comments: list[str] = field(default_factory=list)  # `# ...` lines right after it (documented output)

    @property
    def id(self) -> str:
        first = self.text.splitlines()[0]
        return f"{self.doc}:{self.block}:{first[:70]}"


def documented_commands(doc: str) -> list[Command]:
    text = (ROOT / doc).read_text()
    commands = []
    for block, body in enumerate(re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M)):
        lines = body.replace("\\\n", " ").splitlines()
        i = 0
        while i < len(lines):
            line = lines[i].rstrip()
            if not line.strip():
                i += 1
                continue
            if line.lstrip().startswith("#"):
                if commands and commands[-1].doc == doc and commands[-1].block == block:
                    commands[-1].comments.append(line.lstrip()[1:].strip())
                i += 1
                continue
            if re.match(r"\s*for\s", line):  # a loop, to its `done`
                j = i
                while not re.match(r"\s*done\b", lines[j]):
                    j += 1
                commands.append(Command(doc, block, "\n".join(lines[i:j + 1])))
                i = j + 1
                continue
            commands.append(Command(doc, block, line))
            i += 1
    return commands


ALL = [c for doc in DOCS for c in documented_commands(doc)]


def test_the_documents_show_the_commands_this_test_expects():
    texts = [c.text for c in ALL]
    assert any("papermill notebooks/02_training_phases.ipynb" in t and "--log-output" in t for t in texts)
    assert any("papermill --help-notebook notebooks/02_training_phases.ipynb" in t for t in texts)
    assert any("assignadd_core.report.book execute --only 06_circuits --profile my_profile.yaml" in t for t in texts)
    assert any(t.startswith("for seed in") for t in texts) and len(ALL) >= 30


# ------------------------------------------------------------------ the sandbox
class Sandbox:
    """A copy of the working tree (tracked and untracked files git does not ignore, without runs/), with
    .venv linked to the real one, and a runs folder of its own."""

    def __init__(self, where: Path):
        self.tree = where / "tree"
        self.tree.mkdir()
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                                capture_output=True).stdout.decode().split("\0")
        for name in listed:
            if not name or name.startswith("runs/") or not (ROOT / name).is_file():
                continue
            (self.tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, self.tree / name)
        (self.tree / ".venv").symlink_to(ROOT / ".venv")
        self.runs = self.tree / "runs"
        self.reset_runs()
        self.env = {**os.environ, "ASSIGNADD_RUNS": str(self.runs), "PYTHONPATH": str(self.tree),
                    "PYTHONDONTWRITEBYTECODE": "1"}

    def reset_runs(self, fixtures: tuple[str, ...] = ()) -> None:
        """An empty runs folder holding copies of these committed runs / sweep results (read-only data)."""
        shutil.rmtree(self.runs, ignore_errors=True)
        self.runs.mkdir()
        self.add_runs(fixtures)

    def add_runs(self, fixtures: tuple[str, ...]) -> None:
        """Copies of these committed runs / files into the runs folder, beside what is there."""
        for name in fixtures:
            source = ROOT / "runs" / name
            if source.is_dir():
                shutil.copytree(source, self.runs / name, ignore=shutil.ignore_patterns(
                    "checkpoints", "resume", ".lock*", ".*.lock*", "scratch"))
            else:
                (self.runs / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, self.runs / name)

    def run(self, command: str, timeout: int = TIMEOUT, runs: Path | None = None) -> subprocess.CompletedProcess:
        env = self.env if runs is None else {**self.env, "ASSIGNADD_RUNS": str(runs)}
        return subprocess.run(["bash", "-c", command], cwd=self.tree, env=env, capture_output=True,
                              text=True, timeout=timeout)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    return Sandbox(tmp_path_factory.mktemp("documented"))


# ------------------------------------------------------------------ the rules
def cuda_available() -> bool:
    import torch
    return torch.cuda.is_available()


def tiny_steps(match: re.Match | None) -> int:
    """20 plus a two-thousandth of the documented steps (40,000, the default, gives 40): more steps stay more, so a
    continuation still continues (120,000 gives 80 after 40; 8,600 gives 24 after 4,400's 22)."""
    return 20 + int(match.group(1)) // 2000 if match else 40


def tiny_train(line: str) -> str:
    """A documented `train` line with a tiny model and batch and a two-thousandth of its steps."""
    steps = tiny_steps(re.search(r"--steps (\d+)", line))
    line = re.sub(r"\s--steps \d+", "", line)
    for name in (k.replace("_", "-") for k in TINY):  # a documented value of a tiny setting gives way to it
        line = re.sub(rf"\s--{name} \S+", "", line)
    return f"{line} --steps {steps} {TINY_FLAGS}"


def tiny_sweep(line: str) -> str:
    extra = " --steps 20 --points 1" + ("" if "--seeds" in line else " --seeds 42")
    return line + extra


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Step:
    shell: str
    check: object  # callable(result, sandbox) -> None
    fixtures: tuple[str, ...] | None = None  # reset the runs folder to these first (None: keep it)
    adds: tuple[str, ...] = ()  # committed files copied into the runs folder first, beside what is there
    isolated: bool = False  # in an empty runs folder of its own, leaving the shared one as it is


def ok(*needles: str):
    def check(result, box):
        assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        for needle in needles:
            assert needle in result.stdout + result.stderr, f"{needle!r} not in the output:\n{result.stdout[-2000:]}"
    return check


def refused(*needles: str):
    """Stops with a short message naming the problem (no traceback), non-zero exit."""
    def check(result, box):
        text = result.stdout + result.stderr
        assert result.returncode != 0, f"expected a refusal, got exit 0:\n{text[-2000:]}"
        assert "Traceback" not in text, text[-3000:]
        for needle in needles:
            assert needle.lower() in text.lower(), f"{needle!r} not in the refusal:\n{text[-2000:]}"
    return check


def documented_json(command: Command):
    """`"key": number` pairs of the documented output must be what the command prints."""
    expected = dict(re.findall(r'"(\w+)": (\d+)(?=[,}])', " ".join(command.comments)))

    def check(result, box):
        ok()(result, box)
        printed = json.loads(result.stdout)
        for key, value in expected.items():
            assert printed[key] == int(value), f"{key}: documented {value}, printed {printed[key]}"
    return check


def papermill_check(result, box):
    ok("seed7:")(result, box)  # --log-output: the training bar shows in the terminal
    assert re.search(r"seed7: 100%", result.stdout + result.stderr), "the training bar did not finish"
    out = box.tree / "my_phases.ipynb"
    assert "Parameters of this execution: runs=['seed7'], seeds=[7]" in out.read_text()
    assert (box.runs / "seed7" / "final.json").is_file()


def execute_check(result, box):
    ok()(result, box)
    assert re.search(r"^executed 06_circuits +\d+ s  ok$", result.stdout, re.M), result.stdout
    assert "run='seed7'" in (box.tree / "book" / "chapters" / "06_circuits.ipynb").read_text()
    assert "without encryption" not in result.stderr


def build_check(result, box):
    ok("built ")(result, box)
    assert (box.tree / "_build" / "html" / "book" / "chapters" / "06_circuits.html").is_file()
    assert (box.tree / "_build" / "html" / "_static" / "mathjax" / "tex-mml-chtml.js").is_file()
    assert "MdParserConfig" not in result.stdout + result.stderr  # quiet: no configuration dump


def explorer_add_check(result, box):
    ok("added seed7", "my seed 7")(result, box)
    assert "seed7" in (box.tree / "book" / "explorer_runs.yaml").read_text()
    built = box.tree / "_build" / "html" / "_static" / "explorer" / "models.js"
    if built.is_file():  # the book was built by an earlier command: the model is in it now
        assert '"seed7"' in built.read_text() and (built.parent / "seed7.js").is_file(), result.stdout[-2000:]


def eval_pth(box) -> str:
    """The authors' state dict when present, else our seed42 in their format (same weights, same numbers)."""
    import torch

    from assignadd_core.core.checkpoint import load_model
    from assignadd_core.analysis.authors_format import reference_weights_path
    from test_checkpoint import tl_state_dict
    reference = reference_weights_path()
    if reference is not None:
        return str(reference)
    path = box.tree / "authors_format_seed42.pth"
    torch.save(tl_state_dict(load_model(box.runs / "seed42" / "model.safetensors")), path)
    return str(path)


def pth_check(result, box):
    ok()(result, box)
    printed = json.loads(result.stdout)
    assert set(printed) == {"pools", "exact"} and len(printed["pools"]) == 9


def make_dry_run(command: Command) -> list[Step]:
    return [Step(re.sub(r"^((?:[A-Z_]+=\S+\s+)*)make\s", r"\1make -n ", command.text.split("#")[0].strip()), ok())]


def steps_for(command: Command, box: Sandbox) -> list[Step]:
    """How a documented command is run here (see the module docstring)."""
    text = command.text
    head = text.split("#")[0].strip() if "\n" not in text else text
    py = r"^\.venv/bin/python -m assignadd_core"
    readme = command.doc == "README.md"
    if re.match(r"^(?:[A-Z_]+=\S+\s+)*make\s", text):  # environment settings first, then make
        return make_dry_run(command)
    if re.match(r"^\.venv/bin/python benchmarks/mutation_report\.py", text):
        return [Step(head, refused("make mutate"))] if not (box.tree / "mutants").exists() else [Step(head, ok())]
    if head.startswith(".venv/bin/papermill --help-notebook"):
        return [Step(head, ok("runs:", "seeds:", "steps:", "overrides:"))]
    if head.startswith(".venv/bin/papermill notebooks/02_training_phases.ipynb"):
        tiny = f"{head} -p steps 60 -p overrides {shlex.quote(json.dumps(TINY))}"
        return [Step(tiny, papermill_check)]
    if head.startswith("printf ") and "my_profile.yaml" in head:
        return [Step(head, ok())]
    if re.match(py + r"\.report\.book execute .*--profile my_profile\.yaml", head):
        def tinier(result, box):
            profile = yaml.safe_load((box.tree / "my_profile.yaml").read_text())
            for values in profile.values():
                values.update(steps=60, overrides=TINY)
            (box.tree / "my_profile_tiny.yaml").write_text(yaml.safe_dump(profile))
        tinier(None, box)
        return [Step(head.replace("my_profile.yaml", "my_profile_tiny.yaml"), execute_check)]
    if re.match(py + r"\.report\.book build$", head):  # the book links runs' files (metrics, claims, sweep CSVs)
        return [Step(head, build_check, adds=linked_runs_files())]
    if re.match(py + r" explorer add ", head):  # the run trained by the line before, into the built book if any
        return [Step(head, explorer_add_check)]
    if re.match(py + r" split", head):
        return [Step(head, documented_json(command) if "--json" in head else ok("train"))]
    if re.match(py + r" train --help$", head):
        return [Step(head, ok("--steps", "--continue-from"))]
    if re.match(py + r" eval runs/seed42 \[--json\]$", head):
        fixtures = ("seed42",)
        return [Step(head.replace(" [--json]", ""), ok("0var_train", "2var_union"), fixtures),
                Step(head.replace("[--json]", "--json"), pth_check)]
    if re.match(py + r" eval path/to/authors_state_dict\.pth --json$", head):
        box.reset_runs(("seed42",))
        return [Step(head.replace("path/to/authors_state_dict.pth", eval_pth(box)), pth_check)]
    if re.search(r"^\s*\.venv/bin/python -m assignadd_core train ", text, re.M):  # a line or a loop's body
        cuda = "--device cuda" in text
        shell = "\n".join(tiny_train(line) if "-m assignadd_core train" in line else line
                          for line in (head if "\n" not in text else text).splitlines())
        if cuda and not cuda_available():  # an alternative to the CPU commands: checked on its own
            return [Step(shell, refused("cuda"), isolated=True)]
        return [Step(shell, ok(), () if readme else None)]
    if re.match(py + r" rescue ", head):  # trains 7 x 10,000 steps from seed 43's saved state (tests/test_rescue.py
        # trains tiny branches): here, in an empty runs folder, its one-line refusal without a source run
        return [Step(head, refused("not a run directory"), isolated=True)]
    if re.match(py + r" generality run ", head):  # 12 runs of 20,000 steps: here its mod97 runs, of 20 steps
        return [Step(f"{head} --steps 20 --shapes mod97", ok("run(s): mod97_seed4"))]
    if re.match(py + r" generality status$", head):
        return [Step(head, ok("mod97_seed42", "layers3_heads2_seed44"))]
    if re.match(py + r" power$", head):  # 200 simulated data sets per seed count: here 10
        return [Step(f"{head} --sims 10", ok("seeds: interval no wider than", "chosen:"), adds=("sweeps/r_sweep.csv",))]
    if re.match(py + r" power r2( --sims \d+)?$", head):  # 200 (or 20) simulated designs: here 10, on the committed design
        return [Step(re.sub(r" --sims \d+", "", head) + " --sims 10", ok("cell test: rejects in", "written"),
                     adds=("sweeps/composition_odds.jsonl", "sweeps/composition_odds.csv"))]
    if re.match(py + r" sweep list$", head):
        return [Step(head, ok("f_sweep", "r_sweep"))]
    if re.match(py + r" sweep (status|annotate) f_sweep$", head):
        return [Step(head, ok("f_sweep"), ("sweeps/f_sweep.jsonl", "sweeps/f_sweep.csv") if readme else None)]
    lines = text.splitlines()
    if re.match(r"for shape in [\w ]+; do$", lines[0]) and "sweep run g4_$shape" in text:  # G4 by seed pairs
        body = re.sub(r"\s+#.*$", "", lines[-1])  # the loop as written, each shape's sweep tiny (20 steps, one point)
        return [Step("\n".join([lines[0], tiny_sweep(lines[1]), body]), ok())]
    if re.match(py + r" sweep run ", head):
        if "--device cuda" in head and not cuda_available():
            return [Step(tiny_sweep(head), refused("cuda"))]
        if "HOST:PORT" in head:
            address = f"127.0.0.1:{free_port()}"
            local = head.replace(" [--address HOST:PORT]", "")
            steps = [Step(tiny_sweep(head.replace("[--address HOST:PORT]", f"--address {address}")
                                     .replace("HOST:PORT", address)), refused(address))]
            if local != head:  # the optional address left out: a local Ray cluster
                steps.append(Step(tiny_sweep(local), ok()))
            return steps
        return [Step(tiny_sweep(head), ok())]
    raise AssertionError(f"no rule for the documented command {text!r}: add one to {Path(__file__).name}")


# ------------------------------------------------------------------ the tests
_done: set[str] = set()


def run_command(command: Command, box: Sandbox) -> None:
    _done.add(command.id)  # tried: a later command of the walkthrough does not run it again
    for step in steps_for(command, box):
        if step.fixtures is not None:
            box.reset_runs(step.fixtures)
        box.add_runs(step.adds)
        if step.isolated:
            with tempfile.TemporaryDirectory() as runs:
                result = box.run(step.shell, runs=Path(runs))
        else:
            result = box.run(step.shell)
        try:
            step.check(result, box)
        except AssertionError as err:
            raise AssertionError(f"documented: {command.text}\nran: {step.shell}\n{err}") from None


@pytest.mark.parametrize("command", [c for c in ALL if c.doc == "README.md"], ids=lambda c: c.id)
def test_readme_command_works_as_written(command, sandbox):
    first_of_block = not any(c.id in _done for c in ALL if c.doc == command.doc and c.block == command.block)
    if first_of_block:
        sandbox.reset_runs()
    run_command(command, sandbox)


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory):
    """book/reproduce.md in its own sandbox, one runs folder for the whole page, commands in order."""
    box = Sandbox(tmp_path_factory.mktemp("reproduce"))
    box.reset_runs(("sweeps/f_sweep.jsonl", "sweeps/f_sweep.csv"))
    return box, [c for c in ALL if c.doc == "book/reproduce.md"]


@pytest.mark.parametrize("index", range(len([c for c in ALL if c.doc == "book/reproduce.md"])),
                         ids=[c.id for c in ALL if c.doc == "book/reproduce.md"])
def test_reproduce_page_command_works_as_written(index, walkthrough):
    box, commands = walkthrough
    for earlier in commands[:index]:  # the walkthrough up to here (when this test runs alone)
        if earlier.id not in _done:
            run_command(earlier, box)
    run_command(commands[index], box)

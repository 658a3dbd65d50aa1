"""Build driver of the book: `python -m assignadd_core.report.book execute|build|all [--profile P] [--only SLUG]`.

* execute – papermill runs every `notebooks/NN_slug.ipynb` (sorted, so 13_claims runs last) with
  the parameters of its slug in the profile (`params/book.yaml`) into `book/chapters/`; the
  parameter cells are tagged `remove-cell` (the chapter prints its parameters in one line).
  `--skip-unchanged` keeps chapters whose source and parameters did not change (default: all run).
  Only chapters executed here record claims (`claims.record_claim`): the driver names the claims
  folder in the kernel's environment.
* build – regenerates `_toc.yml` from the executed chapters present (a chapter not written or not
  executed yet is simply absent, so it cannot break the build), the timing table of `book/reproduce.md`, copies
  plotly.min.js into `book/_static/`, then `jupyter-book build . -W -n --keep-going` with
  execution off, exports the explorer page's models from the runs folder into the HTML (`explorer`), and checks
  that every figure of every chapter made it into the HTML.
* all – execute, then build.
Any failed cell, Sphinx warning or missing figure makes the command exit non-zero.

The driver imports the package's modules and the slow libraries it uses (papermill, nbformat, plotly) inside the
functions that need them: each chapter runs in its own kernel, and the driver itself starts in a fraction of a second.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
CHAPTERS = ROOT / "book" / "chapters"
STATIC = ROOT / "book" / "_static"
HTML = ROOT / "_build" / "html"
TOC = ROOT / "_toc.yml"
REPRODUCE = ROOT / "book" / "reproduce.md"
INTRO = ROOT / "book" / "intro.md"
README = ROOT / "README.md"
EXPLORER_PAGE = ROOT / "book" / "explorer.md"
GLOSSARY_PAGE = ROOT / "book" / "glossary.md"
DEFAULT_PROFILE = ROOT / "params" / "book.yaml"
HIDDEN_TAGS = ("parameters", "injected-parameters")  # the one-line print in cell 2 shows the values
FIGURE_MARK = 'class="plotly-graph-div"'
TIMINGS_START, TIMINGS_END = "<!-- timings:start -->", "<!-- timings:end -->"
_SLUG = re.compile(r"^\d\d_[a-z0-9_]+$")


class BookError(RuntimeError):
    """The book cannot be built as asked; the message says why."""


def source_notebooks(only: list[str] | None = None) -> list[Path]:
    found = sorted(p for p in NOTEBOOKS.glob("*.ipynb") if _SLUG.match(p.stem))
    if only:
        unknown = set(only) - {p.stem for p in found}
        if unknown:
            raise BookError(f"no notebook(s) {', '.join(sorted(unknown))} in notebooks/;"
                            f" chapters are {', '.join(p.stem for p in found)}")
        found = [p for p in found if p.stem in only]
    return found


def load_profile(path: Path) -> dict[str, dict]:
    """A profile maps chapter slug -> {parameter: value}; a chapter it does not name runs with its defaults."""
    data = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values() if v is not None):
        raise BookError(f"{path}: a profile maps chapter slugs to parameter mappings")
    return {slug: dict(values or {}) for slug, values in data.items()}


VOLATILE_NOTEBOOK_KEYS = ("start_time", "end_time", "duration")  # of metadata.papermill
VOLATILE_CELL_KEYS = ("start_time", "end_time", "duration")  # of each cell's metadata.papermill


def finish_notebook(path: Path) -> None:
    """Hide the parameter cells, keep this machine's paths out of papermill's metadata, and drop what
    changes from one execution to the next without the chapter changing: papermill's start and end
    times and durations (of the notebook and of each cell) and the kernel's execution timestamps
    (`metadata.execution`), the random id papermill gives its injected cell, and the way printed text
    happens to be cut into several stream outputs (`merged_streams`). Re-executing a chapter
    on the same inputs then rewrites the same bytes. (The book's timing table comes from the runs'
    final.json, not from these.)"""
    import nbformat
    nb = nbformat.read(path, as_version=4)
    meta = nb.metadata.get("papermill", {})
    for key in ("input_path", "output_path", "cwd"):
        if meta.get(key):
            where = Path(meta[key]).resolve()
            meta[key] = where.relative_to(ROOT).as_posix() if where.is_relative_to(ROOT) else where.name
    for key in VOLATILE_NOTEBOOK_KEYS:
        meta.pop(key, None)
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if any(t in tags for t in HIDDEN_TAGS) and "remove-cell" not in tags:
            tags.append("remove-cell")
        if "injected-parameters" in tags:
            cell["id"] = "injected-parameters"  # papermill draws a random id for the cell it adds
        cell.metadata.pop("execution", None)
        for key in VOLATILE_CELL_KEYS:
            cell.metadata.get("papermill", {}).pop(key, None)
        if cell.get("outputs"):
            cell.outputs = merged_streams(cell.outputs)
    nbformat.write(nb, path)


ROUNDING = 1e-4  # relative: numbers of two executions closer than this are the same result (another CPU's BLAS)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_FIGURE_ID = re.compile(r"figure-\d+-[0-9a-f]{12}")  # the renderer's div id holds a hash of the figure's data


def same_within_rounding(old: bytes, new: bytes, rel: float = ROUNDING) -> bool:
    """Whether two executed notebooks differ only in the last digits of their numbers: the same text once every
    number is cut out, and every pair of numbers within `rel` of each other (or both below 1e-9). A chapter
    re-executed on another CPU then leaves the committed file alone unless a result really changed."""
    a, b = _FIGURE_ID.sub("figure", old.decode()), _FIGURE_ID.sub("figure", new.decode())
    if a == b:
        return True
    if _NUMBER.sub("#", a) != _NUMBER.sub("#", b):
        return False
    for x, y in zip(_NUMBER.findall(a), _NUMBER.findall(b)):
        if x != y:
            u, v = float(x), float(y)
            if abs(u - v) > rel * max(abs(u), abs(v)) and max(abs(u), abs(v)) > 1e-9:
                return False
    return True


def merged_streams(outputs: list) -> list:
    """Consecutive stream outputs of the same stream (stdout, stderr) as one: how the kernel's writes are cut
    into messages depends on timing, so the same prints arrive as one output or several."""
    merged = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (output.get("output_type") == "stream" and previous is not None
                and previous.get("output_type") == "stream" and previous.get("name") == output.get("name")):
            previous["text"] = "".join(previous["text"]) + "".join(output["text"])
        else:
            merged.append(output)
    return merged


def is_current(source: Path, target: Path, params: dict) -> bool:
    """The executed copy ran this source's code cells with these parameters, without error."""
    if not target.is_file():
        return False
    done, src = json.loads(target.read_text()), json.loads(source.read_text())

    def code(nb):
        return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
                and "injected-parameters" not in c["metadata"].get("tags", [])]
    failed = any(o["output_type"] == "error" for c in done["cells"] for o in c.get("outputs", []))
    return (not failed and code(done) == code(src)
            and done["metadata"].get("papermill", {}).get("parameters", {}) == params)


def execute(profile: Path = DEFAULT_PROFILE, only: list[str] | None = None, out_dir: Path = CHAPTERS,
            kernel: str = "python3", skip_unchanged: bool = False, claims_dir: Path | None = None) -> list[Path]:
    """Execute the chapters into out_dir; raises BookError naming every chapter that failed.

    skip_unchanged: leave a chapter whose executed copy ran the same source and parameters (it does
    not notice changed runs or core code, so the default re-executes everything).
    claims_dir: where the chapters record claims (default: `claims/` of the runs folder the kernels use)."""
    from .claims import CLAIMS_ENV, claims_dir as default_claims_dir
    folder = Path(claims_dir) if claims_dir is not None else default_claims_dir()
    before = os.environ.get(CLAIMS_ENV)
    os.environ[CLAIMS_ENV] = str(folder.resolve())  # papermill's kernels inherit it
    try:
        return _execute(profile, only, out_dir, kernel, skip_unchanged)
    finally:
        if before is None:
            os.environ.pop(CLAIMS_ENV, None)
        else:
            os.environ[CLAIMS_ENV] = before


def _execute(profile: Path, only: list[str] | None, out_dir: Path, kernel: str, skip_unchanged: bool) -> list[Path]:
    import papermill as pm
    params = load_profile(profile)
    notebooks = source_notebooks(only)
    unknown = set(params) - {p.stem for p in source_notebooks()}
    if unknown:
        print(f"note: the profile names chapters not present (yet): {', '.join(sorted(unknown))}")
    out_dir.mkdir(parents=True, exist_ok=True)
    failed, written, kept = [], [], []
    start = time.perf_counter()
    width = max((len(p.stem) for p in notebooks), default=0)
    for source in notebooks:
        target = out_dir / source.name
        if skip_unchanged and is_current(source, target, params.get(source.stem, {})):
            kept.append(target)
            print(f"executed {source.stem:<{width}}      - s  unchanged, kept", flush=True)
            continue
        tic = time.perf_counter()
        error = None
        before = target.read_bytes() if target.is_file() else None
        with kernel_output() as noise:
            try:
                pm.execute_notebook(str(source), str(target), parameters=params.get(source.stem, {}),
                                    kernel_name=kernel, cwd=str(out_dir), progress_bar=False)
            except pm.PapermillExecutionError as err:
                error = err
        seconds = time.perf_counter() - tic
        if error is None:
            finish_notebook(target)
            from .claims import insert_result_box
            insert_result_box(target)  # from the claims this execution recorded
            if before is not None and same_within_rounding(before, target.read_bytes()):
                target.write_bytes(before)  # another CPU's last digits: the committed chapter stays as it is
            written.append(target)
            if out_dir.resolve() == CHAPTERS.resolve():
                record_time(source.stem, seconds, changed=target.read_bytes() != before)
            print(f"executed {source.stem:<{width}} {seconds:6.0f} s  ok", flush=True)
        else:
            failed.append(f"{source.stem} (cell {error.exec_count}: {error.ename}: {error.evalue})")
            print(f"executed {source.stem:<{width}} {seconds:6.0f} s  FAILED: {error.ename}: {error.evalue}",
                  flush=True)
        for line in real_messages(noise.read()):
            print(f"    {line}", file=sys.stderr, flush=True)
    print(f"executed {len(written)} chapter(s) in {time.perf_counter() - start:.0f} s"
          + (f", {len(kept)} unchanged" if kept else "") + (f", {len(failed)} FAILED" if failed else ""), flush=True)
    if failed:
        raise BookError("chapter(s) failed to execute: " + "; ".join(failed))
    return written


# What the kernels and the build print that says nothing about the book: dropped from the output; every
# other line is shown (a real warning or error is never hidden).
HARMLESS = tuple(re.compile(p) for p in (
    r"Kernel is running over TCP without encryption",  # ipykernel 7, local kernel on 127.0.0.1
    r"KeyboardInterrupt caught in kernel",  # ipykernel logs it when the kernel is shut down after the run
))
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def real_messages(text: str) -> list[str]:
    """The lines of `text` without colour codes, blank lines and the HARMLESS messages."""
    lines = (_ANSI.sub("", line).rstrip() for line in text.splitlines())
    return [line for line in lines if line.strip() and not any(p.search(line) for p in HARMLESS)]


class kernel_output:
    """Catches what the kernels papermill starts write to their standard output and error (they inherit
    this process's file descriptors 1 and 2) while a chapter executes; `read()` returns it afterwards."""

    def __enter__(self):
        import tempfile
        sys.stdout.flush()
        sys.stderr.flush()
        self._file = tempfile.TemporaryFile()
        self._saved = [os.dup(1), os.dup(2)]
        os.dup2(self._file.fileno(), 1)
        os.dup2(self._file.fileno(), 2)
        return self

    def __exit__(self, exc_type, *exc):
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, saved in zip((1, 2), self._saved):
            os.dup2(saved, fd)
            os.close(saved)
        if exc_type is not None:  # the caller will not read it: show it now, beside the exception
            for line in real_messages(self.read()):
                print(f"    {line}", file=sys.stderr, flush=True)
        return False

    def read(self) -> str:
        self._file.seek(0)
        text = self._file.read().decode("utf-8", "replace")
        self._file.close()
        return text


# ------------------------------------------------------------------------------ build
NUMBERED_LATER = ("14_generality",)  # chapters added after the appendices were numbered: chapter 11 on


def write_toc(path: Path = TOC) -> str:
    """The table of contents from the executed chapters present: intro, the protocol and the glossary, chapters in
    order, the explorer, the claims and appendices, reproduce, bibliography."""
    chapters = sorted(p.stem for p in CHAPTERS.glob("*.ipynb") if _SLUG.match(p.stem))
    # numbered as the text cites them ("chapter 10"): the chapters 01-10 and the later chapters that are not
    # appendices (NUMBERED_LATER, numbered on from 11), then the claims before the appendices
    main = [s for s in chapters if int(s[:2]) <= 10 or s in NUMBERED_LATER]
    claims = [s for s in chapters if s.endswith("_claims")]
    appendices = [s for s in chapters if s not in main and s not in claims]
    lines = ["# Generated by `python -m assignadd_core.report.book build` from the chapters in book/chapters/.",
             "format: jb-book", "root: book/intro", "parts:", "- caption: The setting", "  chapters:",
             "  - file: book/protocol"]
    if GLOSSARY_PAGE.is_file():
        lines.append("  - file: book/glossary")
    if main:
        lines += ["- caption: Chapters", "  numbered: true", "  chapters:"]
        lines += [f"  - file: book/chapters/{slug}" for slug in main]
    if EXPLORER_PAGE.is_file():
        lines += ["- caption: Try the model", "  chapters:", "  - file: book/explorer"]
    lines += ["- caption: Results and appendices", "  chapters:"]
    lines += [f"  - file: book/chapters/{slug}" for slug in claims + appendices]
    lines += ["  - file: book/reproduce", "  - file: book/bibliography", ""]
    text = "\n".join(lines)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return text


def timings_table(runs_root: Path | None = None) -> str:
    """Markdown table of the wall time of every finished run under runs/ (read from its final.json)."""
    from ..core.run_folder import Run  # its final() reads a final.json under the current key names

    root = Path(runs_root or ROOT / "runs")
    rows = ["| run | steps | device | threads | wall time | source |", "|---|---|---|---|---|---|"]
    for final in sorted(root.glob("*/final.json")):
        f = Run(final.parent).final()
        minutes = f["wall_time_s"] / 60
        rows.append(f"| `{final.parent.name}` | {f['last_step']:,} | {device_label(f)} |"
                    f" {f.get('threads', '?')} | {minutes:.1f} min | `runs/{final.parent.name}/final.json` |")
    rows += sweep_timing_rows(root / "sweeps")
    if len(rows) == 2:
        rows.append("| (no finished run yet) | | | | | |")
    return "\n".join(rows)


def device_label(record: dict) -> str:
    """'cpu (AMD EPYC)' from a run's final.json or a sweep line; the device alone without a distinct name."""
    name = record.get("device_name")
    return record["device"] + (f" ({name})" if name and name != record["device"] else "")


def steps_text(done: list[dict]) -> str:
    """The steps a sweep's runs trained: '30,000 each', or for runs stopped once decided '12,000 each
    (101 stopped early, at 2,501-9,301)'."""
    budgets = sorted({r.get("step_budget") or r["last_step"] for r in done})
    text = f"{', '.join(f'{s:,}' for s in budgets)} each"
    early = [r["last_step"] for r in done if r.get("stopped_early")]
    return text + (f" ({len(early)} stopped early, at {min(early):,}–{max(early):,})" if early else "")


def sweep_timing_rows(sweeps_root: Path) -> list[str]:
    """One row per sweep results file: its finished runs' wall time in all and per run."""
    import statistics

    from ..analysis.sweep_records import is_finished
    from ..experiments.sweep import latest_records

    rows = []
    for path in sorted(sweeps_root.glob("*.jsonl")):
        done = [r for r in latest_records(path).values() if is_finished(r)]
        if not done:
            continue
        minutes = [r["wall_time_s"] / 60 for r in done]
        seeds = sorted({r["seed"] for r in done})
        names = sorted({device_label(r) for r in done})
        threads = sorted({str(r.get("threads", "?")) for r in done})
        rows.append(f"| `{path.stem}`: {len(done)} runs, seeds {', '.join(map(str, seeds))} |"
                    f" {steps_text(done)} | {', '.join(names)} | {', '.join(threads)} |"
                    f" {sum(minutes) / 60:.1f} h in all, {statistics.median(minutes):.1f} min per run (median) |"
                    f" `runs/sweeps/{path.name}` |")
    return rows


CHAPTER_TIMES = ROOT / "book" / "chapter_times.json"
CHAPTER_TIMES_START, CHAPTER_TIMES_END = "<!-- chapter-times:start -->", "<!-- chapter-times:end -->"


def record_time(slug: str, seconds: float, changed: bool, path: Path = CHAPTER_TIMES) -> None:
    """Keep how long the book's execution of a chapter took, from the execution that last changed it (a re-execution
    of unchanged inputs writes nothing, so the tree stays clean)."""
    times = json.loads(path.read_text()) if path.is_file() else {}
    if changed or slug not in times:
        times[slug] = round(seconds)
        path.write_text(json.dumps(dict(sorted(times.items())), indent=1) + "\n")


def chapter_times_table(path: Path = CHAPTER_TIMES) -> str:
    times = json.loads(path.read_text()) if path.is_file() else {}
    present = {p.stem for p in CHAPTERS.glob("*.ipynb")}
    rows = ["| chapter | execution time |", "|---|---|"]
    rows += [f"| `{slug}` | {seconds} s |" for slug, seconds in times.items() if slug in present]
    rows.append(f"| all | {sum(s for k, s in times.items() if k in present)} s |")
    return "\n".join(rows)


def update_reproduce(path: Path = REPRODUCE) -> None:
    text = path.read_text()
    if TIMINGS_START not in text or TIMINGS_END not in text:
        raise BookError(f"{path}: lacks the {TIMINGS_START} … {TIMINGS_END} markers of the timing table")
    head, rest = text.split(TIMINGS_START, 1)
    _, tail = rest.split(TIMINGS_END, 1)
    new = f"{head}{TIMINGS_START}\n{timings_table()}\n{TIMINGS_END}{tail}"
    if CHAPTER_TIMES_START in new:
        head, rest = new.split(CHAPTER_TIMES_START, 1)
        _, tail = rest.split(CHAPTER_TIMES_END, 1)
        new = f"{head}{CHAPTER_TIMES_START}\n{chapter_times_table()}\n{CHAPTER_TIMES_END}{tail}"
    if new != text:
        path.write_text(new)


def update_front_page() -> None:
    """The circuit diagram, the tally, the scoreboard and the hero figure of the intro page, and the README's "what
    reproduced" table, from the committed claim records and the main run's metrics (`front_page`, `diagram`), and the
    README's list of what `runs/` holds (`runs_table`)."""
    from .diagram import circuit_html
    from .front_page import (CIRCUIT, HERO, README_TABLE, SCOREBOARD, TALLY, hero_html, readme_table, scoreboard, tally,
                             update)
    parts = {CIRCUIT: circuit_html(), TALLY: tally(), SCOREBOARD: scoreboard()}
    from ..rules.study import current
    main_run = ROOT / "runs" / current()["runs"]["main"]["name"] / "metrics.csv"
    if main_run.is_file():
        parts[HERO] = hero_html(main_run)
    else:  # a tree without the committed runs (a copy of the sources): the hero figure stays as it is
        print(f"{main_run.relative_to(ROOT)} is not here: the intro's hero figure is left as it was")
    update(INTRO, parts)
    readme = {README_TABLE: readme_table()}
    if (ROOT / "runs").is_dir():  # what runs/ holds (runs_table); a copy of the sources keeps the list as it was
        from .runs_table import MARKERS, committed_runs
        readme[MARKERS] = committed_runs(ROOT / "runs")
    update(README, readme)


def copy_plotly_js() -> Path:
    import plotly
    source = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    STATIC.mkdir(parents=True, exist_ok=True)
    target = STATIC / "plotly.min.js"
    if not target.is_file() or target.stat().st_size != source.stat().st_size:
        shutil.copyfile(source, target)
    return target


MATHJAX_ENTRY = "tex-mml-chtml.js"  # _config.yml: mathjax_path: mathjax/tex-mml-chtml.js


def copy_mathjax() -> Path:
    """MathJax 3 (es5 build) from the django-static-mathjax package into book/_static/mathjax/: the entry
    script the pages load, and the fonts, TeX extensions and accessibility parts it loads on demand
    (the other combined bundles of the package are left out). Copied again when the version changes."""
    import importlib.metadata

    import mathjax
    source = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    version = importlib.metadata.version("django-static-mathjax")
    target = STATIC / "mathjax"
    stamp = target / ".version"
    if (target / MATHJAX_ENTRY).is_file() and stamp.is_file() and stamp.read_text() == version:
        return target / MATHJAX_ENTRY
    if not (source / MATHJAX_ENTRY).is_file():
        raise BookError(f"MathJax not found at {source}: install the pinned django-static-mathjax (make venv)")
    shutil.rmtree(target, ignore_errors=True)
    bundles = {p.name for p in source.glob("*.js")} - {MATHJAX_ENTRY}
    shutil.copytree(source, target, ignore=lambda folder, names: bundles & set(names) if Path(folder) == source else [])
    stamp.write_text(version)
    return target / MATHJAX_ENTRY


def figure_count(notebook: Path) -> int:
    """Plotly figures in a notebook's outputs (each one is an HTML output with a plotly-graph-div)."""
    nb = json.loads(notebook.read_text())
    count = 0
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            html = out.get("data", {}).get("text/html", "")
            count += ("".join(html) if isinstance(html, list) else html).count(FIGURE_MARK)
    return count


def check_html(html: Path = HTML) -> dict[str, int]:
    """Every chapter page exists and holds as many figure divs as its notebook has figures."""
    problems, counts = [], {}
    if not (html / "index.html").is_file():
        problems.append("index.html missing")
    for notebook in sorted(CHAPTERS.glob("*.ipynb")):
        page = html / "book" / "chapters" / f"{notebook.stem}.html"
        if not page.is_file():
            problems.append(f"{page.relative_to(html)} missing")
            continue
        expected, found = figure_count(notebook), page.read_text().count(FIGURE_MARK)
        counts[notebook.stem] = found
        if found != expected:
            problems.append(f"{notebook.stem}: {found} figure(s) in the HTML, {expected} in the notebook")
    if problems:
        raise BookError("book HTML incomplete: " + "; ".join(problems))
    return counts


_PROGRESS = re.compile(r"^(reading sources|writing output)\.\.\. \[\s*\d+%\] (\S+)\s*$")


JUPYTER_BOOK = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()",
                "build", ".", "-W", "-n", "--keep-going"]


def run_jupyter_book(cmd: list[str] = JUPYTER_BOOK) -> dict[str, float]:
    """`jupyter-book build . -W -n --keep-going` without its banner, configuration dumps and colours:
    Sphinx's warnings and errors (its standard error) are shown as they come; its status output is kept
    and shown only when the build fails. Returns the seconds Sphinx spent reading and writing each page
    (from the times of its progress lines)."""
    import threading
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", env={**os.environ, "NO_COLOR": "1"})
    warnings = []

    def show_warnings():
        for line in proc.stderr:
            for message in real_messages(line):
                warnings.append(message)
                print(message, file=sys.stderr, flush=True)
    reader = threading.Thread(target=show_warnings, daemon=True)
    reader.start()
    status, seconds, current = [], {}, None
    for line in proc.stdout:
        now = time.perf_counter()
        status.append(_ANSI.sub("", line.rstrip()))
        if current is not None:
            seconds[current[0]] = seconds.get(current[0], 0.0) + now - current[1]
            current = None
        match = _PROGRESS.match(status[-1])
        if match:
            current = (match.group(2), now)
    proc.wait()
    reader.join()
    if proc.returncode != 0:
        tail = [line for line in status if line.strip()][-40:]
        print("\n".join(["jupyter-book's output (last lines):", *tail]), file=sys.stderr, flush=True)
        raise BookError(f"jupyter-book build failed (exit {proc.returncode}); see the warnings above")
    return seconds


def refresh_static(static: Path = STATIC, built: Path | None = None) -> list[str]:
    """Copy into the last build the book/_static/ files (a script, a style) that are new or have changed since: Sphinx
    does not overwrite a static file whose copy differs (it warns and keeps the old one), and copies no static file
    at all when no page changed, so an edited script would never reach the book. Returns the names copied."""
    built = HTML / "_static" if built is None else built
    if not built.is_dir():  # the first build: Sphinx copies them all
        return []
    stale = [path.name for path in sorted(static.glob("*.*"))
             if not (built / path.name).is_file() or (built / path.name).read_bytes() != path.read_bytes()]
    for name in stale:
        shutil.copyfile(static / name, built / name)
    return stale


def build() -> dict[str, int]:
    write_toc()
    update_reproduce()
    update_front_page()
    copy_plotly_js()
    copy_mathjax()
    tic = time.perf_counter()
    refresh_static()
    seconds = run_jupyter_book()
    from .explorer import export
    export(HTML / "_static" / "explorer")  # the explorer page's models, from the runs folder (never committed)
    try:
        counts = check_html()
    finally:
        expected = {nb.stem: figure_count(nb) for nb in sorted(CHAPTERS.glob("*.ipynb"))}
        width = max((len(slug) for slug in expected), default=0)
        for slug, figures in expected.items():
            page = HTML / "book" / "chapters" / f"{slug}.html"
            found = page.read_text().count(FIGURE_MARK) if page.is_file() else None
            verdict = "ok" if found == figures else f"FAILED ({found} of {figures} figures in the HTML)"
            took = seconds.get(f"book/chapters/{slug}")
            print(f"rendered {slug:<{width}} " + (f"{took:6.1f} s" if took is not None else "     - s")
                  + f"  {verdict}" + (f" ({figures} figures)" if found == figures else "")
                  + ("" if took is not None else ", unchanged since the last build"), flush=True)
    print(f"built {HTML / 'index.html'} in {time.perf_counter() - tic:.0f} s;"
          f" figures per chapter: {', '.join(f'{k} {v}' for k, v in counts.items())}")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assignadd_core.report.book", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("execute", "build", "all"))
    parser.add_argument("--profile", type=Path, default=DEFAULT_PROFILE, help="parameter profile (YAML)")
    parser.add_argument("--only", action="append", metavar="SLUG", help="execute only this chapter (repeatable)")
    parser.add_argument("--skip-unchanged", action="store_true",
                        help="keep chapters whose source and parameters are unchanged since their execution")
    args = parser.parse_args(argv)
    try:
        if args.action in ("execute", "all"):
            execute(args.profile, args.only, skip_unchanged=args.skip_unchanged)
        if args.action in ("build", "all"):
            build()
    except BookError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The book: chapter conventions, the papermill pipeline on the CI profile, the HTML build, and the
rendered figures in a real (headless Chromium) browser.

`make test` builds the HTML from the committed chapters first; the HTML tests build it themselves
when it is missing or older than the chapters. nbval on the chapters runs in the same pytest call
(`--nbval-lax book/chapters`, settings in book/chapters/conftest.py).
"""
from __future__ import annotations

import ast
import functools
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest

from assignadd_core import book

ROOT = book.ROOT
ARTIFACTS = ROOT / "artifacts"


def code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def executed_chapters() -> list[Path]:
    return sorted(book.CHAPTERS.glob("*.ipynb"))


# ------------------------------------------------------------------ conventions and generated files
@pytest.mark.parametrize("notebook", book.source_notebooks(), ids=lambda p: p.stem)
def test_chapter_starts_with_parameters_then_start_chapter(notebook):
    cells = code_cells(notebook)
    assert "parameters" in cells[0]["metadata"].get("tags", []), "cell 1 must be tagged `parameters`"
    for node in ast.parse(source(cells[0])).body:
        assert isinstance(node, ast.Assign), f"parameters cell: only assignments, found {ast.dump(node)[:60]}"
        ast.literal_eval(node.value)  # raises on anything but a literal
    assert "start_chapter(globals())" in source(cells[1]), "cell 2 must call start_chapter(globals())"


@pytest.mark.parametrize("notebook", book.source_notebooks(), ids=lambda p: p.stem)
def test_executed_chapter_matches_its_source(notebook):
    """The committed execution is of the current source: same code cells, no error, parameter cells hidden."""
    executed = book.CHAPTERS / notebook.name
    assert executed.is_file(), f"{notebook.stem} has no executed copy; run `make book`"
    cells = code_cells(executed)
    injected = [c for c in cells if "injected-parameters" in c["metadata"].get("tags", [])]
    assert all("remove-cell" in c["metadata"]["tags"] for c in cells[:1] + injected)
    run = [source(c) for c in cells if c not in injected]
    assert run == [source(c) for c in code_cells(notebook)], f"{notebook.stem} changed since it was executed"
    errors = [o for c in cells for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert not errors, f"{notebook.stem}: {errors[0]['ename']}: {errors[0]['evalue']}"
    assert str(ROOT) not in executed.read_text(), f"{executed.name} names a path of the building machine"


def test_generated_toc_and_timings_are_current(tmp_path):
    assert book.write_toc(tmp_path / "toc.yml") == book.TOC.read_text(), "_toc.yml is stale: run the build"
    copy = tmp_path / "reproduce.md"
    shutil.copyfile(book.REPRODUCE, copy)
    book.update_reproduce(copy)
    assert copy.read_text() == book.REPRODUCE.read_text(), "book/reproduce.md timings are stale: run the build"


def test_timing_table_sums_each_sweeps_finished_runs(tmp_path):
    record = {"status": "done", "seed": 42, "steps": 30_000, "device": "cpu", "device_name": "cpu", "threads": 1}
    lines = [{**record, "key": "a", "wall_time_s": 600.0}, {**record, "key": "b", "seed": 43, "wall_time_s": 1200.0},
             {**record, "key": "c", "status": "failed", "wall_time_s": 0.0}]
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "sweeps" / "x_sweep.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    table = book.timings_table(tmp_path)
    assert "| `x_sweep`: 2 runs, seeds 42, 43 | 30,000 each | cpu | 1 | 0.5 h in all, 15.0 min per run (median) |" in table


@pytest.mark.parametrize("profile", sorted((ROOT / "params").glob("*.yaml")), ids=lambda p: p.name)
def test_profiles_only_set_parameters_the_chapters_have(profile):
    notebooks = {p.stem: p for p in book.source_notebooks()}
    for slug, params in book.load_profile(profile).items():
        if slug not in notebooks:
            continue  # a chapter being written elsewhere; the driver says so
        names = {t.id for node in ast.parse(source(code_cells(notebooks[slug])[0])).body for t in node.targets}
        assert set(params) <= names, f"{profile.name}: {slug} has no parameter(s) {set(params) - names}"


# ------------------------------------------------------------------ the pipeline on the CI profile
@pytest.fixture(scope="module")
def ci_book(tmp_path_factory, monkeypatch_module):
    """Chapters 02 and 11 executed with params/ci.yaml (tiny runs) into a scratch folder and runs root."""
    runs = tmp_path_factory.mktemp("runs")
    out = tmp_path_factory.mktemp("chapters")
    monkeypatch_module.setenv("ASSIGNADD_RUNS", str(runs))
    book.execute(ROOT / "params" / "ci.yaml", only=["02_training_phases", "11_claims"], out_dir=out)
    return runs, out


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_ci_profile_trains_plots_and_records_claims(ci_book):
    runs, out = ci_book
    assert (runs / "ci_tiny_1" / "final.json").is_file() and (runs / "ci_tiny_2" / "final.json").is_file()
    assert book.figure_count(out / "02_training_phases.ipynb") == 4
    lines = (runs / "claims.csv").read_text().splitlines()
    assert lines[0] == "claim,paper,ours,verdict" and len(lines) == 12
    verdicts = {line.split(",")[0]: line.rsplit(",", 1)[1] for line in lines[1:]}
    assert set(verdicts) == {f"C{i}" for i in range(1, 11)} | {"R1"}  # R1: the book's own finding
    assert all(verdicts[c] != "not yet run" for c in ("C1", "C2", "C3"))  # the tiny runs were judged
    text = (out / "02_training_phases.ipynb").read_text()
    assert "Parameters of this execution: runs=['ci_tiny_1', 'ci_tiny_2']" in text


def test_misspelled_parameter_stops_the_chapter(tmp_path):
    profile = tmp_path / "typo.yaml"
    profile.write_text("11_claims:\n  write_cvs: false\n")
    with pytest.raises(book.BookError, match="unknown chapter parameter 'write_cvs'"):
        book.execute(profile, only=["11_claims"], out_dir=tmp_path)


# ------------------------------------------------------------------ the HTML and the browser
@pytest.fixture(scope="module")
def html():
    index = book.HTML / "index.html"
    newest = max(p.stat().st_mtime for p in [*executed_chapters(), book.REPRODUCE, ROOT / "book" / "intro.md"])
    if not index.is_file() or index.stat().st_mtime < newest:
        book.build()
    return book.HTML


def test_book_html_has_every_chapter_and_its_figures(html):
    counts = book.check_html(html)
    assert sum(counts.values()) > 0, "no figure in the book at all"
    for page in ("book/intro.html", "book/reproduce.html"):
        assert (html / page).is_file()
    assert (html / "_static" / "plotly.min.js").is_file()


@pytest.fixture(scope="module")
def chromium():
    """Debian's chromium; installed with apt-get when missing and we are root (as in CI)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found and hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=True, env=env)
        found = shutil.which("chromium")
    if not found:
        pytest.skip("chromium is not installed and cannot be installed here (not root)")
    return found


@pytest.fixture(scope="module")
def server(html):
    handler = functools.partial(_QuietHandler, directory=str(html))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def run_chromium(chromium: str, *args: str) -> str:
    with tempfile.TemporaryDirectory() as profile:
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--virtual-time-budget=15000", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=True).stdout


class FigureScan(HTMLParser):
    """Counts plotly figure divs, and those that contain a rendered plot (an <svg class="main-svg">)."""

    def __init__(self):
        super().__init__()
        self.stack, self.figures, self.rendered = [], 0, 0

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if tag in ("br", "img", "meta", "link", "input", "hr"):
            return
        if "plotly-graph-div" in classes:
            self.figures += 1
            self.stack.append([tag, True, False])  # tag, is figure, has svg
        else:
            self.stack.append([tag, False, False])
        if tag == "svg" and "main-svg" in classes:
            for entry in self.stack:
                if entry[1] and not entry[2]:
                    entry[2] = True
                    self.rendered += 1

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break


@pytest.mark.parametrize("notebook", executed_chapters(), ids=lambda p: p.stem)
def test_chapter_figures_render_in_chromium(notebook, chromium, server):
    dom = run_chromium(chromium, "--dump-dom", f"{server}/book/chapters/{notebook.stem}.html")
    scan = FigureScan()
    scan.feed(dom)
    expected = book.figure_count(notebook)
    assert scan.figures == expected, f"{scan.figures} figure divs in the page, {expected} in the notebook"
    assert scan.rendered == expected, f"only {scan.rendered} of {expected} figures rendered an SVG"


def test_screenshot_of_the_phases_chapter(chromium, server):
    if not (book.CHAPTERS / "02_training_phases.ipynb").is_file():
        pytest.skip("the training-phases chapter is not built")
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "02_training_phases.png"
    shot.unlink(missing_ok=True)
    run_chromium(chromium, "--window-size=1280,4000", "--hide-scrollbars", f"--screenshot={shot}",
                 f"{server}/book/chapters/02_training_phases.html")
    assert shot.is_file() and shot.stat().st_size > 20_000

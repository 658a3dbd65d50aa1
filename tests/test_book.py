"""The book: chapter conventions, the papermill pipeline on the CI profile (quiet, and byte-identical when
re-executed), the HTML build, and the pages in a real (headless Chromium) browser: figures rendered, no
request leaving the machine, no console error, and no output wider than the text column.

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
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest

from assignadd_core.report import book

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
def ci_book(tmp_path_factory):
    """Every chapter executed with params/ci.yaml (tiny runs) into a scratch folder and an empty runs root, as a
    fork of the project without the committed runs would: (runs root, chapters folder, the BookError naming the
    chapters that failed, or None). The runs root is set only while the chapters execute, and after the runs folder
    module has read the book's own: otherwise a later build in this process (the `html` fixture) would write the
    tiny runs' claims into the README and the intro page."""
    from assignadd_core.core import run_folder  # noqa: F401  (its DEFAULT_ROOT is read at import: the book's runs)
    runs = tmp_path_factory.mktemp("runs")
    out = tmp_path_factory.mktemp("chapters")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ASSIGNADD_RUNS", str(runs))
        try:
            book.execute(ROOT / "params" / "ci.yaml", out_dir=out)
        except book.BookError as err:
            return runs, out, err
    return runs, out, None


def test_every_chapter_executes_under_the_ci_profile_without_the_committed_runs(ci_book):
    """Absent or degenerate inputs (no composed run, a sweep not run, a tiny vocabulary) are said in a line, never
    a traceback: a new chapter needs its tiny version in params/ci.yaml and must pass here."""
    _, out, failed = ci_book
    assert failed is None, str(failed)
    assert sorted(p.name for p in out.glob("*.ipynb")) == [p.name for p in book.source_notebooks()]


def test_ci_profile_trains_plots_and_records_claims(ci_book):
    runs, out, _ = ci_book
    assert (runs / "ci_tiny_1" / "final.json").is_file() and (runs / "ci_tiny_2" / "final.json").is_file()
    assert book.figure_count(out / "02_training_phases.ipynb") == 4
    import csv
    rows = list(csv.DictReader((runs / "claims.csv").open()))
    assert list(rows[0]) == ["claim", "paper", "ours", "verdict", "authors_weights", "first_rule"] and len(rows) == 13
    verdicts = {row["claim"]: row["verdict"] for row in rows}
    assert set(verdicts) == {f"C{i}" for i in range(1, 11)} | {"R1", "R2", "R3"}  # R1-R3: the book's own findings
    assert all(verdicts[c] != "not yet run" for c in ("C1", "C2", "C3"))  # the tiny runs were judged
    text = (out / "02_training_phases.ipynb").read_text()
    assert "Parameters of this execution: runs=['ci_tiny_1', 'ci_tiny_2']" in text


def test_every_name_a_chapter_pastes_is_glued_under_the_ci_profile(ci_book):
    """A fork's tiny runs leave a sentence degenerate ("none of the 2 seeds"), never a name unglued: every phrase the
    Markdown pastes is glued on every path through the chapter (a missing one fails the book's strict build)."""
    from test_chapter_prose import glued_names, pasted_names
    _, out, _ = ci_book
    for notebook in book.source_notebooks():
        missing = pasted_names(notebook) - glued_names(out / notebook.name)
        assert not missing, f"{notebook.stem} under the CI profile leaves unglued: {sorted(missing)}"


def test_misspelled_parameter_stops_the_chapter(tmp_path):
    profile = tmp_path / "typo.yaml"
    profile.write_text("13_claims:\n  write_cvs: false\n")
    with pytest.raises(book.BookError, match="unknown chapter parameter 'write_cvs'"):
        book.execute(profile, only=["13_claims"], out_dir=tmp_path)


def test_figure_outputs_carry_html_for_the_book_and_plotly_json_for_jupyter():
    """One output per figure: the book's HTML (no plotly.js, no MathJax, nothing from a CDN, at most the
    figure's own width) and the plotly mime bundle JupyterLab and VS Code draw; ids are stable."""
    import plotly.graph_objects as go
    import plotly.io as pio

    from assignadd_core.report import plots
    plots.setup_plotly()
    figure = go.Figure(go.Scatter(x=[1, 2], y=[3, 4])).update_layout(width=1500, height=400).to_dict()
    first, second = (pio.renderers._build_mime_bundle(figure) for _ in range(2))
    assert set(first) == {"text/html", plots.PLOTLY_MIME}
    html = first["text/html"]
    assert html.count(book.FIGURE_MARK) == 1 and "Plotly.newPlot" in html
    for absent in ("mathjax", "MathJax", "cdn", "https://", "<script src"):
        assert absent not in html, f"the figure's HTML contains {absent!r}"
    assert 'style="max-width:1500px"' in html and '"width":1500' not in html  # the column decides, up to 1500
    assert first[plots.PLOTLY_MIME]["layout"]["width"] == 1500  # Jupyter gets the figure as drawn
    assert first[plots.PLOTLY_MIME]["data"][0]["type"] == "scatter"
    ids = [re.search(r'id="(figure-[^"]+)"', b["text/html"]).group(1) for b in (first, second)]
    assert ids[0] != ids[1] and ids[0].split("-", 2)[2] == ids[1].split("-", 2)[2]  # numbered, same content hash
    plots.setup_plotly()  # a new chapter (kernel) numbers from 1 again
    assert re.search(r'id="figure-1-', pio.renderers._build_mime_bundle(figure)["text/html"])


def test_finish_notebook_drops_what_changes_between_executions(tmp_path):
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.metadata["papermill"] = {"start_time": "t0", "end_time": "t1", "duration": 1.5, "parameters": {"a": 1},
                                "input_path": str(ROOT / "notebooks" / "x.ipynb"), "version": "2.7.0"}
    cell = nbformat.v4.new_code_cell("a = 2", metadata={"tags": ["injected-parameters"],
                                                         "execution": {"iopub.status.busy": "t"},
                                                         "papermill": {"start_time": "t", "end_time": "t",
                                                                       "duration": 0.1, "status": "completed",
                                                                       "exception": False}})
    shown = nbformat.v4.new_code_cell("print(a)")
    stream = nbformat.v4.new_output
    shown.outputs = [stream("stream", name="stdout", text="f_sweep:"), stream("stream", name="stdout", text="\n1\n"),
                     stream("display_data", data={"text/plain": "x"}), stream("stream", name="stdout", text="2\n"),
                     stream("stream", name="stderr", text="w\n")]
    nb.cells = [nbformat.v4.new_code_cell("a = 1", metadata={"tags": ["parameters"]}), cell, shown]
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, path)
    book.finish_notebook(path)
    done = json.loads(path.read_text())
    assert done["metadata"]["papermill"] == {"parameters": {"a": 1}, "input_path": "notebooks/x.ipynb",
                                             "version": "2.7.0"}
    injected = done["cells"][1]
    assert injected["id"] == "injected-parameters" and "execution" not in injected["metadata"]
    assert injected["metadata"]["papermill"] == {"status": "completed", "exception": False}
    assert all("remove-cell" in c["metadata"]["tags"] for c in done["cells"][:2])
    outputs = done["cells"][2]["outputs"]  # consecutive writes to one stream as one output, order kept
    assert [(o["output_type"], o.get("name"), o.get("text") and "".join(o["text"])) for o in outputs] == [
        ("stream", "stdout", "f_sweep:\n1\n"), ("display_data", None, None), ("stream", "stdout", "2\n"),
        ("stream", "stderr", "w\n")]


def test_re_executing_a_chapter_rewrites_the_same_bytes_and_prints_one_line_per_chapter(
        tmp_path, monkeypatch, capfd):
    """Executions on the same inputs give byte-identical notebooks (no timestamps, durations, random ids),
    so re-executing unchanged chapters leaves `git status` clean. The first execution of 04 trains its tiny
    run (a progress bar in the output); the next two only read it. The driver prints one line per chapter and
    a summary, and none of the kernels' harmless noise (the TCP warning of every kernel)."""
    monkeypatch.setenv("ASSIGNADD_RUNS", str(tmp_path / "runs"))
    chapters = ["01_task_and_model", "05_generalization"]
    outs = [tmp_path / name for name in ("first", "second", "third")]
    for out in outs:
        book.execute(ROOT / "params" / "ci.yaml", only=chapters, out_dir=out, claims_dir=tmp_path / "claims")
    printed = capfd.readouterr()
    for slug in chapters:
        assert (outs[1] / f"{slug}.ipynb").read_bytes() == (outs[2] / f"{slug}.ipynb").read_bytes(), slug
    assert (outs[0] / "01_task_and_model.ipynb").read_bytes() == (outs[1] / "01_task_and_model.ipynb").read_bytes()
    expected = [rf"executed {slug} +\d+ s  ok" for slug in chapters] + [r"executed 2 chapter\(s\) in \d+ s"]
    lines = printed.out.splitlines()
    assert len(lines) == 3 * len(expected), printed.out
    assert all(re.fullmatch(pattern, line) for pattern, line in zip(expected * 3, lines)), printed.out
    assert "without encryption" not in printed.err and "IPKernelApp" not in printed.err, printed.err
    figures = [o for c in json.loads((outs[2] / "05_generalization.ipynb").read_text())["cells"]
               for o in c.get("outputs", []) if book.FIGURE_MARK in "".join(o.get("data", {}).get("text/html", ""))]
    assert figures and all("application/vnd.plotly.v1+json" in o["data"] for o in figures)


def test_messages_keep_real_warnings_and_drop_known_noise():
    text = ("\x1b[91mWARNING: a real one\x1b[39;49;00m\n\n"
            "[IPKernelApp] WARNING | Kernel is running over TCP without encryption. All communication ...\n"
            "[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel\n"
            "Traceback (most recent call last):\n")
    assert book.real_messages(text) == ["WARNING: a real one", "Traceback (most recent call last):"]


FAKE_SPHINX = """
import sys, time
print("\x1b[01mRunning Sphinx v7.4.7\x1b[39;49;00m")
print("myst v3.0.1: MdParserConfig(commonmark_only=False, ...)")
print("reading sources... [ 50%] book/chapters/01_x")
time.sleep(0.2)
print("reading sources... [100%] book/intro")
print("writing output... [100%] book/chapters/01_x")
print("build finished", flush=True)
print("\x1b[91m/x.md:3: WARNING: undefined label\x1b[39;49;00m", file=sys.stderr)
print("[IPKernelApp] WARNING | Kernel is running over TCP without encryption.", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize("exit_code", [0, 1])
def test_the_build_shows_warnings_and_hides_sphinx_chatter(exit_code, capfd):
    cmd = [sys.executable, "-c", FAKE_SPHINX, str(exit_code)]
    if exit_code:
        with pytest.raises(book.BookError, match="jupyter-book build failed"):
            book.run_jupyter_book(cmd)
    else:
        seconds = book.run_jupyter_book(cmd)
        assert seconds["book/chapters/01_x"] >= 0.15 and set(seconds) == {"book/chapters/01_x", "book/intro"}
    printed = capfd.readouterr()
    assert printed.out == ""
    assert "/x.md:3: WARNING: undefined label" in printed.err and "\x1b" not in printed.err
    assert "without encryption" not in printed.err
    assert ("MdParserConfig" in printed.err) == bool(exit_code)  # the status output only when it failed


# ------------------------------------------------------------------ the HTML and the browser
@pytest.fixture(scope="module")
def html():
    # .buildinfo is written by every build (index.html, a redirect, only by the first: as a stamp it made every
    # later test session rebuild)
    stamp = book.HTML / ".buildinfo"
    # any page's source (the chapters, the .md pages), the configuration and the templates
    sources = [*executed_chapters(), *(ROOT / "book").glob("*.md"), ROOT / "_config.yml",
               *(ROOT / "book" / "_templates").rglob("*.html")]
    newest = max(p.stat().st_mtime for p in sources)
    if not stamp.is_file() or stamp.stat().st_mtime < newest:
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


def visit_pages(chromium: str, folder: Path, names, script: str, ready: str = "true", width: int = 1280,
                height: int = 900) -> dict:
    """Serve `folder` on this machine and visit each page `NAME.html` of `names` in one Chromium of that window (a
    phone's below 600 px): {name: PageReport}."""
    from browser import Chromium
    handler = functools.partial(_QuietHandler, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    driver = Chromium(chromium, width=width, height=height, phone=width < 600)
    try:
        return {name: driver.visit(f"http://127.0.0.1:{httpd.server_address[1]}/{name}.html", script=script, ready=ready)
                for name in names}
    finally:
        driver.close()
        httpd.shutdown()


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


# ------------------------------------------------------------------ offline, error-free, within the column
BOOK_PAGES = ["book/intro", "book/protocol", "book/glossary", *(f"book/chapters/{p.stem}" for p in executed_chapters()),
              "book/explorer", "book/reproduce", "book/bibliography"]
FIGURES_DRAWN = ("!window.Plotly || Array.from(document.querySelectorAll('.plotly-graph-div'))"
                 ".every(d => d.querySelector('.main-svg'))")
# Outputs and figures of the page's text column whose box or content is wider than the column (scrollWidth:
# a line or table that only fits by scrolling sideways counts too).
MEASURE_WIDTHS = """(() => {
  const column = document.querySelector("article.bd-article") || document.querySelector("main");
  const limit = column.clientWidth, right = column.getBoundingClientRect().right;
  const wide = [];
  for (const el of column.querySelectorAll(
      ".cell_output, .cell_output > *, .cell_output pre, .plotly-graph-div, .js-plotly-plot .main-svg, " +
      "figure, img, table, .MathJax, mjx-container")) {
    const box = el.getBoundingClientRect();
    const width = Math.max(el.scrollWidth || 0, box.width);
    if (width > limit + 1 || box.right > right + 1) {
      const cls = typeof el.className === "string" ? el.className.trim().split(/\\s+/).join(".") : "";
      wide.push(`${el.tagName.toLowerCase()}${cls ? "." + cls : ""} ${Math.round(width)} px: ` +
                (el.innerText || el.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 50));
    }
  }
  return {column: limit, wide: wide, weight: pageWeight()};
})()"""
# What a page loads besides its text (issue 60's lighter pages): plotly.js only where a figure is, never in the way of
# the first paint (a script in the head without defer or async), no icon font (Font Awesome: the theme's 1.5 MB script
# and its 157 kB font), and every icon of the theme's buttons drawn (book.css masks), none left blank.
PAGE_WEIGHT = """function pageWeight() {
  const scripts = Array.from(document.querySelectorAll("script[src]"));
  const plotly = scripts.filter(s => /\\/plotly(\\.min)?\\.js/.test(s.src));
  const blocking = plotly.filter(s => !s.defer && !s.async && s.type !== "module" && s.closest("head"));
  const fonts = [];
  document.fonts.forEach(f => { if (f.status === "loaded") fonts.push(f.family.replace(/["']/g, "")); });
  const blank = [];
  document.querySelectorAll("[class*='fa-']").forEach(el => {
    const icon = Array.from(el.classList).find(c => /^fa-/.test(c) && !/^fa-(solid|regular|brands|lg|xs|sm|[0-9]+x)$/.test(c));
    if (!icon || !el.getClientRects().length) return;
    const before = getComputedStyle(el, "::before");
    const mask = before.maskImage || before.webkitMaskImage || "none";
    if (mask === "none" || before.content === "none") blank.push(icon);
  });
  return {figures: document.querySelectorAll(".plotly-graph-div").length, plotly: plotly.length,
          plotly_blocking: blocking.length, icon_fonts: fonts.filter(f => /awesome|icon/i.test(f)),
          icon_scripts: scripts.filter(s => /fontawesome/i.test(s.src)).map(s => s.src.split("/").pop()),
          blank_icons: [...new Set(blank)]};
}"""
MEASURE_WIDTHS = MEASURE_WIDTHS.replace("(() => {", "(() => {\n  " + PAGE_WEIGHT, 1)


@pytest.fixture(scope="module")
def browser(chromium):
    from browser import Chromium
    driver = Chromium(chromium, width=1280, height=900)
    yield driver
    driver.close()


@pytest.fixture(scope="module")
def page_reports(browser, server):
    """Each page visited once (lazily), in the 1280-pixel-wide window of a laptop."""
    reports = {}

    def visit(page: str):
        if page not in reports:
            reports[page] = browser.visit(f"{server}/{page}.html", script=MEASURE_WIDTHS, ready=FIGURES_DRAWN)
        return reports[page]
    return visit


@pytest.mark.parametrize("page", BOOK_PAGES)
def test_page_loads_nothing_from_the_network_and_logs_no_error(page, page_reports, html):
    if not (html / f"{page}.html").is_file():
        pytest.skip(f"{page} is not in this build")
    report = page_reports(page)
    assert not report.external, (f"{page} requested {len(report.external)} URL(s) off this machine, e.g."
                                 f" {report.external[0]} (a chapter executed before the offline renderer:"
                                 f" re-execute it with `python -m assignadd_core.report.book execute --only SLUG`)")
    assert not report.errors, f"{page}: {len(report.errors)} console error(s): " + " | ".join(report.errors[:5])


@pytest.mark.parametrize("page", BOOK_PAGES)
def test_plotly_only_where_a_figure_is_deferred_and_no_icon_font(page, page_reports, html):
    """Lighter pages: plotly.js (4.8 MB) only on a page with a figure, deferred (never blocking the first paint); no
    page loads Font Awesome (its script or its font); every icon the page shows is drawn. benchmarks/page_bytes.py
    reports the bytes."""
    path = html / f"{page}.html"
    if not path.is_file():
        pytest.skip(f"{page} is not in this build")
    weight = page_reports(page).result["weight"]
    figures = book.FIGURE_MARK in path.read_text()
    assert weight["plotly"] == (1 if figures else 0), f"{page}: {weight['plotly']} plotly.js, figures: {figures}"
    assert weight["plotly_blocking"] == 0, f"{page}: plotly.js blocks the first paint (in the head, not deferred)"
    assert not weight["icon_scripts"] and not weight["icon_fonts"], f"{page}: an icon font: {weight}"
    assert not weight["blank_icons"], f"{page}: icons drawn blank: {weight['blank_icons']}"


WEIGHT_PAGE = """<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">HEAD</head><body><main><p>A page <i class="fa-solid fa-bars"></i>
<span class="fa-solid fa-question"></span></p>FIGURE</main></body></html>"""


def test_the_page_weight_check_finds_plotly_without_a_figure_a_blocking_plotly_and_an_icon_font(chromium, tmp_path):
    """A page that loads plotly.js in its head (blocking) without a figure, and draws an icon with Font Awesome's own
    font, fails each part of the check; the same page with the book's icons (book.css) and plotly deferred beside a
    figure passes, but for the one icon book.css does not draw."""
    import pydata_sphinx_theme
    shutil.copyfile(book.copy_plotly_js(), tmp_path / "plotly.min.js")
    shutil.copyfile(book.STATIC / "book.css", tmp_path / "book.css")
    webfont = (Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static" / "vendor"
               / "fontawesome" / "webfonts" / "fa-solid-900.woff2")
    shutil.copyfile(webfont, tmp_path / "fa-solid-900.woff2")
    font = ("<style>@font-face { font-family: 'Font Awesome 6 Free'; font-weight: 900; src: url(fa-solid-900.woff2); }"
            " .fa-solid { font-family: 'Font Awesome 6 Free'; font-weight: 900; } .fa-bars::before { content: '\\\\f0c9'; }"
            "</style>")
    pages = {"heavy": WEIGHT_PAGE.replace("HEAD", '<script src="plotly.min.js"></script>' + font).replace("FIGURE", ""),
             "light": WEIGHT_PAGE.replace("HEAD", '<link rel="stylesheet" href="book.css">'
                                          '<script defer src="plotly.min.js"></script>')
                                 .replace("FIGURE", '<div class="plotly-graph-div" id="f"></div><script>document'
                                          '.addEventListener("DOMContentLoaded", () => Plotly.newPlot("f", [{y: [1, 2]}]))'
                                          '</script>')}
    for name, text in pages.items():
        (tmp_path / f"{name}.html").write_text(text)
    reports = visit_pages(chromium, tmp_path, pages, MEASURE_WIDTHS, ready="document.fonts.status === 'loaded'",
                          height=800)
    found = {name: report.result["weight"] for name, report in reports.items()}
    heavy, light = found["heavy"], found["light"]
    assert heavy["figures"] == 0 and heavy["plotly"] == 1 and heavy["plotly_blocking"] == 1, heavy
    assert heavy["icon_fonts"] == ["Font Awesome 6 Free"] and set(heavy["blank_icons"]) == {"fa-bars", "fa-question"}
    assert light["figures"] == 1 and light["plotly"] == 1 and light["plotly_blocking"] == 0, light
    assert light["icon_fonts"] == [] and light["blank_icons"] == ["fa-question"], light


@pytest.mark.parametrize("page", BOOK_PAGES)
def test_no_output_is_wider_than_the_text_column(page, page_reports, html):
    if not (html / f"{page}.html").is_file():
        pytest.skip(f"{page} is not in this build")
    measured = page_reports(page).result
    assert measured["column"] > 300, measured
    assert not measured["wide"], (f"{page}: {len(measured['wide'])} element(s) wider than the"
                                  f" {measured['column']} px column: " + " | ".join(measured["wide"][:6]))


# What a reader sees (prose, outputs, tables, figure text; not code): table cells narrower than their content (a
# word that does not fit: cells never break inside a word, so it overflows the cell instead), cells cut short ("..."
# or "…" at their end: pandas cuts a long cell so, or a cell whose text overflows a hidden edge), tables wider than
# their box (they would scroll sideways), figures drawn larger than a box that clips or scrolls them, a page wider
# than the window, figures that zoom on a drag on a touch screen or on the mouse wheel, and the text.
READER_VIEW = """(() => {
  FIGURE_TEXT
  READER_CHECKS
  const column = document.querySelector("article.bd-article") || document.querySelector("main");
  const narrow = [], truncated = [], wideTables = [], cut = [], zoom = [];
  const touch = window.matchMedia("(pointer: coarse)").matches;
  for (const cell of column.querySelectorAll("td, th")) {
    if (cell.closest(".cell_input, table.table-cards > thead")) continue;  // a card table's header is not drawn
    const text = cell.innerText.trim(), style = getComputedStyle(cell);
    if (/(\\.\\.\\.|…)$/.test(text) || (style.textOverflow === "ellipsis" && cell.scrollWidth > cell.clientWidth + 1))
      truncated.push(text.slice(-40));
    if (cell.scrollWidth > cell.clientWidth + 1)
      narrow.push(`${text.slice(0, 30)} (${cell.clientWidth} < ${cell.scrollWidth} px)`);
  }
  const padding = getComputedStyle(column);
  const inner = column.clientWidth - parseFloat(padding.paddingLeft) - parseFloat(padding.paddingRight);
  for (const table of column.querySelectorAll("table")) {
    if (table.closest(".cell_input, .js-plotly-plot")) continue;
    const width = table.getBoundingClientRect().width, room = Math.min(inner, table.parentElement.clientWidth);
    if (width > room + 1) wideTables.push(`${Math.round(width)} px in ${Math.round(room)} px: ` +
                                          table.innerText.trim().replace(/\\s+/g, " ").slice(0, 40));
  }
  document.querySelectorAll(".js-plotly-plot").forEach((gd, n) => {
    const svg = gd.querySelector(".main-svg");
    if (!svg || gd.closest("details:not([open])")) return;  // folded: not drawn for the reader (checked opened, below)
    const drawn = svg.getBoundingClientRect();
    for (let box = gd.parentElement; box && box !== document.documentElement; box = box.parentElement) {
      const style = getComputedStyle(box);
      if (style.overflowX === "visible" && style.overflowY === "visible") continue;
      if (drawn.height > box.clientHeight + 1 || drawn.width > box.clientWidth + 1) {
        cut.push(`figure ${n + 1}: ${Math.round(drawn.width)} × ${Math.round(drawn.height)} px drawn in a` +
                 ` ${box.clientWidth} × ${box.clientHeight} px box`);
        break;
      }
    }
    const layout = gd._fullLayout || {}, context = gd._context || {};
    if (touch && layout.dragmode !== false) zoom.push(`figure ${n + 1}: a drag zooms (${layout.dragmode}) on touch`);
    if (context._scrollZoom && context._scrollZoom.cartesian) zoom.push(`figure ${n + 1}: the mouse wheel zooms`);
  });
  const page = {width: document.documentElement.scrollWidth, window: document.documentElement.clientWidth};
  const cell = column.querySelector("td");
  const wrap = cell ? getComputedStyle(cell).overflowWrap + " " + getComputedStyle(cell).wordBreak : "";
  const parts = [];
  const walker = document.createTreeWalker(column, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const parent = walker.currentNode.parentElement;
    if (!parent.closest(".cell_input, pre, code, script, style, details.parameters")) parts.push(walker.currentNode.textContent);
  }
  const box = document.querySelector("div.key-results"), question = box && box.querySelector(".key-results-question");
  const atPage = el => el.getBoundingClientRect().top + window.scrollY;
  const keyResults = box ? {top: atPage(box), question_bottom: question ? atPage(question) +
                            question.getBoundingClientRect().height : atPage(box),
                            bottom: atPage(box) + box.getBoundingClientRect().height, window: window.innerHeight} : null;
  const tool = document.querySelector("div.ae[data-mode]");
  return {narrow: narrow, wrap: wrap, text: parts.join(" "), figures: figureText(), truncated: truncated,
          wide_tables: wideTables, cut: cut, zoom: zoom, page: page, key_results: keyResults,
          height: document.documentElement.scrollHeight, window: window.innerHeight,
          tool_top: tool ? atPage(tool) : null, checks: readerChecks(column)};
})()"""


# Each figure's own text as drawn (after book/_static/figure_fit.js has fitted it): its title, axis titles,
# annotations (subplot titles, line labels), legend and colour bars must lie inside the figure, clear of each
# other and of the tick labels, and the figure must not be drawn below its box (over the text that follows).
FIGURE_TEXT = r"""function figureText() {
    const overlap = (a, b) => Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left)) *
                              Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top)) > 4;
    const problems = [];
    document.querySelectorAll(".js-plotly-plot").forEach((gd, n) => {
      const svg = gd.querySelector(".main-svg");
      if (!svg || gd.closest("details:not([open])")) return;  // folded: checked with its fold opened
      const frame = svg.getBoundingClientRect(), name = `figure ${n + 1}`;
      const pick = (selector, kind) => Array.from(gd.querySelectorAll(selector)).map(el => {
        const b = el.getBoundingClientRect();
        return {kind, el, text: (el.textContent || "").trim().slice(0, 40), left: b.left - frame.left,
                right: b.right - frame.left, top: b.top - frame.top, bottom: b.bottom - frame.top, w: b.width, h: b.height};
      }).filter(b => b.w > 0 && b.h > 0);
      const labels = [...pick(".g-gtitle", "title"),
                      ...pick("[class^='g-x'][class$='title'], [class^='g-y'][class$='title']", "axis title"),
                      ...pick(".annotation", "annotation"), ...pick(".legend", "legend"), ...pick(".colorbar", "colour bar"),
                      ...pick(".slider-container text.slider-label", "slider value")];
      const ticks = pick("g[class$='tick'] > text", "tick").filter(t => !t.el.closest(".colorbar"));
      // tick labels of one axis overlapping each other (59 categories on a phone); the boxes of labels turned by an
      // angle other than 0 or 90 degrees overlap without their letters doing so, so those are left out
      const byAxis = new Map();
      const slanted = t => { const m = /rotate\((-?[\d.]+)/.exec(t.el.getAttribute("transform") || "");
                             return m && Math.abs(parseFloat(m[1])) % 90 > 0.5; };
      ticks.filter(t => !slanted(t)).forEach(t => {
        const axis = t.el.parentNode.parentNode;
        if (!byAxis.has(axis)) byAxis.set(axis, []);
        byAxis.get(axis).push(t);
      });
      byAxis.forEach(own => {
        for (let i = 0; i + 1 < own.length; i++)
          if (overlap(own[i], own[i + 1])) { problems.push(`${name}: tick labels "${own[i].text}" and "${own[i + 1].text}" overlap`); break; }
      });
      if (frame.bottom > gd.getBoundingClientRect().bottom + 2) problems.push(`${name}: drawn below its box`);
      const [bar] = pick(".modebar", "toolbar");  // it shows on hover (a tap on a phone), over the figure's corner
      const covered = bar && [...labels, ...ticks].find(l => overlap(bar, l));
      if (covered) problems.push(`${name}: the toolbar covers the ${covered.kind} "${covered.text}"`);
      labels.forEach((a, i) => {
        if (a.left < -1 || a.right > frame.width + 1 || a.top < -1 || a.bottom > frame.height + 1)
          problems.push(`${name}: ${a.kind} cut: ${a.text}`);
        for (const b of labels.slice(i + 1))
          if (!a.el.contains(b.el) && !b.el.contains(a.el) && overlap(a, b))
            problems.push(`${name}: ${a.kind} "${a.text}" over ${b.kind} "${b.text}"`);
        if (a.kind !== "axis title") {
          const hit = ticks.find(t => overlap(a, t));
          if (hit) problems.push(`${name}: ${a.kind} "${a.text}" over the tick label "${hit.text}"`);
        }
      });
    });
    return problems;
  }"""
# What the checks of issue 60 read, page by page (each is judged in Python below, where its list of known pages is):
# - bars: for each bar chart whose bars are named (a category axis, or tick values given one per bar), how many bars
#   and how many of their names are drawn;
# - small: text drawn under 9 px (the prose's and each SVG text's font size, times its drawing's scale), visible only;
# - figure_words: the words a figure shows (legend entries, axis titles, annotations, tick labels);
# - panels: each figure's columns and rows of panels (laptop: as designed) and its caption (the title above it and the
#   paragraph right after it);
# - bullets: text blocks with a literal Markdown bullet ("* " at the start of a source line, which the browser shows
#   inside the paragraph: a list glued as text, or a list without its blank line before it).
READER_CHECKS = r"""function readerChecks(column) {
    const shown = el => el.getClientRects().length > 0 && !el.closest("details:not([open])");
    const bars = [], small = [], figureWords = [], panels = [], bullets = [];
    const axisKey = id => (id[0] === "x" ? "xaxis" : "yaxis") + id.slice(1);
    const plots = Array.from(document.querySelectorAll(".js-plotly-plot"));
    plots.forEach((gd, n) => {
      const layout = gd._fullLayout;
      if (!layout || !gd.querySelector(".main-svg")) return;
      const name = `figure ${n + 1}`;
      const named = new Map();  // axis id -> positions of named bars
      (gd._fullData || []).forEach(trace => {
        if (trace.type !== "bar" || trace.visible !== true) return;
        const id = trace.orientation === "h" ? trace.yaxis : trace.xaxis, axis = layout[axisKey(id)];
        const values = Array.from((trace.orientation === "h" ? trace.y : trace.x) || []);
        if (!axis || !values.length) return;
        const byArray = axis.tickmode === "array" && Array.isArray(axis.tickvals);
        if (axis.type !== "category" && !byArray) return;
        if (!named.has(id)) named.set(id, new Set());
        values.forEach(v => { if (axis.type === "category" || axis.tickvals.some(t => Number(t) === Number(v)))
                                named.get(id).add(String(v)); });
      });
      named.forEach((positions, id) => {
        const labels = Array.from(gd.querySelectorAll(`g.${id}tick > text`))
          .filter(t => t.textContent.trim() && getComputedStyle(t).opacity !== "0" && t.getBoundingClientRect().width > 0);
        if (shown(gd)) bars.push({figure: name, axis: id, bars: positions.size, labels: labels.length});
      });
      const words = [];
      gd.querySelectorAll(".legendtext, .g-gtitle, [class^='g-x'][class$='title'], [class^='g-y'][class$='title'], " +
                          ".annotation-text, g[class$='tick'] > text").forEach(t => {
        const text = (t.textContent || "").trim();
        if (text) words.push(text);
      });
      figureWords.push({figure: name, words: words});
      const cols = new Set(), rows = new Set();
      const subplots = (layout._subplots && layout._subplots.cartesian) || [];
      subplots.forEach(sub => {
        const [x, y] = sub.match(/^(x\d*)(y\d*)$/).slice(1);
        const xa = layout[axisKey(x)], ya = layout[axisKey(y)];
        if (xa && xa.domain) cols.add(xa.domain.map(v => v.toFixed(2)).join("-"));
        if (ya && ya.domain) rows.add(ya.domain.map(v => v.toFixed(2)).join("-"));
      });
      // the caption: the figure's title above it (p.figure-caption) and the paragraph after its output, before the
      // next figure or heading
      const order = Array.from(column.querySelectorAll("p, h1, h2, h3, h4, .js-plotly-plot"));
      const at = order.indexOf(gd);
      let title = "", after = "";
      for (let i = at - 1; i >= 0 && !order[i].matches(".js-plotly-plot, h1, h2, h3, h4"); i--)
        if (order[i].matches("p.figure-caption")) { title = order[i].innerText || order[i].textContent; break; }
      for (let i = at + 1; i < order.length && !order[i].matches(".js-plotly-plot, h1, h2, h3, h4"); i++)
        if (order[i].matches("p:not(.figure-caption)") && !gd.contains(order[i]) && !order[i].closest(".cell_output pre")) {
          after = order[i].textContent; break; }
      panels.push({figure: name, columns: cols.size || 1, rows: rows.size || 1, title: title.trim(),
                   after: after.replace(/\s+/g, " ").trim()});
    });
    const walker = document.createTreeWalker(column, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode, parent = node.parentElement, text = node.textContent.trim();
      if (!text || !parent || parent.closest("svg, mjx-container, .MathJax, script, style, .cell_input") || !shown(parent))
        continue;
      const size = parseFloat(getComputedStyle(parent).fontSize);
      if (size < 9) small.push(`${size.toFixed(1)} px: ${text.slice(0, 40)}`);
    }
    column.querySelectorAll("svg text").forEach(t => {
      const text = (t.textContent || "").trim(), box = t.getBoundingClientRect();
      if (!text || !box.width || !box.height || t.closest("details:not([open])")) return;
      const ctm = t.getScreenCTM(), scale = ctm ? Math.hypot(ctm.a, ctm.b) : 1;
      const size = parseFloat(getComputedStyle(t).fontSize) * scale;
      if (size < 9 - 0.05) {
        const gd = t.closest(".js-plotly-plot"), where = gd ? `figure ${plots.indexOf(gd) + 1}` : "a drawing";
        small.push(`${where}, ${size.toFixed(1)} px: ${text.slice(0, 40)}`);
      }
    });
    column.querySelectorAll("p, li, dd, dt, td, th, figcaption, blockquote").forEach(block => {
      if (block.closest("pre, code, .cell_input") || !shown(block)) return;
      const match = /(?:^|\n)[ \t]*\*[ \t]+\S.{0,40}/.exec(block.textContent);
      if (match) bullets.push(match[0].trim().replace(/\s+/g, " "));
    });
    return {bars: bars, small: small, figure_words: figureWords, panels: panels, bullets: bullets};
  }"""
READER_VIEW = READER_VIEW.replace("FIGURE_TEXT", FIGURE_TEXT).replace("READER_CHECKS", READER_CHECKS)
FIGURES_FITTED = FIGURES_DRAWN + " && Array.from(document.querySelectorAll('.js-plotly-plot')).every(d => d.dataset.fitted)"


SCREENS = {1280: 800, 390: 844}  # a laptop's and a phone's window: width and height of the first screen


# A figure can be folded into a <details> (a cell tagged hide-output): closed, it is not drawn for the reader and the
# checks above pass it by; the reader view with every fold opened (and a pause for the figures to redraw) checks it.
OPEN_FOLDS = "document.querySelectorAll('details').forEach(d => { d.open = true; })"
READER_VIEW_OPENED = f"new Promise(done => {{ {OPEN_FOLDS}; setTimeout(() => done({READER_VIEW}), 3000); }})"


@pytest.fixture(scope="module", params=[1280, 390], ids=["laptop", "phone"])
def reader_views(request, chromium, server):
    """Each page's reader view (READER_VIEW), in a laptop's (1280 × 800) and a phone's (390 × 844) window, visited once
    each (lazily); `opened=True`: with every fold opened (READER_VIEW_OPENED)."""
    from browser import Chromium
    driver = Chromium(chromium, width=request.param, height=SCREENS[request.param], phone=request.param < 600)
    views = {}

    def visit(page: str, opened: bool = False):
        if (page, opened) not in views:
            views[page, opened] = driver.visit(f"{server}/{page}.html", script=READER_VIEW_OPENED if opened else READER_VIEW,
                                               ready=FIGURES_FITTED).result
        return views[page, opened]
    yield visit
    driver.close()


class FoldScan(HTMLParser):
    """Counts the plotly figure divs inside a <details>: figures a reader opens."""

    def __init__(self):
        super().__init__()
        self.depth, self.folded = 0, 0

    def handle_starttag(self, tag, attrs):
        if tag == "details":
            self.depth += 1
        elif self.depth and "plotly-graph-div" in (dict(attrs).get("class") or "").split():
            self.folded += 1

    def handle_endtag(self, tag):
        if tag == "details":
            self.depth = max(0, self.depth - 1)


def folded_figures(text: str) -> int:
    scan = FoldScan()
    scan.feed(text)
    return scan.folded


def folded_figure_problems(view: dict) -> list[str]:
    """What the reader view with every fold opened found wrong with the figures: cut by a box, or their text."""
    return [*view["cut"], *view["zoom"], *view["figures"]]


@pytest.mark.parametrize("page", BOOK_PAGES)
def test_no_table_cell_is_narrower_than_its_longest_word(page, reader_views, html):
    if not (html / f"{page}.html").is_file():
        pytest.skip(f"{page} is not in this build")
    view = reader_views(page)
    assert "anywhere" not in view["wrap"] and "break-all" not in view["wrap"], view["wrap"]
    assert not view["narrow"], f"{page}: {len(view['narrow'])} cell(s) narrower than a word: " + " | ".join(view["narrow"][:5])


@pytest.mark.parametrize("page", BOOK_PAGES)
def test_no_figure_text_is_cut_or_overlaps(page, reader_views, html):
    """Titles, axis titles, annotations, legends and colour bars of every figure, at a laptop's and a phone's width."""
    if not (html / f"{page}.html").is_file():
        pytest.skip(f"{page} is not in this build")
    problems = reader_views(page)["figures"]
    assert not problems, f"{page}: {len(problems)} figure-text problem(s): " + " | ".join(problems[:6])


def layout_problems(view: dict) -> dict[str, list[str]]:
    """What a reader view (READER_VIEW) found wrong with a page's layout, by kind; empty lists where nothing is."""
    page = view["page"]
    return {"figure cut by its box": view["cut"], "cell cut short": view["truncated"],
            "table wider than its box": view["wide_tables"], "figure zooms instead of scrolling": view["zoom"],
            "page wider than the window": [f"{page['width']} px in {page['window']} px"] if page["width"] > page["window"] + 1
            else []}


@pytest.mark.parametrize("page", BOOK_PAGES)
def test_every_figure_and_table_is_whole_and_the_page_never_scrolls_sideways(page, reader_views, html):
    """At a laptop's and a phone's width: no figure larger than a box that clips or scrolls it, no table cell cut short,
    no table wider than its box, no drag-zoom on touch or wheel zoom, no page wider than the window."""
    if not (html / f"{page}.html").is_file():
        pytest.skip(f"{page} is not in this build")
    found = {kind: items for kind, items in layout_problems(reader_views(page)).items() if items}
    assert not found, f"{page}: " + "; ".join(f"{kind}: {len(items)} ({' | '.join(items[:3])})"
                                              for kind, items in found.items())


@pytest.mark.parametrize("page", BOOK_PAGES)
def test_a_folded_figure_is_whole_when_opened(page, reader_views, html):
    """A figure in a fold, opened at a laptop's and a phone's width: whole in its box, its text clear and uncut."""
    path = html / f"{page}.html"
    if not path.is_file():
        pytest.skip(f"{page} is not in this build")
    if not folded_figures(path.read_text()):
        pytest.skip(f"{page} folds no figure")
    problems = folded_figure_problems(reader_views(page, opened=True))
    assert not problems, f"{page}, folds opened: {len(problems)} figure problem(s): " + " | ".join(problems[:6])


FOLDED_PAGE = """<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><script src="plotly.min.js"></script></head><body><main><details><summary>a figure</summary>
<div class="output" style="overflow-y:auto"><div style="height:300px"><div id="tall" style="height:100%"></div></div></div>
</details></main><script>
Plotly.newPlot("tall", [{y: [1, 3, 2]}], {height: 900}).then(gd => { gd.dataset.fitted = "1"; });
</script></body></html>"""


@pytest.mark.parametrize("width", [1280, 390], ids=["laptop", "phone"])
def test_a_folded_figure_is_checked_opened_and_passed_by_closed(width, chromium, tmp_path):
    """A figure drawn 900 px tall in a 300 px scroll box, folded: closed it is not drawn (no problem), opened it is cut."""
    from browser import Chromium
    shutil.copyfile(book.copy_plotly_js(), tmp_path / "plotly.min.js")
    (tmp_path / "folded.html").write_text(FOLDED_PAGE)
    assert folded_figures('<details><div class="plotly-graph-div"></div></details><div class="plotly-graph-div">') == 1
    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    driver = Chromium(chromium, width=width, height=900, phone=width < 600)
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/folded.html"
        closed = driver.visit(url, script=READER_VIEW, ready=FIGURES_FITTED)
        opened = driver.visit(url, script=READER_VIEW_OPENED, ready=FIGURES_FITTED)
    finally:
        driver.close()
        httpd.shutdown()
    assert not closed.errors and not opened.errors, closed.errors + opened.errors
    assert folded_figure_problems(closed.result) == [] and layout_problems(closed.result)["figure cut by its box"] == []
    assert any(p.startswith("figure 1: ") and "in a" in p for p in folded_figure_problems(opened.result)), opened.result


# Chapters that do not open with a key-results box yet (present.KeyResults): expected to fail, strictly, so that a
# chapter given its box and left here fails too. Take a chapter off this list when it opens with its box.
KEY_RESULTS_PENDING: set[str] = set()


def key_results_problem(view: dict) -> str | None:
    """Why a page's key-results box is not on its first screen (its question line wholly within the window's height
    from the top of the page), or None when it is."""
    box = view["key_results"]
    if box is None:
        return "no key-results box"
    if box["question_bottom"] > box["window"]:
        return f"the key-results box starts {round(box['top'])} px down, below the first {box['window']} px"
    return None


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.xfail(strict=True, reason="no key-results box yet"))
                                  if p.split("/")[-1] in KEY_RESULTS_PENDING else p
                                  for p in BOOK_PAGES if p.startswith("book/chapters/")])
def test_every_chapter_opens_with_its_key_results_on_the_first_screen(page, reader_views, html):
    """At 1280 × 800 and at 390 × 844: the box with the question, the paper's answer, ours and why, under the title."""
    if not (html / f"{page}.html").is_file():
        pytest.skip(f"{page} is not in this build")
    problem = key_results_problem(reader_views(page))
    assert problem is None, f"{page}: {problem}"


KEY_RESULTS_PAGE = """<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"></head><body><main><h1>A chapter</h1><div style="height:ABOVEpx">text</div>
BOX</main></body></html>"""


@pytest.mark.parametrize("width", [1280, 390], ids=["laptop", "phone"])
def test_the_first_screen_check_fails_on_a_key_results_box_moved_down(width, chromium, tmp_path):
    """The same box under the title passes, moved below a screen of text fails, and a page without one fails."""

    from assignadd_core.report import present
    box = present.KeyResults("Does it?", present.Quote("yes", "the paper"), present.Answer("no", "not reproduced"),
                             "because")._repr_html_()
    pages = {"top": KEY_RESULTS_PAGE.replace("ABOVE", "0").replace("BOX", box),
             "down": KEY_RESULTS_PAGE.replace("ABOVE", str(SCREENS[width])).replace("BOX", box),
             "none": KEY_RESULTS_PAGE.replace("ABOVE", "0").replace("BOX", "")}
    for name, text in pages.items():
        (tmp_path / f"{name}.html").write_text(text)
    reports = visit_pages(chromium, tmp_path, pages, READER_VIEW, width=width, height=SCREENS[width])
    found = {name: key_results_problem(report.result) for name, report in reports.items()}
    assert found["top"] is None, found
    assert found["down"].startswith("the key-results box starts") and found["none"] == "no key-results box", found


DEFECTS_PAGE = """<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><script src="plotly.min.js"></script></head><body><main>
<table><thead><tr><th>seed</th><th>deciding numbers</th></tr></thead>
<tbody><tr><td>seed42</td><td>addition 601, composed 2,701, jump 2,701, fina...</td></tr></tbody></table>
<table><tbody><tr>WIDE_CELLS</tr></tbody></table>
<div style="width:1700px">a block wider than any window</div>
<div class="output" style="overflow-x:auto"><div style="height:300px"><div id="tall" style="height:100%"></div></div></div>
<div id="covered" style="height:400px"></div>
</main><script>
const note = {text: "a panel's title", x: 1, y: 1, xref: "paper", yref: "paper", xanchor: "right", yanchor: "bottom",
              showarrow: false};
Promise.all([Plotly.newPlot("tall", [{y: [1, 3, 2]}], {height: 900}),
             Plotly.newPlot("covered", [{y: [1, 2]}], {height: 400, margin: {t: 20}, annotations: [note]},
                            {responsive: true, scrollZoom: true})])
  .then(figures => figures.forEach(gd => { gd.dataset.fitted = "1"; }));
</script></body></html>"""


@pytest.mark.parametrize("width", [1280, 390], ids=["laptop", "phone"])
def test_the_layout_checks_find_each_defect_on_a_page_built_with_them(width, chromium, tmp_path):
    """A page with each defect the book once had: a cell pandas cut short, a table and a block wider than the window, a
    figure drawn 900 px tall in a 300 px scroll box, a toolbar over a panel's title, a figure that zooms on the mouse
    wheel and (on a phone) on a drag. The book's fixes (figure_fit.js, table_cards.js, book.css) are not loaded."""
    from browser import Chromium
    shutil.copyfile(book.copy_plotly_js(), tmp_path / "plotly.min.js")
    cells = "".join(f"<td>{'a_long_unbreakable_cell_text_' * 2}{i}</td>" for i in range(8))
    (tmp_path / "defects.html").write_text(DEFECTS_PAGE.replace("WIDE_CELLS", cells))
    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    driver = Chromium(chromium, width=width, height=900, phone=width < 600)
    try:
        report = driver.visit(f"http://127.0.0.1:{httpd.server_address[1]}/defects.html", script=READER_VIEW,
                              ready=FIGURES_FITTED)
    finally:
        driver.close()
        httpd.shutdown()
    assert not report.errors, report.errors
    found = layout_problems(report.result)
    assert found["cell cut short"] == ["addition 601, composed 2,701, jump 2,701, fina..."[-40:]], found
    assert any(item.startswith("figure 1: ") and "in a" in item for item in found["figure cut by its box"]), found
    assert len(found["table wider than its box"]) == 1 and found["page wider than the window"], found
    zoom = found["figure zooms instead of scrolling"]
    assert "figure 2: the mouse wheel zooms" in zoom and ("figure 1: a drag zooms (zoom) on touch" in zoom) == (width < 600)
    assert any("the toolbar covers the annotation \"a panel's title\"" in p for p in report.result["figures"]), \
        report.result["figures"]


# ------------------------------------------------------------------ the reader's defects (issue 60), each with its check
# Each check below reads the reader view (READER_VIEW, `checks`: READER_CHECKS) of every page, at a laptop's and a
# phone's width, and fails on its defect. A page that has the defect today is listed by name in the check's KNOWN
# set: its test is expected to fail, strictly, so that a page fixed and left on the list fails too (take it off).
# test_the_reader_checks_find_each_defect_on_a_page_built_with_them shows each check failing on a page built with its
# defect and passing on the same page without it.
COLUMN_WORDS = re.compile(r"(?:^|[.;:!?]\s+)(?:left|right)\s*:|(?<!var )\((?:left|right)\)"
                          r"|\b(?:left|right)(?:-hand)?\s+(?:panel|plot|chart|column|window)s?\b", re.I)
ROW_WORDS = re.compile(r"(?:^|[.;:!?]\s+)(?:top|bottom|upper|lower)\s*:|\((?:top|bottom|upper|lower)\)"
                       r"|\b(?:top|bottom|upper|lower)\s+(?:panel|plot|chart|row)s?\b", re.I)
MANY_PANELS = re.compile(r"\b(?:two|three|four|five|six|both|all|each of the)\s+panels\b", re.I)


def bars_without_labels(view: dict) -> list[str]:
    """Bar charts whose bars are named (a category axis, or one tick value per bar) that draw fewer names than bars."""
    return [f"{b['figure']}: {b['bars']} bars, {b['labels']} of their labels drawn ({b['axis']} axis)"
            for b in view["checks"]["bars"] if b["labels"] < b["bars"]]


def small_text(view: dict) -> list[str]:
    """Text drawn under 9 px: prose, tables, figures and drawings."""
    return view["checks"]["small"]


def code_names_in_figures(view: dict) -> list[str]:
    """A code identifier (`fewer_2var_queries`) or backticks in a figure's legend, titles, annotations or tick labels."""
    found = []
    for figure in view["checks"]["figure_words"]:
        for words in figure["words"]:
            names = IDENTIFIER.findall(words) + (["`"] if "`" in words else [])
            found += [f"{figure['figure']}: {name} (in “{words[:40]}”)" for name in names]
    return found


def captions_naming_missing_panels(view: dict) -> list[str]:
    """A caption (a figure's title, or the paragraph right after it) that places things left and right, top and bottom,
    or in two panels, on a figure without those panels. Judged at a laptop's width, where figures are drawn as designed
    (on a phone figure_fit.js may stack a row of panels into one column)."""
    found = []
    for figure in view["checks"]["panels"]:
        for where, text in (("title", figure["title"]), ("caption", figure["after"])):
            said = [m.group(0).strip(" .;:") for m in COLUMN_WORDS.finditer(text)] if figure["columns"] < 2 else []
            said += [m.group(0).strip(" .;:") for m in ROW_WORDS.finditer(text)] if figure["rows"] < 2 else []
            said += ([m.group(0) for m in MANY_PANELS.finditer(text)]
                     if figure["columns"] * figure["rows"] < 2 else [])
            if said:
                found.append(f"{figure['figure']} ({figure['columns']} × {figure['rows']} panels): its {where} says"
                             f" {', '.join(repr(s) for s in said)}")
    return found


def literal_bullets(view: dict) -> list[str]:
    return view["checks"]["bullets"]


def key_results_not_whole(view: dict) -> str | None:
    """Why a page's key-results box is not whole on its first screen (its bottom edge within the window's height from
    the top of the page), or None when it is (or the page has none: test_every_chapter_opens_with_its_key_results...)."""
    box = view["key_results"]
    if box is not None and box["bottom"] > box["window"]:
        return f"the key-results box ends {round(box['bottom'])} px down, below the first {box['window']} px"
    return None


SCREENS_LIMIT = 8  # laptop screens (1280 × 800) of a chapter, and of the reproduce page, with every fold closed


def screens(view: dict) -> float:
    return view["height"] / view["window"]


# The pages that have each defect today, by window (chapters are rewritten elsewhere: take a page off its list when it
# is fixed). Names are the page's file name without .html.
KNOWN: dict[str, dict[str, set[str]]] = {
    "bars without labels": {"laptop": set(), "phone": set()},
    "small text": {"laptop": set(), "phone": set()},
    "code names in figures": {"laptop": set(), "phone": set()},
    "captions naming missing panels": {"laptop": set(), "phone": set()},
    "literal bullets": {"laptop": set(), "phone": set()},
    "key-results box not whole": {"laptop": set(), "phone": set()},
    "over eight laptop screens": {"laptop": set(), "phone": set()},
}


def view_name(view: dict) -> str:
    return "phone" if view["window"] == SCREENS[390] else "laptop"


def expect_known(request, check: str, page: str, view: dict) -> None:
    """Mark the test as expected to fail (strictly) where the page is on the check's list for this window."""
    if page.split("/")[-1] in KNOWN[check][view_name(view)]:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"known: {check} ({view_name(view)})"))


def reader_view_of(page: str, reader_views, html):
    if not (html / f"{page}.html").is_file():
        pytest.skip(f"{page} is not in this build")
    return reader_views(page)


READER_DEFECTS = {"bars without labels": bars_without_labels, "small text": small_text,
                  "code names in figures": code_names_in_figures,
                  "captions naming missing panels": captions_naming_missing_panels, "literal bullets": literal_bullets}
LAPTOP_ONLY = {"captions naming missing panels"}  # a phone may stack a row of panels (figure_fit.js)


@pytest.mark.parametrize("check", list(READER_DEFECTS))
@pytest.mark.parametrize("page", BOOK_PAGES)
def test_no_page_has_a_reader_defect(page, check, reader_views, html, request):
    """At a laptop's and a phone's width: every named bar's label drawn; no text under 9 px; figures name things in
    words (no `fewer_2var_queries`, no backticks); no caption names a panel its figure lacks; no Markdown bullet printed
    as text (a list glued as text, or one without its blank line)."""
    view = reader_view_of(page, reader_views, html)
    if check in LAPTOP_ONLY and view_name(view) == "phone":
        pytest.skip(f"{check}: judged at a laptop's width")
    expect_known(request, check, page, view)
    found = READER_DEFECTS[check](view)
    assert not found, f"{page}: {check}: {len(found)}: " + " | ".join(found[:5])


READER_DEFECTS_PAGE = """<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><script src="plotly.min.js"></script></head><body><main>
<h1>A chapter</h1><div class="key-results"><p class="key-results-question">Does it?</p>
<div style="height:BOX_HEIGHTpx">the paper, ours, why</div></div>
<p class="figure-caption">Figure 1. Eight named bars</p><div id="bars" style="height:320px"></div>
<p class="figure-caption">Figure 2. Small text</p><div id="small" style="height:320px"></div>
<p SMALL_PROSE>a note in small print</p>
<p class="figure-caption">Figure 3. Names</p><div id="names" style="height:320px"></div>
<p class="figure-caption">Figure 4. Windows</p><div id="one" style="height:320px"></div>
<p>CAPTION_ONE</p>
<p class="figure-caption">Figure 5. Windows</p><div id="two" style="height:320px"></div>
<p>Left: before layer 1 copies. Right: after it, in both panels the same scale.</p>
<p>BULLETS</p><p>Products stay: 2 * n and a*b, and 1-var (left) queries.</p>
</main><script>
const names = ["gradient noise", "nudge at 0", "nudge at 1,000", "nudge at 3,000", "other data", "redraw QK",
               "higher rate", "lower rate"];
const barAxis = DTICK ? {type: "category", dtick: 2} : {type: "category"};
const small = DEFECT ? {text: "a 6 px label", font: {size: 6}, x: 1, y: 2, showarrow: false} :
                       {text: "a 10 px label", font: {size: 10}, x: 1, y: 2, showarrow: false};
Promise.all([
  Plotly.newPlot("bars", [{type: "bar", x: names, y: [1, 2, 3, 4, 5, 6, 7, 8]}], {xaxis: barAxis, margin: {b: 120}}),
  Plotly.newPlot("small", [{y: [1, 3, 2]}], {annotations: [small]}),
  Plotly.newPlot("names", [{y: [1, 2], name: DEFECT ? "fewer_2var_queries" : "fewer 2-var queries"}, {y: [2, 1], name: "twin"}],
                 {showlegend: true, xaxis: {title: {text: DEFECT ? "score from `=`" : "score from ="}}}),
  Plotly.newPlot("one", [{y: [1, 2]}], {}),
  Plotly.newPlot("two", [{y: [1, 2]}, {y: [2, 1], xaxis: "x2", yaxis: "y2"}],
                 {xaxis: {domain: [0, 0.45]}, xaxis2: {domain: [0.55, 1]}, yaxis2: {anchor: "x2"}})])
  .then(figures => figures.forEach(gd => { gd.dataset.fitted = "1"; }));
</script></body></html>"""


@pytest.mark.parametrize("width", [1280, 390], ids=["laptop", "phone"])
def test_the_reader_checks_find_each_defect_on_a_page_built_with_them(width, chromium, tmp_path):
    """One page with each defect of issue 60, and the same page without them: eight named bars with only every other
    name drawn, a figure label at 6 px and prose at 7 px, a code name in a legend and backticks in an axis title, a
    caption that says "Left: … Right: … both panels" under a figure of one panel (and, passing, under one of two), a
    list printed as text with literal "* ", and a key-results box taller than the first screen (its question on it)."""
    shutil.copyfile(book.copy_plotly_js(), tmp_path / "plotly.min.js")
    for name, defect in (("defects", True), ("clean", False)):
        text = READER_DEFECTS_PAGE.replace("BOX_HEIGHT", str(SCREENS[width] + 100 if defect else 40))
        text = text.replace("SMALL_PROSE", 'style="font-size:7px"' if defect else "")
        text = text.replace("BULLETS", "Questions:\n* the first one\n* the second one" if defect else
                            "Questions: the first one; the second one")
        text = text.replace("CAPTION_ONE", "Left: before layer 1 copies. Right: after it, in both panels the same scale."
                            if defect else "Before layer 1 copies and after it, on the same scale (the left operand).")
        text = text.replace("DTICK", "true" if defect else "false").replace("DEFECT", "true" if defect else "false")
        (tmp_path / f"{name}.html").write_text(text)
    views = visit_pages(chromium, tmp_path, ("defects", "clean"), READER_VIEW, ready=FIGURES_FITTED, width=width,
                        height=SCREENS[width])
    assert not views["defects"].errors and not views["clean"].errors, views["defects"].errors + views["clean"].errors
    found, clean = views["defects"].result, views["clean"].result
    assert any(p.startswith("figure 1: 8 bars, 4 of their labels drawn") for p in bars_without_labels(found)), \
        found["checks"]["bars"]
    small = small_text(found)
    assert any(p.startswith("figure 2, 6.0 px: a 6 px label") for p in small), small
    assert any(p.startswith("7.0 px: a note in small print") for p in small), small
    names = code_names_in_figures(found)
    assert any("fewer_2var_queries" in p for p in names) and any("`" in p.split(":")[1] for p in names), names
    panels = captions_naming_missing_panels(found)
    assert len(panels) == 1 and panels[0].startswith("figure 4 (1 × 1 panels): its caption says 'Left', 'Right'"), \
        panels
    assert "both panels" in panels[0]
    assert literal_bullets(found) == ["* the first one"], literal_bullets(found)
    assert key_results_not_whole(found).startswith("the key-results box ends"), found["key_results"]
    assert key_results_problem(found) is None  # its question is on the first screen: the older check passes it
    for name, check in READER_DEFECTS.items():
        assert check(clean) == [], (name, check(clean))
    assert key_results_not_whole(clean) is None


CHAPTER_PAGES = [p for p in BOOK_PAGES if p.startswith("book/chapters/")]


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_the_key_results_box_is_whole_on_the_first_screen(page, reader_views, html, request):
    """At 1280 × 800 and at 390 × 844: the whole box (not only its question) before the first screen's edge."""
    view = reader_view_of(page, reader_views, html)
    expect_known(request, "key-results box not whole", page, view)
    problem = key_results_not_whole(view)
    assert problem is None, f"{page}: {problem}"


def test_the_explorers_tool_starts_on_the_first_screen(reader_views, html):
    """At a laptop's and a phone's size the model, the sequence and the first controls are in view before any scroll:
    the page's text before the tool is a few lines."""
    view = reader_view_of("book/explorer", reader_views, html)
    assert view["tool_top"] is not None and view["tool_top"] + 120 <= view["window"], \
        f"the explorer starts {view['tool_top']} px down in a {view['window']} px window"


def test_the_glossary_defines_every_term_with_its_anchor_and_its_values(html):
    """Every anchor of report.glossary.ANCHORS is on the built glossary page, on a definition that opens with its term
    in bold; no substitution is left unfilled; the levels it states are the code's."""
    from assignadd_core.rules.verdicts import LEARNED_LEVEL
    from assignadd_core.measure.measures import MEASURE_NAMES
    from assignadd_core.report import glossary
    path = html / "book" / "glossary.html"
    if not path.is_file():
        pytest.skip("the glossary is not in this build")
    text = path.read_text()
    assert "book/glossary" in book.TOC.read_text()
    missing = [a for a in glossary.ANCHORS if f'id="{a}"' not in text]
    assert not missing, f"anchors missing from the glossary: {missing}"
    for anchor in glossary.ANCHORS:
        after = text[text.index(f'id="{anchor}"'):][:400]
        assert "<strong>" in after or "<h2>" in after, f"#{anchor} is not on a definition: {after[:120]}"
    assert "{{" not in text and "}}" not in text.split("<script")[0], "a substitution is left unfilled"
    assert len([a for a in glossary.ANCHORS if a.startswith("measure-")]) == len(MEASURE_NAMES)
    values = glossary.values()
    assert values["composed_level"] == f"{LEARNED_LEVEL:g}" and f"reaches {values['composed_level']}" in text
    assert f"The {values['window_steps']} steps after" in text


@pytest.mark.parametrize("page", CHAPTER_PAGES + ["book/reproduce"])
def test_a_chapter_is_at_most_eight_laptop_screens_with_its_folds_closed(page, reader_views, html, request):
    view = reader_view_of(page, reader_views, html)
    if view_name(view) == "phone":
        pytest.skip("counted on a laptop (1280 × 800)")
    expect_known(request, "over eight laptop screens", page, view)
    assert screens(view) <= SCREENS_LIMIT, f"{page}: {screens(view):.1f} laptop screens (at most {SCREENS_LIMIT})"


@pytest.mark.parametrize("page", [p for p in BOOK_PAGES if p.startswith("book/chapters/")])
def test_no_figure_plays_by_itself(page, html):
    """A figure with frames (a slider over checkpoints) waits for the reader: the page never calls Plotly.animate."""
    path = html / f"{page}.html"
    if not path.is_file():
        pytest.skip(f"{page} is not in this build")
    assert "Plotly.animate(" not in path.read_text(), f"{page} starts an animation on load"


@pytest.mark.parametrize("page", BOOK_PAGES)
def test_no_page_shows_a_raw_key_where_the_core_has_a_display_name(page, reader_views, html):
    """Pool, measure, hook and quantity keys (those with an underscore or a dot) appear only in code."""
    from assignadd_core.report.names import _KEY_PATTERN
    if not (html / f"{page}.html").is_file():
        pytest.skip(f"{page} is not in this build")
    found = sorted(set(_KEY_PATTERN.findall(reader_views(page)["text"])))
    assert not found, f"{page} shows {found[:8]} (use names.readable / display_text, or put it in code)"


# Markdown emphasis left as text: a *word* or **words** between asterisks outside code (a glued string shown as plain
# text, e.g. a key-results line, keeps its asterisks)
RAW_EMPHASIS = re.compile(r"(?<![\w*])\*{1,2}[A-Za-z][^*\n]{0,60}?\*{1,2}(?![\w*])")


def test_the_raw_emphasis_pattern_finds_asterisks_and_passes_products():
    assert RAW_EMPHASIS.findall("under its first rule it read *partly*; then **reproduced** here")
    assert not RAW_EMPHASIS.findall("a*b + 2 * n, the class n1 - n2 ≡ 0, x**2, W_E*OV")


@pytest.mark.parametrize("page", BOOK_PAGES)
def test_no_page_shows_markdown_emphasis_marks(page, reader_views, html):
    if not (html / f"{page}.html").is_file():
        pytest.skip(f"{page} is not in this build")
    found = RAW_EMPHASIS.findall(reader_views(page)["text"])
    assert not found, f"{page} shows emphasis marks as text: {found[:5]} (glue it as Markdown, or drop the marks)"


# A code identifier in the open text (snake_case outside code, maths, figures and folds; TransformerLens' dotted names
# pass): a column, mode or shape key the chapter should have named in words. Folds may name runs and functions.
IDENTIFIER = re.compile(r"(?<![\w.\\])[a-z][a-z0-9]*_[a-z0-9_]*[a-z0-9](?![\w.(])")


def open_text(page_html: str) -> str:
    """The text a reader meets with every fold closed: the main column without folds, code, maths and figures."""
    from html.parser import HTMLParser

    class Reader(HTMLParser):
        SKIP = {"details", "code", "pre", "script", "style", "svg"}
        VOID = {"br", "img", "input", "meta", "link", "hr", "wbr", "source"}  # no end tag: never on the stack

        def __init__(self):
            super().__init__()
            self.stack, self.parts, self.inside = [], [], False

        def handle_starttag(self, tag, attrs):
            classes = dict(attrs).get("class") or ""
            if tag == "main":
                self.inside = True
            skip = tag in self.SKIP or any(c in classes.split() for c in ("math", "plotly-graph-div", "figure-json"))
            if tag not in self.VOID:
                self.stack.append(skip)

        def handle_endtag(self, tag):
            if tag == "main":
                self.inside = False
            if self.stack and tag not in self.VOID:
                self.stack.pop()

        def handle_data(self, data):
            if self.inside and not any(self.stack):
                self.parts.append(data)
    reader = Reader()
    reader.feed(page_html)
    return " ".join(reader.parts)


def test_the_identifier_pattern_finds_keys_and_passes_names_maths_and_folds():
    assert IDENTIFIER.findall("not at two_var_rate = 0.268; layers3_heads2 3 of 3; one_var_train 0.574") == \
        ["two_var_rate", "layers3_heads2", "one_var_train"]
    assert not IDENTIFIER.findall("blocks.0.hook_resid_pre 0.084, pos_embed.W_pos 16 × 128, 2-var union, n₁ + n₂")
    text = open_text('<main><p>read one_var_train</p><details><summary>s</summary><p>c10_onset</p></details>'
                     '<span class="math">\\(e_{n1}\\)</span><code>f_sweep</code></main>')
    assert IDENTIFIER.findall(text) == ["one_var_train"]


@pytest.mark.parametrize("page", BOOK_PAGES)
def test_no_page_shows_a_code_identifier_in_its_open_text(page, html):
    path = html / f"{page}.html"
    if not path.is_file():
        pytest.skip(f"{page} is not in this build")
    found = sorted(set(IDENTIFIER.findall(open_text(path.read_text()))))
    assert not found, f"{page} shows {found[:8]} in its open text (name them in words, or put them in code)"


@pytest.mark.parametrize("page", BOOK_PAGES)
def test_each_page_loads_mathjax_at_most_once_and_from_the_book(page, html):
    path = html / f"{page}.html"
    if not path.is_file():
        pytest.skip(f"{page} is not in this build")
    text = path.read_text()
    scripts = re.findall(r"<script[^>]*\ssrc=\"([^\"]+)\"", text)
    mathjax = [src for src in scripts if "mathjax" in src.lower()]
    assert len(mathjax) <= 1, f"{page} loads MathJax {len(mathjax)} times: {mathjax}"
    assert all(not re.match(r"(https?:)?//", src) for src in scripts), \
        f"{page} loads scripts from elsewhere: {[s for s in scripts if re.match(r'(https?:)?//', s)]}"
    if re.search(r'class="math\b', text):  # a page with math ($...$ in its Markdown) draws it with the book's copy
        assert len(mathjax) == 1 and "_static/mathjax/tex-mml-chtml.js" in mathjax[0]
        assert (html / "_static" / "mathjax" / "tex-mml-chtml.js").is_file()


def test_a_rebuild_that_differs_in_last_digits_keeps_the_committed_chapter():
    old = b'{"x": [0.30591601, 1.5], "id": "figure-1-abcdef012345", "t": "score 0.306 at 2,701"}'
    new = b'{"x": [0.30591607, 1.5], "id": "figure-1-0123456789ab", "t": "score 0.306 at 2,701"}'
    assert book.same_within_rounding(old, new)  # another CPU's seventh digit and the figure's hash
    assert not book.same_within_rounding(old, new.replace(b"0.306", b"0.311"))  # a changed result
    assert not book.same_within_rounding(old, new.replace(b"2,701", b"2,801"))
    assert not book.same_within_rounding(old, new.replace(b"score", b"scare"))


def test_the_result_box_opens_a_chapter_that_tests_a_claim(tmp_path):
    import nbformat

    from assignadd_core.report import claims, present
    root = tmp_path / "runs"
    claims.record_claim("C4", ours="5 of 5 seeds: measure 2 = 1.00", verdict="reproduced", root=root)
    chapter = tmp_path / "06_circuits.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Circuits"), nbformat.v4.new_code_cell("1")])
    nbformat.write(nb, chapter)
    assert claims.insert_result_box(chapter, root) and claims.insert_result_box(chapter, root)  # replaced, not added
    cells = nbformat.read(chapter, as_version=4).cells
    assert [c.cell_type for c in cells] == ["markdown", "markdown", "code"]
    assert "C4" in cells[1].source and "reproduced" in cells[1].source and "5 of 5 seeds" in cells[1].source
    assert "C5" in cells[1].source  # the chapter's other claim, not yet run
    other = tmp_path / "01_task_and_model.ipynb"
    nbformat.write(nb, other)
    assert not claims.insert_result_box(other, root)
    # a chapter that opens with its own key-results box gets no second box, and loses one put there before
    cells[0].source = "# Circuits\n\n" + present.KEY_RESULTS_PASTE
    nbformat.write(nbformat.v4.new_notebook(cells=cells), chapter)
    assert not claims.insert_result_box(chapter, root)
    assert [c.cell_type for c in nbformat.read(chapter, as_version=4).cells] == ["markdown", "code"]


FRONT_PAGE = """(() => {
  const column = document.querySelector("article.bd-article") || document.querySelector("main");
  const top = el => el ? el.getBoundingClientRect().top + window.scrollY : null;
  const paragraph = start => Array.from(column.querySelectorAll("p")).find(p => p.innerText.startsWith(start));
  const figure = column.querySelector("figure.circuit");
  const shown = figure ? Array.from(figure.querySelectorAll("svg")).filter(svg => svg.getBoundingClientRect().width > 0)
                       : [];
  const nodes = shown.length ? Array.from(shown[0].querySelectorAll("g.circuit-node")) : [];
  const outside = [], small = [];
  nodes.forEach(node => {
    const box = node.querySelector("rect").getBoundingClientRect();
    node.querySelectorAll("text").forEach(text => {
      const b = text.getBoundingClientRect();
      if (b.left < box.left || b.right > box.right || b.top < box.top || b.bottom > box.bottom)
        outside.push(text.textContent);
      if (parseFloat(getComputedStyle(text).fontSize) * shown[0].getBoundingClientRect().width /
          shown[0].viewBox.baseVal.width < 11) small.push(text.textContent);
    });
  });
  const ink = () => nodes.length ? getComputedStyle(nodes[0].querySelector("text")).fill : null;
  const light = ink();
  document.documentElement.dataset.theme = "dark";
  const dark = ink(), darkText = getComputedStyle(column).color;
  const tally = paragraph("Of the paper");
  return {claim: top(paragraph("The paper")), tally: top(tally),
          tally_bottom: tally ? top(tally) + tally.getBoundingClientRect().height : null,
          scoreboard: (el => el ? el.getBoundingClientRect().height : null)(column.querySelector("div.scoreboard table")),
          figure_bottom: figure ? top(figure) + figure.getBoundingClientRect().height : null, drawings: shown.length,
          parts: nodes.map(n => n.dataset.part), outside: outside, small: small, light: light, dark: dark,
          dark_text: darkText, height: window.innerHeight};
})()"""


@pytest.mark.parametrize("width", [1280, 390], ids=["laptop", "phone"])
def test_the_front_page_opens_with_the_claim_the_circuit_and_the_tally(width, chromium, server, html):
    """The paper's claim first, then the circuit diagram (one drawing for the width, its text inside its boxes and at
    least 11 px, in the page's text colour in the dark theme too), then the tally: all on a laptop's first screen."""
    from browser import Chromium

    from assignadd_core.report.palette import PARTS
    if not (html / "book/intro.html").is_file():
        pytest.skip("the intro is not in this build")
    driver = Chromium(chromium, width=width, height=SCREENS[width], phone=width < 600)
    try:
        found = driver.visit(f"{server}/book/intro.html", script=FRONT_PAGE, ready=FIGURES_DRAWN).result
    finally:
        driver.close()
    assert found["drawings"] == 1 and found["parts"] == list(PARTS), found
    assert not found["outside"] and not found["small"], found
    assert found["dark"] == found["dark_text"] != found["light"], found  # the drawing follows the theme
    assert found["claim"] is not None and found["claim"] < found["tally"], found
    assert found["claim"] < found["height"], found
    if width >= 600:  # a laptop's first screen holds the claim, the whole diagram and the whole tally
        assert found["figure_bottom"] <= found["height"] and found["tally_bottom"] <= found["height"], found
        # the scoreboard reads across the column: at most two laptop screens for the claims (it was 3,079 px tall
        # in seven narrow columns)
        assert found["scoreboard"] <= 2 * found["height"], found


def test_an_edited_static_script_replaces_its_stale_copy(tmp_path):
    """Sphinx keeps a differing copy of a static file (it only warns), and copies none when no page changed, so the
    build replaces stale copies itself."""
    static, built = tmp_path / "static", tmp_path / "built"
    static.mkdir(), built.mkdir()
    (static / "fit.js").write_text("new"), (built / "fit.js").write_text("old")
    (static / "same.css").write_text("x"), (built / "same.css").write_text("x")
    (static / "added.js").write_text("a")
    assert book.refresh_static(static, built) == ["added.js", "fit.js"]
    assert (built / "fit.js").read_text() == "new" and (built / "same.css").read_text() == "x"
    assert (built / "added.js").read_text() == "a"
    assert book.refresh_static(static, tmp_path / "not built yet") == []

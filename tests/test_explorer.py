"""The explorer page: its exporter (weights folded and stored in 24-bit rows, which models, the reader's own runs) and,
in headless Chromium, the page itself: for every shipped model its logits equal PyTorch's within 1e-3 (and the
exporter's float64 forward within 1e-9) with the same answers, on the first 200 sequences of each evaluation pool;
its reading of a sequence (query type, held-out pair or position, pool) and its random draws; one line for a
malformed sequence; at a laptop's and a phone's width no sideways scrolling, no request leaving the machine and no
console error."""
from __future__ import annotations

import functools
import http.server
import json
import re
import shutil
import subprocess
import threading

import numpy as np
import pytest
import torch

from assignadd_core.report import book, explorer
from assignadd_core.core.config import RunConfig
from assignadd_core.core.data import POOL_NAMES, Vocab, eval_pools
from assignadd_core.core.model import AssignAddTransformer
from assignadd_core.core.run_folder import Run, current_root

ROOT = book.ROOT
PAGE = "book/explorer.html"


# ------------------------------------------------------------------ the exporter
def test_rows_round_trip_within_half_a_step():
    rng = np.random.default_rng(0)
    weights = {name: rng.normal(0, 0.3, (5, 7)) for name in explorer.TENSORS}
    weights["W_E"][2] = 0.0  # an all-zero row keeps a usable scale
    weights["W_pos"][1, 3] = 40.0  # one large entry sets its row's scale alone
    data, layout = explorer.encode(weights)
    assert len(data) == len(explorer.TENSORS) * (5 * 4 + 5 * 7 * 3) and layout[0] == ["W_E", 5, 7]
    back = explorer.decode(data, layout)
    for name, value in weights.items():
        step = np.abs(value).max(axis=1, keepdims=True) / explorer.LEVELS
        assert np.all(np.abs(back[name] - value) <= step / 2 * (1 + 1e-6) + 1e-300), name
    assert np.all(back["W_E"][2] == 0) and back["W_pos"][1, 3] == pytest.approx(40.0, rel=1e-7)
    with pytest.raises(explorer.ExplorerError, match="bytes"):
        explorer.decode(data + b"\0", layout)


@pytest.fixture(scope="module")
def random_model(tiny_config):
    torch.manual_seed(0)
    return AssignAddTransformer(tiny_config).double().eval()


def test_the_folded_forward_is_the_models_forward(random_model, tiny_config):
    """The page's function (explorer.forward on the folded weights) is the hooked model's, in float64: logits at `=`,
    both patterns, the MLP's activations."""
    tokens = eval_pools(tiny_config.task)["2var_train"].tokens[:40]
    ours = explorer.forward(explorer.folded_weights(random_model), tokens, random_model.blocks[0].attn.scale)
    with torch.no_grad():
        logits, cache = random_model.run_with_cache(tokens)
    assert torch.allclose(ours["logits"], logits[:, -1], atol=1e-12, rtol=0)
    for layer in (0, 1):
        assert torch.allclose(ours[f"pattern{layer + 1}"], cache[f"blocks.{layer}.attn.hook_pattern"][:, 0], atol=1e-12)
    assert torch.allclose(ours["post"], cache["blocks.1.mlp.hook_post"][:, -1], atol=1e-12)


def test_another_shape_is_refused_in_one_line(tiny_config):
    deep = AssignAddTransformer(tiny_config.replace(n_layers=3, mlp_layers=(2,)))
    with pytest.raises(explorer.ExplorerError, match=r"paper's shape only .* 3 layers, 1 head\(s\)") as err:
        explorer.folded_weights(deep)
    assert "\n" not in str(err.value)


def model_file(path):
    """(meta, bytes) of an exported model's script."""
    meta, data = re.fullmatch(r"// .*\nAssignAddExplorer\.weights\((\{.*\}),\n\"([A-Za-z0-9+/=]*)\"\);\n",
                              path.read_text()).groups()
    import base64
    return json.loads(meta), base64.b64decode(data)


def test_export_writes_each_model_and_a_manifest_and_keeps_unchanged_ones(tiny_run, tmp_path):
    steps = Run(tiny_run.path).checkpoint_steps()
    series = [explorer.Series(str(tiny_run.path), "tiny", "", (steps[1], None))]
    lines = []
    manifest = explorer.export(tmp_path, series=series, log=lines.append)
    ids = [f"tiny-step{steps[1]:06d}", "tiny"]
    assert list(manifest["models"]) == ids and [s["model"] for s in manifest["series"][0]["stops"]] == ids
    assert manifest["series"][0]["id"] == "tiny-training" and manifest["series"][0]["state"] in ("composed", "stuck")
    assert manifest["series"][0]["stops"][0]["step"] == steps[1] and manifest["series"][0]["stops"][1]["final"]
    entry = manifest["models"]["tiny"]
    model = Run(tiny_run.path).load_model()
    meta, data = model_file(tmp_path / entry["file"])
    weights = explorer.folded_weights(model)
    assert data == explorer.encode(weights)[0] and meta["layout"] == explorer.encode(weights)[1]
    assert entry["parameters"] == sum(w.size for w in weights.values()) and entry["bytes"] == len(data)
    assert entry["logit_error"] < 1e-5 and entry["answers_agree"] == 1.0
    assert len(meta["neurons"]["k"]) == model.config.model.d_mlp and set(meta["neurons"]["active"]) <= {0, 1}
    assert explorer.read_manifest(tmp_path) == manifest
    task = manifest["tasks"][entry["task"]]
    assert task["train_pairs"].count("1") == model.config.task.n_train_pairs and task["left_only"] == [0]
    assert lines[-1].startswith("explorer: 2 model(s), 2 exported now")

    written = (tmp_path / "tiny.js").stat().st_mtime_ns
    explorer.export(tmp_path, series=series[:1], log=lines.append)  # unchanged: kept, not exported again
    assert lines[-1].startswith("explorer: 2 model(s), 0 exported now")
    assert (tmp_path / "tiny.js").stat().st_mtime_ns == written
    explorer.export(tmp_path, series=[explorer.Series(str(tiny_run.path), "tiny", "")], log=lines.append)
    assert sorted(p.name for p in tmp_path.glob("*.js")) == ["models.js", "tiny.js"]  # the dropped step is gone
    explorer.export(tmp_path, series=[explorer.Series(str(tmp_path / "nowhere"), "x", "")], log=lines.append)
    assert lines[-1].startswith("explorer: ") and "nowhere left out" in lines[-1]
    assert explorer.read_manifest(tmp_path)["series"] == []


def test_add_checks_the_run_and_lists_it(tiny_run, tiny_config, tmp_path):
    own = tmp_path / "explorer_runs.yaml"
    with pytest.raises(explorer.ExplorerError, match="not a run directory|no such|not finished"):
        explorer.add(str(tmp_path / "missing"), own=own)
    with pytest.raises(explorer.ExplorerError, match="no checkpoint at step 77"):
        explorer.add(str(tiny_run.path), steps=[77], own=own)
    added = explorer.add(str(tiny_run.path), label="my tiny run", own=own)
    assert added.label == "my tiny run" and added.steps == (None,)
    again = explorer.add(str(tiny_run.path), label="renamed", own=own)  # replaces its entry
    listed = explorer.own_series(own)
    assert [(s.run, s.label, s.group) for s in listed] == [(again.run, "renamed", "your runs")]
    assert explorer.remove(str(tiny_run.path), own=own) and explorer.own_series(own) == []
    assert not explorer.remove("never-added", own=own)


def test_the_command_line_refuses_a_missing_run_in_one_line(tmp_path, monkeypatch, capsys):
    from assignadd_core.cli import main
    monkeypatch.setenv("ASSIGNADD_RUNS", str(tmp_path))
    monkeypatch.setattr(explorer, "OWN_RUNS", tmp_path / "own.yaml")
    assert main(["explorer", "add", "nosuchrun"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: nosuchrun: ") and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "own.yaml").exists()
    assert main(["explorer", "add"]) == 2 and "needs the run" in capsys.readouterr().err


def test_the_study_ships_committed_weights_of_composed_and_stuck_seeds():
    series = explorer.study_series()
    files = []
    for item in series:
        run = Run(ROOT / "runs" / item.run)
        files += [run.model_path if s is None else run.checkpoint_path(s) for s in item.steps]
    tracked = set(subprocess.run(["git", "ls-files", "runs"], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout.split())
    missing = [str(f.relative_to(ROOT)) for f in files if str(f.relative_to(ROOT)) not in tracked]
    assert not missing, f"the explorer would ship weights that are not committed: {missing[:5]}"
    states = {explorer.group_of(Run(ROOT / "runs" / s.run), "")[1] for s in series if s.steps == (None,)}
    assert states == {"composed", "stuck"}
    across = [s for s in series if len(s.steps) > 1]
    assert across and len(across[0].steps) >= 10


# ------------------------------------------------------------------ the page, in a browser
@pytest.fixture(scope="module")
def chromium():
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.skip("chromium is not installed (tests/test_book.py installs it where it can)")
    return found


def built_is_current() -> bool:
    page = book.HTML / PAGE
    if not page.is_file() or page.stat().st_mtime < book.EXPLORER_PAGE.stat().st_mtime:
        return False
    return all((book.HTML / "_static" / p.name).is_file()
               and (book.HTML / "_static" / p.name).read_bytes() == p.read_bytes()
               for p in book.STATIC.glob("explorer*"))


@pytest.fixture(scope="module")
def manifest():
    """The built book with the current page and scripts, and its models exported now (those unchanged are kept)."""
    if not built_is_current():
        book.build()
    return explorer.export(book.HTML / "_static" / "explorer", log=lambda line: None)


@pytest.fixture(scope="module")
def server(manifest):
    handler = functools.partial(_Quiet, directory=str(book.HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


READY = "document.querySelector('.ae-result') && document.querySelector('.ae-result').children.length > 0"


@pytest.fixture(scope="module")
def page(chromium, server):
    """The explorer page in a laptop's window, loaded once."""
    from browser import Chromium
    driver = Chromium(chromium, width=1280, height=900)
    report = driver.visit(f"{server}/{PAGE}", ready=READY)
    assert not report.errors and not report.external, report
    yield driver
    driver.close()


def evaluate(driver, expression: str, timeout: float = 240):
    answer = driver.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True,
                         timeout=timeout)
    if "exceptionDetails" in answer:
        raise AssertionError(f"the page's script failed: {answer['exceptionDetails']}")
    return answer["result"].get("value")


def shipped_ids() -> list[str]:
    """Every model the explorer ships (the study's and the reader's runs): known before anything is exported."""
    ids = []
    for item in explorer.study_series() + explorer.own_series():
        ids += [item.model_id(step) for step in item.steps if item.model_id(step) not in ids]
    return ids


@pytest.mark.parametrize("model_id", shipped_ids())
def test_the_pages_logits_are_pytorchs_for_every_shipped_model(model_id, manifest, page):
    assert model_id in manifest["models"], f"{model_id} was not exported (its run is not in the runs folder?)"
    series = next(s for s in explorer.study_series() + explorer.own_series()
                  if model_id in [s.model_id(step) for step in s.steps])
    step = next(step for step in series.steps if series.model_id(step) == model_id)
    model = Run(series.path(current_root())).load_model(step).eval()
    tokens = explorer.check_tokens(model.config.task)
    with torch.no_grad():
        pytorch = model(tokens)[:, -1].double()
    exported = explorer.forward(explorer.decode(*explorer.encode(explorer.folded_weights(model))), tokens,
                                model.blocks[0].attn.scale)["logits"]
    flat = json.dumps(tokens.flatten().tolist())
    ours = torch.tensor(evaluate(page, f"AssignAddExplorer.logits({json.dumps(model_id)}, {flat}, {tokens.shape[1]})"),
                        dtype=torch.float64).reshape(pytorch.shape)
    assert float((ours - exported).abs().max()) < 1e-9, "the page computes another function than explorer.forward"
    error = (ours - pytorch).abs().amax(-1)
    assert float(error.max()) < 1e-3, f"{model_id}: logits differ from PyTorch's by up to {float(error.max()):.2e}"
    differ = torch.nonzero(ours.argmax(-1) != pytorch.argmax(-1)).flatten().tolist()
    assert not differ, f"{model_id}: {len(differ)} of {len(tokens)} answers differ, e.g. sequence {differ[0]}"
    assert manifest["models"][model_id]["logit_error"] == pytest.approx(float(error.max()), rel=1e-6, abs=1e-12)


def test_the_pages_patterns_and_neurons_are_pytorchs(manifest, page):
    model = Run(ROOT / "runs" / "seed42").load_model().eval()
    tokens = explorer.check_tokens(model.config.task)[::180]  # one sequence of each pool, and one more
    with torch.no_grad():
        _, cache = model.run_with_cache(tokens)
    run = evaluate(page, "AssignAddExplorer.loadModel('seed42').then(m => " + json.dumps(tokens.tolist())
                   + ".map(t => { const r = m.run(t); return [Array.from(r.pattern1), Array.from(r.pattern2),"
                     " Array.from(r.post)]; }))")
    for k, (p1, p2, post) in enumerate(run):
        n = tokens.shape[1]
        for layer, pattern in ((0, p1), (1, p2)):
            want = cache[f"blocks.{layer}.attn.hook_pattern"][k, 0]
            assert np.abs(np.reshape(pattern, (n, n)) - want.numpy()).max() < 1e-4, (k, layer)
        assert np.abs(np.array(post) - cache["blocks.1.mlp.hook_post"][k, -1].numpy()).max() < 1e-3, k


def test_the_page_reads_each_pool_sequence_as_its_pool(manifest, page):
    """Every sequence of the nine pools is well formed to the page, of its pool's kind, with the pool's answer."""
    task = RunConfig().task
    pools = eval_pools(task)
    for name in POOL_NAMES:
        batch = pools[name][:200]
        found = evaluate(page, "AssignAddExplorer.loadModel('seed42').then(m => "
                               f"{json.dumps(batch.tokens.tolist())}.map(t => {{ const q = m.task.check(t);"
                               " return q.error || [q.pool && q.pool.name, q.answer]; }))")
        assert all(isinstance(f, list) for f in found), f"{name}: {next(f for f in found if not isinstance(f, list))}"
        assert {f[0] for f in found} == {name}, f"{name} read as {sorted({str(f[0]) for f in found})}"
        assert [f[1] for f in found] == batch.answers.tolist()


def test_random_draws_are_well_formed_and_of_their_kind(manifest, page):
    found = evaluate(page, """AssignAddExplorer.loadModel('seed42').then(m => {
      let state = 42;  // a seeded generator (mulberry32), so that the draws are the same at every run
      const random = () => { state = (state + 0x6D2B79F5) | 0; let t = Math.imul(state ^ (state >>> 15), 1 | state);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t; return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
      const seen = {};
      for (const kind of Object.keys(AssignAddExplorer.KINDS)) {
        seen[kind] = [];
        for (let k = 0; k < 60; k++) {
          const t = m.task.draw(kind, random), q = m.task.check(t);
          seen[kind].push(q.error ? ["error", q.error, m.task.format(t)] : [q.type, q.heldOutPair, q.unseen.length,
                                                                          q.pool && q.pool.name, m.task.format(t)]);
        }
      }
      return seen; })""")
    vocab = Vocab(RunConfig().task)
    for kind, draws in found.items():
        assert all(d[0] != "error" for d in draws), f"{kind}: {next(d for d in draws if d[0] == 'error')}"
        assert all(len(vocab.encode(d[-1])) == 16 for d in draws)
        types, held, unseen, pools = ({d[i] for d in draws} for i in range(4))
        if kind in ("0-var", "1-var-left", "1-var-right", "2-var"):
            assert types == {kind.replace("-left", " (left)").replace("-right", " (right)")} and held == {False}
            assert unseen == {0}
        elif kind == "held-out-pair":
            assert held == {True} and unseen == {0} and types == {"0-var", "1-var (left)", "1-var (right)", "2-var"}
        else:
            assert held == {False} and 0 not in unseen and len(pools) >= 2  # 1-var and 2-var var-restricted


MALFORMED = {  # sequence -> what its one line must say, and the token marked (its position; None: no one token)
    "": ("Type a sequence of 16 tokens", None),
    "PAD PAD a 40 PAD j 18 PAD PAD PAD k 9 + a 27": ("has 15 tokens; it needs 16", None),
    "PAD PAD a 40 PAD j 18 PAD PAD PAD k 9 + a 27 = =": ("has 17 tokens", None),
    "PAD PAD a 40 PAD j 18 PAD PAD PAD k 9 + a 72 =": ('"72" at position 14 is not a token', "14"),
    "PAD PAD a 40 PAD j 18 PAD PAD PAD k 9 + c 27 =": ("The query uses c, which no assignment", "13"),
    "PAD PAD a 40 PAD a 18 PAD PAD PAD k 9 + a 27 =": ("Variable a is assigned twice (positions 2 and 5)", "5"),
    "PAD PAD a PAD 40 j 18 PAD PAD PAD k 9 + a 27 =": ("Variable a at position 2 is not followed by its value", "2"),
    "PAD PAD 40 a PAD j 18 PAD PAD PAD k 9 + a 27 =": ("The number 40 at position 2 follows no variable", "2"),
    "PAD PAD a 40 PAD j 18 PAD PAD PAD k 9 a 27 + =": ("The last four tokens must be the query + lhs rhs =", "12"),
    "PAD PAD a 40 PAD j 18 PAD PAD PAD k 9 + PAD 27 =": ("left operand must be a number or a variable, not PAD", "13"),
    "PAD PAD a 40 PAD j 18 + PAD PAD k 9 + a 27 =": ("+ at position 7: the first 12 tokens hold only assignments", "7"),
}


def test_a_malformed_sequence_gets_one_line_and_keeps_the_page(manifest, page):
    script = """((text) => { const root = document.querySelector('div.ae[data-mode=full]');
      const input = root.querySelector('input.ae-seq'); input.value = text;
      input.dispatchEvent(new Event('input'));
      const msg = root.querySelector('.ae-message'), bad = root.querySelector('.ae-chip.ae-bad');
      return [msg.textContent, msg.className, root.querySelector('.ae-result').children.length,
              root.querySelector('.ae-result').className, bad && bad.querySelector('small').textContent]; })"""
    for text, (needle, blamed) in MALFORMED.items():
        message, classes, shown, result, bad = evaluate(page, f"{script}({json.dumps(text)})")
        assert needle in message and "ae-error" in classes, (text, message)
        assert bad == blamed, f"{text!r}: the chip marked is {bad}, not {blamed}"
        named = re.search(r"\bposition (\d+)", message)  # the message counts positions as the chips do, from 0
        assert named is None or named.group(1) == bad, f"{text!r}: the message says {named.group(0)}, the chip {bad}"
        assert "\n" not in message and len(message) < 240, message
        assert shown > 0 and "ae-stale" in result, f"{text!r}: the last answer should stay, dimmed"
    message, classes, shown, result, bad = evaluate(page, f"{script}('PAD PAD a 40 PAD j 18 PAD PAD PAD k 9 + a 27 =')")
    assert message == "" and "ae-stale" not in result and bad is None
    message, classes, _, _, _ = evaluate(page, f"{script}('PAD PAD a 40 PAD j 18 PAD PAD PAD k 9 + a a =')")
    assert message.startswith("Outside the task, run anyway: one variable on both sides") and "ae-note" in classes


# Every control used once (each draw, the training slider end to end, a token hovered), then the page measured.
EXERCISE = """(async () => {
  const root = document.querySelector('div.ae[data-mode=full]');
  const settle = () => new Promise(r => setTimeout(r, 50));
  const loading = () => /Loading/.test(root.querySelector('.ae-message').textContent);
  const idle = async () => { for (let k = 0; k < 200 && loading(); k++) await settle(); };
  for (const button of root.querySelectorAll('.ae-draws button')) { button.click(); await settle(); }
  const select = root.querySelector('select.ae-series');
  select.value = Array.from(select.options).find(o => /slider/.test(o.text)).value;
  select.dispatchEvent(new Event('change')); await idle();
  const slider = root.querySelector('input.ae-slider');
  const steps = [];
  for (const at of [0, Math.floor(Number(slider.max) / 2), Number(slider.max)]) {
    slider.value = String(at); slider.dispatchEvent(new Event('input')); await idle();
    steps.push(root.querySelector('.ae-step').textContent);
  }
  root.querySelectorAll('.ae-chip')[3].dispatchEvent(new Event('mouseenter'));
  const doc = document.documentElement;
  const wide = Array.from(root.querySelectorAll('*'))
    .filter(el => el.getBoundingClientRect().right > doc.clientWidth + 1).map(el => el.tagName + '.' + el.className);
  return {scroll: doc.scrollWidth, width: doc.clientWidth, wide: wide.slice(0, 5), steps,
          focus: root.querySelector('.ae-focus').textContent,
          maps: root.querySelectorAll('.ae-map').length, groups: root.querySelectorAll('.ae-group').length,
          message: root.querySelector('.ae-message').textContent};
})()"""


@pytest.mark.parametrize("width", [1280, 390], ids=["laptop", "phone"])
def test_the_page_works_at_a_laptops_and_a_phones_width(width, chromium, server, manifest):
    from browser import Chromium
    driver = Chromium(chromium, width=width, height=900)
    try:
        report = driver.visit(f"{server}/{PAGE}", ready=READY, script=EXERCISE)
    finally:
        driver.close()
    assert not report.external, f"requests that would leave the machine: {report.external[:3]}"
    assert not report.errors, " | ".join(report.errors[:5])
    found = report.result
    assert found["scroll"] <= found["width"] and not found["wide"], found
    assert found["steps"][0].startswith("1 · before the jump") and "(final)" in found["steps"][-1], found["steps"]
    assert "at position 3: layer 1 attends to" in found["focus"], found["focus"]
    assert found["maps"] == 2 and found["groups"] >= 3 and found["message"] == "", found


def test_the_compact_version_in_the_circuits_chapter_runs_and_links_the_explorer(chromium, server, manifest):
    from browser import Chromium
    driver = Chromium(chromium, width=390, height=900)
    try:
        report = driver.visit(f"{server}/book/chapters/06_circuits.html", ready=READY, script="""(() => {
          const root = document.querySelector('div.ae[data-mode=compact]');
          const link = Array.from(document.querySelectorAll('a')).find(a => /explorer\\.html#model=/.test(a.href));
          return {answer: root.querySelector('.ae-answer').textContent, link: link ? link.href : null,
                  scroll: document.documentElement.scrollWidth, width: document.documentElement.clientWidth}; })()""")
    finally:
        driver.close()
    assert not report.errors and not report.external, report
    found = report.result
    assert found["answer"].startswith("8 the model's answer"), found
    assert found["link"] and "seq=PAD%20PAD%20a%2040" in found["link"], found
    assert found["scroll"] <= found["width"], found


def test_the_page_works_opened_from_disk(chromium, manifest):
    """Opened as a file (no server), the page loads its models as scripts: a browser reads no file of such a page."""
    from browser import Chromium
    driver = Chromium(chromium, width=1280, height=900)
    try:
        report = driver.visit((book.HTML / PAGE).resolve().as_uri(), ready=READY,
                              script="document.querySelector('div.ae .ae-answer').textContent")
    finally:
        driver.close()
    assert not report.errors and not report.external, report
    assert report.result.startswith("8 the model's answer"), report.result


# ------------------------------------------------------------------ links, colours and what a checkpoint does
EXAMPLE = "PAD PAD a 40 PAD j 18 PAD PAD PAD k 9 + a 27 ="
LINK_READ = """(() => { const root = document.querySelector('div.ae[data-mode=full]');
  const notice = root.querySelector('.ae-notice'), answer = root.querySelector('.ae-answer');
  return {notice: notice && !notice.hidden ? notice.textContent : "", message: root.querySelector('.ae-message').textContent,
          answer: answer ? answer.textContent : null, model: root.querySelector('select.ae-series').value,
          step: root.querySelector('.ae-step').textContent, sequence: root.querySelector('input.ae-seq').value}; })()"""
LINKS = {  # the hash -> what the notice must say ("" for none), the model shown, the step's text, the sequence
    "#seq=PAD%20PAD%2": ("its seq (\"PAD%20PAD%2\") is cut short", "seed42", "40,000 (final)", EXAMPLE),
    f"#model=nosuchrun&seq={EXAMPLE.replace(' ', '%20').replace('+', '%2B').replace('=', '%3D')}":
        ('it names the model "nosuchrun", which this page does not have', "seed42", "40,000 (final)", EXAMPLE),
    "#model=seed42-training&step=123": ("step 123 is not one of", "seed42-training", "40,000 (final)", EXAMPLE),
    "#model=seed42-training&step=2601&seq=PAD%20PAD%20b%205%20PAD%20j%2018%20PAD%20PAD%20PAD%20k%209%20%2B%20b%2027%20%3D":
        ("", "seed42-training", "2,601", "PAD PAD b 5 PAD j 18 PAD PAD PAD k 9 + b 27 ="),
}


def test_a_link_cut_short_or_naming_what_the_page_lacks_gets_a_message_and_a_working_page(chromium, server):
    """A link whose sequence is cut in the middle of an escape, or that names a model or a step the build does not have:
    a notice says which part could not be followed, and the page works (the example, or the link's sequence, answered).
    A whole link opens what it names, without a notice."""
    from browser import Chromium
    driver = Chromium(chromium, width=1280, height=900)
    try:
        found = {}
        for link in LINKS:
            driver.visit("about:blank")
            found[link] = driver.visit(f"{server}/{PAGE}{link}", ready=READY, script=LINK_READ)
    finally:
        driver.close()
    for link, (notice, model, step, sequence) in LINKS.items():
        report, seen = found[link], found[link].result
        assert not report.errors and not report.external, (link, report.errors)
        assert (notice in seen["notice"]) if notice else seen["notice"] == "", (link, seen)
        assert seen["message"] == "" and seen["answer"] and seen["model"] == model, (link, seen)
        assert seen["step"].startswith(step) and seen["sequence"] == sequence, (link, seen)


def test_the_explorer_draws_in_the_palettes_colours(page):
    """Layer 1's attention in the copy head's colour, layer 2's in the lookup's, the operands' values in the colour of
    the part that moves them, the neurons in the MLP's (assignadd_core/report/palette.py), not colours of its own."""
    from assignadd_core.report.palette import PARTS
    colours = evaluate(page, """(() => { const root = document.querySelector('div.ae[data-mode=full]');
      const input = root.querySelector('input.ae-seq');
      input.value = 'PAD PAD a 40 PAD j 18 PAD PAD PAD k 9 + a 27 ='; input.dispatchEvent(new Event('input'));
      const style = (selector, property) => getComputedStyle(root.querySelector(selector))[property];
      const cells = Array.from(root.querySelectorAll('figure.ae-map')).map(map =>
        Array.from(map.querySelectorAll('.ae-cell:not(.ae-masked)')).map(c => c.style.backgroundColor).find(c => c));
      return {bar1: style('.ae-bars i.ae-bar1', 'backgroundColor'), bar2: style('.ae-bars i.ae-bar2', 'backgroundColor'),
              values: style('.ae-chip.ae-source', 'borderTopColor'), neurons: style('.ae-squares i', 'backgroundColor'),
              cells: cells}; })()""")

    def rgb(hex_colour):
        return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))

    def parsed(css):
        return tuple(int(float(v)) for v in re.findall(r"[\d.]+", css)[:3])
    assert parsed(colours["bar1"]) == rgb(PARTS["copy"]) and parsed(colours["bar2"]) == rgb(PARTS["lookup"]), colours
    assert [parsed(c) for c in colours["cells"]] == [rgb(PARTS["copy"]), rgb(PARTS["lookup"])], colours
    assert parsed(colours["values"]) == rgb(PARTS["move"]) and parsed(colours["neurons"]) == rgb(PARTS["mlp"]), colours


def test_what_the_page_says_of_a_checkpoint_is_what_the_model_does_there(manifest, page):
    """The page's line on a checkpoint (explorer.js: describeCheckpoint, from AssignAddExplorer.behaviour) counts, on
    the same drawn sequences, the answers PyTorch's model gets right there and the sequences whose layer-2 attention
    from `=` has its top two on the operands' values: before the jump (step 2,601) too, where the model already
    answers most 1-var queries with their variable on the left."""
    series = next(s for s in explorer.study_series() if len(s.steps) > 1)
    step = max(s for s in series.steps if s is not None and s < explorer.phases_of(Run(series.path(current_root())))["jump"])
    model_id = series.model_id(step)
    drawn = evaluate(page, f"""AssignAddExplorer.loadModel({json.dumps(model_id)}).then(m => {{
      const kinds = ["1-var-left", "1-var-right", "2-var", "held-out-position"], out = {{}};
      for (const kind of kinds) {{
        const random = AssignAddExplorer.seeded(1);
        out[kind] = Array.from({{length: 100}}, () => {{ const t = m.task.draw(kind, random), q = m.task.check(t);
          return [t, q.answer, q.lhs.source, q.rhs.source]; }});
      }}
      return {{drawn: out, said: AssignAddExplorer.behaviour(m, kinds, 100)}}; }})""")
    model = Run(series.path(current_root())).load_model(step).eval()
    for kind, rows in drawn["drawn"].items():
        tokens = torch.tensor([r[0] for r in rows])
        with torch.no_grad():
            logits, cache = model.run_with_cache(tokens)
        right = int((logits[:, -1].argmax(-1) == torch.tensor([r[1] for r in rows])).sum())
        top = cache["blocks.1.attn.hook_pattern"][:, 0, -1].topk(2, dim=-1).indices.sort(-1).values
        values = torch.tensor([sorted(r[2:]) for r in rows])
        finds = int((top == values).all(-1).sum())
        assert drawn["said"][kind] == {"drawn": 100, "right": right, "finds": finds}, (kind, drawn["said"][kind], right, finds)
    assert drawn["said"]["1-var-left"]["right"] > 50, "before the jump the model already answers most of these"

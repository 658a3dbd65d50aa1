"""The README's list of what runs/ holds is written from runs/ itself (`runs_table`, by the book build): it is current,
and it names every folder and sweep there, one it cannot describe included."""
import json

from assignadd_core.report import book, front_page, runs_table
from assignadd_core.experiments.sweep import SWEEPS


def test_the_readme_lists_what_runs_holds_now(tmp_path):
    copy = tmp_path / "README.md"
    copy.write_text(book.README.read_text())
    front_page.update(copy, {runs_table.MARKERS: runs_table.committed_runs(book.ROOT / "runs")})
    assert copy.read_text() == book.README.read_text(), "README.md's list of runs/ is stale: run the book build"


def _run(folder, steps, one_var=None):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"train": {"steps": steps}}))
    if one_var is not None:
        (folder / "final.json").write_text(json.dumps({"pools": {"1var_train": one_var}}))


def test_every_folder_and_sweep_is_listed_with_its_finished_runs(tmp_path):
    for seed, one_var in ((42, 0.99), (43, 0.5), (44, 0.95), (45, 0.4)):
        _run(tmp_path / f"seed{seed}", 40000, one_var)
    _run(tmp_path / "seed43_to120000", 120000)  # still training: no final.json
    _run(tmp_path / "rescue" / "seed43_continue", 50000, 0.6)
    _run(tmp_path / "somewhere" / "a" / "run", 100, 0.1)
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "sweeps" / "c9_power.json").write_text("{}")
    (tmp_path / "sweeps" / "r2_power.json").write_text("{}")
    (tmp_path / "sweeps" / "old_sweep.jsonl").write_text("")
    table = runs_table.committed_runs(tmp_path)
    rows = {line.split(" | ")[0].lstrip("| "): line for line in table.splitlines()[2:]}
    main = rows["`seed42` … `seed45`"]
    assert "40,000 steps each; composed: seed42, seed44" in main and main.endswith("| 4 of 4 finished |")
    assert rows["`seed43_to120000`"].endswith("composed: none | 0 of 1 finished |")
    assert "`seed43`'s final state" in rows["`rescue/`"] and "50,000 steps | 1 of 1 finished" in rows["`rescue/`"]
    assert runs_table.UNKNOWN in rows["`somewhere/`"]  # a folder nobody describes is listed, never left out
    assert "power calculation" in rows["`sweeps/c9_power.json`"]
    assert "power r2" in rows["`sweeps/r2_power.json`"]
    assert "does not plan" in rows["`sweeps/old_sweep.jsonl`"]
    stated = rows["`sweeps/`: stated, not run yet"]  # no results file: every sweep is stated, none run
    assert all(f"`{name}` ({len(sweep.points())} points)" in stated for name, sweep in SWEEPS.items())

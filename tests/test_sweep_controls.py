"""Every sweep point carries the swap control (C2 on the sweep): held-out accuracy on the pairs whose swap
(n2, n1) is held out too; `sweep annotate` fills it in for points recorded before it, from their scratch models."""
import json
import math
import shutil

import pandas as pd
import pytest

from assignadd_core.experiments import sweep as sweeps
from assignadd_core.experiments.sweep import named
from assignadd_core.analysis.controls import swap_heldout_accuracy
from assignadd_core.cli import main
from assignadd_core.core.run_folder import Run
from assignadd_core.experiments.sweep import Sweep, read_records, results_frame, results_path, run_sweep
from tiny import TINY

pytestmark = pytest.mark.usefixtures("single_thread")
# at N = 7, f = 0.6 holds out 20 pairs (14 whose swap is held out too); f = 0.9 holds out 5, every swap trained on
GRID = {"task.train_fraction": (0.6, 0.9)}


def tiny_sweep() -> Sweep:
    return Sweep("tiny", GRID, metric="0var_heldout", base=TINY, seeds=(1,))


def by_fraction(records):
    return {r["params"]["task.train_fraction"]: r for r in records}


def test_every_point_records_the_swap_control_of_its_final_model(tmp_path):
    sweep = tiny_sweep()
    assert run_sweep(sweep, results_dir=tmp_path, workers=1, progress=False)["done"] == 2
    records = by_fraction(read_records(results_path(sweep, tmp_path)))
    for fraction, record in records.items():
        expected = swap_heldout_accuracy(Run(tmp_path / "scratch" / record["key"]).load_model())
        for name, value in record["controls"].items():
            assert value == expected[name] or (value is None and math.isnan(expected[name]))
    assert records[0.6]["controls"]["n_swap_heldout"] == 14 and 0 <= records[0.6]["controls"]["swap_heldout"] <= 1
    assert records[0.9]["controls"]["swap_heldout"] is None and records[0.9]["controls"]["n_swap_heldout"] == 0

    csv = pd.read_csv(tmp_path / "tiny.csv").set_index("train_fraction")
    assert {"swap_heldout", "swap_in_training", "n_swap_heldout", "n_swap_in_training"} <= set(csv.columns)
    assert csv.loc[0.6, "swap_heldout"] == pytest.approx(records[0.6]["controls"]["swap_heldout"])
    assert math.isnan(csv.loc[0.9, "swap_heldout"])
    status, done = sweeps.sweep_tables(sweep, tmp_path)
    assert {"swap_heldout", "swap_in_training"} <= set(status.columns) & set(done.columns)


def test_annotate_fills_in_old_records_and_names_those_without_weights(tmp_path, monkeypatch, capsys):
    sweep = tiny_sweep()
    monkeypatch.setattr(named, "study_sweeps", lambda real=named.study_sweeps: {**real(), "tiny": sweep})
    run_sweep(sweep, results_dir=tmp_path, workers=1, progress=False)
    path = results_path(sweep, tmp_path)
    current = by_fraction(read_records(path))
    old = [{k: v for k, v in r.items() if k != "controls"} for r in current.values()]  # recorded before controls
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in old))
    shutil.rmtree(tmp_path / "scratch" / current[0.9]["key"])  # its final model is gone
    frame = results_frame(sweep, tmp_path)
    assert frame["swap_heldout"].isna().all() and frame["swap_in_training"].isna().all()

    assert main(["sweep", "annotate", "tiny", "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "tiny: 1 done points annotated" in out and "1 lack their final model" in out
    assert f"not annotated: train_fraction=0.9, seed 1 ({current[0.9]['key']})" in out
    lines = path.read_text().splitlines()
    assert [json.loads(line) for line in lines[:2]] == old and len(lines) == 3  # appended, nothing rewritten
    latest = by_fraction(sweeps.latest_records(path).values())
    assert latest[0.6]["controls"] == current[0.6]["controls"]  # the same numbers as when it was run
    assert {k: v for k, v in latest[0.6].items() if k not in ("controls", "annotated_at")} == old[0]
    assert "controls" not in latest[0.9]

    frame = results_frame(sweep, tmp_path).set_index("train_fraction")
    assert frame.loc[0.6, "swap_heldout"] == current[0.6]["controls"]["swap_heldout"]
    assert math.isnan(frame.loc[0.9, "swap_in_training"])
    csv = pd.read_csv(tmp_path / "tiny.csv").set_index("train_fraction")
    assert csv.loc[0.6, "swap_in_training"] == pytest.approx(current[0.6]["controls"]["swap_in_training"])

    assert main(["sweep", "annotate", "tiny", "--results-dir", str(tmp_path)]) == 0  # nothing left to do
    assert "0 done points annotated" in capsys.readouterr().out and len(path.read_text().splitlines()) == 3

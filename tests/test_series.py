"""The measurement layer: a quantity is computed once per (run, weights, version), cached beside the run, and a
stale, edited or truncated cache is recomputed (said in one line), never read as a number."""
import multiprocessing
import shutil

import pandas as pd
import pytest
import torch

from assignadd_core.analysis import quantities, series
from assignadd_core.analysis import circuits, diagnostics
from assignadd_core.analysis import generalization as gen
from assignadd_core.core.config import RunConfig
from assignadd_core.core.data import VAR_RESTRICTED, eval_pools
from assignadd_core.core.model import AssignAddTransformer
from assignadd_core.analysis.quantities import QUANTITIES, Quantity
from assignadd_core.core.run_folder import Run


@pytest.fixture
def run(tiny_run, tmp_path):
    """A private copy of the shared tiny run (checkpoints at 1, 11, 21, 30 and the final model)."""
    return Run(shutil.copytree(tiny_run.path, tmp_path / "tiny"))


@pytest.fixture
def counted(monkeypatch):
    """A cheap test quantity that counts its computations: the norm of W_E, and the step."""
    calls = []

    def compute(model, step):
        calls.append(step)
        return {"we_norm": float(model.W_E.detach().norm()), "step_seen": float(step)}

    monkeypatch.setitem(QUANTITIES, "we_norm", Quantity("we_norm", 1, ("we_norm", "step_seen"), compute, "test"))
    return calls


def messages():
    said = []
    return said, said.append


def test_logged_quantities_are_read_from_the_metrics_table(run):
    table = series.series(run, "pools")
    metrics = run.metrics().set_index("step")
    pd.testing.assert_frame_equal(table, metrics[list(QUANTITIES["pools"].columns)])
    final = series.series(run, "measures", "final")
    assert final.index.tolist() == [30] and final.columns.tolist() == list(QUANTITIES["measures"].columns)


def test_a_quantity_is_computed_once_then_read_from_the_cache(run, counted):
    first = series.series(run, "we_norm")  # every checkpoint and the final model
    assert first.index.tolist() == [1, 11, 21, 30, 30] and len(counted) == 5
    assert first["step_seen"].tolist() == [1, 11, 21, 30, 30]
    again = series.series(run, "we_norm", [11, "final"])
    assert len(counted) == 5  # nothing recomputed
    assert again["we_norm"].tolist() == [first.loc[11, "we_norm"], first["we_norm"].iloc[-1]]
    assert again.loc[11, "we_norm"] == pytest.approx(float(run.load_model(11).W_E.norm()))
    assert (run.path / "series.csv").read_text().count("\n") == 1 + 5 * 2


def test_a_new_version_or_other_weights_are_recomputed_and_said(run, counted, monkeypatch):
    series.series(run, "we_norm", [1, 11])
    q = QUANTITIES["we_norm"]
    monkeypatch.setitem(QUANTITIES, "we_norm", Quantity(q.name, 2, q.columns, q.compute, q.description))
    said, say = messages()
    series.series(run, "we_norm", [1], say=say)
    assert counted == [1, 11, 1] and "other weights, another version or another run" in said[0]
    # other weights under the same file name (a run trained again): recomputed, not read
    other = run.load_model(21)
    from assignadd_core.core.checkpoint import save_model
    save_model(other, run.checkpoint_path(11))
    value = series.series(run, "we_norm", [11], say=say).loc[11, "we_norm"]
    assert counted[-1] == 11 and value == pytest.approx(float(other.W_E.norm()))


def test_an_edited_value_is_never_read(run, counted):
    before = series.series(run, "we_norm", [11]).loc[11, "we_norm"]
    path = run.path / "series.csv"
    lines = path.read_text().splitlines()
    fields = lines[1].split(",")
    fields[6] = "123.0"  # a hand-edited value, check left as it was
    path.write_text("\n".join([lines[0], ",".join(fields), *lines[2:]]) + "\n")
    said, say = messages()
    after = series.series(run, "we_norm", [11], say=say).loc[11, "we_norm"]
    assert after == before != 123.0 and len(counted) == 2
    assert len(said) == 1 and "line(s) 2 fail their check" in said[0]


def test_a_truncated_cache_is_recomputed_and_rewritten_cleanly(run, counted):
    series.series(run, "we_norm", [1, 11])
    path = run.path / "series.csv"
    path.write_text(path.read_text()[:-7])  # killed while writing the last line
    said, say = messages()
    table = series.series(run, "we_norm", [1, 11, 21], say=say)
    assert counted == [1, 11, 11, 21] and len(said) == 1 and "line(s) 5 fail their check" in said[0]
    assert table.loc[11, "step_seen"] == 11
    # the file was rewritten without the cut line: it reads cleanly from now on
    assert len(series.read_cache(run, say=lambda m: pytest.fail(m))) == 3 * 2


def test_a_cache_copied_to_another_run_is_not_read(run, counted, tmp_path, tiny_config):
    series.series(run, "we_norm", ["final"])
    other = Run(shutil.copytree(run.path, tmp_path / "other"))
    (other.path / "config.json").write_text(tiny_config.replace(lr=2e-3).to_json())  # another run, same weights
    series.series(other, "we_norm", ["final"])
    assert len(counted) == 2


def _fill(path: str, steps: list) -> list[float]:
    torch.set_num_threads(1)
    return series.series(Run(path), "exact", steps, say=lambda m: None)["0var_heldout"].tolist()


def test_two_processes_filling_one_cache_do_not_corrupt_it(run):
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        a, b = pool.starmap(_fill, [(str(run.path), [1, 11, 21, "final"]), (str(run.path), ["final", 21, 11, 1])])
    assert a == b[::-1]
    said, say = messages()
    cache = series.read_cache(run, say)
    assert not said and len({k for k in cache if k[0] == "exact"}) == 4 * 2
    exact = series.series(run, "exact", "final", say=lambda m: pytest.fail(m))
    assert exact.loc[30, "0var_heldout"] == pytest.approx(run.final()["exact"]["0var_heldout"])


def test_seed_table_reads_every_run(run, counted, tmp_path):
    other = Run(shutil.copytree(run.path, tmp_path / "second"))
    table = series.seed_table({"a": run, "b": other}, "we_norm")
    assert table.index.tolist() == ["a", "b"] and table["we_norm"].nunique() == 1


def test_values_of_weights_not_kept_are_read_as_recorded(run, counted):
    """A committed run keeps its series.csv but not every checkpoint: the values computed there stay readable."""
    first = series.series(run, "we_norm", [11, 21])
    run.checkpoint_path(11).unlink()
    again = series.series(run, "we_norm", [11, 21])
    pd.testing.assert_frame_equal(first, again)
    assert len(counted) == 2
    from assignadd_core.core.checkpoint import CheckpointError
    with pytest.raises(CheckpointError, match="computed only where the weights are kept"):
        series.series(run, "exact", [11])  # never computed there, and the weights are gone


def test_unknown_quantity_and_missing_checkpoint_are_one_line_errors(run):
    with pytest.raises(KeyError, match="unknown quantity 'nope'"):
        series.series(run, "nope")
    from assignadd_core.core.checkpoint import CheckpointError
    with pytest.raises(CheckpointError, match="no weights at step 5"):
        series.series(run, "exact", [5])


def test_every_quantity_has_columns_and_a_positive_version():
    for name, q in quantities.QUANTITIES.items():
        assert q.name == name and q.version >= 1 and q.columns and len(set(q.columns)) == len(q.columns)
    assert set(quantities.LOGGED_VERSIONS) == {"pools", "measures", "probe"}


@pytest.mark.parametrize("name, size", [("restricted_by_side", 3 * 2 * 3), ("eq_variable_scores", 5 * 4 * 2)])
def test_the_chapters_quantities_take_their_columns_from_the_task(name, size, tiny_config):
    """3 var-restricted pools x 2 forbidden (variable, side) x 3 statistics; 5 tables x 4 variables x 2 sides."""
    q = QUANTITIES[name]
    assert q.columns_for(RunConfig()) == q.columns
    values = q.compute(AssignAddTransformer(tiny_config).eval(), 0)
    assert list(values) == list(q.columns_for(tiny_config)) and len(values) == size


def test_tables_rebuilt_from_the_cache_are_the_models_own(run):
    """What the chapters read back through `series` (a second call: from the file) equals, number for number, what
    they computed on the checkpoint before: the var-restricted breakdown, the scores from `=`, the circuit maps."""
    task, model = run.config.task, run.load_model(11).eval()
    for name in ("restricted_by_side", "eq_variable_scores", "circuit_maps"):
        series.series(run, name, [11])
    read = {name: series.series(run, name, [11], say=lambda m: pytest.fail(m))
            for name in ("restricted_by_side", "eq_variable_scores", "circuit_maps")}
    expected = []
    for pool in VAR_RESTRICTED:
        rows = gen.operand_rows(gen.evaluate_table(model, eval_pools(task)[pool]))
        table = gen.accuracy_by(rows[rows["forbidden"]], ["variable", "side"]).reset_index()
        expected.append(table.assign(step=11, pool=pool))
    expected = pd.concat(expected, ignore_index=True)[["step", "pool", "variable", "side", "accuracy", "n", "errors"]]
    pd.testing.assert_frame_equal(gen.restricted_long(read["restricted_by_side"], task), expected)
    with torch.no_grad():
        tables = circuits.eq_score_tables(read["eq_variable_scores"].iloc[0], task)
        assert torch.equal(tables["score"], circuits.eq_to_variable_scores(model))
        for part, values in diagnostics.eq_query_decomposition(model).items():
            assert torch.equal(tables[part], values)
        maps = circuits.circuit_maps_of(read["circuit_maps"].iloc[0], task)
        assert torch.equal(maps["qk"], circuits.variable_qk_map(model))
        example = circuits.example_batch(task)[3:4].tokens
        assert torch.equal(maps["l1"], circuits.attention_patterns(model, example)[0, 0])


def test_a_combination_a_pool_lacks_has_no_row(tiny_config):
    """n = 0 (accuracy NaN) in the quantity: no row in the long table, as the group-by gives none."""
    task = tiny_config.task
    columns = quantities.get_quantity("restricted_by_side").columns_for(tiny_config)
    frame = pd.DataFrame([[1.0] * len(columns)], columns=list(columns), index=pd.Index([5], name="step"))
    pool, (variable, side) = VAR_RESTRICTED[0], gen.forbidden_operands(task)[0]
    frame[gen.restricted_column(pool, variable, side, "n")] = 0.0
    frame[gen.restricted_column(pool, variable, side, "accuracy")] = float("nan")
    long = gen.restricted_long(frame, task)
    assert len(long) == len(VAR_RESTRICTED) * len(gen.forbidden_operands(task)) - 1
    assert not ((long["pool"] == pool) & (long["variable"] == variable) & (long["side"] == side)).any()


def test_a_quantity_between_two_runs_is_cached_per_other_run(run, tmp_path, tiny_config):
    """`across`: a run's weights against another run's at the same steps, cached once per other run (the mode
    study's weight distances); read where the weights are gone, and never through series()."""
    from assignadd_core.experiments.training import train
    same = Run(shutil.copytree(run.path, tmp_path / "same"))
    other = train(tiny_config.replace(seed=tiny_config.train.seed + 1), tmp_path / "other", progress=False)
    zero = series.across(run, same, "weight_distance")
    apart = series.across(run, other, "weight_distance", [1, 30])
    assert zero.index.tolist() == [1, 11, 21, 30] and (zero["relative_distance"] == 0).all()
    assert apart.index.tolist() == [1, 30] and (apart["relative_distance"] > 0.1).all()
    assert series.cached_steps(run, "weight_distance") == [1, 11, 21, 30]
    lines = (run.path / "series.csv").read_text().count("weight_distance")
    for step in (1, 30):
        run.checkpoint_path(step).unlink()
    pd.testing.assert_frame_equal(series.across(run, other, "weight_distance", [1, 30]), apart)
    assert (run.path / "series.csv").read_text().count("weight_distance") == lines  # read, not recomputed
    with pytest.raises(ValueError, match="between two runs"):
        series.series(run, "weight_distance", [1])


def test_a_value_cached_for_another_config_counts_only_when_asked(run, counted):
    """cached_steps(current=False) also counts values of another version or config, so that a reading that
    must not skip a step fails on them (series cannot read them) instead of leaving them out unsaid."""
    series.series(run, "we_norm", [11])
    moved = shutil.copytree(run.path, run.path.parent / "moved")
    (moved / "config.json").write_text(run.config.replace(seed=run.config.train.seed + 7).to_json())
    moved = Run(moved)
    assert series.cached_steps(moved, "we_norm") == []
    assert series.cached_steps(moved, "we_norm", current=False) == [11]


def test_the_series_command_reads_a_quantity_between_two_runs(run, tmp_path, capsys):
    from assignadd_core.cli import main
    same = shutil.copytree(run.path, tmp_path / "same")
    assert main(["series", str(run.path), "weight_distance", "--against", str(same), "--steps", "1", "30",
                 "--csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["step,relative_distance", "1,0.0", "30,0.0"]
    assert main(["series", str(run.path), "weight_distance"]) == 2
    assert "name the other with --against RUN" in capsys.readouterr().err
    assert main(["series", str(run.path), "pools", "--against", str(same)]) == 2
    assert main(["series", str(run.path), "weight_distance", "--against", str(tmp_path / "nowhere")]) == 2
    assert "not a run directory" in capsys.readouterr().err
    assert torch.is_grad_enabled()  # the command leaves this process's autograd setting as it found it

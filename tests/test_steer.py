"""C10's causal test: steering the identity component of the layer-2 QK update (`steer`). The steered component
has the stated share of each update, the sham leaves the identity component alone, runs without steering keep
their hashes, and a steered run is reproducible and resumes exactly."""
from __future__ import annotations

import pandas as pd
import pytest
import torch

from assignadd_core.core.loss import fused_loss
from assignadd_core.core import trainer
from assignadd_core.experiments import qk_steering, training
from assignadd_core.core.config import ConfigError, RunConfig
from assignadd_core.core.model import initial_model
from test_perturb import SEED42_HASH, assert_resumes_to
from test_trainer import assert_same_weights, final_weights, metric_rows


def one_step(config: RunConfig):
    """A model after one AdamW step, with W_QK2 and W_Q2 from before the step (what `qk_steering.steer` is handed)."""
    torch.manual_seed(0)
    model = initial_model(config)
    optimizer = trainer.make_optimizer(model, config)
    tokens = torch.randint(0, config.task.modulus, (8, 16))
    answers = torch.randint(0, config.task.modulus, (8,))
    loss = fused_loss(model, tokens, answers, config, torch.device("cpu"))
    loss.backward()
    before = qk_steering.snapshot(model, config)
    optimizer.step()
    return model, before


def component(model, before, direction) -> tuple[float, float]:
    update = qk_steering.qk2(model) - before.qk
    return float((update * direction).sum()), float(update.norm())


def push_size(model, before, config) -> float:
    """What a share multiplies: the update's norm (exact write), or the change of W_QK2 made by W_Q2's own step with
    W_K2 held (smallest write)."""
    if config.interventions.steer_write == "exact":
        return component(model, before, qk_steering.qk2(model))[1]
    w_q, w_k = model.blocks[1].attn.W_Q[0].detach().double(), model.blocks[1].attn.W_K[0].detach().double()
    return float(((w_q - before.w_q) @ w_k.T).norm())


@pytest.mark.parametrize("share, write", [(0.0, "exact"), (0.5, "exact"), (0.0, "smallest"), (2.0, "smallest")])
def test_the_identity_component_of_the_update_is_set_to_its_share(share, write):
    config = RunConfig().replace(steer_from=1, steer_to=5, steer_share=share, steer_write=write)
    model, before = one_step(config)
    identity = qk_steering.identity_direction(model)
    free, size = component(model, before, identity)
    assert abs(free) > 1e-6 * size  # a free update has an identity component to remove
    target = share * push_size(model, before, config)
    qk_steering.steer(model, config, before)
    moved, _ = component(model, before, identity)
    assert moved == pytest.approx(target, abs=1e-6 * size)
    assert torch.equal(qk_steering.identity_direction(model), identity)  # the copies (layer 1) are left alone


def test_the_smallest_write_changes_w_q2_by_far_less_than_the_exact_one():
    """The exact write solves X W_K2ᵀ = c D through W_K2's inverse; the smallest moves only the component along D,
    with ‖X‖ = |c| / ‖D W_K2‖."""
    changes = {}
    for write in ("exact", "smallest"):
        config = RunConfig().replace(steer_from=1, steer_to=5, steer_share=0.0, steer_write=write)
        model, before = one_step(config)
        w_q = model.blocks[1].attn.W_Q[0].detach().clone()
        c = qk_steering.steer(model, config, before)
        changes[write] = float((model.blocks[1].attn.W_Q[0].detach() - w_q).double().norm())
        if write == "smallest":
            reach = qk_steering.identity_direction(model) @ model.blocks[1].attn.W_K[0].detach().double()
            assert changes[write] == pytest.approx(abs(c) / float(reach.norm()), rel=1e-4)
    assert changes["smallest"] < changes["exact"] / 2


def test_the_sham_pushes_another_direction_and_leaves_the_identity_component():
    config = RunConfig().replace(steer_from=1, steer_to=5, steer_share=0.5, steer_sham=True, perturb_seed=1)
    model, before = one_step(config)
    identity = qk_steering.identity_direction(model)
    sham = qk_steering.sham_direction(config, identity)
    assert abs(float((sham * identity).sum())) < 1e-9 and float(sham.norm()) == pytest.approx(1.0)
    free, size = component(model, before, identity)
    qk_steering.steer(model, config, before)
    assert component(model, before, identity)[0] == pytest.approx(free, abs=1e-6 * size)
    assert component(model, before, sham)[0] == pytest.approx(0.5 * size, abs=1e-6 * size)
    other = qk_steering.sham_direction(config.replace(perturb_seed=2), identity)
    assert not torch.allclose(other, sham)  # its own seed


def test_runs_without_steering_keep_their_hash_and_steered_ones_do_not():
    paper = RunConfig()
    assert paper.replace(steer_from=5, steer_share=0.5, steer_sham=False).hash() == SEED42_HASH
    steered = {paper.replace(steer_from=1, steer_to=6000).hash(),
               paper.replace(steer_from=1, steer_to=6000, steer_share=0.5).hash(),
               paper.replace(steer_from=1, steer_to=6000, steer_share=0.5, steer_sham=True, perturb_seed=1).hash()}
    assert len(steered) == 3 and SEED42_HASH not in steered
    assert paper.replace(steer_from=1, steer_to=10).interventions.of("steering").steered


@pytest.mark.parametrize("overrides, message", [
    ({"steer_from": 0, "steer_to": 10}, "steering needs 1 <= steer_from <= steer_to"),
    ({"steer_from": 20, "steer_to": 10}, "steering needs 1 <= steer_from <= steer_to"),
    ({"steer_from": 1, "steer_to": 50_000}, "steering needs 1 <= steer_from <= steer_to"),
    ({"steer_from": 1, "steer_to": 10, "steer_share": -0.5}, "steer_share must be a finite number >= 0"),
    ({"steer_from": 1, "steer_to": 10, "steer_share": float("inf")}, "steer_share must be a finite number >= 0"),
    ({"steer_sham": "yes"}, "steer_sham must be true or false"),
    ({"steer_trigger": 1.5, "steer_window": 10}, r"steer_trigger must lie in \[0, 1\]"),
    ({"steer_trigger": True, "steer_window": 10}, r"steer_trigger must lie in \[0, 1\]"),
    ({"steer_trigger": 0.95}, "a triggered steering needs steer_window >= 1"),
    ({"steer_trigger": 0.95, "steer_window": 1.5}, "steer_window must be an integer >= 0"),
    ({"steer_trigger": 0.95, "steer_window": 10, "steer_from": 1, "steer_to": 10},
     "steer_trigger and steer_from/steer_to exclude each other"),
    ({"steer_trigger": 0.95, "steer_window": 10, "steer_direction": "diagonal"}, "steer_direction must be one of"),
    ({"steer_trigger": 0.95, "steer_window": 10, "steer_write": "inverse"},
     "steer_write must be one of exact, smallest"),
    ({"steer_trigger": 0.95, "steer_window": 10, "steer_direction": "wrong_pairs", "steer_sham": True},
     "steer_sham is the random direction; it excludes steer_direction 'wrong_pairs'"),
])
def test_bad_steering_settings_are_refused_in_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message) as caught:
        RunConfig().replace(**overrides)
    assert "\n" not in str(caught.value)


def test_a_steered_run_moves_only_inside_its_window_and_resumes_exactly(tiny_config, tiny_run, tmp_path,
                                                                         monkeypatch):
    config = tiny_config.replace(steer_from=12, steer_to=25, steer_share=0.0)
    straight = training.train(config, tmp_path / "straight", progress=False)
    mine, plain = metric_rows(straight).set_index("step"), metric_rows(tiny_run).set_index("step")
    pd.testing.assert_frame_equal(mine.loc[[1, 11]], plain.loc[[1, 11]])  # before the window: the same run
    moved = {name: float((weight - final_weights(tiny_run)[name]).abs().max())
             for name, weight in final_weights(straight).items()}
    assert moved["blocks.1.attn.W_Q"] > 1e-3 and moved["blocks.1.attn.W_Q"] > 10 * moved["blocks.0.attn.W_Q"]
    assert_resumes_to(straight, config, tmp_path / "killed", monkeypatch)


def test_a_steered_run_stops_only_once_composition_holds_without_the_steering(tiny_config, tmp_path, monkeypatch):
    real = trainer.eval_row
    monkeypatch.setattr(trainer, "eval_row", lambda *args: {**real(*args), "1var_train": 0.95})
    run = training.train(tiny_config.replace(stop_when_composed=1, steer_from=1, steer_to=15, steer_share=0.5),
                        tmp_path / "s", progress=False)
    assert run.final()["last_step"] == 21


# ---------------------------------------------------------------------------- C10 at copying onset
ONSET = {"steer_trigger": 0.95, "steer_window": 3000}


def test_triggered_settings_keep_every_earlier_hash_and_name_one_config_each():
    paper = RunConfig()
    # settings that do nothing without a trigger or a window take their defaults
    idle = paper.replace(steer_window=3000, steer_direction="wrong_pairs", steer_share=2.0, steer_write="smallest")
    assert idle == paper and idle.hash() == SEED42_HASH and not idle.interventions
    today = paper.replace(steer_from=1, steer_to=6000, steer_share=0.5, steer_sham=True, perturb_seed=1)
    assert paper.replace(steer_from=1, steer_to=6000, steer_share=0.5, steer_direction="random", perturb_seed=1) \
        == today  # "random" is today's steer_sham: one config, one hash
    arms = {name: paper.replace(**ONSET, **arm) for name, arm in (
        ("removal", {"steer_share": 0.0}), ("sham", {"steer_direction": "wrong_pairs"}),
        ("twin", {"steer_direction": "none"}), ("push", {"steer_share": 4.0}))}
    assert len({c.hash() for c in arms.values()} | {SEED42_HASH, today.hash()}) == 6
    assert all(c.interventions.of("steering").steered for c in arms.values())
    assert paper.replace(**ONSET, steer_direction="none", steer_share=4.0, steer_write="smallest") == arms["twin"]
    assert paper.replace(**ONSET, steer_write="smallest").hash() != arms["removal"].hash()  # another write, another run
    assert arms["removal"].interventions.perturb_seed == 0 == paper.replace(**ONSET, perturb_seed=5).interventions.perturb_seed


def test_the_wrong_pairs_sham_is_d_s_twin_in_its_subspace():
    """Orthogonal to D, of D's norm, in the subspace {Uᵀ M U}, from a pairing without a fixed point."""
    from assignadd_core.measure.measures import variable_copies
    config = RunConfig().replace(**ONSET, steer_direction="wrong_pairs")
    model, _ = one_step(config)
    identity = qk_steering.identity_direction(model)
    sham = qk_steering.wrong_pairs_direction(model, identity)
    assert abs(float((sham * identity).sum())) < 1e-12
    assert float(sham.norm()) == pytest.approx(1.0, abs=1e-12) == float(identity.norm())
    copies = variable_copies(model).double()
    row_space = torch.linalg.pinv(copies) @ copies  # the projector onto the copies' span
    for matrix in (identity, sham):
        assert torch.allclose(row_space @ matrix @ row_space, matrix, atol=1e-10)
    other = torch.randn(128, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert not torch.allclose(row_space @ other @ row_space, other, atol=1e-3)  # the subspace is a real constraint
    for n in (2, 4, 12):
        pi = qk_steering.wrong_pairing(n)
        assert sorted(pi) == list(range(n)) and all(pi[v] != v for v in range(n))
    # it raises the wrong pairs' contrast of the variable QK map, and leaves the identity contrast alone
    n = copies.shape[0]
    eye = torch.eye(n, dtype=torch.float64)
    wrong = eye[qk_steering.wrong_pairing(n)]  # row v has its 1 at column pi(v)
    changed = copies @ sham @ copies.T
    assert float((changed * wrong).sum() / n - (changed * (1 - wrong)).sum() / (n * (n - 1))) > 0
    assert float((changed * eye).sum() / n - (changed * (1 - eye)).sum() / (n * (n - 1))) == pytest.approx(0, abs=1e-9)


@pytest.mark.parametrize("share", [0.0, 2.0])
def test_the_wrong_pairs_sham_sets_its_own_component_and_leaves_the_identity_component(share):
    config = RunConfig().replace(**ONSET, steer_direction="wrong_pairs", steer_share=share, steer_write="smallest")
    model, before = one_step(config)
    identity = qk_steering.identity_direction(model)
    sham = qk_steering.wrong_pairs_direction(model, identity)
    free, size = component(model, before, identity)
    target = share * push_size(model, before, config)
    qk_steering.steer(model, config, before)
    assert component(model, before, identity)[0] == pytest.approx(free, abs=1e-6 * size)
    assert component(model, before, sham)[0] == pytest.approx(target, abs=1e-6 * size)


def test_the_triggered_window_follows_the_recorded_eval():
    config = RunConfig().replace(steer_trigger=0.95, steer_window=100)
    counters = {}
    assert qk_steering.window(config, counters) is None and not qk_steering.due(config, 5, counters)
    assert not qk_steering.pending(config, counters, 5)  # a trigger not reached leaves nothing pending
    qk_steering.record_trigger(config, counters, {"step": 1001, "m5_l1_value_prev_token": 0.949})
    assert counters == {}
    qk_steering.record_trigger(config, counters, {"step": 1101, "m5_l1_value_prev_token": 0.95})
    qk_steering.record_trigger(config, counters, {"step": 1201, "m5_l1_value_prev_token": 1.0})  # the first one stays
    assert counters == {"steer_started_after": 1101} and qk_steering.window(config, counters) == (1102, 1201)
    assert [qk_steering.due(config, s, counters) for s in (1101, 1102, 1201, 1202)] == [False, True, True, False]
    assert qk_steering.pending(config, counters, 1201) and not qk_steering.pending(config, counters, 1202)
    assert qk_steering.window(config.replace(steps=1150), counters) == (1102, 1150)  # a window ends with the run
    twin = config.replace(steer_direction="none")
    assert not qk_steering.due(twin, 1102, counters) and qk_steering.pending(twin, counters, 1201)  # nothing steered, waits
    nan = {}
    qk_steering.record_trigger(config, nan, {"step": 1, "m5_l1_value_prev_token": float("nan")})
    assert nan == {}  # a model without the circuit never triggers
    assert qk_steering.final_fields(config, {}) == {"steer_started_after": None} and qk_steering.final_fields(RunConfig(), {}) == {}


def _forced_m5(monkeypatch, from_step: int):
    """Measure 5 forced to 0.99 from eval step `from_step` on (0.1 before), the rest of each row real."""
    real = trainer.eval_row

    def row(*args):
        out = real(*args)
        return {**out, "m5_l1_value_prev_token": 0.99 if out["step"] >= from_step else 0.1}
    monkeypatch.setattr(trainer, "eval_row", row)


def _steered_steps(monkeypatch) -> list:
    calls, real = [], qk_steering.Steering.on_gradient

    def on_gradient(self, model, step, counters):
        if qk_steering.due(self.config, step, counters):
            calls.append(step)
        return real(self, model, step, counters)
    monkeypatch.setattr(qk_steering.Steering, "on_gradient", on_gradient)
    return calls


def test_the_trigger_fires_at_the_first_eval_that_reaches_it(tiny_config, tiny_run, tmp_path, monkeypatch):
    _forced_m5(monkeypatch, 11)
    steered = _steered_steps(monkeypatch)
    config = tiny_config.replace(steer_trigger=0.95, steer_window=12)
    run = training.train(config, tmp_path / "t", progress=False)
    assert steered == list(range(12, 24))  # the 12 steps after the eval at step 11
    assert run.final()["steer_started_after"] == 11
    mine, plain = metric_rows(run).set_index("step"), metric_rows(tiny_run).set_index("step")
    pd.testing.assert_frame_equal(mine.loc[[1, 11], ["loss", "1var_train"]], plain.loc[[1, 11], ["loss", "1var_train"]])
    assert not torch.equal(final_weights(run)["blocks.1.attn.W_Q"], final_weights(tiny_run)["blocks.1.attn.W_Q"])
    twin = training.train(config.replace(steer_direction="none"), tmp_path / "twin", progress=False)
    assert twin.final()["steer_started_after"] == 11
    assert_same_weights(final_weights(twin), final_weights(tiny_run))  # the twin is the unsteered run


def test_a_run_that_never_reaches_the_trigger_is_never_steered(tiny_config, tiny_run, tmp_path):
    # the tiny run's measure 5 stays near 0.17
    assert tiny_run.metrics()["m5_l1_value_prev_token"].max() < 0.5
    run = training.train(tiny_config.replace(steer_trigger=0.5, steer_window=12), tmp_path / "never", progress=False)
    assert run.final()["steer_started_after"] is None
    pd.testing.assert_frame_equal(metric_rows(run), metric_rows(tiny_run))
    assert_same_weights(final_weights(run), final_weights(tiny_run))


def test_a_resumed_triggered_run_equals_an_uninterrupted_one(tiny_config, tmp_path, monkeypatch):
    """Triggered at the eval of step 11, steered over steps 12-23, killed at step 17: the resumed run (from the state
    saved at step 11, which holds the trigger) is the uninterrupted one, bit for bit. Without the saved trigger it
    would fire again at step 21 and steer other steps."""
    from test_trainer import interrupt_at
    _forced_m5(monkeypatch, 11)
    config = tiny_config.replace(steer_trigger=0.95, steer_window=12, steer_share=0.0, steer_write="smallest")
    straight = training.train(config, tmp_path / "straight", progress=False)
    with pytest.MonkeyPatch.context() as kill:
        interrupt_at(kill, "train_step", lambda call, args: call == 17)
        with pytest.raises(KeyboardInterrupt):
            training.train(config, tmp_path / "killed", progress=False)
    killed = trainer.Run(tmp_path / "killed")
    assert killed.metrics()["step"].tolist() == [1, 11]
    resumed = training.train(config, tmp_path / "killed", progress=False)
    pd.testing.assert_frame_equal(metric_rows(resumed), metric_rows(straight))
    assert_same_weights(final_weights(resumed), final_weights(straight))
    assert resumed.final()["steer_started_after"] == 11


def test_a_triggered_run_stops_only_after_its_window(tiny_config, tmp_path, monkeypatch):
    """Composed and copying from the first eval on, asked to stop after 1 composed eval: triggered at step 1, with
    the window 2-13 open it runs on to the first eval after it (step 21); a trigger never reached stops it at once."""
    real = trainer.eval_row
    monkeypatch.setattr(trainer, "eval_row", lambda *args: {**real(*args), "1var_train": 0.95,
                                                             "m5_l1_value_prev_token": 0.99})
    config = tiny_config.replace(stop_when_composed=1, steer_trigger=0.95, steer_window=12)
    assert training.train(config, tmp_path / "w", progress=False).final()["last_step"] == 21
    assert training.train(config.replace(steer_direction="none"), tmp_path / "t", progress=False).final()["last_step"] == 21
    never = config.replace(steer_trigger=1.0)
    assert training.train(never, tmp_path / "n", progress=False).final()["last_step"] == 1


def test_the_onset_sweeps_follow_their_stated_cell_rules():
    """The cells are chosen by rule from the committed crossed design (composition_odds): necessity on the
    initializations that composed in all 16 of their runs, in the design's balanced half; sufficiency on cells stuck
    eager and compiled, of the two initializations that composed least, six distinct data orders."""
    from collections import Counter
    from assignadd_core.core.run_folder import DEFAULT_ROOT
    from assignadd_core.experiments.sweep import SWEEPS, read_records
    from assignadd_core.experiments.sweep.grid import C10_PUSH_SHARES, ODDS_DATA, ODDS_INITS, onset_cells
    design = {}
    for record in read_records(DEFAULT_ROOT / "sweeps" / "composition_odds.jsonl"):
        cell = (record["config"]["train"]["init_seed"], record["seed"])
        design.setdefault(cell, {})[record["mode"]] = record["pools"]["1var_train"] >= 0.9
    composed = Counter(init for (init, _), modes in design.items() for ok in modes.values() if ok)
    assert len(design) == 64 and all(len(modes) == 2 for modes in design.values())
    always = [init for init in ODDS_INITS if composed[init] == 16]

    necessity = SWEEPS["c10_onset"]
    cells = onset_cells(necessity)
    assert sorted(always) == sorted({i for i, _ in cells}) and len(cells) == 16 == len(set(cells))
    assert all((ODDS_INITS.index(i) + ODDS_DATA.index(d)) % 2 == 0 for i, d in cells)
    assert Counter(i for i, _ in cells) == {i: 4 for i in always}
    assert Counter(d for _, d in cells) == {d: 2 for d in ODDS_DATA}

    push = SWEEPS["c10_onset_push"]
    cells = onset_cells(push)
    stuck = {cell for cell, modes in design.items() if not any(modes.values())}
    least = sorted(ODDS_INITS, key=lambda i: composed[i])[:2]
    assert least == [8680, 1029] and all(cell in stuck for cell in cells) and len(cells) == 6
    assert len({d for _, d in cells}) == 6  # distinct data orders
    first = [d for d in ODDS_DATA if (8680, d) in stuck][:3]
    then = [d for d in ODDS_DATA if (1029, d) in stuck and d not in first][:3]
    assert sorted(cells) == sorted([(8680, d) for d in first] + [(1029, d) for d in then])

    assert necessity.with_seeds([42]).points() == [] == push.with_seeds([42]).points()  # a seed outside the design
    for sweep, arms in ((necessity, 3), (push, 5)):
        points = sweep.points()
        assert len(points) == arms * len(onset_cells(sweep)) and {p.mode for p in points} == {"eager"}
        configs = [RunConfig().replace(**p.overrides) for p in points]
        assert {(c.interventions.steer_trigger, c.interventions.steer_window, c.train.steps,
                 c.interventions.stop_when_composed) for c in configs} == {
            (0.95, 3000, 12000, 5)}
        assert {c.interventions.steer_write for c in configs if c.interventions.steer_direction != "none"} == {"smallest"}
        assert len({p.key for p in points}) == len(points)
    directions = Counter((c.steer_direction, c.steer_share) for c in
                         (RunConfig().replace(**p.overrides).interventions for p in push.points()))
    assert directions == {("none", 0.0): 6, **{(d, s): 6 for s in C10_PUSH_SHARES for d in ("identity", "wrong_pairs")}}
    assert len(C10_PUSH_SHARES) == 2 and list(C10_PUSH_SHARES) == sorted(C10_PUSH_SHARES)  # weakest first


@pytest.mark.parametrize("direction", ["identity", "wrong_pairs"])
def test_the_hold_write_holds_each_row_contrast_of_its_pairing_whatever_moved_it(direction):
    """The step moved both W_QK2 and the copies U; after the hold write every row contrast of the direction's
    pairing (with the copies of now) is back at its value before the step (with the copies of then), the other
    pairing's contrasts still move, and only W_Q2 was changed."""
    config = RunConfig().replace(**ONSET, steer_direction=direction, steer_write="hold")
    model, before = one_step(config)
    n = before.copies.shape[0]
    held, other = qk_steering.hold_pairing(config, n), qk_steering.hold_pairing(
        config.replace(steer_direction="identity" if direction == "wrong_pairs" else "wrong_pairs"), n)

    def rows(pairing, qk, copies):
        return torch.einsum("ij,vij->v", qk, qk_steering.row_contrast_matrices(copies, pairing))

    copies_now = qk_steering.variable_copies(model).detach().double()
    assert not torch.allclose(copies_now, before.copies)  # the copies moved with the step
    then = rows(held, before.qk, before.copies)
    assert (rows(held, qk_steering.qk2(model), copies_now) - then).abs().max() > 1e-6  # the step moved the contrasts
    w_k = model.blocks[1].attn.W_K[0].detach().clone()
    qk_steering.steer(model, config, before)
    assert torch.allclose(rows(held, qk_steering.qk2(model), copies_now), then, atol=1e-7, rtol=0)
    assert not torch.allclose(rows(other, qk_steering.qk2(model), copies_now), rows(other, before.qk, before.copies),
                              atol=1e-7)
    assert torch.equal(model.blocks[1].attn.W_K[0].detach(), w_k)
    assert torch.equal(qk_steering.variable_copies(model).detach().double(), copies_now)  # layer 1 left alone


def test_the_hold_write_is_refused_with_a_share_or_another_direction():
    with pytest.raises(ConfigError, match="hold"):
        RunConfig().replace(**ONSET, steer_write="hold", steer_share=1.0)
    with pytest.raises(ConfigError, match="hold"):
        RunConfig().replace(**ONSET, steer_write="hold", steer_direction="random")


@pytest.mark.parametrize("direction", ["identity", "wrong_pairs"])
def test_the_clamp_makes_its_rows_lead_by_the_margin_and_touches_only_w_q2(direction):
    """After the clamp write, the rows nearest the margin (ten of twelve) peak on their paired variable by at least
    the margin in score units; only W_Q2 changed."""
    margin = 1.5
    config = RunConfig().replace(**ONSET, steer_direction=direction, steer_write="clamp", steer_share=margin)
    model, before = one_step(config)
    w_k, copies = model.blocks[1].attn.W_K[0].detach().clone(), qk_steering.variable_copies(model).detach().clone()
    qk_steering.steer(model, config, before)
    n = copies.shape[0]
    pairing = torch.tensor(qk_steering.hold_pairing(config, n))
    scores = (qk_steering.variable_copies(model).double() @ qk_steering.qk2(model)
              @ qk_steering.variable_copies(model).double().T) * model.blocks[1].attn.scale
    rows = torch.arange(n)
    rivals = scores.clone()
    rivals[rows, pairing] = float("-inf")
    leads = scores[rows, pairing] - rivals.max(-1).values
    assert int((leads >= margin - 1e-4).sum()) >= qk_steering.rows_clamped(n) == 10
    assert torch.equal(model.blocks[1].attn.W_K[0].detach(), w_k)
    assert torch.equal(qk_steering.variable_copies(model).detach(), copies)


def test_the_clamp_is_refused_without_a_margin_or_with_another_direction():
    with pytest.raises(ConfigError, match="clamp"):
        RunConfig().replace(**ONSET, steer_write="clamp", steer_share=0.0)
    with pytest.raises(ConfigError, match="clamp"):
        RunConfig().replace(**ONSET, steer_write="clamp", steer_share=1.0, steer_direction="random")


@pytest.mark.parametrize("direction", ["identity", "wrong_pairs"])
def test_the_double_hold_holds_the_variable_map_and_the_queries_map(direction):
    """After the double-hold write, every row contrast of the pairing in both maps, U W_QK2 Uᵀ and Q̄ W_QK2 Uᵀ (the
    queries at `=` averaged per queried variable), is back at its value before the step; the single hold leaves the
    queries' map free."""
    config = RunConfig().replace(**ONSET, steer_direction=direction, steer_write="double_hold")
    model, before = one_step(config)
    n = before.copies.shape[0]
    pairing = qk_steering.hold_pairing(config, n)

    def rows(qk, copies, queries):
        return torch.einsum("ij,vij->v", qk, qk_steering.row_contrast_matrices(copies, pairing, queries))

    then = rows(before.qk, before.copies, before.queries)
    single = model.__class__(config)
    single.load_state_dict(model.state_dict())
    qk_steering.steer(model, config, before)
    copies, queries = qk_steering.variable_copies(model).double(), qk_steering.queried_means(model)
    assert torch.allclose(rows(qk_steering.qk2(model), copies, queries), then, atol=1e-6, rtol=0)
    assert torch.allclose(rows(qk_steering.qk2(model), copies, None),
                          rows(before.qk, before.copies, None), atol=1e-6, rtol=0)
    qk_steering.steer(single, config.replace(steer_write="hold"), before)
    assert not torch.allclose(rows(qk_steering.qk2(single), copies, qk_steering.queried_means(single)), then, atol=1e-6)

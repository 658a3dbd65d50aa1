"""Which checkpoints a run commits."""
from assignadd_core.experiments import artifacts


def test_kept_checkpoints_exist_and_include_the_provenance_steps(tiny_run, capsys):
    available = tiny_run.checkpoint_steps()
    keep = artifacts.checkpoints_to_keep(tiny_run, extra=artifacts.chapter_steps(tiny_run))
    assert set(keep) <= set(available)
    assert 1 in keep  # provenance: the first step
    assert tiny_run.config.train.steps not in keep  # the final weights are model.safetensors
    assert artifacts.main([str(tiny_run.path)]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(tiny_run.checkpoint_path(s)) for s in keep]


def test_window_steps_follow_the_detected_phases(monkeypatch, tiny_run):
    monkeypatch.setattr(artifacts, "detect_phases", lambda metrics: {"jump": 3001, "refinement_end": 7001})
    assert artifacts.chapter_steps(tiny_run) == (1, 201, 3001, 4001, 5001, 6001, 7001, 8001)
    monkeypatch.setattr(artifacts, "detect_phases", lambda metrics: {"jump": None, "refinement_end": None})
    assert artifacts.chapter_steps(tiny_run) == (1, 201)

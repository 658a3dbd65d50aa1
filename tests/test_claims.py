"""The book's claim records are written only by the book driver (or into a folder the caller names):
re-executing a chapter by hand, with another run, leaves the committed verdicts alone."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest

from assignadd_core.report import book, claims
from assignadd_core.report.claims import CLAIMS_ENV, record_claim, write_claims_csv

COMMITTED = book.ROOT / "runs" / "claims"


def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.json"))}


def chapter_like(path: Path) -> Path:
    """A two-cell chapter: parameters, then a verdict recorded for C1 from its run name."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('run = "seed42"', metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell('from assignadd_core.report.claims import record_claim\n'
                                          'record_claim("C1", ours=f"judged on {run}", verdict="not reproduced")\n'
                                          'print("recorded?")')]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def stderr_of(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []) if o.get("name") == "stderr")


def test_record_claim_writes_only_for_the_driver_or_a_named_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(CLAIMS_ENV, raising=False)
    assert record_claim("C2", ours="x", verdict="partly") is None
    assert write_claims_csv() is None
    err = capsys.readouterr().err
    assert "C2: not recorded" in err and "claims.csv: not written" in err
    path = record_claim("C2", ours="x", verdict="partly", root=tmp_path)  # a folder the caller names
    assert path == tmp_path / "claims" / "C2.json" and json.loads(path.read_text())["verdict"] == "partly"
    assert write_claims_csv(tmp_path) == tmp_path / "claims.csv"
    monkeypatch.setenv(CLAIMS_ENV, str(tmp_path / "driver" / "claims"))  # as the book driver sets it
    assert record_claim("C3", ours="y", verdict="reproduced") == tmp_path / "driver" / "claims" / "C3.json"
    assert claims.claims_table().set_index("claim").loc["C3", "verdict"] == "reproduced"
    assert write_claims_csv() == tmp_path / "driver" / "claims.csv"
    with pytest.raises(Exception, match="unknown claim"):
        record_claim("C99", ours="z", verdict="partly")


def test_a_chapter_executed_by_hand_leaves_the_books_records_alone(tmp_path, monkeypatch):
    import papermill as pm
    before = snapshot(COMMITTED)
    assert before, "the committed claim records are missing"
    runs = tmp_path / "runs"  # the kernel's runs folder: a copy of the committed records
    shutil.copytree(COMMITTED, runs / "claims")
    monkeypatch.delenv(CLAIMS_ENV, raising=False)
    monkeypatch.setenv("ASSIGNADD_RUNS", str(runs))  # papermill's kernel inherits this environment
    source = chapter_like(tmp_path / "02_fake.ipynb")
    out = tmp_path / "mine.ipynb"
    pm.execute_notebook(str(source), str(out), parameters={"run": "my_run"}, kernel_name="python3",
                        cwd=str(tmp_path), progress_bar=False)
    assert "C1: not recorded" in stderr_of(out)
    assert snapshot(runs / "claims") == before and snapshot(COMMITTED) == before

    # the book driver does record, into the claims folder of the runs folder its kernels use
    driven = tmp_path / "driven"
    monkeypatch.setenv("ASSIGNADD_RUNS", str(driven))
    monkeypatch.setattr(book, "NOTEBOOKS", tmp_path)
    profile = tmp_path / "profile.yaml"
    profile.write_text("02_fake:\n  run: book_run\n")
    book.execute(profile, out_dir=tmp_path / "chapters")
    assert json.loads((driven / "claims" / "C1.json").read_text())["ours"] == "judged on book_run"
    assert CLAIMS_ENV not in os.environ  # set for the driver's kernels only
    assert snapshot(COMMITTED) == before

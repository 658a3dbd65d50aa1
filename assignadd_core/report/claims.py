"""The paper's claims C1–C10 (and the book's findings R1–R3) and the verdicts our chapters record for them.

A chapter that tests a claim calls `record_claim(...)` with our number and a verdict computed
from it; the claims chapter reads every record and writes the table, also as `runs/claims.csv`
(columns claim, paper, ours, verdict, authors_weights, first_rule: a stable interface; the last two added in
2026-12, first_rule being the verdict under the claim's first rule where it changed, `rule_lock`). A claim
nobody recorded is "not yet run". The appendix on the authors' released weights records, with
`record_authors`, the verdict of the same rule on their model (claims about a final model only).

The records are the book's verdicts, so only the book driver writes them: it names the claims
folder in ASSIGNADD_CLAIMS_DIR for the chapters it executes (papermill's kernel inherits it). A
chapter executed any other way (papermill by hand, Jupyter, nbval) records nothing and says so in
one line, unless the caller names a runs folder (`root=`) to write into.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
import html

import pandas as pd

from ..core.checkpoint import atomic_write_text
from ..core.config import ConfigError
from .names import display_text
from ..core.run_folder import current_root
from ..rules import verdicts
from ..rules.verdicts import VERDICTS  # noqa: E402  (one list of verdict words)
from .rule_lock import first_verdict, read_lock
from .present import KEY_RESULTS
CLAIMS_ENV = "ASSIGNADD_CLAIMS_DIR"  # set by the book driver only


@dataclass(frozen=True)
class Claim:
    statement: str
    paper: str  # the paper's number or figure, as the paper states it
    chapter: str  # the chapter (book page name) that tests it


CLAIMS = {
    "C1": Claim("Three training phases: addition first, then a sharp jump when variable assignment forms,"
                " then a refinement that fixes var-restricted sequences",
                "jump at steps ~5,300–5,400; refinement ~14,500–16,000", "chapters/02_training_phases"),
    "C2": Claim("Generalization to held-out addition pairs never seen in any form",
                "99.4 % on the 0-var held-out exact set", "chapters/02_training_phases"),
    "C3": Claim("Positional generalization: variables as operands in positions never seen in training",
                "var-restricted pools reach ≈ 1 after refinement", "chapters/02_training_phases"),
    "C4": Claim("Layer 1 is a previous-token head: each value attends to its variable and copies its identity",
                "progress measure 2 → 1", "chapters/06_circuits"),
    "C5": Claim("Layer-2 QK is an identity (associative-memory) pattern between queried variable and value tokens;"
                " `=` attends to the operand values", "progress measures 3 and 6 → 1", "chapters/06_circuits"),
    "C6": Claim("The same addition MLP serves literal and variable operands",
                "cosine similarity ≈ 1 (matched) vs low (mismatched)", "chapters/07_shared_addition"),
    "C7": Claim("Layer-2 MLP neurons carry Fourier features",
                "a few key frequencies; single neurons explained > 90 %", "chapters/08_fourier"),
    "C8": Claim("Generalization to unseen pairs needs a training fraction f ≈ 0.25",
                "threshold f ≈ 0.25 (0-var held-out exact)", "chapters/10_data_thresholds"),
    "C9": Claim("2-var generalization needs a 2-var frequency r ≈ 0.2",
                "threshold r ≈ 0.2 (2-var union exact)", "chapters/10_data_thresholds"),
    "C10": Claim("The negative gradient on the layer-2 QK matrix points toward the identity block once layer 1"
                 " copies variable identities", "gradient's structure during phases 1–2", "chapters/09_theory"),
    "R1": Claim("How often a seed goes through the three phases within 40,000 steps (this book's finding)",
                "one seed shown; no statement", "chapters/03_reliability"),
    "R2": Claim("What decides whether a run composes: the initialization, the data order, or their combination;"
                " how early it shows; what rescues a stuck run (this book's finding)",
                "one seed shown; no statement", "chapters/04_composition"),
    "R3": Claim("What carries the lookup when the identity pattern is held (this book's finding)", "no statement",
                "chapters/09_theory"),
}
AUTHORS_DIR = "authors"  # the appendix's records of the rules on the authors' weights, beside ours


def claims_dir(root: Path | None = None) -> Path:
    """`claims/` of `root`, or of the runs folder ASSIGNADD_RUNS names now (read at the call, not at import, as the
    book driver reads it: a process that imported this module earlier still finds the folder its kernels use)."""
    return Path(root or current_root()) / "claims"


def _driver_dir() -> Path | None:
    value = os.environ.get(CLAIMS_ENV)
    return Path(value) if value else None


def records_dir(root: Path | None = None) -> Path:
    """Where the records are read from: root's, the book driver's, else the book's own."""
    return claims_dir(root) if root is not None else (_driver_dir() or claims_dir())


def record_claim(claim: str, ours: str, verdict: str, details: dict | None = None,
                 root: Path | None = None) -> Path | None:
    """Store our result for a claim (one JSON file per claim, overwritten by the latest execution)
    when the book driver executes the chapter or `root` names a runs folder; otherwise write nothing,
    say so in one line, and return None."""
    record = {"claim": claim, "ours": display_text(ours), "verdict": verdict, "details": details or {}}
    return _write_record(record, Path(f"{claim}.json"), claim, root)


def record_authors(claim: str, verdict: str, text: str, root: Path | None = None) -> Path | None:
    """Store the verdict of a claim's rule on the authors' released weights (same writing rule as record_claim)."""
    record = {"claim": claim, "verdict": verdict, "text": display_text(text)}
    return _write_record(record, Path(AUTHORS_DIR) / f"{claim}.json", f"{claim} (authors' weights)", root)


def _write_record(record: dict, name: Path, what: str, root: Path | None) -> Path | None:
    if record["claim"] not in CLAIMS:
        raise ConfigError(f"unknown claim {record['claim']!r}; claims are {', '.join(CLAIMS)}")
    if record["verdict"] not in VERDICTS:
        raise ConfigError(f"verdict must be one of {VERDICTS}, got {record['verdict']!r}")
    folder = claims_dir(root) if root is not None else _driver_dir()
    if folder is None:
        print(f"{what}: not recorded (this execution is not the book build; the book's verdicts stay as they are)",
              file=sys.stderr)
        return None
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return path


def claims_table(root: Path | None = None) -> pd.DataFrame:
    """One row per claim; `first_rule` is the verdict under the claim's first rule where its rule has changed
    (`rule_lock.first_verdict`; "—" for a rule that never changed), `first_basis` what that verdict was read on."""
    lock = read_lock()
    rows = []
    for key, claim in CLAIMS.items():
        path = records_dir(root) / f"{key}.json"
        record = json.loads(path.read_text()) if path.is_file() else {"ours": "—", "verdict": "not yet run"}
        authors = records_dir(root) / AUTHORS_DIR / f"{key}.json"
        theirs = json.loads(authors.read_text()) if authors.is_file() else {"verdict": "—", "text": ""}
        rows.append({"claim": key, "statement": claim.statement, "paper": claim.paper, "ours": record["ours"],
                     "verdict": record["verdict"], "authors_weights": theirs["verdict"],
                     "authors_text": theirs["text"], "rule": verdicts.RULES.get(key, "—"), "chapter": claim.chapter,
                     "first_rule": (first_verdict(key, lock) or ("—", ""))[0],
                     "first_basis": (first_verdict(key, lock) or ("—", ""))[1]})
    return pd.DataFrame(rows)


from .present import VERDICT_COLORS  # noqa: E402


def chapter_title(chapter: str, chapters_dir: Path) -> str | None:
    """The first `# ` heading of an executed chapter, or None when it is not built."""
    path = Path(chapters_dir) / f"{chapter.split('/')[-1]}.ipynb"
    if not path.is_file():
        return None
    cells = json.loads(path.read_text())["cells"]
    heads = [line[2:] for c in cells if c["cell_type"] == "markdown"
             for line in "".join(c["source"]).splitlines() if line.startswith("# ")]
    return heads[0] if heads else chapter.split("/")[-1]


def claims_html(table: pd.DataFrame, chapters_dir: Path) -> str:
    """The claims table as compact HTML: one line per claim (statement, paper, verdict, the same rule on the
    authors' weights, chapter link), with our numbers and the rule in an expandable detail."""

    def esc(text) -> str:
        return html.escape(str(text))

    def link(chapter: str) -> str:
        slug, title = chapter.split("/")[-1], chapter_title(chapter, chapters_dir)
        return f'<a href="{slug}.html">{esc(title)}</a>' if title else f"{esc(slug)} (not built yet)"

    def verdict(word: str) -> str:
        color = VERDICT_COLORS.get(word)
        return f'<span style="color:{color};font-weight:bold">{esc(word)}</span>' if color else esc(word)

    rows = []
    for r in table.itertuples():
        theirs = f"<p><b>Same rule on the authors' weights:</b> {esc(r.authors_text)}</p>" if r.authors_text else ""
        first_rule, basis = getattr(r, "first_rule", "—"), getattr(r, "first_basis", "")
        first = f"<p><b>Under the first rule:</b> {esc(first_rule)} ({esc(basis)})</p>" if basis else ""
        rows.append(
            f"<tr><td><b>{r.claim}</b></td><td>{esc(r.statement)}<details><summary>our numbers and the rule</summary>"
            f"<p><b>Ours:</b> {esc(r.ours)}</p>{theirs}{first}<p><b>Rule:</b> {esc(r.rule)}</p></details></td>"
            f"<td>{esc(r.paper)}</td><td>{verdict(r.verdict)}</td><td>{verdict(first_rule)}</td>"
            f"<td>{verdict(r.authors_weights)}</td>"
            f"<td>{link(r.chapter)}</td></tr>")
    head = "".join(f"<th>{h}</th>" for h in ("claim", "statement", "paper", "verdict", "under the first rule",
                                             "authors' weights", "chapter"))
    return f'<table class="claims-table"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def rule_changes_html(table: pd.DataFrame, rules=None, changes=None) -> str:
    """One folded line per rule of the book that changed after a first result (a dated entry in
    `verdicts.RULE_CHANGES`, or a first verdict in the claims table): its count of dated changes, its verdict under the
    first rule and now, and the entries, folded. `table`: `claims_table()`; `rules`, `changes`: the rules and their
    dated changes (default: `verdicts.RULES`, `verdicts.RULE_CHANGES`)."""
    import html
    rules = verdicts.RULES if rules is None else rules
    changes = verdicts.RULE_CHANGES if changes is None else changes
    rows = table.set_index("claim")
    parts = []
    for claim in rules:
        row = rows.loc[claim] if claim in rows.index else None
        first = row is not None and row["first_rule"] != "—"
        entries = changes.get(claim, ())
        if not entries and not first:
            continue
        items = "".join(f"<li><b>{html.escape(date)}</b>: {html.escape(text)}</li>" for date, text in entries)
        if first:
            items += (f"<li>Under the first rule: <b>{html.escape(row['first_rule'])}</b>"
                      f" (read on {html.escape(row['first_basis'])})</li>")
        count = {0: "changed", 1: "one dated change"}.get(len(entries), f"{len(entries)} dated changes")
        then = f", under its first rule <b>{html.escape(row['first_rule'])}</b>" if first else ""
        now = f"; now <b>{html.escape(row['verdict'])}</b>" if row is not None else ""
        parts.append(f'<details class="rule-history"><summary><b>{claim}</b>: {count}{then}{now}</summary>'
                     f"<ul>{items}</ul></details>")
    return "".join(parts)


def changed_rules(table: pd.DataFrame, rules=None, changes=None) -> list[str]:
    """The rules of the book that changed after a first result (as `rule_changes_html` lists them)."""
    rules = verdicts.RULES if rules is None else rules
    changes = verdicts.RULE_CHANGES if changes is None else changes
    first = set(table.loc[table["first_rule"] != "—", "claim"])
    return [c for c in rules if c in changes or c in first]


def write_claims_csv(root: Path | None = None) -> Path | None:
    """`claims.csv` beside the records, under the same rule as record_claim (None when not written)."""
    folder = claims_dir(root) if root is not None else _driver_dir()
    if folder is None:
        print("claims.csv: not written (this execution is not the book build)", file=sys.stderr)
        return None
    path = folder.parent / "claims.csv"
    columns = ["claim", "paper", "ours", "verdict", "authors_weights", "first_rule"]
    atomic_write_text(path, claims_table(root)[columns].to_csv(index=False))
    return path


RESULT_TAG = "result-box"  # the cell the book build puts under a chapter's title (never in the sources)


def result_box(slug: str, root: Path | None = None) -> str | None:
    """The box that opens a chapter: each claim it tests, its verdict, the numbers that decided it, the verdict
    under the claim's first rule where the rule changed, and a link to the rule. None for a chapter that tests no
    claim."""
    rows = claims_table(root)
    mine = rows[rows["chapter"] == f"chapters/{slug}"]
    if mine.empty:
        return None
    parts = []
    for r in mine.itertuples():
        color = VERDICT_COLORS.get(r.verdict, "#57606a")
        first = (f" (under its first rule: <b>{html.escape(r.first_rule)}</b>)" if r.first_basis else "")
        parts.append(f'<p><b>{r.claim}</b> <span style="color:{color};font-weight:bold">{html.escape(r.verdict)}'
                     f"</span>{first}: {html.escape(r.ours)} <a href=\"13_claims.html\">rule</a></p>")
    return '<div class="result-box">' + "".join(parts) + "</div>"


def opens_with_key_results(cells) -> bool:
    """Whether a chapter pastes its own key-results box (present.KEY_RESULTS) in a Markdown cell."""
    return any(c.cell_type == "markdown" and f"{{glue}} {KEY_RESULTS}" in c.source for c in cells)


def insert_result_box(notebook: Path, root: Path | None = None) -> bool:
    """Put (or replace) the result box under the chapter's title; returns whether it did: not for a chapter that
    tests no claim, nor for one that opens with its own key-results box (which states the verdicts itself)."""
    import nbformat  # here, not at the top: a slow import (nbformat)
    nb = nbformat.read(notebook, as_version=4)
    nb.cells = [c for c in nb.cells if RESULT_TAG not in c.metadata.get("tags", [])]
    box = None if opens_with_key_results(nb.cells) else result_box(Path(notebook).stem, root)
    if box is None:
        nbformat.write(nb, notebook)
        return False
    cell = nbformat.v4.new_markdown_cell(box, metadata={"tags": [RESULT_TAG]})
    cell["id"] = RESULT_TAG
    first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"), -1)
    nb.cells.insert(first + 1, cell)
    nbformat.write(nb, notebook)
    return True

"""The results up front: the circuit diagram (`diagram`), the tally with what each column of the scoreboard means, the
scoreboard (one line per claim, in three columns that a laptop's text column reads without wrapping each word: the
claim linked to its chapter with the paper's number; ours, the verdict with its number and the first rule's verdict
where the rule changed; the authors' weights) and the hero figure (the three phases of the main run), written by the book build between markers in the intro page, and the
short "what reproduced" table of the README. Each is a function of committed files (the claim records, the rule lock
and the main run's metrics.csv), so a rebuild of unchanged inputs writes the same bytes."""
from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd

from .claims import claims_table
from .palette import BAND_OPACITY, INK, PAPER, VERDICT_COLORS, pool_style
from ..rules import paper
from ..core.data import VAR_RESTRICTED
from ..analysis.phases import detect_phases
from ..rules.paper import JUMP_STEPS, REFINEMENT_STEPS
from .plots import FIGURE_CONFIG

SCOREBOARD = ("<!-- scoreboard:start -->", "<!-- scoreboard:end -->")
HERO = ("<!-- hero:start -->", "<!-- hero:end -->")
README_TABLE = ("<!-- reproduced:start -->", "<!-- reproduced:end -->")
TALLY = ("<!-- tally:start -->", "<!-- tally:end -->")
CIRCUIT = ("<!-- circuit:start -->", "<!-- circuit:end -->")
# The scoreboard's columns (after the claim's name) and what each one holds: the header and the sentence that explains
# it are written from this one list.
COLUMNS = (("claim", "what the paper says, short (the whole statement on hover), linked to the chapter that tests it,"
                     " with the number the paper gives for it"),
           ("ours", "the verdict of the claim's rule on our own runs, with the count that decided it, and where a"
                    " change of the rule changed the verdict, the verdict its first rule gave (the claims chapter dates"
                    " each change and says why)"),
           ("authors' weights", "the same rule on the authors' released model (— where a final model cannot test it)"))


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _outside_brackets(text: str, mark: str) -> list[int]:
    """Where `mark` starts in `text` outside every bracket pair: (…), […] and the half-open (…] of an interval."""
    depth, places = 0, []
    for i, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(mark, i):
            places.append(i)
    return places


def short_result(ours: str, limit: int = 80) -> tuple[str, str]:
    """The deciding number of a claim's record text as (lead, detail): the lead is its first clause and the clauses
    that say where or why it fell short ("partly in seed51 ...", "not in ...", "fails: ..."); a first clause longer
    than `limit` keeps its head in the lead, up to the last ", " or " (" outside brackets before `limit` (else the
    first one after it), and hands the rest to the detail (shown folded). Nothing is cut: lead and detail hold the whole clause."""
    text = str(ours)
    bounds = [0, *(i + 2 for i in _outside_brackets(text, "; ")), len(text) + 2]  # "; " inside brackets is no end
    clauses = [c for c in (text[start:end - 2].strip() for start, end in zip(bounds, bounds[1:])) if c]
    if not clauses:
        return "", ""
    first, detail = clauses[0], ""
    if len(first) > limit:
        cuts = [i for i in _outside_brackets(first, ", ") + _outside_brackets(first, " (") if i > 0]
        if cuts:  # the last place before `limit`, else the first after it
            cut = max((i for i in cuts if i < limit), default=min(cuts))
            first, detail = first[:cut], first[cut:].removeprefix(",").strip()
    why = [c for c in clauses[1:] if c.startswith(("partly in", "not in", "fails:", "fails in"))]
    return "; ".join([first, *why]), detail


def tally(records: Path | None = None) -> str:
    """One sentence: how many of the paper's claims reproduced, partly, not, and how the authors' weights fare."""
    table = claims_table(records)
    paper = table[table["claim"].str.startswith("C")]
    counts = paper["verdict"].value_counts()
    order = [v for v in VERDICT_COLORS if v in counts.index]
    parts = [f"**{counts[v]} {v}**" for v in order]
    theirs = paper[paper["authors_weights"].isin(list(VERDICT_COLORS))]
    passed = int((theirs["authors_weights"] == "reproduced").sum())
    return (f"Of the paper's {len(paper)} claims, tested on our own runs: {', '.join(parts)}. On the authors' released"
            f" weights the same rules reproduce {passed} of the {len(theirs)} a final model can test.\n\n"
            + columns_sentence())


def columns_sentence() -> str:
    """What each column of the scoreboard means, in one sentence, from COLUMNS."""
    from .claims import CLAIMS
    from .wording import listing, verb
    findings = [key for key in CLAIMS if not key.startswith("C")]  # the book's own (R1, R2, ...), not the paper's
    return ("One row per claim: " + "; ".join(f"*{name}*, {meaning}" for name, meaning in COLUMNS) + f". {listing(findings)}"
            f" {verb(len(findings), 'is', 'are')} this book's own {verb(len(findings), 'finding', 'findings')}, about"
            f" {verb(len(findings), 'a question', 'questions')} the paper leaves open.")


# the container's classes: book.css lays the scoreboard out, and table_cards.js makes it cards on a phone
SCOREBOARD_CLASS = "scoreboard cards-when-narrow"


def scoreboard(records: Path | None = None, link_prefix: str = "chapters/") -> str:
    """A markdown table in a container of class SCOREBOARD_CLASS, one row per claim in the three COLUMNS: the claim (its
    name, its head linked to its chapter, the paper's number), ours (the verdict, the number that decided it, the first
    rule's verdict where the rule was changed), the same rule on the authors' weights."""
    rows = [f":::{{container}} {SCOREBOARD_CLASS}",
            "| " + " | ".join(name for name, _ in COLUMNS) + " |",
            "|" + "---|" * len(COLUMNS)]
    for r in claims_table(records).itertuples():
        slug = r.chapter.split("/")[-1]
        short = r.statement.split(":")[0]  # the claim's head; the whole statement on hover and in the claims chapter
        claim = (f'**{r.claim}** <span title="{html.escape(r.statement, quote=True)}">[{_cell(short)}]'
                 f"({link_prefix}{slug}.ipynb)</span><br><small>the paper: {_cell(r.paper)}</small>")
        ours = f'<span style="color:{VERDICT_COLORS[r.verdict]};font-weight:bold;white-space:nowrap">{r.verdict}</span>'
        number, detail = short_result(r.ours) if r.ours != "—" else ("", "")
        if detail:  # the rest of a long first clause, folded (never cut off)
            number += f" <details><summary>more</summary>{html.escape(detail)}</details>"
        ours += f"<br><small>{_cell(number)}</small>" if number else ""
        if r.first_rule in VERDICT_COLORS and r.first_rule != r.verdict:  # a changed rule that changed the verdict
            ours += (f'<br><small>first rule: <span style="color:{VERDICT_COLORS[r.first_rule]};white-space:nowrap">'
                     f"{r.first_rule}</span></small>")
        theirs = (f'<span style="color:{VERDICT_COLORS[r.authors_weights]};white-space:nowrap">{r.authors_weights}</span>'
                  if r.authors_weights in VERDICT_COLORS else "—")
        rows.append(f"| {claim} | {ours} | {theirs} |")
    return "\n".join([*rows, ":::"])


def readme_table(records: Path | None = None) -> str:
    """The README's short version: claim, paper, verdict, authors' weights (plain text)."""
    rows = ["| claim | paper | ours | under the first rule | authors' weights |", "|---|---|---|---|---|"]
    for r in claims_table(records).itertuples():
        rows.append(f"| {r.claim} {_cell(r.statement.split(':')[0])} | {_cell(r.paper)} | **{r.verdict}** |"
                    f" {_cell(r.first_rule)} | {r.authors_weights} |")
    return "\n".join(rows)


def hero_html(metrics_csv: Path) -> str:
    """The three phases of the main run as a plotly div (plotly.js is loaded once per page by the book)."""

    m = pd.read_csv(metrics_csv)
    # the whole main run: the paper's refinement window (14,500-16,000) and ours both show
    m = m[m["step"] <= paper.MAIN_STEPS.value]
    curves = {"0-var train (addition)": m["0var_train"], "1-var train (variable lookup)": m["1var_train"],
              "var-restricted pools, mean (refinement)": m[list(VAR_RESTRICTED)].mean(axis=1)}
    styles = (pool_style("0var_train"), pool_style("1var_train"), {"color": INK, "dash": "dash", "width": 2})
    data = [{"x": m["step"].tolist(), "y": [round(float(v), 4) for v in y], "name": name, "mode": "lines",
             "line": style} for (name, y), style in zip(curves.items(), styles)]
    ours = detect_phases(pd.read_csv(metrics_csv))
    shapes, notes = [], []
    for (start, end), text in [(JUMP_STEPS.value, "paper's jump"), (REFINEMENT_STEPS.value, "paper's refinement")]:
        shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": start, "x1": end, "y0": 0, "y1": 1,
                       "fillcolor": PAPER, "opacity": BAND_OPACITY, "line": {"width": 0}})
        notes.append({"x": (start + end) / 2, "y": 1.0, "xref": "x", "yref": "paper", "text": text,
                      "showarrow": False, "yanchor": "bottom", "font": {"size": 11, "color": PAPER}})
    for key, text in [("jump", "our jump"), ("refinement", "our final rise")]:
        if ours.get(key):
            shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": ours[key], "x1": ours[key], "y0": 0,
                           "y1": 1, "line": {"color": INK, "dash": "dot", "width": 1.5}})
            notes.append({"x": ours[key], "y": 0.04, "xref": "x", "yref": "paper", "text": f"{text} {ours[key]:,}",
                          "showarrow": False, "xanchor": "left", "font": {"size": 11, "color": INK}})
    layout = {"xaxis": {"title": {"text": "training step"}}, "yaxis": {"title": {"text": "accuracy"}, "range": [0, 1.02]},
              "height": 380, "margin": {"t": 30, "b": 40}, "legend": {"orientation": "h", "y": -0.25},
              "template": "plotly_white", "shapes": shapes, "annotations": notes}
    payload = json.dumps({"data": data, "layout": layout}, separators=(",", ":"))
    caption = ("<p class=\"figure-caption\">The three phases of our main run (seed 42) over its 40,000 steps; grey"
               " bands: the paper's windows, dotted lines: where ours happen.</p>\n")
    config = json.dumps(FIGURE_CONFIG, separators=(",", ":"))
    return (caption + f'<div id="hero-phases" class="plotly-graph-div" style="width:100%;height:380px"></div>\n'
            f"<script>window.addEventListener('load', function () {{ var f = {payload};"
            f" Plotly.newPlot('hero-phases', f.data, f.layout, {config}); }});</script>")


def replace_between(text: str, markers: tuple[str, str], body: str, where: str) -> str:
    start, end = markers
    if start not in text or end not in text:
        raise ValueError(f"{where}: lacks the {start} … {end} markers")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body}\n{end}{tail}"


def update(path: Path, parts: dict[tuple[str, str], str]) -> bool:
    """Rewrite the marked parts of a file; returns whether it changed."""
    text = path.read_text()
    new = text
    for markers, body in parts.items():
        new = replace_between(new, markers, body, str(path))
    if new != text:
        path.write_text(new)
    return new != text

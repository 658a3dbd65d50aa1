"""The overview diagram of the circuit the paper describes, as inline SVG for the front page (written by the book build,
`front_page.update`): tokens -> layer 1's previous-token head -> layer 2's identity QK lookup -> layer 2's OV move of the
value to `=` -> the Fourier addition MLP -> the answer.

Each part has its colour from `palette.PARTS` (the figures use the same); the text and arrows take the page's text
colour (`currentColor`), so the drawing follows the book's light and dark themes. Two drawings of the same diagram:
a wide one (two rows of three, read as a snake) for a laptop, a tall one (one column) for a phone; the page's style
shows one of them (book.css, figure.circuit)."""
from __future__ import annotations

import html
from dataclasses import dataclass

from .config import RunConfig
from .palette import PARTS

EXAMPLE = {"var": "a", "value": 40, "rhs": 27}  # the README's sequence: PAD PAD a 40 PAD j 18 ... + a 27 =


@dataclass(frozen=True)
class Node:
    part: str  # a key of palette.PARTS
    title: str
    detail: tuple[str, ...]  # lines in the wide drawing; one line in the tall one


def example_text() -> str:
    return f"{EXAMPLE['var']} {EXAMPLE['value']} … + {EXAMPLE['var']} {EXAMPLE['rhs']} ="


def nodes(modulus: int | None = None) -> list[Node]:
    """The six stages, in the order the answer is computed, with the example worked through them."""
    modulus = modulus or RunConfig().task.modulus
    var, value, rhs = EXAMPLE["var"], EXAMPLE["value"], EXAMPLE["rhs"]
    return [Node("embed", "tokens", (example_text(),)),
            Node("copy", "layer 1 attention", ("previous-token head:", f"{value} copies its variable {var}")),
            Node("lookup", "layer 2 QK", ("identity lookup: the", f"query's {var} finds {value}")),
            Node("move", "layer 2 OV", (f"moves the value {value}", "to the = position")),
            Node("mlp", "Fourier MLP", (f"adds {value} + {rhs}", f"mod {modulus}")),
            Node("unembed", "answer", (f"({value} + {rhs}) mod {modulus} = {(value + rhs) % modulus}",))]


@dataclass(frozen=True)
class Layout:
    columns: int
    box_w: int
    box_h: int
    gap_x: int
    gap_y: int
    joined: bool  # the detail on one line


LAYOUTS = {"wide": Layout(3, 196, 70, 38, 24, False), "tall": Layout(1, 330, 52, 0, 18, True)}
PAD, TITLE_SIZE, DETAIL_SIZE, LINE = 6, 15, 13, 17


def _box(node: Node, x: float, y: float, layout: Layout) -> str:
    colour = PARTS[node.part]
    lines = (" ".join(node.detail),) if layout.joined else node.detail
    texts = "".join(f'<text x="{x + 16}" y="{y + 42 + i * LINE}" font-size="{DETAIL_SIZE}" fill="currentColor"'
                    f' fill-opacity="0.85">{html.escape(line)}</text>' for i, line in enumerate(lines))
    return (f'<g class="circuit-node" data-part="{node.part}">'
            f'<rect x="{x}" y="{y}" width="{layout.box_w}" height="{layout.box_h}" rx="8" fill="{colour}"'
            f' fill-opacity="0.16" stroke="{colour}" stroke-width="2"/>'
            f'<rect x="{x}" y="{y}" width="7" height="{layout.box_h}" rx="3" fill="{colour}"/>'
            f'<text x="{x + 16}" y="{y + 22}" font-size="{TITLE_SIZE}" font-weight="600" fill="currentColor">'
            f"{html.escape(node.title)}</text>{texts}</g>")


def _arrow(x1: float, y1: float, x2: float, y2: float, kind: str) -> str:
    return (f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="currentColor" stroke-opacity="0.7"'
            f' stroke-width="2" marker-end="url(#circuit-arrow-{kind})"/>')


def drawing(kind: str, modulus: int | None = None) -> str:
    """One drawing (LAYOUTS[kind]): the stages in rows, each row after the first read the other way (a snake), arrows
    between consecutive stages."""
    layout, stages = LAYOUTS[kind], nodes(modulus)
    w, h = layout.box_w, layout.box_h
    rows = -(-len(stages) // layout.columns)
    width = PAD * 2 + layout.columns * w + (layout.columns - 1) * layout.gap_x
    height = PAD * 2 + rows * h + (rows - 1) * layout.gap_y
    places = []
    for i in range(len(stages)):
        row, col = divmod(i, layout.columns)
        col = col if row % 2 == 0 else layout.columns - 1 - col
        places.append((PAD + col * (w + layout.gap_x), PAD + row * (h + layout.gap_y)))
    arrows = []
    for (x1, y1), (x2, y2) in zip(places, places[1:]):
        if y1 == y2:  # along a row, either way
            right = x2 > x1
            arrows.append(_arrow(x1 + w + 2 if right else x1 - 2, y1 + h / 2, x2 - 4 if right else x2 + w + 4,
                                 y2 + h / 2, kind))
        else:  # down to the next row
            arrows.append(_arrow(x1 + w / 2, y1 + h + 2, x2 + w / 2, y2 - 4, kind))
    marker = (f'<defs><marker id="circuit-arrow-{kind}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6"'
              f' markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="currentColor"/>'
              f"</marker></defs>")
    label = " → ".join(node.title for node in stages)
    return (f'<svg class="circuit-{kind}" viewBox="0 0 {width} {height}" style="max-width:{width}px" role="img"'
            f' aria-label="{html.escape(label)}" xmlns="http://www.w3.org/2000/svg">{marker}{"".join(arrows)}'
            + "".join(_box(node, x, y, layout) for node, (x, y) in zip(stages, places)) + "</svg>")


def caption() -> str:
    return f"The circuit on <code>{html.escape(example_text())}</code>, in the colours of every figure of the book."


def circuit_html(modulus: int | None = None) -> str:
    """The figure for the front page, one line per drawing (Markdown ends an HTML block at a blank line)."""
    return (f'<figure class="circuit">\n{drawing("wide", modulus)}\n{drawing("tall", modulus)}\n'
            f"<figcaption>{caption()}</figcaption>\n</figure>")

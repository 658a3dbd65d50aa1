"""How long each page of the built book is to read: its height in screens at a laptop's 1280 x 800 and a phone's
390 x 844, with every fold closed (as a reader first meets it), and the words of its open text. Every page of the
build: the front page, the protocol, the chapters, the explorer (measured once its tool is drawn), the glossary, the
reproduce page and the bibliography.

    python benchmarks/page_lengths.py [BUILD_HTML_DIR [OTHER_BUILD_HTML_DIR]]

Default: _build/html (run `python -m assignadd_core.report.book build`). Given two builds (e.g. a copy of the HTML
before a change, and the build after it), both are measured in the same run, side by side. Measured in a headless
Chromium (Debian's `chromium`), served from this machine only."""
from __future__ import annotations

import functools
import http.server
import shutil
import sys
import threading
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from browser import Chromium  # noqa: E402  (the tests' CDP driver: no webdriver)

VIEWS = {"laptop": (1280, 800, False), "phone": (390, 844, True)}
# Measured once the page's figures are drawn and the explorer (where a page has one) shows its first answer.
READY = ("document.querySelector('main') !== null && (!window.Plotly || Array.from(document.querySelectorAll("
         "'.plotly-graph-div')).every(d => d.querySelector('.main-svg'))) && Array.from(document.querySelectorAll("
         "'div.ae[data-mode]')).every(d => d.querySelector('.ae-result') && d.querySelector('.ae-result').children.length)")
# The page's height and the words a reader sees with every fold closed (a closed <details> shows its summary only).
MEASURE = """(() => {
  const main = document.querySelector('main') || document.body;
  const copy = main.cloneNode(true);
  copy.querySelectorAll('details:not([open]) > :not(summary), script, style, .plotly-graph-div').forEach(e => e.remove());
  return {height: document.documentElement.scrollHeight, words: (copy.innerText.match(/\\S+/g) || []).length};
})()"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def toc_files(toc: Path = ROOT / "_toc.yml") -> list[str]:
    """The pages the table of contents lists, in its order (without their suffix)."""
    data = yaml.safe_load(toc.read_text())
    files = [data["root"]]
    for part in data.get("parts", []):
        files += [entry["file"] for entry in part.get("chapters", [])]
    return files


def pages(html: Path) -> list[Path]:
    """Every page of a build: those of the table of contents in its order, then any other page under book/."""
    listed = [html / f"{name}.html" for name in toc_files()]
    found = [p for p in listed if p.is_file()]
    return found + sorted(set(html.glob("book/**/*.html")) - set(found))


def measure(html: Path, binary: str) -> dict[str, dict]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(html)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    rows = {}
    try:
        for view, (width, height, phone) in VIEWS.items():
            browser = Chromium(binary, width=width, height=height, phone=phone)
            try:
                for page in pages(html):
                    url = f"http://127.0.0.1:{httpd.server_port}/{page.relative_to(html).as_posix()}"
                    got = browser.visit(url, MEASURE, ready=READY).result
                    name = page.relative_to(html).with_suffix("").as_posix().removeprefix("book/")
                    rows.setdefault(name, {})[view] = got["height"] / height
                    rows[name]["words"] = got["words"]
            finally:
                browser.close()
    finally:
        httpd.shutdown()
    return rows


def builds_and_browser(argv: list[str]) -> tuple[list[Path], str]:
    """The builds named on the command line (one or two; default _build/html) and Chromium's binary, or an exit with
    the line that says what is missing."""
    builds = [Path(p) for p in argv[:2]] or [ROOT / "_build" / "html"]
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    for html in builds:
        if not html.is_dir():
            raise SystemExit(f"no built book at {html}: run `python -m assignadd_core.report.book build` first")
    if binary is None:
        raise SystemExit("no chromium on PATH (Debian: apt install chromium)")
    return builds, binary


def main() -> None:
    builds, binary = builds_and_browser(sys.argv[1:])
    measured = [measure(html, binary) for html in builds]
    names = list(dict.fromkeys(name for rows in measured for name in rows))
    keys = ("laptop", "phone", "words")
    if len(measured) == 1:
        rows = measured[0]
        print(f"{'page':<28} {'laptop screens':>15} {'phone screens':>14} {'open words':>11}")
        for name, row in rows.items():
            print(f"{name:<28} {row['laptop']:>15.1f} {row['phone']:>14.1f} {row['words']:>11,}")
        total = {k: sum(r[k] for r in rows.values()) for k in keys}
        print(f"{'all':<28} {total['laptop']:>15.1f} {total['phone']:>14.1f} {total['words']:>11,}")
        return
    print(f"{'page':<28} {'laptop before':>14} {'after':>6} {'phone before':>13} {'after':>6} {'words before':>13}"
          f" {'after':>6}")
    for name in names:
        cells = []
        for key, digits in (("laptop", ".1f"), ("phone", ".1f"), ("words", ",")):
            cells += [format(rows[name][key], digits) if name in rows else "-" for rows in measured]
        print(f"{name:<28} {cells[0]:>14} {cells[1]:>6} {cells[2]:>13} {cells[3]:>6} {cells[4]:>13} {cells[5]:>6}")
    totals = [{k: sum(r[k] for r in rows.values()) for k in keys} for rows in measured]
    print(f"{'all':<28} {totals[0]['laptop']:>14.1f} {totals[1]['laptop']:>6.1f} {totals[0]['phone']:>13.1f}"
          f" {totals[1]['phone']:>6.1f} {totals[0]['words']:>13,} {totals[1]['words']:>6,}")


if __name__ == "__main__":
    main()

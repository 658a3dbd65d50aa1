"""How long each page of the built book is to read: its height in screens at a laptop's 1280 x 800 and a phone's
390 x 844, with every fold closed (as a reader first meets it), and the words of its open text.

    python benchmarks/page_lengths.py [BUILD_HTML_DIR]   # default: _build/html (run `python -m assignadd_core.book build`)

Measured in a headless Chromium (Debian's `chromium`), served from this machine only."""
from __future__ import annotations

import functools
import http.server
import shutil
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from browser import Chromium  # noqa: E402  (the tests' CDP driver: no webdriver)

VIEWS = {"laptop": (1280, 800, False), "phone": (390, 844, True)}
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


def pages(html: Path) -> list[Path]:
    return [html / "book" / "intro.html", *sorted((html / "book" / "chapters").glob("[0-9][0-9]_*.html"))]


def main() -> None:
    html = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "html"
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if not html.is_dir():
        raise SystemExit(f"no built book at {html}: run `python -m assignadd_core.book build` first")
    if binary is None:
        raise SystemExit("no chromium on PATH (Debian: apt install chromium)")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(html)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    rows = {}
    try:
        for view, (width, height, phone) in VIEWS.items():
            browser = Chromium(binary, width=width, height=height, phone=phone)
            try:
                for page in pages(html):
                    url = f"http://127.0.0.1:{httpd.server_port}/{page.relative_to(html)}"
                    got = browser.visit(url, MEASURE, ready="document.querySelector('main') !== null").result
                    rows.setdefault(page.stem, {})[view] = got["height"] / height
                    rows[page.stem]["words"] = got["words"]
            finally:
                browser.close()
    finally:
        httpd.shutdown()
    print(f"{'page':<22} {'laptop screens':>15} {'phone screens':>14} {'open words':>11}")
    for name, row in rows.items():
        print(f"{name:<22} {row['laptop']:>15.1f} {row['phone']:>14.1f} {row['words']:>11,}")
    total = {k: sum(r[k] for r in rows.values()) for k in ("laptop", "phone", "words")}
    print(f"{'all':<22} {total['laptop']:>15.1f} {total['phone']:>14.1f} {total['words']:>11,}")


if __name__ == "__main__":
    main()

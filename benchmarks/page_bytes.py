"""What each page of the built book costs a reader to load: the bytes transferred on a first visit (no cache, headers
included) in a headless Chromium at a laptop's 1280 x 800, split into plotly.js, the theme's icon font (Font Awesome),
MathJax, the explorer's models and the rest; the bytes of the scripts that block the first paint (a script in the
page's head without `defer` or `async`: the browser draws nothing until it has loaded and run it); and the time to
the first paint (first-contentful-paint, one visit: noisy on a busy machine).

    python benchmarks/page_bytes.py [BUILD_HTML_DIR [OTHER_BUILD_HTML_DIR]]

Default: _build/html (run `python -m assignadd_core.report.book build`). Given two builds (e.g. a copy of the HTML
before a change, and the build after it), both are measured in the same run and the table gives each page's bytes in
both and their ratio. Served from this machine only; a request that would leave it is refused and reported."""
from __future__ import annotations

import functools
import http.server
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from browser import Chromium  # noqa: E402  (the tests' CDP driver: no webdriver)
from page_lengths import READY, builds_and_browser, pages  # noqa: E402  (the same pages, ready at the same point)

WIDTH, HEIGHT = 1280, 800
# Scripts the browser must load and run before it draws (in <head>, neither defer nor async nor a module), and the
# first contentful paint.
MEASURE = """(() => {
  const blocking = Array.from(document.head.querySelectorAll("script[src]"))
    .filter(s => !s.defer && !s.async && s.type !== "module").map(s => s.src);
  const paint = performance.getEntriesByName("first-contentful-paint")[0];
  return {blocking: blocking, first_paint: paint ? paint.startTime : null};
})()"""
KINDS = (("plotly", lambda path: path.endswith("/plotly.min.js")),
         ("icon font", lambda path: "fontawesome" in path or "/webfonts/" in path),
         ("mathjax", lambda path: "/mathjax/" in path),
         ("explorer models", lambda path: "/_static/explorer/" in path))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def kind_of(url: str) -> str:
    path = urlsplit(url).path
    return next((name for name, match in KINDS if match(path)), "other")


def measure(html: Path, binary: str) -> dict[str, dict]:
    """Per page (its path in the build, without .html): total bytes, bytes per kind, blocking-script bytes, first
    paint in ms, and the URLs that would have left the machine."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(html)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    browser = Chromium(binary, width=WIDTH, height=HEIGHT, cache=False)
    rows = {}
    try:
        for page in pages(html):
            url = f"http://127.0.0.1:{httpd.server_port}/{page.relative_to(html).as_posix()}"
            report = browser.visit(url, MEASURE, ready=READY)
            sent = report.transferred()
            strip = lambda u: u.split("?")[0]  # noqa: E731  (Sphinx adds ?v=digest to the script's URL)
            by_url = {strip(u): b for u, b in sent.items()}
            kinds = {name: 0 for name, _ in KINDS} | {"other": 0}
            for u, b in sent.items():
                kinds[kind_of(u)] += b
            rows[page.relative_to(html).with_suffix("").as_posix()] = {
                "bytes": sum(sent.values()), "kinds": kinds,
                "blocking": sum(by_url.get(strip(u), 0) for u in report.result["blocking"]),
                "first_paint": report.result["first_paint"], "external": report.external}
    finally:
        browser.close()
        httpd.shutdown()
    return rows


def mb(n: float) -> str:
    return f"{n / 1e6:.2f}"


def main() -> None:
    builds, binary = builds_and_browser(sys.argv[1:])
    measured = [measure(html, binary) for html in builds]
    names = list(dict.fromkeys(name for rows in measured for name in rows))
    left = [u for rows in measured for row in rows.values() for u in row["external"]]
    if len(measured) == 1:
        rows = measured[0]
        print(f"{'page':<34} {'MB':>6} {'plotly':>7} {'icons':>6} {'mathjax':>8} {'models':>7} {'other':>6}"
              f" {'blocking':>9} {'paint ms':>9}")
        for name in names:
            r, k = rows[name], rows[name]["kinds"]
            paint = f"{r['first_paint']:.0f}" if r["first_paint"] is not None else "-"
            print(f"{name:<34} {mb(r['bytes']):>6} {mb(k['plotly']):>7} {mb(k['icon font']):>6} {mb(k['mathjax']):>8}"
                  f" {mb(k['explorer models']):>7} {mb(k['other']):>6} {mb(r['blocking']):>9} {paint:>9}")
        total = sum(r["bytes"] for r in rows.values())
        print(f"{'all ' + str(len(rows)) + ' pages':<34} {mb(total):>6}  (MB: millions of bytes transferred)")
    else:
        a, b = measured
        print(f"{'page':<34} {'MB before':>10} {'MB after':>9} {'after/before':>13} {'blocking before':>16}"
              f" {'after':>6} {'paint ms before':>16} {'after':>6}")
        for name in names:
            ra, rb = a.get(name), b.get(name)
            cell = lambda r, key: mb(r[key]) if r else "-"  # noqa: E731
            paint = lambda r: f"{r['first_paint']:.0f}" if r and r["first_paint"] is not None else "-"  # noqa: E731
            ratio = f"{rb['bytes'] / ra['bytes']:.3f}" if ra and rb else "-"
            print(f"{name:<34} {cell(ra, 'bytes'):>10} {cell(rb, 'bytes'):>9} {ratio:>13} {cell(ra, 'blocking'):>16}"
                  f" {cell(rb, 'blocking'):>6} {paint(ra):>16} {paint(rb):>6}")
        ta, tb = (sum(r["bytes"] for r in rows.values()) for rows in measured)
        print(f"{'all pages':<34} {mb(ta):>10} {mb(tb):>9} {tb / ta:>13.3f}  (MB: millions of bytes transferred;"
              f" {len(a)} and {len(b)} pages)")
    if left:
        print(f"requests that would have left the machine (refused): {len(left)}, e.g. {left[0]}")


if __name__ == "__main__":
    main()

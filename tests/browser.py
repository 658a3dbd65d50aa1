"""A headless Chromium driven over the DevTools protocol (CDP), for the book's browser tests.

Only the standard library, tornado's websocket client (installed with ipykernel) and Debian's chromium:
no webdriver. Every request the page makes goes through `Fetch`: requests to this machine (file:,
data:, blob:, http(s) on 127.0.0.1 / localhost / [::1]) continue, any other is failed before it leaves
and recorded; Chromium also resolves no host name but localhost (`--host-resolver-rules`), so a
request that escaped `Fetch` could not leave either (and `Network` records it too). Console errors,
uncaught exceptions and error log entries (a resource that failed to load) are recorded per page, and so are the
bytes each request transferred (`PageReport.transferred`: what the page cost to load, headers included).
"""
from __future__ import annotations

import asyncio
import json
import re
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}
LOCAL_SCHEMES = {"file", "data", "blob", "about", "chrome", "chrome-extension", "devtools"}


def is_local(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return True
    return parts.scheme in ("http", "https", "ws", "wss") and (parts.hostname or "") in LOCAL_HOSTS


@dataclass
class PageReport:
    url: str
    external: list[str] = field(default_factory=list)  # requests that would have left the machine
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, error log entries
    result: object = None  # the value of the script evaluated after load
    transfers: dict = field(default_factory=dict)  # request id -> {"url", "bytes"} (bytes over the wire, headers included)

    def transferred(self) -> dict[str, int]:
        """Bytes transferred per URL (a URL requested twice counts twice)."""
        out: dict[str, int] = {}
        for item in self.transfers.values():
            out[item["url"]] = out.get(item["url"], 0) + item["bytes"]
        return out


class Chromium:
    """One headless Chromium process and one tab; `visit(url, script)` loads a page and returns a PageReport."""

    def __init__(self, binary: str, width: int = 1280, height: int = 900, phone: bool = False, cache: bool = True):
        """phone: emulate a phone's screen (the page's viewport meta tag applies) and its touch input (the primary
        pointer is coarse: `(pointer: coarse)` matches, touch events fire). cache=False: every visit loads every
        file again, as a first visit does (what `PageReport.transferred` then counts)."""
        self.profile = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)  # chromium may still write there as it exits
        cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
               "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
               f"--user-data-dir={self.profile.name}", "--remote-debugging-port=0",
               f"--window-size={width},{height}", "about:blank"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        browser_ws = self._devtools_url()
        self.loop = asyncio.new_event_loop()
        self.ws = self.loop.run_until_complete(self._connect(browser_ws))
        self.next_id, self.session, self.report = 0, None, None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call("Fetch.enable", patterns=[{"urlPattern": "*"}])
        if not cache:
            self.call("Network.setCacheDisabled", cacheDisabled=True)
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=phone)
        if phone:
            self.call("Emulation.setTouchEmulationEnabled", enabled=True, maxTouchPoints=5)

    def _devtools_url(self) -> str:
        deadline = time.monotonic() + 60
        for line in self.proc.stderr:
            match = re.search(r"DevTools listening on (ws://\S+)", line)
            if match:
                # keep reading its standard error, so that chromium never blocks on a full pipe
                threading.Thread(target=self.proc.stderr.read, daemon=True).start()
                return match.group(1)
            if time.monotonic() > deadline:
                break
        self.close()
        raise RuntimeError("chromium did not start its DevTools endpoint")

    @staticmethod
    async def _connect(url: str):
        from tornado.websocket import websocket_connect
        return await websocket_connect(url, max_message_size=256 * 1024 * 1024)

    # ------------------------------------------------------------------ protocol
    def call(self, method: str, timeout: float = 60, **params):
        return self.loop.run_until_complete(self._call(method, params, timeout))

    async def _send(self, method: str, params: dict, session: bool = True) -> int:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session and self.session:
            message["sessionId"] = self.session
        await self.ws.write_message(json.dumps(message))
        return self.next_id

    async def _call(self, method: str, params: dict, timeout: float):
        wanted = await self._send(method, params, session=not method.startswith("Target."))
        deadline = time.monotonic() + timeout
        while True:
            message = await self._receive(deadline - time.monotonic())
            if message is None:
                raise TimeoutError(f"no answer to {method} in {timeout} s")
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    async def _receive(self, seconds: float):
        """The next message (events are handled on the way); None when `seconds` pass without one."""
        try:
            raw = await asyncio.wait_for(self.ws.read_message(), max(seconds, 0.001))
        except asyncio.TimeoutError:
            return None
        if raw is None:
            raise RuntimeError("chromium closed the DevTools connection")
        message = json.loads(raw)
        if "method" in message:
            await self._event(message["method"], message.get("params", {}))
        return message

    async def _event(self, method: str, params: dict) -> None:
        report = self.report
        if method == "Fetch.requestPaused":
            url = params["request"]["url"]
            if is_local(url):
                await self._send("Fetch.continueRequest", {"requestId": params["requestId"]})
            else:
                if report is not None:
                    report.external.append(url)
                await self._send("Fetch.failRequest", {"requestId": params["requestId"],
                                                       "errorReason": "BlockedByClient"})
        elif report is None:
            return
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if not is_local(url) and url not in report.external:
                report.external.append(url)
            report.transfers[params["requestId"]] = {"url": url, "bytes": 0}
        elif method == "Network.loadingFinished" and params.get("requestId") in report.transfers:
            report.transfers[params["requestId"]]["bytes"] = int(params.get("encodedDataLength", 0))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            report.errors.append(f"console.{params['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text", "")
            report.errors.append(f"uncaught: {text.splitlines()[0] if text else details}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            report.errors.append(f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}".strip())

    async def _pump(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await self._receive(deadline - time.monotonic())

    # ------------------------------------------------------------------ pages
    def visit(self, url: str, script: str | None = None, ready: str = "true", timeout: float = 90,
              settle: float = 1.0) -> PageReport:
        """Load `url`; wait for the load event, then until the JS expression `ready` is true, then `settle`
        seconds more (late requests, errors); evaluate `script` (an expression) into the report."""
        self.report = report = PageReport(url)
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                state = self.call("Runtime.evaluate", returnByValue=True,
                                  expression=f"document.readyState === 'complete' && ({ready})")
            except RuntimeError:  # the page is being replaced: its context is gone
                state = {}
            if state.get("result", {}).get("value") is True:
                break
            self.loop.run_until_complete(self._pump(0.25))
        else:
            report.errors.append(f"page not ready after {timeout} s ({ready})")
        self.loop.run_until_complete(self._pump(settle))
        if script:
            answer = self.call("Runtime.evaluate", expression=script, returnByValue=True, awaitPromise=True)
            if "exceptionDetails" in answer:
                raise RuntimeError(f"the measuring script failed: {answer['exceptionDetails']}")
            report.result = answer.get("result", {}).get("value")
        self.report = None
        return report

    def close(self) -> None:
        try:
            if getattr(self, "ws", None) is not None:
                self.ws.close()
                self.loop.run_until_complete(asyncio.sleep(0))
        finally:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
            if getattr(self, "loop", None) is not None:
                self.loop.close()
            self.profile.cleanup()

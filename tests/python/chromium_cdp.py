"""A headless Chromium driven over the DevTools protocol through
``--remote-debugging-pipe`` (file descriptors 3 and 4, NUL-separated JSON;
no WebSocket library needed): load a page, send it real input events
(``Input.dispatchMouseEvent``: wheel, press, move, release), evaluate
JavaScript and take screenshots. Used by tests/python/test_report_explore.py.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    return None


class Browser:
    """One headless Chromium with one page (``width`` x ``height`` CSS px)."""

    def __init__(self, width: int = 1280, height: int = 900, timeout: float = 60.0) -> None:
        exe = chromium_path()
        if exe is None:
            raise FileNotFoundError("no chromium on PATH")
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="irqlab-cdp-")
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        # copies at 10 and above, so the dup2 to 3 and 4 never overwrites them
        hi_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD_CLOEXEC, 10)
        hi_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_chrome_r)
        os.close(from_chrome_w)

        def child() -> None:
            os.dup2(hi_r, 3)  # inheritable: chromium reads commands here
            os.dup2(hi_w, 4)  # and writes answers here

        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--remote-debugging-pipe", f"--user-data-dir={self._profile.name}",
             f"--window-size={width},{height}", "--force-device-scale-factor=1",
             "about:blank"],
            preexec_fn=child, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(hi_r)
        os.close(hi_w)
        self._w = to_chrome_w
        self._r = from_chrome_r
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": page["targetId"], "flatten": True})["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=True)

    # ---- the protocol --------------------------------------------------------

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return dict(json.loads(msg))

    def call(self, method: str, params: dict[str, Any] | None = None, *,
             session: bool = False) -> dict[str, Any]:
        """Send one command and wait for its answer (events seen meanwhile
        are kept in ``events``)."""
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return dict(m.get("result", {}))
            self.events.append(m)

    # ---- what a test does ----------------------------------------------------

    def goto(self, page: Path) -> None:
        """Load ``page`` and wait for its load event."""
        self.events.clear()
        self.call("Page.navigate", {"url": page.as_uri()}, session=True)
        deadline = time.monotonic() + self.timeout
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._read_message(deadline))

    def eval(self, expr: str) -> Any:
        """The value of a JavaScript expression (promises awaited)."""
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True}, session=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expr: str, timeout: float = 30.0) -> Any:
        """Poll ``expr`` until it is truthy; returns its value."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            v = self.eval(expr)
            if v:
                return v
            time.sleep(0.05)
        raise TimeoutError(f"never true: {expr}")

    def frames(self, n: int = 2) -> None:
        """Wait for ``n`` animation frames (the page redraws in one)."""
        self.eval("new Promise(r => { let k = " + str(n) + "; const f = () => --k ? "
                  "requestAnimationFrame(f) : r(0); requestAnimationFrame(f); })")

    def mouse(self, kind: str, x: float, y: float, **extra: Any) -> None:
        """One ``Input.dispatchMouseEvent`` (``mouseWheel``, ``mousePressed``,
        ``mouseMoved``, ``mouseReleased``) at viewport ``(x, y)``."""
        self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, **extra},
                  session=True)

    def wheel(self, x: float, y: float, delta_y: float) -> None:
        self.mouse("mouseWheel", x, y, deltaX=0, deltaY=delta_y)
        self.frames()

    def drag(self, x0: float, y: float, x1: float, steps: int = 8) -> None:
        self.mouse("mousePressed", x0, y, button="left", buttons=1, clickCount=1)
        for k in range(1, steps + 1):
            self.mouse("mouseMoved", x0 + (x1 - x0) * k / steps, y, button="left", buttons=1)
        self.mouse("mouseReleased", x1, y, button="left", buttons=0, clickCount=1)
        self.frames()

    def screenshot(self, path: Path) -> Path:
        """The viewport as a PNG."""
        data = self.call("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

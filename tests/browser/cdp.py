"""A tiny Chrome DevTools Protocol driver over Chromium's --remote-debugging-pipe: the
browser reads commands from file descriptor 3 and writes replies and events to 4, each
message JSON ended by a NUL byte. No browser download, no network, standard library only.

    with Browser("/usr/bin/chromium") as b:
        page = b.new_page(1280, 900)
        page.navigate("file:///tmp/x.html")
        page.evaluate("document.title")
"""

import base64
import json
import os
import select
import subprocess
import tempfile
import time


class CdpError(RuntimeError):
    pass


class Browser:
    def __init__(self, binary="/usr/bin/chromium", timeout=60):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="cdp-profile.")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # The browser's descriptors 3 and 4, given to it by the shell that execs it.
        high_r = os.dup2(to_chrome_r, 100, inheritable=False)
        high_w = os.dup2(from_chrome_w, 101, inheritable=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        args = [binary, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-extensions",
                "--disable-default-apps", "--disable-quic", "--hide-scrollbars", "--mute-audio",
                "--user-data-dir=" + self.profile, "about:blank"]
        self.log = open(os.path.join(self.profile, "chromium.log"), "w")
        self.proc = subprocess.Popen(
            ["/bin/bash", "-c", 'exec "$@" 3<&100 4>&101 100<&- 101>&-', "cdp"] + args,
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
            pass_fds=(100, 101))
        os.close(high_r)
        os.close(high_w)
        self._buf = b""
        self._next_id = 0
        self.events = []  # (sessionId, method, params), every event seen

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send("Browser.close")
            except Exception:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
        subprocess.run(["rm", "-rf", self.profile], check=False)

    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("timed out waiting for the browser")
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise CdpError("the browser closed its pipe (see chromium.log)")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None):
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CdpError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            if "method" in reply:
                self.events.append((reply.get("sessionId"), reply["method"], reply.get("params", {})))

    def wait_event(self, method, session=None, timeout=None):
        """The first event `method` not yet consumed (of `session` when given)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for i, (sid, m, params) in enumerate(self.events):
                if m == method and (session is None or sid == session) and not params.get("_seen"):
                    params["_seen"] = True
                    return params
            reply = self._read_message(deadline)
            if "method" in reply:
                self.events.append((reply.get("sessionId"), reply["method"], reply.get("params", {})))

    def new_page(self, width, height):
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.send(domain + ".enable")
        page.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        return page


class Page:
    def __init__(self, browser, session):
        self.browser = browser
        self.session = session

    def send(self, method, params=None):
        return self.browser.send(method, params, self.session)

    def events(self, method):
        return [p for sid, m, p in self.browser.events if sid == self.session and m == method]

    def navigate(self, url):
        self.send("Page.navigate", {"url": url})
        self.browser.wait_event("Page.loadEventFired", self.session)

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise CdpError("evaluate failed: %s\n%s" % (expression, json.dumps(result["exceptionDetails"])))
        return result["result"].get("value")

    def click(self, selector):
        """A real mouse click (moved, pressed, released) at the element's centre."""
        box = self.evaluate(
            "(() => { const e = document.querySelector(%s); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()" % json.dumps(selector))
        if box is None:
            raise CdpError("no element " + selector)
        x, y = box
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent",
                      {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def hover(self, selector):
        box = self.evaluate(
            "(() => { const r = document.querySelector(%s).getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()" % json.dumps(selector))
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": box[0], "y": box[1]})

    def screenshot(self, path, full_page=True):
        params = {"format": "png"}
        if full_page:
            size = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

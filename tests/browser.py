"""A headless Chromium driven over the DevTools protocol, to check rendered HTML in a browser.

``Chromium`` starts Debian's ``chromium --headless=new`` with ``--remote-debugging-port=0``,
reads the port it chose from the profile's ``DevToolsActivePort`` file and talks to it over
one websocket (``websocket-client``, in the ``test`` extra). ``check_page`` opens a file in a
new tab, waits for its load event and returns what a reader would see go wrong: images that
did not load, console errors, and in-page links to ids that do not exist.

No chromium-driver or Selenium: the protocol calls needed are few (Target, Page, Runtime, Log).
"""
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
    "--no-first-run", "--no-default-browser-check", "--disable-extensions",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--mute-audio", "--hide-scrollbars",
]

# Runs in the page once it has loaded: waits for images still loading (bounded, so that a
# lazy image cannot hang it), lets late scripts run, then reports images, links and tables.
CHECK_JS = """
(async () => {
  const images = Array.from(document.images);
  const settled = img => img.complete ? null : new Promise(done => {
    img.addEventListener('load', done, {once: true});
    img.addEventListener('error', done, {once: true});
  });
  await Promise.race([Promise.all(images.map(settled)),
                      new Promise(done => setTimeout(done, %(image_wait_ms)d))]);
  await new Promise(done => setTimeout(done, 50));
  const target = href => {
    let id = href.slice(1);
    try { id = decodeURIComponent(id); } catch (e) {}
    return id !== '' && document.getElementById(id) !== null;
  };
  return {
    title: document.title,
    tables: document.querySelectorAll('table').length,
    images: images.map(img => ({
      src: (img.getAttribute('src') || '').slice(0, 60), alt: img.alt,
      complete: img.complete, naturalWidth: img.naturalWidth})),
    links: Array.from(document.querySelectorAll('a[href^="#"]')).map(a => ({
      href: a.getAttribute('href'), text: a.textContent.trim().slice(0, 80),
      resolves: target(a.getAttribute('href'))})),
  };
})()
"""


class BrowserUnavailable(Exception):
    """Chromium (or the websocket client) is missing, or the browser did not start."""


def chromium_executable():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageCheck:
    """What ``Chromium.check_page`` saw on one page."""
    url: str
    title: str
    tables: int
    images: list = field(default_factory=list)          # {src, alt, complete, naturalWidth}
    links: list = field(default_factory=list)           # {href, text, resolves}
    console_errors: list = field(default_factory=list)  # message texts

    @property
    def broken_images(self):
        return [img for img in self.images if not (img["complete"] and img["naturalWidth"] > 0)]

    @property
    def dangling_links(self):
        return [link for link in self.links if not link["resolves"]]

    def problems(self):
        """One line per failure: broken image, console error, dangling in-page link."""
        return ([f"image did not load: alt={img['alt']!r} src={img['src']!r}"
                 for img in self.broken_images]
                + [f"console error: {text}" for text in self.console_errors]
                + [f"link to a missing id: {link['href']} ({link['text']!r})"
                   for link in self.dangling_links])


class Chromium:
    """One headless Chromium; ``start`` it, ``check_page`` any number of files, ``stop`` it."""

    def __init__(self, timeout=30.0):
        self.timeout = timeout
        self.proc = None
        self.ws = None
        self.events = []
        self._ids = itertools.count(1)
        self._dir = None

    # ------------------------------------------------------------ process

    def start(self):
        executable = chromium_executable()
        if executable is None:
            raise BrowserUnavailable("no chromium on PATH (Debian: apt-get install chromium)")
        try:
            import websocket
        except ImportError:
            raise BrowserUnavailable("websocket-client is not installed (pip install -e '.[test]')")
        self._dir = tempfile.mkdtemp(prefix="inductionlab-chromium-")
        profile = Path(self._dir) / "profile"
        log = Path(self._dir) / "chromium.log"
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while True:
            lines = port_file.read_text().split("\n") if port_file.exists() else []
            if len(lines) >= 2 and lines[0].strip() and lines[1].strip():
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                status = (f"exited with status {self.proc.returncode}" if self.proc.poll() is not None
                          else f"opened no DevTools port in {self.timeout:.0f} s")
                tail = log.read_text(errors="replace")[-1500:]
                self.stop()
                raise BrowserUnavailable(f"{executable} {status}: {tail}")
            time.sleep(0.05)
        try:
            self.ws = websocket.create_connection(
                f"ws://127.0.0.1:{lines[0].strip()}{lines[1].strip()}",
                timeout=self.timeout, suppress_origin=True)
        except Exception as err:
            self.stop()
            raise BrowserUnavailable(f"cannot connect to the DevTools websocket: {err}")

    def stop(self):
        if self.ws is not None:
            try:
                self._send("Browser.close")
            except Exception:
                pass
            try:
                self.ws.close()
            except Exception:
                pass
            self.ws = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    try:
                        os.killpg(self.proc.pid, sig)  # the group this object started
                    except ProcessLookupError:
                        break
                    try:
                        self.proc.wait(timeout=5)
                        break
                    except subprocess.TimeoutExpired:
                        pass
            self.proc = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    # ------------------------------------------------------------ protocol

    def _send(self, method, params=None, session=None):
        message = {"id": next(self._ids), "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        return message["id"]

    def _receive(self, deadline):
        self.ws.settimeout(max(deadline - time.monotonic(), 0.01))
        return json.loads(self.ws.recv())

    def call(self, method, params=None, session=None):
        """Send a command and return its result; events that arrive meanwhile are kept."""
        id_ = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._receive(deadline)
            if message.get("id") == id_:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_for(self, match, what):
        """The first kept or new event for which ``match(event)`` holds."""
        deadline = time.monotonic() + self.timeout
        seen = 0
        while True:
            for event in self.events[seen:]:
                if match(event):
                    return event
            seen = len(self.events)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {what} in {self.timeout:.0f} s")
            message = self._receive(deadline)
            if "method" in message:
                self.events.append(message)

    # ------------------------------------------------------------ pages

    def check_page(self, path, image_wait_ms=10000):
        """Open ``path`` (a local file) in a new tab and return a ``PageCheck``."""
        url = Path(path).resolve().as_uri()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        try:
            for domain in ("Page", "Runtime", "Log"):
                self.call(f"{domain}.enable", session=session)
            self.call("Page.setLifecycleEventsEnabled", {"enabled": True}, session=session)
            nav = self.call("Page.navigate", {"url": url}, session=session)
            if nav.get("errorText"):
                raise RuntimeError(f"cannot open {url}: {nav['errorText']}")
            self.wait_for(lambda e: e.get("sessionId") == session
                          and e["method"] == "Page.lifecycleEvent"
                          and e["params"]["name"] == "load"
                          and e["params"]["loaderId"] == nav["loaderId"], f"load event of {url}")
            result = self.call("Runtime.evaluate", {
                "expression": CHECK_JS % {"image_wait_ms": image_wait_ms},
                "awaitPromise": True, "returnByValue": True}, session=session)
            if "exceptionDetails" in result:
                raise RuntimeError(f"the check script failed: {result['exceptionDetails']}")
            page = result["result"]["value"]
            errors = [_error_text(e) for e in self.events if e.get("sessionId") == session]
            return PageCheck(url=url, title=page["title"], tables=page["tables"],
                             images=page["images"], links=page["links"],
                             console_errors=[text for text in errors if text is not None])
        finally:
            self.events = [e for e in self.events if e.get("sessionId") != session]
            self.call("Target.closeTarget", {"targetId": target})


def _error_text(event):
    """The message of an error-level console or log event (a "severe" browser log entry)."""
    method, params = event["method"], event["params"]
    if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
        return " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params["args"])
    if method == "Runtime.exceptionThrown":
        details = params["exceptionDetails"]
        return details.get("exception", {}).get("description") or details.get("text", "")
    if method == "Log.entryAdded" and params["entry"]["level"] == "error":
        entry = params["entry"]
        return entry["text"] + (f" ({entry['url']})" if entry.get("url") else "")
    return None

"""Headless Chromium driven over the DevTools protocol with a stdlib WebSocket client (no test dependency).

`Browser()` starts Debian's `chromium` with DevTools on 127.0.0.1 (a free port) and a throwaway profile;
`Browser.open(url)` loads a page in a fresh tab and records its console errors, uncaught exceptions and every
network request; `Page.evaluate` runs an expression, `Page.screenshot` returns PNG bytes. `png_pixels` decodes
a PNG (8-bit RGB/RGBA, all five filters) with zlib and numpy so the screenshot can be checked for content.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
import zlib
from typing import Any

import numpy as np

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
]
TIMEOUT = 60.0


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class WebSocket:
    """Just enough of RFC 6455 for DevTools: masked text frames out, (fragmented) text frames in."""

    def __init__(self, url: str, timeout: float) -> None:
        match = re.fullmatch(r"ws://([^/:]+):(\d+)(/.*)", url)
        if not match:
            raise ValueError(f"not a ws:// url: {url!r}")
        host, port, path = match.group(1), int(match.group(2)), match.group(3)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("DevTools closed the connection during the handshake")
            reply += chunk
        head, self.buffer = reply.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"WebSocket handshake refused: {head[:200]!r}")

    def _exact(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send(self, text: str, opcode: int = 0x1) -> None:
        payload = text.encode()
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def recv(self) -> str:
        parts: list[bytes] = []
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", self._exact(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", self._exact(8))
            mask = self._exact(4) if b1 & 0x80 else b""
            payload = self._exact(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise ConnectionError("DevTools closed the WebSocket")
            if opcode == 0x9:
                self.send(payload.decode(errors="replace"), opcode=0xA)
                continue
            if opcode in (0x0, 0x1, 0x2):
                parts.append(payload)
                if b0 & 0x80:
                    return b"".join(parts).decode()

    def close(self) -> None:
        self.sock.close()


class Page:
    """One tab: DevTools commands, and the events it has seen since it was opened."""

    def __init__(self, ws_url: str) -> None:
        self.ws = WebSocket(ws_url, TIMEOUT)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            if "method" in message:
                self.events.append(message)

    def wait_for(self, event: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            for message in self.events[seen:]:
                if message["method"] == event:
                    return message
            seen = len(self.events)
            self.events.append(json.loads(self.ws.recv()))
        raise TimeoutError(event)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"]

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (a CSP violation is one)."""
        out = []
        for e in self.events:
            p = e["params"]
            if e["method"] == "Runtime.exceptionThrown":
                out.append(json.dumps(p["exceptionDetails"])[:500])
            elif e["method"] == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert", "warning"):
                out.append(json.dumps(p["args"])[:500])
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                out.append(p["entry"]["text"][:500])
        return out

    def close(self) -> None:
        self.ws.close()


class Browser:
    def __init__(self, binary: str, width: int = 1200, height: int = 900) -> None:
        self.profile = tempfile.mkdtemp(prefix="inspector-chromium-")
        self.size = (width, height)
        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.port = self._port()

    def _port(self) -> int:
        """Chromium writes its DevTools port to DevToolsActivePort in the profile once it listens."""
        marker = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with status {self.process.returncode} before DevTools started")
            try:
                with open(marker, encoding="ascii") as fh:
                    first = fh.readline().strip()
            except OSError:
                first = ""
            if first.isdigit():
                return int(first)
            time.sleep(0.05)
        raise TimeoutError("chromium did not start DevTools")

    def _http(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method)
        with urllib.request.urlopen(request, timeout=TIMEOUT) as reply:  # noqa: S310  (DevTools on 127.0.0.1)
            return json.loads(reply.read())

    def open(self, url: str, settle: float = 0.3) -> Page:
        """A new tab that loads `url` with every event recorded from before the first request."""
        target = self._http("/json/new?about:blank", method="PUT")
        page = Page(target["webSocketDebuggerUrl"])
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.call(f"{domain}.enable")
        page.call("Emulation.setDeviceMetricsOverride", width=self.size[0], height=self.size[1], deviceScaleFactor=1,
                  mobile=False)  # fmt: skip
        page.call("Page.bringToFront")  # a tab in the background gets no focus events
        page.events.clear()
        page.call("Page.navigate", url=url)
        page.wait_for("Page.loadEventFired")
        time.sleep(settle)
        page.call("Runtime.evaluate", expression="0")  # drains the events queued so far
        return page

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def png_pixels(data: bytes) -> np.ndarray:
    """An 8-bit RGB or RGBA PNG as an array of shape (height, width, channels)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, [], b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    channels = 3 if colour == 2 else 4
    stride = width * channels
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(height, stride + 1)
    out = np.zeros((height, stride), dtype=np.uint8)
    prior = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:]
        if kind == 0:
            row = line.copy()
        elif kind == 2:
            row = line + prior
        elif kind == 1:  # sub: a running sum per channel
            row = (np.cumsum(line.reshape(width, channels).astype(np.int64), axis=0) % 256).astype(np.uint8).ravel()
        else:  # average or Paeth: sequential along the row
            row = _unfilter_sequential(int(kind), line, prior, channels)
        out[y] = row
        prior = row
    return out.reshape(height, width, channels)


def _unfilter_sequential(kind: int, line: np.ndarray, prior: np.ndarray, bpp: int) -> np.ndarray:
    cur, up = bytearray(line.tobytes()), prior.tobytes()
    for i in range(len(cur)):
        a = cur[i - bpp] if i >= bpp else 0
        b = up[i]
        if kind == 3:
            cur[i] = (cur[i] + (a + b) // 2) & 0xFF
        elif kind == 4:
            c = up[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        else:
            raise ValueError(f"bad PNG filter {kind}")
    return np.frombuffer(bytes(cur), dtype=np.uint8)

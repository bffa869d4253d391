"""HTTP servers on 127.0.0.1 for the remote tests and the benchmark (stdlib `http.server`, no network).

`RangeHandler` answers single-range GETs as S3, CDNs and the Hub do and counts the body bytes it sends, so
a test can check the transfer a report shows against the server's own count; `NoRangeHandler` ignores
Range; `FaultHandler` answers with errors, drops connections and stalls.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import io
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    sent = 0  # body bytes written to clients
    requests = 0

    def handle_error(self, request: Any, client_address: Any) -> None:  # a client hanging up is expected
        pass


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Files with single-range GETs (206 + Content-Range), as S3, CDNs and the Hub answer."""

    server: Server

    def log_message(self, *args: object) -> None:
        pass

    def send_head(self) -> Any:
        self.server.requests += self.command == "GET"
        path = self.translate_path(self.path)
        spec = self.headers.get("Range", "")
        if os.path.isdir(path) or not spec.startswith("bytes=") or not os.path.isfile(path):
            return super().send_head()
        first, _, last = spec.removeprefix("bytes=").partition("-")
        size = os.path.getsize(path)
        start, end = int(first), min(int(last) if last else size - 1, size - 1)
        if start >= size:
            self.send_error(416)
            return None
        with open(path, "rb") as fh:
            fh.seek(start)
            body = fh.read(end - start + 1)
        self.send_response(206)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)

    def copyfile(self, source: Any, outputfile: Any) -> None:
        while chunk := source.read(64 << 10):
            self.server.sent += len(chunk)  # counted first: the client may have it before this thread goes on
            outputfile.write(chunk)


class NoRangeHandler(RangeHandler):
    """A server that ignores Range and always sends the whole file (200)."""

    def send_head(self) -> Any:
        self.server.requests += self.command == "GET"
        return http.server.SimpleHTTPRequestHandler.send_head(self)


class FaultHandler(RangeHandler):
    """/status/N answers N; /flaky/N/... fails N times with 503 first; /truncated promises more than it
    sends; /slow/... answers after 3 s; /nosize/... never says how long it is; the rest as RangeHandler."""

    failures: dict[str, int] = {}

    def send_head(self) -> Any:
        parts = self.path.split("/")
        if parts[1] == "status":
            self.send_error(int(parts[2]))
            return None
        if parts[1] == "flaky" and self.command == "GET":
            left = FaultHandler.failures.get(self.path, int(parts[2]))
            if left > 0:
                FaultHandler.failures[self.path] = left - 1
                self.send_error(503)
                return None
            self.path = "/" + "/".join(parts[3:])
        elif parts[1] == "flaky":
            self.path = "/" + "/".join(parts[3:])
        if parts[1] == "slow":
            time.sleep(3)
            self.path = "/" + "/".join(parts[2:])
        if parts[1] == "nosize":  # a stream of unknown length (HTTP/1.0, no Content-Length)
            self.send_response(200)
            self.end_headers()
            if self.command == "GET":
                self.wfile.write(b"\0" * 100_000)
            self.close_connection = True
            return None
        if parts[1] == "truncated":
            if self.command == "HEAD":
                self.send_response(200)
                self.send_header("Content-Length", "100000")
                self.end_headers()
                return None
            self.send_response(206)
            self.send_header("Content-Range", "bytes 0-4095/100000")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.write(b"\0" * 100)  # then the connection closes
            self.close_connection = True
            return None
        return super().send_head()


@contextlib.contextmanager
def serving(root: Path, handler: type[http.server.SimpleHTTPRequestHandler]) -> Iterator[tuple[str, Server]]:
    server = Server(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", server
    finally:
        server.shutdown()
        server.server_close()

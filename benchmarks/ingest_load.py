"""What benchmarks/ingest.py sends: upload bodies made from the example sweep, and the
client threads that post them over keep-alive connections and time each answer."""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "examples" / "select-update-submission.json"
UPLOAD_PATH = "/api/v1/submissions/"

# Markers put into the template's environment strings; each upload replaces them, which
# decides whether its dimension rows already exist.
UUID_MARK = "00000000-0000-4000-8000-00000000feed"
DIMENSION_MARKS = {
    "hardware": "@@HW@@",
    "storage": "@@ST@@",
    "os": "@@OS@@",
    "database": "@@DB@@",
    "client": "@@CL@@",
}
KNOWN_ENVIRONMENTS = 4  # the reused environments: placeholders "", " e1", " e2", " e3"

MEASUREMENTS_PER_UPLOAD = sum(
    len(r["measurements"]) for r in json.loads(EXAMPLE.read_text("utf-8"))["runs"]
)


# --- documents ------------------------------------------------------------------------


def document_templates(count: int, rng: random.Random) -> list[str]:
    """``count`` JSON texts of the example sweep with jittered values (±3 %), the uuid
    and the environment markers still in them."""
    base = json.loads(EXAMPLE.read_text("utf-8"))
    base["uuid"] = UUID_MARK
    env = base["environment"]
    env["hardware"]["cpu"] += DIMENSION_MARKS["hardware"]
    env["storage"]["device_model"] += DIMENSION_MARKS["storage"]
    env["os"]["kernel"] += DIMENSION_MARKS["os"]
    env["database"]["version_string"] += DIMENSION_MARKS["database"]
    env["client"]["driver_version"] += DIMENSION_MARKS["client"]
    texts = []
    for _ in range(count):
        doc = json.loads(json.dumps(base))
        for run in doc["runs"]:
            for m in run["measurements"]:
                factor = rng.uniform(0.97, 1.03)
                m["value"] = round(m["value"] * factor, 3)
                if "samples" in m:
                    m["samples"] = [round(s * factor, 3) for s in m["samples"]]
        texts.append(json.dumps(doc))
    return texts


class Bodies:
    """Makes upload bodies cheaply: a pre-built template, a fresh uuid, and markers
    replaced by a known environment or (with probability ``new_rate``) one new value in
    one dimension. Thread-safe."""

    def __init__(self, templates: list[str], new_rate: float, seed: int) -> None:
        self.templates = templates
        self.new_rate = new_rate
        self.run_tag = uuid.uuid4().hex[:8]
        self._counter = 0
        self._lock = threading.Lock()
        self._local = threading.local()
        self._seed = seed

    def _rng(self) -> random.Random:
        rng = getattr(self._local, "rng", None)
        if rng is None:
            rng = self._local.rng = random.Random(f"{self._seed}-{threading.get_ident()}")
        return rng

    def next(self) -> bytes:
        rng = self._rng()
        text = rng.choice(self.templates).replace(UUID_MARK, str(uuid.uuid4()))
        known = rng.randrange(KNOWN_ENVIRONMENTS)
        new_dimension = None
        if rng.random() < self.new_rate:
            new_dimension = rng.choice(list(DIMENSION_MARKS))
        for dimension, mark in DIMENSION_MARKS.items():
            if dimension == new_dimension:
                with self._lock:
                    self._counter += 1
                    n = self._counter
                value = f" n{self.run_tag}.{n}"
            else:
                value = f" e{known}" if known else ""
            text = text.replace(mark, value)
        return text.encode()


# --- load -----------------------------------------------------------------------------


@dataclass
class Sample:
    started: float
    ended: float
    status: str  # "201", "400", ..., or "conn:<exception name>"


@dataclass
class Load:
    samples: list[Sample] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Uploader:
    """One keep-alive HTTP/1.1 connection that posts upload bodies: the bytes
    http.client.HTTPConnection.request() sends (request line, Host,
    Accept-Encoding: identity, Content-Length, then the given headers; head and
    body in one send), with the answer read by plain byte operations instead
    of http.client's email-parser headers, which took most of the client's
    CPU in profiles: the load
    generator shares the two cores it measures."""

    def __init__(self, port: int, headers: dict[str, str], timeout: float) -> None:
        self.address = ("127.0.0.1", port)
        self.timeout = timeout
        lines = [
            f"POST {UPLOAD_PATH} HTTP/1.1",
            f"Host: 127.0.0.1:{port}",
            "Accept-Encoding: identity",
            "Content-Length: {length}",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        self.head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.sock: socket.socket | None = None
        self.buffer = b""

    def post(self, body: bytes) -> str:
        """The answer's status code, its body read; OSError or
        http.client.HTTPException when the connection fails."""
        if self.sock is None:
            self.sock = socket.create_connection(self.address, timeout=self.timeout)
            self.buffer = b""
        head = self.head.replace(b"{length}", str(len(body)).encode(), 1)
        self.sock.sendall(head + body)
        while (end := self.buffer.find(b"\r\n\r\n")) < 0:
            self._receive()
        header, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
        status_line, *fields = header.split(b"\r\n")
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise http.client.BadStatusLine(status_line.decode("latin-1"))
        values = {}
        for line in fields:
            name, _, value = line.partition(b":")
            values[name.strip().lower()] = value.strip().lower()
        if b"content-length" in values:
            self._skip(int(values[b"content-length"]))
        elif values.get(b"transfer-encoding") == b"chunked":
            self._skip_chunks()
        else:  # the body ends with the connection
            with contextlib.suppress(http.client.IncompleteRead):
                while True:
                    self._receive()
            self.close()
        if values.get(b"connection") == b"close" or parts[0] == b"HTTP/1.0":
            self.close()
        return parts[1].decode()

    def _receive(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise http.client.IncompleteRead(self.buffer)
        self.buffer += chunk

    def _skip(self, length: int) -> None:
        while len(self.buffer) < length:
            self._receive()
        self.buffer = self.buffer[length:]

    def _skip_chunks(self) -> None:
        while True:
            while (end := self.buffer.find(b"\r\n")) < 0:
                self._receive()
            size = int(self.buffer[:end].split(b";")[0], 16)
            self.buffer = self.buffer[end + 2 :]
            self._skip(size + 2)  # the chunk and its CRLF
            if size == 0:
                return

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def client_loop(
    port: int, token: str, bodies: Bodies, stop_at: float, load: Load, timeout: float
) -> None:
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    uploader = Uploader(port, headers, timeout)
    mine = []
    while time.perf_counter() < stop_at:
        body = bodies.next()
        started = time.perf_counter()
        try:
            status = uploader.post(body)
        except (OSError, ValueError, http.client.HTTPException) as exc:
            status = f"conn:{type(exc).__name__}"
            uploader.close()  # reconnects on the next request
        mine.append(Sample(started, time.perf_counter(), status))
    uploader.close()
    with load.lock:
        load.samples.extend(mine)

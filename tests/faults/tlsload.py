"""Requests at about ``RATE_PER_SECOND``, each on a new TLS connection, while a certificate or a
CA is rotated (test-only code shared by the rotation scenarios of ``tests/faults``)."""

from __future__ import annotations

import hashlib
import http.client
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["LOAD_SECONDS", "RATE_PER_SECOND", "Request", "Tally", "one_request", "under_load"]

RATE_PER_SECOND = 100
LOAD_SECONDS = 12.0
ROTATE_AFTER_SECONDS = 4.0
WORKERS = 8


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes | None = None


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    outcomes: Counter[str] = field(default_factory=Counter)
    serials: dict[str, int] = field(default_factory=dict)
    """certificate serial -> requests after the rotation that saw it"""

    def add(self, outcome: str, serial: str | None, *, after_rotation: bool) -> None:
        with self.lock:
            self.outcomes[outcome] += 1
            if after_rotation and serial is not None:
                self.serials[serial] = self.serials.get(serial, 0) + 1


def one_request(
    context: ssl.SSLContext, host: str, port: int, request: Request
) -> tuple[str, str | None]:
    """``request`` on a new TLS connection: its status (or the error's name) and the hash of the
    server's certificate."""
    connection = http.client.HTTPSConnection(host, port, context=context, timeout=10)
    try:
        connection.request(request.method, request.path, body=request.body, headers=request.headers)
        response = connection.getresponse()
        response.read()
        sock = connection.sock
        der = sock.getpeercert(binary_form=True) if isinstance(sock, ssl.SSLSocket) else None
        serial = None if der is None else hashlib.sha256(der).hexdigest()[:16]
        return (str(response.status), serial)
    except (OSError, http.client.HTTPException) as error:
        return (type(error).__name__, None)
    finally:
        connection.close()


def under_load(
    host: str,
    port: int,
    request: Request,
    context_for: Callable[[int, bool], ssl.SSLContext],
    rotate: Callable[[], None],
) -> tuple[Tally, float, float]:
    """``WORKERS`` threads at ``RATE_PER_SECOND`` in all for ``LOAD_SECONDS``; ``rotate`` runs
    after ``ROTATE_AFTER_SECONDS``, and 2.5 s later (two polls) the reload window ends:
    ``context_for(worker, after_window)`` picks each request's TLS context. Returns the tally,
    the elapsed seconds and when the rotation happened."""
    tally = Tally()
    rotated = threading.Event()
    started = time.monotonic()
    stop_at = started + LOAD_SECONDS
    interval = WORKERS / RATE_PER_SECOND

    def worker(index: int) -> None:
        next_at = started + index * interval / WORKERS
        while (now := time.monotonic()) < stop_at:
            if now < next_at:
                time.sleep(next_at - now)
            after = rotated.is_set()
            outcome, serial = one_request(context_for(index, after), host, port, request)
            tally.add(outcome, serial, after_rotation=after)
            next_at += interval

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    time.sleep(ROTATE_AFTER_SECONDS)
    rotate()
    rotated_at = time.monotonic() - started
    time.sleep(2.5)  # two polls: connections from here on must see the new configuration
    rotated.set()
    for thread in threads:
        thread.join(timeout=LOAD_SECONDS + 20)
    return tally, time.monotonic() - started, rotated_at

"""The adapter's serving certificate rotated under load: no request fails.

Clients call the adapter directly as kube-apiserver does (its front-proxy client certificate and
``X-Remote-User``), each request on a new TLS connection, at about 100 requests per second. Midway
the certificate and key files are replaced (atomically, as a Secret volume update does) with a
new certificate from the same CA; the adapter polls its files (``--tls-check-interval=1s``).
Every request must succeed, and connections after the rotation must see the new certificate.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import ssl
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.controller_lab import (
    ADAPTER_NAME,
    ADAPTER_NAMESPACE,
    adapter_rules,
    report,
    start_adapter,
    stop_adapter,
)
from tests.lab import aggregation
from tests.lab.lab import Lab
from tests.lab.load_model import WorkloadProfile
from tests.lab.pki import issue_certificate
from tests.lab.process import Component

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

NAMESPACE = "faults-rotation"
WORKLOAD = "rot"
RATE_PER_SECOND = 100
LOAD_SECONDS = 12.0
ROTATE_AFTER_SECONDS = 4.0
WORKERS = 8
PATH = (
    f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NAMESPACE}/lab_workload_offered_load_rps"
    f"?labelSelector=workload%3D{WORKLOAD}"
)


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


@pytest.fixture(scope="module")
def adapter(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Component]:
    lab.kubectl("create", "namespace", NAMESPACE)
    lab.add_workload(WorkloadProfile(NAMESPACE, WORKLOAD, {"app": WORKLOAD}), rps=30)
    component = start_adapter(
        lab,
        tmp_path_factory.mktemp("rotation-adapter"),
        rules=adapter_rules(window_seconds=5),
        extra_flags=("--tls-check-interval=1s",),
    )
    try:
        yield component
    finally:
        stop_adapter(lab, component)
        lab.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def _flag(component: Component, name: str) -> str:
    args = component.process.args
    assert isinstance(args, list)
    for arg in args:
        if str(arg).startswith(f"--{name}="):
            return str(arg).split("=", 1)[1]
    raise AssertionError(f"{component.name} has no --{name}")


def _serial(context: ssl.SSLContext, host: str, port: int) -> tuple[str, str | None]:
    connection = http.client.HTTPSConnection(host, port, context=context, timeout=10)
    try:
        connection.request(
            "GET", PATH, headers={"X-Remote-User": "admin", "X-Remote-Group": "system:masters"}
        )
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


def _rotate(lab: Lab) -> None:
    """Issue a new certificate for the adapter's Service and swap both files atomically."""
    stem = lab.work_dir / "pki" / f"{ADAPTER_NAMESPACE}-{ADAPTER_NAME}"
    fresh = issue_certificate(
        lab.pki.ca,
        lab.work_dir / "pki" / "rotated-adapter",
        common_name=aggregation.service_dns_name(ADAPTER_NAME, ADAPTER_NAMESPACE),
        dns_names=(aggregation.service_dns_name(ADAPTER_NAME, ADAPTER_NAMESPACE),),
        ip_addresses=(lab.netns.namespace_ip,) if lab.netns else (),
        server=True,
    )
    os.replace(fresh.key_path, Path(f"{stem}.key"))
    os.replace(fresh.cert_path, Path(f"{stem}.crt"))


def test_serving_certificate_rotation_under_load_fails_no_request(
    lab: Lab, adapter: Component, capsys: pytest.CaptureFixture[str]
) -> None:
    host, port = _flag(adapter, "bind-address"), int(_flag(adapter, "secure-port"))
    assert Path(_flag(adapter, "tls-cert-file")) == Path(
        f"{lab.work_dir / 'pki' / f'{ADAPTER_NAMESPACE}-{ADAPTER_NAME}'}.crt"
    )
    context = lab.front_proxy_tls()
    context.check_hostname = False  # the certificate names the Service; we dial its address
    status, before = _serial(context, host, port)
    assert status == "200", f"the adapter answered {status} before the load"

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
            outcome, serial = _serial(context, host, port)
            tally.add(outcome, serial, after_rotation=rotated.is_set())
            next_at += interval

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    time.sleep(ROTATE_AFTER_SECONDS)
    _rotate(lab)
    rotated_at = time.monotonic()
    time.sleep(2.5)  # two polls of the files: connections from here on must see the new one
    rotated.set()
    for thread in threads:
        thread.join(timeout=LOAD_SECONDS + 20)
    elapsed = time.monotonic() - started
    total = sum(tally.outcomes.values())
    report(
        capsys,
        f"rotation under load: {total} requests in {elapsed:.1f} s ({total / elapsed:.0f}/s), "
        f"outcomes {dict(tally.outcomes)}; rotated at +{rotated_at - started:.1f} s; "
        f"certificates seen after the reload window: {list(tally.serials.values())}",
    )
    assert set(tally.outcomes) == {"200"}, f"failed requests: {dict(tally.outcomes)}"
    assert total / elapsed >= 0.8 * RATE_PER_SECOND, f"only {total / elapsed:.0f} requests/s"
    assert tally.serials, "no request after the reload window"
    assert before not in tally.serials, (
        "connections after the rotation still saw the old certificate"
    )
    assert len(tally.serials) == 1

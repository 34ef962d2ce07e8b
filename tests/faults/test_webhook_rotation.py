"""The VPA admission webhook's serving certificate rotated under load: no review fails.

``hpa vpa admission`` serves AdmissionReviews on 127.0.0.1 with a certificate of the lab's CA;
clients POST a review of a pod no VPA matches (answered ``allowed``, no patch), each on a new TLS
connection, at about 100 requests per second, as kube-apiserver's webhook calls arrive. Midway the
certificate and key files are replaced atomically with a new certificate; the webhook polls its
files (``--tls-check-interval=1``). Every review must be answered, and connections after the
reload must see the new certificate.
"""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import Iterator

import pytest

from tests.e2e.controller_lab import report
from tests.e2e.vpa_admission_cases import container, pod_review
from tests.e2e.vpa_lab import (
    LOOPBACK,
    Webhook,
    install_vpa_crds,
    loopback_certificate,
    ready,
    start_ours,
)
from tests.faults.tlsload import RATE_PER_SECOND, Request, one_request, under_load
from tests.lab.lab import Lab
from tests.lab.pki import KeyPair

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

COMPONENT = "hpa-vpa-admission-rotation"
NAMESPACE = "faults-webhook"
LONE_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "lone", "namespace": NAMESPACE, "labels": {"app": "lone"}},
    "spec": {"containers": [container("app")]},
}
"""A pod no VPA matches: the webhook allows it without a patch."""
REVIEW = pod_review(LONE_POD, "rotation")
REQUEST = Request("POST", "/", {"Content-Type": "application/json"}, json.dumps(REVIEW).encode())


@pytest.fixture(scope="module")
def webhook(lab: Lab) -> Iterator[tuple[Webhook, KeyPair]]:
    install_vpa_crds(lab)
    pair = loopback_certificate(lab, COMPONENT)
    started = start_ours(
        lab, COMPONENT, pair, lease_name=COMPONENT, extra_flags=("--tls-check-interval=1",)
    )
    lab.wait_for(lambda: ready(started), what="hpa vpa admission /readyz")
    try:
        yield started, pair
    finally:
        if COMPONENT in lab.group.components:
            lab.group.end(COMPONENT)


def test_webhook_serving_certificate_rotation_under_load_fails_no_review(
    lab: Lab, webhook: tuple[Webhook, KeyPair], capsys: pytest.CaptureFixture[str]
) -> None:
    server, pair = webhook
    context = ssl.create_default_context(cafile=str(lab.pki.ca.pair.cert_path))
    status, before = one_request(context, LOOPBACK, server.port, REQUEST)
    assert status == "200", f"the webhook answered {status} before the load"

    def rotate() -> None:
        fresh = loopback_certificate(lab, f"{COMPONENT}-rotated")
        os.replace(fresh.key_path, pair.key_path)
        os.replace(fresh.cert_path, pair.cert_path)

    tally, elapsed, rotated_at = under_load(
        LOOPBACK, server.port, REQUEST, lambda _index, _after: context, rotate
    )
    total = sum(tally.outcomes.values())
    report(
        capsys,
        f"webhook rotation under load: {total} reviews in {elapsed:.1f} s "
        f"({total / elapsed:.0f}/s), outcomes {dict(tally.outcomes)}; rotated at "
        f"+{rotated_at:.1f} s; certificates seen after the reload window: "
        f"{list(tally.serials.values())}",
    )
    assert set(tally.outcomes) == {"200"}, f"failed reviews: {dict(tally.outcomes)}"
    assert total / elapsed >= 0.8 * RATE_PER_SECOND, f"only {total / elapsed:.0f} reviews/s"
    assert tally.serials, "no review after the reload window"
    assert before not in tally.serials, "connections after the rotation saw the old certificate"
    assert len(tally.serials) == 1

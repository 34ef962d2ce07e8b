"""The adapter's certificates rotated under load: no request fails.

Clients call the adapter directly as kube-apiserver does (its front-proxy client certificate and
``X-Remote-User``), each request on a new TLS connection, at about 100 requests per second.

- **Serving certificate**: midway the certificate and key files are replaced (atomically, as a
  Secret volume update does) with a new certificate from the same CA; the adapter polls its files
  (``--tls-check-interval=1s``). Every request must succeed, and connections after the rotation
  must see the new certificate.
- **Client CA**: a new front-proxy CA is added to the ``requestheader-client-ca-file`` bundle of
  the ``extension-apiserver-authentication`` ConfigMap (as a CA rotation does: old and new CA
  side by side; kube-apiserver keeps CAs others added); the adapter re-reads the ConfigMap
  (``--auth-config-refresh-interval=1s``). A client certificate of the new CA is refused before,
  and after the reload half the clients present one: every request must succeed.
"""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import Iterator
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
from tests.faults.tlsload import RATE_PER_SECOND, Request, one_request, under_load
from tests.lab import aggregation
from tests.lab.lab import Lab
from tests.lab.load_model import WorkloadProfile
from tests.lab.pki import FRONT_PROXY_CLIENT_NAME, create_ca, issue_certificate
from tests.lab.process import Component

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

NAMESPACE = "faults-rotation"
WORKLOAD = "rot"
PATH = (
    f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NAMESPACE}/lab_workload_offered_load_rps"
    f"?labelSelector=workload%3D{WORKLOAD}"
)
REQUEST = Request("GET", PATH, {"X-Remote-User": "admin", "X-Remote-Group": "system:masters"})


@pytest.fixture(scope="module")
def adapter(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Component]:
    lab.kubectl("create", "namespace", NAMESPACE)
    lab.add_workload(WorkloadProfile(NAMESPACE, WORKLOAD, {"app": WORKLOAD}), rps=30)
    component = start_adapter(
        lab,
        tmp_path_factory.mktemp("rotation-adapter"),
        rules=adapter_rules(window_seconds=5),
        extra_flags=("--tls-check-interval=1s", "--auth-config-refresh-interval=1s"),
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
    status, before = one_request(context, host, port, REQUEST)
    assert status == "200", f"the adapter answered {status} before the load"

    tally, elapsed, rotated_at = under_load(
        host, port, REQUEST, lambda _index, _after: context, lambda: _rotate(lab)
    )
    total = sum(tally.outcomes.values())
    report(
        capsys,
        f"rotation under load: {total} requests in {elapsed:.1f} s ({total / elapsed:.0f}/s), "
        f"outcomes {dict(tally.outcomes)}; rotated at +{rotated_at:.1f} s; "
        f"certificates seen after the reload window: {list(tally.serials.values())}",
    )
    assert set(tally.outcomes) == {"200"}, f"failed requests: {dict(tally.outcomes)}"
    assert total / elapsed >= 0.8 * RATE_PER_SECOND, f"only {total / elapsed:.0f} requests/s"
    assert tally.serials, "no request after the reload window"
    assert before not in tally.serials, (
        "connections after the rotation still saw the old certificate"
    )
    assert len(tally.serials) == 1


AUTH_CONFIGMAP = ("-n", "kube-system", "configmap", "extension-apiserver-authentication")
REQUESTHEADER_CA = "requestheader-client-ca-file"


def _set_requestheader_ca(lab: Lab, bundle: str) -> None:
    lab.kubectl(
        "patch", *AUTH_CONFIGMAP, "--type=merge",
        "-p", json.dumps({"data": {REQUESTHEADER_CA: bundle}}),
    )  # fmt: skip


def test_client_ca_rotation_under_load_fails_no_request(
    lab: Lab, adapter: Component, capsys: pytest.CaptureFixture[str]
) -> None:
    host, port = _flag(adapter, "bind-address"), int(_flag(adapter, "secure-port"))
    old = lab.front_proxy_tls()
    old.check_hostname = False
    directory = lab.work_dir / "pki" / "rotated-front-proxy"
    directory.mkdir(exist_ok=True)
    ca = create_ca(directory, "front-proxy-ca-2", common_name="front-proxy-ca-2")
    client = issue_certificate(
        ca, directory / "front-proxy-client-2", common_name=FRONT_PROXY_CLIENT_NAME, client=True
    )
    new = ssl.create_default_context(cafile=str(lab.pki.ca.pair.cert_path))
    new.load_cert_chain(client.cert_path, client.key_path)
    new.check_hostname = False
    refused, _ = one_request(new, host, port, REQUEST)
    assert refused != "200", "a client certificate of an unknown CA was accepted"
    original = lab.kubectl_json("get", *AUTH_CONFIGMAP)["data"][REQUESTHEADER_CA]
    bundle = original.rstrip("\n") + "\n" + ca.pair.cert_path.read_text()
    try:
        tally, elapsed, rotated_at = under_load(
            host,
            port,
            REQUEST,
            lambda index, after: new if after and index % 2 else old,
            lambda: _set_requestheader_ca(lab, bundle),
        )
    finally:
        _set_requestheader_ca(lab, original)
    total = sum(tally.outcomes.values())
    after_window = sum(tally.serials.values())
    report(
        capsys,
        f"client-CA rotation under load: {total} requests in {elapsed:.1f} s "
        f"({total / elapsed:.0f}/s), outcomes {dict(tally.outcomes)}; CA added at "
        f"+{rotated_at:.1f} s; {after_window} requests after the reload window, half of them "
        "with a certificate of the new CA",
    )
    assert refused != "200"
    assert set(tally.outcomes) == {"200"}, f"failed requests: {dict(tally.outcomes)}"
    assert total / elapsed >= 0.8 * RATE_PER_SECOND, f"only {total / elapsed:.0f} requests/s"
    assert after_window > 0, "no request after the reload window"

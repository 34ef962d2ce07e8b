"""The lab's PKI: every certificate chains to the right CA with the names its peers check."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.lab.pki import ADMIN_USER, FRONT_PROXY_CLIENT_NAME, Pki, create_pki, write_kubeconfig


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return create_pki(
        tmp_path_factory.mktemp("pki"), apiserver_ips=("198.18.0.1",), service_ip="198.19.0.1"
    )


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def common_name(certificate: x509.Certificate) -> str:
    return str(certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


def verify_chain(leaf: Path, ca: Path) -> None:
    """Raises unless `leaf` is issued and signed by `ca` and valid now (as Go's x509 checks)."""
    certificate, authority = load(leaf), load(ca)
    certificate.verify_directly_issued_by(authority)
    now = datetime.datetime.now(datetime.UTC)
    assert certificate.not_valid_before_utc <= now < certificate.not_valid_after_utc


def test_client_certificates_chain_to_their_ca(pki: Pki) -> None:
    for pair in (pki.admin, pki.nobody, pki.controller_manager, pki.scheduler):
        verify_chain(pair.cert_path, pki.ca.pair.cert_path)
    verify_chain(pki.front_proxy_client.cert_path, pki.front_proxy_ca.pair.cert_path)


def test_front_proxy_client_does_not_chain_to_the_cluster_ca(pki: Pki) -> None:
    with pytest.raises((ValueError, InvalidSignature)):
        verify_chain(pki.front_proxy_client.cert_path, pki.ca.pair.cert_path)


def test_identities_are_what_rbac_and_the_aggregator_expect(pki: Pki) -> None:
    admin = load(pki.admin.cert_path)
    assert common_name(admin) == ADMIN_USER
    organizations = admin.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    assert [o.value for o in organizations] == ["system:masters"]
    assert common_name(load(pki.controller_manager.cert_path)) == "system:kube-controller-manager"
    assert common_name(load(pki.scheduler.cert_path)) == "system:kube-scheduler"
    assert common_name(load(pki.front_proxy_client.cert_path)) == FRONT_PROXY_CLIENT_NAME
    usage = load(pki.front_proxy_client.cert_path).extensions.get_extension_for_class(
        x509.ExtendedKeyUsage
    )
    assert list(usage.value) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_apiserver_serving_certificate_names(pki: Pki) -> None:
    certificate = load(pki.apiserver.cert_path)
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) >= {
        "localhost",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    }
    assert set(names.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("198.18.0.1"),
        ipaddress.ip_address("198.19.0.1"),
    }
    store = x509.verification.Store([load(pki.ca.pair.cert_path)])
    verifier = x509.verification.PolicyBuilder().store(store)
    for name in (x509.IPAddress(ipaddress.ip_address("198.18.0.1")), x509.DNSName("localhost")):
        verifier.build_server_verifier(name).verify(certificate, [])


def test_keys_match_certificates_and_are_private(pki: Pki) -> None:
    for pair in (pki.apiserver, pki.admin, pki.front_proxy_client):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.load_cert_chain(pair.cert_path, pair.key_path)  # raises on a mismatch
        assert pair.key_path.stat().st_mode & 0o077 == 0
    assert isinstance(load(pki.admin.cert_path).public_key(), ec.EllipticCurvePublicKey)
    sa_text = pki.service_account_private_key.read_bytes()
    assert isinstance(load_pem_private_key(sa_text, None), rsa.RSAPrivateKey)


def test_kubeconfig_points_at_the_files(pki: Pki, tmp_path: Path) -> None:
    path = write_kubeconfig(
        tmp_path / "k.yaml",
        server="https://198.18.0.1:6443",
        ca_path=pki.ca.pair.cert_path,
        client=pki.admin,
        user="admin",
    )
    config = yaml.safe_load(path.read_text())
    assert config["clusters"][0]["cluster"]["server"] == "https://198.18.0.1:6443"
    assert Path(config["users"][0]["user"]["client-certificate"]) == pki.admin.cert_path
    assert config["current-context"] == "hpa-lab"

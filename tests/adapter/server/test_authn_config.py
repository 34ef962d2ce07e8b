"""The authentication ConfigMap, flag overrides, header extraction and certificate checks."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from multidict import CIMultiDict, CIMultiDictProxy

from adapter.server.authn import (
    AuthenticationConfig,
    Credentials,
    RequestHeaderAuthenticator,
    VerifiedCertificates,
    config_from_configmap,
    verify_client_certificate,
)
from tests.adapter.server.tlsserver import CertClock, create_test_pki


def test_configmap_values_and_flag_overrides() -> None:
    data = {
        "client-ca-file": "CLIENT",
        "requestheader-client-ca-file": "FRONT",
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-username-headers": '["X-Remote-User"]',
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
    }
    config = config_from_configmap(data)
    assert config == AuthenticationConfig(
        client_ca_pem=b"CLIENT",
        requestheader_ca_pem=b"FRONT",
        requestheader_allowed_names=("front-proxy-client",),
        requestheader_username_headers=("X-Remote-User",),
        requestheader_group_headers=("X-Remote-Group",),
        requestheader_extra_headers_prefix=("X-Remote-Extra-",),
    )
    overridden = config_from_configmap(
        data, overrides=AuthenticationConfig(requestheader_allowed_names=("aggregator",))
    )
    assert overridden.requestheader_allowed_names == ("aggregator",)
    assert overridden.client_ca_pem == b"CLIENT"
    assert config.ca_bundle_pem() == b"CLIENT\nFRONT\n"
    with pytest.raises(ValueError, match="JSON list"):
        config_from_configmap({"requestheader-allowed-names": '"front-proxy-client"'})


def _der(path: Path) -> bytes:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    return cert.public_bytes(serialization.Encoding.DER)


async def test_header_user_groups_and_unescaped_extra(tmp_path: Path) -> None:
    pki = create_test_pki(tmp_path)
    config = AuthenticationConfig(
        requestheader_ca_pem=pki.front_proxy_ca.pair.cert_path.read_bytes(),
        requestheader_allowed_names=(),  # any CN from the CA
        requestheader_username_headers=("X-Remote-User", "X-Other-User"),
        requestheader_group_headers=("X-Remote-Group",),
        requestheader_extra_headers_prefix=("X-Remote-Extra-",),
    )
    headers = CIMultiDict(
        [
            ("X-Other-User", "bob"),
            ("X-Remote-Group", "a"),
            ("X-Remote-Group", "b"),
            ("X-Remote-Extra-Acme.com%2Fproject", "p1"),
            ("X-Remote-Extra-Scopes", "s1"),
            ("X-Remote-Extra-Scopes", "s2"),
        ]
    )
    authenticator = RequestHeaderAuthenticator(config, clock=CertClock())
    user = await authenticator.authenticate(
        Credentials(CIMultiDictProxy(headers), _der(pki.front_proxy_intruder.cert_path))
    )
    assert user is not None
    assert user.name == "bob"
    assert user.groups == ("a", "b")
    assert dict(user.extra) == {"acme.com/project": ("p1",), "scopes": ("s1", "s2")}


def test_certificate_checks(tmp_path: Path) -> None:
    pki = create_test_pki(tmp_path)
    ca = x509.load_pem_x509_certificate(pki.front_proxy_ca.pair.cert_path.read_bytes())
    good = _der(pki.front_proxy_client.cert_path)
    now = dt.datetime.now(dt.UTC)
    assert verify_client_certificate(good, [ca], now=now) is not None
    # same subject name, different key: the signature decides
    assert verify_client_certificate(_der(pki.rogue.cert_path), [ca], now=now) is None
    assert verify_client_certificate(good, [ca], now=now + dt.timedelta(days=30)) is None
    # a serving certificate has no clientAuth usage
    serving_ca = x509.load_pem_x509_certificate(pki.serving_ca.pair.cert_path.read_bytes())
    assert verify_client_certificate(_der(pki.serving.cert_path), [serving_ca], now=now) is None
    assert verify_client_certificate(b"not a certificate", [ca], now=now) is None


def test_remembered_certificates_keep_every_check(tmp_path: Path) -> None:
    """A certificate verified once is still refused once it expires; a refused one stays
    refused however often it is presented."""
    pki = create_test_pki(tmp_path)
    ca = x509.load_pem_x509_certificate(pki.front_proxy_ca.pair.cert_path.read_bytes())
    verified = VerifiedCertificates([ca])
    good = _der(pki.front_proxy_client.cert_path)
    rogue = _der(pki.rogue.cert_path)
    now = dt.datetime.now(dt.UTC)
    assert [verified.verify(good, now=now) is not None for _ in range(2)] == [True, True]
    assert verified.verify(good, now=now + dt.timedelta(days=30)) is None
    assert verified.verify(good, now=now - dt.timedelta(days=1)) is None
    assert [verified.verify(rogue, now=now) for _ in range(2)] == [None, None]
    assert verified.verify(b"not a certificate", now=now) is None
    assert not VerifiedCertificates([])

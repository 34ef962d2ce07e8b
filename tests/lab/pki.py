"""Per-lab PKI: cluster CA, serving and client certificates, service-account keys, front proxy.

Upstream counterpart: kubeadm's `certs` phase (`cmd/kubeadm/app/phases/certs`), which lays out
`ca`, `apiserver`, `front-proxy-ca`, `front-proxy-client` and `sa` the same way and issues the
admin, controller-manager and scheduler kubeconfigs. Deviations: ECDSA P-256 keys (RSA 2048 only
for the service-account signing key, as kubeadm), one-day validity, etcd is not on TLS (it
listens on loopback only), and no kubelet certificates (kwok plays the kubelets).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CERT_LIFETIME = dt.timedelta(days=1)
CLOCK_SKEW = dt.timedelta(minutes=5)
FRONT_PROXY_CLIENT_NAME = "front-proxy-client"
"""The CN the API server's `--requestheader-allowed-names` accepts (kubeadm's default)."""
ADMIN_USER = "hpa-lab-admin"
NOBODY_USER = "hpa-lab-nobody"
"""A user that authenticates but holds no RBAC binding: requests from it must be refused."""

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class KeyPair:
    cert_path: Path
    key_path: Path


@dataclass(frozen=True)
class CertificateAuthority:
    pair: KeyPair
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class Pki:
    directory: Path
    ca: CertificateAuthority
    apiserver: KeyPair
    admin: KeyPair
    nobody: KeyPair
    controller_manager: KeyPair
    scheduler: KeyPair
    front_proxy_ca: CertificateAuthority
    front_proxy_client: KeyPair
    service_account_private_key: Path
    service_account_public_key: Path


def _write_key(path: Path, key: PrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def create_ca(directory: Path, name: str, *, common_name: str) -> CertificateAuthority:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = _name(common_name)
    now = _now()
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + CERT_LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    pair = KeyPair(directory / f"{name}.crt", directory / f"{name}.key")
    pair.cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    _write_key(pair.key_path, key)
    return CertificateAuthority(pair, certificate, key)


def issue_certificate(
    ca: CertificateAuthority,
    path_stem: Path,
    *,
    common_name: str,
    organizations: tuple[str, ...] = (),
    dns_names: tuple[str, ...] = (),
    ip_addresses: tuple[str, ...] = (),
    server: bool = False,
    client: bool = False,
) -> KeyPair:
    """Issue a leaf certificate signed by `ca`; writes `<stem>.crt` and `<stem>.key`."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    usages = [ExtendedKeyUsageOID.SERVER_AUTH] if server else []
    usages += [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name, organizations))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + CERT_LIFETIME)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()),
            critical=False,
        )
    )
    alternative_names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    alternative_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    if alternative_names:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(alternative_names), critical=False
        )
    certificate = builder.sign(ca.key, hashes.SHA256())
    pair = KeyPair(path_stem.with_suffix(".crt"), path_stem.with_suffix(".key"))
    pair.cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    _write_key(pair.key_path, key)
    return pair


def create_pki(
    directory: Path,
    *,
    apiserver_ips: tuple[str, ...],
    service_ip: str,
) -> Pki:
    """Generate everything a lab's control plane needs into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = create_ca(directory, "ca", common_name="hpa-lab-ca")
    apiserver = issue_certificate(
        ca,
        directory / "apiserver",
        common_name="kube-apiserver",
        dns_names=(
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ),
        ip_addresses=("127.0.0.1", *apiserver_ips, service_ip),
        server=True,
    )
    admin = issue_certificate(
        ca,
        directory / "admin",
        common_name=ADMIN_USER,
        organizations=("system:masters",),
        client=True,
    )
    nobody = issue_certificate(ca, directory / "nobody", common_name=NOBODY_USER, client=True)
    controller_manager = issue_certificate(
        ca,
        directory / "controller-manager",
        common_name="system:kube-controller-manager",
        client=True,
    )
    scheduler = issue_certificate(
        ca, directory / "scheduler", common_name="system:kube-scheduler", client=True
    )
    front_proxy_ca = create_ca(directory, "front-proxy-ca", common_name="front-proxy-ca")
    front_proxy_client = issue_certificate(
        front_proxy_ca,
        directory / "front-proxy-client",
        common_name=FRONT_PROXY_CLIENT_NAME,
        client=True,
    )
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    sa_private = directory / "sa.key"
    sa_public = directory / "sa.pub"
    _write_key(sa_private, sa_key)
    sa_public.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return Pki(
        directory=directory,
        ca=ca,
        apiserver=apiserver,
        admin=admin,
        nobody=nobody,
        controller_manager=controller_manager,
        scheduler=scheduler,
        front_proxy_ca=front_proxy_ca,
        front_proxy_client=front_proxy_client,
        service_account_private_key=sa_private,
        service_account_public_key=sa_public,
    )


def write_kubeconfig(path: Path, *, server: str, ca_path: Path, client: KeyPair, user: str) -> Path:
    """A kubeconfig with file references (kubectl, client-go and kubernetes_asyncio read it)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "hpa-lab",
                "cluster": {"server": server, "certificate-authority": str(ca_path)},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate": str(client.cert_path),
                    "client-key": str(client.key_path),
                },
            }
        ],
        "contexts": [{"name": "hpa-lab", "context": {"cluster": "hpa-lab", "user": user}}],
        "current-context": "hpa-lab",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path

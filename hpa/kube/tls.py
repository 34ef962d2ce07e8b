"""The serving TLS context: certificate and key reloaded from files, client CAs swapped in live.

Upstream counterparts: k8s.io/apiserver ``server/dynamiccertificates`` (``DynamicServingCertificate
Controller``: the serving pair is re-read when the files change and the next handshake uses it,
through ``tls.Config.GetConfigForClient``; the client CA bundle is dynamic too) and
``server/options/serving.go`` (a self-signed pair in ``--cert-dir`` when no files are given).

How: the listener's context has an SNI callback, which OpenSSL calls for every ClientHello; it
points the connection at the current context. ``check()`` compares the files' (inode, size,
mtime) and builds a new context when they changed; a pair that does not load is logged and the
previous context stays. Connections already open keep their context.

Deliberate deviations: files are polled (``--tls-check-interval``, default 10 s) instead of
watched with inotify; a client certificate is requested (``CERT_OPTIONAL``) and, when one is
sent, verified against the client CA bundle during the handshake (see the adapter's authentication).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
from pathlib import Path

import structlog
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from hpa.kube.clock import Clock

log = structlog.get_logger(__name__)

_Stamp = tuple[tuple[int, int, int], tuple[int, int, int]]


def _stamp(cert_file: Path, key_file: Path) -> _Stamp:
    a, b = os.stat(cert_file), os.stat(key_file)
    return (a.st_ino, a.st_size, a.st_mtime_ns), (b.st_ino, b.st_size, b.st_mtime_ns)


def build_context(cert_file: Path, key_file: Path, *, client_ca_pem: bytes) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert_file), str(key_file))
    context.verify_mode = ssl.CERT_OPTIONAL
    if client_ca_pem.strip():
        context.load_verify_locations(cadata=client_ca_pem.decode())
    context.set_alpn_protocols(["http/1.1"])
    return context


class ServingCertificates:
    """``context`` goes to the listener once; what it serves follows the files."""

    def __init__(self, cert_file: Path, key_file: Path, *, client_ca_pem: bytes = b"") -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self._client_ca_pem = client_ca_pem
        self._stamp = _stamp(cert_file, key_file)
        self._current = build_context(cert_file, key_file, client_ca_pem=client_ca_pem)
        self.context = build_context(cert_file, key_file, client_ca_pem=client_ca_pem)
        self.context.sni_callback = self._select
        self.reloads = 0

    def _select(
        self, connection: ssl.SSLObject, server_name: str | None, _: ssl.SSLContext
    ) -> None:
        """``SSLContext.sni_callback`` (its positional signature is fixed by ``ssl``)."""
        connection.context = self._current

    @property
    def current(self) -> ssl.SSLContext:
        return self._current

    def check(self) -> bool:
        """Reload when the files changed; True when a new pair is now served."""
        try:
            stamp = _stamp(self.cert_file, self.key_file)
        except OSError as error:
            log.warning("serving_certificate_stat_failed", error=str(error))
            return False
        if stamp == self._stamp:
            return False
        return self._rebuild(stamp)

    def set_client_ca(self, client_ca_pem: bytes) -> None:
        """Trust a new client CA bundle from the next handshake on."""
        if client_ca_pem == self._client_ca_pem:
            return
        self._client_ca_pem = client_ca_pem
        self._rebuild(self._stamp)

    def _rebuild(self, stamp: _Stamp) -> bool:
        try:
            context = build_context(
                self.cert_file, self.key_file, client_ca_pem=self._client_ca_pem
            )
        except (OSError, ssl.SSLError, ValueError) as error:
            log.warning("serving_certificate_reload_failed", error=str(error))
            return False
        self._current = context
        self._stamp = stamp
        self.reloads += 1
        log.info("serving_certificate_loaded", cert_file=str(self.cert_file))
        return True

    async def run(self, clock: Clock, *, interval_seconds: float) -> None:
        while True:
            await clock.sleep(interval_seconds)
            self.check()


def write_self_signed(cert_dir: Path, *, host: str = "localhost") -> tuple[Path, Path]:
    """``MaybeDefaultWithSelfSignedCerts``: an ECDSA pair for ``host``, ``localhost`` and
    127.0.0.1, valid one year, written to ``cert_dir`` (kept if already there)."""
    cert_file, key_file = cert_dir / "apiserver.crt", cert_dir / "apiserver.key"
    if cert_file.exists() and key_file.exists():
        return cert_file, key_file
    cert_dir.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@self-signed")])
    now = dt.datetime.now(dt.UTC)
    sans: list[x509.GeneralName] = [x509.DNSName(host), x509.DNSName("localhost")]
    sans.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    os.chmod(key_file, 0o600)
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_file, key_file

"""Serving certificates reload from files without a restart; a broken pair keeps the old one."""

from __future__ import annotations

import asyncio
import os
import ssl
from pathlib import Path

from aiohttp import web
from cryptography import x509
from cryptography.x509.oid import NameOID

from hpa.kube.tls import ServingCertificates, write_self_signed
from tests.fakes.clock import FakeClock
from tests.lab.pki import create_ca, issue_certificate


async def _served_common_name(port: int, ca_file: Path) -> str:
    context = ssl.create_default_context(cafile=str(ca_file))
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True)
    finally:
        writer.close()
        await writer.wait_closed()
    cert = x509.load_der_x509_certificate(der)
    return str(cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


def _replace(source: Path, target: Path) -> None:
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(source.read_bytes())
    os.replace(tmp, target)  # atomic, like a kubelet secret update


async def test_next_handshake_uses_the_new_files(tmp_path: Path) -> None:
    ca = create_ca(tmp_path, "ca", common_name="ca")
    first = issue_certificate(
        ca, tmp_path / "first", common_name="first", ip_addresses=("127.0.0.1",), server=True
    )
    second = issue_certificate(
        ca, tmp_path / "second", common_name="second", ip_addresses=("127.0.0.1",), server=True
    )
    cert_file, key_file = tmp_path / "tls.crt", tmp_path / "tls.key"
    _replace(first.cert_path, cert_file)
    _replace(first.key_path, key_file)
    tls = ServingCertificates(cert_file, key_file)
    clock = FakeClock()
    app = web.Application()
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls.context)
    await site.start()
    port = runner.addresses[0][1]
    watcher = asyncio.create_task(tls.run(clock, interval_seconds=10.0), name="tls-watch")
    try:
        assert await _served_common_name(port, ca.pair.cert_path) == "first"
        _replace(second.cert_path, cert_file)
        _replace(second.key_path, key_file)
        assert await _served_common_name(port, ca.pair.cert_path) == "first"  # not checked yet
        await clock.advance(10.0)
        assert await _served_common_name(port, ca.pair.cert_path) == "second"
        assert tls.reloads == 1
        # a half-written pair (key does not match) is refused; the good pair stays
        _replace(first.cert_path, cert_file)
        await clock.advance(10.0)
        assert await _served_common_name(port, ca.pair.cert_path) == "second"
        assert tls.reloads == 1
        _replace(first.key_path, key_file)
        await clock.advance(10.0)
        assert await _served_common_name(port, ca.pair.cert_path) == "first"
    finally:
        watcher.cancel()
        await runner.cleanup()


def test_self_signed_pair_is_written_once(tmp_path: Path) -> None:
    cert_file, key_file = write_self_signed(tmp_path / "certs", host="adapter.svc")
    cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "adapter.svc" in names.get_values_for_type(x509.DNSName)
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    again = write_self_signed(tmp_path / "certs", host="other")
    assert again == (cert_file, key_file)
    assert x509.load_pem_x509_certificate(cert_file.read_bytes()) == cert
    ServingCertificates(cert_file, key_file)  # loads

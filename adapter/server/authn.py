"""Authentication like a delegated aggregated API server: front-proxy headers, client
certificates, bearer tokens through TokenReview.

Upstream counterparts (k8s.io/apiserver): ``authentication/request/headerrequest``
(``requestHeaderAuthRequestHandler``: the client certificate must verify against the
requestheader CA and, when the allowed-names list is non-empty, carry one of those CNs; the user
is the first non-empty username header, groups every value of the group headers, extra the
prefixed headers with the key lower-cased and percent-unescaped), ``authentication/request/x509``
(CN is the user, O the groups), ``plugin/pkg/authenticator/token/webhook`` with
``token/cache`` (TokenReview, answers cached for the TTL), ``authentication/request/union`` (first
success wins) and ``server/options/authentication.go`` with
``dynamiccertificates/configmap_cafile_content.go`` (the ``kube-system/
extension-apiserver-authentication`` ConfigMap: ``client-ca-file``,
``requestheader-client-ca-file``, ``requestheader-allowed-names``,
``requestheader-username-headers``, ``requestheader-group-headers``,
``requestheader-extra-headers-prefix``, list values as JSON arrays).

Deliberate deviations:
- certificates are verified as issued directly by a CA of the bundle (signature, validity window,
  ``clientAuth`` extended key usage when present); intermediate chains are not followed (Python's
  ``ssl`` exposes only the leaf before 3.13). kube-apiserver's front-proxy certificate is issued
  directly by the front-proxy CA.
- Python's ``ssl`` cannot request a client certificate without verifying it, so the TLS layer
  trusts the union of both CAs and a certificate from any other CA fails the handshake instead of
  reaching the authenticators (Go: ``tls.RequestClientCert``, then 401).
- anonymous requests are refused (401) rather than passed on as ``system:anonymous``.
- the ConfigMap is polled (default every 60 s) instead of watched.
- a client certificate's parse and signature check are remembered per CA bundle, keyed by its
  DER bytes (``VerifiedCertificates``); its validity window is checked on every request.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, Protocol
from urllib.parse import unquote

import orjson
import structlog
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from multidict import CIMultiDictProxy

from adapter.server.ports import Clock, KubeApi

log = structlog.get_logger(__name__)

TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"  # noqa: S105 - a URL path


@dataclass(frozen=True)
class UserInfo:
    """``user.Info``."""

    name: str
    _: KW_ONLY
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Credentials:
    """What a request presents: its headers and the TLS peer's leaf certificate (DER)."""

    headers: CIMultiDictProxy[str]
    peer_certificate_der: bytes | None = None


class Authenticator(Protocol):
    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        """The user, or None when these credentials do not identify one to this authenticator."""
        ...


# ---------------------------------------------------------------- configuration


@dataclass(frozen=True, kw_only=True)
class AuthenticationConfig:
    """The trust settings, from the ConfigMap with flag overrides applied."""

    client_ca_pem: bytes = b""
    requestheader_ca_pem: bytes = b""
    requestheader_allowed_names: tuple[str, ...] = ()
    requestheader_username_headers: tuple[str, ...] = ()
    requestheader_group_headers: tuple[str, ...] = ()
    requestheader_extra_headers_prefix: tuple[str, ...] = ()

    def ca_bundle_pem(self) -> bytes:
        """Every CA a client certificate may come from (the TLS layer trusts these)."""
        parts = [p.strip() for p in (self.client_ca_pem, self.requestheader_ca_pem) if p.strip()]
        return b"\n".join(parts) + (b"\n" if parts else b"")


def _json_list(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    value = orjson.loads(text)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a JSON list of strings, got {text!r}")
    return tuple(value)


def config_from_configmap(
    data: Mapping[str, str], *, overrides: AuthenticationConfig | None = None
) -> AuthenticationConfig:
    """Read ``extension-apiserver-authentication``; non-empty ``overrides`` fields win (flags)."""
    o = overrides or AuthenticationConfig()
    return AuthenticationConfig(
        client_ca_pem=o.client_ca_pem or data.get("client-ca-file", "").encode(),
        requestheader_ca_pem=o.requestheader_ca_pem
        or data.get("requestheader-client-ca-file", "").encode(),
        requestheader_allowed_names=o.requestheader_allowed_names
        or _json_list(data.get("requestheader-allowed-names")),
        requestheader_username_headers=o.requestheader_username_headers
        or _json_list(data.get("requestheader-username-headers")),
        requestheader_group_headers=o.requestheader_group_headers
        or _json_list(data.get("requestheader-group-headers")),
        requestheader_extra_headers_prefix=o.requestheader_extra_headers_prefix
        or _json_list(data.get("requestheader-extra-headers-prefix")),
    )


# ---------------------------------------------------------------- certificates


def load_ca_bundle(pem: bytes) -> tuple[x509.Certificate, ...]:
    if not pem.strip():
        return ()
    return tuple(x509.load_pem_x509_certificates(pem))


def verify_client_certificate(
    der: bytes, cas: Sequence[x509.Certificate], *, now: datetime
) -> x509.Certificate | None:
    """The parsed leaf if a CA of ``cas`` issued it, it is valid at ``now`` and usable for client
    authentication; else None."""
    try:
        leaf = x509.load_der_x509_certificate(der)
    except ValueError:
        return None
    if not leaf.not_valid_before_utc <= now <= leaf.not_valid_after_utc:
        return None
    try:
        usage = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        usage = None
    if usage is not None and ExtendedKeyUsageOID.CLIENT_AUTH not in usage:
        return None
    for ca in cas:
        if ca.subject != leaf.issuer:
            continue
        if _issued_by(leaf, ca):
            return leaf
    return None


VERIFIED_CACHE_SIZE = 256


class VerifiedLeaf(NamedTuple):
    """What authentication reads of a verified client certificate, read once per certificate."""

    common_name: str
    organizations: tuple[str, ...]
    not_before: datetime
    not_after: datetime


class VerifiedCertificates:
    """``verify_client_certificate`` against one CA bundle, remembering each certificate's
    parse, signature check and the names authentication reads (keyed by its DER bytes: the same
    connection presents the same certificate on every request). The validity window is checked
    on every call."""

    def __init__(self, cas: Sequence[x509.Certificate]) -> None:
        self._cas = tuple(cas)
        self._checked: dict[bytes, VerifiedLeaf | None] = {}

    def __bool__(self) -> bool:
        return bool(self._cas)

    def verify(self, der: bytes, *, now: datetime) -> VerifiedLeaf | None:
        if der in self._checked:
            leaf = self._checked[der]
        else:
            # Checked at its own notBefore so the answer does not depend on the time.
            cert = _verified_signature(der, self._cas)
            leaf = None
            if cert is not None:
                leaf = VerifiedLeaf(
                    _common_name(cert),
                    _organizations(cert),
                    cert.not_valid_before_utc,
                    cert.not_valid_after_utc,
                )
            if len(self._checked) >= VERIFIED_CACHE_SIZE:
                del self._checked[next(iter(self._checked))]
            self._checked[der] = leaf
        if leaf is None or not leaf.not_before <= now <= leaf.not_after:
            return None
        return leaf


def _verified_signature(der: bytes, cas: Sequence[x509.Certificate]) -> x509.Certificate | None:
    try:
        leaf = x509.load_der_x509_certificate(der)
    except ValueError:
        return None
    return verify_client_certificate(der, cas, now=leaf.not_valid_before_utc)


def _issued_by(leaf: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        leaf.verify_directly_issued_by(ca)
    except Exception:  # noqa: BLE001 - InvalidSignature, ValueError, TypeError
        return False
    return True


def _common_name(cert: x509.Certificate) -> str:
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else ""


def _organizations(cert: x509.Certificate) -> tuple[str, ...]:
    return tuple(
        str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    )


class RequestHeaderAuthenticator:
    """The front proxy (kube-apiserver's aggregator) vouches for the user in headers."""

    def __init__(self, config: AuthenticationConfig, *, clock: Clock) -> None:
        self.config = config
        self._cas = VerifiedCertificates(load_ca_bundle(config.requestheader_ca_pem))
        self._clock = clock

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        if credentials.peer_certificate_der is None or not self._cas:
            return None
        leaf = self._cas.verify(credentials.peer_certificate_der, now=self._clock.now())
        if leaf is None:
            return None
        allowed = self.config.requestheader_allowed_names
        if allowed and leaf.common_name not in allowed:
            log.info("requestheader_cn_not_allowed", cn=leaf.common_name)
            return None
        headers = credentials.headers
        name = ""
        for header in self.config.requestheader_username_headers:
            name = next((v for v in headers.getall(header, []) if v), "")
            if name:
                break
        if not name:
            return None
        groups: list[str] = []
        for header in self.config.requestheader_group_headers:
            groups.extend(headers.getall(header, []))
        extra: dict[str, list[str]] = {}
        for prefix in self.config.requestheader_extra_headers_prefix:
            lower = prefix.lower()
            for key, value in headers.items():
                if key.lower().startswith(lower):
                    extra.setdefault(unquote(key[len(prefix) :]).lower(), []).append(value)
        return UserInfo(name, groups=tuple(groups), extra={k: tuple(v) for k, v in extra.items()})


class ClientCertificateAuthenticator:
    """x509 users: CN is the name, O the groups (``--client-ca-file``)."""

    def __init__(self, config: AuthenticationConfig, *, clock: Clock) -> None:
        self._cas = VerifiedCertificates(load_ca_bundle(config.client_ca_pem))
        self._clock = clock

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        if credentials.peer_certificate_der is None or not self._cas:
            return None
        leaf = self._cas.verify(credentials.peer_certificate_der, now=self._clock.now())
        if leaf is None:
            return None
        return UserInfo(leaf.common_name, groups=leaf.organizations)


class TokenReviewAuthenticator:
    """``Authorization: Bearer`` tokens, reviewed by the API server; answers cached for the TTL
    (keyed by the token's SHA-256, failures too, transport errors never)."""

    def __init__(self, api: KubeApi, *, clock: Clock, ttl_seconds: float = 10.0) -> None:
        self._api = api
        self._clock = clock
        self._ttl_seconds = ttl_seconds
        self._cache: dict[bytes, tuple[float, UserInfo | None]] = {}
        self.reviews = 0

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        header = credentials.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        key = hashlib.sha256(token.encode()).digest()
        now = self._clock.monotonic()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        self.reviews += 1
        try:
            answer = await self._api.post(TOKEN_REVIEW_PATH, body)
        except Exception as error:  # noqa: BLE001 - any failure is "not authenticated"
            log.warning("token_review_failed", error=str(error))
            return None
        user = _user_from_review(answer)
        if self._ttl_seconds > 0:
            if len(self._cache) > 4096:
                self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
            self._cache[key] = (now + self._ttl_seconds, user)
        return user


def _user_from_review(answer: Mapping[str, Any]) -> UserInfo | None:
    """The user of a TokenReview answer, decoded as strictly as Go's ``json.Unmarshal`` into
    ``TokenReviewStatus``: ``authenticated`` must be the boolean ``true`` and the user's fields
    strings (``groups`` a list of them, ``extra`` a map of lists). Anything else authenticates
    no one (fail closed)."""
    status = answer.get("status")
    if not isinstance(status, Mapping) or status.get("authenticated") is not True:
        if isinstance(status, Mapping) and status.get("authenticated") not in (None, False):
            log.warning("token_review_malformed", field="status.authenticated")
        return None
    user = status.get("user")
    if user is None:
        user = {}
    try:
        if not isinstance(user, Mapping):
            raise TypeError("status.user is not an object")
        extra = user.get("extra") or {}
        if not isinstance(extra, Mapping):
            raise TypeError("status.user.extra is not an object")
        return UserInfo(
            _string(user.get("username"), "username"),
            uid=_string(user.get("uid"), "uid"),
            groups=_strings(user.get("groups"), "groups"),
            extra={_string(k, "extra"): _strings(v, f"extra.{k}") for k, v in extra.items()},
        )
    except TypeError as error:
        log.warning("token_review_malformed", error=str(error))
        return None


def _string(value: Any, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"status.user.{field} is a {type(value).__name__}, not a string")
    return value


def _strings(value: Any, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TypeError(f"status.user.{field} is a {type(value).__name__}, not a list")
    return tuple(_string(item, field) for item in value)


class UnionAuthenticator:
    """``union.New``: the first authenticator that knows the user wins."""

    def __init__(self, authenticators: Sequence[Authenticator]) -> None:
        self.authenticators = tuple(authenticators)

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        for authenticator in self.authenticators:
            user = await authenticator.authenticate(credentials)
            if user is not None:
                return user
        return None


# ---------------------------------------------------------------- the dynamic whole


class DelegatingAuthenticator:
    """Front proxy, client certificates, then bearer tokens; rebuilt whenever the trust
    configuration changes (``refresh`` re-reads the ConfigMap)."""

    def __init__(
        self,
        *,
        clock: Clock,
        api: KubeApi | None,
        overrides: AuthenticationConfig | None = None,
        configmap_namespace: str = "kube-system",
        configmap_name: str = "extension-apiserver-authentication",
        lookup: bool = True,
        token_ttl_seconds: float = 10.0,
        refresh_interval_seconds: float = 60.0,
    ) -> None:
        self._clock = clock
        self._api = api
        self._overrides = overrides or AuthenticationConfig()
        self._path = f"/api/v1/namespaces/{configmap_namespace}/configmaps/{configmap_name}"
        self._lookup = lookup and api is not None
        self._refresh_interval_seconds = refresh_interval_seconds
        self._tokens = (
            TokenReviewAuthenticator(api, clock=clock, ttl_seconds=token_ttl_seconds)
            if api is not None
            else None
        )
        self._listeners: list[Callable[[AuthenticationConfig], None]] = []
        self.config = self._overrides
        self._union = self._build(self.config)

    def _build(self, config: AuthenticationConfig) -> UnionAuthenticator:
        chain: list[Authenticator] = [
            RequestHeaderAuthenticator(config, clock=self._clock),
            ClientCertificateAuthenticator(config, clock=self._clock),
        ]
        if self._tokens is not None:
            chain.append(self._tokens)
        return UnionAuthenticator(chain)

    def on_change(self, listener: Callable[[AuthenticationConfig], None]) -> None:
        """Called with the new configuration whenever it changes (the TLS layer's CA bundle)."""
        self._listeners.append(listener)

    def set_config(self, config: AuthenticationConfig) -> None:
        load_ca_bundle(config.client_ca_pem)  # raises ValueError on a bad bundle
        load_ca_bundle(config.requestheader_ca_pem)
        if config == self.config:
            return
        self.config = config
        self._union = self._build(config)
        log.info(
            "authentication_config_changed",
            client_ca=bool(config.client_ca_pem),
            requestheader_ca=bool(config.requestheader_ca_pem),
            allowed_names=list(config.requestheader_allowed_names),
        )
        for listener in self._listeners:
            listener(config)

    async def refresh(self) -> None:
        """Re-read the ConfigMap (no-op when lookup is off). Raises on failure; the previous
        configuration stays."""
        if not self._lookup or self._api is None:
            return
        configmap = await self._api.get(self._path)
        data = configmap.get("data") or {}
        self.set_config(config_from_configmap(data, overrides=self._overrides))

    async def run(self) -> None:
        """Refresh forever (failures are logged; the last good configuration stays)."""
        while True:
            await self._clock.sleep(self._refresh_interval_seconds)
            try:
                await self.refresh()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - keep serving with the last config
                log.warning("authentication_config_refresh_failed", error=str(error))

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        return with_authenticated_group(await self._union.authenticate(credentials))


AUTHENTICATED_GROUP = "system:authenticated"


def with_authenticated_group(user: UserInfo | None) -> UserInfo | None:
    """``group.NewAuthenticatedGroupAdder``: every authenticated user is in
    ``system:authenticated`` (RBAC's ``system:discovery`` and ``system:public-info-viewer``
    grant ``/apis``, ``/openapi/*`` to it; kube-apiserver's aggregator fetches ``/openapi/v2`` as
    ``system:aggregator`` without groups)."""
    if user is None or AUTHENTICATED_GROUP in user.groups:
        return user
    return UserInfo(
        user.name, uid=user.uid, groups=(*user.groups, AUTHENTICATED_GROUP), extra=user.extra
    )

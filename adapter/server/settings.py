"""The adapter's one frozen ``Settings``, built from flags that reuse prometheus-adapter's names.

Upstream counterparts: prometheus-adapter ``cmd/adapter/adapter.go`` (``--config``,
``--prometheus-url``, ``--metrics-relist-interval``, ``--metrics-max-age``,
``--prometheus-auth-config``, ``--prometheus-ca-file``, ``--prometheus-token-file``,
``--prometheus-header``, ``--lister-kubeconfig``) and k8s.io/apiserver's
``SecureServingOptions`` / ``DelegatingAuthenticationOptions`` /
``DelegatingAuthorizationOptions`` (``--secure-port``, ``--bind-address``, ``--tls-cert-file``,
``--tls-private-key-file``, ``--client-ca-file``, ``--requestheader-*``,
``--authentication-kubeconfig``, ``--authorization-always-allow-paths``).

Deliberate deviations: ``--kubeconfig`` is an alias of ``--lister-kubeconfig`` and is also used
for TokenReview/SubjectAccessReview and the ``extension-apiserver-authentication`` ConfigMap
(upstream has separate ``--authentication-kubeconfig``/``--authorization-kubeconfig``); anonymous
requests are refused with 401 (upstream's delegating authentication lets ``system:anonymous``
through to authorization, which then answers 403); a few flags of ours have no upstream twin
(``--config-check-interval``, ``--tls-check-interval``, ``--auth-config-refresh-interval``,
``--debug-endpoints``, ``--event-loop``).
"""

from __future__ import annotations

import argparse
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path

from adapter.prometheus.connection import check_header
from adapter.providers.index import DEFAULT_RELIST_INTERVAL_SECONDS
from adapter.providers.values import DEFAULT_PROBE_REUSE_SECONDS, MAX_DEFAULT_SAMPLE_AGE_SECONDS
from hpa.core.duration import parse_duration_seconds
from hpa.kube.logs import LogFormat, LogLevel, add_log_flags
from hpa.kube.runtime import EVENT_LOOPS, EventLoop

DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
DEFAULT_ALWAYS_ALLOW_GROUPS = ("system:masters",)


@dataclass(frozen=True)
class Settings:
    """Everything ``hpa adapter`` needs; one instance per process, never mutated.

    Serving:
      secure_port: TCP port of the HTTPS listener (default 6443, ``--secure-port``).
      bind_address: address to listen on (default ``0.0.0.0``, ``--bind-address``).
      tls_cert_file / tls_private_key_file: PEM serving certificate and key; reloaded when the
        files change (``--tls-cert-file``/``--tls-private-key-file``). When unset, a self-signed
        certificate is generated into ``cert_dir`` (upstream ``--cert-dir``).
      cert_dir: where the self-signed certificate goes (default
        ``apiserver.local.config/certificates``).
      tls_check_interval_seconds: how often the certificate files are checked for changes
        (seconds, default 10; upstream watches with fsnotify and re-checks every minute).
    Authentication and authorization (k8s.io/apiserver delegating options):
      client_ca_file: CA for x509 client-certificate users (``--client-ca-file``); when None the
        ``client-ca-file`` key of the ConfigMap is used.
      requestheader_client_ca_file: CA of the front proxy (``--requestheader-client-ca-file``);
        when None the ConfigMap's ``requestheader-client-ca-file``.
      requestheader_allowed_names / _username_headers / _group_headers / _extra_headers_prefix:
        override the ConfigMap's values when non-empty (``--requestheader-*``).
      authentication_config_namespace / _name: the ConfigMap (default
        ``kube-system/extension-apiserver-authentication``).
      auth_config_refresh_interval_seconds: how often that ConfigMap is re-read (seconds,
        default 60).
      authentication_skip_lookup: never read the ConfigMap (``--authentication-skip-lookup``).
      authentication_cache_ttl_seconds: TokenReview answers are cached this long (seconds,
        default 10, ``--authentication-token-webhook-cache-ttl``).
      authorization_cache_ttl_seconds: SubjectAccessReview answers, allowed or denied, are cached
        this long (seconds, default 10, at most 10).
      always_allow_paths: served without authentication or authorization (default
        ``/healthz``, ``/readyz``, ``/livez``; ``--authorization-always-allow-paths``).
      always_allow_groups: users in these groups are authorized without a SubjectAccessReview
        (default ``system:masters``, upstream's ``AlwaysAllowGroups``; no flag, as upstream).
      kubeconfig: kubeconfig for every Kubernetes API call (pod watch, TokenReview, SAR, the
        ConfigMap); None means in-cluster (``--lister-kubeconfig``/``--kubeconfig``).
    Metrics (prometheus-adapter):
      config: path of the rule file (``--config``, required). Reloaded on change or SIGHUP. Its
        ``routes:`` section forwards the metrics it does not serve to other metrics API servers
        (docs/adapter-server.md).
      config_check_interval_seconds: how often the rule file is checked for changes (seconds,
        default 10).
      prometheus_url: Prometheus base URL (default ``https://localhost``, ``--prometheus-url``).
      prometheus_auth_config / prometheus_ca_file / prometheus_token_file /
      prometheus_client_tls_cert_file / prometheus_client_tls_key_file / prometheus_headers:
        how to reach Prometheus (``--prometheus-*`` flags, headers as ``Name=value``).
      prometheus_query_timeout_seconds: per-query timeout (seconds, default 30).
      metrics_relist_interval_seconds: how often the metric index is rebuilt (seconds, default 600,
        ``--metrics-relist-interval``).
      discovery_interval_seconds: how often API discovery (the resources the rules may name,
        CRDs included) is read again (seconds, default 600, ``--discovery-interval``; it is also
        read before every rule-file load).
      metrics_max_age_seconds: how far back series are listed (seconds; None means the relist
        interval, ``--metrics-max-age``).
      max_sample_age_seconds: a custom or external value whose newest raw sample is older is
        missing (seconds, default 60, i.e. 2 x a 30 s scrape interval; 0 turns the check and its
        staleness probe off; ``--max-sample-age``, ours: docs/adapter-values.md).
      staleness_probe_reuse_seconds: a staleness probe that proved every value of a request
        fresh is reused this long by requests for the same objects, which then send the value
        query alone, and by the renewals of a batch (seconds, default 1; 0 probes on every
        request and evaluation;
        ``--staleness-probe-reuse``, ours: docs/adapter-values.md).
      batch_max_age_seconds: custom-metrics requests of batchable rules are answered from one
        query per rule for every object while its answer is younger than this (seconds;
        default 0, batching off, one query per request as prometheus-adapter; 7.5, half the
        HPA's 15 s sync period, is the value to turn it on with; ``--batch-max-age``, ours:
        docs/adapter-values.md).
      batch_max_series: a batched answer across namespaces larger than this is evaluated per
        namespace from then on (None: no limit; ``--max-series``).
    Process:
      event_loop: the event loop everything runs on: ``uvloop`` (default; libuv's loop with its
        own TLS) or ``asyncio`` (the standard library's); the same answers on either
        (``--event-loop``, ours: docs/performance.md, "Fleet scale").
    Debugging:
      debug_endpoints: serve ``/debug/explain`` (authorized like any request; default True).
      log_level: structlog JSON lines at this level and above (default ``info``; ``debug`` logs
        every request; ``--log-level``, our twin of klog's ``-v``).
      log_format: ``json`` lines (default) or one ``console`` line per event (``--log-format``).
    """

    config: Path
    _: KW_ONLY
    secure_port: int = 6443
    bind_address: str = "0.0.0.0"  # noqa: S104 - an API server listens on every interface
    tls_cert_file: Path | None = None
    tls_private_key_file: Path | None = None
    cert_dir: Path = Path("apiserver.local.config/certificates")
    tls_check_interval_seconds: float = 10.0
    client_ca_file: Path | None = None
    requestheader_client_ca_file: Path | None = None
    requestheader_allowed_names: tuple[str, ...] = ()
    requestheader_username_headers: tuple[str, ...] = ()
    requestheader_group_headers: tuple[str, ...] = ()
    requestheader_extra_headers_prefix: tuple[str, ...] = ()
    authentication_config_namespace: str = "kube-system"
    authentication_config_name: str = "extension-apiserver-authentication"
    auth_config_refresh_interval_seconds: float = 60.0
    authentication_skip_lookup: bool = False
    authentication_cache_ttl_seconds: float = 10.0
    authorization_cache_ttl_seconds: float = 10.0
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    always_allow_groups: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_GROUPS
    kubeconfig: Path | None = None
    config_check_interval_seconds: float = 10.0
    prometheus_url: str = "https://localhost"
    prometheus_auth_config: Path | None = None
    prometheus_ca_file: Path | None = None
    prometheus_token_file: Path | None = None
    prometheus_client_tls_cert_file: Path | None = None
    prometheus_client_tls_key_file: Path | None = None
    prometheus_headers: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    prometheus_query_timeout_seconds: float = 30.0
    metrics_relist_interval_seconds: float = DEFAULT_RELIST_INTERVAL_SECONDS
    metrics_max_age_seconds: float | None = None
    discovery_interval_seconds: float = 600.0
    max_sample_age_seconds: float = MAX_DEFAULT_SAMPLE_AGE_SECONDS
    staleness_probe_reuse_seconds: float = DEFAULT_PROBE_REUSE_SECONDS
    batch_max_age_seconds: float = 0.0
    batch_max_series: int | None = None
    event_loop: EventLoop = "uvloop"
    debug_endpoints: bool = True
    log_level: LogLevel = "info"
    log_format: LogFormat = "json"

    def __post_init__(self) -> None:
        if not 0 < self.authorization_cache_ttl_seconds <= 10:
            raise ValueError("authorization_cache_ttl_seconds must be in (0, 10]")
        if self.max_sample_age_seconds < 0:
            raise ValueError("max_sample_age_seconds must not be negative")
        if self.staleness_probe_reuse_seconds < 0:
            raise ValueError("staleness_probe_reuse_seconds must not be negative")
        if self.batch_max_age_seconds < 0:
            raise ValueError("batch_max_age_seconds must not be negative")
        if self.batch_max_series is not None and self.batch_max_series <= 0:
            raise ValueError("batch_max_series must be positive")
        if self.authentication_cache_ttl_seconds < 0:
            raise ValueError("authentication_cache_ttl_seconds must not be negative")
        if self.metrics_relist_interval_seconds <= 0:
            raise ValueError("metrics_relist_interval_seconds must be positive")
        if self.discovery_interval_seconds <= 0:
            raise ValueError("discovery_interval_seconds must be positive")
        if (self.tls_cert_file is None) != (self.tls_private_key_file is None):
            raise ValueError("--tls-cert-file and --tls-private-key-file go together")


def _csv(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def parse_header(text: str) -> tuple[str, str]:
    """``Name=value`` of ``--prometheus-header``, checked by
    :func:`adapter.prometheus.connection.check_header` (no CR, LF or NUL in the value)."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected Name=value, got {text!r}")
    try:
        check_header(name, value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return name, value


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Register the adapter's flags (upstream names) on ``parser``."""
    d = Settings(config=Path("x"))
    p = parser.add_argument
    p("--config", type=Path, help="rule file (prometheus-adapter format; required)")
    p("--secure-port", type=int, default=d.secure_port)
    p("--bind-address", default=d.bind_address)
    p("--tls-cert-file", type=Path)
    p("--tls-private-key-file", type=Path)
    p("--cert-dir", type=Path, default=d.cert_dir)
    p("--tls-check-interval", type=parse_duration_seconds, default=d.tls_check_interval_seconds)
    p("--client-ca-file", type=Path)
    p("--requestheader-client-ca-file", type=Path)
    p("--requestheader-allowed-names", type=_csv, default=())
    p("--requestheader-username-headers", type=_csv, default=())
    p("--requestheader-group-headers", type=_csv, default=())
    p("--requestheader-extra-headers-prefix", type=_csv, default=())
    p("--authentication-skip-lookup", action="store_true")
    p(
        "--authentication-token-webhook-cache-ttl",
        type=parse_duration_seconds,
        default=d.authentication_cache_ttl_seconds,
    )
    p(
        "--authorization-webhook-cache-ttl",
        type=parse_duration_seconds,
        default=d.authorization_cache_ttl_seconds,
        help="cache of SubjectAccessReview answers (at most 10s)",
    )
    p("--authorization-always-allow-paths", type=_csv, default=d.always_allow_paths)
    p(
        "--auth-config-refresh-interval",
        type=parse_duration_seconds,
        default=d.auth_config_refresh_interval_seconds,
    )
    p("--lister-kubeconfig", "--kubeconfig", dest="kubeconfig", type=Path)
    p(
        "--config-check-interval",
        type=parse_duration_seconds,
        default=d.config_check_interval_seconds,
    )
    p("--prometheus-url", default=d.prometheus_url)
    p("--prometheus-auth-config", type=Path)
    p("--prometheus-ca-file", type=Path)
    p("--prometheus-token-file", type=Path)
    p("--prometheus-client-tls-cert-file", type=Path)
    p("--prometheus-client-tls-key-file", type=Path)
    p("--prometheus-header", type=parse_header, action="append", default=[])
    p(
        "--prometheus-query-timeout",
        type=parse_duration_seconds,
        default=d.prometheus_query_timeout_seconds,
    )
    p(
        "--metrics-relist-interval",
        type=parse_duration_seconds,
        default=d.metrics_relist_interval_seconds,
    )
    p("--metrics-max-age", type=parse_duration_seconds, default=None)
    p(
        "--discovery-interval",
        type=parse_duration_seconds,
        default=d.discovery_interval_seconds,
        help="how often API discovery (the resources rules may name, CRDs included) is re-read",
    )
    p(
        "--max-sample-age",
        type=parse_duration_seconds,
        default=d.max_sample_age_seconds,
        help="values whose newest raw sample is older are missing (0s: no staleness check)",
    )
    p(
        "--staleness-probe-reuse",
        type=parse_duration_seconds,
        default=d.staleness_probe_reuse_seconds,
        help="a staleness probe that proved a request's values fresh is reused this long for "
        "the same objects, and a batch's probe by its renewals (0s: probe on every request and "
        "evaluation)",
    )
    p(
        "--batch-max-age",
        type=parse_duration_seconds,
        default=d.batch_max_age_seconds,
        help="answer custom metrics from one query per rule for every object while it is "
        "younger than this (default 0s: one query per request; 7.5s: half the HPA sync period)",
    )
    p(
        "--max-series",
        type=int,
        default=None,
        help="a batched answer across namespaces larger than this is evaluated per namespace",
    )
    p(
        "--event-loop",
        choices=EVENT_LOOPS,
        default=d.event_loop,
        help="the event loop: uvloop (libuv, the default) or asyncio (the standard library's)",
    )
    p("--no-debug-endpoints", dest="debug_endpoints", action="store_false")
    add_log_flags(parser, default_level=d.log_level, default_format=d.log_format)


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The frozen ``Settings`` of parsed flags (``ValueError`` on inconsistent values)."""
    if args.config is None:
        raise ValueError("--config is required")
    settings = Settings(
        config=args.config,
        secure_port=args.secure_port,
        bind_address=args.bind_address,
        tls_cert_file=args.tls_cert_file,
        tls_private_key_file=args.tls_private_key_file,
        cert_dir=args.cert_dir,
        tls_check_interval_seconds=args.tls_check_interval,
        client_ca_file=args.client_ca_file,
        requestheader_client_ca_file=args.requestheader_client_ca_file,
        requestheader_allowed_names=tuple(args.requestheader_allowed_names),
        requestheader_username_headers=tuple(args.requestheader_username_headers),
        requestheader_group_headers=tuple(args.requestheader_group_headers),
        requestheader_extra_headers_prefix=tuple(args.requestheader_extra_headers_prefix),
        authentication_skip_lookup=args.authentication_skip_lookup,
        authentication_cache_ttl_seconds=args.authentication_token_webhook_cache_ttl,
        authorization_cache_ttl_seconds=args.authorization_webhook_cache_ttl,
        always_allow_paths=tuple(args.authorization_always_allow_paths),
        auth_config_refresh_interval_seconds=args.auth_config_refresh_interval,
        kubeconfig=args.kubeconfig,
        config_check_interval_seconds=args.config_check_interval,
        prometheus_url=args.prometheus_url,
        prometheus_auth_config=args.prometheus_auth_config,
        prometheus_ca_file=args.prometheus_ca_file,
        prometheus_token_file=args.prometheus_token_file,
        prometheus_client_tls_cert_file=args.prometheus_client_tls_cert_file,
        prometheus_client_tls_key_file=args.prometheus_client_tls_key_file,
        prometheus_headers=tuple(args.prometheus_header),
        prometheus_query_timeout_seconds=args.prometheus_query_timeout,
        metrics_relist_interval_seconds=args.metrics_relist_interval,
        metrics_max_age_seconds=args.metrics_max_age,
        discovery_interval_seconds=args.discovery_interval,
        max_sample_age_seconds=args.max_sample_age,
        staleness_probe_reuse_seconds=args.staleness_probe_reuse,
        batch_max_age_seconds=args.batch_max_age,
        batch_max_series=args.max_series,
        event_loop=args.event_loop,
        debug_endpoints=args.debug_endpoints,
        log_level=args.log_level,
        log_format=args.log_format,
    )
    return settings


def check_files(settings: Settings) -> None:
    """``ValueError`` naming the first flag whose file does not exist: checked when the process
    starts, before anything connects, so the message names the file and not a later symptom."""
    for flag, path in (
        ("--config", settings.config),
        ("--kubeconfig", settings.kubeconfig),
        ("--tls-cert-file", settings.tls_cert_file),
        ("--tls-private-key-file", settings.tls_private_key_file),
        ("--client-ca-file", settings.client_ca_file),
        ("--requestheader-client-ca-file", settings.requestheader_client_ca_file),
        ("--prometheus-auth-config", settings.prometheus_auth_config),
        ("--prometheus-ca-file", settings.prometheus_ca_file),
        ("--prometheus-token-file", settings.prometheus_token_file),
        ("--prometheus-client-tls-cert-file", settings.prometheus_client_tls_cert_file),
        ("--prometheus-client-tls-key-file", settings.prometheus_client_tls_key_file),
    ):
        if path is not None and not Path(path).is_file():
            raise ValueError(f"{flag}: {path}: no such file")

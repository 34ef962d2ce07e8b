"""A minimal aggregated API server, to prove the lab's aggregation path end to end.

Upstream counterpart: `k8s.io/apiserver/pkg/authentication/request/headerrequest`
(`requestHeaderAuthRequestHandler`) and `staging/src/k8s.io/sample-apiserver`. Like them it
trusts the identity headers only from a client whose certificate chains to the front-proxy CA
(`--requestheader-client-ca-file`) and whose CN is an allowed name; it then reads
`X-Remote-User` and `X-Remote-Group`. Deviations: the front-proxy CA and allowed names come from
flags instead of the `extension-apiserver-authentication` ConfigMap, there is no authorization
step, and it serves one read-only resource, `whoamis`, which echoes the identity it received.

    python -m tests.lab.aggserver --host 198.18.0.2 --port 8443 --cert ... --key ... \
        --front-proxy-ca front-proxy-ca.crt
"""

from __future__ import annotations

import argparse
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

GROUP = "lab.hpa.test"
VERSION = "v1alpha1"
RESOURCE = "whoamis"
ALLOWED_NAMES = ("front-proxy-client",)


def resource_list() -> dict[str, Any]:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{GROUP}/{VERSION}",
        "resources": [
            {
                "name": RESOURCE,
                "singularName": "whoami",
                "namespaced": False,
                "kind": "WhoAmI",
                "verbs": ["get", "list"],
            }
        ],
    }


def peer_common_name(request: web.Request) -> str | None:
    transport = request.transport
    ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
    if not isinstance(ssl_object, ssl.SSLObject):
        return None
    certificate = ssl_object.getpeercert()
    if not certificate:
        return None
    for rdn in certificate.get("subject", ()):
        for attribute in rdn:
            if attribute[0] == "commonName":
                return str(attribute[1])
    return None


@web.middleware
async def front_proxy_authentication(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """The TLS layer already verified the chain; here the CN must be an allowed name."""
    common_name = peer_common_name(request)
    if common_name not in ALLOWED_NAMES:
        return web.json_response(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "code": 401,
                "reason": "Unauthorized",
                "message": f"client {common_name!r} is not a front proxy",
            },
            status=401,
        )
    return await handler(request)


async def discovery(_request: web.Request) -> web.Response:
    return web.json_response(resource_list())


async def whoamis(request: web.Request) -> web.Response:
    user = request.headers.get("X-Remote-User", "")
    if not user:
        return web.json_response(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "code": 401,
                "reason": "Unauthorized",
                "message": "no X-Remote-User",
            },
            status=401,
        )
    return web.json_response(
        {
            "kind": "WhoAmI",
            "apiVersion": f"{GROUP}/{VERSION}",
            "metadata": {"name": "self"},
            "user": user,
            "groups": request.headers.getall("X-Remote-Group", []),
            "frontProxy": peer_common_name(request),
        }
    )


async def healthz(_request: web.Request) -> web.Response:
    return web.Response(text="ok")


def build_app() -> web.Application:
    app = web.Application(middlewares=[front_proxy_authentication])
    app.router.add_get(f"/apis/{GROUP}/{VERSION}", discovery)
    app.router.add_get(f"/apis/{GROUP}/{VERSION}/{RESOURCE}", whoamis)
    app.router.add_get(f"/apis/{GROUP}/{VERSION}/{RESOURCE}/{{name}}", whoamis)
    app.router.add_get("/healthz", healthz)
    return app


def tls_context(*, cert: str, key: str, front_proxy_ca: str) -> ssl.SSLContext:
    """Serving TLS that REQUIRES a client certificate chaining to the front-proxy CA."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=front_proxy_ca)
    context.load_cert_chain(cert, key)
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="minimal aggregated API server for the lab")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--front-proxy-ca", required=True)
    args = parser.parse_args(argv)
    context = tls_context(cert=args.cert, key=args.key, front_proxy_ca=args.front_proxy_ca)
    web.run_app(
        build_app(),
        host=args.host,
        port=args.port,
        ssl_context=context,
        print=None,
        access_log=None,
    )


if __name__ == "__main__":
    main()

"""The aiohttp API server of the metrics layer (``hpa adapter``).

Upstream counterparts: kubernetes-sigs/custom-metrics-apiserver (``pkg/apiserver``,
``pkg/registry``, ``pkg/cmd``), metrics-server's ``pkg/api`` for ``metrics.k8s.io``, and the
delegated authentication/authorization of k8s.io/apiserver. See docs/adapter-server.md.
"""

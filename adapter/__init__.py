"""The metrics layer: a Prometheus-backed server for the Kubernetes metrics APIs.

It serves ``custom.metrics.k8s.io``, ``external.metrics.k8s.io`` and ``metrics.k8s.io`` from a
rule file compatible with prometheus-adapter's, and its providers can be called in-process.
"""

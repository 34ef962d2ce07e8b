"""Metrics ports' API-backed clients (metrics.k8s.io, custom and external metrics APIs) and the
in-process bridge to adapter.
"""

"""Tests of hpa.kube."""

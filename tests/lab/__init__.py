"""The local lab: a real control plane, Prometheus and a workload exporter for end-to-end tests."""

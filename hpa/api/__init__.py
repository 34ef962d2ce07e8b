"""Pydantic v2 boundary models for the Kubernetes JSON we read and write."""

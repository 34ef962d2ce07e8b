"""Tests of hpa.controllers."""

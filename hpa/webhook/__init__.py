"""The VPA admission webhook."""

"""hpa: a Kubernetes autoscaling stack.

The horizontal controller, the vertical autoscaler and the simulator live here; the metrics layer
lives in the sibling package :mod:`adapter`. See ``ARCHITECTURE.md`` for the layers.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hpa")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]

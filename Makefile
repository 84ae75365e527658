# Every target sets itself up: the virtual environment is created and filled when it is
# missing, broken, or older than pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.asofgpu-installed
EXTRAS ?= test,bench

.PHONY: demo test test-cpu test-sim venv bench-first gpu-check clean

venv:
	@if [ ! -x $(BIN)/python ] || ! $(BIN)/python -c "import asofgpu, pytest" 2>/dev/null \
	    || [ pyproject.toml -nt $(STAMP) ]; then \
	  echo "setting up $(VENV) (asofgpu[$(EXTRAS)], editable)"; \
	  rm -rf $(VENV) && $(PYTHON) -m venv $(VENV) \
	  && $(BIN)/python -m pip install -q --upgrade pip "setuptools>=64" \
	  && $(BIN)/python -m pip install -q -e ".[$(EXTRAS)]" \
	  && touch $(STAMP); \
	fi

# The main job: a synthetic market-data day, prepared once and probed, with timings.
demo: venv
	$(BIN)/asofgpu demo

# The suite: python and cpu backends (plus doctests), then the CUDA backend in the simulator.
test: test-cpu test-sim

test-cpu: venv
	$(BIN)/python -m pytest -m "not gpu" --doctest-modules asofgpu tests

test-sim: venv
	NUMBA_ENABLE_CUDASIM=1 $(BIN)/python -m pytest -m "not gpu" -k cuda tests

bench-first: venv
	$(BIN)/python bench/first_measurement.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
	find asofgpu kernels -name "*.nb[ic]" -delete

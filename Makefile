# Every target sets itself up: the virtual environment is created and filled when it is
# missing, broken, or older than pyproject.toml, and `asofgpu warm` then compiles the usual
# joins' CPU kernels into numba's cache (one to two minutes on 2 cores, every core at once), so
# that neither the first join nor the suite compiles them one at a time.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.asofgpu-installed
EXTRAS ?= test,bench,ptx

VENV_CUDF := .venv-cudf
CUDF_STAMP := $(VENV_CUDF)/.asofgpu-installed

VENV_FLOOR := .venv-floor
FLOOR_STAMP := $(VENV_FLOOR)/.asofgpu-installed

.PHONY: demo test test-cpu test-sim test-cudf test-floor venv venv-cudf venv-floor bench gpu-check \
	gpu-wheelhouse clean

venv:
	@if [ ! -x $(BIN)/python ] || ! $(BIN)/python -c "import asofgpu.table, pytest" 2>/dev/null \
	    || [ pyproject.toml -nt $(STAMP) ]; then \
	  echo "setting up $(VENV) (asofgpu[$(EXTRAS)], editable)"; \
	  rm -rf $(VENV) && $(PYTHON) -m venv $(VENV) \
	  && $(BIN)/python -m pip install -q --upgrade pip "setuptools>=64" \
	  && $(BIN)/python -m pip install -q -e ".[$(EXTRAS)]" \
	  && $(BIN)/asofgpu warm \
	  && touch $(STAMP); \
	fi

# cuDF, pylibcudf and cudf-polars (which pins polars 1.x) live in their own environment,
# about 5 GB; on a machine without a GPU they import, and their argument handling is tested.
# Its numba (0.64) keeps its own cache (NUMBA_CACHE_DIR, as the floors' does): sharing the
# kernels' __pycache__ with .venv's numba 0.68, each dropped the other's entries (numba
# ignores an index another version wrote), and every `make test` compiled them again.
venv-cudf:
	@if [ ! -x $(VENV_CUDF)/bin/python ] || ! $(VENV_CUDF)/bin/python -c "import asofgpu.table, cudf_polars, pytest" 2>/dev/null \
	    || [ pyproject.toml -nt $(CUDF_STAMP) ]; then \
	  echo "setting up $(VENV_CUDF) (asofgpu[cudf12,cudf-polars,test], editable)"; \
	  rm -rf $(VENV_CUDF) && $(PYTHON) -m venv $(VENV_CUDF) \
	  && $(VENV_CUDF)/bin/python -m pip install -q --upgrade pip "setuptools>=64" \
	  && $(VENV_CUDF)/bin/python -m pip install -q -e ".[cudf12,cudf-polars,test]" \
	  && touch $(CUDF_STAMP); \
	fi

# The floors: the oldest numpy, numba, pyarrow and rich that pyproject.toml's dependencies
# allow, and of its pandas and polars extras, in a small environment of their own, where the
# front ends', gathers', Arrow layouts', the core's key types and grid, and enrich's types,
# sources and one-file tests run (the key types found numba 0.59's wrong dispatch: the floor is 0.61),
# and the library's doctests (one used a float16 dictionary_encode that pyarrow 19 lacks).
# Their numba keeps its own cache there (NUMBA_CACHE_DIR), apart from .venv's newer numba.
FLOOR_TESTS := tests/test_pandas_frontend.py tests/test_pandas_semantics.py \
	tests/test_pandas_arrow.py tests/test_dask.py tests/test_splice_frontends.py \
	tests/test_window_frontends.py tests/test_pandas_tolerance.py tests/test_polars_frontend.py \
	tests/test_gather_parallel.py tests/test_arrow_numpy.py tests/test_views.py \
	tests/test_enrich_e2e.py tests/test_cache_lock.py tests/test_key_types.py tests/test_grid.py \
	tests/test_enrich_types.py tests/test_enrich_sources.py tests/test_enrich_one_file.py \
	tests/test_cache_load.py
FLOORS := "numpy==1.24.*" "numba==0.61.*" "pyarrow==19.0.*" "rich==13.0.*" "pandas==2.2.*" \
	"polars==1.44.*"
venv-floor:
	@if [ ! -x $(VENV_FLOOR)/bin/python ] || ! $(VENV_FLOOR)/bin/python -c "import asofgpu.table, pytest" 2>/dev/null \
	    || [ pyproject.toml -nt $(FLOOR_STAMP) ] || [ Makefile -nt $(FLOOR_STAMP) ]; then \
	  echo "setting up $(VENV_FLOOR) (asofgpu[dask] at the floors, editable)"; \
	  rm -rf $(VENV_FLOOR) && $(PYTHON) -m venv $(VENV_FLOOR) \
	  && $(VENV_FLOOR)/bin/python -m pip install -q --upgrade pip "setuptools>=64" \
	  && $(VENV_FLOOR)/bin/python -m pip install -q -e ".[dask]" $(FLOORS) "pytest>=8" \
	      "pytest-xdist>=3.5" "hypothesis>=6.100" \
	  && touch $(FLOOR_STAMP); \
	fi

# The main job: a synthetic market-data day written as parquet and enriched (asofgpu enrich).
demo: venv
	$(BIN)/asofgpu demo

# The suite: python and cpu backends (plus doctests), then the CUDA backend in the simulator,
# then the cuDF / pylibcudf / cudf-polars front ends and the polars 1.x line, then the front
# ends, gathers and enrich at the dependency floors. test-cpu runs the unit tests, then in a
# step of their own the `slow` ones, which run tools (a wheel build, asofgpu warm, the CLI and
# the bench scripts as processes); --durations names the slowest. Both run on every core
# (pytest-xdist): most of the unit tests' time is numba compiling kernels, which a process
# does on one core, and the slow ones wait on their processes (180 s one at a time, 107 s in
# two workers, on 2 cores on 12-07).
test: test-cpu test-sim test-cudf test-floor

test-cpu: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -n auto -m "not gpu and not slow" --durations=25 --doctest-modules \
	    asofgpu tests
	$(BIN)/python -m pytest -n auto -m "slow and not gpu" --durations=25 tests

test-sim: venv
	NUMBA_ENABLE_CUDASIM=1 $(BIN)/python -m pytest -n auto -m "not gpu" -k cuda tests

test-floor: venv-floor
	NUMBA_CACHE_DIR=$(VENV_FLOOR)/numba-cache $(VENV_FLOOR)/bin/python -m pytest -n auto \
	    -m "not gpu and not slow" --doctest-modules asofgpu $(FLOOR_TESTS)

test-cudf: venv-cudf
	NUMBA_CACHE_DIR=$(VENV_CUDF)/numba-cache $(VENV_CUDF)/bin/python -m pytest -n auto \
	    -m "not gpu" tests/test_cache_lock.py tests/test_plc.py tests/test_cudf.py \
	    tests/test_polars_gpu.py tests/test_polars_frontend.py tests/test_splice_frontends.py \
	    tests/test_window_frontends.py tests/test_polars_tolerance.py tests/test_calendar_kernel.py \
	    tests/test_enrich_device.py

# asofgpu against polars, pandas, DuckDB, ClickHouse (chdb, installed here on first use: 180 MB,
# kept out of the test extras) and pyarrow, each in its own process (bench/run.py); writes
# bench/results/bench.{md,json,png}. BENCH_ARGS passes options, e.g. BENCH_ARGS=--quick.
# Then the end-to-end job, parquet in and out: asofgpu enrich against polars and DuckDB on
# 10M x 10M, and enrich alone with --memory-limit on 100M x 10M (bench/enrich_e2e.py); writes
# bench/results/enrich.{md,json}. E2E_ARGS passes its options, the last word winning, e.g.
# E2E_ARGS="--scale-memory-limit 4GiB" or, to check the harness, E2E_ARGS="--quick --scale 2Mx200K".
# Last, the front ends against what they replace, on the same day's files read by pandas,
# polars and pyarrow (bench/frontends.py): bench/results/frontends.{md,json}; FRONTENDS_ARGS
# passes its options, e.g. FRONTENDS_ARGS=--quick. Then the first call in a new environment,
# before and after asofgpu warm (bench/first_call.py): bench/results/first_call.{md,json}.
# And the splice join against the polars and DuckDB scripts that give the same rows
# (bench/splice.py): bench/results/splice.{md,json}; SPLICE_ARGS, e.g. SPLICE_ARGS=--quick.
# And the window join against the polars and DuckDB scripts that compute the same aggregates
# (bench/window.py): bench/results/window.{md,json}; WINDOW_ARGS, e.g. WINDOW_ARGS=--quick.
# And a probe with tolerances per row and "1mo" against a fixed one (bench/tolerance.py):
# bench/results/tolerance.{md,json}; TOLERANCE_ARGS, e.g. TOLERANCE_ARGS=--quick.
# And every strategy, by symbol and without by, through the pandas and polars drop-ins
# (bench/strategies.py): bench/results/strategies.{md,json}; STRATEGIES_ARGS, e.g. --quick.
bench: venv
	@$(BIN)/python -c "import chdb" 2>/dev/null || $(BIN)/python -m pip install -q "chdb>=4" \
	    || echo "chdb does not install here: ClickHouse is left out of the bench"
	$(BIN)/python bench/run.py $(BENCH_ARGS)
	$(BIN)/python bench/enrich_e2e.py --scale 100Mx10M $(E2E_ARGS)
	$(BIN)/python bench/frontends.py $(FRONTENDS_ARGS)
	$(BIN)/python bench/first_call.py
	$(BIN)/python bench/splice.py $(SPLICE_ARGS)
	$(BIN)/python bench/window.py $(WINDOW_ARGS)
	$(BIN)/python bench/tolerance.py $(TOLERANCE_ARGS)
	$(BIN)/python bench/strategies.py $(STRATEGIES_ARGS)

# The GPU check, for a machine with an NVIDIA GPU and no network (bench/gpu_check.py): the
# suite on the real CUDA backend, GPU vs CPU maps on 10M rows, the 100M x 10M benchmark, in
# under 8 minutes; reports in bench/results/gpu_check.* (and in $OUT when set). No venv step,
# since it must not download: it runs under .venv when there is one (the Docker image), else
# under the machine's python3 and the packages it has.
GPU_PYTHON ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON))

gpu-check:
	$(GPU_PYTHON) bench/gpu_check.py

# On a machine with network: wheels for the lent H200, which gpu_check.py installs offline
# when bench/wheelhouse/ travels with it (the device tool's carry). By default numpy below 2.5:
# the machine's 2.5.2 leaves numba-cuda 0.30.4 unable to compile anything. polars, which it
# lacks, does not fit beside it in what travels (64 MiB; polars 2.1's runtime wheel is 54 MB):
# make gpu-wheelhouse GPU_WHEELS=polars, for a run of its own. setuptools 77 or later reads
# pyproject.toml's license (an SPDX expression) for the offline editable install (the H200
# had 81; a wheel of 1.2 MB, in case another image holds an older one).
GPU_WHEELS ?= 'numpy<2.5' 'setuptools>=77'
# (Not after venv: a pyproject.toml newer than the venv's stamp would rebuild it first.)
gpu-wheelhouse:
	rm -rf bench/wheelhouse
	$(GPU_PYTHON) -m pip download --only-binary=:all: --python-version 3.12 --implementation cp \
	    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
	    --platform manylinux2014_x86_64 -d bench/wheelhouse $(GPU_WHEELS)

clean:
	rm -rf $(VENV) $(VENV_CUDF) $(VENV_FLOOR) build dist *.egg-info .pytest_cache .hypothesis
	find asofgpu kernels -name "*.nb[ic]" -delete

# grid-rbd: the two set-up commands (make demo, make test) and the C build behind them.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
CC ?= cc
CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude -fPIC
CFLAGS ?= -O2 -g
LIBS := -lexpat -lm -ldl -lpthread
SRC := $(sort $(wildcard src/*/*.c))
OBJ := $(patsubst src/%.c,build/obj/%.o,$(SRC))
ASAN_OBJ := $(patsubst src/%.c,build/asan/%.o,$(SRC))
CTESTS := $(patsubst tests/c/%.c,%,$(sort $(wildcard tests/c/test_*.c)))
NPROC := $(shell nproc 2>/dev/null || echo 2)
# gcc's sanitizers by default: a libgrid built by another compiler emits the same programs with operands interned
# in another order (argument evaluation order), and the AddressSanitizer pass of test_emit loads the libraries the plain
# pass compiled (GRID_TEST_EMIT_CACHE) only when their sources are byte-identical
ASAN_CC ?= $(CC)
ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

.PHONY: all demo test c-programs test-c test-asan fuzz test-python bench bench-large venv clean gridc example-c

all: build/libgrid.a build/gridc

# ---- the two set-up commands ----
demo: venv
	$(VPY) examples/demo.py

# the C libraries, test programs and fuzzer compile in parallel first; then the C suites (test_emit compiles its robot
# libraries into $(EMIT_CACHE), two cores for a large one's parts), the AddressSanitizer suites (test_emit's libraries
# from that cache) beside the bounded fuzz run (-O keeps each one's output together), then pytest
test: venv
	@$(MAKE) --no-print-directory -j$(NPROC) c-programs
	@rm -rf $(EMIT_CACHE)
	@$(MAKE) --no-print-directory test-c
	@$(MAKE) --no-print-directory -j2 -O test-asan fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS)
	@$(MAKE) --no-print-directory test-python

# ---- environment: system packages, virtual environment, editable install ----
venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml setup.py requirements-dev.txt $(SRC) $(wildcard include/grid/*.h src/*/*.h src/*/*.cu python/grid_rbd/*.c python/grid_rbd/*.h)
	@tools/ensure_system_deps.sh
	@test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements-dev.txt
	$(VPY) -m pip install -q --no-build-isolation -e .
	@touch $@

# ---- C library, tools and tests ----
build/obj/%.o: src/%.c $(wildcard include/grid/*.h) $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -c $< -o $@

build/asan/%.o: src/%.c $(wildcard include/grid/*.h) $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	$(ASAN_CC) $(CFLAGS_COMMON) $(ASAN_FLAGS) -c $< -o $@

# the CUDA host runtime's sources are embedded (.incbin) in cuda_sources.o
RUNTIME_EMBEDDED := $(wildcard src/runtime/*.cu) src/runtime/cuda_plan.c src/runtime/conv_state.h include/grid/convention.h
build/obj/runtime/cuda_sources.o build/asan/runtime/cuda_sources.o: $(RUNTIME_EMBEDDED)

build/libgrid.a: $(OBJ)
	@mkdir -p build
	rm -f $@ && ar rcs $@ $^

build/libgrid-asan.a: $(ASAN_OBJ)
	@mkdir -p build
	rm -f $@ && ar rcs $@ $^

gridc: build/gridc
build/gridc: tools/gridc.c build/libgrid.a
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) $< build/libgrid.a $(LIBS) -o $@

build/tests/%: tests/c/%.c $(wildcard tests/c/*.h) build/libgrid.a
	@mkdir -p build/tests
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -Itests/c $< build/libgrid.a $(LIBS) -o $@

build/tests-asan/%: tests/c/%.c $(wildcard tests/c/*.h) build/libgrid-asan.a
	@mkdir -p build/tests-asan
	$(ASAN_CC) $(CFLAGS_COMMON) $(ASAN_FLAGS) -Itests/c $< build/libgrid-asan.a $(LIBS) -o $@

# the tile stores' streamed path needs AVX (the test skips itself on a CPU without it)
build/tests/test_lane_store build/tests-asan/test_lane_store: CFLAGS_COMMON += -mavx
build/tests/test_lane_store build/tests-asan/test_lane_store: src/emit/lane_store.h

c-programs: $(addprefix build/tests/,$(CTESTS)) $(addprefix build/tests-asan/,$(CTESTS)) build/fuzz_urdf build/gridc build/examples/dispatch

# test_emit's compiled robot libraries, keyed by source and compile command (shared by the plain and sanitizer passes)
EMIT_CACHE := build/test-emit-cache

test-c: $(addprefix build/tests/,$(CTESTS)) build/examples/dispatch
	@mkdir -p $(EMIT_CACHE)
	@set -e; for t in $(addprefix build/tests/,$(CTESTS)); do echo "== $$t"; GRID_TEST_EMIT_CACHE=$(EMIT_CACHE) $$t; done
	@echo "== build/examples/dispatch"; build/examples/dispatch examples/robots/iiwa.urdf build/example-cache

# examples/dispatch.c: grid-rbd from C (a URDF to a cached library, calls through grid_dispatch_run)
build/examples/dispatch: examples/dispatch.c build/libgrid.a
	@mkdir -p build/examples
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) $< build/libgrid.a $(LIBS) -o $@

example-c: build/examples/dispatch
	build/examples/dispatch examples/robots/iiwa.urdf

test-asan: $(addprefix build/tests-asan/,$(CTESTS))
	@mkdir -p $(EMIT_CACHE)
	@set -e; for t in $^; do echo "== $$t (asan+ubsan)"; GRID_TEST_EMIT_CACHE=$(EMIT_CACHE) ASAN_OPTIONS=detect_leaks=1 \
	    UBSAN_OPTIONS=halt_on_error=1 $$t; done

# bounded libFuzzer run over the URDF parser, seeded with the test URDFs
FUZZ_SECONDS ?= 60
# make test's share (it runs beside the two C suites on CI's two cores, inside CI's 15 minutes)
TEST_FUZZ_SECONDS ?= 30
# the fuzzer links only what parsing a URDF reaches: the parser, the model and the shared helpers
FUZZ_SRC := $(sort $(wildcard src/urdf/*.c src/model/*.c src/common/*.c))
build/fuzz_urdf: tests/fuzz/fuzz_urdf.c $(FUZZ_SRC)
	@mkdir -p build
	clang $(CFLAGS_COMMON) -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $< $(FUZZ_SRC) $(LIBS) -o $@

fuzz: build/fuzz_urdf
	@mkdir -p build/fuzz-corpus
	@cp -n tests/data/*.urdf build/fuzz-corpus/ 2>/dev/null || true
	set -o pipefail; build/fuzz_urdf -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -dict=tests/fuzz/urdf.dict build/fuzz-corpus 2>&1 | tail -n 5

# pytest-xdist: one worker per core, each test file on one worker (its module fixtures built once), the compiled
# robot libraries shared through one cache directory
PYTEST_WORKERS ?= $(NPROC)
test-python: venv
	$(VPY) -m pytest -q --durations=25 -n $(PYTEST_WORKERS) --dist loadfile tests/python

bench: venv
	$(VPY) bench/run.py

# large models: cold builds and per-state speed against Pinocchio (bench/RESULTS-large.md)
bench-large: venv
	$(VPY) bench/large.py > bench/RESULTS-large.md

clean:
	rm -rf build

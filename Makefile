# zb - zero-bubble pipeline-parallel planner (zbplan) and executor (zbrun).
#   make deps       install missing Debian packages (.ci/install-deps)
#   make run        plan and train the default model (models/tiny.yaml)
#   make            build bin/zbplan and bin/zbrun
#   make test       unit tests (Check) + end-to-end scripts
#   make asan       the same tests built with AddressSanitizer + UBSan
#   make valgrind   unit tests under valgrind --leak-check=full
#   make bench      benchmarks (numbers, not pass/fail timing)
#   make plans      regenerate plans/ from models/
#   make cuda       compile the CUDA sources with nvcc (when present)
#   make cuda-test  run the CUDA kernels against the CPU ones (needs a GPU)
#   make fuzz       libFuzzer on the model, plan, data and checkpoint readers
#                   (FUZZ_SECONDS each, default 60; clang)

CC      ?= cc
BUILD   ?= build
BIN     ?= bin
OPT     ?= -O2
SAN     ?=
CFLAGS  += -std=c11 $(OPT) -g -Wall -Wextra -Wno-unused-parameter \
           -D_GNU_SOURCE -I. -fopenmp $(SAN)
LDFLAGS += -fopenmp $(SAN)

PKG_CFLAGS := $(shell pkg-config --cflags yaml-0.1 openblas check 2>/dev/null)
YAML_LIBS  := $(shell pkg-config --libs yaml-0.1 2>/dev/null || echo -lyaml)
BLAS_LIBS  := $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)
GLPK_LIBS  := -lglpk
CFLAGS += $(PKG_CFLAGS)

COMMON_SRC   := $(wildcard common/*.c)
PLANNER_SRC  := $(filter-out planner/main.c,$(wildcard planner/*.c))
KERNEL_SRC   := $(wildcard kernels/*.c)
EXEC_SRC     := $(filter-out executor/main.c,$(wildcard executor/*.c))
TEST_SRC     := $(wildcard tests/unit/test_*.c)
BENCH_SRC    := $(wildcard tests/bench/bench_*.c)

# Rank threads block on each other; spinning OpenMP workers would steal
# their cores (docs/zbrun.md). zbrun sets this itself; tests and benches
# get it here.
OMP_WAIT_POLICY ?= passive
export OMP_WAIT_POLICY

obj = $(patsubst %.c,$(BUILD)/%.o,$(1))

LIB_COMMON  := $(BUILD)/libzbcommon.a
LIB_PLANNER := $(BUILD)/libzbplanner.a
LIB_EXEC    := $(BUILD)/libzbexec.a
LIBS_ALL    := $(LIB_EXEC) $(LIB_PLANNER) $(LIB_COMMON)
EXT_LIBS    := $(GLPK_LIBS) $(YAML_LIBS) $(BLAS_LIBS) -lpthread -lm

TESTS   := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRC))
BENCHES := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all deps run test unit e2e asan valgrind bench plans cuda cuda-test clean fuzz
all: $(BIN)/zbplan $(BIN)/zbrun

deps:
	.ci/install-deps

# The main job: plan the default model on 4 pipeline stages, then train it
# on the CPU; outputs (plan, report, trace, timeline picture) go to out/.
MODEL ?= models/tiny.yaml
RUN_PLAN_FLAGS ?= --dp 1 --tp 1 --pp 4
run: all
	@mkdir -p out
	$(BIN)/zbplan $(MODEL) $(RUN_PLAN_FLAGS) -o out/plan.yaml
	$(BIN)/zbrun out/plan.yaml --report out/report.yaml --trace out/trace.json --svg out/timeline.svg

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB_COMMON): $(call obj,$(COMMON_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(LIB_PLANNER): $(call obj,$(PLANNER_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(LIB_EXEC): $(call obj,$(EXEC_SRC) $(KERNEL_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BIN)/zbplan: $(BUILD)/planner/main.o $(LIB_PLANNER) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(GLPK_LIBS) $(YAML_LIBS) -lm
$(BIN)/zbrun: $(BUILD)/executor/main.o $(LIB_EXEC) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(YAML_LIBS) $(BLAS_LIBS) -lpthread -lm

$(BUILD)/tests/%: tests/unit/%.c $(LIBS_ALL)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) $(LIBS_ALL) $(CHECK_LIBS) $(EXT_LIBS)
$(BUILD)/bench/%: tests/bench/%.c $(LIBS_ALL)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) $(LIBS_ALL) $(EXT_LIBS)

# Unit tests run from the repository root (they read models/, tests/bad/).
unit: $(TESTS)
	@set -e; for t in $(TESTS); do echo "== $$t"; CK_FORK=$${CK_FORK:-yes} $$t; done
e2e: all
	@set -e; for s in tests/e2e/*.sh; do [ -e "$$s" ] || continue; echo "== $$s"; BIN=$(BIN) bash $$s; done
test: unit e2e

asan:
	$(MAKE) BUILD=build-asan BIN=build-asan/bin OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" test

valgrind: $(TESTS)
	@set -e; for t in $(TESTS); do echo "== valgrind $$t"; \
	  CK_FORK=no valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    --error-exitcode=1 $$t; done

bench: all $(BENCHES)
	@set -e; for b in $(BENCHES); do echo "== $$b"; $$b; done
	@[ ! -x tests/bench/run.sh ] || BIN=$(BIN) tests/bench/run.sh

plans: $(BIN)/zbplan
	BIN=$(BIN) bash plans/make_plans.sh

NVCC ?= $(shell command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
NVFLAGS ?= -std=c++17 -O2 -I. -Xcompiler -Wall,-Wextra
CU_SRC  := $(wildcard kernels/cuda/*.cu)
CU_OBJ  := $(patsubst %.cu,$(BUILD)/%.o,$(CU_SRC))
CU_TEST := $(BUILD)/cuda/test_kernels_cuda

$(BUILD)/kernels/cuda/%.o: kernels/cuda/%.cu kernels/cuda/kernels_cuda.h kernels/cuda/reduce.cuh
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -c $< -o $@
$(CU_TEST): tests/cuda/test_kernels_cuda.cu $(CU_OBJ) $(LIB_EXEC) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) $< $(CU_OBJ) $(LIB_EXEC) $(LIB_COMMON) -o $@ $(BLAS_LIBS) -lgomp -lm

# Compile (and link the GPU test) wherever nvcc exists; CI does this on
# machines without a GPU. `make cuda-test` runs the CUDA kernels against
# their CPU twins; without a device it prints that it skipped (exit 77).
cuda:
	@if [ -x "$(NVCC)" ]; then $(MAKE) --no-print-directory $(CU_TEST); \
	else echo "cuda: nvcc not found, CUDA sources not compiled"; fi
cuda-test: cuda
	@$(CU_TEST); rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]

# Fuzzing (tests/fuzz/run.sh): clang's libFuzzer with ASan + UBSan. New
# inputs go to build-fuzz/corpus/T; the seeds in the repository stay as
# they are. A crash leaves build-fuzz/crash-* and fails the target.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := build-fuzz
FUZZ_NAMES   := model plan data checkpoint
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS  := -std=c11 -O1 -g -D_GNU_SOURCE -I. -fopenmp $(PKG_CFLAGS) $(FUZZ_SAN)
FUZZ_OBJ     := $(patsubst %.c,$(FUZZ_BUILD)/%.o,$(COMMON_SRC) $(EXEC_SRC) $(KERNEL_SRC))

.SECONDARY: $(FUZZ_OBJ)
$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_util.h $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) \
	  $(YAML_LIBS) $(BLAS_LIBS) -lpthread -lm

fuzz: $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZ_NAMES))
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh

clean:
	rm -rf build build-asan build-fuzz bin

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

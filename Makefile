# zb - zero-bubble pipeline-parallel planner (zbplan) and executor (zbrun).
#   make deps       install missing Debian packages (.ci/install-deps)
#   make run        plan and train the default model (models/tiny.yaml)
#   make compare    train it with six schedules and compare them (out/compare/)
#   make            build bin/zbplan, bin/zbrun and bin/zbreport
#   make test       unit tests (Check) + end-to-end scripts
#   make asan       the same tests built with AddressSanitizer + UBSan
#   make valgrind   unit tests under valgrind --leak-check=full
#   make bench      benchmarks (numbers, not pass/fail timing); LLMC_DIR=DIR
#                   adds llm.c's train_gpt2 beside zbrun
#   make plans      regenerate plans/ from models/
#   make cuda       compile the CUDA sources with nvcc (when present)
#   make cuda-test  run the CUDA kernels against the CPU ones (needs a GPU)
# Builds run in parallel and print one line per file: V=1 prints the full
# commands, JOBS=N sets the number of jobs.

CC      ?= cc
# Quiet by default ("  CC  file.c"); V=1 prints every command in full.
V       ?= 0
say      = $(if $(filter 1,$(V)),,@printf '  %-5s %s\n' '$(1)' '$(2)';)
# Parallel by default: JOBS jobs (one per core; `make JOBS=1` for serial).
# Set at the top level only: sub-makes share its job server. (GNU make 4.3
# does not show a command-line -j here, so JOBS is the knob.)
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(JOBS)
endif
BUILD   ?= build
BIN     ?= bin
OPT     ?= -O2
SAN     ?=
CFLAGS  += -std=c11 $(OPT) -g -Wall -Wextra -Wno-unused-parameter \
           -D_GNU_SOURCE -I. -fopenmp -fno-math-errno -fno-trapping-math $(SAN)
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
EXEC_ASM     := $(wildcard executor/*.S)
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

.PHONY: all deps run compare test unit e2e asan valgrind bench plans cuda cuda-test clean
all: $(BIN)/zbplan $(BIN)/zbrun $(BIN)/zbreport

deps:
	.ci/install-deps

# The main job: plan the default model, then train it on the CPU; outputs
# (plan, report, trace, timeline picture) go to out/. Pipeline ranks are
# threads: 4 stages where there are 4 cores, else 2, so that every rank has
# a core and the measured timeline shows the schedule, not time-sharing.
MODEL ?= models/tiny.yaml
CORES := $(shell nproc 2>/dev/null || echo 2)
RUN_PP ?= $(shell [ $(CORES) -ge 4 ] && echo 4 || echo 2)
RUN_PLAN_FLAGS ?= --dp 1 --tp 1 --pp $(RUN_PP)
run: all
	@mkdir -p out
	$(BIN)/zbplan $(MODEL) $(RUN_PLAN_FLAGS) -o out/plan.yaml
	$(BIN)/zbrun out/plan.yaml --report out/report.yaml --trace out/trace.json --svg out/timeline.svg

# Both programs print `git describe` (--version, the report): version.h
# changes only when that string does, so it rebuilds only the two mains.
ZB_VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
$(BUILD)/version.h: FORCE
	@mkdir -p $(dir $@)
	@echo '#define ZB_VERSION "$(ZB_VERSION)"' > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
MAINS_O := $(BUILD)/executor/main.o $(BUILD)/planner/main.o $(BUILD)/compare/main.o
$(MAINS_O): $(BUILD)/version.h
$(MAINS_O): CFLAGS += -I$(BUILD)
.PHONY: FORCE
FORCE:

# Every schedule users compare, planned and trained a few steps each, then
# one table and one picture (out/compare/compare.svg) by zbreport.
COMPARE_SCHEDULES ?= 1f1b interleaved zb-h1 zb-h2 zb-v zb-auto-v
COMPARE_STEPS ?= 8
compare: all
	@mkdir -p out/compare
	@set -e; reps=; for s in $(COMPARE_SCHEDULES); do \
	  $(BIN)/zbplan $(MODEL) --dp 1 --tp 1 --pp $(RUN_PP) --schedule $$s -q -o out/compare/$$s.plan.yaml; \
	  echo "zbrun $$s"; \
	  $(BIN)/zbrun out/compare/$$s.plan.yaml --steps $(COMPARE_STEPS) -q --report out/compare/$$s.report.yaml; \
	  reps="$$reps out/compare/$$s.report.yaml"; done; \
	$(BIN)/zbreport $$reps -o out/compare/compare.svg

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB_COMMON): $(call obj,$(COMMON_SRC))
	@mkdir -p $(dir $@)
	$(call say,AR,$@)rm -f $@ && ar rcs $@ $^
$(LIB_PLANNER): $(call obj,$(PLANNER_SRC))
	@mkdir -p $(dir $@)
	$(call say,AR,$@)rm -f $@ && ar rcs $@ $^
# The built-in corpus (executor/corpus.S includes its bytes).
$(BUILD)/executor/corpus.o: executor/corpus.S models/data/corpus.txt
	@mkdir -p $(dir $@)
	$(call say,AS,$<)$(CC) -c $< -o $@

$(LIB_EXEC): $(call obj,$(EXEC_SRC) $(KERNEL_SRC)) $(patsubst %.S,$(BUILD)/%.o,$(EXEC_ASM))
	@mkdir -p $(dir $@)
	$(call say,AR,$@)rm -f $@ && ar rcs $@ $^

$(BIN)/zbplan: $(BUILD)/planner/main.o $(LIB_PLANNER) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(GLPK_LIBS) $(YAML_LIBS) -lm
$(BIN)/zbrun: $(BUILD)/executor/main.o $(LIB_EXEC) $(LIB_PLANNER) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(GLPK_LIBS) $(YAML_LIBS) $(BLAS_LIBS) -lpthread -lm

# zbreport: compare schedules from zbrun reports (compare/)
COMPARE_SRC := $(filter-out compare/main.c,$(wildcard compare/*.c))
$(BIN)/zbreport: $(BUILD)/compare/main.o $(call obj,$(COMPARE_SRC)) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(YAML_LIBS) -lm

$(BUILD)/tests/%: tests/unit/%.c $(LIBS_ALL)
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) $(LIBS_ALL) $(CHECK_LIBS) $(EXT_LIBS)
$(BUILD)/bench/%: tests/bench/%.c $(LIBS_ALL)
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) $(LIBS_ALL) $(EXT_LIBS)

# Unit tests run from the repository root (they read models/, tests/bad/).
unit: $(TESTS)
	@set -e; for t in $(TESTS); do echo "== $$t"; CK_FORK=$${CK_FORK:-yes} $$t; done
e2e: all
	@set -e; for s in tests/e2e/*.sh; do [ -e "$$s" ] || continue; echo "== $$s"; BIN=$(BIN) bash $$s; done
# unit tests, then the end-to-end scripts (one after the other: the builds
# run in parallel, the tests do not)
test: all $(TESTS)
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory e2e

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
	@BIN=$(BIN) bash tests/bench/llmc_compare.sh   # LLMC_DIR=llm.c checkout: beside llm.c

plans: $(BIN)/zbplan
	BIN=$(BIN) bash plans/make_plans.sh

NVCC ?= $(shell command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
NVFLAGS ?= -std=c++17 -O2 -I. -Xcompiler -Wall,-Wextra
CU_SRC  := $(wildcard kernels/cuda/*.cu)
CU_OBJ  := $(patsubst %.cu,$(BUILD)/%.o,$(CU_SRC))
CU_TEST := $(BUILD)/cuda/test_kernels_cuda

$(BUILD)/kernels/cuda/%.o: kernels/cuda/%.cu kernels/cuda/kernels_cuda.h kernels/cuda/reduce.cuh
	@mkdir -p $(dir $@)
	$(call say,NVCC,$<)$(NVCC) $(NVFLAGS) -c $< -o $@
$(CU_TEST): tests/cuda/test_kernels_cuda.cu $(CU_OBJ) $(LIB_EXEC) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$<)$(NVCC) $(NVFLAGS) $< $(CU_OBJ) $(LIB_EXEC) $(LIB_COMMON) -o $@ $(BLAS_LIBS) -lgomp -lm

# Compile (and link the GPU test) wherever nvcc exists; CI does this on
# machines without a GPU. `make cuda-test` runs the CUDA kernels against
# their CPU twins; without a device it prints that it skipped (exit 77).
cuda:
	@if [ -x "$(NVCC)" ]; then $(MAKE) --no-print-directory $(CU_TEST); \
	else echo "cuda: nvcc not found, CUDA sources not compiled"; fi
cuda-test: cuda
	@$(CU_TEST); rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]

clean:
	rm -rf build build-asan bin

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

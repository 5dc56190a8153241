# zb - zero-bubble pipeline-parallel planner (zbplan) and executor (zbrun).
#   make deps       install missing Debian packages (.ci/install-deps)
#   make run        plan and train the default model (models/tiny.yaml)
#   make            build bin/zbplan and bin/zbrun
#   make test       unit tests (Check) + end-to-end scripts
#   make asan       the same tests built with AddressSanitizer + UBSan
#   make valgrind   unit tests under valgrind --leak-check=full
#   make bench      benchmarks (numbers, not pass/fail timing)
#   make plans      regenerate plans/ from models/
#   make cuda       compile the CUDA sources and CUDA tests with nvcc
#   make cuda-test  run the CUDA tests (kernels, stage vs cpu; needs a GPU,
#                   prints "skipped: no CUDA device" and passes without one)
# `make` links the CUDA backend into bin/zbrun whenever nvcc, cuBLAS and
# NCCL are found (CUDA=0 forces the CPU-only build; see the CUDA section).

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

# ---- CUDA backend detection --------------------------------------------
# The toolkit: nvcc on PATH, else /usr/local/cuda; cuBLAS beside it; NCCL
# beside it or from the distribution (/usr/include, /usr/lib/<triplet>).
# All found (and CUDA != 0): ZB_HAVE_CUDA, the .cu files below go into the
# executor library and zbrun links cudart, cuBLAS and NCCL.
CUDA     ?= auto
NVCC     ?= $(shell command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
CUDA_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcudart.so $(CUDA_HOME)/lib/libcudart.so))
CUDA_LIBDIR := $(if $(CUDA_LIBDIR),$(dir $(CUDA_LIBDIR)),)
CUBLAS_OK := $(and $(wildcard $(CUDA_HOME)/include/cublas_v2.h),$(wildcard $(CUDA_LIBDIR)libcublas.so))
NCCL_H    := $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h /usr/local/include/nccl.h))
NCCL_SO   := $(firstword $(wildcard $(CUDA_LIBDIR)libnccl.so $(CUDA_LIBDIR)libnccl.so.2 \
               /usr/lib/$(shell $(CC) -dumpmachine 2>/dev/null)/libnccl.so \
               /usr/lib/$(shell $(CC) -dumpmachine 2>/dev/null)/libnccl.so.2 /usr/lib64/libnccl.so /usr/local/lib/libnccl.so))
HAVE_CUDA := $(if $(filter 0 no off,$(CUDA)),,$(and $(wildcard $(NVCC)),$(CUDA_LIBDIR),$(CUBLAS_OK),$(NCCL_H),$(NCCL_SO)))
ifneq ($(HAVE_CUDA),)
CFLAGS    += -DZB_HAVE_CUDA -I$(CUDA_HOME)/include -I$(dir $(NCCL_H))
CUDA_LIBS := -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -L$(dir $(NCCL_SO)) \
             -Wl,-rpath,$(dir $(NCCL_SO)) -lnccl -lcublas -lcudart -lstdc++
endif
CU_SRC   := $(wildcard kernels/cuda/*.cu executor/*.cu)
CU_HDR   := $(wildcard kernels/cuda/*.h kernels/cuda/*.cuh kernels/*.h executor/*.h executor/*.cuh common/*.h)
CU_OBJ   := $(if $(HAVE_CUDA),$(patsubst %.cu,$(BUILD)/%.cu.o,$(CU_SRC)))
CU_TESTS := $(patsubst tests/cuda/%.cu,$(BUILD)/cuda/%,$(wildcard tests/cuda/test_*.cu))

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
EXT_LIBS    := $(GLPK_LIBS) $(YAML_LIBS) $(BLAS_LIBS) $(CUDA_LIBS) -lpthread -lm

TESTS   := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRC))
BENCHES := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all deps run test unit e2e asan valgrind bench plans cuda cuda-test clean
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
$(LIB_EXEC): $(call obj,$(EXEC_SRC) $(KERNEL_SRC)) $(CU_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BIN)/zbplan: $(BUILD)/planner/main.o $(LIB_PLANNER) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(GLPK_LIBS) $(YAML_LIBS) -lm
$(BIN)/zbrun: $(BUILD)/executor/main.o $(LIB_EXEC) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(YAML_LIBS) $(BLAS_LIBS) $(CUDA_LIBS) -lpthread -lm

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
	    --suppressions=tests/valgrind.supp \
	    --error-exitcode=1 $$t; done

bench: all $(BENCHES)
	@set -e; for b in $(BENCHES); do echo "== $$b"; $$b; done
	@[ ! -x tests/bench/run.sh ] || BIN=$(BIN) tests/bench/run.sh

plans: $(BIN)/zbplan
	BIN=$(BIN) bash plans/make_plans.sh

# ---- CUDA sources -------------------------------------------------------
# sm_90 code (H100/H200) plus compute_80 PTX that the driver compiles for
# any newer or other >= sm_80 device at load time.
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=compute_80
NVFLAGS ?= -std=c++17 -O2 -I. -DZB_HAVE_CUDA $(CUDA_ARCH) -Xcompiler -Wall,-Wextra,-Wno-unused-parameter $(if $(NCCL_H),-I$(dir $(NCCL_H)))

$(BUILD)/%.cu.o: %.cu $(CU_HDR)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -c $< -o $@
$(BUILD)/cuda/%.o: tests/cuda/%.cu $(CU_HDR)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -c $< -o $@
$(BUILD)/cuda/%: $(BUILD)/cuda/%.o $(LIBS_ALL)
	$(CC) $(LDFLAGS) -o $@ $< $(LIBS_ALL) $(EXT_LIBS)

# Compile and link the CUDA tests wherever nvcc exists; CI does this on
# machines without a GPU. `make cuda-test` runs them; without a device each
# prints "skipped: no CUDA device" (exit 77), which counts as skipped.
cuda:
ifneq ($(HAVE_CUDA),)
	@$(MAKE) --no-print-directory all $(CU_TESTS)
else
	@echo "cuda: nvcc, cuBLAS or NCCL not found (or CUDA=0): CUDA backend not built"
endif
cuda-test: cuda
	@set -e; [ -n "$(HAVE_CUDA)" ] || { echo "cuda-test: skipped: CUDA backend not built"; exit 0; }; \
	for t in $(CU_TESTS); do echo "== $$t"; rc=0; $$t || rc=$$?; \
	  if [ $$rc -eq 77 ]; then echo "   (skipped)"; elif [ $$rc -ne 0 ]; then exit $$rc; fi; done

clean:
	rm -rf build build-asan bin

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

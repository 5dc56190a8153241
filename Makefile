# zb - zero-bubble pipeline-parallel planner (zbplan) and executor (zbrun).
#   make deps       install missing Debian packages (.ci/install-deps)
#   make run        plan and train the default model (models/tiny.yaml)
#   make compare    train it with six schedules and compare them (out/compare/)
#   make            build bin/zbplan, bin/zbrun and bin/zbreport
#   make test       unit tests (Check) + end-to-end scripts
#   make asan       the same tests built with AddressSanitizer + UBSan
#   make valgrind   unit tests under valgrind --leak-check=full
#   make bench      benchmarks (numbers, not pass/fail timing); LLMC_DIR=DIR
#                   adds llm.c beside zbrun (llmc_compare.sh: speed;
#                   llmc_check.sh: losses step by step)
#   make plans      regenerate plans/ from models/
#   make validate   cost model vs Megatron-LM's published table (numbers)
#   make cuda       compile the CUDA sources and CUDA tests with nvcc
#   make cuda-test  run the CUDA tests (kernels, stage vs cpu; needs a GPU,
#                   prints "skipped: no CUDA device" and passes without one)
#   make fuzz       libFuzzer on the model, plan, data and checkpoint readers
#                   (FUZZ_SECONDS each, default 60; clang)
# `make` links the CUDA backend into bin/zbrun whenever nvcc, cuBLAS and
# NCCL are found (CUDA=0 forces the CPU-only build; see the CUDA section).
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
           -D_GNU_SOURCE -I. -fopenmp -fno-math-errno -fno-trapping-math \
           -Werror=implicit-function-declaration $(SAN)
LDFLAGS += -fopenmp $(SAN)

# libyaml, OpenBLAS and Check: one pkg-config call each (one call for all
# three prints nothing when any is missing). OpenBLAS's headers sit in a
# folder of their own (Debian: /usr/include/<triplet>/openblas-pthread);
# without its .pc file that folder is looked for (or CPATH names it).
TRIPLET      := $(shell $(CC) -dumpmachine 2>/dev/null)
YAML_CFLAGS  := $(shell pkg-config --cflags yaml-0.1 2>/dev/null)
BLAS_CFLAGS  := $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_CFLAGS  := $(if $(strip $(BLAS_CFLAGS)),$(BLAS_CFLAGS),$(patsubst %/cblas.h,-I%,$(firstword \
                  $(wildcard $(addprefix /usr/include/$(TRIPLET)/,$(addsuffix /cblas.h,openblas-pthread openblas-openmp openblas-serial)) /usr/include/openblas/cblas.h))))
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
PKG_CFLAGS   := $(YAML_CFLAGS) $(BLAS_CFLAGS) $(CHECK_CFLAGS)
YAML_LIBS  := $(shell pkg-config --libs yaml-0.1 2>/dev/null || echo -lyaml)
BLAS_LIBS  := $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)
GLPK_LIBS  := -lglpk
CFLAGS += $(PKG_CFLAGS)

# MPI (Open MPI from the distribution) for one process per rank: found with
# pkg-config, else mpicc --showme; NO_MPI=1 builds without it (zbrun then
# runs single-process only and says so when launched by mpirun or srun).
ifeq ($(NO_MPI),)
MPI_CFLAGS := $(shell pkg-config --cflags ompi 2>/dev/null || mpicc --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell pkg-config --libs ompi 2>/dev/null || mpicc --showme:link 2>/dev/null)
endif
ifneq ($(strip $(MPI_LIBS)),)
CFLAGS += -DZB_HAVE_MPI $(MPI_CFLAGS)
endif

# The executor's rooms (executor/README.md): its sources are base.c and
# every room's files.
EXEC_ROOMS := $(addprefix executor/,run report state stage comm host)

# ---- CUDA backend detection --------------------------------------------
# The toolkit: nvcc on PATH, else /usr/local/cuda; cuBLAS beside it. NCCL
# (docs/gpu.md): NCCL_HOME when set (a folder with include/nccl.h and
# lib/libnccl.so or only lib/libnccl.so.2), else the first of the toolkit,
# /usr, /usr/local (NCCL_SYSTEM_ROOTS) and a Python wheel's folder
# (nvidia-nccl-cu*: site-packages/nvidia/nccl, found by python3 or in the
# usual places) holding both. The library is linked by its path, so a
# libnccl.so.2 without libnccl.so will do. All found (and CUDA != 0):
# ZB_HAVE_CUDA, the .cu files below go into the executor library and zbrun
# links cudart, cuBLAS and NCCL. `make print-NCCL_SO` shows a choice.
CUDA     ?= auto
NVCC     ?= $(shell command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
CUDA_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcudart.so $(CUDA_HOME)/lib/libcudart.so))
CUDA_LIBDIR := $(if $(CUDA_LIBDIR),$(dir $(CUDA_LIBDIR)),)
CUBLAS_OK := $(and $(wildcard $(CUDA_HOME)/include/cublas_v2.h),$(wildcard $(CUDA_LIBDIR)libcublas.so),$(wildcard $(CUDA_LIBDIR)libcublasLt.so))
nccl_so_in = $(firstword $(wildcard $(foreach l,lib64 lib lib/$(TRIPLET),$(1)/$(l)/libnccl.so) \
               $(foreach l,lib64 lib lib/$(TRIPLET),$(1)/$(l)/libnccl.so.2)))
nccl_root  = $(firstword $(foreach d,$(1),$(if $(and $(wildcard $(d)/include/nccl.h),$(call nccl_so_in,$(d))),$(d))))
NCCL_SYSTEM_ROOTS ?= $(CUDA_HOME) /usr /usr/local
NCCL_WHEEL_DIRS   ?= $(wildcard /opt/*/.venv/lib/python3*/site-packages/nvidia/nccl \
                       /usr/local/lib/python3*/dist-packages/nvidia/nccl /usr/lib/python3/dist-packages/nvidia/nccl \
                       $(HOME)/.local/lib/python3*/site-packages/nvidia/nccl)
ifneq ($(NCCL_HOME),)
NCCL_ROOT := $(call nccl_root,$(NCCL_HOME))
$(if $(NCCL_ROOT),,$(error NCCL_HOME=$(NCCL_HOME) holds no include/nccl.h with lib/libnccl.so or lib/libnccl.so.2))
else
NCCL_ROOT := $(call nccl_root,$(NCCL_SYSTEM_ROOTS) $(NCCL_WHEEL_DIRS))
NCCL_ROOT := $(if $(NCCL_ROOT),$(NCCL_ROOT),$(call nccl_root,$(shell python3 -c \
               'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)))
endif
NCCL_H    := $(if $(NCCL_ROOT),$(NCCL_ROOT)/include/nccl.h)
NCCL_SO   := $(if $(NCCL_ROOT),$(call nccl_so_in,$(NCCL_ROOT)))
HAVE_CUDA := $(if $(filter 0 no off,$(CUDA)),,$(and $(wildcard $(NVCC)),$(CUDA_LIBDIR),$(CUBLAS_OK),$(NCCL_H),$(NCCL_SO)))
ifneq ($(HAVE_CUDA),)
CFLAGS    += -DZB_HAVE_CUDA -I$(CUDA_HOME)/include -I$(dir $(NCCL_H))
CUDA_LIBS := -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) $(NCCL_SO) \
             -Wl,-rpath,$(dir $(NCCL_SO)) -lcublasLt -lcublas -lcudart -lstdc++
endif
CU_SRC   := $(wildcard kernels/cuda/*.cu $(addsuffix /*.cu,$(EXEC_ROOMS)))
CU_HDR   := $(wildcard kernels/cuda/*.h kernels/cuda/*.cuh kernels/*.h executor/*.h \
              $(addsuffix /*.h,$(EXEC_ROOMS)) $(addsuffix /*.cuh,$(EXEC_ROOMS)) common/*.h)
CU_OBJ   := $(if $(HAVE_CUDA),$(patsubst %.cu,$(BUILD)/%.cu.o,$(CU_SRC)))
CU_TESTS := $(patsubst tests/cuda/%.cu,$(BUILD)/cuda/%,$(wildcard tests/cuda/test_*.cu))

COMMON_SRC   := $(wildcard common/*.c)
PLANNER_SRC  := $(filter-out planner/cli/main.c,$(wildcard planner/*.c planner/*/*.c))
KERNEL_SRC   := $(wildcard kernels/*.c)
EXEC_SRC     := $(filter-out executor/run/main.c,$(wildcard executor/*.c $(addsuffix /*.c,$(EXEC_ROOMS))))
EXEC_ASM     := $(wildcard $(addsuffix /*.S,$(EXEC_ROOMS)))
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
EXT_LIBS    := $(GLPK_LIBS) $(YAML_LIBS) $(BLAS_LIBS) $(MPI_LIBS) $(CUDA_LIBS) -lpthread -lm

TESTS   := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRC))
MPI_TESTS := $(patsubst tests/mpi/%.c,$(BUILD)/mpi/%,$(wildcard tests/mpi/*.c))
BENCHES := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all deps run compare test test-hosts unit e2e asan valgrind bench plans validate cuda cuda-test clean fuzz
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
# The CPU measured once, in two parts cached in out/ (delete them to
# measure again): `zbplan calibrate` (peak per core, GEMM, attention and
# elementwise rates on the model's shapes), then the model's own F, B and W
# passes timed by a short profiling run (`zbrun --profile`) of the
# calibrated plan, with the threads per rank the run will have; the plan
# is then made from the measured pass times (`zbplan --profile`).
# The cache is keyed by content, not by name or date: a hash of the model
# file's bytes, this machine (architecture, CPU model, cores) and the zb
# version, so another model of the same name (elsewhere/tiny.yaml), a
# changed model, another machine or another build measures again. Each
# part is written under a temporary name and renamed only when its
# command succeeded: a Ctrl-C (zbrun exits 130 after writing what it
# measured so far) leaves no partial profile for the next `make run`.
RUN_KEY := $(shell { cat '$(MODEL)' 2>/dev/null || echo missing; uname -m; \
             grep -m1 'model name' /proc/cpuinfo 2>/dev/null; echo $(CORES); \
             git describe --tags --always --dirty 2>/dev/null; } | sha256sum | cut -c1-12)
RUN_CALIB := out/calibrated-$(RUN_KEY)-$(notdir $(MODEL))
RUN_PROF := out/profile-pp$(RUN_PP)-$(RUN_KEY)-$(notdir $(MODEL))
$(RUN_CALIB): | $(BIN)/zbplan
	@mkdir -p out
	$(BIN)/zbplan calibrate --model $(MODEL) -o $@.tmp && mv $@.tmp $@
$(RUN_PROF): $(RUN_CALIB) | $(BIN)/zbplan $(BIN)/zbrun
	$(BIN)/zbplan $(RUN_CALIB) $(RUN_PLAN_FLAGS) -q -o $@.plan
	$(BIN)/zbrun $@.plan --steps 8 -q --profile $@.tmp && mv $@.tmp $@
	@rm -f $@.plan
run: all $(RUN_PROF)
	@mkdir -p out
	$(BIN)/zbplan $(RUN_CALIB) $(RUN_PLAN_FLAGS) --profile $(RUN_PROF) -o out/plan.yaml
	$(BIN)/zbrun out/plan.yaml --report out/report.yaml --trace out/trace.json --svg out/timeline.svg

# Both programs print `git describe` (--version, the report): version.h
# changes only when that string does, so it rebuilds only the two mains.
ZB_VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
$(BUILD)/version.h: FORCE
	@mkdir -p $(dir $@)
	@echo '#define ZB_VERSION "$(ZB_VERSION)"' > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
MAINS_O := $(BUILD)/executor/run/main.o $(BUILD)/planner/cli/main.o $(BUILD)/compare/main.o
$(MAINS_O): $(BUILD)/version.h
$(MAINS_O): CFLAGS += -I$(BUILD)
.PHONY: FORCE
FORCE:

# Every schedule users compare, planned and trained a few steps each, then
# one table and one picture (out/compare/compare.svg) by zbreport. Planned
# from this CPU's measurements, as `make run` plans (the same cached
# calibration and pass profile), so predicted and measured share an axis.
COMPARE_SCHEDULES ?= 1f1b interleaved zb-h1 zb-h2 zb-v zb-auto-v
COMPARE_STEPS ?= 8
compare: all $(RUN_PROF)
	@mkdir -p out/compare
	@set -e; reps=; for s in $(COMPARE_SCHEDULES); do \
	  $(BIN)/zbplan $(RUN_CALIB) --dp 1 --tp 1 --pp $(RUN_PP) --schedule $$s \
	    --profile $(RUN_PROF) -q -o out/compare/$$s.plan.yaml; \
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
# The built-in corpus (executor/state/corpus.S includes its bytes).
$(BUILD)/executor/state/corpus.o: executor/state/corpus.S models/data/corpus.txt
	@mkdir -p $(dir $@)
	$(call say,AS,$<)$(CC) -c $< -o $@

$(LIB_EXEC): $(call obj,$(EXEC_SRC) $(KERNEL_SRC)) $(patsubst %.S,$(BUILD)/%.o,$(EXEC_ASM)) $(CU_OBJ)
	@mkdir -p $(dir $@)
	$(call say,AR,$@)rm -f $@ && ar rcs $@ $^

$(BIN)/zbplan: $(BUILD)/planner/cli/main.o $(LIB_PLANNER) $(LIB_EXEC) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(GLPK_LIBS) $(YAML_LIBS) $(BLAS_LIBS) $(MPI_LIBS) -lpthread -lm
$(BIN)/zbrun: $(BUILD)/executor/run/main.o $(LIB_EXEC) $(LIB_PLANNER) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(GLPK_LIBS) $(YAML_LIBS) $(BLAS_LIBS) $(MPI_LIBS) $(CUDA_LIBS) -lpthread -lm

# zbreport: compare schedules from zbrun reports (compare/)
COMPARE_SRC := $(filter-out compare/main.c,$(wildcard compare/*.c))
$(BIN)/zbreport: $(BUILD)/compare/main.o $(call obj,$(COMPARE_SRC)) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(YAML_LIBS) -lm

$(BUILD)/tests/%: tests/unit/%.c $(LIBS_ALL)
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(LDFLAGS) $(LIBS_ALL) $(CHECK_LIBS) $(EXT_LIBS)
# Programs that tests/e2e/zbrun_mpi.sh runs under mpirun.
$(BUILD)/mpi/%: tests/mpi/%.c $(LIBS_ALL)
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(LDFLAGS) $(LIBS_ALL) $(EXT_LIBS)
$(BUILD)/bench/%: tests/bench/%.c $(LIBS_ALL)
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(LDFLAGS) $(LIBS_ALL) $(EXT_LIBS)

# Unit tests run from the repository root (they read models/, tests/bad/).
unit: $(TESTS)
	@set -e; for t in $(TESTS); do echo "== $$t"; CK_FORK=$${CK_FORK:-yes} $$t; done
# every script runs, also after one fails; the failed ones are named at the end
e2e: all $(MPI_TESTS)
	@failed=; for s in tests/e2e/*.sh; do [ -e "$$s" ] || continue; echo "== $$s"; \
	  BIN=$(BIN) BUILD=$(BUILD) MPI_TESTS_DIR=$(BUILD)/mpi bash $$s || failed="$$failed $$s"; done; \
	if [ -n "$$failed" ]; then echo "e2e: FAILED:$$failed"; exit 1; fi; echo "e2e: all scripts passed"
# unit tests, then the end-to-end scripts (one after the other: the builds
# run in parallel, the tests do not)
test: all $(TESTS) $(MPI_TESTS)
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory e2e

# The suite as other machines see it (scripts/test-hosts): idle, every core
# busy, OPENBLAS_CORETYPE set to other kernels, and a second run in a row.
test-hosts: all
	scripts/test-hosts

asan:
	$(MAKE) BUILD=build-asan BIN=build-asan/bin OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" test

valgrind: $(TESTS)
	@set -e; for t in $(TESTS); do echo "== valgrind $$t"; \
	  CK_FORK=no valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    --suppressions=tests/valgrind.supp \
	    --error-exitcode=1 $$t; done

bench: all $(BENCHES) $(BUILD)/tests/test_zb_auto_v_ref $(BUILD)/tests/test_zb_auto_v_authors
	@set -e; for b in $(BENCHES); do echo "== $$b"; $$b; done
	@[ ! -x tests/bench/run.sh ] || BIN=$(BIN) tests/bench/run.sh
	@[ ! -x tests/bench/mpi.sh ] || BIN=$(BIN) tests/bench/mpi.sh
	@BIN=$(BIN) bash tests/bench/mpi_world.sh   # 128 processes (minutes on 2 cores)
	@BIN=$(BIN) bash tests/bench/replan.sh
	@ZB_ILP_SWEEP=1 CK_FORK=no $(BUILD)/tests/test_zb_auto_v_ref || \
	  echo "bench: zb-auto-v is not within 2% of every V ILP optimum GLPK proved in 2 s (target missed)"
	@ZB_VAUTO_SWEEP=1 CK_FORK=no $(BUILD)/tests/test_zb_auto_v_authors || \
	  echo "bench: zb-auto-v is longer than the authors' v_auto_schedule on a case of the sweep (target missed)"
	@BIN=$(BIN) bash tests/bench/postval.sh   # optimizer post-validation: step-boundary idle
	@BIN=$(BIN) bash tests/bench/llmc_compare.sh   # LLMC_DIR=llm.c checkout: speed beside llm.c
	@BIN=$(CURDIR)/$(BIN) tests/bench/llmc_check.sh   # LLMC_DIR: losses beside llm.c

plans: $(BIN)/zbplan
	BIN=$(BIN) bash plans/make_plans.sh

validate: $(BIN)/zbplan
	BIN=$(BIN) bash tests/bench/validate.sh

# ---- CUDA sources -------------------------------------------------------
# sm_90 code (H100/H200) plus compute_80 PTX that the driver compiles for
# any newer or other >= sm_80 device at load time.
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=compute_80
NVFLAGS ?= -std=c++17 -O2 -I. -DZB_HAVE_CUDA $(CUDA_ARCH) -Xcompiler -Wall,-Wextra,-Wno-unused-parameter $(if $(NCCL_H),-I$(dir $(NCCL_H)))

$(BUILD)/%.cu.o: %.cu $(CU_HDR)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$<)$(NVCC) $(NVFLAGS) -c $< -o $@
$(BUILD)/cuda/%.o: tests/cuda/%.cu $(CU_HDR)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$<)$(NVCC) $(NVFLAGS) -c $< -o $@
$(BUILD)/cuda/%: $(BUILD)/cuda/%.o $(LIBS_ALL)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $< $(LIBS_ALL) $(EXT_LIBS)

# Compile and link the CUDA tests wherever nvcc exists; CI does this on
# machines without a GPU. `make cuda-test` runs them; without a device each
# prints "skipped: no CUDA device" (exit 77), which counts as skipped; any
# other CUDA error fails. `cuda` depends on the files (no recursive make:
# `make -j all cuda` builds every object once).
# NCCL across processes through zbrun's bootstrap (tests/cuda/nccl_procs.c):
# compiled and linked by `make cuda` wherever the CUDA backend is built; run
# on a GPU machine by tests/cuda/nccl_procs.sh.
NCCL_PROCS  := $(BUILD)/cuda/nccl_procs
$(NCCL_PROCS): tests/cuda/nccl_procs.c $(LIBS_ALL)
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(LDFLAGS) $(LIBS_ALL) $(EXT_LIBS)
.PHONY: nccl-procs
ifneq ($(HAVE_CUDA),)
cuda: all $(CU_TESTS) $(NCCL_PROCS)
nccl-procs: $(NCCL_PROCS)
else
cuda:
	@echo "cuda: nvcc, cuBLAS or NCCL not found (or CUDA=0): CUDA backend not built"
nccl-procs:
	@echo "nccl-procs: CUDA backend not built, not built"
endif
cuda-test: cuda
	@set -e; [ -n "$(HAVE_CUDA)" ] || { echo "cuda-test: skipped: CUDA backend not built"; exit 0; }; \
	for t in $(CU_TESTS); do echo "== $$t"; rc=0; $$t || rc=$$?; \
	  if [ $$rc -eq 77 ]; then echo "   (skipped)"; elif [ $$rc -ne 0 ]; then exit $$rc; fi; done

# Fuzzing (tests/fuzz/run.sh): clang's libFuzzer with ASan + UBSan. New
# inputs go to build-fuzz/corpus/T; the seeds in the repository stay as
# they are. A crash leaves build-fuzz/crash-* and fails the target.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := build-fuzz
FUZZ_NAMES   := model plan data checkpoint
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS  := -std=c11 -O1 -g -D_GNU_SOURCE -I. -fopenmp $(PKG_CFLAGS) $(FUZZ_SAN)
FUZZ_OBJ     := $(patsubst %.c,$(FUZZ_BUILD)/%.o,$(COMMON_SRC) $(EXEC_SRC) $(KERNEL_SRC) $(PLANNER_SRC)) \
                $(patsubst %.S,$(FUZZ_BUILD)/%.o,$(EXEC_ASM))

.SECONDARY: $(FUZZ_OBJ)
$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
$(FUZZ_BUILD)/executor/state/corpus.o: executor/state/corpus.S models/data/corpus.txt
	@mkdir -p $(dir $@)
	$(call say,AS,$<)$(FUZZ_CC) -c $< -o $@
$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_util.h $(FUZZ_OBJ)
	$(call say,LD,$@)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) \
	  $(GLPK_LIBS) $(YAML_LIBS) $(BLAS_LIBS) -lpthread -lm

fuzz: $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZ_NAMES))
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh

clean:
	rm -rf build build-asan build-fuzz bin

# `make print-VAR` prints a variable as this Makefile sets it (e.g.
# print-NCCL_SO, print-HAVE_CUDA, print-PKG_CFLAGS).
print-%:
	@printf '%s=%s\n' '$*' '$($*)'

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

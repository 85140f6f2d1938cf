# fp8plan — build, run, test, bench, fuzz.  See README.md.
#
#   make            build build/fp8plan (+ the CUDA backend when nvcc exists)
#   make run        the headline comparison on the built-in default
#   make report     the same as an HTML page with charts (fp8plan-report.html)
#   make test       the quick tier of the unit + CLI tests, several suites at a time (TEST_JOBS),
#                   and compiles the benchmarks and slow tests; ends with "N passed, M failed, K skipped"
#   make test-full  every suite: the quick tier and the full tier (exhaustive fault sweeps, the
#                   HTML reports in headless Chromium, the heavier mpirun scripts); .ci/run runs it
#   make test SAN=address,undefined   the same under ASan+UBSan (in build-san/; test-full too)
#   make bench      benchmarks that print their figures
#   make fuzz       libFuzzer targets for FUZZ_SECONDS each (fuzz-smoke: 5 s)
#   make test-slow  opt-in exhaustive checks (all 2^32 floats)
#   make gpu-check  build and run the GPU validation (tests/gpu/gpu_check.sh): kernels
#                   against the CPU reference, GEMM sweep, training steps, torch
#                   baseline; results under results/gpu-<date>/; exit 69 without a GPU
#   make gpu-build  what gpu-check runs, built here to carry to a GPU machine
#                   (fp8plan without the TUI: no ncurses, no tmux; needs nvcc and NCCL)
#   make gpu-pack   gpu-build, then $(BUILD)-pack: only what the check runs, to carry
#   make mutate     mutation testing of the files this branch changes against main
#                   (MUTATE_BASE=rev, or MUTATE_DIR=planner for a folder); see CONTRIBUTING.md
#   make fmt | lint | clean
#
# Knobs: SAN=address|undefined|address,undefined  WERROR=1|0  OPT=-O2
#        CUDA_HOME=/usr/local/cuda  CUDA_ARCH=90a  CUDA=0 (skip CUDA even if nvcc exists)
#        NCCL_HOME=DIR (include/nccl.h and lib/libnccl.so*)  TUI=0 (fp8plan without the TUI)

.DEFAULT_GOAL := all
.SUFFIXES:
.DELETE_ON_ERROR:

comma := ,
SAN ?=
WERROR ?= 1
OPT ?= -O2 -g
FUZZ ?=
FUZZ_SECONDS ?= 60
CUDA_HOME ?= /usr/local/cuda
CUDA_ARCH ?= 90a
NVCC ?= $(CUDA_HOME)/bin/nvcc
CUDA ?= 1
TUI ?= 1
NCCL_HOME ?=

# ---- build directory and sanitizers ------------------------------------------
ifneq ($(SAN),)
  bad_san := $(filter-out address undefined,$(subst $(comma), ,$(SAN)))
  ifneq ($(bad_san),)
    $(error SAN must be address, undefined or address$(comma)undefined (got '$(SAN)'))
  endif
  BUILD ?= build-san
  SANFLAGS := -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
  CUDA := 0
else ifneq ($(FUZZ),)
  BUILD ?= build-fuzz
  CXX := clang++
  SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
  CUDA := 0
else
  BUILD ?= build
endif

# ---- CUDA: built when nvcc exists (and not under sanitizers) -----------------
ifeq ($(CUDA),1)
  ifneq ($(wildcard $(NVCC)),)
    HAVE_CUDA := 1
  endif
endif

# ---- NCCL: NCCL_HOME, the toolkit, the system (libnccl-dev), or PyTorch's wheel --
# The first place with both nccl.h and a libnccl.so* wins; NCCL_FROM says which.
nccl_lib_in = $(firstword $(wildcard $(addprefix $(1)/,lib/libnccl.so lib64/libnccl.so lib/x86_64-linux-gnu/libnccl.so \
                lib/libnccl.so.2 lib64/libnccl.so.2 lib/x86_64-linux-gnu/libnccl.so.2)))
ifeq ($(HAVE_CUDA),1)
  ifneq ($(NCCL_HOME),)
    NCCL_FROM := NCCL_HOME
    NCCL_INC := $(NCCL_HOME)/include
    NCCL_LIB := $(call nccl_lib_in,$(NCCL_HOME))
  else ifneq ($(and $(wildcard $(CUDA_HOME)/include/nccl.h),$(call nccl_lib_in,$(CUDA_HOME))),)
    NCCL_FROM := the CUDA toolkit
    NCCL_INC := $(CUDA_HOME)/include
    NCCL_LIB := $(call nccl_lib_in,$(CUDA_HOME))
  else ifneq ($(and $(wildcard /usr/include/nccl.h),$(call nccl_lib_in,/usr)),)
    NCCL_FROM := the system (libnccl-dev)
    NCCL_INC := /usr/include
    NCCL_LIB := $(call nccl_lib_in,/usr)
  else
    NCCL_WHEEL := $(shell python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null)
    ifneq ($(and $(NCCL_WHEEL),$(wildcard $(NCCL_WHEEL)/include/nccl.h),$(call nccl_lib_in,$(NCCL_WHEEL))),)
      NCCL_FROM := the nvidia-nccl wheel
      NCCL_INC := $(NCCL_WHEEL)/include
      NCCL_LIB := $(call nccl_lib_in,$(NCCL_WHEEL))
    endif
  endif
  ifeq ($(NCCL_LIB),)
    # an error when something is built (not for gpu-check with carried binaries)
    NCCL_ERR := nvcc is at $(NVCC) but NCCL was not found (looked in $(if $(NCCL_HOME),NCCL_HOME=$(NCCL_HOME),$(CUDA_HOME), /usr and PyTorch's nvidia.nccl wheel)): install libnccl-dev or `pip install nvidia-nccl-cu13`, set NCCL_HOME=DIR, or build without CUDA: make CUDA=0
  endif
endif

# ---- flags -------------------------------------------------------------------
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wundef \
        -Wpointer-arith -Wvla
ifeq ($(WERROR),1)
  WARN += -Werror
endif
# OpenBLAS (Debian libopenblas-pthread-dev, the default flavour of libopenblas-dev), from
# its own directories so the reference libblas the alternatives system may point at is
# never picked up. The CPU backend sets its thread count to 1 and calls sgemm from its own
# thread pool (exec/backend/par.c), one tile per call: the threaded build is the one that is safe
# to call from several threads at once (Debian's serial build 0.3.21 is not: concurrent
# small sgemm calls return wrong results). make bench's anchor runs it with its own threads.
MULTIARCH := $(shell gcc -print-multiarch 2>/dev/null)
BLAS_INC := /usr/include/$(MULTIARCH)/openblas-pthread
BLAS_LIB := /usr/lib/$(MULTIARCH)/openblas-pthread
CPPFLAGS := -I. -D_GNU_SOURCE -isystem $(BLAS_INC)
# GCC's -O2 vectorizes only loops it can replace whole ("very cheap"); the dynamic cost
# model (-O3's) lets the CPU backend's loops over rows of floats vectorize too, and
# -fno-math-errno lets sqrtf be the instruction (nothing reads errno after a math call).
# No -ffast-math: floating-point results are the same as without vectorization.
VECFLAGS := -fno-math-errno $(if $(findstring clang,$(shell $(CC) --version 2>/dev/null)),,-fvect-cost-model=dynamic)
CFLAGS := -std=c11 $(OPT) $(VECFLAGS) $(WARN) $(SANFLAGS) -MMD -MP
# The planner runs a few thousand arithmetic steps per plan, millions of plans in a sweep: at -O3 GCC inlines and
# unrolls more of them (make bench's mix: 12 % fewer instructions per plan, callgrind). Neither level reassociates
# floating point, so the plans are the same bits. Only over the default -O2 (an -O0 or -O1 build stays as asked).
PLANNER_OPT := $(if $(filter -O2,$(OPT)),-O3)
# A plan calls across the planner's files about a hundred times (plan_coll_set from the vocabulary's collectives,
# the GEMM and kernel models from the layer's time, the memory terms from the build): link-time optimization inlines
# them where the programs that plan millions (fp8plan, bench_planner) are linked. The planner's objects carry their
# code too (-ffat-lto-objects), and every other program links that code as before (-fno-lto: GCC's linker plugin
# would otherwise optimize the planner again at each test's link). On x86-64 a plan's fixed-size copies
# (the labelled blank collectives, 3.2 KB, and memory terms, 1.6 KB, the input) and clears (a stage's and a layer's
# time rows, the geometry) went to rep movsq / rep stosq, whose start-up costs more than the copy: libc's memcpy and
# vector stores instead (make bench's mix: ~6 % more plans/s). GCC only, with PLANNER_OPT, without sanitizers. Like
# -O3 neither reassociates floating point: the plans are the same bits (bench_planner --digest).
PLANNER_GCC := $(and $(PLANNER_OPT),$(if $(SANFLAGS),,1),$(if $(findstring clang,$(shell $(CC) --version 2>/dev/null)),,1))
PLANNER_LTO := $(if $(PLANNER_GCC),-flto=auto)
PLANNER_STR := $(if $(and $(PLANNER_GCC),$(filter x86_64%,$(shell $(CC) -dumpmachine 2>/dev/null))),\
  -mmemcpy-strategy=libcall:-1:noalign -mmemset-strategy=vector_loop:1024:noalign$(comma)libcall:-1:noalign)
LDFLAGS := $(SANFLAGS) $(if $(PLANNER_LTO),-fno-lto)
LDLIBS := -lcsv -lyaml -ltomlplusplus -lstdc++ $(if $(filter 1,$(TUI)),-lncursesw) -L$(BLAS_LIB) -Wl,-rpath,$(BLAS_LIB) -lopenblas -lm -lpthread
# The CUDA backend is a shared library of its own, $(BUILD)/libfp8plan_cuda.so, loaded
# by exec/backend/cuda_lib.c only when a run asks for it: the CUDA runtime, cuBLASLt and NCCL
# cost every process ~0.1 s of start-up, so only the library links them. Programs
# carry all of libfp8plan.a (whole-archive: the library calls host code such as
# exec/backend/lt_map.c that a program itself may not) and export it (-rdynamic) for the
# library to resolve against, and find it beside themselves or one folder up
# (tests/, gpu/, bench/).
ifeq ($(HAVE_CUDA),1)
  CPPFLAGS += -DFP8PLAN_HAVE_CUDA=1
  NCCL_LIBDIR := $(patsubst %/,%,$(dir $(NCCL_LIB)))
  CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublasLt -lcudart \
               $(NCCL_LIB) -Wl,-rpath,$(NCCL_LIBDIR) -lstdc++ -ldl -lrt
  LDFLAGS += -rdynamic -Wl,-rpath,'$$ORIGIN' -Wl,-rpath,'$$ORIGIN/..'
  NVCCFLAGS := -std=c++17 -O2 -lineinfo -I. -isystem $(CUDA_HOME)/include $(if $(filter-out $(CUDA_HOME)/include,$(NCCL_INC)),-isystem $(NCCL_INC)) \
               -gencode arch=compute_$(CUDA_ARCH),code=sm_$(CUDA_ARCH) -gencode arch=compute_90,code=compute_90 \
               -Xcompiler -Wall,-Wextra,-fPIC -Werror all-warnings,default-stream-launch -MMD -MP
endif

# OpenMPI (Debian libopenmpi-dev, mpirun from openmpi-bin) carries the CPU backend's
# collectives between ranks (exec/comm/comm_mpi.c). Its flags come from pkg-config's
# ompi-c (what mpicc adds), read when a recipe runs, so after $(DEPS_OK) has installed
# the packages. A binary started without mpirun runs one rank and never starts MPI.
MPI_CFLAGS = $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS = $(shell pkg-config --libs ompi-c 2>/dev/null)
CPPFLAGS_BASE := $(CPPFLAGS)
CPPFLAGS = $(CPPFLAGS_BASE) $(MPI_CFLAGS)
LDLIBS_BASE := $(LDLIBS)
LDLIBS = $(LDLIBS_BASE) $(MPI_LIBS)

# ---- sources -------------------------------------------------------------------
# Library code lives in these folders; anything under a cuda/ subfolder is CUDA
# (.cu with nvcc, .c with the CUDA headers) and is built only when HAVE_CUDA=1.
# TUI=0 leaves tui/ out and links cli/notui/cmd_tui.c (a stub) instead of the
# curses session: no ncurses needed (make gpu-build).
LIB_DIRS := util fp8 planner catalog check reports exec import $(if $(filter 1,$(TUI)),tui)
LIB_SRC := $(sort $(shell find $(LIB_DIRS) \( -name '*.c' -o -name '*.cpp' \) -not -path '*/cuda/*' 2>/dev/null))
CUDA_SRC := $(sort $(shell find $(LIB_DIRS) -path '*/cuda/*' \( -name '*.cu' -o -name '*.c' \) 2>/dev/null))
CLI_SRC := $(if $(filter 1,$(TUI)),$(sort $(wildcard cli/*.c)),$(sort $(filter-out cli/cmd_tui.c,$(wildcard cli/*.c)) cli/notui/cmd_tui.c))
SUPPORT_SRC := $(sort $(wildcard tests/support/*.c))
TEST_SRC := $(sort $(wildcard tests/unit/test_*.c))
SLOW_SRC := $(sort $(wildcard tests/slow/slow_*.c))
BENCH_SRC := $(sort $(wildcard tests/bench/bench_*.c))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
GPU_SRC := $(sort $(wildcard tests/gpu/gpu_*.c))
MPI_TEST_SRC := $(sort $(wildcard tests/mpi/mpi_*.c))

obj = $(patsubst %,$(BUILD)/obj/%.o,$(basename $(1)))
LIB_OBJ := $(call obj,$(LIB_SRC))
CUDA_SO := $(if $(filter 1,$(HAVE_CUDA)),$(BUILD)/libfp8plan_cuda.so)
CLI_OBJ := $(call obj,$(CLI_SRC))
SUPPORT_OBJ := $(call obj,$(SUPPORT_SRC))
LIB := $(BUILD)/libfp8plan.a
LINK_LIB := $(if $(filter 1,$(HAVE_CUDA)),-Wl$(comma)--whole-archive $(LIB) -Wl$(comma)--no-whole-archive,$(LIB))
BIN := $(BUILD)/fp8plan
TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRC))
SLOWS := $(patsubst tests/slow/%.c,$(BUILD)/slow/%,$(SLOW_SRC))
BENCHES := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
ANCHOR := $(BUILD)/bench/anchor_sgemm
FUZZERS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))
# the same targets without libFuzzer, run over their seed corpora by `make test` (tests/cli/fuzz_replay.sh)
REPLAYS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz-replay/%,$(FUZZ_SRC))
CLI_LIB_OBJ := $(filter-out $(BUILD)/obj/cli/main.o,$(CLI_OBJ))
# GPU check programs: built with every CUDA build (so CI compiles them), run only by gpu-check
GPUS := $(if $(filter 1,$(HAVE_CUDA)),$(patsubst tests/gpu/%.c,$(BUILD)/gpu/%,$(GPU_SRC)))
# multi-rank test programs, run under mpirun by tests/cli/mpi_*.sh
MPI_TESTS := $(patsubst tests/mpi/%.c,$(BUILD)/mpi/%,$(MPI_TEST_SRC))
DEPS_OK := $(BUILD)/.deps-ok-tui$(TUI)
TEST_DEPS_OK := $(BUILD)/.test-deps-ok
# the TUI setting the binary and library were built with: a change relinks them
TUI_STAMP := $(BUILD)/.tui-$(TUI)

# ---- system packages -------------------------------------------------------------
# $(call apt_install,ELSE): the shell snippet that installs the packages named in $$missing with
# apt-get when running as root; otherwise it prints the exact command and runs ELSE.
define apt_install
if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing:$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else \
	    echo "missing system packages:$$missing"; \
	    echo "install them with:  sudo apt-get install -y$$missing"; $(1); \
	  fi; \
	fi
endef

# libcsv-dev (CSV), libopenblas-pthread-dev (the CPU backend's GEMMs), libopenmpi-dev and
# openmpi-bin (ranks: mpirun; pkg-config reads its flags) and libncurses-dev
# (TUI; not with TUI=0) to build; tmux for the tests (TUI end-to-end test), not for
# building (make gpu-build needs none of the TUI's packages). Installed with apt-get when
# running as root; otherwise the exact command is printed. Checked again whenever this
# file changes.
$(DEPS_OK): Makefile
	$(if $(NCCL_ERR),$(error $(NCCL_ERR)))
	@missing=""; \
	[ -f /usr/include/csv.h ] || missing="$$missing libcsv-dev"; \
	[ -f /usr/include/yaml.h ] || missing="$$missing libyaml-dev"; \
	[ -f /usr/include/toml++/toml.h ] || missing="$$missing libtomlplusplus-dev"; \
	command -v $(CXX) >/dev/null 2>&1 || missing="$$missing g++"; \
	[ -f $(BLAS_INC)/cblas.h ] && [ -f $(BLAS_LIB)/libopenblas.so ] || missing="$$missing libopenblas-pthread-dev"; \
	$(if $(filter 1,$(TUI)),[ -f /usr/include/ncursesw/ncurses.h ] || [ -f /usr/include/ncurses.h ] || missing="$$missing libncurses-dev";) \
	command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	pkg-config --exists ompi-c 2>/dev/null || missing="$$missing libopenmpi-dev"; \
	command -v mpirun >/dev/null 2>&1 || missing="$$missing openmpi-bin"; \
	$(call apt_install,exit 1)
	@if [ ! -f $(CUDA_HOME)/include/cuda_fp8.h ]; then \
	  echo "note: no $(CUDA_HOME)/include/cuda_fp8.h: the NVIDIA-oracle codec tests will say skip (CI=true fails them);"; \
	  echo "      install the CUDA toolkit (its headers are enough) or set CUDA_HOME"; \
	  if [ "$${CI:-}" = true ]; then exit 1; fi; \
	fi
	@mkdir -p $(@D) && touch $@
ifeq ($(HAVE_CUDA),1)
	@echo "note: CUDA from $(NVCC); NCCL from $(NCCL_FROM): $(NCCL_INC)/nccl.h, $(NCCL_LIB)"
else
	@echo "note: CUDA parts skipped ($(if $(filter 0,$(CUDA)),CUDA=0 or a sanitizer/fuzz build,no nvcc at $(NVCC)))"
endif

# after $(DEPS_OK), so that make -j never runs two apt-get at once
$(TEST_DEPS_OK): | $(DEPS_OK)
	@missing=""; command -v tmux >/dev/null 2>&1 || missing="$$missing tmux"; $(call apt_install,exit 1)
	@mkdir -p $(@D) && touch $@

$(TUI_STAMP):
	@mkdir -p $(@D) && rm -f $(BUILD)/.tui-0 $(BUILD)/.tui-1 && touch $@

# The browser tests (tests/cli/html_browser.sh) render the HTML reports in headless Chromium and read
# the screenshots with python3's standard library: chromium, python3 and a font from Debian, installed
# with apt-get when running as root; otherwise the command is printed and those tests say "skip".
browser-deps:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v python3 >/dev/null 2>&1 || missing="$$missing python3"; \
	[ -d /usr/share/fonts/truetype/dejavu ] || missing="$$missing fonts-dejavu-core"; \
	$(call apt_install,echo "(the browser tests say skip without them)")

# ---- rules -----------------------------------------------------------------------
# Quiet by default, as kernel-style Makefiles are: the ~190 compile and link commands are not echoed (they
# buried `make run`'s answer), while the compiler's warnings and errors still reach stderr; V=1 echoes every
# command.
V ?= 0
Q := $(if $(filter 1,$(V)),,@)

.PHONY: all run report test test-full test-slow bench time-survey fuzz fuzz-smoke fuzz-run fmt lint clean tests gpu-build gpu-programs gpu-check gpu-pack \
        browser-deps mutate

all: $(BIN) $(CUDA_SO)

$(BUILD)/obj/planner/%.o: CFLAGS += $(PLANNER_OPT) $(PLANNER_STR) $(if $(PLANNER_LTO),$(PLANNER_LTO) -ffat-lto-objects)
$(BIN) $(BUILD)/bench/bench_planner: LDFLAGS := $(filter-out -fno-lto,$(LDFLAGS)) $(if $(PLANNER_LTO),$(PLANNER_LTO) $(PLANNER_OPT) $(PLANNER_STR))
$(BUILD)/obj/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(if $(findstring /cuda/,$<),-isystem $(CUDA_HOME)/include) $(CFLAGS) -c $< -o $@

# the one C++ file: import/read_toml.cpp, a shim over toml++ (Debian libtomlplusplus-dev, a shared library)
$(BUILD)/obj/%.o: %.cpp | $(DEPS_OK)
	@mkdir -p $(@D)
	$(Q)$(CXX) $(CPPFLAGS) -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1 -std=c++17 $(OPT) $(filter-out -Wstrict-prototypes -Wmissing-prototypes,$(WARN)) $(SANFLAGS) $(if $(SANFLAGS),-fno-sanitize=vptr) -MMD -MP -c $< -o $@

$(BUILD)/obj/%.o: %.cu | $(DEPS_OK)
	@mkdir -p $(@D)
	$(Q)$(NVCC) $(NVCCFLAGS) -c $< -o $@

# test support (the NVIDIA host-conversion oracle) sees the CUDA headers when present
$(SUPPORT_OBJ): CPPFLAGS += -isystem $(CUDA_HOME)/include

$(LIB): $(LIB_OBJ) $(TUI_STAMP)
	@mkdir -p $(@D)
	@rm -f $@
	$(Q)$(AR) rcs $@ $(LIB_OBJ)

$(BIN): $(CLI_OBJ) $(LIB) $(TUI_STAMP)
	$(Q)$(CC) $(LDFLAGS) $(CLI_OBJ) $(LINK_LIB) $(LDLIBS) -o $@

ifeq ($(HAVE_CUDA),1)
$(CUDA_SO): $(call obj,$(CUDA_SRC))
	$(Q)$(CC) -shared $^ $(CUDA_LIBS) -o $@

# the programs that call the CUDA backend directly link the library itself
CUDA_LINKED := $(BUILD)/tests/test_cuda_backend $(GPUS)
$(CUDA_LINKED): $(CUDA_SO)
$(CUDA_LINKED): LDLIBS += -L$(BUILD) -lfp8plan_cuda $(CUDA_LIBS)
endif

# test_exec_faults and test_cli_faults fail the project's allocations one at a time: their own malloc & co.
# (tests/support/fault_inject.h) come first. test_cli_faults runs the subcommands in process: it links the
# CLI's objects but main.o.
FAULT_WRAP := $(foreach f,malloc calloc realloc free strdup aligned_alloc,-Wl$(comma)--wrap=$(f))
$(BUILD)/tests/test_exec_faults $(BUILD)/tests/test_cli_faults: LDFLAGS += $(FAULT_WRAP)
# test_par_no_threads refuses every thread the pool tries to start
$(BUILD)/tests/test_par_no_threads: LDFLAGS += -Wl,--wrap=pthread_create
CLI_LIB_OBJ = $(filter-out $(BUILD)/obj/cli/main.o,$(CLI_OBJ))
# the test of the CLI's option tables (test_cli_opts) links them the same way; every other test, bench,
# fuzz target and multi-rank program reaches what it tests below cli/ (a run: exec/run/run.h)
CLI_TESTS := $(BUILD)/tests/test_cli_faults $(BUILD)/tests/test_cli_opts
$(CLI_TESTS): $(BUILD)/tests/%: tests/unit/%.c $(SUPPORT_OBJ) $(CLI_LIB_OBJ) $(LIB) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $(LDFLAGS) $< $(SUPPORT_OBJ) $(CLI_LIB_OBJ) $(LINK_LIB) $(LDLIBS) -o $@

$(BUILD)/tests/%: tests/unit/%.c $(SUPPORT_OBJ) $(LIB) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itests -isystem $(CUDA_HOME)/include $(CFLAGS) $(LDFLAGS) $< $(SUPPORT_OBJ) $(LINK_LIB) $(LDLIBS) -o $@

$(BUILD)/slow/%: tests/slow/%.c $(SUPPORT_OBJ) $(LIB) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itests -isystem $(CUDA_HOME)/include $(CFLAGS) $(LDFLAGS) $< $(SUPPORT_OBJ) $(LINK_LIB) $(LDLIBS) -o $@

$(BUILD)/bench/%: tests/bench/%.c $(LIB) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $(LDFLAGS) $< $(LINK_LIB) $(LDLIBS) -o $@

# bench_exec_gemm runs it: OpenBLAS with its own threads, in a process of its own so they
# never compete with the measured GEMMs
$(ANCHOR): tests/bench/anchor_sgemm.c tests/bench/bench_time.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(Q)$(CC) -D_GNU_SOURCE -Itests -I$(BLAS_INC) -std=c11 $(OPT) $(WARN) $< -L$(BLAS_LIB) -Wl,-rpath,$(BLAS_LIB) -lopenblas -o $@

$(BUILD)/mpi/%: tests/mpi/%.c tests/test.h $(LIB) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $(LDFLAGS) $< $(LINK_LIB) $(LDLIBS) -o $@

$(BUILD)/gpu/%: tests/gpu/%.c tests/gpu/gpu_common.h $(LIB) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $(LDFLAGS) $< $(LINK_LIB) $(LDLIBS) -o $@

# fuzz_cli_opts fuzzes the CLI's option parser (cli/opts.c): the one target that links the CLI's objects
FUZZ_CLI := $(BUILD)/fuzz/fuzz_cli_opts $(BUILD)/fuzz-replay/fuzz_cli_opts
$(FUZZ_CLI): $(CLI_LIB_OBJ)
$(FUZZ_CLI): FUZZ_CLI_OBJ = $(CLI_LIB_OBJ)

$(BUILD)/fuzz/%: tests/fuzz/%.c $(SUPPORT_OBJ) $(LIB) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itests -isystem $(CUDA_HOME)/include $(CFLAGS) -fsanitize=fuzzer,address,undefined \
	  $< $(FUZZ_CLI_OBJ) $(SUPPORT_OBJ) $(LIB) $(LDLIBS) -o $@

$(BUILD)/fuzz-replay/%: tests/fuzz/%.c tests/fuzz/replay_main.c $(SUPPORT_OBJ) $(LIB) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itests -isystem $(CUDA_HOME)/include $(CFLAGS) $(LDFLAGS) $< tests/fuzz/replay_main.c \
	  $(FUZZ_CLI_OBJ) $(SUPPORT_OBJ) $(LIB) $(LDLIBS) -o $@

# The benchmarks and slow tests are compiled with the tests (not run), so an API
# change that breaks them fails `make test`, in CI too.
tests: $(TEST_DEPS_OK) $(BIN) $(CUDA_SO) $(TESTS) $(MPI_TESTS) $(GPUS) $(REPLAYS) $(BENCHES) $(SLOWS)

# Skips that may pass under CI=true (tests/run.sh): hardware always; "build" where this
# build leaves CUDA out (sanitizers, CUDA=0, no nvcc), whose parts the default build tests.
SKIP_OK := hardware,load$(if $(filter 1,$(HAVE_CUDA)),,$(comma)build)

# make test runs the quick tier, make test-full every suite (the quick tier and the suites whose file says
# `tier: full`: exhaustive sweeps, the browser pages, the heavier mpirun scripts); .ci/run runs test-full.
# Suites run TEST_JOBS at a time (tests/run.sh; default the CPUs + 1).
test: tests browser-deps
	@FP8PLAN_SKIP_OK=$(SKIP_OK) TEST_TIER=quick sh tests/run.sh $(BUILD)

test-full: tests browser-deps
	@FP8PLAN_SKIP_OK=$(SKIP_OK) TEST_TIER=full sh tests/run.sh $(BUILD)

test-slow: $(BIN) $(SLOWS)
	@set -e; for t in $(SLOWS); do echo "== $$t"; $$t; done

bench: $(BIN) $(CUDA_SO) $(BENCHES) $(ANCHOR)
	@set -e; for b in $(BENCHES); do echo "== $$b"; $$b; done

# issue 47's timing targets measured end to end on this machine (a measurement, not a test; minutes):
# tests/bench/time_survey.sh, docs/calibrate.md. TIME_SURVEY_CSV=PATH also writes its table as CSV.
time-survey: $(BIN)
	@FP8PLAN=$(abspath $(BIN)) FP8PLAN_ROOT=$(CURDIR) sh tests/bench/time_survey.sh $(TIME_SURVEY_CSV)

# libFuzzer needs clang; each target's seed corpus is tests/fuzz/corpus/<name>.
fuzz:
	@$(MAKE) --no-print-directory FUZZ=1 CC=clang fuzz-run

fuzz-smoke:
	@$(MAKE) --no-print-directory FUZZ=1 CC=clang FUZZ_SECONDS=5 fuzz-run

fuzz-run: $(FUZZERS)
	@for f in $(FUZZERS); do \
	  n=$$(basename $$f); mkdir -p $(BUILD)/corpus/$$n; \
	  echo "== $$n ($(FUZZ_SECONDS) s)"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -timeout=5 -print_final_stats=1 $(BUILD)/corpus/$$n \
	    $$( [ -d tests/fuzz/corpus/$$n ] && echo tests/fuzz/corpus/$$n ) >$(BUILD)/fuzz/$$n.log 2>&1; \
	  rc=$$?; grep -E 'stat::number_of_executed_units|ERROR|SUMMARY' $(BUILD)/fuzz/$$n.log; \
	  if [ $$rc -ne 0 ]; then tail -n 40 $(BUILD)/fuzz/$$n.log; echo "FAIL - $$n (exit $$rc)"; exit 1; fi; \
	  echo "ok - $$n"; \
	done

# Everything the GPU check runs; build here and carry $(BUILD) to a GPU machine
# whose image lacks the build dependencies (tests/gpu/gpu_check.sh says how).
# fp8plan is built without the TUI (no ncurses there); libcsv and OpenBLAS go into
# $(BUILD)/lib, the CUDA backend is $(BUILD)/libfp8plan_cuda.so. A GPU target never drops CUDA quietly: without nvcc it stops.
gpu-build:
	$(if $(filter 1,$(HAVE_CUDA)),,$(error gpu-build needs the CUDA compiler: no nvcc at $(NVCC)$(if $(filter 0,$(CUDA)), (CUDA=0 given)); set CUDA_HOME=DIR or NVCC=PATH))
	@$(MAKE) --no-print-directory TUI=0 BUILD=$(BUILD) gpu-programs
	@echo "gpu-build: $(BUILD)/fp8plan (no TUI) and $(BUILD)/gpu/*: CUDA $(NVCC), NCCL from $(NCCL_FROM) ($(NCCL_LIB))"

gpu-programs: $(BIN) $(CUDA_SO) $(GPUS)
	@mkdir -p $(BUILD)/lib && for l in $$(ldd $(BIN) | awk '/libcsv|libyaml|libtomlplusplus|libopenblas|libgfortran|libquadmath|libmpi|libopen-|libhwloc|libevent|libpmix|libudev|libltdl/ { print $$3 }'); do \
	  cp -L "$$l" $(BUILD)/lib/; done

# What a device run carries (under the device tool's 64 MiB): gpu-build's programs
# without their debug sections (fp8plan and the CUDA library keep theirs, for a
# backtrace), their libraries; no objects. Run there as `make gpu-check BUILD=$(BUILD)-pack`.
gpu-pack: gpu-build
	@rm -rf $(BUILD)-pack && mkdir -p $(BUILD)-pack/gpu
	@cp -a $(BUILD)/fp8plan $(CUDA_SO) $(BUILD)/lib $(BUILD)-pack/
	@cp $(GPUS) $(BUILD)-pack/gpu/ && strip --strip-debug $(BUILD)-pack/gpu/*
	@echo "gpu-pack: $(BUILD)-pack, $$(du -sh $(BUILD)-pack | cut -f1) (carry it; run make gpu-check BUILD=$(BUILD)-pack)"

gpu-check:
	@sh tests/gpu/gpu_check.sh $(BUILD)

# The seed's headline comparison: GPT-175B, TP8 x PP4 x DP4, micro-batch 1, seq 2048, H100 SXM,
# distributed optimizer: Megatron BF16 vs Transformer Engine FP8 vs FP8-LM.
run: $(BIN)
	$(Q)./$(BIN) compare --model gpt-175b --gpu h100-sxm --recipes megatron-bf16,te-fp8,fp8lm \
	  --tp 8 --pp 4 --dp 4 --mbs 1 --seq 2048 --dist-opt

# The same run as a what-if report: one self-contained HTML page with charts, to open in a browser.
report: $(BIN)
	$(Q)./$(BIN) report html -o fp8plan-report.html
	@echo "wrote fp8plan-report.html; open it in a browser: xdg-open fp8plan-report.html (file://$(CURDIR)/fp8plan-report.html)"

# ---- mutation testing (tests/mutate.py; CONTRIBUTING.md says when) -----------------------------
# universalmutator from PyPI in a project-local virtual environment (build-mutate/, ignored by git).
MUTATE_WORK := build-mutate
MUTATE_BASE ?= main
MUTATE_DIR ?=
MUTATE_COUNT ?= 60
MUTATE_SEED ?= 1
MUTATE_MINUTES ?= 30
MUTATE_TIMEOUT ?= 60
MUTATE_SAN ?= 0
MUTATE_FULL ?= 0
UNIVERSALMUTATOR := universalmutator==1.14.1

$(MUTATE_WORK)/venv/bin/mutate:
	@python3 -c 'import venv, ensurepip' 2>/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; \
	  else echo "python3 venv is missing: sudo apt-get install -y python3-venv"; exit 1; fi; }
	python3 -m venv $(MUTATE_WORK)/venv
	$(MUTATE_WORK)/venv/bin/pip install -q $(UNIVERSALMUTATOR)

mutate: $(MUTATE_WORK)/venv/bin/mutate
	python3 tests/mutate.py --work $(MUTATE_WORK) --base $(MUTATE_BASE) $(foreach d,$(MUTATE_DIR),--dir $(d)) \
	  --count $(MUTATE_COUNT) --seed $(MUTATE_SEED) --minutes $(MUTATE_MINUTES) --timeout $(MUTATE_TIMEOUT) \
	  $(if $(filter 1,$(MUTATE_SAN)),--san) $(if $(filter 1,$(MUTATE_FULL)),--full)

FMT_FILES = $(shell find util fp8 planner catalog check reports exec import tui cli tests \( -name '*.[ch]' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) 2>/dev/null)

fmt:
	clang-format -i $(FMT_FILES)

# Formatting, and the layering rules: fp8/ and planner/ are pure (no I/O, no exit, nothing from
# catalog/, exec/, tui/, reports/, import/ or cli/). catalog/ reads models/ (its CSV files and their
# finder): it prints nothing, never exits, and takes from planner/ only the type headers of what it
# parses (spec.h, recipe.h, stack.h, layout.h), so the dependency is one way: planner/ never includes
# catalog/, and catalog/ never includes plan.h (the planning engine). Only catalog/ includes its CSV
# readers (csv_table.h, catalog_cells.h) or calls libcsv's parser. check/ (planned versus observed) sits
# between planner/ and exec/: it prints nothing, never exits, includes nothing from exec/, reports/,
# tui/, import/ or cli/, and neither fp8/, planner/ nor catalog/ includes it; the executor hands it
# an Observed record, so reports/ and tui/ need nothing from exec/ either. exec/ runs below the
# renderers: it never includes reports/, tui/ or cli/, and a run's session (exec/run/) shows what it does
# only through its caller's hooks (exec/run/run.h): it never writes to stdout or stderr.
lint:
	@clang-format --dry-run -Werror $(FMT_FILES)
	@bad=$$(grep -nE '#include "(catalog|check|exec|tui|reports|import|cli)/' $$(find fp8 planner -name '*.[ch]' 2>/dev/null) /dev/null); \
	if [ -n "$$bad" ]; then echo "layering: fp8/ and planner/ must not include these:"; echo "$$bad"; exit 1; fi
	@bad=$$(grep -nE '\b(printf|fprintf|puts|fputs|fopen|fwrite|exit|abort)[[:space:]]*\(' $$(find fp8 planner catalog check -name '*.[ch]' -not -path '*/cuda/*' 2>/dev/null) /dev/null); \
	if [ -n "$$bad" ]; then echo "layering: fp8/, planner/, catalog/ and check/ print nothing and never exit:"; echo "$$bad"; exit 1; fi
	@bad=$$(grep -nE '#include "(check|exec|tui|reports|import|cli)/|#include "planner/' $$(find catalog -name '*.[ch]' 2>/dev/null) /dev/null | \
	  grep -vE '#include "planner/(spec|recipe|stack|layout)\.h"'); \
	if [ -n "$$bad" ]; then echo "layering: catalog/ includes from planner/ only spec.h, recipe.h, stack.h and layout.h (never check/, exec/, reports/, import/, tui/, cli/):"; echo "$$bad"; exit 1; fi
	@bad=$$(grep -nE '#include "(exec|reports|tui|import|cli)/' $$(find check -name '*.[ch]' 2>/dev/null) /dev/null); \
	if [ -n "$$bad" ]; then echo "layering: check/ sits below exec/ (it reads an Observed record) and includes nothing from exec/, reports/, tui/, import/ or cli/:"; echo "$$bad"; exit 1; fi
	@bad=$$(grep -nE '#include "exec/' $$(find reports tui check planner catalog -name '*.[ch]' 2>/dev/null) /dev/null); \
	if [ -n "$$bad" ]; then echo "layering: reports/ and tui/ render check/'s records and include nothing from exec/:"; echo "$$bad"; exit 1; fi
	@bad=$$(grep -nE '#include "catalog/(csv_table|catalog_cells)\.h"|\b(csv_table_parse|csv_table_parse_max|cell_parse_all|cell_parse_rows|csv_parse)[[:space:]]*\(' \
	  $$(find util fp8 planner check reports exec import tui cli \( -name '*.[ch]' -o -name '*.cpp' \) 2>/dev/null) /dev/null); \
	if [ -n "$$bad" ]; then echo "layering: only catalog/ parses CSV (catalog/csv_table.h, catalog/catalog_cells.h, libcsv):"; echo "$$bad"; exit 1; fi
	@bad=$$(grep -nE '#include "(reports|tui|cli)/' $$(find exec \( -name '*.[ch]' -o -name '*.cu' \) 2>/dev/null) /dev/null); \
	if [ -n "$$bad" ]; then echo "layering: exec/ never includes reports/, tui/ or cli/:"; echo "$$bad"; exit 1; fi
	@bad=$$(grep -nE '\b(printf|puts|perror)[[:space:]]*\(|\b(stdout|stderr)\b' $$(find exec/run -name '*.[ch]' 2>/dev/null) /dev/null | \
	  grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/\*|\*)|/\* .*\((stdout|stderr)\)'); \
	if [ -n "$$bad" ]; then echo "layering: exec/run/ prints nothing (its caller's hooks show what it does):"; echo "$$bad"; exit 1; fi
	@echo "lint: ok"

clean:
	rm -rf build build-san build-fuzz build-gpu build-gpu-pack build-mutate

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

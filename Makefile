# cc - build, test, run, bench.  `make` builds everything into build/.
CC      ?= cc
CXX     ?= c++
CFLAGS  ?= -O2 -g
WARN     = -Wall -Wextra -Wpedantic -Werror -Wshadow
CSTD     = -std=c99 -Wstrict-prototypes
BUILD   ?= build
LDLIBS   = -pthread -lm

# Parallel by default, one job per CPU, unless a -j was given (make -j1: one at
# a time); sub-makes share the top make's jobs. `make clean ...` runs alone.
ifeq ($(MAKELEVEL)$(filter -j%,$(MAKEFLAGS)),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif
ifneq ($(filter clean,$(MAKECMDGOALS)),)
.NOTPARALLEL:
endif

EXAMPLES := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
# The tests' C sources lie in tests/ by what they test (unit, transport,
# multihost, user; cuda and fuzz have rules of their own). tests/*/*_probe.c
# are helpers that the shell tests start (with arguments and an environment),
# so they are built outside build/tests, which run.sh runs bare.
TEST_DIRS := tests/unit tests/transport tests/multihost tests/user
TEST_SRCS := $(wildcard $(addsuffix /*.c,$(TEST_DIRS)))
TESTS    := $(patsubst %.c,$(BUILD)/tests/%,$(notdir $(filter-out %_probe.c,$(TEST_SRCS))))
PROBES   := $(patsubst %.c,$(BUILD)/probes/%,$(notdir $(filter %_probe.c,$(TEST_SRCS))))
TEST_HDRS := $(wildcard tests/*.h $(addsuffix /*.h,$(TEST_DIRS)))
vpath %.c $(TEST_DIRS)
# Every example, and the tests and probes that use only the public API, stand
# alone (each defines CC_IMPLEMENTATION), but are built with
# -DCC_NO_IMPLEMENTATION and linked with cc.h's implementation compiled once,
# $(BUILD)/cc_impl.o: at -O2 the implementation is about 9 s of CPU a program.
LINKED   := $(EXAMPLES) $(patsubst %,$(BUILD)/tests/%,test_collectives test_determinism test_failures test_ops \
              test_p2p_any test_p2p_blocking test_split_group test_vcoll) $(patsubst %,$(BUILD)/probes/%,init_probe net_probe newcomer_probe)
# bench/cc_bench.c is nccl-tests for cc: build/cc_bench, linked under
# nccl-tests' names (the name picks the collective: build/all_reduce_perf ...).
PERF_NAMES = all_reduce all_gather broadcast reduce reduce_scatter alltoall gather scatter sendrecv
PERF    := $(if $(wildcard bench/cc_bench.c),$(BUILD)/cc_bench $(patsubst %,$(BUILD)/%_perf,$(PERF_NAMES)))
TOOLS    := $(BUILD)/ccrun $(PERF) $(if $(wildcard bench/crypto_bench.c),$(BUILD)/crypto_bench)

.PHONY: all test run bench sanitize tsan clean cuda peers plot
all: $(TOOLS) $(EXAMPLES) $(TESTS) $(PROBES)

# cc_cuda.cuh: its tests, example and benchmark, built with nvcc (`make cuda`;
# tests/cuda/test_cuda.sh builds and runs them within `make test`). NVCC_ARCH picks
# the GPUs. Default: a fat binary with code for every architecture from Volta
# (sm_70) to Blackwell (sm_100 data centre, sm_120 workstation) that this nvcc
# builds (CUDA 13 starts at sm_75; sm_103 and sm_121 run sm_100's and sm_120's
# code), plus Hopper's PTX, which any newer GPU without its own code (sm_110)
# compiles when it loads it.
NVCC      ?= $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
NVCC_SMS   = $(filter $(shell $(NVCC) --list-gpu-code 2>/dev/null),sm_70 sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_120)
NVCC_PTX   = $(if $(filter sm_90,$(NVCC_SMS)),90,$(lastword $(NVCC_SMS:sm_%=%)))
comma     := ,
NVCC_ARCH ?= $(foreach s,$(NVCC_SMS),-gencode arch=compute_$(s:sm_%=%)$(comma)code=$(s)) \
             $(if $(NVCC_PTX),-gencode arch=compute_$(NVCC_PTX)$(comma)code=compute_$(NVCC_PTX))
NVFLAGS   ?= -O2 -g
NVWARN     = -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror
CUDA_DEPS  = cc.h cc_cuda.cuh $(wildcard tests/*.h tests/cuda/*.h)
CUDA_BINS := $(patsubst tests/cuda/%.cu,$(BUILD)/cuda/%,$(wildcard tests/cuda/*.cu)) $(BUILD)/cuda/test_cuda_emu \
             $(BUILD)/cuda/test_cuda_hb_unordered \
             $(patsubst examples/%.cu,$(BUILD)/cuda/%,$(wildcard examples/*.cu)) $(BUILD)/cuda/cc_bench_cuda

cuda: $(CUDA_BINS) $(BUILD)/ccrun

# test_cuda linked with tests/cuda/cuda_emu.cpp instead of CUDA's runtime: the CUDA
# runtime on the CPU, which runs the staged path where there is no GPU. Built
# with ASan and UBSan: the host code of cc_cuda.cuh runs under them there.
# test_cuda_emu_tsan: the same with ThreadSanitizer (the stream threads, the
# watchdog and the host thread of each rank). The kernels run on the CPU, so
# one GPU architecture is enough for both.
EMU_SAN = $(foreach f,-fsanitize=address -fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer,-Xcompiler $(f))
EMU_TSAN = -Xcompiler -fsanitize=thread
EMU_ARCH = $(if $(NVCC_PTX),-arch=sm_$(NVCC_PTX))
$(BUILD)/cuda/test_cuda_emu: tests/cuda/test_cuda.cu tests/cuda/cuda_emu.cpp $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(if $(NVCC),,$(error no nvcc: install the CUDA toolkit or set NVCC))
	$(NVCC) $(NVWARN) $(EMU_ARCH) -O1 -g $(EMU_SAN) -I. -Itests -Itests/cuda -cudart=none -DCC_CUDA_EMU_HOOKS -o $@ tests/cuda/test_cuda.cu tests/cuda/cuda_emu.cpp -lpthread -lm

$(BUILD)/cuda/test_cuda_emu_tsan: tests/cuda/test_cuda.cu tests/cuda/cuda_emu.cpp $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(if $(NVCC),,$(error no nvcc: install the CUDA toolkit or set NVCC))
	$(NVCC) $(NVWARN) $(EMU_ARCH) -O1 -g $(EMU_TSAN) -I. -Itests -Itests/cuda -cudart=none -DCC_CUDA_EMU_HOOKS -o $@ tests/cuda/test_cuda.cu tests/cuda/cuda_emu.cpp -lpthread -lm

# test_cuda_hb: the emulation's happens-before checker finds defects brought
# back on purpose and nothing in right programs (tests/cuda/test_cuda_hb.cu); with
# ASan and UBSan, and (test_cuda_hb_tsan) with ThreadSanitizer.
$(BUILD)/cuda/test_cuda_hb: tests/cuda/test_cuda_hb.cu tests/cuda/cuda_emu.cpp $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(if $(NVCC),,$(error no nvcc: install the CUDA toolkit or set NVCC))
	$(NVCC) $(NVWARN) $(EMU_ARCH) -O1 -g $(EMU_SAN) -I. -Itests -Itests/cuda -cudart=none -DCC_CUDA_EMU_HOOKS -o $@ tests/cuda/test_cuda_hb.cu tests/cuda/cuda_emu.cpp -lpthread -lm

$(BUILD)/cuda/test_cuda_hb_tsan: tests/cuda/test_cuda_hb.cu tests/cuda/cuda_emu.cpp $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(if $(NVCC),,$(error no nvcc: install the CUDA toolkit or set NVCC))
	$(NVCC) $(NVWARN) $(EMU_ARCH) -O1 -g $(EMU_TSAN) -I. -Itests -Itests/cuda -cudart=none -DCC_CUDA_EMU_HOOKS -o $@ tests/cuda/test_cuda_hb.cu tests/cuda/cuda_emu.cpp -lpthread -lm

# test_cuda_hb_unordered: tests/cuda/test_cuda_hb.cu's two_streams_unordered case
# against a copy of cc_cuda.cuh without the wait that orders calls on two
# streams: a mutation the test makes by patching the source (checked to change
# exactly one line), so that the product has no switch for it; the checker
# must find the races it brings back. No sanitizers, no optimization: only the
# checker's verdict counts here.
$(BUILD)/cuda/mutant/no-stream-order/cc_cuda.cuh: cc_cuda.cuh
	@mkdir -p $(@D)
	sed 's/cudaStreamWaitEvent(s, g->ev, 0)/cudaSuccess/' cc_cuda.cuh >$@.tmp
	@test "$$(diff cc_cuda.cuh $@.tmp | grep -c '^>')" = 1 || \
	  { echo "the no-stream-order mutation no longer applies to cc_cuda.cuh (tests/cuda/test_cuda_hb.cu)" >&2; rm -f $@.tmp; exit 1; }
	mv $@.tmp $@

$(BUILD)/cuda/test_cuda_hb_unordered: tests/cuda/test_cuda_hb.cu tests/cuda/cuda_emu.cpp $(BUILD)/cuda/mutant/no-stream-order/cc_cuda.cuh $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(if $(NVCC),,$(error no nvcc: install the CUDA toolkit or set NVCC))
	$(NVCC) $(NVWARN) $(EMU_ARCH) -O0 -g -I$(BUILD)/cuda/mutant/no-stream-order -I. -Itests -Itests/cuda -cudart=none -DCC_CUDA_EMU_HOOKS -DHB_UNORDERED=1 -o $@ tests/cuda/test_cuda_hb.cu tests/cuda/cuda_emu.cpp -lpthread -lm

# The tests that run on the CPU only (the fold's body, the watchdog's logic,
# init without a GPU) need no fat binary either, nor an optimized host side
# (nvcc's host compile of cc.h at -O2 is half of each build: 29 -> 14 s).
$(BUILD)/cuda/test_cuda_fold $(BUILD)/cuda/test_cuda_watchdog $(BUILD)/cuda/test_cuda_init: NVCC_ARCH = $(EMU_ARCH)
$(BUILD)/cuda/test_cuda_fold $(BUILD)/cuda/test_cuda_watchdog $(BUILD)/cuda/test_cuda_init: NVFLAGS = -O0 -g

$(BUILD)/cuda/%: tests/cuda/%.cu $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(if $(NVCC),,$(error no nvcc: install the CUDA toolkit or set NVCC))
	$(NVCC) $(NVWARN) $(NVCC_ARCH) $(NVFLAGS) -I. -Itests -Itests/cuda -o $@ $< -lpthread -lm

$(BUILD)/cuda/%: examples/%.cu $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(if $(NVCC),,$(error no nvcc: install the CUDA toolkit or set NVCC))
	$(NVCC) $(NVWARN) $(NVCC_ARCH) $(NVFLAGS) -I. -o $@ $< -lpthread -lm

$(BUILD)/cuda/cc_bench_cuda: bench/cc_bench.c $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(if $(NVCC),,$(error no nvcc: install the CUDA toolkit or set NVCC))
	$(NVCC) -x cu $(NVWARN) $(NVCC_ARCH) $(NVFLAGS) -I. -o $@ $< -lpthread -lm

# (cc.h's implementation inside, CC_STATIC: only what it calls; -pthread, no libm)
$(BUILD)/ccrun: tools/ccrun.c cc.h
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) -o $@ $< -pthread

$(BUILD)/cc_bench: bench/cc_bench.c cc.h
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) -I. -o $@ $< $(LDLIBS)

$(BUILD)/crypto_bench: bench/crypto_bench.c cc.h tests/unit/crypto_extra.h
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) -I. -o $@ $< $(LDLIBS)

$(BUILD)/%_perf: $(BUILD)/cc_bench
	ln -f $< $@ 2>/dev/null || cp -f $< $@

# The other libraries' benchmarks (bench/peers, run by bench/compare.sh):
# `make peers`. bench_mpi with Debian's mpicc.openmpi and mpicc.mpich (without
# -Werror: the MPI headers are not ours); bash bench/peers/install.sh installs them.
PEERS_BINS = $(BUILD)/peers/bench_mpi.openmpi $(BUILD)/peers/bench_mpi.mpich \
             $(BUILD)/peers/c2c_latency $(BUILD)/peers/memcpy_bw
peers: $(PEERS_BINS)

$(BUILD)/peers/bench_mpi.%: bench/peers/bench_mpi.c
	@mkdir -p $(@D)
	mpicc.$* -std=c99 -Wall -Wextra -Wpedantic -O2 -o $@ $< -lm

$(BUILD)/peers/c2c_latency $(BUILD)/peers/memcpy_bw: $(BUILD)/peers/%: bench/peers/%.c
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) -O2 -o $@ $< -pthread

$(BUILD)/cc_impl.o: cc.h
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) -DCC_IMPLEMENTATION -x c -c -o $@ cc.h

$(LINKED): $(BUILD)/cc_impl.o
$(LINKED): IMPL = -DCC_NO_IMPLEMENTATION $(BUILD)/cc_impl.o

$(BUILD)/examples/%: examples/%.c cc.h $(wildcard examples/*.h)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) -I. -o $@ $< $(IMPL) $(LDLIBS)

$(BUILD)/tests/%: %.c cc.h $(TEST_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) -I. -Itests -o $@ $< $(IMPL) $(LDLIBS)

$(BUILD)/probes/%: %.c cc.h $(TEST_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) -I. -Itests -o $@ $< $(IMPL) $(LDLIBS)

# The test suite (tests/run.sh, the tests and their tiers in tests/tiers); ends
# with "N passed, N failed". make test: the quick tier, every feature area in
# minutes. make check: everything CI runs, three suites in a row: the full
# suite (make test-full), then it under ASan+UBSan (make sanitize) and under
# ThreadSanitizer (make tsan), those two with CC_TEST_QUICK=1 (fewer large
# cases).
SANITIZER = $(if $(findstring -fsanitize=thread,$(CFLAGS)),thread,$(if $(findstring -fsanitize,$(CFLAGS)),address))
TORCH_ENV = $(if $(findstring -fsanitize,$(CFLAGS)),,TORCH_PYTHON=$(TORCH_PYTHON) TORCH_DIR=$(TORCH_DIR))
.PHONY: test-full check
test: all torch-if-here cuda-if-here
	@CC_TEST_TIER=$${CC_TEST_TIER:-quick} CC_TEST_SANITIZER=$(SANITIZER) $(TORCH_ENV) bash tests/run.sh $(BUILD)

test-full: all torch-if-here
	@CC_TEST_TIER=full CC_TEST_SANITIZER=$(SANITIZER) $(TORCH_ENV) bash tests/run.sh $(BUILD)

# make test's CUDA test (tests/cuda/test_cuda.sh builds the rest itself), beside
# the other builds, where nvcc is and the build has no sanitizer
.PHONY: cuda-if-here
cuda-if-here:
	@$(if $(and $(NVCC),$(if $(findstring -fsanitize,$(CFLAGS)),,1)),$(MAKE) --no-print-directory $(BUILD)/cuda/test_cuda_emu,true)

check:
	$(MAKE) test-full
	CC_TEST_QUICK=1 $(MAKE) sanitize
	CC_TEST_QUICK=1 $(MAKE) tsan

# torch_cc (docs/torch.md): cc as a torch.distributed backend, a C++ extension
# built by torch.utils.cpp_extension against the torch that TORCH_PYTHON
# imports, into TORCH_DIR (default $(BUILD)/python): `PYTHONPATH=$(BUILD)/python
# python3 prog.py` with init_process_group("cc"). TORCH_PYTHON defaults to the
# first python3 (or python) on PATH whose torch imports (looked for once, and
# only when a torch rule needs it). `make test` builds it first where torch
# imports (not in the sanitizer builds) and runs its tests with that Python;
# `make torch-test` builds and runs them alone (what CI runs for a second
# torch: TORCH_PYTHON=/usr/bin/python3 TORCH_DIR=build/python-system). --force:
# setuptools would keep an extension whose .cpp is older than it, though cc.h
# changed; the extension is rebuilt too when TORCH_PYTHON changes.
TORCH_PYTHON ?= $(eval TORCH_PYTHON := $(or $(shell for p in $$(which -a python3 python 2>/dev/null); do \
  "$$p" -c 'import torch' >/dev/null 2>&1 && { echo "$$p"; break; }; done),python3))$(TORCH_PYTHON)
TORCH_DIR ?= $(BUILD)/python
.PHONY: torch torch-if-here torch-test FORCE
# (a prerequisite of test beside all: with -j its one compiler runs beside the others)
torch-if-here:
	@$(if $(findstring -fsanitize,$(CFLAGS)),,if $(TORCH_PYTHON) -c 'import torch' 2>/dev/null; then \
	  $(MAKE) --no-print-directory torch TORCH_PYTHON=$(TORCH_PYTHON) || echo "make torch failed: tests/torch/test_torch.sh says so"; fi)
torch: $(TORCH_DIR)/torch_cc/.built
$(TORCH_DIR)/torch_cc/.built: cc.h torch_cc/setup.py $(wildcard torch_cc/csrc/*.cpp torch_cc/torch_cc/*.py) \
    $(TORCH_DIR)/.torch-python
	@mkdir -p $(TORCH_DIR)
	cd torch_cc && $(TORCH_PYTHON) setup.py -q build --force --build-base $(abspath $(TORCH_DIR)).tmp \
	  --build-lib $(abspath $(TORCH_DIR))
	@touch $@
# the interpreter it was built for: rewritten (and so a rebuild) only when it changes
$(TORCH_DIR)/.torch-python: FORCE
	@mkdir -p $(@D); [ "$$(cat $@ 2>/dev/null)" = '$(TORCH_PYTHON)' ] || echo '$(TORCH_PYTHON)' > $@
FORCE:
# the torch tests alone, with their summary line (N passed, N failed)
torch-test: torch
	TORCH_PYTHON=$(TORCH_PYTHON) TORCH_DIR=$(TORCH_DIR) TORCH_TEST_SUMMARY=1 bash tests/torch/test_torch.sh $(BUILD)

# A real four-rank job, readable output; builds only what it runs.
run: $(BUILD)/ccrun $(BUILD)/examples/tour
	$(BUILD)/ccrun -n 4 $(BUILD)/examples/tour

# nccl-tests' all_reduce sweep over 2 ranks: 8 B to 64 MiB, x4, float sum.
bench: $(BUILD)/ccrun $(BUILD)/all_reduce_perf
	$(BUILD)/ccrun -n 2 $(BUILD)/all_reduce_perf -b 8 -e 64M -f 4 -d float -o sum

# busbw against message size for cc, Open MPI, MPICH and Gloo, one panel per
# collective (bench/plot.py), into OUT (default $(BUILD)/perf.png). RESULTS:
# bench/compare.sh runs' folders, each configuration drawn from the first that
# holds it; default the latest run ($(BUILD)/compare/latest) when there is one,
# else the results committed in bench/results. The plot the documentation
# shows changes only when asked for: make plot OUT=docs/perf.png, which draws
# the committed results unless RESULTS is given. Needs matplotlib (Debian's
# python3-matplotlib) in python3 or /usr/bin/python3.
PLOT_COMMITTED = bench/results/shm bench/results/tcp
OUT      = $(BUILD)/perf.png
RESULTS ?= $(if $(filter docs/perf.png,$(OUT)),$(PLOT_COMMITTED),$(if $(wildcard $(BUILD)/compare/latest/results.tsv),$(BUILD)/compare/latest,$(PLOT_COMMITTED)))
PLOT_PYTHON ?= $(firstword $(foreach p,python3 /usr/bin/python3,$(shell $(p) -c 'import matplotlib' >/dev/null 2>&1 && echo $(p))) python3)
plot:
	$(PLOT_PYTHON) bench/plot.py -o $(OUT) $(RESULTS)

sanitize:
	$(MAKE) BUILD=build-asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" test-full

tsan:
	$(MAKE) BUILD=build-tsan CFLAGS="-O1 -g -fsanitize=thread" test-full

clean:
	rm -rf build build-asan build-tsan

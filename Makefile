# btrace-bpf build. `make` builds, `make test` runs every test, `make bench`
# runs the benchmarks. V=1 shows the commands.
#
# Conventions (new files are picked up without editing this file):
#   bpf/NAME.bpf.c        -> build/bpf/NAME.bpf.o -> skeletons/NAME.skel.h
#   user/lib/*.c          -> build/libbtrace.a     (libbtrace: the buffer and in-process
#                                                   app tracing; no libbpf; public header
#                                                   user/lib/btrace.h)
#   user/*.c user/*/*.c   -> build/btrace-bpf      (the tool; main() in user/main.c;
#                                                   one folder per subsystem, see README)
#   Every user/ folder is on the include path: sources include "name.h". A folder
#   uses only the folders below it (util < lib < probes < dump < record < report
#   < export < main): scripts/check_layout.py, run by `make test`, checks that
#   and that no files include or call each other in a circle.
#   tests/unit/test_*.c   -> build/tests/test_*    (deterministic, no root)
#   tests/stress/stress_*.c -> build/tests/stress_*{,.tsan,.asan}
#   tests/bpf/*.c, *.cc   -> build/tests/*         (workload programs for real-kernel tests)
#   tests/fuzz/fuzz_*.c   -> build/tests/fuzz_*    (libFuzzer, clang)
#   bench/*.c             -> build/bench/*
#   examples/*.c          -> build/examples/*      (programs using libbtrace, btrace.h)

CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
ARCH     := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/')
OUT      := build
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes -pthread -D_GNU_SOURCE
USER_DIRS  := user $(patsubst %/,%,$(sort $(dir $(wildcard user/*/*.c user/*/*.h))))
CPPFLAGS += $(addprefix -I,$(USER_DIRS)) -Ibpf -I$(OUT) -Iskeletons
# capstone: instruction boundaries of probed functions (user/probes/insn_bounds.c);
# libcrypto: the sha256 of dump manifests (user/dump/manifest.c);
# libdw: source lines and inlined calls of stack frames (user/probes/dwarf_lines.c)
LDLIBS_BPF := -lbpf -ldw -lelf -lcapstone -lz -lcrypto -lpthread -lm

ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJS   := $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS      := $(patsubst bpf/%.bpf.c,skeletons/%.skel.h,$(BPF_SRCS))
LIB_SRCS   := $(wildcard user/lib/*.c)
LIB_HDRS   := $(wildcard user/lib/*.h)
LIB_OBJS   := $(patsubst user/%.c,$(OUT)/user/%.o,$(LIB_SRCS))
USER_SRCS  := $(wildcard user/*.c) $(filter-out $(LIB_SRCS),$(wildcard user/*/*.c))
USER_HDRS  := $(wildcard user/*.h user/*/*.h)
USER_OBJS  := $(patsubst user/%.c,$(OUT)/user/%.o,$(USER_SRCS))
TOOL_OBJS  := $(filter-out $(OUT)/user/main.o,$(USER_OBJS))
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRCS))
STRESS_SRCS:= $(wildcard tests/stress/stress_*.c)
STRESS_BINS:= $(foreach s,$(patsubst tests/stress/%.c,$(OUT)/tests/%,$(STRESS_SRCS)),$(s) $(s).tsan $(s).asan)
WORK_SRCS  := $(wildcard tests/bpf/*.c)
WORK_BINS  := $(patsubst tests/bpf/%.c,$(OUT)/tests/%,$(WORK_SRCS)) \
	      $(patsubst tests/bpf/%.cc,$(OUT)/tests/%,$(wildcard tests/bpf/*.cc))
FUZZ_SRCS  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS  := $(patsubst tests/fuzz/%.c,$(OUT)/tests/%,$(FUZZ_SRCS))
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(patsubst bench/%.c,$(OUT)/bench/%,$(filter-out bench/func_bench.c,$(BENCH_SRCS))) $(addprefix $(OUT)/bench/func_bench_,plain instr manual pg)
EXAMPLE_BINS := $(patsubst examples/%.c,$(OUT)/examples/%,$(wildcard examples/*.c))

.PHONY: all tool tests test bench clean deps check-deps run
all: tool tests

tool: $(OUT)/btrace-bpf
tests: $(UNIT_BINS) $(STRESS_BINS) $(WORK_BINS) $(FUZZ_BINS) $(BENCH_BINS) $(EXAMPLE_BINS)

# Dependencies are installed on demand (idempotent; a no-op when present).
deps:
	$(Q)scripts/install-deps.sh

check-deps:
	$(Q)scripts/install-deps.sh --check >/dev/null 2>&1 || scripts/install-deps.sh

# ---- BPF pipeline: vmlinux.h -> .bpf.o -> .skel.h ---------------------------
vmlinux/vmlinux.h:
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D); if [ -r /sys/kernel/btf/vmlinux ]; then \
		$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@; \
	else echo "btrace-bpf: kernel has no BTF (/sys/kernel/btf/vmlinux missing); need CONFIG_DEBUG_INFO_BTF=y" >&2; exit 1; fi

$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c vmlinux/vmlinux.h $(wildcard bpf/*.h) | $(OUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Ibpf -c $< -o $@
	$(Q)llvm-strip -g $@ 2>/dev/null || true

skeletons/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# ---- user space ---------------------------------------------------------------
# libbtrace needs only its own headers and bpf/events.h (no libbpf, no skeletons).
$(OUT)/user/lib/%.o: user/lib/%.c $(LIB_HDRS) bpf/events.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(OUT)/libbtrace.a: $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(OUT)/user/%.o: user/%.c $(USER_HDRS) $(wildcard bpf/*.h) $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(OUT)/libbtrace-tool.a: $(TOOL_OBJS) $(OUT)/user/lib/btrace_buffer.o
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(OUT)/btrace-bpf: $(OUT)/user/main.o $(OUT)/libbtrace-tool.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS_BPF) -o $@

# ---- tests --------------------------------------------------------------------
# Buffer-only unit tests link libbtrace.a alone: proves it needs no libbpf.
$(OUT)/tests/test_buffer%: tests/unit/test_buffer%.c $(OUT)/libbtrace.a tests/harness.h | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $< $(OUT)/libbtrace.a -lpthread -o $@

# Units of libbtrace itself (they need nothing of the tool).
$(OUT)/tests/test_tick_rate: tests/unit/test_tick_rate.c $(OUT)/libbtrace.a tests/harness.h | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $< $(OUT)/libbtrace.a -lpthread -o $@

$(OUT)/tests/test_%: tests/unit/test_%.c $(OUT)/libbtrace-tool.a tests/harness.h $(SKELS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $< $(OUT)/libbtrace-tool.a $(LDLIBS_BPF) -o $@

# The app-tracing stress test compiles the app library and the reader in.
APP_STRESS_SRCS := user/lib/btrace_app.c user/lib/btrace_funcs.c user/lib/tick_rate.c user/lib/app_write.c user/record/app_reader.c
APP_STRESS_DEPS := $(APP_STRESS_SRCS) user/lib/btrace.h user/lib/app_shm.h user/lib/app_write.h user/lib/tick_rate.h user/record/app_reader.h user/lib/btrace_buffer.c
$(OUT)/tests/stress_app: tests/stress/stress_app.c $(APP_STRESS_DEPS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $< $(APP_STRESS_SRCS) user/lib/btrace_buffer.c -lpthread -o $@
$(OUT)/tests/stress_app.tsan: tests/stress/stress_app.c $(APP_STRESS_DEPS) | $(OUT)/tests
	$(call msg,CC-TSAN,$@)
	$(Q)$(CLANG) $(CPPFLAGS) -Itests -std=gnu11 -D_GNU_SOURCE -O1 -g -fsanitize=thread $< $(APP_STRESS_SRCS) user/lib/btrace_buffer.c -lpthread -o $@
$(OUT)/tests/stress_app.asan: tests/stress/stress_app.c $(APP_STRESS_DEPS) | $(OUT)/tests
	$(call msg,CC-ASAN,$@)
	$(Q)$(CLANG) $(CPPFLAGS) -Itests -std=gnu11 -D_GNU_SOURCE -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer $< $(APP_STRESS_SRCS) user/lib/btrace_buffer.c -lpthread -o $@

# The function-tracing stress test: the test itself is instrumented.
FUNC_STRESS_SRCS := $(APP_STRESS_SRCS) user/dump/func_batch.c user/lib/btrace_buffer.c
FUNC_STRESS_DEPS := $(APP_STRESS_DEPS) user/dump/func_batch.c user/dump/func_batch.h
$(OUT)/tests/stress_funcs: tests/stress/stress_funcs.c $(FUNC_STRESS_DEPS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) -c -finstrument-functions $< -o $@.o
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $@.o $(FUNC_STRESS_SRCS) -lpthread -o $@
$(OUT)/tests/stress_funcs.tsan: tests/stress/stress_funcs.c $(FUNC_STRESS_DEPS) | $(OUT)/tests
	$(call msg,CC-TSAN,$@)
	$(Q)$(CLANG) $(CPPFLAGS) -Itests -std=gnu11 -D_GNU_SOURCE -O1 -g -fsanitize=thread -finstrument-functions -c $< -o $@.o
	$(Q)$(CLANG) $(CPPFLAGS) -Itests -std=gnu11 -D_GNU_SOURCE -O1 -g -fsanitize=thread $@.o $(FUNC_STRESS_SRCS) -lpthread -o $@
$(OUT)/tests/stress_funcs.asan: tests/stress/stress_funcs.c $(FUNC_STRESS_DEPS) | $(OUT)/tests
	$(call msg,CC-ASAN,$@)
	$(Q)$(CLANG) $(CPPFLAGS) -Itests -std=gnu11 -D_GNU_SOURCE -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -finstrument-functions -c $< -o $@.o
	$(Q)$(CLANG) $(CPPFLAGS) -Itests -std=gnu11 -D_GNU_SOURCE -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer $@.o $(FUNC_STRESS_SRCS) -lpthread -o $@

# The trigger-thread stress test compiles the trigger runtime in (three
# ways) and takes the rest of the tool (the BPF side it never loads) from the archive.
TRIG_STRESS_SRCS := user/record/triggers.c user/dump/trigger_spec.c user/util.c
TRIG_STRESS_DEPS := $(TRIG_STRESS_SRCS) user/record/triggers.h user/dump/trigger_spec.h bpf/trigger.h $(OUT)/libbtrace-tool.a
$(OUT)/tests/stress_triggers: tests/stress/stress_triggers.c $(TRIG_STRESS_DEPS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $< $(TRIG_STRESS_SRCS) $(OUT)/libbtrace-tool.a $(LDLIBS_BPF) -o $@
$(OUT)/tests/stress_triggers.tsan: tests/stress/stress_triggers.c $(TRIG_STRESS_DEPS) | $(OUT)/tests
	$(call msg,CC-TSAN,$@)
	$(Q)$(CLANG) $(CPPFLAGS) -Itests -std=gnu11 -D_GNU_SOURCE -O1 -g -fsanitize=thread $< $(TRIG_STRESS_SRCS) $(OUT)/libbtrace-tool.a $(LDLIBS_BPF) -o $@
$(OUT)/tests/stress_triggers.asan: tests/stress/stress_triggers.c $(TRIG_STRESS_DEPS) | $(OUT)/tests
	$(call msg,CC-ASAN,$@)
	$(Q)$(CLANG) $(CPPFLAGS) -Itests -std=gnu11 -D_GNU_SOURCE -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer $< $(TRIG_STRESS_SRCS) $(OUT)/libbtrace-tool.a $(LDLIBS_BPF) -o $@

# Stress tests compile the buffer in with the test, three ways.
$(OUT)/tests/stress_%: tests/stress/stress_%.c user/lib/btrace_buffer.c user/lib/btrace_buffer.h | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $< user/lib/btrace_buffer.c -lpthread -o $@
$(OUT)/tests/stress_%.tsan: tests/stress/stress_%.c user/lib/btrace_buffer.c user/lib/btrace_buffer.h | $(OUT)/tests
	$(call msg,CC-TSAN,$@)
	$(Q)$(CLANG) $(CPPFLAGS) -Itests -std=gnu11 -D_GNU_SOURCE -O1 -g -fsanitize=thread $< user/lib/btrace_buffer.c -lpthread -o $@
$(OUT)/tests/stress_%.asan: tests/stress/stress_%.c user/lib/btrace_buffer.c user/lib/btrace_buffer.h | $(OUT)/tests
	$(call msg,CC-ASAN,$@)
	$(Q)$(CLANG) $(CPPFLAGS) -Itests -std=gnu11 -D_GNU_SOURCE -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer $< user/lib/btrace_buffer.c -lpthread -o $@

$(OUT)/examples/%: examples/%.c $(OUT)/libbtrace.a user/lib/btrace.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) -Iuser/lib $< $(OUT)/libbtrace.a -lpthread -o $@

# Function tracing targets: built with -finstrument-functions (gcc, and
# clang for app_funcs_clang), linked with libbtrace, which never is.
$(OUT)/tests/app_funcs: tests/bpf/app_funcs.c $(OUT)/libbtrace.a user/lib/btrace.h | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) -O1 -fno-inline -finstrument-functions $< $(OUT)/libbtrace.a -lpthread -o $@
$(OUT)/tests/app_funcs_clang: tests/bpf/app_funcs.c $(OUT)/libbtrace.a user/lib/btrace.h | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CLANG) $(CPPFLAGS) -Itests -std=gnu11 -D_GNU_SOURCE -g -O1 -fno-inline -finstrument-functions $< $(OUT)/libbtrace.a -lpthread -o $@
tests: $(OUT)/tests/app_funcs_clang

# Applications traced in-process link the app library (libbtrace.a).
$(OUT)/tests/app_%: tests/bpf/app_%.c $(OUT)/libbtrace.a user/lib/btrace.h | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $< $(OUT)/libbtrace.a -lpthread -o $@

# C++ workloads (symbol resolution of demangled names).
$(OUT)/tests/%: tests/bpf/%.cc | $(OUT)/tests
	$(call msg,CXX,$@)
	$(Q)$(CXX) $(CPPFLAGS) -Itests -O1 -g -fno-inline $< -o $@

# Call-stack workloads: user stacks come from frame pointers.
$(OUT)/tests/stack_%: tests/bpf/stack_%.c | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) -O1 -fno-inline -fno-omit-frame-pointer $< -lpthread -o $@

# The same built by clang: DWARF without .debug_aranges (clang's default),
# which the source-line lookup must not need.
$(OUT)/tests/stack_workload_clang: tests/bpf/stack_workload.c | $(OUT)/tests
	$(call msg,CLANG,$@)
	$(Q)$(CLANG) $(CPPFLAGS) -Itests -g -O1 -fno-inline -fno-omit-frame-pointer $< -lpthread -o $@

tests: $(OUT)/tests/stack_workload_clang

$(OUT)/tests/%: tests/bpf/%.c | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) -O1 -fno-inline $< -lpthread -o $@

$(OUT)/tests/fuzz_%: tests/fuzz/fuzz_%.c $(filter-out user/main.c,$(USER_SRCS)) user/lib/btrace_buffer.c $(SKELS) | $(OUT)/tests
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) $(CPPFLAGS) -std=gnu11 -D_GNU_SOURCE -O1 -g -fsanitize=fuzzer,address,undefined $< $(filter user/%.c,$^) $(LDLIBS_BPF) -o $@

# In-process tracing benchmarks (bench/app_*.c) link the app library instead;
# app_bench_lttng is app_bench.c with LTTng-UST (liblttng-ust-dev, --bench deps),
# made by scripts/bench_app.sh on demand, not by `make`.
$(OUT)/bench/app_%: bench/app_%.c $(OUT)/libbtrace.a user/lib/btrace.h $(wildcard bench/*.h) | $(OUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Ibench $(CFLAGS) -O2 $< $(OUT)/libbtrace.a -lpthread -lm -o $@
$(OUT)/bench/app_bench_lttng: bench/app_bench.c bench/app_bench_tp.h $(OUT)/libbtrace.a user/lib/btrace.h | $(OUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Ibench $(CFLAGS) -O2 -DAPP_BENCH_TP_UNIT -c $< -o $@-tp.o
	$(Q)$(CC) $(CPPFLAGS) -Ibench $(CFLAGS) -O2 -DWITH_LTTNG $< $@-tp.o $(OUT)/libbtrace.a -llttng-ust -ldl -lpthread -lm -o $@

# Function tracing bench (scripts/bench_funcs.sh): one source, four builds
# at the same optimisation (-O1, no inlining, so every call stays a call).
FUNC_BENCH_CFLAGS = $(CPPFLAGS) $(CFLAGS) -O1 -fno-inline -fno-optimize-sibling-calls
$(OUT)/bench/func_bench_plain: bench/func_bench.c $(OUT)/libbtrace.a user/lib/btrace.h | $(OUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(FUNC_BENCH_CFLAGS) $< $(OUT)/libbtrace.a -lpthread -o $@
$(OUT)/bench/func_bench_instr: bench/func_bench.c $(OUT)/libbtrace.a user/lib/btrace.h | $(OUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(FUNC_BENCH_CFLAGS) -finstrument-functions $< $(OUT)/libbtrace.a -lpthread -o $@
$(OUT)/bench/func_bench_manual: bench/func_bench.c $(OUT)/libbtrace.a user/lib/btrace.h | $(OUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(FUNC_BENCH_CFLAGS) -DMANUAL $< $(OUT)/libbtrace.a -lpthread -o $@
$(OUT)/bench/func_bench_pg: bench/func_bench.c | $(OUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(FUNC_BENCH_CFLAGS) -DNO_BTRACE -pg $< -o $@

$(OUT)/bench/%: bench/%.c $(OUT)/libbtrace-tool.a $(wildcard bench/*.h) $(SKELS) | $(OUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Ibench $(CFLAGS) -O2 $< $(OUT)/libbtrace-tool.a $(LDLIBS_BPF) -o $@

test: check-deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/run.sh

bench: check-deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/bench.sh

# The tests that load BPF on Debian bookworm's 6.1 kernel (under qemu) and on
# the running kernel, with the binaries built here (scripts/test-kernels.sh).
.PHONY: test-kernels
test-kernels: check-deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/test-kernels.sh

# btrace-bpf against ftrace and perf at equal memory on the real kernel
# (scripts/compare_tracers.sh, about 10 minutes; not part of `make bench`).
.PHONY: bench-compare
bench-compare: check-deps
	$(Q)$(MAKE) --no-print-directory tool $(OUT)/bench/cmp_load $(OUT)/bench/btd_events
	$(Q)scripts/install-deps.sh --check --bench >/dev/null 2>&1 || scripts/install-deps.sh --bench
	$(Q)scripts/compare_tracers.sh

# The main job with sensible defaults: `make run` (extra flags: ARGS="-e sched,syscalls").
run: check-deps
	$(Q)$(MAKE) --no-print-directory tool
	$(Q)if [ "$$(id -u)" -ne 0 ]; then exec sudo $(OUT)/btrace-bpf record $(ARGS); else exec $(OUT)/btrace-bpf record $(ARGS); fi

$(OUT)/bpf $(OUT)/tests $(OUT)/bench:
	$(Q)mkdir -p $@

clean:
	rm -rf $(OUT) skeletons/*.skel.h vmlinux/vmlinux.h

.DELETE_ON_ERROR:
.SECONDARY:

# Version, install/uninstall and the Debian packages.
include mk/dist.mk

# sandpit: a Jupyter kernel in C that runs Python cells in a sandboxed worker.
#
#   make demo      install what is missing, build, run the tour notebook
#   make test      install what is missing, build, run every test
#   make bench     sandpit, ipykernel and a null kernel side by side (build/bench.json),
#                  then sandpit serve beside Jupyter Server (build/bench-gateway.json),
#                  then its E2B API beside sandpit run (build/bench-e2b.json)
#   make fuzz      libFuzzer on the protocol and the link, FUZZ_SECONDS each (default 60)
#   make soak      20,000 mixed cells through one kernel, memory and descriptors shown
#   make install   PREFIX=/usr/local DESTDIR= (the two programs; then `sandpit install`)
#
# SANITIZE=address, SANITIZE=undefined or SANITIZE=thread builds into
# build-<name>/ and runs the same tests against that binary; `make test` itself
# runs the unit tests and a few integration files under the first two at once
# (sanitize-test), and the unit tests of the threaded C under the third
# (tsan-test).

PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR  ?= $(PREFIX)/bin
# The interpreter that is embedded and that the tests drive jupyter_client with:
# Debian's, whatever `python3` is first on PATH.
PYTHON  := /usr/bin/python3

SANITIZE ?=
comma    := ,
BUILD    := build$(if $(SANITIZE),-$(subst $(comma),-,$(SANITIZE)))
# V=1 shows the compiler's command lines.
V ?= 0
Q := $(if $(filter 1,$(V)),,@)

PKGS     := libzmq jansson libcrypto libseccomp sqlite3 libxml-2.0 libwebsockets
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
# Python's headers are not ours to keep warning-free: include them as system ones.
PY_CFLAGS  := $(patsubst -I%,-isystem %,$(shell pkg-config --cflags python3-embed 2>/dev/null))
PY_LIBS    := $(shell pkg-config --libs python3-embed 2>/dev/null)
PY_VERSION := $(shell $(PYTHON) -c 'import platform; print(platform.python_version())' 2>/dev/null)
PY_SHORT   := $(subst $() ,.,$(wordlist 1,2,$(subst ., ,$(PY_VERSION))))

WARN   := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
          -Wformat=2 -Wvla -fno-common
CFLAGS ?= -O2 -g
# A packager's own flags (dpkg-buildflags, rpm's %optflags) reach every compile
# (CPPFLAGS, CFLAGS) and every link (CPPFLAGS, CFLAGS, LDFLAGS), as in make's own
# rules.
CPPFLAGS ?=
LDFLAGS  ?=
SAN_FLAGS := $(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all)
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(SAN_FLAGS) -I. -I$(BUILD) \
              $(PKG_CFLAGS) $(PY_CFLAGS) -DSANDPIT_PY_VERSION='"$(PY_VERSION)"' \
              -DSANDPIT_PY_SHORT='"$(PY_SHORT)"' \
              -DSANDPIT_PYTHON='"$(PYTHON)"' -MMD -MP
# libm for the loop's ceil(), which GCC inlines and clang calls.
LDLIBS := $(PKG_LIBS) $(PY_LIBS) -lpthread -lm
# The worker's own program, sandpit-worker (kernel/worker_main.c), which is the
# worker under some sanitizers only (below), is linked with CPython's static
# library where there is one, as Debian's python3 itself is: a program that is
# not position-independent, with no libpython.so to load and relocate before
# main, and that exports CPython's symbols for the extension modules it loads.
# Elsewhere it links libpython.so, as sandpit's unit tests do.
PY_LIBPL     := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("LIBPL"))' 2>/dev/null)
PY_STATIC    := $(wildcard $(PY_LIBPL)/libpython$(PY_SHORT).a)
PY_STATIC_LIBS := -no-pie -Wl$(comma)--export-dynamic -Wl$(comma)--whole-archive $(PY_STATIC) \
                  -Wl$(comma)--no-whole-archive -lexpat -lz -lm -ldl
WORKER_LIBS  := $(PKG_LIBS) -lpthread \
                $(if $(PY_STATIC),$(PY_STATIC_LIBS),$(PY_LIBS))
# Otherwise, and so in every build but those, the worker is a library,
# sandpit-worker.so, that the supervisor has Python's own program run with
# (LD_PRELOAD; kernel/worker_preload.c): CPython's code (2.6 MB) is then shared
# with every other Python on the machine rather than the worker's alone. The
# library links no CPython, static or shared: its calls go to the program's own
# (Debian's python3 has CPython linked in and exports it; a python3 built with
# libpython.so loads it, and the worker uses that one). The program is the one
# this Python runs, by its real path: the headers and the ABI that sandpit is
# compiled for.
PY_PROGRAM   := $(shell $(PYTHON) -c 'import os, sys; print(os.path.realpath(sys.executable))' 2>/dev/null)
# Under GCC's AddressSanitizer and UBSan, whose runtimes are shared libraries, it
# is that library too, as in production: AddressSanitizer's runtime must be the
# first library a program loads, so the supervisor preloads it before the
# worker's. The program above is the worker under the sanitizers whose runtime
# Python's program cannot load: ThreadSanitizer's, and clang's (linked into
# programs only).
SAN_LIST     := $(subst $(comma), ,$(SANITIZE))
SAN_ASAN_SO  := $(if $(filter address,$(SAN_LIST)),$(realpath $(shell $(CC) -print-file-name=libasan.so 2>/dev/null)))
SAN_UBSAN_SO := $(if $(filter undefined,$(SAN_LIST)),$(realpath $(shell $(CC) -print-file-name=libubsan.so 2>/dev/null)))
SAN_CLANG    := $(if $(SANITIZE),$(findstring clang,$(shell $(CC) --version 2>/dev/null)))
SAN_AS_LIBRARY := $(and $(if $(filter-out address undefined,$(SAN_LIST)),,yes),\
                        $(if $(SAN_CLANG),,yes),\
                        $(if $(filter address,$(SAN_LIST)),$(SAN_ASAN_SO),yes),\
                        $(if $(filter undefined,$(SAN_LIST)),$(SAN_UBSAN_SO),yes))
WORKER_PYTHON := $(if $(SANITIZE),$(if $(SAN_AS_LIBRARY),$(PY_PROGRAM)),$(PY_PROGRAM))
ALL_CFLAGS   += $(if $(WORKER_PYTHON),-DSANDPIT_WORKER_PYTHON='"$(WORKER_PYTHON)"')
ALL_CFLAGS   += $(if $(and $(WORKER_PYTHON),$(SAN_ASAN_SO)),\
                  -DSANDPIT_WORKER_PRELOAD_FIRST='"$(SAN_ASAN_SO) "')

PROTOCOL_SRC := $(wildcard protocol/*.c)
SANDBOX_SRC  := $(wildcard sandbox/*.c)
# kernel/ and each of its folders (supervisor/, worker/, link/, ...): a new folder
# needs no change here.
KERNEL_SRC   := $(filter-out kernel/main.c kernel/worker_main.c kernel/worker_preload.c kernel/serve_main.c \
                  kernel/mem/pidcache.c,\
                  $(wildcard kernel/*.c kernel/*/*.c))
PY_SRC       := $(sort $(wildcard kernel/python/sandpit/*.py))
LOGOS        := kernelspec/logo-32x32.png kernelspec/logo-64x64.png kernelspec/logo-svg.svg

LIB_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(PROTOCOL_SRC) $(SANDBOX_SRC) $(KERNEL_SRC)) \
           $(BUILD)/embedded_runtime.o $(BUILD)/embedded_logos.o
BIN     := $(BUILD)/sandpit
# The kernel gateway (`sandpit serve` runs it): a program of its own, so that
# libwebsockets is loaded by it alone and not by every kernel (kernel/serve_main.c).
SERVE_PROGRAM := $(BUILD)/sandpit-serve
WORKER_PROGRAM := $(BUILD)/sandpit-worker
WORKER_LIBRARY := $(BUILD)/sandpit-worker.so
WORKER  := $(if $(WORKER_PYTHON),$(WORKER_LIBRARY),$(WORKER_PROGRAM))
# The library's objects, compiled again as position-independent code, with
# nothing exported but the __libc_start_main that replaces Python's main.
PIC_OBJ := $(patsubst $(BUILD)/%,$(BUILD)/pic/%,$(LIB_OBJ))
PIC_A   := $(BUILD)/libsandpit-pic.a
# Both programs are linked from one archive, so that each takes only the objects
# it calls (the supervisor none of kernel/worker/, the worker none of the
# supervisor's), and --as-needed keeps only the libraries those use: the
# worker loads no ZeroMQ, OpenSSL or SQLite, the supervisor no CPython.
LIB_A   := $(BUILD)/libsandpit.a

# The benchmark's own programs (tests/bench/), not part of the sandpit binary: a
# null kernel on the protocol layer alone, the floor of every figure, and a client
# on the client library.
BENCH_BINS := $(BUILD)/bench-null-kernel $(BUILD)/bench-client
BENCH_LIBS := $(shell pkg-config --libs libzmq jansson libcrypto 2>/dev/null)
PROTOCOL_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(PROTOCOL_SRC))
CLIENT_OBJ := $(patsubst %,$(BUILD)/kernel/client/%.o,client launch connfile) \
              $(BUILD)/kernel/util/monotime.o $(BUILD)/kernel/util/zrecv.o \
              $(BUILD)/kernel/util/fsutil.o $(BUILD)/sandbox/tfile.o

UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
# The runner and the fakes that the unit tests share: every tests/unit/*.c but
# the test_*.c themselves.
UNIT_SUPPORT := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%.o,\
                  $(filter-out tests/unit/test_%.c,$(wildcard tests/unit/*.c)))
# Made by a pattern rule only, so make would delete them as intermediate files
# after linking, and the next make (unit-test, after all) would compile and
# link every unit test again.
.SECONDARY: $(UNIT_SUPPORT)

.PHONY: all deps test unit-test integration-test format-check format demo bench \
        install uninstall clean fuzz fuzz-replay sanitize-test tsan-test analyse soak

all: $(BIN) $(WORKER) $(SERVE_PROGRAM)

$(LIB_A): $(LIB_OBJ)
	@echo "  AR    $@"
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# Bound at start (-z now): once the first cell is answered, the supervisor gives
# back the libraries' symbol tables (kernel/mem/loadpages.h), which a call bound
# lazily would read again at its first use, cell after cell.
$(BIN): $(BUILD)/kernel/main.o $(BUILD)/kernel/mem/pidcache.o $(LIB_A)
	@echo "  LD    $@"
	$(Q)$(CC) $(ALL_CFLAGS) $(CPPFLAGS) $(LDFLAGS) -o $@ $^ -Wl,--as-needed -Wl,-z,now $(LDLIBS)

$(SERVE_PROGRAM): $(BUILD)/kernel/serve_main.o $(LIB_A)
	@echo "  LD    $@"
	$(Q)$(CC) $(ALL_CFLAGS) $(CPPFLAGS) $(LDFLAGS) -o $@ $^ -Wl,--as-needed -Wl,-z,now $(LDLIBS)

$(WORKER_PROGRAM): $(BUILD)/kernel/worker_main.o $(LIB_A)
	@echo "  LD    $@"
	$(Q)$(CC) $(ALL_CFLAGS) $(CPPFLAGS) $(LDFLAGS) -o $@ $^ -Wl,--as-needed $(WORKER_LIBS)

$(PIC_A): $(PIC_OBJ)
	@echo "  AR    $@"
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(WORKER_LIBRARY): $(BUILD)/pic/kernel/worker_preload.o $(PIC_A)
	@echo "  LD    $@"
	$(Q)$(CC) $(ALL_CFLAGS) $(CPPFLAGS) $(LDFLAGS) -shared -o $@ $^ -Wl,--as-needed $(PKG_LIBS) -ldl -lpthread

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC    $< (pic)"
	$(Q)$(CC) $(ALL_CFLAGS) $(CPPFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(BUILD)/pic/embedded_%.o: $(BUILD)/embedded_%.c
	@mkdir -p $(dir $@)
	@echo "  CC    $< (pic)"
	$(Q)$(CC) $(ALL_CFLAGS) $(CPPFLAGS) -fPIC -fvisibility=hidden -Ikernel -c -o $@ $<

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	$(Q)$(CC) $(ALL_CFLAGS) $(CPPFLAGS) -c -o $@ $<

# The worker's Python runtime lives inside the worker's program and the
# kernelspec logos inside sandpit's, so that neither needs files beside it.
$(BUILD)/embedded_runtime.c: kernel/embed.py $(PY_SRC)
	@mkdir -p $(dir $@)
	@echo "  EMBED $@"
	$(Q)$(PYTHON) kernel/embed.py $@ runtime $(PY_SRC)

$(BUILD)/embedded_logos.c: kernel/embed.py $(LOGOS)
	@mkdir -p $(dir $@)
	@echo "  EMBED $@"
	$(Q)$(PYTHON) kernel/embed.py $@ logos $(LOGOS)

$(BUILD)/embedded_%.o: $(BUILD)/embedded_%.c
	@echo "  CC    $<"
	$(Q)$(CC) $(ALL_CFLAGS) $(CPPFLAGS) -Ikernel -c -o $@ $<

# Compiled and linked at once, so the test's .d file makes its headers
# prerequisites of the program: they are not given to the compiler (clang
# refuses a header among a link's inputs).
$(BUILD)/tests/%: tests/unit/%.c $(UNIT_SUPPORT) $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LD    $@"
	$(Q)$(CC) $(ALL_CFLAGS) $(CPPFLAGS) $(LDFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS)

# The supervisor's getpid() (kernel/mem/pidcache.c) is linked into the programs that
# use ZeroMQ as a server, the null kernel too: its floor must not pay a cost that
# sandpit does not.
$(BUILD)/tests/test_pidcache: $(BUILD)/kernel/mem/pidcache.o

$(BUILD)/bench-null-kernel: $(BUILD)/tests/bench/null_kernel.o $(BUILD)/kernel/mem/pidcache.o \
                            $(PROTOCOL_OBJ)
	@echo "  LD    $@"
	$(Q)$(CC) $(ALL_CFLAGS) $(CPPFLAGS) $(LDFLAGS) -o $@ $^ $(BENCH_LIBS)

$(BUILD)/bench-client: $(BUILD)/tests/bench/bench_client.o $(CLIENT_OBJ) $(PROTOCOL_OBJ)
	@echo "  LD    $@"
	$(Q)$(CC) $(ALL_CFLAGS) $(CPPFLAGS) $(LDFLAGS) -o $@ $^ $(BENCH_LIBS)

# --- dependencies ---------------------------------------------------------------
# Every Debian package that the build, the tests and the demo need.
DEB_BUILD := gcc make pkg-config libzmq3-dev libjansson-dev libssl-dev libseccomp-dev \
             libsqlite3-dev libxml2-dev python3-dev clang-format libwebsockets-dev
# clang and its runtime build the fuzz harnesses (libFuzzer), for the tests only.
DEB_TEST  := clang libclang-rt-14-dev python3-pytest python3-jupyter-client python3-jupyter-kernel-test \
             python3-zmq python3-ipykernel python3-nbclient python3-nbformat \
             jupyter-nbconvert python3-nbconvert jupyter-console tmux \
             python3-numpy python3-pandas python3-matplotlib python3-pil python3-jedi \
             python3-comm python3-ipywidgets python3-rich python3-pygments \
             jupyter-notebook python3-notebook \
             python3-widgetsnbextension chromium chromium-driver python3-selenium \
             jupyter-server python3-jupyter-server python3-websocket nodejs jq python3-venv nginx-light \
             python3-cryptography python3-jinja2 python3-yaml cppcheck
DEB_ALL   := $(DEB_BUILD) $(DEB_TEST)
# JavaScript clients the tests drive sandpit with (the MCP SDK, JupyterLab's
# services), pinned by tests/node/package-lock.json.
NODE_DIR  := tests/node

deps:
	@installed=$$(dpkg-query -W -f='$${Package} $${Status}\n' $(DEB_ALL) 2>/dev/null \
	    | awk '/install ok installed/ {print $$1}'); \
	missing=$$(for p in $(DEB_ALL); do \
	    echo "$$installed" | grep -qx "$$p" || echo $$p; done); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	echo "sandpit: missing Debian packages:" $$missing; \
	if [ "$$(id -u)" = 0 ]; then \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	else \
	    echo "run: sudo apt-get update && sudo apt-get install -y" $$missing; exit 1; \
	fi
	@$(MAKE) -s --no-print-directory $(NODE_DIR)/node_modules/.package-lock.json

# Debian's own nodejs comes without npm (a separate package); NodeSource's has it.
$(NODE_DIR)/node_modules/.package-lock.json: $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	@command -v npm >/dev/null || { \
	    if [ "$$(id -u)" = 0 ]; then \
	        DEBIAN_FRONTEND=noninteractive apt-get install -y npm; \
	    else echo "run: sudo apt-get install -y npm"; exit 1; fi; }
	cd $(NODE_DIR) && npm ci --no-audit --no-fund

# --- tests ------------------------------------------------------------------------
test: deps
	@$(MAKE) --no-print-directory all $(UNIT_BINS) $(BENCH_BINS)
	@$(MAKE) --no-print-directory format-check
	@$(MAKE) --no-print-directory analyse
	@$(MAKE) --no-print-directory unit-test
	@$(MAKE) --no-print-directory fuzz-replay
	@$(MAKE) --no-print-directory integration-test
	@$(MAKE) --no-print-directory sanitize-test
	@$(MAKE) --no-print-directory tsan-test
	@echo "sandpit: all tests passed"

unit-test: $(UNIT_BINS)
	@fail=0; for t in $(UNIT_BINS); do $$t || fail=1; done; \
	if [ $$fail = 0 ]; then echo "unit tests: all passed"; \
	else echo "unit tests: FAILED"; exit 1; fi

integration-test: $(BIN) $(WORKER) $(SERVE_PROGRAM) $(BENCH_BINS)
	SANDPIT_BIN=$(abspath $(BIN)) $(PYTHON) -m pytest -q -rs -p no:cacheprovider tests

# The unit tests and a few integration files that go through every part of the
# supervisor (cells, crashes and malformed messages, hostile messages, the worker's
# cgroup, the gateway's handshake and communication port) under AddressSanitizer and
# UBSan together. Any report, from any process
# (the supervisor at its exit included, where no test would see it), fails the run.
SAN_KINDS   := address,undefined
SAN_BUILD   := build-$(subst $(comma),-,$(SAN_KINDS))
SAN_REPORTS := $(abspath $(SAN_BUILD))/reports
SAN_TESTS   := tests/integration/test_execute.py tests/integration/test_robustness.py \
               tests/sandbox/test_messages.py tests/integration/test_enterprise_gateway.py \
               "tests/integration/test_programs.py::test_the_worker_is_pythons_program_with_sandpits_library" \
               "tests/sandbox/test_memory.py::test_the_group_is_gone_after_the_worker_ends" \
               tests/trusted/test_hidden_paths_room.py
# A worker that a test crashes on purpose must die of its signal, as without
# sanitizers: the runtime's own handlers are off.
SAN_ENV     := ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=1:log_path=$(SAN_REPORTS)/asan \
               UBSAN_OPTIONS=print_stacktrace=1:log_path=$(SAN_REPORTS)/ubsan

sanitize-test:
	@$(MAKE) --no-print-directory SANITIZE=$(SAN_KINDS) all \
	    $(patsubst $(BUILD)/%,$(SAN_BUILD)/%,$(UNIT_BINS))
	@rm -rf $(SAN_REPORTS) && mkdir -p $(SAN_REPORTS)
	@$(SAN_ENV) $(MAKE) --no-print-directory SANITIZE=$(SAN_KINDS) unit-test
	@$(SAN_ENV) SANDPIT_BIN=$(abspath $(SAN_BUILD))/sandpit \
	    $(PYTHON) -m pytest -q -rs -p no:cacheprovider $(SAN_TESTS)
	@if [ -n "$$(ls -A $(SAN_REPORTS))" ]; then cat $(SAN_REPORTS)/*; \
	    echo "sanitizers: reports above"; exit 1; fi; echo "sanitizers: no reports"

# ThreadSanitizer on the C that runs on several threads at once: the worker's
# output pump, its end of the link (the reader thread's turn) and its block
# allocator, and the supervisor's history query thread, as their unit tests.
# Built by clang, so that this run also keeps the tree clang-clean under -Werror
# (the programs are built too). The programs themselves are not run under it
# here: the supervisor's ZeroMQ is not instrumented, and its lock-free queues
# read as races to a ThreadSanitizer that cannot see their atomics (README).
TSAN_BUILD := build-thread
TSAN_TESTS := test_pump test_uplink test_blocks test_history_thread
TSAN_BINS  := $(patsubst %,$(TSAN_BUILD)/tests/%,$(TSAN_TESTS))

# Reports go to files (the pump's test makes fd 2 a pipe of the pump's).
TSAN_REPORTS := $(abspath $(TSAN_BUILD))/reports

tsan-test:
	@$(MAKE) --no-print-directory SANITIZE=thread CC=clang all $(TSAN_BINS)
	@rm -rf $(TSAN_REPORTS) && mkdir -p $(TSAN_REPORTS)
	@fail=0; for t in $(TSAN_BINS); do \
	    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:log_path=$(TSAN_REPORTS)/tsan \
	    $$t || fail=1; done; \
	if [ -n "$$(ls -A $(TSAN_REPORTS))" ]; then cat $(TSAN_REPORTS)/*; fail=1; fi; \
	if [ $$fail = 0 ]; then echo "thread sanitizer: no reports"; \
	else echo "thread sanitizer: reports or failures above"; exit 1; fi

C_FILES := $(wildcard protocol/*.[ch] sandbox/*.[ch] kernel/*.[ch] kernel/*/*.[ch] \
                     tests/unit/*.[ch] tests/fuzz/*.[ch] tests/bench/*.[ch])
format-check:
	@clang-format --dry-run --Werror $(C_FILES) && echo "format: clean"

format:
	clang-format -i $(C_FILES)

# cppcheck over the project's C as it is built (_GNU_SOURCE, the worker a library
# preloaded into Python's program): any finding of its warning, portability and
# performance checks fails the run. jansson's iteration macros are in
# tests/cppcheck/jansson.cfg (cppcheck reads no system header); what it gets
# wrong is in tests/cppcheck/suppressions.txt, each entry with its reason.
CPPCHECK_FLAGS := --quiet --std=c11 --enable=warning,portability,performance \
                  --inline-suppr --error-exitcode=1 -D_GNU_SOURCE \
                  -DSANDPIT_WORKER_PYTHON='"$(PY_PROGRAM)"' -I. \
                  --library=posix,gnu,python,openssl,sqlite3,tests/cppcheck/jansson.cfg \
                  --suppressions-list=tests/cppcheck/suppressions.txt \
                  --template='{file}:{line}: {severity} [{id}] {message}'
analyse:
	@cppcheck -j2 $(CPPCHECK_FLAGS) $(filter %.c,$(C_FILES)) && echo "cppcheck: no findings"

# --- fuzzing ------------------------------------------------------------------------
# libFuzzer harnesses (clang's) for what reads untrusted bytes: the wire splitter and
# the signature check, the message parser, the connection file, the link codec, the
# check of outputs for active content, an upload's chunked framing, multipart body and
# path (E2B's POST /files), each under AddressSanitizer and UBSan. `make fuzz` runs each for FUZZ_SECONDS and
# keeps what it finds in build-fuzz/; `make test` replays each seed corpus once.
FUZZ_CC      := clang
FUZZ_BUILD   := build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := wire msg connection link load active upload
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE $(WARN) -g -O1 -fno-omit-frame-pointer -I. \
                $(PKG_CFLAGS)
LINK_SRC     := kernel/link/link.c kernel/link/frames.c kernel/mem/prefault.c
ACTIVE_SRC   := kernel/supervisor/active.c kernel/supervisor/active_html.c \
                kernel/supervisor/active_lists.c kernel/util/base64.c
UPLOAD_SRC   := kernel/serve/chunked.c kernel/serve/multipart.c kernel/serve/e2b_path.c
FUZZ_LIB_OBJ := $(patsubst %.c,$(FUZZ_BUILD)/%.o,$(PROTOCOL_SRC) $(LINK_SRC) $(ACTIVE_SRC) \
                  $(UPLOAD_SRC))
FUZZ_BINS    := $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZ_TARGETS))
.SECONDARY: $(FUZZ_LIB_OBJ)

$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC    $@"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) $(CPPFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJ)
	@echo "  LD    $@"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) $(CPPFLAGS) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS)

# One harness at a time, to leave the other cores to whoever shares the machine.
fuzz: deps $(FUZZ_BINS)
	@for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/crashes; \
	    echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	    $(FUZZ_BUILD)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        -artifact_prefix=$(FUZZ_BUILD)/crashes/$$t- \
	        $(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t || exit 1; \
	done; echo "fuzz: nothing found"

fuzz-replay: $(FUZZ_BINS)
	@for t in $(FUZZ_TARGETS); do \
	    $(FUZZ_BUILD)/fuzz_$$t -runs=0 tests/fuzz/corpus/$$t 2>$(FUZZ_BUILD)/replay-$$t.log \
	    || { cat $(FUZZ_BUILD)/replay-$$t.log; echo "fuzz replay: $$t FAILED"; exit 1; }; \
	done; echo "fuzz replay: every corpus passed"

# --- demo and benchmark -------------------------------------------------------------
demo: deps
	@$(MAKE) --no-print-directory all
	$(BIN) install --user
	$(PYTHON) -m jupyter nbconvert --to notebook --execute examples/tour.ipynb \
	    --ExecutePreprocessor.kernel_name=sandpit --output-dir $(BUILD) --output tour
	@echo "sandpit: the executed tour notebook is $(BUILD)/tour.ipynb"

# A few minutes: sandpit, ipykernel and the null kernel (the floor), one table;
# then sandpit serve beside Jupyter Server (GATEWAY_BENCH_* counts: tests/bench/bench_gateway.py),
# then its E2B API beside sandpit run (E2B_BENCH_* counts: tests/bench/bench_e2b.py).
bench: deps all $(BENCH_BINS)
	$(PYTHON) tests/bench/bench.py --sandpit $(abspath $(BIN)) \
	    --null-kernel $(abspath $(BUILD)/bench-null-kernel) \
	    --client $(abspath $(BUILD)/bench-client) --json $(BUILD)/bench.json
	$(PYTHON) tests/bench/bench_gateway.py --sandpit $(abspath $(BIN)) \
	    --json $(BUILD)/bench-gateway.json
	$(PYTHON) tests/bench/bench_e2b.py --sandpit $(abspath $(BIN)) --json $(BUILD)/bench-e2b.json

# The short soak (1,250 cells) is part of `make test` (tests/soak/test_soak.py).
soak: deps all
	$(PYTHON) tests/soak/soak.py --sandpit $(abspath $(BIN)) --cells 20000 --every 5000

# --- install ----------------------------------------------------------------------
install: $(BIN) $(WORKER) $(SERVE_PROGRAM)
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/sandpit
	install -m 755 $(SERVE_PROGRAM) $(DESTDIR)$(BINDIR)/sandpit-serve
	install -m 755 $(WORKER) $(DESTDIR)$(BINDIR)/$(notdir $(WORKER))
	@echo "installed $(DESTDIR)$(BINDIR)/sandpit, sandpit-serve and $(notdir $(WORKER)); now run: sandpit install --user"

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/sandpit $(DESTDIR)$(BINDIR)/sandpit-serve \
	    $(DESTDIR)$(BINDIR)/sandpit-worker \
	    $(DESTDIR)$(BINDIR)/sandpit-worker.so

clean:
	rm -rf build build-address build-undefined $(SAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)

-include $(shell find $(BUILD) $(FUZZ_BUILD) -name '*.d' 2>/dev/null)

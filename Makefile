# drape — one entry point: all, test, demo, bench, fuzz, install, clean.
#
# Knobs: SANITIZE=address,undefined (or thread), DEBUG=1, WERROR=1,
#        BUILD=dir (default build, or build/san-... when SANITIZE is set),
#        SIMD=avx512|avx2|sse2|scalar (default: what the build machine supports).

CC      ?= cc
CXX     ?= c++
PREFIX  ?= /usr/local

ifdef SANITIZE
BUILD   ?= build/san-$(subst $(comma),-,$(SANITIZE))
else
BUILD   ?= build
endif
comma := ,

# -O3: the solver's kernels gain about 6 % over -O2 on sheet300 (make bench,
# 1 thread, 80.8 against 85.3 ms per frame, medians of 3 interleaved runs);
# no -ffast-math, so every result stays IEEE and bit-identical across builds.
# -fno-math-errno: nothing reads errno after a math call, and with it sqrtf
# is one instruction instead of a call that checks for a negative argument.
OPT     := -O3 -fno-math-errno
ifdef DEBUG
OPT     := -O0 -g3
endif

# SIMD width chosen at build time; the portable fallback is plain C.
ifndef SIMD
SIMD := $(shell grep -q -w avx2 /proc/cpuinfo 2>/dev/null && grep -q -w fma /proc/cpuinfo 2>/dev/null && echo avx2 || echo sse2)
ifeq ($(SIMD),avx2)
# (A subshell per test: a bare `exit` would end the whole $(shell) before
# the `|| echo avx2` fallback, leaving SIMD empty on AVX2-only machines.)
SIMD := $(shell (for f in avx512f avx512vl avx512dq avx512bw; do grep -q -w $$f /proc/cpuinfo 2>/dev/null || exit 1; done) && echo avx512 || echo avx2)
endif
endif
ifeq ($(SIMD),avx512)
ARCHFLAGS := -mavx2 -mfma
# AVX-512 for the solver's objects only (server/sim/*.c, the pattern rule
# below): libdrape.so and the CLI's own code keep the AVX2 baseline, so a
# client built here still loads on an artist's desktop without AVX-512.
# 16 lanes, 32 registers and mask registers: sheet300 on one thread takes
# about 15 % less CPU per frame than the avx2 build, with the same bits
# (docs/speed.md, "One thread").
SIM_ARCHFLAGS := -mavx512f -mavx512vl -mavx512dq -mavx512bw
else ifeq ($(SIMD),avx2)
ARCHFLAGS := -mavx2 -mfma
else ifeq ($(SIMD),sse2)
ARCHFLAGS := -msse2
else
ARCHFLAGS :=
endif

WARN     := -Wall -Wextra -Wpedantic -Wmissing-prototypes -Wshadow -Wno-unused-parameter
ifdef WERROR
WARN     += -Werror
endif
CPPFLAGS += -Iinclude -I. -D_GNU_SOURCE -DDRAPE_SIMD_$(SIMD)=1
# -ffp-contract=off: no compiler-made FMAs, so the solver's SIMD kernels and
# its scalar reference compute the same bits in every build (gcc's ISO C mode
# already defaults to it; clang's does not, nor does g++ in any mode). The
# C++ file (the field's trilinear sampling) gets it too: test_sim_sdfband's
# test_sampling_is_the_unfused_trilinear checks the sampled bits.
CFLAGS   += -std=c17 $(OPT) -g $(WARN) $(ARCHFLAGS) -ffp-contract=off -fPIC -pthread -MMD -MP
# Hidden unless a public header (include/drape/*.h) declares it: what
# libdrape.so exports is its API and nothing else (client/libdrape.map).
CFLAGS   += -fvisibility=hidden
# The C++ file (OpenVDB's templates) under the sanitizers at -O1: at -O3
# with ASan and UBSan g++ took about 25 minutes of CPU on it alone, the
# largest part of `make test` on 2 cores; at -O1 5.6 minutes (the same
# instrumentation; -O1 is what ASan's documentation recommends). And with
# line tables only (-g1): the full debug information of OpenVDB's
# instantiated templates was a third of that compile (see
# docs/testsuite.md); a sanitizer's report still names every frame's function, file
# and line.
CXXOPT   := $(OPT)
CXXDEBUG := -g
ifdef SANITIZE
ifndef DEBUG
CXXOPT   := -O1
CXXDEBUG := -g1
endif
endif
CXXFLAGS += -std=c++17 $(CXXOPT) $(CXXDEBUG) -Wall -Wextra $(ARCHFLAGS) -ffp-contract=off -fPIC -pthread -MMD -MP
LDFLAGS  += -pthread
ifdef SANITIZE
CFLAGS   += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=undefined
CXXFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=$(SANITIZE)
endif

VDB_LIBS := -lopenvdb -ltbb -lImath-3_1 -lstdc++
NET_LIBS := -lnng -lmsgpackc
UV_LIBS  := -luv
JSON_LIBS := -lcjson
SYS_LIBS := -lm -lpthread
# libpng: the CLI's preview images only (client/cli/png.c), never libdrape.
PNG_LIBS := -lpng

SIM_C    := $(sort $(wildcard server/sim/*.c))
SIM_CXX  := $(sort $(wildcard server/sim/*.cc))
PROTO_C  := $(sort $(wildcard proto/*.c))
SRV_C    := $(filter-out server/main.c,$(sort $(wildcard server/*.c)))
CLIENT_C := $(sort $(wildcard client/*.c))
CLI_C    := $(sort $(wildcard client/cli/*.c))
UNIT_C   := $(sort $(wildcard tests/unit/test_*.c))
BENCH_C  := $(sort $(wildcard tests/bench/*.c))
DEMO_C   := $(sort $(wildcard examples/*.c))
# tests/integration/itest.c holds the helpers every integration program
# shares, grid.c the raw tests' cloth: linked into each program, not programs.
ITEST_C  := tests/integration/itest.c tests/integration/grid.c
INTEG_C  := $(filter-out $(ITEST_C),$(sort $(wildcard tests/integration/*.c)))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(patsubst %.cc,$(BUILD)/obj/%.o,$(1)))

# The C++ file first: it takes longer than any other (OpenVDB's templates),
# so under -j it starts at once and the C files share the other cores.
SIM_O    := $(call obj,$(SIM_CXX) $(SIM_C))
PROTO_O  := $(call obj,$(PROTO_C))
SRV_O    := $(call obj,$(SRV_C))
CLIENT_O := $(call obj,$(CLIENT_C))
CLI_O    := $(call obj,$(CLI_C))
ERROR_O  := $(call obj,server/sim/error.c)
# The solver's pure-C input definitions (parameter defaults and checks,
# material presets, the error table): all of the solver a client carries.
SIMDEFS_O := $(call obj,server/sim/params.c server/sim/material.c server/sim/error.c)

LIBSIM   := $(BUILD)/libdrape_sim.a
LIBSRV   := $(BUILD)/libdrape_srv.a
LIBDRAPE := $(BUILD)/libdrape.a
LIBDRAPE_SO := $(BUILD)/libdrape.so
DRAPED   := $(BUILD)/draped
DRAPE    := $(BUILD)/drape
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_C))
BENCH_BIN := $(if $(BENCH_C),$(BUILD)/bench)
DEMO_BIN := $(patsubst examples/%.c,$(BUILD)/examples/%,$(DEMO_C))
INTEG_BIN := $(patsubst tests/integration/%.c,$(BUILD)/itests/%,$(INTEG_C))

ALL_LIBS := $(LIBSRV) $(LIBDRAPE) $(LIBSIM) $(UV_LIBS) $(NET_LIBS) $(JSON_LIBS) $(VDB_LIBS) $(SYS_LIBS)

# Objects built through pattern rules are kept, so a second make (or make
# demo after make test) relinks nothing.
.SECONDARY:

.PHONY: all deps test test-unit test-integration demo bench fuzz install clean
.DEFAULT_GOAL := all

all: deps $(LIBSIM) $(LIBDRAPE) $(LIBDRAPE_SO) $(if $(SRV_C),$(DRAPED)) $(if $(CLI_C),$(DRAPE)) \
     $(UNIT_BIN) $(INTEG_BIN) $(BENCH_BIN) $(DEMO_BIN)

# Installs missing Debian packages (deploy/deps.sh holds the one list).
deps:
	@deploy/deps.sh --check || deploy/deps.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

# The solver's kernels at the chosen SIMD width (SIM_ARCHFLAGS above), but
# not its pure-C input definitions, which libdrape carries. The stamp
# rebuilds the solver when SIMD changes in an existing build directory.
$(filter-out $(SIMDEFS_O),$(SIM_O)): CFLAGS += $(SIM_ARCHFLAGS)
SIMD_STAMP := $(BUILD)/simd.$(SIMD)
$(SIMD_STAMP):
	@mkdir -p $(dir $@) && rm -f $(BUILD)/simd.* && touch $@
$(SIM_O): $(SIMD_STAMP)

# The solver's library carries the one codec object it shares with the
# scene reader: the rotation of a keyframe's Euler angles (proto/euler.h).
# Programs that link it alone (test_sim_*, embedders) need nothing else.
EULER_O  := $(call obj,proto/euler.c)
$(LIBSIM): $(SIM_O) $(EULER_O)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBSRV): $(SRV_O) $(ERROR_O)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $(SRV_O)

# libdrape carries the codec, the error table and the solver's definitions
# (parameter defaults, presets) so a client links one library.
$(LIBDRAPE): $(CLIENT_O) $(PROTO_O) $(SIMDEFS_O)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The shared library is what DCC plugins load next to their own OpenVDB and
# TBB: nng, msgpack-c and cJSON only, never the solver (ARCHITECTURE.md),
# exporting drape_* only. The SONAME's number changes when the ABI breaks;
# $(BUILD)/libdrape.so.1 lets programs linked against it run from the build.
LIBDRAPE_SONAME := libdrape.so.1
LIBDRAPE_MAP := client/libdrape.map
$(LIBDRAPE_SO): $(CLIENT_O) $(PROTO_O) $(SIMDEFS_O) $(LIBDRAPE_MAP)
	$(CC) -shared -Wl,-soname,$(LIBDRAPE_SONAME) -Wl,--version-script=$(LIBDRAPE_MAP) -Wl,--no-undefined \
		-Wl,--as-needed $(LDFLAGS) -o $@ $(CLIENT_O) $(PROTO_O) $(SIMDEFS_O) $(NET_LIBS) $(JSON_LIBS) $(SYS_LIBS)
	ln -sf libdrape.so $(BUILD)/$(LIBDRAPE_SONAME)

$(DRAPED): $(BUILD)/obj/server/main.o $(LIBSRV) $(LIBDRAPE) $(LIBSIM)
	$(CC) $(LDFLAGS) -o $@ $< $(ALL_LIBS)

$(DRAPE): $(CLI_O) $(LIBSRV) $(LIBDRAPE) $(LIBSIM)
	$(CC) $(LDFLAGS) -o $@ $(CLI_O) $(ALL_LIBS) $(PNG_LIBS)

# Unit tests link only the layer they test, named by prefix: test_sim_* the
# solver, test_proto_* the codec, test_client_* libdrape; the rest everything.
$(BUILD)/tests/test_sim_%: $(BUILD)/obj/tests/unit/test_sim_%.o $(LIBSIM)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(LIBSIM) $(VDB_LIBS) $(SYS_LIBS)

$(BUILD)/tests/test_proto_%: $(BUILD)/obj/tests/unit/test_proto_%.o $(PROTO_O) $(ERROR_O)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(PROTO_O) $(ERROR_O) $(NET_LIBS) $(SYS_LIBS)

$(BUILD)/tests/test_client_%: $(BUILD)/obj/tests/unit/test_client_%.o $(LIBDRAPE) $(LIBSIM)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(LIBDRAPE) $(LIBSIM) $(NET_LIBS) $(JSON_LIBS) $(VDB_LIBS) $(SYS_LIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(LIBSRV) $(LIBDRAPE) $(LIBSIM)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(ALL_LIBS)

$(BUILD)/bench: $(call obj,$(BENCH_C)) $(LIBSRV) $(LIBDRAPE) $(LIBSIM)
	$(CC) $(LDFLAGS) -o $@ $(call obj,$(BENCH_C)) $(ALL_LIBS)

# Integration tests start a real draped (found through $$DRAPED) and drive it.
$(BUILD)/itests/%: $(BUILD)/obj/tests/integration/%.o $(call obj,$(ITEST_C)) $(LIBSRV) $(LIBDRAPE) $(LIBSIM)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(call obj,$(ITEST_C)) $(ALL_LIBS)

# The program a DCC plugin is: public headers and libdrape.so, nothing else
# (tests/integration/libdrape.sh checks what it needs at run time).
$(BUILD)/itests/test_libdrape: $(BUILD)/obj/tests/integration/test_libdrape.o $(LIBDRAPE_SO)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(LIBDRAPE_SO) -Wl,-rpath,'$$ORIGIN/..'

$(BUILD)/examples/%: $(BUILD)/obj/examples/%.o $(LIBSRV) $(LIBDRAPE) $(LIBSIM)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(ALL_LIBS)

# The whole suite: unit, integration, fuzz corpus replay, then the unit tests
# again under AddressSanitizer + UndefinedBehaviorSanitizer. Last line of
# output: "N passed, M failed".
# `make test` and `make demo` build on every core even when typed without
# -j (a fresh machine's first build is otherwise serial: several minutes
# more on 2 cores). The packages come first, alone: the objects do not
# depend on the `deps` target, so under -j they would race the install.
NPROC := $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
PAR    = $(if $(findstring -j,$(MAKEFLAGS)),,-j$(NPROC))

# The sanitizer pass's longest compile (sdf_vdb.cc) starts in the background
# at the lowest priority before the plain build (tests/run.sh
# --start-san-vdb): it takes the CPU the build and the programs leave idle.
test:
	@$(MAKE) --no-print-directory deps
	@tests/run.sh --start-san-vdb
	@$(MAKE) --no-print-directory $(PAR) all
	@tests/run.sh $(BUILD)

# The unit programs' objects but the C++ file's: tests/run.sh builds these
# for the sanitizer pass while that file finishes compiling.
.PHONY: unit-c-objects
unit-c-objects: $(filter-out $(call obj,$(SIM_CXX)),$(SIM_O)) $(PROTO_O) $(SRV_O) $(CLIENT_O) \
		$(call obj,$(UNIT_C))

# The solver's SIMD stamp alone: tests/run.sh makes it before its two
# background makes (the wrapper and the C objects), which both depend on it.
.PHONY: simd-stamp
simd-stamp: $(SIMD_STAMP)

test-unit: all
	@tests/run.sh $(BUILD) unit

demo:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $(PAR) all
	@tests/demo.sh $(BUILD)

bench: all
	@$(BUILD)/bench

fuzz:
	@$(MAKE) -f tests/fuzz/fuzz.mk

# Fuzz corpus replay for `make test`: each target's LLVMFuzzerTestOneInput
# with tests/fuzz/replay.c as main(), built like everything else (no clang,
# no libFuzzer); tests/run.sh runs each on tests/fuzz/<target>/.
FUZZ_REPLAY := $(BUILD)/fuzz_replay_proto $(BUILD)/fuzz_replay_obj $(BUILD)/fuzz_replay_scene \
	       $(BUILD)/fuzz_replay_daemon $(BUILD)/fuzz_replay_pc2
all: $(FUZZ_REPLAY)
$(BUILD)/fuzz_replay_proto: $(call obj,tests/fuzz/replay.c tests/fuzz/fuzz_proto.c) $(PROTO_O) $(ERROR_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(NET_LIBS) $(SYS_LIBS)
$(BUILD)/fuzz_replay_obj: $(call obj,tests/fuzz/replay.c tests/fuzz/fuzz_obj.c client/obj.c client/readfile.c) $(ERROR_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(SYS_LIBS)
$(BUILD)/fuzz_replay_pc2: $(call obj,tests/fuzz/replay.c tests/fuzz/fuzz_pc2.c client/pointcache.c client/obj.c \
			     client/readfile.c) $(ERROR_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(SYS_LIBS)
$(BUILD)/fuzz_replay_scene: $(call obj,tests/fuzz/replay.c tests/fuzz/fuzz_scene.c) $(LIBDRAPE) $(LIBSIM)
	$(CC) $(LDFLAGS) -o $@ $(call obj,tests/fuzz/replay.c tests/fuzz/fuzz_scene.c) $(LIBDRAPE) $(LIBSIM) \
		$(NET_LIBS) $(JSON_LIBS) $(VDB_LIBS) $(SYS_LIBS)
# The daemon target wraps three functions (see tests/fuzz/fuzz_daemon.c).
FUZZ_DAEMON_WRAP := -Wl,--wrap=srv_control_reply -Wl,--wrap=getrandom -Wl,--wrap=srv_log
$(BUILD)/fuzz_replay_daemon: $(call obj,tests/fuzz/replay.c tests/fuzz/fuzz_daemon.c) $(LIBSRV) $(LIBDRAPE) $(LIBSIM)
	$(CC) $(LDFLAGS) $(FUZZ_DAEMON_WRAP) -o $@ $(call obj,tests/fuzz/replay.c tests/fuzz/fuzz_daemon.c) $(ALL_LIBS)

# The browser view's page (server/www, served by draped --http): npm ci of
# the pinned lockfile into BUILD/www-npm (the only network use of the build:
# the npm registry), then one esbuild bundle of src/app.js with three and
# @msgpack/msgpack into BUILD/www. The same lockfile gives the same bundle.
WWW_NPM  := $(BUILD)/www-npm
WWW_OUT  := $(BUILD)/www/app.js $(BUILD)/www/index.html $(BUILD)/www/app.css
all: $(WWW_OUT)
$(WWW_NPM)/node_modules/.package-lock.json: server/www/package.json server/www/package-lock.json
	@mkdir -p $(WWW_NPM)
	cp server/www/package.json server/www/package-lock.json $(WWW_NPM)/
	cd $(WWW_NPM) && npm ci --no-audit --no-fund --loglevel=error || { \
		echo "drape: npm ci failed: the browser view (server/www) needs the npm registry at build time" >&2; exit 1; }
	touch $@
$(BUILD)/www/app.js: server/www/src/app.js $(WWW_NPM)/node_modules/.package-lock.json
	@mkdir -p $(dir $@)
	NODE_PATH=$(abspath $(WWW_NPM)/node_modules) $(WWW_NPM)/node_modules/.bin/esbuild $< --bundle --minify \
		--format=iife --target=es2020 --legal-comments=eof --log-level=warning --outfile=$@
$(BUILD)/www/%: server/www/src/%
	@mkdir -p $(dir $@)
	cp $< $@

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/drape
	install -m 755 $(DRAPED) $(DRAPE) $(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/share/drape/www
	install -m 644 $(WWW_OUT) $(DESTDIR)$(PREFIX)/share/drape/www/

# The system service: unit, example config and man pages (deploy/, man/).
# The unit's ExecStart follows PREFIX; the example config is installed
# beside the live one, never over it (draped reads draped.json when it
# exists: copy the example and edit it).
SYSCONFDIR ?= /etc
MANDIR  ?= $(PREFIX)/share/man
SYSTEMD_UNIT_DIR ?= $(shell pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
.PHONY: install-service uninstall-service uninstall
install: install-service
uninstall: uninstall-service
install-service:
	install -d $(DESTDIR)$(SYSTEMD_UNIT_DIR) $(DESTDIR)$(SYSCONFDIR)/drape $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8
	sed 's|/usr/local/bin/draped|$(PREFIX)/bin/draped|' deploy/draped.service >$(DESTDIR)$(SYSTEMD_UNIT_DIR)/draped.service
	chmod 644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/draped.service
	install -m 644 deploy/draped.json $(DESTDIR)$(SYSCONFDIR)/drape/draped.json.example
	install -m 644 man/man1/drape.1 $(DESTDIR)$(MANDIR)/man1/drape.1
	install -m 644 man/man8/draped.8 $(DESTDIR)$(MANDIR)/man8/draped.8
uninstall-service:
	rm -f $(DESTDIR)$(SYSTEMD_UNIT_DIR)/draped.service $(DESTDIR)$(SYSCONFDIR)/drape/draped.json.example \
		$(DESTDIR)$(MANDIR)/man1/drape.1 $(DESTDIR)$(MANDIR)/man8/draped.8
	-rmdir $(DESTDIR)$(SYSCONFDIR)/drape 2>/dev/null

# libdrape for programs and plugins built against it (install-lib): the
# shared library as libdrape.so.1 with its libdrape.so development link, the
# static libraries, the public headers and drape.pc for pkg-config.
# uninstall-lib removes exactly those; uninstall-bin the two programs.
# ldconfig runs only for a real install (no DESTDIR), as root.
install: install-lib
uninstall: uninstall-lib uninstall-bin
.PHONY: install-lib uninstall-lib uninstall-bin uninstall
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
LIB_HEADERS := $(sort $(wildcard include/drape/*.h))
DRAPE_VERSION = $(shell sed -n 's/^\#define DRAPE_VERSION_[A-Z]* \([0-9][0-9]*\)$$/\1/p' include/drape/drape.h | paste -sd.)

install-lib: $(LIBDRAPE_SO) $(LIBDRAPE) $(LIBSIM) client/drape.pc.in
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/drape
	install -m 755 $(LIBDRAPE_SO) $(DESTDIR)$(LIBDIR)/$(LIBDRAPE_SONAME)
	ln -sf $(LIBDRAPE_SONAME) $(DESTDIR)$(LIBDIR)/libdrape.so
	install -m 644 $(LIBDRAPE) $(LIBSIM) $(DESTDIR)$(LIBDIR)/
	install -m 644 $(LIB_HEADERS) $(DESTDIR)$(INCLUDEDIR)/drape/
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(DRAPE_VERSION)|' client/drape.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/drape.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/drape.pc
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" -eq 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

uninstall-lib:
	rm -f $(DESTDIR)$(LIBDIR)/$(LIBDRAPE_SONAME) $(DESTDIR)$(LIBDIR)/libdrape.so
	rm -f $(DESTDIR)$(LIBDIR)/$(notdir $(LIBDRAPE)) $(DESTDIR)$(LIBDIR)/$(notdir $(LIBSIM))
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/drape/,$(notdir $(LIB_HEADERS)))
	rm -f $(DESTDIR)$(LIBDIR)/pkgconfig/drape.pc
	-rmdir $(DESTDIR)$(INCLUDEDIR)/drape 2>/dev/null
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" -eq 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

uninstall-bin:
	rm -f $(DESTDIR)$(PREFIX)/bin/$(notdir $(DRAPED)) $(DESTDIR)$(PREFIX)/bin/$(notdir $(DRAPE))
	rm -rf $(DESTDIR)$(PREFIX)/share/drape/www
	-rmdir $(DESTDIR)$(PREFIX)/share/drape 2>/dev/null

# The drape Python package (client/python/drape, pure Python over
# libdrape.so) into the system Python's path, where Debian's python3 and
# Blender both find it; `make install` does it too.
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
# Debian's python3 searches PREFIX/lib/python3.N/dist-packages for both
# /usr/local and /usr.
PYTHON_SITE ?= $(PREFIX)/lib/python$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')/dist-packages
.PHONY: install-python uninstall-python
install: install-python
install-python:
	install -d $(DESTDIR)$(PYTHON_SITE)/drape
	install -m 644 client/python/drape/*.py $(DESTDIR)$(PYTHON_SITE)/drape/
uninstall: uninstall-python
uninstall-python:
	rm -rf $(DESTDIR)$(PYTHON_SITE)/drape

# The Blender add-on as the zip Blender's Preferences > Add-ons > Install
# takes (client/blender/drape_cloth; tests/blender installs it from here).
BLENDER_ADDON := $(BUILD)/drape_cloth.zip
all: $(BLENDER_ADDON)
$(BLENDER_ADDON): $(sort $(wildcard client/blender/drape_cloth/*.py))
	@mkdir -p $(dir $@)
	rm -f $@ && cd client/blender && $(PYTHON) -m zipfile -c $(abspath $@) drape_cloth

clean:
	rm -rf build out

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

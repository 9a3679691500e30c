# libFuzzer targets (clang): the wire codec, the OBJ reader, the scene loader,
# and the daemon's request handler end to end (a real server in process).
#
#   make fuzz                                   builds them into build/fuzz/
#   make -f tests/fuzz/fuzz.mk run SECONDS=600  runs each in turn on its corpus
#   make -f tests/fuzz/fuzz.mk run-proto SECONDS=60     one target (proto|obj|scene|daemon|pc2)
#   make -f tests/fuzz/fuzz.mk seeds            rewrites the generated proto seeds
#   make -f tests/fuzz/fuzz.mk minimize         shrinks each corpus to its coverage
#
# Everything is compiled here from source with clang, into build/fuzz/ only,
# so no object is shared with the gcc build. The code under test gets
# coverage instrumentation and ASan + UBSan; the solver, which only the scene
# target links (for the parameter defaults and their validation), gets the
# sanitizers without coverage so the fuzzer's feedback stays on the loader.
# Corpora live in tests/fuzz/{proto,obj,scene}; `make test` replays them
# through build/fuzz_replay_* (tests/fuzz/replay.c, gcc).

FZ        := build/fuzz
FCC       := clang
FCXX      := clang++
SECONDS   ?= 600

FCPPFLAGS := -Iinclude -I. -D_GNU_SOURCE -DDRAPE_SIMD_sse2=1
FWARN     := -Wall -Wextra -Wno-unused-parameter
SAN       := address,undefined
FCFLAGS   := -std=c17 -g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=undefined -msse2 $(FWARN)
FCXXFLAGS := -std=c++17 -g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=undefined -msse2 -Wall
FLDFLAGS  := -fsanitize=fuzzer,$(SAN) -pthread

SIM_SRC   := $(sort $(wildcard server/sim/*.c))
SIM_CC    := $(sort $(wildcard server/sim/*.cc))
PROTO_SRC := $(sort $(wildcard proto/*.c))

# Instrumented (coverage + sanitizers) and plain-sanitized objects.
cov = $(patsubst %.c,$(FZ)/cov/%.o,$(1))
san = $(patsubst %.cc,$(FZ)/san/%.o,$(patsubst %.c,$(FZ)/san/%.o,$(1)))

SIM_OBJ   := $(call san,$(SIM_SRC) $(SIM_CC))
PROTO_OBJ := $(call cov,$(PROTO_SRC) server/sim/error.c)
OBJ_OBJ   := $(call cov,client/obj.c client/readfile.c server/sim/error.c)
PC2_OBJ   := $(call cov,client/pointcache.c client/obj.c client/readfile.c server/sim/error.c)
SCENE_OBJ := $(call cov,client/scene.c client/obj.c client/readfile.c proto/euler.c)
SRV_SRC   := $(filter-out server/main.c,$(sort $(wildcard server/*.c)))
DAEMON_OBJ := $(call cov,$(SRV_SRC) $(PROTO_SRC))

VDB_LIBS  := -lopenvdb -ltbb -lImath-3_1
TARGETS   := $(FZ)/fuzz_proto $(FZ)/fuzz_obj $(FZ)/fuzz_scene $(FZ)/fuzz_daemon $(FZ)/fuzz_pc2

.PHONY: all run run-proto run-obj run-scene run-daemon run-pc2 seeds minimize clean
.DEFAULT_GOAL := all

all: $(TARGETS)
	@echo "fuzz targets built in $(FZ)/: fuzz_proto fuzz_obj fuzz_scene fuzz_daemon fuzz_pc2"
	@echo "run all, one after another:   make -f tests/fuzz/fuzz.mk run SECONDS=600"
	@echo "run one:                      make -f tests/fuzz/fuzz.mk run-proto SECONDS=60"
	@echo "by hand: $(FZ)/fuzz_proto -dict=tests/fuzz/proto.dict tests/fuzz/proto"
	@echo "corpora: tests/fuzz/{proto,obj,scene,daemon,pc2}; make test replays them"

$(FZ)/cov/%.o: %.c
	@mkdir -p $(dir $@)
	$(FCC) $(FCPPFLAGS) $(FCFLAGS) -fsanitize=fuzzer-no-link,$(SAN) -MMD -MP -c $< -o $@

$(FZ)/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(FCC) $(FCPPFLAGS) $(FCFLAGS) -fsanitize=$(SAN) -MMD -MP -c $< -o $@

$(FZ)/san/%.o: %.cc
	@mkdir -p $(dir $@)
	$(FCXX) $(FCPPFLAGS) $(FCXXFLAGS) -fsanitize=$(SAN) -MMD -MP -c $< -o $@

$(FZ)/fuzz_proto: $(call cov,tests/fuzz/fuzz_proto.c) $(PROTO_OBJ)
	$(FCC) $(FLDFLAGS) -o $@ $^ -lmsgpackc -lm

$(FZ)/fuzz_obj: $(call cov,tests/fuzz/fuzz_obj.c) $(OBJ_OBJ)
	$(FCC) $(FLDFLAGS) -o $@ $^ -lm

$(FZ)/fuzz_pc2: $(call cov,tests/fuzz/fuzz_pc2.c) $(PC2_OBJ)
	$(FCC) $(FLDFLAGS) -o $@ $^ -lm

$(FZ)/fuzz_scene: $(call cov,tests/fuzz/fuzz_scene.c) $(SCENE_OBJ) $(SIM_OBJ)
	$(FCXX) $(FLDFLAGS) -o $@ $^ -lcjson $(VDB_LIBS) -lm

# The daemon's objects get coverage; the solver only the sanitizers.
$(FZ)/fuzz_daemon: $(call cov,tests/fuzz/fuzz_daemon.c) $(DAEMON_OBJ) $(SIM_OBJ)
	$(FCXX) $(FLDFLAGS) -Wl,--wrap=srv_control_reply -Wl,--wrap=getrandom -Wl,--wrap=srv_log \
		-o $@ $^ -luv -lnng -lmsgpackc -lcjson $(VDB_LIBS) -lm

$(FZ)/gen_daemon_seeds: $(call san,tests/fuzz/gen_daemon_seeds.c $(PROTO_SRC)) $(SIM_OBJ)
	$(FCXX) -fsanitize=$(SAN) -pthread -o $@ $^ -lmsgpackc $(VDB_LIBS) -lm

# The seed generator uses the real encoders (and the solver's defaults).
$(FZ)/gen_proto_seeds: $(call san,tests/fuzz/gen_proto_seeds.c $(PROTO_SRC)) $(SIM_OBJ)
	$(FCXX) -fsanitize=$(SAN) -pthread -o $@ $^ -lmsgpackc $(VDB_LIBS) -lm

seeds: $(FZ)/gen_proto_seeds $(FZ)/gen_daemon_seeds
	@mkdir -p tests/fuzz/proto tests/fuzz/daemon
	$(FZ)/gen_proto_seeds tests/fuzz/proto
	$(FZ)/gen_daemon_seeds tests/fuzz/daemon
	tests/fuzz/make_seeds.sh

run: $(TARGETS)
	tests/fuzz/fuzz_run.sh $(FZ) $(SECONDS) proto obj scene daemon pc2

run-proto run-obj run-scene run-daemon run-pc2: run-%: $(FZ)/fuzz_%
	tests/fuzz/fuzz_run.sh $(FZ) $(SECONDS) $*

minimize: $(TARGETS)
	tests/fuzz/fuzz_run.sh $(FZ) 0 proto obj scene daemon pc2

clean:
	rm -rf $(FZ)

-include $(shell find $(FZ) -name '*.d' 2>/dev/null)

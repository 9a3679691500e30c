#!/bin/sh
# Integration tests of the mesh collider fields kept on disk
# (server/fielddisk.c): tests/integration/fielddisk.sh BUILD_DIR.
# Prints PASS/FAIL lines and ends with "N passed, M failed".
#
# A daemon with a state folder builds the field of a mesh collider and
# stores it in STATE/fields/; a restarted daemon loads it instead of building
# it, and the frames are byte for byte those of a freshly built field (the
# in-process solver builds its own). A truncated file is refused, rebuilt
# and rewritten; --max-field-disk bounds the folder, oldest out first.
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DRAPE=${DRAPE:-$TOP/$B/drape}
DRAPED=${DRAPED:-$TOP/$B/draped}
T=$(mktemp -d /tmp/drape-fielddisk-XXXXXX)
export XDG_CACHE_HOME="$T/cache"
export TMPDIR="$T/tmp"
mkdir -p "$TMPDIR"
unset DRAPE_SERVER DRAPE_TOKEN
URL="ipc://$T/ctl.sock"
passed=0
failed=0
daemon_pid=

stop_daemon() {
	[ -n "$daemon_pid" ] || return 0
	kill "$daemon_pid" 2>/dev/null
	i=0
	while kill -0 "$daemon_pid" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
	kill -9 "$daemon_pid" 2>/dev/null
	wait "$daemon_pid" 2>/dev/null
	daemon_pid=
}
trap 'stop_daemon; rm -rf "$T"' EXIT
trap 'exit 130' INT TERM

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

# start_daemon LOG [OPTIONS...]: a daemon on $T/state, waited for until it answers.
start_daemon() {
	log=$1
	shift
	"$DRAPED" --listen "$URL" --state-dir "$T/state" --threads 1 --pool-threads 1 "$@" >"$log" 2>&1 &
	daemon_pid=$!
	i=0
	until "$DRAPE" status --server "$URL" >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 600 ] || ! kill -0 "$daemon_pid" 2>/dev/null; then
			fail daemon_start "$(tail -n 5 "$log")"
			return 1
		fi
		sleep 0.05
	done
}

# scene FILE VOXEL: a sheet dropped on the Spot mesh, its field at VOXEL m.
scene() {
	cat >"$1" <<JSON
{
  "fps": 24, "frames": 4, "substeps": 4, "iterations": 8,
  "cloth": {
    "mesh": {"grid": {"size": [1.2, 1.2], "resolution": [24, 24], "center": [0, 1.0, 0.1], "normal": [0, 1, 0]}},
    "material": "cotton"
  },
  "colliders": [{"mesh": "$TOP/tests/data/meshes/cj_spot.obj", "voxel_size": $2, "friction": 0.4}]
}
JSON
}
scene "$T/a.json" 0.02
scene "$T/b.json" 0.025

# same_frames NAME DIR_A DIR_B: all 4 frame files equal, byte for byte.
same_frames() {
	for k in 1 2 3 4; do
		f=frame_000$k.obj
		if [ ! -f "$2/$f" ] || ! cmp -s "$2/$f" "$3/$f"; then
			fail "$1" "$f differs between $2 and $3 (or is missing)"
			return 1
		fi
	done
	pass "$1"
}

# run_scene SCENE OUT: drape run against the daemon.
run_scene() {
	if ! "$DRAPE" run "$1" --server "$URL" --out "$2" --quiet --rm 2>"$T/run.err"; then
		fail "run_$(basename "$2")" "$(tail -c 300 "$T/run.err")"
		return 1
	fi
}

FIELDS="$T/state/fields"

# ---- The first daemon builds and stores ---------------------------------------
"$DRAPE" run "$T/a.json" --local --threads 1 --out "$T/fresh" --quiet || fail local_run "exit $?"
start_daemon "$T/d1.log" || exit 1
run_scene "$T/a.json" "$T/first"
stop_daemon
if grep -q "built a collider field" "$T/d1.log" && grep -q "field cache: stored" "$T/d1.log" &&
	[ "$(ls "$FIELDS" | grep -c '^[0-9a-f]\{32\}\.vdb$')" -eq 1 ] && [ "$(ls -A "$FIELDS" | wc -l)" -eq 1 ]; then
	pass first_daemon_builds_and_stores
else
	fail first_daemon_builds_and_stores "fields: $(ls -A "$FIELDS" 2>&1); log: $(grep -i field "$T/d1.log" | tail -n 3)"
fi
same_frames built_field_equals_local "$T/fresh" "$T/first"
file=$(ls "$FIELDS"/*.vdb 2>/dev/null | head -n 1)
size=$(wc -c <"$file" 2>/dev/null || echo 0)

# ---- A restarted daemon loads it -------------------------------------------------
start_daemon "$T/d2.log" || exit 1
run_scene "$T/a.json" "$T/second"
stop_daemon
if grep -q "loaded a collider field of [0-9]* voxels .* from disk (fields/$(basename "$file")) in [0-9]* ms" "$T/d2.log" &&
	! grep -q "built a collider field" "$T/d2.log"; then
	pass restarted_daemon_loads_from_disk
else
	fail restarted_daemon_loads_from_disk "log: $(grep -i field "$T/d2.log" | tail -n 3)"
fi
same_frames loaded_field_equals_fresh "$T/fresh" "$T/second"

# ---- A truncated file is refused, rebuilt and rewritten ----------------------------
head -c $((size / 2)) "$file" >"$T/half" && cat "$T/half" >"$file"
start_daemon "$T/d3.log" || exit 1
run_scene "$T/a.json" "$T/third"
stop_daemon
if grep -q "field cache: .*$(basename "$file") does not load (sdf: payload of" "$T/d3.log" &&
	grep -q "built a collider field" "$T/d3.log" && [ "$(wc -c <"$file")" -eq "$size" ]; then
	pass truncated_file_is_rebuilt
else
	fail truncated_file_is_rebuilt "size $(wc -c <"$file") (want $size); log: $(grep -i field "$T/d3.log" | tail -n 4)"
fi
same_frames rebuilt_field_equals_fresh "$T/fresh" "$T/third"

# ---- The folder stays within --max-field-disk, least recently used out first ------
# Room for one field of this size plus a little: storing the second field
# must remove the first (the older one), never the one just written.
start_daemon "$T/d4.log" --max-field-disk $((size + size / 2)) || exit 1
run_scene "$T/b.json" "$T/other"
stop_daemon
n=$(ls "$FIELDS" | grep -c '\.vdb$')
if [ "$n" -eq 1 ] && [ ! -e "$file" ] && grep -q "field cache: removed $(basename "$file")" "$T/d4.log"; then
	pass budget_evicts_least_recently_used
else
	fail budget_evicts_least_recently_used "$n files: $(ls "$FIELDS"); log: $(grep -i field "$T/d4.log" | tail -n 4)"
fi

# ---- --max-field-disk 0 keeps nothing on disk ------------------------------------
rm -rf "$FIELDS"
start_daemon "$T/d5.log" --max-field-disk 0 || exit 1
run_scene "$T/a.json" "$T/nodisk"
stop_daemon
if [ ! -e "$FIELDS" ] && grep -q "built a collider field" "$T/d5.log"; then pass zero_budget_keeps_nothing
else fail zero_budget_keeps_nothing "fields: $(ls -A "$FIELDS" 2>&1)"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

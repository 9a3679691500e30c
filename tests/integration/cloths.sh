#!/bin/sh
# Several cloths in one session through the drape CLI:
# tests/integration/cloths.sh BUILD_DIR (tests/run.sh passes the build folder
# and exports DRAPED and DRAPE). Prints PASS/FAIL lines and ends with
# "N passed, M failed".
#
# A cotton sheet and a denim sheet ("cloths", different resolutions) drop
# onto a sphere: drape check lists them with their vertex ranges and no
# crossing pair; drape run --out writes one cache per cloth, OUT/<name>/,
# with each cloth's own vertex count, in process and through a draped (its
# private one), the frames bit for bit equal; --format pc2 writes
# OUT/<name>/<name>.pc2 per cloth; drape export of the session, without the
# scene, writes the same per-cloth files from session.topology's objects,
# also after the daemon restarts from its state folder. A daemon whose
# vertex limit each cloth fits but not both refuses the session naming the
# limit. A scene with an empty "cloths", or with
# both "cloth" and "cloths", is refused naming the key and writes nothing
# (cloths that together pass the vertex limit: tests/unit/test_client_cloths.c).
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DRAPE=${DRAPE:-$TOP/$B/drape}
DRAPED=${DRAPED:-$TOP/$B/draped}
export DRAPED
T=$(mktemp -d /tmp/drape-cloths-XXXXXX)
export XDG_CACHE_HOME="$T/cache"
unset DRAPE_TOKEN
passed=0
failed=0
daemon_pid=
URL="ipc://$T/d.sock"

cleanup() {
	if [ -n "$daemon_pid" ]; then
		kill "$daemon_pid" 2>/dev/null
		i=0
		while kill -0 "$daemon_pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		kill -9 "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

# scene CLOTHS: the sphere and the given "cloths" value.
scene() {
	printf '{"fps": 24, "frames": 6, "colliders": [{"sphere": {"center": [0, 0, 0], "radius": 0.2}}], %s}\n' "$1"
}
SHIRT='{"name": "shirt", "material": "cotton", "mesh": {"grid": {"size": [0.5, 0.5], "resolution": [15, 15], "center": [0, 0.25, 0], "normal": [0, 1, 0]}}}'
JACKET='{"name": "jacket", "material": "denim", "thickness": 0.004, "mesh": {"grid": {"size": [0.5, 0.5], "resolution": [14, 14], "center": [0, 0.28, 0], "normal": [0, 1, 0]}}}'
scene "\"cloths\": [$SHIRT, $JACKET]" >"$T/two.json"

# drape check lists the cloths with their vertex ranges.
if "$DRAPE" check "$T/two.json" --json >"$T/check.json" 2>"$T/check.err" &&
	grep -q '"cloths":\[{"name":"shirt","first_vertex":0,"vertex_count":225,"layer":1,"collides_with":4294967295},{"name":"jacket","first_vertex":225,"vertex_count":196,' "$T/check.json" &&
	grep -q '"intersecting_pairs":0,' "$T/check.json"; then
	pass "drape check lists the cloths and their vertex ranges, no crossing pair"
else
	fail "drape check of cloths" "$(cat "$T/check.err"; head -c 600 "$T/check.json")"
fi

# One cache per cloth, in process and through draped, equal.
if "$DRAPE" run "$T/two.json" --local --threads 1 --quiet --out "$T/local" 2>"$T/local.err" &&
	"$DRAPE" run "$T/two.json" --threads 1 --quiet --out "$T/served" 2>"$T/served.err"; then
	ns=$(grep -c '^v ' "$T/local/shirt/frame_0006.obj" 2>/dev/null)
	nj=$(grep -c '^v ' "$T/local/jacket/frame_0006.obj" 2>/dev/null)
	if [ "$ns" = 225 ] && [ "$nj" = 196 ]; then
		pass "one cache per cloth: shirt/ holds 225 vertices, jacket/ 196"
	else
		fail "one cache per cloth" "shirt $ns, jacket $nj vertices (want 225, 196): $(ls -R "$T/local" | head -5)"
	fi
	same=1
	for c in shirt jacket; do
		for f in 1 6; do
			cmp -s "$T/local/$c/frame_000$f.obj" "$T/served/$c/frame_000$f.obj" || same=0
		done
	done
	if [ $same = 1 ]; then
		pass "the cloths' frames through draped equal those in process, bit for bit"
	else
		fail "in process against draped" "frames differ"
	fi
else
	fail "two cloths run" "$(cat "$T/local.err" "$T/served.err" 2>/dev/null | tail -3)"
fi

if "$DRAPE" run "$T/two.json" --threads 1 --quiet --format pc2 --out "$T/pc2" 2>"$T/pc2.err" &&
	[ -s "$T/pc2/shirt/shirt.pc2" ] && [ -s "$T/pc2/jacket/jacket.pc2" ]; then
	# PC2: a 32-byte header, then frames of vertex_count * 12 bytes.
	ss=$(wc -c <"$T/pc2/shirt/shirt.pc2")
	sj=$(wc -c <"$T/pc2/jacket/jacket.pc2")
	if [ "$ss" = $((32 + 6 * 225 * 12)) ] && [ "$sj" = $((32 + 6 * 196 * 12)) ]; then
		pass "--format pc2: one PC2 per cloth, each of its own vertex count"
	else
		fail "--format pc2" "sizes $ss and $sj bytes"
	fi
else
	fail "--format pc2" "$(tail -3 "$T/pc2.err" 2>/dev/null; ls -R "$T/pc2" 2>/dev/null | head -5)"
fi

# start_daemon ARGS...: a draped on $URL, waited for.
start_daemon() {
	"$DRAPED" --listen "$URL" --threads 1 "$@" >>"$T/draped.log" 2>&1 &
	daemon_pid=$!
	i=0
	until "$DRAPE" status --server "$URL" >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 400 ] || ! kill -0 "$daemon_pid" 2>/dev/null; then
			fail daemon_start "$(tail -n 5 "$T/draped.log")"
			finish
		fi
		sleep 0.05
	done
}
stop_daemon() {
	kill "$daemon_pid" 2>/dev/null
	wait "$daemon_pid" 2>/dev/null
	daemon_pid=
}

# A client that did not create the session (drape export without --scene)
# learns the cloths from session.topology and writes the same caches.
start_daemon --state-dir "$T/state"
id=
if "$DRAPE" run "$T/two.json" --server "$URL" --json --quiet --out "$T/daemon" >"$T/run.json" 2>"$T/run.err"; then
	id=$(sed -n 's/.*"session":\([0-9]*\).*/\1/p' "$T/run.json" | head -1)
	if "$DRAPE" export "$id" --server "$URL" --out "$T/export" --quiet 2>"$T/export.err" &&
		cmp -s "$T/local/shirt/frame_0006.obj" "$T/export/shirt/frame_0006.obj" &&
		cmp -s "$T/local/jacket/frame_0006.obj" "$T/export/jacket/frame_0006.obj" &&
		cmp -s "$T/daemon/jacket/frame_0006.obj" "$T/export/jacket/frame_0006.obj"; then
		pass "drape export of session $id writes one cache per cloth from session.topology"
	else
		fail "export per cloth" "$(tail -3 "$T/export.err"; ls -R "$T/export" 2>/dev/null | head -4)"
	fi
else
	fail "run on the daemon" "$(tail -3 "$T/run.err")"
fi

# The objects are part of the session's inputs: after a restart from the
# state folder, export still writes one cache per cloth, the same files.
if [ -n "${id:-}" ]; then
	stop_daemon
	start_daemon --state-dir "$T/state"
	if "$DRAPE" export "$id" --server "$URL" --out "$T/export2" --quiet 2>"$T/export2.err" &&
		cmp -s "$T/export/shirt/frame_0006.obj" "$T/export2/shirt/frame_0006.obj" &&
		cmp -s "$T/export/jacket/frame_0006.obj" "$T/export2/jacket/frame_0006.obj"; then
		pass "after a restart the reloaded session still exports one cache per cloth"
	else
		fail "export after restart" "$(tail -3 "$T/export2.err"; ls -R "$T/export2" 2>/dev/null | head -4)"
	fi
fi

# A daemon whose vertex limit one cloth fits (225) and both (421) do not
# refuses the session naming the limit.
stop_daemon
start_daemon --state-dir "$T/state-small" --max-vertices 300
scene "\"cloths\": [$SHIRT]" >"$T/one.json"
if "$DRAPE" run "$T/one.json" --server "$URL" --quiet --out "$T/one" 2>"$T/one.err" &&
	[ -e "$T/one/shirt/frame_0006.obj" ]; then
	if "$DRAPE" run "$T/two.json" --server "$URL" --quiet --out "$T/over" 2>"$T/over.err"; then
		fail "cloths over the vertex limit" "accepted"
	elif grep -q "421" "$T/over.err" && grep -q "300" "$T/over.err" && [ ! -e "$T/over/shirt" ]; then
		pass "cloths over the daemon's vertex limit together are refused naming it"
	else
		fail "cloths over the vertex limit" "$(cat "$T/over.err")"
	fi
else
	fail "one cloth under the vertex limit" "$(tail -3 "$T/one.err")"
fi
stop_daemon

# refused NAME FILE PATTERN: the run fails, says PATTERN, writes nothing.
refused() {
	if "$DRAPE" run "$2" --local --quiet --out "$T/bad" 2>"$T/bad.err"; then
		fail "$1" "accepted"
	elif grep -q -- "$3" "$T/bad.err" && [ ! -e "$T/bad/frame_0001.obj" ] && [ ! -e "$T/bad/shirt" ]; then
		pass "$1"
	else
		fail "$1" "$(cat "$T/bad.err")"
	fi
}
scene '"cloths": []' >"$T/empty.json"
refused "an empty \"cloths\" is refused naming it" "$T/empty.json" 'cloths: is empty'
scene "\"cloth\": $SHIRT, \"cloths\": [$JACKET]" | sed 's/"name": "shirt", //' >"$T/both.json"
refused "\"cloth\" and \"cloths\" together are refused" "$T/both.json" 'cloths: give either "cloth"'

finish

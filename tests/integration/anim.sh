#!/bin/sh
# Animated colliders through the drape CLI: tests/integration/anim.sh BUILD_DIR
# (tests/run.sh passes the build folder and exports DRAPED and DRAPE).
# Prints PASS/FAIL lines and ends with "N passed, M failed".
#
# A sheet falls onto the head of the walking body (tests/data/anim: the rest
# mesh and walk.pc2, 96 poses of 13652 vertices, 15.7 MB). The scene is run
# in process (--local), through the embedded server and through a draped
# started with --max-message 4 MiB, so the animation goes up in several
# collider.frames parts: all three write the same files, bit for bit, and
# only frames start_frame..frames. Pins attached to the deforming body (its
# skin) give the same frames in process and through the server. drape check
# prints the animation's range, and an animation of the wrong vertex count is
# refused naming the field. A keyframed collider turning fast splits its
# frames into more substeps, printed by --local --json and logged by draped.
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DRAPE=${DRAPE:-$TOP/$B/drape}
DRAPED=${DRAPED:-$TOP/$B/draped}
export DRAPED
T=$(mktemp -d /tmp/drape-anim-XXXXXX)
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
		while kill -0 "$daemon_pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
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

A="$TOP/tests/data/anim"
cat >"$T/scene.json" <<EOF2
{
  "fps": 24, "frames": 30, "start_frame": 25, "substeps": 2, "iterations": 5,
  "cloth": {"mesh": {"grid": {"size": [0.5, 0.5], "resolution": [12, 12], "center": [0, 1.85, 0.02],
                              "normal": [0, 1, 0]}}},
  "colliders": [{"mesh": "$A/body_rest_m.obj", "animation": "$A/walk.pc2"}]
}
EOF2
# Pins bound to the body's skin: the four vertices at the sheet's centre
# follow the top of the head.
cat >"$T/pins.json" <<EOF2
{
  "fps": 24, "frames": 30, "start_frame": 28, "substeps": 2, "iterations": 5,
  "cloth": {"mesh": {"grid": {"size": [0.5, 0.5], "resolution": [12, 12], "center": [0, 1.8, 0.02],
                              "normal": [0, 1, 0]}},
            "pins": {"box": {"min": [-0.03, 1.7, -0.01], "max": [0.03, 1.9, 0.05]}, "attach": 0}},
  "colliders": [{"mesh": "$A/body_rest_m.obj", "animation": "$A/walk.pc2"}]
}
EOF2
# The cloth's own grid as the body: 144 vertices against the cache's 13652.
cat >"$T/bad.json" <<EOF2
{
  "cloth": {"mesh": {"grid": {"size": [0.5, 0.5], "resolution": [12, 12]}}},
  "colliders": [{"mesh": "$T/grid.obj", "animation": "$A/walk.pc2"}]
}
EOF2
printf 'v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n' >"$T/grid.obj"

# files DIR: the frame files written, one name a line.
files() { ls "$1" 2>/dev/null | grep '^frame_.*\.obj$' | tr '\n' ' '; }
WANT="frame_0025.obj frame_0026.obj frame_0027.obj frame_0028.obj frame_0029.obj frame_0030.obj "
same_dirs() {
	for f in $WANT; do cmp -s "$1/$f" "$2/$f" || return 1; done
	return 0
}

if "$DRAPE" check "$T/scene.json" >"$T/check.out" 2>"$T/check.err" &&
	grep -q '^frames: *25 to 30 written (30 solved)' "$T/check.out" &&
	grep -q '^animation: *collider 0, .*walk.pc2: 96 samples (frames 1 to 96), 96 frames 1 to 96 of 13652 vertices' \
		"$T/check.out"; then
	pass check_prints_the_animation_range
else
	fail check_prints_the_animation_range "$(cat "$T/check.out" "$T/check.err" | tail -n 5)"
fi

"$DRAPE" run "$T/scene.json" --local --out "$T/local" --quiet 2>"$T/local.err" ||
	{ fail run_local "$(cat "$T/local.err")"; finish; }
[ "$(files "$T/local")" = "$WANT" ] && pass local_writes_frames_25_to_30_only ||
	fail local_writes_frames_25_to_30_only "wrote: $(files "$T/local")"

if "$DRAPE" run "$T/scene.json" --out "$T/embedded" --quiet 2>"$T/embedded.err" &&
	[ "$(files "$T/embedded")" = "$WANT" ] && same_dirs "$T/local" "$T/embedded"; then
	pass embedded_server_bit_identical_to_local
else
	fail embedded_server_bit_identical_to_local "$(files "$T/embedded"); $(tail -c 300 "$T/embedded.err")"
fi

"$DRAPED" --listen "$URL" --state-dir "$T/state" --max-message 4194304 --threads 1 >"$T/draped.log" 2>&1 &
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
if "$DRAPE" run "$T/scene.json" --server "$URL" --out "$T/server" --quiet 2>"$T/server.err" &&
	[ "$(files "$T/server")" = "$WANT" ] && same_dirs "$T/local" "$T/server"; then
	pass server_in_parts_bit_identical_to_local
else
	fail server_in_parts_bit_identical_to_local "$(files "$T/server"); $(tail -c 300 "$T/server.err")"
fi
parts=$(grep -c 'collider.frames done' "$T/draped.log")
if [ "$parts" -ge 3 ] && grep -q 'deforming mesh of 13652 vertices, .*kind surface' "$T/draped.log"; then
	pass animation_sent_in_parts_and_logged_as_surface
else
	fail animation_sent_in_parts_and_logged_as_surface "$parts parts; $(grep -i collider "$T/draped.log" | tail -n 3)"
fi

PW="frame_0028.obj frame_0029.obj frame_0030.obj "
"$DRAPE" run "$T/pins.json" --local --out "$T/pins_local" --quiet 2>"$T/pins_local.err"
if "$DRAPE" run "$T/pins.json" --server "$URL" --out "$T/pins_server" --quiet 2>"$T/pins_server.err" &&
	[ "$(files "$T/pins_local")" = "$PW" ] && [ "$(files "$T/pins_server")" = "$PW" ] &&
	cmp -s "$T/pins_local/frame_0030.obj" "$T/pins_server/frame_0030.obj" &&
	cmp -s "$T/pins_local/frame_0028.obj" "$T/pins_server/frame_0028.obj" &&
	grep -q 'pins.attach done' "$T/draped.log"; then
	pass skin_pins_through_server_bit_identical_to_local
else
	fail skin_pins_through_server_bit_identical_to_local \
		"$(files "$T/pins_server"); $(tail -c 300 "$T/pins_local.err" "$T/pins_server.err")"
fi

# A capsule turning half a turn in 2 frames (90 degrees a frame, 11.25 a
# substep at 8): each frame is solved in ceil(90 / (4 x 8)) = 3 times the
# substeps (docs/animation.md, faster motions). --local --json says so on
# each frame; the daemon, whose frames do not carry it, logs it; both give
# the same bits.
cat >"$T/turn.json" <<EOF2
{
  "fps": 24, "frames": 2, "substeps": 8, "iterations": 5,
  "colliders": [{"capsule": {"a": [-0.2, 1.0, 0], "b": [0.2, 1.0, 0], "radius": 0.06},
                 "keyframes": [{"frame": 0, "rotate": [0, 0, 0]}, {"frame": 2, "rotate": [0, 180, 0]}]}],
  "cloth": {"mesh": {"grid": {"size": [0.3, 0.3], "resolution": [8, 8], "center": [0, 1.064, 0],
                              "normal": [0, 1, 0]}}}
}
EOF2
"$DRAPE" run "$T/turn.json" --local --json --out "$T/turn_local" >"$T/turn_local.out" 2>"$T/turn_local.err"
if "$DRAPE" run "$T/turn.json" --server "$URL" --out "$T/turn_server" --quiet 2>"$T/turn_server.err" &&
	[ "$(grep -c '"split":3,"substeps":24' "$T/turn_local.out")" -eq 2 ] &&
	grep -q 'frame 1 solved in 24 substeps, 3x the schedule.s: a collider.s surface turned 90.0 degrees' \
		"$T/draped.log" &&
	grep -q 'frame 2 solved in 24 substeps, 3x' "$T/draped.log" &&
	cmp -s "$T/turn_local/frame_0002.obj" "$T/turn_server/frame_0002.obj"; then
	pass fast_turn_split_printed_and_logged
else
	fail fast_turn_split_printed_and_logged \
		"$(grep -c split "$T/turn_local.out") split lines; $(grep 'solved in' "$T/draped.log" | tail -n 2); $(tail -c 300 "$T/turn_server.err")"
fi

if "$DRAPE" run "$T/bad.json" --local >"$T/bad.out" 2>"$T/bad.err"; then
	fail wrong_vertex_count_refused "exit 0"
elif [ $? -eq 65 ] && grep -q 'colliders\[0\].animation: .*walk.pc2 has 13652 vertices per frame, the collider.s mesh has 3' \
	"$T/bad.err"; then
	pass wrong_vertex_count_refused
else
	fail wrong_vertex_count_refused "$(cat "$T/bad.err")"
fi
finish

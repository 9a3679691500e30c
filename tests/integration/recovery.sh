#!/bin/sh
# Crash recovery through the CLI: tests/integration/recovery.sh BUILD_DIR
# (tests/run.sh passes the build folder and exports DRAPED and DRAPE).
# Prints PASS/FAIL lines and ends with "N passed, M failed".
#
# A daemon with a state dir and --checkpoint-every 5 is SIGKILLed in the
# middle of a `drape run`; restarted on the same state dir it lists the
# session, `drape resume` into the interrupted run's --out folder finishes
# the run and leaves every frame 1..60 there (also those solved before the
# kill that the client never received), `drape attach` fetches every frame,
# the frames the client had before the kill are unchanged, and all 60 are
# byte-identical to `drape run --local`. Then state files are
# truncated and corrupted: what the daemon does is asserted (a bad
# session.bin: the session is skipped and the log says why; a bad state.bin:
# the session is listed and re-solved from its checksummed frame cache, so
# its frames are still exact), and the daemon never crashes.
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DRAPE=${DRAPE:-$TOP/$B/drape}
DRAPED=${DRAPED:-$TOP/$B/draped}
T=$(mktemp -d /tmp/drape-recovery-XXXXXX)
export XDG_CACHE_HOME="$T/cache"
unset DRAPE_TOKEN
passed=0
failed=0
daemon_pid=
bg_pid=
URL="ipc://$T/d.sock"
STATE="$T/state"

stop_daemon() {
	if [ -n "$daemon_pid" ]; then
		kill "$daemon_pid" 2>/dev/null
		i=0
		while kill -0 "$daemon_pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		kill -9 "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
		daemon_pid=
	fi
}
cleanup() {
	if [ -n "$bg_pid" ]; then kill -9 "$bg_pid" 2>/dev/null; wait "$bg_pid" 2>/dev/null; fi
	stop_daemon
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

# start_daemon LOG: draped on $URL with $STATE; returns 1 if it never answered.
start_daemon() {
	# --no-resume-interrupted: this test resumes by hand with `drape resume`
	# (the automatic resume is tested by test_restart).
	"$DRAPED" --listen "$URL" --state-dir "$STATE" --checkpoint-every 5 --threads 1 --no-resume-interrupted \
		>>"$1" 2>&1 &
	daemon_pid=$!
	i=0
	while [ $i -lt 200 ] && kill -0 "$daemon_pid" 2>/dev/null; do
		if "$DRAPE" status --server "$URL" >/dev/null 2>&1; then return 0; fi
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# same_files A B FIRST LAST: how many of frame_FIRST..LAST are equal in A and B.
same_files() {
	n=0
	k=$3
	while [ "$k" -le "$4" ]; do
		f=$(printf 'frame_%04d.obj' "$k")
		[ -f "$1/$f" ] && cmp -s "$1/$f" "$2/$f" && n=$((n + 1))
		k=$((k + 1))
	done
	echo $n
}

# Heavy enough (about 10-30 ms a frame) that the kill lands mid-run. A
# physical material whose warp and weft differ (denim), oriented by the
# grid's UVs: the restarted daemon must rebuild the session with both, or
# its frames would differ from the uninterrupted run's.
cat >"$T/scene.json" <<'EOF'
{
  "fps": 24, "frames": 60, "substeps": 8, "iterations": 20,
  "wind": {"velocity": [1, 0, 2], "drag": 1.0, "lift": 0.3},
  "cloth": {
    "mesh": {"grid": {"size": [1, 1], "resolution": [48, 48], "center": [0, 1, 0], "normal": [0, 0, 1]}},
    "material": "denim",
    "pins": {"group": "top"}
  }
}
EOF
cat >"$T/small.json" <<'EOF'
{
  "frames": 12, "substeps": 2, "iterations": 5,
  "cloth": {
    "mesh": {"grid": {"size": [1, 1], "resolution": [12, 12], "center": [0, 1, 0], "normal": [0, 0, 1]}},
    "pins": {"group": "top"}
  }
}
EOF

# The reference: the same scenes solved in process, never interrupted.
"$DRAPE" run "$T/scene.json" --local --out "$T/ref" --quiet 2>"$T/ref.err" ||
	{ fail reference_run "$(cat "$T/ref.err")"; finish; }
"$DRAPE" run "$T/small.json" --local --out "$T/ref_small" --quiet 2>"$T/ref_small.err" ||
	{ fail reference_run_small "$(cat "$T/ref_small.err")"; finish; }

start_daemon "$T/draped1.log" || { fail daemon_start "$(tail -n 5 "$T/draped1.log")"; finish; }

# Three small finished sessions whose state files are damaged later, and a
# fourth whose checkpoint is rewritten as the release before params.schedule
# wrote it.
for k in 1 2 3 4; do
	"$DRAPE" run "$T/small.json" --server "$URL" --quiet >/dev/null 2>"$T/small$k.err" ||
		fail small_run "$(cat "$T/small$k.err")"
	eval "sid$k=\$(sed -n -E 's/^drape: session ([0-9]+) on .*/\1/p' \"\$T/small$k.err\")"
done

"$DRAPE" run "$T/scene.json" --server "$URL" --out "$T/before" --json >"$T/run.out" 2>"$T/run.err" &
bg_pid=$!
# Wait (bounded) until the client has received frame 15.
i=0
while ! grep -q '^{"frame":15,' "$T/run.out" 2>/dev/null && [ $i -lt 400 ]; do sleep 0.02; i=$((i + 1)); done
# The client stops receiving (SIGSTOP) while the daemon goes on solving, so
# when the daemon dies its cache holds frames the client never got: the gap
# `drape resume` must fill. Wait (bounded) until it is two frames ahead.
kill -STOP "$bg_pid"
id=$(sed -n -E 's/^drape: session ([0-9]+) on .*/\1/p' "$T/run.err")
got=$(grep -c '^{"frame"' "$T/run.out")
i=0
ahead=0
while [ -n "$id" ] && [ $i -lt 200 ]; do
	ahead=$("$DRAPE" status "$id" --server "$URL" --json 2>/dev/null | sed -n -E 's/.*"frames_done":([0-9]+).*/\1/p')
	[ "${ahead:-0}" -ge $((got + 2)) ] && break
	sleep 0.02
	i=$((i + 1))
done
kill -9 "$daemon_pid"
wait "$daemon_pid" 2>/dev/null
daemon_pid=
# The client dies too (killed while stopped): what it had in its buffers is
# lost, as when a client machine goes down with the daemon.
kill -9 "$bg_pid" 2>/dev/null
wait "$bg_pid" 2>/dev/null
bg_pid=
got=$(grep -c '^{"frame"' "$T/run.out")
echo "  killed the daemon (${ahead:-?} frames solved) after the client had $got of 60 frames of session $id"
if [ -z "$id" ] || [ "$got" -lt 15 ] || [ "$got" -ge 60 ] || [ "${ahead:-0}" -le "$got" ]; then
	fail kill_mid_run "session '$id', $got frames before the kill: $(tail -c 300 "$T/run.err")"
	finish
fi

# Damage the small sessions' files: truncate one session.bin, flip a byte
# in another, flip a byte in the third's checkpoint (state.bin).
# A byte is inverted, not overwritten with a fixed value: the byte there
# may be random (the owner token) and could already be that value.
flip_byte() {
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "\\$(printf %o $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" count=1 conv=notrunc 2>/dev/null
}
truncate -s -7 "$STATE/sessions/$sid1/session.bin"
flip_byte "$STATE/sessions/$sid2/session.bin" 40
flip_byte "$STATE/sessions/$sid3/state.bin" 100
# The previous release's state.bin: its params end before `schedule` (the
# last 4 bytes of today's), with its own length and checksum (FNV-1a 64 of
# the file head and payload). The session is PBD, so schedule is 0 there.
python3 - "$STATE/sessions/$sid4/state.bin" <<'PY' || fail old_checkpoint_rewritten "python3 failed"
import struct, sys
path = sys.argv[1]
b = open(path, "rb").read()
head, payload = b[:24], b[24:-8]
ps = struct.unpack_from("<I", payload, 24)[0]
assert struct.unpack_from("<i", payload, 32 + ps - 4)[0] == 0, "schedule is not 0"
payload = bytearray(payload[:32 + ps - 4] + payload[32 + ps:])
struct.pack_into("<I", payload, 24, ps - 4)
head = head[:16] + struct.pack("<Q", len(payload))
h = 0xcbf29ce484222325
for c in head + bytes(payload):
    h = ((h ^ c) * 0x100000001b3) & 0xffffffffffffffff
open(path, "wb").write(head + bytes(payload) + struct.pack("<Q", h))
PY

start_daemon "$T/draped2.log" || { fail daemon_restart "$(tail -n 5 "$T/draped2.log")"; finish; }

if "$DRAPE" sessions --server "$URL" --json >"$T/sessions.json" 2>"$T/err" &&
	grep -q "^{\"session\":$id,.*\"state\":\"canceled\"" "$T/sessions.json"; then
	pass restarted_daemon_lists_the_interrupted_session
else
	fail restarted_daemon_lists_the_interrupted_session "$(cat "$T/sessions.json" "$T/err")"
fi

# What the interrupted client had, kept aside: resume writes into its folder.
cp -R "$T/before" "$T/before_kill"
had=$(ls "$T/before" | grep -c '^frame_[0-9]*\.obj$')
# The restarted daemon's frame count: frames it solved and cached before the
# kill, some of which the client never received.
"$DRAPE" status "$id" --server "$URL" --json >"$T/st0.json" 2>&1
cached=$(sed -n -E 's/.*"frames_done":([0-9]+).*/\1/p' "$T/st0.json")
echo "  the client had $had frame files; the restarted daemon has ${cached:-?} frames cached"

# Resume into the interrupted run's own folder, as a user would.
if "$DRAPE" resume "$id" --server "$URL" --out "$T/before" --scene "$T/scene.json" --quiet \
	>"$T/resume.out" 2>"$T/resume.err"; then
	pass resume_continues_the_run
else
	fail resume_continues_the_run "exit $?: $(cat "$T/resume.err")"
fi
# Every frame 1..60 is in the folder and byte-identical to the uninterrupted
# run: nothing the daemon solved before the kill (and the client never got)
# is left out.
k=1
missing=
while [ "$k" -le 60 ]; do
	f=$(printf 'frame_%04d.obj' "$k")
	[ -f "$T/before/$f" ] || missing="$missing $k"
	k=$((k + 1))
done
s=$(same_files "$T/ref" "$T/before" 1 60)
if [ -z "$missing" ] && [ "$s" -eq 60 ]; then
	pass resume_fills_every_frame_1_to_60_bit_identical
else
	fail resume_fills_every_frame_1_to_60_bit_identical "missing:${missing:- none}; $s of 60 equal"
fi
"$DRAPE" status "$id" --server "$URL" --json >"$T/st.json" 2>&1
grep -q '"state":"done","frames_done":60' "$T/st.json" && pass resumed_session_done_at_60 ||
	fail resumed_session_done_at_60 "$(cat "$T/st.json")"

if "$DRAPE" attach "$id" --server "$URL" --out "$T/att" --scene "$T/scene.json" --quiet 2>"$T/att.err"; then
	n=$(ls "$T/att" | grep -c '^frame_[0-9]*\.obj$')
	[ "$n" -eq 60 ] && pass attach_fetches_all_60_frames || fail attach_fetches_all_60_frames "$n files"
else
	fail attach_fetches_all_60_frames "exit $?: $(cat "$T/att.err")"
fi

# Every frame the client had before the kill is still there, unchanged.
s=$(same_files "$T/before_kill" "$T/att" 1 "$got")
[ "$s" -eq "$got" ] && pass frames_done_before_the_kill_are_unchanged ||
	fail frames_done_before_the_kill_are_unchanged "$s of $got equal"
# All 60 attached frames equal the uninterrupted in-process run.
s=$(same_files "$T/ref" "$T/att" 1 60)
echo "  $s of 60 attached frames equal the uninterrupted run"
if [ "$s" -eq 60 ]; then
	pass resumed_run_bit_identical_to_uninterrupted
else
	fail resumed_run_bit_identical_to_uninterrupted "$s of 60 attached frames equal"
fi

# The damaged files: reported in the log, never loaded as garbage, never a crash.
if ! grep -q "^{\"session\":$sid1," "$T/sessions.json" && ! grep -q "^{\"session\":$sid2," "$T/sessions.json" &&
	grep -q "skipping .*/$sid1/session.bin: truncated" "$T/draped2.log" &&
	grep -q "skipping .*/$sid2/session.bin: checksum mismatch" "$T/draped2.log"; then
	pass damaged_session_files_reported_and_skipped
else
	fail damaged_session_files_reported_and_skipped "listed: $(cat "$T/sessions.json"); log: $(grep -i 'skip\|unusable' "$T/draped2.log")"
fi
# A bad checkpoint leaves the inputs: the session is listed and brought back
# to its last cached frame by re-solving, so its frames are still exact. The
# run state lived in the lost checkpoint, so the daemon reports it as idle
# (not done) at frame 12.
"$DRAPE" attach "$sid3" --server "$URL" --out "$T/att3" --scene "$T/small.json" --quiet 2>"$T/att3.err"
s3=$(same_files "$T/ref_small" "$T/att3" 1 12)
if grep -q "^{\"session\":$sid3,.*\"state\":\"idle\",\"frames_done\":12" "$T/sessions.json" &&
	grep -q "session $sid3: checkpoint .*state.bin unusable (checksum mismatch)" "$T/draped2.log" &&
	[ "$s3" -eq 12 ]; then
	pass damaged_checkpoint_reported_and_resolved_exactly
else
	fail damaged_checkpoint_reported_and_resolved_exactly "$s3 of 12 frames equal; listed: $(grep "\"session\":$sid3," "$T/sessions.json"); log: $(grep "$sid3" "$T/draped2.log")"
fi
# A checkpoint of the previous release (params without `schedule`) loads as
# it is: the session is done at frame 12 without re-solving, nothing in the
# log calls it unusable, and its frames are the uninterrupted run's.
"$DRAPE" attach "$sid4" --server "$URL" --out "$T/att4" --scene "$T/small.json" --quiet 2>"$T/att4.err"
s4=$(same_files "$T/ref_small" "$T/att4" 1 12)
if grep -q "^{\"session\":$sid4,.*\"state\":\"done\",\"frames_done\":12" "$T/sessions.json" &&
	! grep -q "session $sid4: checkpoint" "$T/draped2.log" && [ "$s4" -eq 12 ]; then
	pass previous_release_checkpoint_loads
else
	fail previous_release_checkpoint_loads "$s4 of 12 frames equal; listed: $(grep "\"session\":$sid4," "$T/sessions.json"); log: $(grep "$sid4" "$T/draped2.log")"
fi
if kill -0 "$daemon_pid" 2>/dev/null && "$DRAPE" status --server "$URL" >/dev/null 2>&1; then
	pass daemon_survives_damaged_state
else
	fail daemon_survives_damaged_state "$(tail -n 5 "$T/draped2.log")"
fi
stop_daemon
finish

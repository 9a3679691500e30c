#!/bin/sh
# A full state directory: tests/integration/diskfull.sh BUILD_DIR
# (tests/run.sh passes the build folder and exports DRAPED and DRAPE).
# Prints PASS/FAIL lines and ends with "N passed, M failed".
#
# The state dir is a 2 MiB tmpfs (mounting needs root: without it the test
# says SKIP and why, and counts nothing). A filler file leaves room for the
# session's inputs and a few dozen frames, so the disk fills up in the
# middle of a run:
#   - the run fails with EIO naming frames.bin and "No space left on device"
#     (on the client's exit, in the status' error and its storage_error);
#   - every frame up to the failure is still served, bit-identical to an
#     uninterrupted in-process run, with only one frame kept in the ring;
#   - session.resume is refused with EIO while the disk is still full;
#   - the shutdown log counts no checkpoint that failed and says why;
#   - after a restart the session is there with the frames that reached the
#     disk; with space freed, resume finishes the run, all frames exact;
#   - with the disk completely full, session.create fails with EIO, leaves
#     no directory behind, and no session appears after a restart;
#   - a shutdown with two finished sessions and a full disk logs two failed
#     checkpoints and "0 sessions checkpointed", and both sessions (their
#     creates were acknowledged) are back after the restart.
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DRAPE=${DRAPE:-$TOP/$B/drape}
DRAPED=${DRAPED:-$TOP/$B/draped}
T=$(mktemp -d /tmp/drape-diskfull-XXXXXX)
export XDG_CACHE_HOME="$T/cache"
unset DRAPE_TOKEN
passed=0
failed=0
daemon_pid=
mounted=
URL="ipc://$T/d.sock"
STATE="$T/state"

stop_daemon() {
	if [ -n "$daemon_pid" ]; then
		kill "$daemon_pid" 2>/dev/null
		i=0
		while kill -0 "$daemon_pid" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
		kill -9 "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
		daemon_pid=
	fi
}
cleanup() {
	stop_daemon
	[ -n "$mounted" ] && umount "$STATE" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

mkdir -p "$STATE"
if ! mount -t tmpfs -o size=2m,mode=0700 tmpfs "$STATE" 2>"$T/mount.err"; then
	echo "SKIP diskfull: cannot mount a 2 MiB tmpfs for the state dir (needs root): $(cat "$T/mount.err")"
	finish
fi
mounted=1

# start_daemon LOG: draped on $URL with $STATE; returns 1 if it never answered.
# One frame in memory, so only the held list can keep a frame the disk refused.
start_daemon() {
	"$DRAPED" --listen "$URL" --state-dir "$STATE" --checkpoint-every 0 --frames-in-memory 1 \
		--threads 1 >>"$1" 2>&1 &
	daemon_pid=$!
	i=0
	while [ $i -lt 400 ] && kill -0 "$daemon_pid" 2>/dev/null; do
		if "$DRAPE" status --server "$URL" >/dev/null 2>&1; then return 0; fi
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# avail: bytes free in the state dir.
avail() { echo $(($(stat -f -c '%a' "$STATE") * $(stat -f -c '%S' "$STATE"))); }

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

# json_u KEY FILE: an unsigned field of a one-line JSON object.
json_u() { sed -n -E "s/.*\"$1\":([0-9]+).*/\1/p" "$2"; }

# 32 x 32 vertices: a frame record is about 13 kB.
cat >"$T/scene.json" <<'EOF'
{
  "frames": 60, "substeps": 2, "iterations": 5,
  "cloth": {
    "mesh": {"grid": {"size": [1, 1], "resolution": [32, 32], "center": [0, 1, 0], "normal": [0, 0, 1]}},
    "pins": {"group": "top"}
  }
}
EOF
"$DRAPE" run "$T/scene.json" --local --out "$T/ref" --quiet 2>"$T/ref.err" ||
	{ fail reference_run "$(cat "$T/ref.err")"; finish; }

start_daemon "$T/draped1.log" || { fail daemon_start "$(tail -n 5 "$T/draped1.log")"; finish; }

# Leave about 400 kB: the inputs and first checkpoint (about 90 kB) and
# some 20 frames fit, the 60 do not.
room=$(avail)
dd if=/dev/zero of="$STATE/filler" bs=4096 count=$(((room - 400000) / 4096)) 2>/dev/null
echo "  state dir: $room bytes free, $(avail) after the filler"

# ---- the disk fills up in the middle of a run --------------------------------
"$DRAPE" run "$T/scene.json" --server "$URL" --out "$T/run" --quiet >"$T/run.out" 2>"$T/run.err"
rc=$?
id=$(sed -n -E 's/^drape: session ([0-9]+) on .*/\1/p' "$T/run.err")
echo "  client (exit $rc): $(tail -n 1 "$T/run.err")"
if [ "$rc" -ne 0 ] && grep -q "EIO\|input/output" "$T/run.err" && grep -q "frames.bin" "$T/run.err" &&
	grep -q "No space left on device" "$T/run.err"; then
	pass run_fails_with_eio_naming_the_file
else
	fail run_fails_with_eio_naming_the_file "exit $rc: $(cat "$T/run.err")"
fi
[ -n "$id" ] || { fail session_id "no session id in: $(cat "$T/run.err")"; finish; }

"$DRAPE" status "$id" --server "$URL" --json >"$T/st.json" 2>&1
n=$(json_u frames_done "$T/st.json")
efr=$(sed -n -E 's/.*"error":\{"code":"EIO","frame":([0-9]+)\}.*/\1/p' "$T/st.json")
echo "  status: $(sed -n -E 's/.*("storage_error":.*)\}$/\1/p' "$T/st.json")"
echo "  the run failed at frame $efr; frames_done $n"
if grep -q '"state":"failed"' "$T/st.json" && [ -n "$efr" ] && [ -n "$n" ] && [ "$n" -ge "$efr" ] &&
	[ "$efr" -gt 1 ] && [ "$efr" -lt 60 ] &&
	grep -q '"storage_error":{"code":"EIO","message":".*frames.bin: No space left on device' "$T/st.json"; then
	pass status_says_failed_eio_and_storage_error
else
	fail status_says_failed_eio_and_storage_error "$(cat "$T/st.json")"
	finish
fi

# Every frame the run announced is served, exactly, though the last ones
# never reached the disk and the ring holds one frame.
got=$(ls "$T/run" 2>/dev/null | grep -c '^frame_[0-9]*\.obj$')
s=$(same_files "$T/ref" "$T/run" 1 "$n")
[ "$got" -eq "$n" ] && [ "$s" -eq "$n" ] && pass run_client_got_every_frame_exactly ||
	fail run_client_got_every_frame_exactly "$got files, $s of $n equal"
"$DRAPE" attach "$id" --server "$URL" --out "$T/att1" --scene "$T/scene.json" --quiet 2>"$T/att1.err"
s=$(same_files "$T/ref" "$T/att1" 1 "$n")
[ "$s" -eq "$n" ] && pass frames_not_on_disk_still_served ||
	fail frames_not_on_disk_still_served "$s of $n equal: $(cat "$T/att1.err")"

# While the disk is full, resume is refused and changes nothing.
"$DRAPE" resume "$id" --server "$URL" --out "$T/res0" --scene "$T/scene.json" --quiet 2>"$T/res0.err"
rc=$?
echo "  resume on the full disk (exit $rc): $(tail -n 1 "$T/res0.err")"
"$DRAPE" status "$id" --server "$URL" --json >"$T/st0.json" 2>&1
if [ "$rc" -ne 0 ] && grep -q "kept only in memory.*No space left on device" "$T/res0.err" &&
	grep -q '"state":"failed"' "$T/st0.json" && [ "$(json_u frames_done "$T/st0.json")" -eq "$n" ]; then
	pass resume_refused_while_full
else
	fail resume_refused_while_full "exit $rc: $(cat "$T/res0.err") / $(cat "$T/st0.json")"
fi

# Shutdown on the full disk: the checkpoint fails and is not counted.
stop_daemon
grep "shutdown" "$T/draped1.log" | sed 's/^/  log: /'
if grep -q "shutdown: 0 sessions checkpointed, 1 checkpoints failed" "$T/draped1.log" &&
	grep -q "session $id: .*frames.bin: No space left on device" "$T/draped1.log" &&
	! grep -q "shutdown: 1 sessions checkpointed" "$T/draped1.log"; then
	pass shutdown_log_counts_only_what_landed
else
	fail shutdown_log_counts_only_what_landed "$(grep -i 'shutdown\|session' "$T/draped1.log" | tail -n 8)"
fi

# After a restart: the session, with the frames that reached the disk.
start_daemon "$T/draped2.log" || { fail daemon_restart "$(tail -n 5 "$T/draped2.log")"; finish; }
"$DRAPE" status "$id" --server "$URL" --json >"$T/st2.json" 2>&1
m=$(json_u frames_done "$T/st2.json")
echo "  after the restart: frames_done ${m:-?} (the failed run had $n, frame $efr not on disk)"
if [ -n "$m" ] && [ "$m" -eq $((efr - 1)) ]; then
	pass restart_keeps_the_frames_on_disk
else
	fail restart_keeps_the_frames_on_disk "$(cat "$T/st2.json")"
fi

# Space again: resume finishes the run and every frame equals the reference.
rm -f "$STATE/filler"
if "$DRAPE" resume "$id" --server "$URL" --out "$T/res" --scene "$T/scene.json" --quiet 2>"$T/res.err"; then
	"$DRAPE" attach "$id" --server "$URL" --out "$T/att2" --scene "$T/scene.json" --quiet 2>"$T/att2.err"
	s=$(same_files "$T/ref" "$T/att2" 1 60)
	"$DRAPE" status "$id" --server "$URL" --json >"$T/st3.json" 2>&1
	if [ "$s" -eq 60 ] && grep -q '"state":"done","frames_done":60' "$T/st3.json" &&
		! grep -q storage_error "$T/st3.json"; then
		pass resume_after_freeing_space_is_exact
	else
		fail resume_after_freeing_space_is_exact "$s of 60 equal; $(cat "$T/st3.json")"
	fi
else
	fail resume_after_freeing_space_is_exact "exit $?: $(cat "$T/res.err")"
fi

# ---- a disk that is full before the create -----------------------------------
"$DRAPE" delete "$id" --server "$URL" >/dev/null 2>&1
cat >"$T/small.json" <<'EOF'
{
  "frames": 3, "substeps": 2, "iterations": 5,
  "cloth": {
    "mesh": {"grid": {"size": [1, 1], "resolution": [8, 8], "center": [0, 1, 0], "normal": [0, 0, 1]}},
    "pins": {"group": "top"}
  }
}
EOF
"$DRAPE" run "$T/small.json" --server "$URL" --quiet >/dev/null 2>"$T/a.err" || fail session_a "$(cat "$T/a.err")"
"$DRAPE" run "$T/small.json" --server "$URL" --quiet >/dev/null 2>"$T/b.err" || fail session_b "$(cat "$T/b.err")"
ida=$(sed -n -E 's/^drape: session ([0-9]+) on .*/\1/p' "$T/a.err")
idb=$(sed -n -E 's/^drape: session ([0-9]+) on .*/\1/p' "$T/b.err")
dd if=/dev/zero of="$STATE/filler" bs=4096 2>/dev/null
echo "  state dir full: $(avail) bytes free"
ls "$STATE/sessions" >"$T/dirs_before"
"$DRAPE" run "$T/small.json" --server "$URL" --quiet >/dev/null 2>"$T/c.err"
rc=$?
echo "  create on the full disk (exit $rc): $(tail -n 1 "$T/c.err")"
ls "$STATE/sessions" >"$T/dirs_after"
"$DRAPE" sessions --server "$URL" --json >"$T/list.json" 2>&1
if [ "$rc" -ne 0 ] && grep -q "session.create.*No space left on device" "$T/c.err" &&
	cmp -s "$T/dirs_before" "$T/dirs_after" && [ "$(grep -c '"session"' "$T/list.json")" -eq 2 ]; then
	pass create_on_full_disk_fails_with_eio_and_leaves_nothing
else
	fail create_on_full_disk_fails_with_eio_and_leaves_nothing "exit $rc: $(cat "$T/c.err"); dirs $(cat "$T/dirs_before" | tr '\n' ' ')-> $(cat "$T/dirs_after" | tr '\n' ' '); $(cat "$T/list.json")"
fi

# Shutdown with two finished sessions on the full disk: two failures, none counted.
stop_daemon
if grep -q "shutdown: 0 sessions checkpointed, 2 checkpoints failed" "$T/draped2.log" &&
	[ "$(grep -c "state.bin: No space left on device" "$T/draped2.log")" -ge 2 ]; then
	pass shutdown_with_two_failed_checkpoints_says_so
else
	fail shutdown_with_two_failed_checkpoints_says_so "$(grep -i 'shutdown\|state.bin' "$T/draped2.log" | tail -n 6)"
fi
start_daemon "$T/draped3.log" || { fail daemon_restart_full "$(tail -n 5 "$T/draped3.log")"; finish; }
"$DRAPE" sessions --server "$URL" --json >"$T/list3.json" 2>&1
if grep -q "^{\"session\":$ida," "$T/list3.json" && grep -q "^{\"session\":$idb," "$T/list3.json" &&
	[ "$(grep -c '"session"' "$T/list3.json")" -eq 2 ]; then
	pass acknowledged_creates_survive_and_failed_one_does_not
else
	fail acknowledged_creates_survive_and_failed_one_does_not "$(cat "$T/list3.json")"
fi
stop_daemon
finish

#!/bin/sh
# Resumable batch runs and the CLI's exit classes: tests/integration/batch.sh BUILD_DIR
# (tests/run.sh passes the build folder and exports DRAPED and DRAPE).
# Prints PASS/FAIL lines and ends with "N passed, M failed".
#
# `drape run --state-dir DIR` is stopped by SIGTERM in the middle of its
# run: it exits 143 with the run checkpointed; run again it exits 0, the
# frames the first attempt wrote are the same files, untouched, and every
# frame is byte-identical to `drape run --local`. A third run has nothing
# to do. Two runs on one DIR: the second is refused with 75. Then the exit
# classes a farm relies on: malformed URL 64, missing mesh 66, unreachable
# server 69, full server 75, and $DRAPE_SERVER as the default server.
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DRAPE=${DRAPE:-$TOP/$B/drape}
DRAPED=${DRAPED:-$TOP/$B/draped}
export DRAPED
T=$(mktemp -d /tmp/drape-batch-XXXXXX)
export XDG_CACHE_HOME="$T/cache"
unset DRAPE_TOKEN DRAPE_SERVER
passed=0
failed=0
xfail=
daemon_pid=
bg_pid=
cleanup() {
	if [ -n "$bg_pid" ]; then kill "$bg_pid" 2>/dev/null; wait "$bg_pid" 2>/dev/null; fi
	if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null; fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }
expect() {
	name=$1 want=$2
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	xfail=
	[ "$got" -eq "$want" ] && return 0
	fail "$name" "exit $got, expected $want; stderr: $(head -c 400 "$T/err")"
	xfail=$failed
	return 1
}
# miss NAME: `expect ... && CHECK && pass NAME || miss NAME`: the chain
# stopped on a false check (a grep, a [ ], a cmp), so FAIL, with the head
# of the command's output; unless it stopped at an expect that has just
# printed its own FAIL (xfail: the failed count that expect left, cleared
# by the next expect, so a chain must begin with one), not counted twice.
miss() {
	if [ -n "$xfail" ] && [ "$xfail" -eq "$failed" ]; then
		xfail=
		return 0
	fi
	xfail=
	fail "$1" "a check was false; out: $(head -c 300 "$T/out" 2>/dev/null); err: $(head -c 300 "$T/err" 2>/dev/null)"
}
# children PID: the process ids whose parent is PID (read from /proc, as
# procps may be missing).
children() {
	for s in /proc/[0-9]*/stat; do
		read -r c_pid c_comm c_state c_ppid c_rest <"$s" 2>/dev/null || continue
		[ "$c_ppid" = "$1" ] && echo "$c_pid"
	done
}
# wait_file PATH: polls (up to 300 s) for PATH to exist; 1 if it never does.
wait_file() {
	i=0
	while [ ! -e "$1" ]; do
		i=$((i + 1))
		[ $i -lt 3000 ] || return 1
		sleep 0.1
	done
}

SCENE="$TOP/examples/flag.json"
SET="--set cloth.mesh.grid.resolution=[24,24]"
N=32
# shellcheck disable=SC2086
"$DRAPE" run "$SCENE" $SET --local --frames $N --out "$T/ref" --quiet || fail reference "exit $?"

# ---- SIGTERM, then resume ----
D="$T/run"
# shellcheck disable=SC2086
"$DRAPE" run "$SCENE" $SET --frames $N --state-dir "$D" --json --quiet >"$T/j1" 2>"$T/e1" &
bg_pid=$!
if ! wait_file "$D/frames/frame_0004.obj"; then
	fail sigterm "no frame 4 within 300 s: $(cat "$T/e1")"
	finish
fi
# The embedded daemon is stopped until the SIGTERM is sent, so the run is
# still mid-way however fast this machine solves the frames left.
embedded=$(children "$bg_pid")
[ -n "$embedded" ] && kill -STOP $embedded
# A second run on the same folder while the first holds it: busy, retry later.
# shellcheck disable=SC2086
expect second_run_on_dir 75 "$DRAPE" run "$SCENE" $SET --frames $N --state-dir "$D" --quiet &&
	grep -q "in use" "$T/err" && pass "a second run on a state dir in use exits 75" || miss "a second run on a state dir in use exits 75"
kill -TERM "$bg_pid"
[ -n "$embedded" ] && kill -CONT $embedded
wait "$bg_pid"
rc=$?
bg_pid=
written=$(ls "$D/frames" | grep -c '^frame_')
if [ $rc -eq 143 ] && [ "$written" -lt $N ] && grep -q '"event":"checkpoint"' "$T/j1" &&
	[ -f "$D/session.json" ] && [ -n "$(ls "$D/daemon/sessions" 2>/dev/null)" ]; then
	pass "SIGTERM mid-run exits 143 with $written of $N frames written and the session checkpointed"
else
	fail sigterm "exit $rc, $written frames, $(cat "$T/e1"; tail -2 "$T/j1"; ls -R "$D" | head)"
fi
ls -i "$D/frames" >"$T/inodes1"
cksum "$D"/frames/* >"$T/sums1"
# shellcheck disable=SC2086
expect resume 0 "$DRAPE" run "$SCENE" $SET --frames $N --state-dir "$D" --json && pass "run again: exit 0" || miss "run again: exit 0"
cp "$T/out" "$T/j2"
resume=$(grep '"event":"resume"' "$T/j2")
done_before=$(echo "$resume" | sed 's/.*"frames_done":\([0-9]*\).*/\1/')
[ -n "$resume" ] && [ "$done_before" -ge "$written" ] &&
	pass "it resumed from the checkpoint (frame $done_before solved before, $written written)" ||
	fail resume_point "$resume / $(head -3 "$T/j2")"
first=$(grep -m1 '^{"frame"' "$T/j2" | sed 's/{"frame":\([0-9]*\).*/\1/')
[ "$first" = $((written + 1)) ] && pass "the first frame received is the first one missing ($first)" ||
	fail first_frame "first frame $first, $written were written"
# The first attempt's files are the same files, unchanged.
ls -i "$D/frames" | grep -F -f "$T/inodes1" | wc -l >"$T/same"
cksum "$D"/frames/* | grep -F -x -f "$T/sums1" | wc -l >"$T/same2"
[ "$(cat "$T/same")" -eq "$written" ] && [ "$(cat "$T/same2")" -eq "$written" ] &&
	pass "the $written frames written before stay as they were" || fail kept "$(cat "$T/same") / $(cat "$T/same2")"
bad=0
f=1
while [ $f -le $N ]; do
	n=$(printf 'frame_%04d.obj' $f)
	cmp -s "$D/frames/$n" "$T/ref/$n" || bad=$((bad + 1))
	f=$((f + 1))
done
[ $bad -eq 0 ] && pass "all $N frames byte-identical to drape run --local" || fail identical "$bad frames differ"
cksum "$D"/frames/* >"$T/sums2"
# shellcheck disable=SC2086
expect again 0 "$DRAPE" run "$SCENE" $SET --frames $N --state-dir "$D" --quiet &&
	cksum "$D"/frames/* | cmp -s - "$T/sums2" && pass "a finished run run again exits 0 and changes nothing" || miss "a finished run run again exits 0 and changes nothing"
# shellcheck disable=SC2086
expect other_frames 64 "$DRAPE" run "$SCENE" $SET --frames $((N + 1)) --state-dir "$D" --quiet &&
	grep -q -- "--frames" "$T/err" && pass "the same state dir with other --frames is a usage error (64)" || miss "the same state dir with other --frames is a usage error (64)"
expect local_state 64 "$DRAPE" run "$SCENE" --local --state-dir "$T/x" && pass "--local --state-dir is a usage error" || miss "--local --state-dir is a usage error"

# ---- SIGKILL: no chance to checkpoint in the CLI ----
# The embedded daemon outlives the CLI for a moment (PR_SET_PDEATHSIG stops
# it with SIGTERM, and it checkpoints) and holds the folder's lock until it
# has exited: a retry meanwhile gets 75, and once it is gone the retry
# continues from the checkpoint.
D2="$T/killed"
# shellcheck disable=SC2086
"$DRAPE" run "$SCENE" $SET --frames $N --state-dir "$D2" --quiet 2>"$T/e3" &
bg_pid=$!
if wait_file "$D2/frames/frame_0003.obj"; then
	kill -KILL "$bg_pid"
	wait "$bg_pid" 2>/dev/null
	bg_pid=
	tries=0
	while :; do
		# shellcheck disable=SC2086
		"$DRAPE" run "$SCENE" $SET --frames $N --state-dir "$D2" --quiet 2>"$T/e4"
		rc=$?
		tries=$((tries + 1))
		[ $rc -eq 75 ] && [ $tries -lt 600 ] || break
		sleep 0.1
	done
	bad=0
	f=1
	while [ $f -le $N ]; do
		n=$(printf 'frame_%04d.obj' $f)
		cmp -s "$D2/frames/$n" "$T/ref/$n" || bad=$((bad + 1))
		f=$((f + 1))
	done
	[ $rc -eq 0 ] && [ $bad -eq 0 ] &&
		pass "after SIGKILL a retry (attempt $tries) finishes the run, all $N frames byte-identical" ||
		fail sigkill "exit $rc after $tries attempts, $bad frames differ: $(cat "$T/e4")"
else
	fail sigkill "no frame 3 within 300 s: $(cat "$T/e3")"
fi

# ---- Exit classes ----
expect bad_url 64 "$DRAPE" status --server "nonsense" && pass "malformed server URL exits 64" || miss "malformed server URL exits 64"
printf '{"frames":2,"cloth":{"mesh":"missing.obj"}}\n' >"$T/nomesh.json"
expect missing_mesh 66 "$DRAPE" run "$T/nomesh.json" --local --quiet && grep -q "missing.obj" "$T/err" &&
	pass "a mesh the scene names that does not exist exits 66, naming it" || miss "a mesh the scene names that does not exist exits 66, naming it"
expect unreachable 69 "$DRAPE" status --server "ipc://$T/nobody.sock" && pass "unreachable server exits 69" || miss "unreachable server exits 69"
DRAPE_SERVER="ipc://$T/nobody.sock" expect env_server 69 "$DRAPE" status &&
	grep -q "nobody.sock" "$T/err" && pass "DRAPE_SERVER is the default server" || miss "DRAPE_SERVER is the default server"
DRAPE_SERVER="ipc://$T/nobody.sock" expect env_local 0 "$DRAPE" run "$SCENE" $SET --local --frames 1 --quiet &&
	pass "--local runs whatever DRAPE_SERVER says" || miss "--local runs whatever DRAPE_SERVER says"

# ---- --set and drape submit's checks (no Slurm needed) ----
expect set_not_object 65 "$DRAPE" run "$SCENE" --local --frames 1 --set fps.x=1 --quiet &&
	grep -q -- '--set fps.x=1: "fps" is not an object' "$T/err" && pass "--set into a non-object names the --set" || miss "--set into a non-object names the --set"
expect set_bad_value 65 "$DRAPE" run "$SCENE" --local --frames 1 --set cloth.material=velvet --quiet &&
	grep -q velvet "$T/err" && pass "--set with a value the scene rejects exits 65, naming it" || miss "--set with a value the scene rejects exits 65, naming it"
expect set_no_eq 64 "$DRAPE" run "$SCENE" --local --set fps && pass "--set without = is a usage error" || miss "--set without = is a usage error"
expect submit_dry 0 "$DRAPE" submit "$SCENE" "$SCENE" --wedge cloth.material=cotton,silk \
	--wedge 'wind.velocity=[1,0,0],[2,0,0]' --frames 3 --out "$T/sub" --dry-run &&
	grep -q '^#SBATCH --array=1-8$' "$T/out" && grep -q '^#SBATCH --requeue$' "$T/out" &&
	grep -q "^8) exec .* --set 'cloth.material=silk' --set 'wind.velocity=\[2,0,0\]' --frames 3 --state-dir '[^']*/task_0008'" "$T/out" &&
	[ ! -e "$T/sub/task_0001/params.json" ] &&
	pass "submit --dry-run prints a job array of scenes x wedges (8 tasks, array values whole) and writes no task" || miss "submit --dry-run prints a job array of scenes x wedges (8 tasks, array values whole) and writes no task"
expect submit_bad_wedge 64 "$DRAPE" submit "$SCENE" --wedge cloth.material= --out "$T/sub" && pass "an empty wedge value is a usage error" || miss "an empty wedge value is a usage error"
expect submit_missing 66 "$DRAPE" submit "$T/nope.json" --out "$T/sub" && pass "submit of a missing scene exits 66" || miss "submit of a missing scene exits 66"
expect farm_not_dir 66 "$DRAPE" farm status "$T/sub" && pass "farm status of a folder without tasks exits 66" || miss "farm status of a folder without tasks exits 66"

URL="ipc://$T/full.sock"
"$DRAPED" --listen "$URL" --state-dir "$T/state-full" --max-sessions 1 --threads 1 >"$T/full.log" 2>&1 &
daemon_pid=$!
i=0
until "$DRAPE" status --server "$URL" >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 300 ] || { fail full "daemon never answered: $(cat "$T/full.log")"; finish; }
	sleep 0.1
done
# shellcheck disable=SC2086
DRAPE_SERVER="$URL" expect first_session 0 "$DRAPE" run "$SCENE" $SET --frames 1 --quiet &&
	DRAPE_SERVER="$URL" expect full_server 75 "$DRAPE" run "$SCENE" $SET --frames 1 --quiet &&
	grep -q max_sessions "$T/err" && pass "a full server (max_sessions) exits 75, naming the limit" || miss "a full server (max_sessions) exits 75, naming the limit"
kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null
"$DRAPED" --listen "$URL" --state-dir "$T/state-small" --max-vertices 100 --threads 1 >"$T/full.log" 2>&1 &
daemon_pid=$!
i=0
until "$DRAPE" status --server "$URL" >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -lt 300 ] || break; sleep 0.1
done
# shellcheck disable=SC2086
expect never_fits 65 "$DRAPE" run "$SCENE" $SET --frames 1 --server "$URL" --quiet &&
	grep -q max_vertices "$T/err" && pass "a mesh over max_vertices (never fits) exits 65, not 75" || miss "a mesh over max_vertices (never fits) exits 65, not 75"
finish

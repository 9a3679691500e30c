#!/bin/sh
# A pool of daemons behind one DRAPE_SERVER: tests/integration/pool.sh BUILD_DIR
# (tests/run.sh passes the build folder and exports DRAPED and DRAPE).
# Prints PASS/FAIL lines and ends with "N passed, M failed".
#
# Three draped on ipc sockets. 30 `drape run`s with DRAPE_SERVER listing the
# three are placed within +-2 of 10 each (their sessions are idle between
# runs, so the placement rule falls to free memory, which spreads them).
# Then one daemon is stopped: 30 more runs all succeed, none is placed on
# it, each run says it skipped it, and the two left get 15 +-2 each. A
# session placed through the pool is reached again through the pool
# (`drape status ID` goes to the box that holds it), and a malformed URL in
# the list is a usage error (64), not a box skipped.
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DRAPE=${DRAPE:-$TOP/$B/drape}
DRAPED=${DRAPED:-$TOP/$B/draped}
T=$(mktemp -d /tmp/drape-pool-XXXXXX)
export XDG_CACHE_HOME="$T/cache"
unset DRAPE_TOKEN DRAPE_SERVER
passed=0
failed=0
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

for n in 1 2 3; do
	"$DRAPED" --listen "ipc://$T/d$n.sock" --state-dir "$T/state$n" --threads 1 >"$T/d$n.log" 2>&1 &
	eval "pid$n=$!"
	pids="$pids $!"
done
for n in 1 2 3; do
	i=0
	until "$DRAPE" status --server "ipc://$T/d$n.sock" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 300 ] || { fail "daemon $n" "never answered: $(tail -3 "$T/d$n.log")"; finish; }
		sleep 0.1
	done
done
POOL="ipc://$T/d1.sock,ipc://$T/d2.sock,ipc://$T/d3.sock"
export DRAPE_SERVER="$POOL"
# A small sheet, one frame: placement is what is measured, not the solver.
run_one() {
	"$DRAPE" run "$TOP/examples/flag.json" --set 'cloth.mesh.grid.resolution=[8,8]' \
		--set 'self_collision.enabled=false' --frames 1 --quiet 2>>"$T/runs.err"
}
count() { "$DRAPE" sessions --server "ipc://$T/d$1.sock" --json 2>/dev/null | grep -c '"session":'; }

bad=0
i=0
while [ $i -lt 30 ]; do
	run_one || bad=$((bad + 1))
	i=$((i + 1))
done
[ $bad -eq 0 ] && pass "30 runs on the pool of 3 succeeded" || fail "runs" "$bad failed: $(tail -3 "$T/runs.err")"
c1=$(count 1) c2=$(count 2) c3=$(count 3)
ok=1
for c in $c1 $c2 $c3; do [ "$c" -ge 8 ] && [ "$c" -le 12 ] || ok=0; done
[ $ok -eq 1 ] && [ $((c1 + c2 + c3)) -eq 30 ] &&
	pass "placed $c1/$c2/$c3 (within +-2 of 10 each)" || fail "even placement" "$c1/$c2/$c3"

# Reaching a session through the pool: the newest placed; its id exists on
# the other boxes too, so only the record of where it went finds it.
last=$(grep -o 'session [0-9]* on ipc://[^ ,]*d[123].sock' "$T/runs.err" | tail -1)
id=$(echo "$last" | sed 's/session \([0-9]*\) .*/\1/')
box=$(echo "$last" | sed 's/.*d\([123]\)\.sock/\1/')
if [ -n "$id" ] && "$DRAPE" status "$id" --json >"$T/st.json" 2>"$T/st.err" && grep -q '"state":"done"' "$T/st.json"; then
	pass "drape status $id through the pool reached its box"
else
	fail "status through the pool" "id '$id': $(cat "$T/st.err" "$T/st.json" 2>/dev/null)"
fi

# `drape delete ID` given the pool deletes on the box that holds ID, and
# only there (box 1 and 2 have a session with that id too).
before="$(count 1)/$(count 2)/$(count 3)"
if "$DRAPE" delete "$id" 2>"$T/del.err"; then
	after="$(count 1)/$(count 2)/$(count 3)"
	want=$(echo "$before" | awk -F/ -v b="$box" '{ $b = $b - 1; print $1 "/" $2 "/" $3 }')
	[ "$after" = "$want" ] &&
		pass "drape delete $id through the pool deleted it on box $box only ($before -> $after)" ||
		fail "delete through the pool" "box $box: $before -> $after, expected $want"
	[ "$box" = 1 ] && c1=$((c1 - 1))
	[ "$box" = 2 ] && c2=$((c2 - 1))
else
	fail "delete through the pool" "$(cat "$T/del.err")"
fi

kill "$pid3"
wait "$pid3" 2>/dev/null
: >"$T/runs.err"
bad=0
i=0
while [ $i -lt 30 ]; do
	run_one || bad=$((bad + 1))
	i=$((i + 1))
done
[ $bad -eq 0 ] && pass "30 more runs with daemon 3 stopped succeeded" || fail "runs, one down" "$bad failed: $(tail -3 "$T/runs.err")"
on3=$(grep -c "placed on ipc://$T/d3.sock\|session [0-9]* on ipc://$T/d3.sock" "$T/runs.err")
skips=$(grep -c "skipping ipc://$T/d3.sock" "$T/runs.err")
[ "$on3" -eq 0 ] && pass "none placed on the stopped daemon" || fail "stopped daemon" "$on3 placed on it"
[ "$skips" -eq 30 ] && pass "each run logged that it skipped the stopped daemon" || fail "skip log" "$skips lines"
n1=$(($(count 1) - c1)) n2=$(($(count 2) - c2))
[ $n1 -ge 13 ] && [ $n1 -le 17 ] && [ $((n1 + n2)) -eq 30 ] &&
	pass "placed $n1/$n2 on the two left (within +-2 of 15)" || fail "even placement, one down" "$n1/$n2"

expect_rc() { "$@" >/dev/null 2>"$T/x.err"; echo $?; }
[ "$(expect_rc "$DRAPE" sessions)" -eq 64 ] && grep -q "is a pool" "$T/x.err" &&
	[ "$(expect_rc "$DRAPE" status)" -eq 64 ] &&
	pass "sessions and server status on a pool are usage errors (one box at a time)" ||
	fail "pool listing" "$(cat "$T/x.err")"
DRAPE_SERVER="ipc://$T/d1.sock,nonsense" "$DRAPE" run "$TOP/examples/flag.json" --frames 1 --quiet 2>"$T/bad.err"
rc=$?
[ $rc -eq 64 ] && pass "a malformed URL in the pool exits 64" || fail "malformed URL" "exit $rc: $(cat "$T/bad.err")"
finish

#!/bin/sh
# Runs the whole suite and ends with one line "N passed, M failed".
#   tests/run.sh BUILD_DIR [unit]
# Each test program prints PASS/FAIL lines and its own "N passed, M failed";
# this script sums them. A program that crashes or prints no summary counts
# as one failure. The sanitizer pass rebuilds the unit tests with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs them again.
#   tests/run.sh --start-san-vdb
# starts compiling the sanitizer pass's OpenVDB wrapper (sdf_vdb.cc, the
# longest compile of the suite) in the background at the lowest priority
# and returns at once; `make test` does it before its plain build, so the
# compile takes only the CPU the build and the programs leave idle, and the
# sanitizer build later waits for it instead of starting it.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
NPROC=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
S=build/san-address-undefined
SAN_VDB_O=$S/obj/server/sim/sdf_vdb.o
# The background compile's state: .pid (its shell), .rc (its exit status,
# written when it ends) and .log; SAN_BGC the same for the pass's C
# objects.
SAN_BG=$S/vdb-background
SAN_BGC=$S/c-background
# The background makes below outlive the `make test` that started them
# unless told: an asynchronous command of a non-interactive shell ignores
# SIGINT, so a Ctrl-C left a 2 GB compile running for minutes, and a
# second `make test` then compiled the same object beside it. Each runs
# under this watch instead: it polls every second for the make that ran
# `make test` (this script's parent, or the nearest make above it) and,
# once that is gone, stops its make and everything under it.
#   bg_watch WATCH_PID STATUS_FILE COMMAND...
BG_WATCH='
children() {
	for st in /proc/[0-9]*/stat; do
		read -r c_pid c_comm c_state c_ppid c_rest <"$st" 2>/dev/null || continue
		[ "$c_ppid" = "$1" ] && echo "$c_pid"
	done
}
stop_tree() {
	kill -STOP "$1" 2>/dev/null
	for c in $(children "$1"); do stop_tree "$c"; done
	kill -TERM "$1" 2>/dev/null
	kill -CONT "$1" 2>/dev/null
}
watch=$1 status=$2
shift 2
"$@" &
job=$!
while kill -0 "$job" 2>/dev/null; do
	if [ -n "$watch" ] && ! kill -0 "$watch" 2>/dev/null; then
		stop_tree "$job"
		break
	fi
	sleep 1
done
wait "$job"
echo $? >"$status"
'
if [ "${1:-}" = --start-san-vdb ]; then
	[ "${DRAPE_SKIP_SANITIZE:-0}" = 1 ] && exit 0
	mkdir -p "$S" || exit 1
	# The make to watch: the nearest make above this script.
	watch=
	p=$PPID
	while [ -n "$p" ] && [ "$p" -gt 1 ]; do
		read -r c_pid c_comm c_state c_ppid c_rest <"/proc/$p/stat" 2>/dev/null || break
		if [ "$c_comm" = "(make)" ]; then
			watch=$p
			break
		fi
		p=$c_ppid
	done
	rm -f "$SAN_BG.pid" "$SAN_BG.rc" "$SAN_BGC.pid" "$SAN_BGC.rc"
	# The solver's stamp first, alone: both background makes below
	# depend on it, and its rule removes and remakes it.
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s SANITIZE=address,undefined \
		BUILD="$S" simd-stamp </dev/null >/dev/null 2>&1
	# In the suite's own session: with the kernel's autogroup scheduling
	# (sched_autogroup_enabled) a nice value only counts against the
	# processes of the same session, so a setsid here would make the
	# compile an equal of the whole suite instead of its idle-time
	# guest. No MAKEFLAGS, so it joins no jobserver of the make that
	# started it.
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL nice -n 19 sh -c "$BG_WATCH" sh "$watch" "$SAN_BG.rc" \
		sh -c 'exec make --no-print-directory -s SANITIZE=address,undefined BUILD="$1" "$2" >"$3.log" 2>&1' \
		sh "$S" "$SAN_VDB_O" "$SAN_BG" </dev/null >/dev/null 2>&1 &
	echo $! >"$SAN_BG.pid"
	# The pass's C objects too, on every core, under SCHED_IDLE: they run
	# only on a core nothing else wants, so they neither slow the suite
	# nor take the wrapper's compile's share (a nice-19 process still
	# gets about 1.5 % of a core beside a nice-0 one, and the wrapper 5
	# times what a SCHED_IDLE one gets beside it), and they turn the
	# idle time of the integration programs, which run one at a time
	# and wait on daemons, into the sanitizer stage's C objects.
	idle="nice -n 19"
	command -v chrt >/dev/null 2>&1 && idle="chrt --idle 0"
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL $idle sh -c "$BG_WATCH" sh "$watch" "$SAN_BGC.rc" \
		sh -c 'exec make --no-print-directory -s -j"$4" SANITIZE=address,undefined BUILD="$1" unit-c-objects >"$3.log" 2>&1' \
		sh "$S" unused "$SAN_BGC" "$NPROC" </dev/null >/dev/null 2>&1 &
	echo $! >"$SAN_BGC.pid"
	exit 0
fi

# descendants PID: PID and every process under it, one per line.
descendants() {
	ps -eo pid=,ppid= | awk -v r="$1" '{ up[$1] = $2 }
		END { for (p in up) { q = p; while (q != r && (q in up) && q > 1) q = up[q]; if (q == r) print p } }'
}
B=${1:-build}
ONLY=${2:-}
passed=0
failed=0
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
# The daemons the tests start read no system-wide /etc/drape/draped.json.
export DRAPED_CONFIG=

# The unit programs run J at a time (one per core; DRAPE_TEST_JOBS=1 runs
# them one after another). Each writes its own temporary files, and each
# waits for conditions rather than durations, so a neighbour only slows
# it. Their reports are printed in order, whole, as they would be alone.
J=${DRAPE_TEST_JOBS:-$NPROC}
jobs_started=0

# start LABEL COMMAND...: runs one test program in the background; its
# output, exit status and wall time go to $log/N.out, N.rc and N.ms.
start() {
	jobs_started=$((jobs_started + 1))
	n=$jobs_started
	label=$1
	shift
	echo "$label" >"$log/$n.label"
	(
		t0=$(date +%s%N)
		# A program that hangs is killed and counted as a failure rather
		# than holding CI until its own limit.
		timeout -k 10 "${DRAPE_TEST_TIMEOUT:-600}" "$@" >"$log/$n.out" 2>&1
		rc=$?
		[ "$rc" -eq 124 ] && echo "FAIL $label: killed after ${DRAPE_TEST_TIMEOUT:-600} s" >>"$log/$n.out"
		echo $((($(date +%s%N) - t0) / 1000000)) >"$log/$n.ms"
		# The CPU time (user + system) of the program and the children
		# it waited for, from this shell's `times` (its second line, e.g.
		# "0m1.20s 0m0.03s"); written to a file, since in a pipeline or a
		# $(...) it would run in a new subshell with no children.
		times >"$log/$n.times"
		awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); s += a[1] * 60 + a[2] }
			printf "%d\n", s * 1000 }' "$log/$n.times" >"$log/$n.cpu"
		echo "$rc" >"$log/$n.rc"
	) &
}

# report N: prints program N's output and adds its counts.
report() {
	n=$1
	label=$(cat "$log/$n.label")
	rc=$(cat "$log/$n.rc")
	ms=$(cat "$log/$n.ms")
	cpu=$(cat "$log/$n.cpu" 2>/dev/null || echo 0)
	echo "== $label"
	cat "$log/$n.out"
	# Each program's wall and CPU time, so the slow ones are visible in
	# CI's log and in the table printed at the end.
	echo "   ($label: $ms ms, CPU $cpu ms)"
	printf '%s\t%s\n' "$ms" "$label" >>"$log/times"
	printf '%s\t%s\n' "$cpu" "${label%% *}" >>"$log/cpu"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log/$n.out" | tail -n 1)
	if [ -z "$line" ]; then
		echo "FAIL $label: exited $rc without a summary"
		failed=$((failed + 1))
		return
	fi
	p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
	f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $label: exited $rc"
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
}

# run LABEL COMMAND...: runs one test program alone and adds its counts.
run() {
	start "$@"
	wait
	report "$jobs_started"
}

# The programs that take longest (about 10 s or more plain, 20 s or more
# under the sanitizers; README "make test"), longest first: run_parallel
# starts these before the rest, so the batch does not end with one long
# program on one core while the others idle.
LONG="test_sim_material test_sim_colscene test_client_garment test_sim_settle test_sim_tether
test_sim_deform test_sim_deform_walk test_sim_field test_sim_bodykeep test_sim_speed
test_client_bodypush test_sim_layers test_sim_selfscene test_sim_stitch test_sim_props
test_sim_selfthick test_sim_bodyproj"

# longest_first PROGRAM...: the programs named in $LONG first, in its
# order, then the others in the order given; one per line.
longest_first() {
	for l in $LONG; do
		for t in "$@"; do
			[ "$(basename "$t")" = "$l" ] && echo "$t"
		done
	done
	for t in "$@"; do
		case " $(echo $LONG) " in
		*" $(basename "$t") "*) ;;
		*) echo "$t" ;;
		esac
	done
}

# run_parallel PREFIX PROGRAM...: runs the programs J at a time, longest
# first, then reports each in the order given.
run_parallel() {
	prefix=$1
	shift
	first=$((jobs_started + 1))
	longest_first "$@" >"$log/order"
	while read -r t; do
		[ -x "$t" ] || continue
		# Programs started in this batch and not yet finished.
		while :; do
			done_n=0
			i=$first
			while [ "$i" -le "$jobs_started" ]; do
				[ -f "$log/$i.rc" ] && done_n=$((done_n + 1))
				i=$((i + 1))
			done
			[ $((jobs_started - first + 1 - done_n)) -lt "$J" ] && break
			sleep 0.2
		done
		start "$prefix $(basename "$t")" "$t"
		echo "$jobs_started" >"$log/n.$first.$(basename "$t")"
	done <"$log/order"
	wait
	for t in "$@"; do
		[ -f "$log/n.$first.$(basename "$t")" ] && report "$(cat "$log/n.$first.$(basename "$t")")"
	done
}

run_parallel unit "$B"/tests/test_*

if [ "$ONLY" != unit ]; then
	export DRAPED="$TOP/$B/draped" DRAPE="$TOP/$B/drape"
	for t in "$B"/itests/*; do
		[ -x "$t" ] && run "integration $(basename "$t")" "$t"
	done
	for t in tests/integration/*.sh; do
		[ -f "$t" ] && run "integration $(basename "$t")" sh "$t" "$B"
	done
	# The Python package's pytest suite, one count per test case.
	run "python package (pytest)" sh tests/python/run.sh "$B"
	# The Blender add-on in Debian's Blender, headless, one count per case.
	run "blender add-on" sh tests/blender/run.sh "$B"
	# Fuzz corpora (tests/fuzz/<target>/, crash reproducers included) go
	# through each target in-process; a crash prints the file's name.
	for t in proto obj scene daemon pc2; do
		if [ -x "$B/fuzz_replay_$t" ]; then
			run "fuzz corpus replay $t" "$B/fuzz_replay_$t" "tests/fuzz/$t"
		else
			echo "FAIL fuzz corpus replay $t: $B/fuzz_replay_$t was not built"
			failed=$((failed + 1))
		fi
	done
	if [ "${DRAPE_SKIP_SANITIZE:-0}" != 1 ]; then
		echo "== building the sanitizer pass in $S"
		t0=$(date +%s%N)
		if [ -f "$SAN_BG.pid" ]; then
			# The wrapper's compile started in the background (make test):
			# at full priority now (where the system allows it), while
			# the other cores build the C objects; then wait for it.
			pg=$(cat "$SAN_BG.pid")
			# (Lowering a nice value needs CAP_SYS_NICE: as another
			# user the compile keeps nice 19, and still has a core to
			# itself on an otherwise idle machine.)
			# With the compile at nice 0 the C objects build on every
			# core at nice 5: the compile keeps about a core, and once
			# it ends they have them all (on one core less, measured
			# under load, they were the stage's critical path). At
			# nice 19 it would starve beside them: one core less.
			if [ -f "$SAN_BG.rc" ] || [ -z "$(descendants "$pg")" ]; then
				cj=$NPROC cn=0
			elif renice -n 0 -p $(descendants "$pg") >/dev/null 2>&1; then
				cj=$NPROC cn=5
			else
				cj=$((NPROC > 1 ? NPROC - 1 : 1)) cn=0
			fi
			pc=$(cat "$SAN_BGC.pid" 2>/dev/null)
			if [ -n "$pc" ] && [ ! -f "$SAN_BGC.rc" ] && [ -n "$(descendants "$pc")" ]; then
				# The C objects' background make (SCHED_IDLE since
				# make test began) goes on with what it has left,
				# as the stage's own make did: on every core at
				# nice 5 beside the wrapper (where the system lets
				# it leave SCHED_IDLE; otherwise it keeps taking
				# whatever core the wrapper leaves). A second make
				# on the same objects would race it.
				for p in $(descendants "$pc"); do
					chrt --other -p 0 "$p" && renice -n "$cn" -p "$p"
				done >/dev/null 2>&1
				while [ ! -f "$SAN_BGC.rc" ] && kill -0 "$pc" 2>/dev/null; do
					sleep 0.5
				done
			elif [ -z "$pc" ]; then
				nice -n "$cn" make --no-print-directory -s -j"$cj" SANITIZE=address,undefined \
					BUILD=$S unit-c-objects >"$log/san-c" 2>&1
			fi
			echo "   (the C objects, built in the background since make test began: exit $(cat "$SAN_BGC.rc" 2>/dev/null || echo unknown), done $((($(date +%s%N) - t0) / 1000000)) ms into the stage)"
			while [ ! -f "$SAN_BG.rc" ] && kill -0 "$pg" 2>/dev/null; do
				sleep 0.5
			done
			echo "   (the C objects and the wrapper's background compile, exit $(cat "$SAN_BG.rc" 2>/dev/null || echo unknown): $((($(date +%s%N) - t0) / 1000000)) ms)"
			rm -f "$SAN_BG.pid" "$SAN_BGC.pid"
		fi
		# (Whatever the background left undone or failed is built here,
		# and its errors shown.)
		if make --no-print-directory -s -j"$NPROC" SANITIZE=address,undefined BUILD=$S \
			"$SAN_VDB_O" \
			$(for t in "$B"/tests/test_*; do echo "$S/tests/$(basename "$t")"; done) >"$log/san" 2>&1; then
			ms=$((($(date +%s%N) - t0) / 1000000))
			echo "   (sanitizer build: $ms ms)"
			printf '%s\t%s\n' "$ms" "sanitizer build" >>"$log/times"
			export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
			run_parallel asan+ubsan "$S"/tests/test_*
			unset ASAN_OPTIONS UBSAN_OPTIONS
		else
			cat "$log/san"
			echo "FAIL sanitizer build"
			failed=$((failed + 1))
		fi
	fi
fi

if [ -s "$log/times" ]; then
	echo "== the ten slowest programs (ms)"
	sort -rn "$log/times" | head -n 10
	# Per kind (unit, integration, asan+ubsan, ...): a daemon a test
	# detaches and never waits for is not in these sums.
	echo "== CPU time of the programs, per kind (ms)"
	awk -F '\t' '{ s[$2] += $1 } END { for (k in s) printf "%d\t%s\n", s[k], k }' "$log/cpu" | sort -rn
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

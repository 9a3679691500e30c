#!/bin/sh
# Runs the whole suite and ends with one line "N passed, M failed".
#   tests/run.sh BUILD_DIR [unit]
# Each test program prints PASS/FAIL lines and its own "N passed, M failed";
# this script sums them. A program that crashes or prints no summary counts
# as one failure. The sanitizer pass rebuilds the unit tests with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs them again.
set -u
B=${1:-build}
ONLY=${2:-}
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
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
J=${DRAPE_TEST_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
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
		echo "$rc" >"$log/$n.rc"
	) &
}

# report N: prints program N's output and adds its counts.
report() {
	n=$1
	label=$(cat "$log/$n.label")
	rc=$(cat "$log/$n.rc")
	ms=$(cat "$log/$n.ms")
	echo "== $label"
	cat "$log/$n.out"
	# Each program's wall time, so the slow ones are visible in CI's log
	# and in the table printed at the end.
	echo "   ($label: $ms ms)"
	printf '%s\t%s\n' "$ms" "$label" >>"$log/times"
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

# run_parallel PREFIX PROGRAM...: runs the programs J at a time, then
# reports each in the order given.
run_parallel() {
	prefix=$1
	shift
	first=$((jobs_started + 1))
	for t in "$@"; do
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
	done
	wait
	i=$first
	while [ "$i" -le "$jobs_started" ]; do
		report "$i"
		i=$((i + 1))
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
		S=build/san-address-undefined
		echo "== building the sanitizer pass in $S"
		t0=$(date +%s%N)
		if make --no-print-directory -s -j"$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)" SANITIZE=address,undefined BUILD=$S \
			"$S/obj/server/sim/sdf_vdb.o" \
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
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

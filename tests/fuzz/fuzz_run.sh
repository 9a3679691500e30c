#!/bin/sh
# Runs fuzz targets one after another and keeps what they find.
#   tests/fuzz/fuzz_run.sh FUZZ_BUILD_DIR SECONDS TARGET...   (TARGET: proto obj scene daemon pc2)
# For each target: fuzz for SECONDS (single process, niced, so other builds
# keep their cores) starting from a copy of tests/fuzz/TARGET without its
# crash reproducers (they would stop the run at once); merge the inputs that
# add coverage into tests/fuzz/TARGET (-merge=1); minimize that corpus while
# keeping every seed-* and crash-* file; print the exec count. A crash found
# is copied into the corpus as crash-TARGET-SHA1, where `make test` replays
# it until the bug is fixed. SECONDS = 0 only merges and minimizes.
set -u
FZ=$1
SECS=$2
shift 2
mkdir -p "$FZ/logs"
summary=$FZ/logs/summary.txt
: >"$summary"
status=0
for t in "$@"; do
	bin=$FZ/fuzz_$t
	corpus=tests/fuzz/$t
	work=$FZ/work/$t
	art=$FZ/artifacts/$t
	log=$FZ/logs/$t.log
	case $t in
	proto) maxlen=8192 ;;
	obj) maxlen=8192 ;;
	*) maxlen=4096 ;;
	esac
	dict=
	[ -f "tests/fuzz/$t.dict" ] && dict=-dict=tests/fuzz/$t.dict
	mkdir -p "$corpus" "$art"
	if [ "$SECS" -gt 0 ]; then
		rm -rf "$work"
		mkdir -p "$work"
		for f in "$corpus"/*; do
			case $(basename "$f") in crash-*) ;; *) cp "$f" "$work/" ;; esac
		done
		echo "== fuzz_$t for $SECS s (log: $log)"
		start=$(date +%s)
		nice -n 10 "$bin" -max_total_time="$SECS" -print_final_stats=1 -timeout=10 \
			-rss_limit_mb=2048 -max_len="$maxlen" $dict -artifact_prefix="$art/" \
			"$work" >"$log" 2>&1
		rc=$?
		took=$(($(date +%s) - start))
		execs=$(grep -E 'stat::number_of_executed_units' "$log" | tail -n 1 | awk '{print $2}')
		done_line=$(grep -E '^Done [0-9]+ runs' "$log" | tail -n 1)
		for c in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*; do
			[ -f "$c" ] || continue
			b=$(basename "$c")
			kind=${b%%-*}
			sha=${b#*-}
			cp "$c" "$corpus/crash-$t-$kind-$sha"
			echo "fuzz_$t: FOUND $kind, reproducer $corpus/crash-$t-$kind-$sha"
			echo "fuzz_$t: FOUND $kind, reproducer $corpus/crash-$t-$kind-$sha" >>"$summary"
			status=1
		done
		[ "$rc" -ne 0 ] && tail -n 40 "$log"
		echo "fuzz_$t: ${execs:-?} execs in $took s (exit $rc) ${done_line}" | tee -a "$summary"
		"$bin" -merge=1 -timeout=10 -rss_limit_mb=2048 -max_len="$maxlen" "$corpus" "$work" \
			>"$FZ/logs/$t.merge.log" 2>&1
	fi
	# Minimize: seeds and crash reproducers always stay; of the rest, only a
	# set covering the edges they add beyond them (-use_counters=0: hit
	# counts do not count as new coverage, which keeps the corpus to a few
	# hundred files).
	min=$FZ/min/$t
	rm -rf "$min"
	mkdir -p "$min"
	for f in "$corpus"/seed-* "$corpus"/crash-*; do
		[ -f "$f" ] && cp "$f" "$min/"
	done
	if "$bin" -merge=1 -use_counters=0 -timeout=10 -rss_limit_mb=2048 -max_len="$maxlen" "$min" "$corpus" \
		>"$FZ/logs/$t.min.log" 2>&1; then
		rm -f "$corpus"/*
		cp "$min"/* "$corpus/"
	else
		echo "fuzz_$t: minimize failed, corpus left as merged (see $FZ/logs/$t.min.log)"
	fi
	echo "fuzz_$t: corpus $corpus holds $(ls "$corpus" | wc -l) files" | tee -a "$summary"
done
echo "== summary"
cat "$summary"
exit $status

#!/bin/sh
# Integration tests of `drape run --threads N`: tests/integration/threads.sh BUILD_DIR
# (tests/run.sh passes the build folder and exports DRAPED and DRAPE).
# Prints PASS/FAIL lines and ends with "N passed, M failed".
#
# The scene is a 96 x 96 sheet (9,216 vertices) so that the solver really
# splits its colour groups into blocks over two threads; a sheet smaller than
# one block would take the one-thread path whatever --threads says, and the
# bit-identity check could not fail.
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DRAPE=${DRAPE:-$TOP/$B/drape}
DRAPED=${DRAPED:-$TOP/$B/draped}
T=$(mktemp -d /tmp/drape-threads-XXXXXX)
export XDG_CACHE_HOME="$T/cache"
export TMPDIR="$T/tmp"
mkdir -p "$TMPDIR"
unset DRAPE_SERVER DRAPE_TOKEN
passed=0
failed=0
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT TERM

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

# expect NAME WANT_STATUS CMD...: runs CMD, output to $T/out and $T/err.
expect() {
	name=$1 want=$2
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	if [ "$got" -eq "$want" ]; then
		return 0
	fi
	fail "$name" "exit $got, expected $want; stderr: $(head -c 400 "$T/err")"
	return 1
}

# same_frames NAME DIR_A DIR_B: every frame file of A equals B's, byte for byte.
same_frames() {
	n=0
	for f in "$2"/frame_*.obj; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		if ! cmp -s "$f" "$3/$(basename "$f")"; then
			fail "$1" "$(basename "$f") differs between $2 and $3"
			return
		fi
	done
	if [ "$n" -eq 4 ]; then pass "$1"; else fail "$1" "$n frames in $2, want 4"; fi
}

cat >"$T/sheet.json" <<'JSON'
{
  "fps": 24, "frames": 4, "substeps": 2, "iterations": 6,
  "wind": {"velocity": [1, 0, 2], "drag": 1.0, "lift": 0.3},
  "cloth": {
    "mesh": {"grid": {"size": [2, 2], "resolution": [96, 96], "center": [0, 1.2, 0], "normal": [0, 1, 0]}},
    "material": "cotton"
  },
  "colliders": [{"sphere": {"center": [0, 0.6, 0], "radius": 0.5}, "friction": 0.4}]
}
JSON

# ---- Usage errors name the option and change nothing ----------------------------

for bad in 0 257 two -1 ""; do
	if expect "threads_bad_$bad" 64 "$DRAPE" run "$T/sheet.json" --local --threads "$bad" --out "$T/bad"; then
		if grep -q -- "--threads" "$T/err" && [ ! -e "$T/bad" ]; then pass "threads_rejects_[$bad]"
		else fail "threads_rejects_[$bad]" "message $(cat "$T/err"), or $T/bad written"; fi
	fi
done
if expect threads_with_server 64 "$DRAPE" run "$T/sheet.json" --server "ipc://$T/nobody.sock" --threads 2; then
	if grep -q -- "--threads applies to the embedded server and --local" "$T/err"; then pass threads_not_with_server
	else fail threads_not_with_server "message: $(cat "$T/err")"; fi
fi

# ---- --local: a pool of N threads, bit-identical frames ----------------------------

if expect local_1 0 "$DRAPE" run "$T/sheet.json" --local --threads 1 --out "$T/l1"; then
	if grep -q "on 1 thread$" "$T/err"; then pass local_threads_1_says_1
	else fail local_threads_1_says_1 "stderr: $(head -c 300 "$T/err")"; fi
fi
if expect local_2 0 "$DRAPE" run "$T/sheet.json" --local --threads 2 --out "$T/l2"; then
	if grep -q "on 2 threads$" "$T/err"; then pass local_threads_2_says_2
	else fail local_threads_2_says_2 "stderr: $(head -c 300 "$T/err")"; fi
fi
same_frames local_threads_1_equals_2 "$T/l1" "$T/l2"

# ---- The embedded server gets --threads N --pool-threads N ----------------------------

# A wrapper in place of draped records its arguments, then runs the real one.
cat >"$T/draped-wrap" <<WRAP
#!/bin/sh
printf '%s\n' "\$@" >"$T/draped-args"
exec "$DRAPED" "\$@"
WRAP
chmod +x "$T/draped-wrap"
if DRAPED="$T/draped-wrap" expect embedded_2 0 "$DRAPE" run "$T/sheet.json" --threads 2 --out "$T/e2" --quiet; then
	if grep -qx -- "--threads" "$T/draped-args" && grep -qx -- "--pool-threads" "$T/draped-args" &&
		[ "$(grep -A1 -x -- "--threads" "$T/draped-args" | tail -n 1)" = 2 ] &&
		[ "$(grep -A1 -x -- "--pool-threads" "$T/draped-args" | tail -n 1)" = 2 ]; then
		pass embedded_gets_threads_2
	else
		fail embedded_gets_threads_2 "draped arguments: $(tr '\n' ' ' <"$T/draped-args")"
	fi
fi
rm -f "$T/draped-args"
if DRAPED="$T/draped-wrap" expect embedded_default 0 "$DRAPE" run "$T/sheet.json" --frames 1 --out "$T/ed" --quiet; then
	if grep -q -x -e "--threads" -e "--pool-threads" "$T/draped-args"; then
		fail embedded_default_leaves_threads "draped arguments: $(tr '\n' ' ' <"$T/draped-args")"
	else
		pass embedded_default_leaves_threads
	fi
fi
# The server's frames are the in-process solver's, whatever the threads.
same_frames embedded_2_equals_local_1 "$T/l1" "$T/e2"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/bin/sh
# Integration tests of `drape preview`: tests/integration/preview.sh BUILD_DIR
# A picture of a scene's input pose, a contact sheet of a run's written
# frames (a server run's and an in-process solve's are the same PNG, since
# the solver is bit-identical), and bad options refused with the option
# named and no file written. Ends with "N passed, M failed".
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DRAPE=${DRAPE:-$TOP/$B/drape}
DRAPED=${DRAPED:-$TOP/$B/draped}
export DRAPED
T=$(mktemp -d /tmp/drape-preview-XXXXXX)
export XDG_CACHE_HOME="$T/cache" TMPDIR="$T/tmp"
mkdir -p "$TMPDIR"
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
ko() { echo "FAIL $1: $2"; fail=$((fail + 1)); }

# png_size FILE: "W H" from the PNG signature and IHDR, or nothing.
png_size() {
	python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read(33)
if d[:8] == b'\x89PNG\r\n\x1a\n' and d[12:16] == b'IHDR':
    print(*struct.unpack('>II', d[16:24]))
PY
}
SCENE=$TOP/tests/data/scenes/grid_flat.json

# 1. Frame 0 is the scene's own pose: no solving, an image of the given size.
if "$DRAPE" preview "$SCENE" --frame 0 --size 200x150 --out "$T/f0.png" --quiet &&
	[ "$(png_size "$T/f0.png")" = "200 150" ]; then
	ok "frame 0 writes a 200x150 PNG"
else
	ko "frame 0 writes a 200x150 PNG" "got '$(png_size "$T/f0.png" 2>/dev/null)'"
fi

# 2. A contact sheet of the frames a server run wrote; 4 tiles of 160x120
#    make a 320x240 sheet, the frames spread over 1..6.
"$DRAPE" run "$SCENE" --frames 6 --out "$T/run" --quiet >/dev/null 2>&1
json=$("$DRAPE" preview "$SCENE" --frames-dir "$T/run" --sheet 4 --size 160x120 --out "$T/sheet.png" --json)
if [ "$(png_size "$T/sheet.png")" = "320 240" ] && echo "$json" | grep -q '"frames":\[1,3,4,6\]'; then
	ok "contact sheet of a run's frames"
else
	ko "contact sheet of a run's frames" "$json / $(png_size "$T/sheet.png" 2>/dev/null)"
fi

# 3. The in-process solve draws the same frame as the server wrote.
"$DRAPE" preview "$SCENE" --frames-dir "$T/run" --frame 6 --size 160x120 --out "$T/dir6.png" --quiet
"$DRAPE" preview "$SCENE" --frame 6 --size 160x120 --out "$T/local6.png" --quiet
if [ -s "$T/dir6.png" ] && cmp -s "$T/dir6.png" "$T/local6.png"; then
	ok "frame 6 from the files and from the solver are the same image"
else
	ko "frame 6 from the files and from the solver are the same image" "images differ"
fi

# 4. From a running daemon's session: the same frame 6, and refused (77, no
#    file) with another owner token.
"$DRAPED" --listen "ipc://$T/ctl" --state-dir "$T/state" >"$T/draped.log" 2>&1 &
dpid=$!
trap 'kill -TERM $dpid 2>/dev/null; wait $dpid 2>/dev/null; rm -rf "$T"' EXIT
i=0
until "$DRAPE" status --server "ipc://$T/ctl" >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -gt 300 ] && break
	sleep 0.1
done
"$DRAPE" run "$SCENE" --frames 6 --server "ipc://$T/ctl" --quiet >/dev/null 2>"$T/run.err"
sid=$(sed -n 's/.*session \([0-9]*\) on .*/\1/p' "$T/run.err")
"$DRAPE" preview --session "$sid" --scene "$SCENE" --server "ipc://$T/ctl" --frame 6 --size 160x120 \
	--out "$T/session6.png" --quiet
if [ -n "$sid" ] && [ -s "$T/session6.png" ] && cmp -s "$T/session6.png" "$T/local6.png"; then
	ok "frame 6 fetched from the daemon is the same image"
else
	ko "frame 6 fetched from the daemon is the same image" "session '$sid': $(cat "$T/run.err")"
fi
err=$("$DRAPE" preview --session "$sid" --scene "$SCENE" --server "ipc://$T/ctl" --frame 6 \
	--owner-token 0123456789abcdef0123456789abcdef --out "$T/bad.png" 2>&1 >/dev/null)
rc=$?
if [ $rc -eq 77 ] && [ ! -e "$T/bad.png" ]; then
	ok "another owner token gets no picture"
else
	ko "another owner token gets no picture" "exit $rc: $err"
fi

# 5. Bad options: exit 64, the option named, no file.
for bad in "--size 0x10" "--size 100" "--camera 10,95" "--camera a,b" "--sheet 1" "--frame x"; do
	opt=${bad%% *}
	# shellcheck disable=SC2086
	err=$("$DRAPE" preview "$SCENE" $bad --out "$T/bad.png" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -eq 64 ] && echo "$err" | grep -q -- "$opt" && [ ! -e "$T/bad.png" ]; then
		ok "refuses $bad"
	else
		ko "refuses $bad" "exit $rc: $err"
	fi
done

# 6. An empty frames folder is an error naming it, not an empty picture.
mkdir -p "$T/empty"
err=$("$DRAPE" preview "$SCENE" --frames-dir "$T/empty" --out "$T/bad.png" 2>&1 >/dev/null)
rc=$?
if [ $rc -eq 66 ] && echo "$err" | grep -q -- "--frames-dir" && [ ! -e "$T/bad.png" ]; then
	ok "empty --frames-dir refused"
else
	ko "empty --frames-dir refused" "exit $rc: $err"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

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

# 7. A deforming collider is drawn at the pose of the frame asked for: a
#    block whose OBJ sequence puts it at x = -0.6, -0.3, 0, 0.3, 0.6 at
#    frames 1 to 5, seen straight along -z (--camera 0,0,3) from the centre
#    of a fully pinned cloth at the origin. The collider's pixels (blue
#    grey: blue above red) must centre on the projection of that frame's
#    pose, f x / (3 - z) pixels right of the image centre with f = (H / 2) /
#    tan(20 deg) (client/render.h's pinhole), within 9 pixels, a sixth of
#    the 51 between two poses; frame 0 shows pose 1 (held before the first)
#    and frame 8 pose 5 (held after the last).
mkdir -p "$T/anim"
for k in 1 2 3 4 5; do
	python3 - "$T/anim/block_000$k.obj" "$k" <<'PY'
import sys
x = -0.9 + 0.3 * int(sys.argv[2])
with open(sys.argv[1], 'w') as f:
    for i in range(8):
        f.write('v %g %g %g\n' % (x + (0.1 if i & 1 else -0.1), 0.5 + (0.1 if i & 2 else -0.1), 0.1 if i & 4 else -0.1))
    for a, b, c in ((1, 3, 4), (1, 4, 2), (5, 6, 8), (5, 8, 7), (1, 2, 6), (1, 6, 5),
                    (3, 7, 8), (3, 8, 4), (1, 5, 7), (1, 7, 3), (2, 4, 8), (2, 8, 6)):
        f.write('f %d %d %d\n' % (a, b, c))
PY
done
cp "$T/anim/block_0001.obj" "$T/anim/block_rest.obj"
cat >"$T/anim/scene.json" <<'EOF2'
{"frames": 8, "fps": 24,
 "cloth": {"mesh": {"grid": {"size": [0.2, 0.2], "resolution": [2, 2], "center": [0, 0, 0], "normal": [0, 0, 1]}},
           "pins": {"indices": [0, 1, 2, 3]}},
 "colliders": [{"mesh": "block_rest.obj", "animation": "block_%04d.obj"}]}
EOF2
res=""
for fr in 0 1 2 3 4 5 8; do
	if ! "$DRAPE" preview "$T/anim/scene.json" --frame $fr --camera 0,0,3 --size 480x360 \
		--out "$T/anim/f$fr.png" --quiet 2>"$T/anim/err"; then
		res="$res frame $fr: $(cat "$T/anim/err")"
		continue
	fi
	got=$(python3 - "$T/anim/f$fr.png" "$fr" <<'PY'
import math, struct, sys, zlib
d = open(sys.argv[1], 'rb').read()
w, h, depth, ctype = struct.unpack('>IIBB', d[16:26])
assert depth == 8 and ctype == 2, 'not an 8-bit RGB PNG'
idat, at = b'', 8
while at < len(d):
    n, = struct.unpack('>I', d[at:at + 4])
    if d[at + 4:at + 8] == b'IDAT':
        idat += d[at + 8:at + 8 + n]
    at += 12 + n
raw = zlib.decompress(idat)
stride, rows, prev = w * 3, [], bytearray(w * 3)
for y in range(h):
    ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - 3] if i >= 3 else 0
        b = prev[i]
        c = prev[i - 3] if i >= 3 else 0
        if ft == 1: line[i] = (line[i] + a) & 255
        elif ft == 2: line[i] = (line[i] + b) & 255
        elif ft == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif ft == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line)
    prev = line
n = sx = 0
for y, line in enumerate(rows):
    for x in range(w):
        r, g, b = line[3 * x], line[3 * x + 1], line[3 * x + 2]
        if b > 60 and b > 1.1 * r:
            n += 1
            sx += x + 0.5
fr = int(sys.argv[2])
pose = min(max(fr, 1), 5)
xw = -0.9 + 0.3 * pose
f = (h / 2) / math.tan(math.radians(20))
# The block's front face is at z = 0.1; its centre projects there.
want = w / 2 + f * xw / (3 - 0.1)
cx = sx / n if n else float('nan')
print('ok' if n > 200 and abs(cx - want) < 9 else 'frame %d: %d collider pixels centred at x %.1f, pose %d is at %.1f' % (fr, n, cx, pose, want))
PY
)
	[ "$got" = ok ] || res="$res $got;"
done
if [ -z "$res" ]; then
	ok "a deforming collider is drawn at the pose of the frame (0, 1..5, 8)"
else
	ko "a deforming collider is drawn at the pose of the frame" "$res"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

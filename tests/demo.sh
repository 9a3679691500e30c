#!/bin/sh
# The demo (make demo): tests/demo.sh BUILD_DIR
#
# 1. examples/garment.json: the MakeHuman T-shirt and trousers draped on the
#    body they were modelled on (an OpenVDB mesh collider, self-collision on),
#    frames to out/demo/garment/frame_NNNN.obj.
# 2. examples/walk.json: the same suit on the walking body (a deforming
#    collider read from tests/data/anim/walk.pc2, 96 frames), frames to
#    out/demo/walk/frame_NNNN.obj.
# 3. examples/flag.json: a 64x64 polyester flag on a pole (its left edge) in
#    a wind blowing across it, self-collision on, frames to out/demo/flag/;
#    its last frame must have no intersecting triangles (drape check). Then
#    the same scene with the solver in process (drape run --local, frames
#    discarded), so the server's overhead shows.
#
# Each scene ends with a contact sheet of 8 of its frames (drape preview
# --sheet), out/demo/NAME/sheet.png, and the paths are listed at the end.
# Each scene's summary gives its material, the maximum edge strain over the
# run and the maximum and 99th percentile of the last frame (the cloth as it
# ends up), and the intersecting triangle pairs of the last frame.
#
# Both go through drape's embedded server: a private draped on an ipc socket
# in a temporary folder, started and stopped by the CLI.
set -eu
B=${1:-build}
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# field NAME FILE: a number from the {"summary":{...}} line of drape --json.
field() {
	grep '^{"summary"' "$2" | sed -E "s/.*\"$1\":([-0-9.e+]+).*/\1/"
}

# run_scene SCENE OUT: runs it through the embedded server and summarises.
run_scene() {
	scene=$1
	out=$2
	[ -f "$scene" ] || { echo "demo: $scene is missing" >&2; exit 66; }
	rm -rf "$out"
	mkdir -p "$out"
	echo "demo: $scene through the embedded server, frames to $out/"
	"$B/drape" run "$scene" --out "$out" --json >"$log/server.json"
	frames=$(field frames "$log/server.json")
	files=$(ls "$out" | grep -c '^frame_.*\.obj$')
	printf '  vertices          %s\n' "$(field vertices "$log/server.json")"
	printf '  frames            %s (%s OBJ files)\n' "$frames" "$files"
	printf '  wall time         %.2f s (server start, run, stop)\n' \
		"$(field wall_ms "$log/server.json" | awk '{print $1 / 1000}')"
	printf '  ms per frame      %.2f received (solver %.2f)\n' \
		"$(field ms_per_frame "$log/server.json")" "$(field sim_ms_per_frame "$log/server.json")"
	printf '  material          %s\n' "$("$B/drape" check "$scene" --json 2>/dev/null |
		sed -E 's/.*"model":"([a-z]*)","material":("([a-z]*)"|null).*/\3 (\1)/')"
	printf '  edge strain       max %s over the run; last frame: max %s, 99th percentile %s\n' \
		"$(field max_strain "$log/server.json")" "$(field last_max_strain "$log/server.json")" \
		"$(field last_p99_strain "$log/server.json")"
	[ "$files" -eq "$frames" ] || { echo "demo: $files files for $frames frames" >&2; exit 70; }
	# The last frame as a scene of its own, for drape check's preflight.
	last=$(printf '%s/frame_%04d.obj' "$out" "$frames")
	printf '{"cloth": {"mesh": "%s"}}\n' "$TOP/$last" >"$log/last.json"
	"$B/drape" check "$log/last.json" --json >"$log/check.json" || true
	pairs=$(sed -E 's/.*"intersecting_pairs":([0-9]+).*/\1/' "$log/check.json")
	printf '  last frame        %s intersecting triangle pairs\n' "$pairs"
	# A contact sheet of the frames just written, so the demo ends with
	# something to look at.
	"$B/drape" preview "$scene" --frames-dir "$out" --sheet 8 --out "$out/sheet.png" --quiet
	printf '  contact sheet     %s\n' "$out/sheet.png"
	sheets="$sheets $out/sheet.png"
}
sheets=""

run_scene examples/garment.json out/demo/garment
run_scene examples/walk.json out/demo/walk
run_scene examples/flag.json out/demo/flag
[ "$pairs" -eq 0 ] || { echo "demo: the flag's last frame passes through itself ($pairs pairs)" >&2; exit 70; }
"$B/drape" run examples/flag.json --local --json >"$log/local.json"
printf '  in process        %.2f s wall, %.2f ms per frame (drape run --local, same scene)\n' \
	"$(field wall_ms "$log/local.json" | awk '{print $1 / 1000}')" "$(field ms_per_frame "$log/local.json")"
echo "demo: contact sheets:"
for s in $sheets; do echo "  $s"; done

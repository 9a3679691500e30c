#!/bin/sh
# The demo (make demo): tests/demo.sh BUILD_DIR
#
# 1. examples/garment.json: the MakeHuman T-shirt and trousers draped on the
#    body they were modelled on (an OpenVDB mesh collider, self-collision on),
#    frames to out/demo/garment/frame_NNNN.obj.
# 2. examples/walk.json: the same suit on the walking body (a deforming
#    collider read from tests/data/anim/walk.pc2, 96 frames), frames to
#    out/demo/walk/frame_NNNN.obj.
# 3. examples/flag.json: a 64x64 flag pinned along one edge in the wind,
#    frames to out/demo/flag/, then the same scene with the solver in process
#    (drape run --local, frames discarded), so the server's overhead shows.
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
	printf '  max strain        %s (last frame)\n' "$(field max_strain "$log/server.json")"
	[ "$files" -eq "$frames" ] || { echo "demo: $files files for $frames frames" >&2; exit 70; }
}

run_scene examples/garment.json out/demo/garment
run_scene examples/walk.json out/demo/walk
run_scene examples/flag.json out/demo/flag
"$B/drape" run examples/flag.json --local --json >"$log/local.json"
printf '  in process        %.2f s wall, %.2f ms per frame (drape run --local, same scene)\n' \
	"$(field wall_ms "$log/local.json" | awk '{print $1 / 1000}')" "$(field ms_per_frame "$log/local.json")"

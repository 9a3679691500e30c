#!/bin/sh
# The demo (make demo): tests/demo.sh BUILD_DIR
# Runs examples/flag.json through drape's embedded server (a private draped
# on an ipc socket, started and stopped by the CLI), writes its frames to
# out/demo/frame_NNNN.obj, then runs the same scene with the solver in
# process (drape run --local, frames discarded) and prints both, so the
# server's overhead is visible.
set -eu
B=${1:-build}
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
SCENE=examples/flag.json
OUT=out/demo
[ -f "$SCENE" ] || { echo "demo: $SCENE is missing" >&2; exit 66; }
rm -rf "$OUT"
mkdir -p "$OUT"

# field NAME FILE: a number from the {"summary":{...}} line of drape --json.
field() {
	grep '^{"summary"' "$2" | sed -E "s/.*\"$1\":([-0-9.e+]+).*/\1/"
}

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
echo "demo: $SCENE through the embedded server, frames to $OUT/"
"$B/drape" run "$SCENE" --out "$OUT" --json >"$log/server.json"
"$B/drape" run "$SCENE" --local --json >"$log/local.json"

frames=$(field frames "$log/server.json")
verts=$(field vertices "$log/server.json")
wall=$(field wall_ms "$log/server.json")
per=$(field ms_per_frame "$log/server.json")
sim=$(field sim_ms_per_frame "$log/server.json")
strain=$(field max_strain "$log/server.json")
lwall=$(field wall_ms "$log/local.json")
lper=$(field ms_per_frame "$log/local.json")
files=$(ls "$OUT" | grep -c '^frame_.*\.obj$')

printf '  vertices          %s\n' "$verts"
printf '  frames            %s (%s OBJ files in %s)\n' "$frames" "$files" "$OUT"
printf '  wall time         %.2f s through the embedded server (start, run, stop)\n' \
	"$(echo "$wall" | awk '{print $1 / 1000}')"
printf '  ms per frame      %.2f received (solver %.2f)\n' "$per" "$sim"
printf '  max strain        %s\n' "$strain"
printf '  in process        %.2f s wall, %.2f ms per frame (drape run --local)\n' \
	"$(echo "$lwall" | awk '{print $1 / 1000}')" "$lper"
[ "$files" -eq "$frames" ]

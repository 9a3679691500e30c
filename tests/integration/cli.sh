#!/bin/sh
# Integration tests of the drape CLI: tests/integration/cli.sh BUILD_DIR
# (tests/run.sh passes the build folder and exports DRAPED and DRAPE).
# Prints PASS/FAIL lines and ends with "N passed, M failed".
#
# Every daemon this script starts is stopped by the EXIT trap; the embedded
# servers of `drape run` are checked to be gone after each run by looking for
# their temporary folder (TMPDIR is private to this script) in /proc.
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DRAPE=${DRAPE:-$TOP/$B/drape}
DRAPED=${DRAPED:-$TOP/$B/draped}
export DRAPED
T=$(mktemp -d /tmp/drape-cli-XXXXXX)
# The token cache and the embedded servers' folders stay inside $T.
export XDG_CACHE_HOME="$T/cache"
export TMPDIR="$T/tmp"
mkdir -p "$TMPDIR"
unset DRAPE_TOKEN
passed=0
failed=0
xfail=
daemon_pid=
bg_pid=

cleanup() {
	if [ -n "$bg_pid" ]; then kill "$bg_pid" 2>/dev/null; wait "$bg_pid" 2>/dev/null; fi
	if [ -n "$daemon_pid" ]; then
		kill "$daemon_pid" 2>/dev/null
		i=0
		while kill -0 "$daemon_pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		kill -9 "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

# expect NAME WANT_STATUS CMD...: runs CMD, output to $T/out and $T/err.
expect() {
	name=$1 want=$2
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	xfail=
	if [ "$got" -eq "$want" ]; then
		return 0
	fi
	fail "$name" "exit $got, expected $want; stderr: $(head -c 400 "$T/err")"
	xfail=$failed
	return 1
}
# miss NAME: `expect ... && CHECK && pass NAME || miss NAME`: the chain
# stopped on a false check (a grep, a [ ], a cmp), so FAIL, with the head
# of the command's output; unless it stopped at an expect that has just
# printed its own FAIL (xfail: the failed count that expect left, cleared
# by the next expect, so a chain must begin with one), not counted twice.
miss() {
	if [ -n "$xfail" ] && [ "$xfail" -eq "$failed" ]; then
		xfail=
		return 0
	fi
	xfail=
	fail "$1" "a check was false; out: $(head -c 300 "$T/out" 2>/dev/null); err: $(head -c 300 "$T/err" 2>/dev/null)"
}

# No process may still run with our private TMPDIR on its command line, and
# every embedded server's folder must be gone.
no_orphans() {
	[ "$(embedded_procs)" -eq 0 ] && [ -z "$(ls -A "$TMPDIR")" ]
}

# Processes whose command line names an embedded server's folder. One grep
# over every cmdline; the bracket keeps grep from matching its own.
embedded_procs() {
	grep -l -a -e "$TMPDIR/drape[-]" /proc/[0-9]*/cmdline 2>/dev/null | wc -l
}

cat >"$T/small.json" <<'EOF'
{
  "fps": 24, "frames": 6, "substeps": 2, "iterations": 5,
  "wind": {"velocity": [1, 0, 2], "drag": 1.0, "lift": 0.3},
  "cloth": {
    "mesh": {"grid": {"size": [1, 1], "resolution": [12, 10], "center": [0, 1, 0], "normal": [0, 0, 1]}},
    "pins": {"group": "top"}
  }
}
EOF
cat >"$T/long.json" <<'EOF'
{
  "frames": 100000, "substeps": 8,
  "cloth": {
    "mesh": {"grid": {"size": [1, 1], "resolution": [32, 32], "center": [0, 1, 0], "normal": [0, 0, 1]}},
    "pins": {"group": "top"}
  }
}
EOF
cat >"$T/bad.json" <<'EOF'
{
  "frames": 4,
  "cloth": {
    "mesh": {"grid": {"size": [1, 1], "resolution": [4, 4], "center": [0, 1, 0], "normal": [0, 0, 1]}},
    "strech": 0.5
  }
}
EOF

# ---- Without a daemon ------------------------------------------------------------

expect help 0 "$DRAPE" --help && grep -q "drape run" "$T/out" && grep -q "owner-token" "$T/out" &&
	expect run_help 0 "$DRAPE" run --help && grep -q -- "--frames" "$T/out" && pass help || miss help

expect usage 64 "$DRAPE" run && expect usage_unknown_option 64 "$DRAPE" run "$T/small.json" --bogus &&
	expect usage_unknown_command 64 "$DRAPE" frobnicate && pass usage_exit_64 || miss usage_exit_64

if expect bad_scene 65 "$DRAPE" run "$T/bad.json" --quiet; then
	if grep -q strech "$T/err"; then pass bad_scene_exit_65_names_key
	else fail bad_scene_exit_65_names_key "message does not name the key: $(cat "$T/err")"; fi
fi

expect missing_scene 66 "$DRAPE" run "$T/nope.json" && pass missing_scene_exit_66 || miss missing_scene_exit_66

expect unreachable 69 "$DRAPE" run "$T/small.json" --server "ipc://$T/nobody.sock" --quiet &&
	expect unreachable_status 69 "$DRAPE" status --server "ipc://$T/nobody.sock" &&
	pass unreachable_server_exit_69 || miss unreachable_server_exit_69

# Embedded mode: no daemon runs; drape starts and stops its own.
if expect embedded_run 0 "$DRAPE" run "$T/small.json" --out "$T/emb" --quiet; then
	n=$(ls "$T/emb" | grep -c '^frame_[0-9][0-9][0-9][0-9]\.obj$')
	v=$(grep -c '^v ' "$T/emb/frame_0006.obj" 2>/dev/null || echo 0)
	f=$(grep -c '^f ' "$T/emb/frame_0001.obj" 2>/dev/null || echo 0)
	if [ "$n" -eq 6 ] && [ "$v" -eq 120 ] && [ "$f" -eq 198 ] && [ -f "$T/emb/frame_0001.obj" ]; then
		pass embedded_run_writes_frames
	else
		fail embedded_run_writes_frames "$n files, $v vertices, $f faces (want 6, 120, 198)"
	fi
fi
if no_orphans; then pass embedded_server_stopped; else fail embedded_server_stopped "a draped or its folder is left"; fi

if expect embedded_json 0 "$DRAPE" run "$T/small.json" --json --frames 4; then
	lines=$(grep -c '^{"frame":[0-9]*,"sim_ms":[0-9.]*,"max_strain":' "$T/out")
	# The first line names the session (issue 18), then one line per frame.
	first=$(grep '^{"frame"' "$T/out" | head -n 1 | sed -E 's/^\{"frame":([0-9]+).*/\1/')
	session=$(head -n 1 "$T/out" | grep -c '^{"session":[0-9]*,"owner_token":"[0-9a-f]\{32\}"')
	summary=$(grep -c '^{"summary":{.*"frames":4' "$T/out")
	if [ "$lines" -eq 4 ] && [ "$first" = 1 ] && [ "$session" -eq 1 ] && [ "$summary" -eq 1 ]; then
		pass json_prints_one_line_per_frame
	else
		fail json_prints_one_line_per_frame "$lines frame lines, first $first, $summary summaries: $(head -c 300 "$T/out")"
	fi
fi

# --local gives the same frames as the server, bit for bit in the OBJ text.
if expect local_run 0 "$DRAPE" run "$T/small.json" --local --out "$T/loc" --quiet; then
	if cmp -s "$T/emb/frame_0006.obj" "$T/loc/frame_0006.obj"; then pass local_equals_server
	else fail local_equals_server "frame_0006.obj differs between --local and the embedded server"; fi
fi

# A draped that is missing is reported clearly.
if expect embedded_missing 69 env DRAPED="$T/no-draped" "$DRAPE" run "$T/small.json" --quiet; then
	if grep -q "no-draped" "$T/err"; then pass embedded_missing_draped_exit_69
	else fail embedded_missing_draped_exit_69 "message: $(cat "$T/err")"; fi
fi

expect check 0 "$DRAPE" check "$T/small.json" && grep -q "vertices: *120" "$T/out" &&
	grep -q "intersecting pairs: *0" "$T/out" && pass check_reports_topology || miss check_reports_topology

# Cloth that starts inside a mesh collider: a 2 m sheet of 8 x 8 vertices
# (spacing 2/7 m) through the middle of the unit cube has the 4 x 4
# vertices with |x|, |y| < 0.5 inside it, the deepest 0.5 - 1/7 = 357 mm
# from the faces; lifted 2 m, none. The units warning: the same cube 10 m
# tall (a body in decimetres) is named with the scale that fixes it; the
# deepest inside vertex is named with its place, to find it. Each
# case fails (not only misses its PASS) when the output is wrong.
out_has() { # NAME PATTERN: PASS when $T/out matches, else FAIL quoting it
	if grep -q "$2" "$T/out"; then pass "$1"; else fail "$1" "no '$2' in: $(head -c 600 "$T/out")"; fi
}
cat >"$T/inside.json" <<EOF
{"frames": 1, "cloth": {"mesh": {"grid": {"size": [2, 2], "resolution": [8, 8]}}},
 "colliders": [{"mesh": "$TOP/tests/data/obj/block.obj"}]}
EOF
expect check_inside 0 "$DRAPE" check "$T/inside.json" &&
	out_has check_counts_cloth_inside_a_collider \
		"^inside colliders: *16 cloth vertices start inside (deepest 35[0-9]\.[0-9] mm, in colliders\[0\], vertex [0-9]* at \[-\?0\.143, -\?0\.143, -\?0\.000\])"
# Where: the deepest are the 4 vertices 1/7 m from the cube's centre
# (which of them is the field's rounding), given by index and place.
expect check_inside_json 0 "$DRAPE" check "$T/inside.json" --json &&
	out_has check_says_where_the_deepest_inside_is \
		'"inside_colliders":{"vertices":16,"deepest":0\.35[0-9]*,"collider":0,"deepest_vertex":\(27\|28\|35\|36\),"deepest_at":\[-\?0\.14285[0-9]*,-\?0\.14285[0-9]*,[-0-9.e]*\]}'
# Texture coordinates that are not a grain: DiffCloth's T-shirt has 1,882
# of its 1,921 vertices on UV seams. With jersey (warp twice the weft)
# check says the directions are arbitrary and names "uvs": false, which
# drops the UVs; a grid's own UVs (no seams), or cotton (warp and weft
# within a tenth), say nothing; "uvs" must be a boolean.
for k in seams nouv grid cotton bad; do
	case $k in
	seams) c='"mesh": "'"$TOP"'/tests/data/meshes/dc_tshirt1900.obj", "material": "jersey"' ;;
	nouv) c='"mesh": "'"$TOP"'/tests/data/meshes/dc_tshirt1900.obj", "material": "jersey", "uvs": false' ;;
	grid) c='"mesh": {"grid": {"size": [1, 1], "resolution": [8, 8]}}, "material": "jersey"' ;;
	cotton) c='"mesh": "'"$TOP"'/tests/data/meshes/dc_tshirt1900.obj", "material": "cotton"' ;;
	bad) c='"mesh": "'"$TOP"'/tests/data/meshes/dc_tshirt1900.obj", "material": "jersey", "uvs": "no"' ;;
	esac
	echo '{"frames": 1, "cloth": {'"$c"'}}' >"$T/uv_$k.json"
done
expect check_uv_seams 0 "$DRAPE" check "$T/uv_seams.json" &&
	out_has check_says_uv_seams_make_the_grain_arbitrary \
		'^note: 1882 of 1921 cloth vertices sit on UV seams, .*"uvs": false in the cloth uses the warp stiffness'
expect check_uvs_false 0 "$DRAPE" check "$T/uv_nouv.json" &&
	grep -q '^UVs: *no$' "$T/out" && grep -q 'warp, .* weft (no UVs: isotropic, warp value)' "$T/out" &&
	! grep -q 'UV seams' "$T/out" && pass uvs_false_drops_the_texture_coordinates || miss uvs_false_drops_the_texture_coordinates
expect check_uv_grid 0 "$DRAPE" check "$T/uv_grid.json" && grep -q '^UVs: *yes (0 vertices on seams)' "$T/out" &&
	! grep -q 'UV seams' "$T/out" && pass no_uv_note_without_seams || miss no_uv_note_without_seams
expect check_uv_cotton 0 "$DRAPE" check "$T/uv_cotton.json" && grep -q '^UVs: *yes (1882 vertices on seams)' "$T/out" &&
	! grep -q 'UV seams' "$T/out" && pass no_uv_note_when_warp_is_weft || miss no_uv_note_when_warp_is_weft
expect uvs_not_boolean 65 "$DRAPE" check "$T/uv_bad.json" &&
	grep -q 'cloth.uvs: must be true (.*) or false (ignore them), not a string' "$T/err" &&
	pass uvs_must_be_boolean || miss uvs_must_be_boolean
sed 's/"resolution": \[8, 8\]/"resolution": [8, 8], "center": [0, 2, 0]/' "$T/inside.json" >"$T/outside.json"
expect check_outside 0 "$DRAPE" check "$T/outside.json" --json &&
	out_has check_finds_none_outside '"inside_colliders":{"vertices":0,.*"units_warning":null'
# A collider keyed up 2 m at frame 0 is met by the lifted sheet.
sed 's|block.obj"|block.obj", "keyframes": [{"frame": 0, "translate": [0, 2, 0]}]|' "$T/outside.json" >"$T/keyed.json"
expect check_keyed 0 "$DRAPE" check "$T/keyed.json" &&
	out_has check_places_a_keyed_collider_at_frame_0 "^inside colliders: *16 cloth vertices start inside"
sed 's|block.obj"|block.obj", "scale": [1, 10, 1]|' "$T/outside.json" >"$T/tall.json"
expect check_tall 0 "$DRAPE" check "$T/tall.json" &&
	out_has check_warns_of_units \
		'^units: *warning: colliders\[0\] is 10 m tall: scenes are in metres, Y up (a body in decimetres needs "scale": 0.1'
# A cloth of unstated units (20 m across) on a 1 m body: the factor on its
# scale that makes it as large as the body, 1 / 20.
sed 's/"size": \[2, 2\]/"size": [20, 20]/' "$T/inside.json" >"$T/huge.json"
expect check_huge 0 "$DRAPE" check "$T/huge.json" &&
	out_has check_sizes_a_cloth_of_unstated_units_by_the_body \
		'^units: *warning: the cloth is 20 m across: .*centimetres 0.01; in units not stated, it is as large as colliders\[0\] (1 m tall) with its "scale" times 0.05, and a garment worn on it smaller)$'
expect run_tall 0 "$DRAPE" run "$T/tall.json" --local --frames 1 --out "$T/tallrun" && cp "$T/err" "$T/out" &&
	out_has run_warns_of_units '^drape: warning: colliders\[0\] is 10 m tall' || miss run_warns_of_units

# Pieces: two separate 1 m squares, the left one pinned by a box. The right
# one has no pin and falls; a stitch between them makes one piece.
printf 'v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 2 0 0\nv 3 0 0\nv 3 1 0\nv 2 1 0\nf 1 2 3 4\nf 5 6 7 8\n' >"$T/two.obj"
cat >"$T/pieces.json" <<EOF
{"frames": 1, "cloth": {"mesh": "two.obj", "pins": {"box": {"min": [-0.1, 0.9, -0.1], "max": [1.1, 1.1, 0.1]}}}}
EOF
expect check_pieces 0 "$DRAPE" check "$T/pieces.json" &&
	out_has check_counts_unpinned_pieces "^pieces: *2 (1 with no pinned vertex: they fall unless a collider holds them)$"
sed 's/"pins"/"stitches": [[1, 4]], "pins"/' "$T/pieces.json" >"$T/sewn.json"
expect check_sewn 0 "$DRAPE" check "$T/sewn.json" --json && out_has check_joins_stitched_pieces '"pieces":1,"unpinned_pieces":0,'
expect run_pieces 0 "$DRAPE" run "$T/pieces.json" --local --frames 1 --out "$T/piecesrun" && cp "$T/err" "$T/out" &&
	out_has run_warns_of_unpinned_pieces "^drape: warning: 1 of the cloth's 2 pieces have no pinned vertex" || miss run_warns_of_unpinned_pieces

# Materials: check shows what a scene resolves to; --material swaps the
# preset (and changes the frames); an unknown preset is a usage error that
# lists the presets.
expect check_pbd 0 "$DRAPE" check "$T/small.json" && grep -q "material: *none (pbd" "$T/out" &&
	grep -q "UVs: *yes" "$T/out" && pass check_shows_pbd_without_material || miss check_shows_pbd_without_material
sed 's/"pins"/"material": {"preset": "denim", "bend": 2e-5}, "pins"/' "$T/small.json" >"$T/denim.json"
expect check_denim 0 "$DRAPE" check "$T/denim.json" --json &&
	grep -q '"model":"xpbd","material":"denim"' "$T/out" && grep -q '"bend_k":1.99999995e-05' "$T/out" &&
	grep -q '"schedule":{"name":"frame","steps":' "$T/out" &&
	pass check_shows_the_material || miss check_shows_the_material
# The schedule: check prints the steps x iterations a scene gets, and
# cloth.schedule "mesh" is taken from the scene (docs/material.md, "Mesh-aware
# schedule"); a bad value is refused naming the key.
expect check_sched_pbd 0 "$DRAPE" check "$T/small.json" && grep -q "^schedule: .*iterations* (pbd)" "$T/out" &&
	pass check_prints_the_pbd_schedule || miss check_prints_the_pbd_schedule
sed 's/"pins"/"material": "denim", "schedule": "mesh", "pins"/' "$T/small.json" >"$T/mesh.json"
expect check_sched_mesh 0 "$DRAPE" check "$T/mesh.json" && grep -q "^schedule: .*(xpbd, mesh)" "$T/out" &&
	pass check_prints_the_mesh_schedule || miss check_prints_the_mesh_schedule
expect run_sched_mesh 0 "$DRAPE" run "$T/mesh.json" --local --frames 2 --out "$T/meshrun" &&
	grep -q "^drape: schedule: .*(xpbd, mesh)" "$T/err" && pass run_local_prints_the_schedule || miss run_local_prints_the_schedule
# The schedule travels on the wire: the embedded server's frames equal
# --local's with "mesh" (80 steps a frame here), and differ from "frame"'s
# (10 steps).
sed 's/"pins"/"material": "denim", "pins"/' "$T/small.json" >"$T/framesched.json"
if expect run_sched_mesh_server 0 "$DRAPE" run "$T/mesh.json" --frames 2 --out "$T/meshemb" --quiet &&
	expect run_sched_frame_local 0 "$DRAPE" run "$T/framesched.json" --local --frames 2 --out "$T/framerun" --quiet; then
	if cmp -s "$T/meshemb/frame_0002.obj" "$T/meshrun/frame_0002.obj" &&
		! cmp -s "$T/meshemb/frame_0002.obj" "$T/framerun/frame_0002.obj"; then
		pass mesh_schedule_reaches_the_server
	else
		fail mesh_schedule_reaches_the_server "frame_0002.obj: server and --local differ, or mesh equals frame"
	fi
fi
sed 's/"pins"/"material": "denim", "schedule": "fine", "pins"/' "$T/small.json" >"$T/badsched.json"
expect check_sched_bad 65 "$DRAPE" check "$T/badsched.json" &&
	grep -q 'cloth.schedule: unknown schedule "fine" (expected one of: frame, mesh)' "$T/err" &&
	pass bad_schedule_refused_naming_the_key || miss bad_schedule_refused_naming_the_key
if expect material_run 0 "$DRAPE" run "$T/small.json" --local --material silk --out "$T/silk" --quiet &&
	expect material_run_pbd 0 "$DRAPE" run "$T/small.json" --local --out "$T/pbd" --quiet; then
	if cmp -s "$T/silk/frame_0006.obj" "$T/pbd/frame_0006.obj"; then
		fail material_option_changes_the_cloth "silk frames equal the pbd ones"
	else
		pass material_option_changes_the_cloth
	fi
fi
expect material_unknown 64 "$DRAPE" run "$T/small.json" --local --material velvet &&
	grep -q "unknown preset \"velvet\" (known: cotton, denim" "$T/err" && pass unknown_material_exit_64_lists_presets || miss unknown_material_exit_64_lists_presets

# Frames that cannot be written: --out under a regular file.
touch "$T/file"
expect out_unwritable 74 "$DRAPE" run "$T/small.json" --out "$T/file/sub" --quiet && pass unwritable_out_exit_74 || miss unwritable_out_exit_74

# The embedded server must not outlive drape on Ctrl-C (orderly stop) nor
# on SIGKILL (PR_SET_PDEATHSIG). wait_embedded waits until drape reports
# its first frame through --json, so the daemon is surely up.
wait_embedded() {
	i=0
	while ! grep -q '"frame"' "$1" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
}
"$DRAPE" run "$T/long.json" --json >"$T/int.out" 2>"$T/int.err" &
bg_pid=$!
wait_embedded "$T/int.out"
kill -INT "$bg_pid"
wait "$bg_pid"
rc=$?
bg_pid=
if [ "$rc" -eq 130 ] && no_orphans; then pass sigint_stops_embedded_server
else fail sigint_stops_embedded_server "exit $rc, $(embedded_procs) processes left: $(tail -c 300 "$T/int.err")"; fi

"$DRAPE" run "$T/long.json" --json >"$T/kill.out" 2>"$T/kill.err" &
bg_pid=$!
wait_embedded "$T/kill.out"
kill -KILL "$bg_pid"
wait "$bg_pid" 2>/dev/null
bg_pid=
i=0
while [ "$(embedded_procs)" -ne 0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if [ "$(embedded_procs)" -eq 0 ]; then pass sigkill_of_drape_stops_embedded_server
else fail sigkill_of_drape_stops_embedded_server "draped still runs 5 s after drape was killed"; fi
# SIGKILL leaves the temporary folder behind (nothing could remove it).
rm -rf "$TMPDIR"/drape-*

# ---- Against a running daemon ------------------------------------------------------

URL="ipc://$T/d.sock"
mkdir -p "$T/state"
"$DRAPED" --listen "$URL" --state-dir "$T/state" >"$T/draped.log" 2>&1 &
daemon_pid=$!
i=0
until "$DRAPE" status --server "$URL" >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 200 ] || ! kill -0 "$daemon_pid" 2>/dev/null; then
		fail daemon_start "draped did not answer: $(tail -n 5 "$T/draped.log")"
		echo "$passed passed, $failed failed"
		exit 1
	fi
	sleep 0.05
done

if expect server_run 0 "$DRAPE" run "$T/small.json" --server "$URL" --out "$T/srv" --quiet; then
	id=$(sed -n -E 's/^drape: session ([0-9]+) on .*owner token ([0-9a-f]{32}).*/\1/p' "$T/err")
	tok=$(sed -n -E 's/^drape: session ([0-9]+) on .*owner token ([0-9a-f]{32}).*/\2/p' "$T/err")
	if [ -n "$id" ] && [ -n "$tok" ] && [ "$(ls "$T/srv" | wc -l)" -eq 6 ]; then
		pass server_run_prints_session_and_token
	else
		fail server_run_prints_session_and_token "stderr: $(cat "$T/err")"
		id=1
	fi
	expect status_id 0 "$DRAPE" status "$id" --server "$URL" && grep -q "state: *done" "$T/out" &&
		grep -q "frames: *6" "$T/out" && pass status_of_a_session || miss status_of_a_session
	expect sessions 0 "$DRAPE" sessions --server "$URL" && grep -q "small.json" "$T/out" &&
		expect sessions_json 0 "$DRAPE" sessions --server "$URL" --json &&
		grep -q "\"session\":$id,\"name\":\"small.json\",\"state\":\"done\"" "$T/out" && pass sessions_lists_it || miss sessions_lists_it
	expect server_status 0 "$DRAPE" status --server "$URL" && grep -q "sessions:" "$T/out" && pass server_status || miss server_status

	# attach fetches every retained frame; with --scene the faces too, so
	# the files equal those of the run.
	if expect attach 0 "$DRAPE" attach "$id" --server "$URL" --out "$T/att" --scene "$T/small.json" --quiet; then
		same=0
		for k in 1 2 3 4 5 6; do cmp -s "$T/srv/frame_000$k.obj" "$T/att/frame_000$k.obj" && same=$((same + 1)); done
		if [ $same -eq 6 ]; then pass attach_fetches_every_frame; else fail attach_fetches_every_frame "$same of 6 files equal"; fi
	fi

	# Another user (another token cache) is refused; the owner is not.
	expect other_delete 77 env XDG_CACHE_HOME="$T/other" "$DRAPE" delete "$id" --server "$URL" &&
		expect other_cancel 77 env XDG_CACHE_HOME="$T/other" "$DRAPE" cancel "$id" --server "$URL" &&
		pass not_owner_exit_77 || miss not_owner_exit_77
	expect owner_token_option 0 env XDG_CACHE_HOME="$T/other" "$DRAPE" delete "$id" --server "$URL" --owner-token "$tok" &&
		expect deleted_status 65 "$DRAPE" status "$id" --server "$URL" && pass delete_with_owner_token || miss delete_with_owner_token
fi

# cancel: a long run in the background, cancelled by the same user (the
# token comes from the cache drape run wrote).
"$DRAPE" run "$T/long.json" --server "$URL" --quiet >"$T/bg.out" 2>"$T/bg.err" &
bg_pid=$!
lid=
i=0
while [ -z "$lid" ] && [ $i -lt 100 ]; do
	lid=$(sed -n -E 's/^drape: session ([0-9]+) on .*/\1/p' "$T/bg.err" 2>/dev/null)
	i=$((i + 1))
	sleep 0.05
done
if [ -n "$lid" ]; then
	# A second client attaches while it runs (the reconnect path) and
	# follows it to the end.
	"$DRAPE" attach "$lid" --server "$URL" --json --quiet >"$T/att.out" 2>"$T/att.err" &
	att_pid=$!
	sleep 0.3
	if expect cancel 0 "$DRAPE" cancel "$lid" --server "$URL" && grep -q "canceled\|running" "$T/out"; then
		wait "$bg_pid"
		bgrc=$?
		bg_pid=
		wait "$att_pid"
		attrc=$?
		expect status_canceled 0 "$DRAPE" status "$lid" --server "$URL"
		if grep -q "state: *canceled" "$T/out" && [ "$bgrc" -eq 1 ]; then
			pass cancel_stops_a_run
		else
			fail cancel_stops_a_run "run exited $bgrc; status: $(cat "$T/out")"
		fi
		# The attached client got frames 1..K in order, K >= 1, and ended
		# cleanly when the run was canceled.
		k=$(grep -c '^{"frame"' "$T/att.out")
		inorder=$(grep '^{"frame"' "$T/att.out" | sed -E 's/^\{"frame":([0-9]+).*/\1/' |
			awk 'BEGIN { ok = 1 } { if ($1 != NR) ok = 0 } END { print ok }')
		if [ "$attrc" -eq 0 ] && [ "$k" -ge 1 ] && [ "$inorder" = 1 ]; then
			pass attach_follows_a_running_session
		else
			fail attach_follows_a_running_session "exit $attrc, $k frames, in order: $inorder; $(head -c 300 "$T/att.err")"
		fi
		expect delete 0 "$DRAPE" delete "$lid" --server "$URL" && pass delete_by_owner || miss delete_by_owner
	else
		miss cancel_stops_a_run
	fi
else
	fail cancel_stops_a_run "no session id from the background run: $(cat "$T/bg.err")"
fi

if no_orphans; then pass no_orphans_at_end; else fail no_orphans_at_end "an embedded draped is left"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

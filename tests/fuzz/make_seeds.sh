#!/bin/sh
# Copies the seed inputs of fuzz_obj and fuzz_scene into their corpora:
# the OBJ files of tests/data/obj, small self-consistent slices of the real
# meshes in tests/data/meshes (their first faces and the vertices those use), and the scene files of tests/data/scenes and examples/. The scene
# target loads scenes relative to tests/data/scenes, so the examples' mesh
# paths are rewritten to point there. Seeds are named seed-*, so rerunning
# overwrites the same files. Run from the repository root (fuzz.mk does).
set -eu
O=tests/fuzz/obj
S=tests/fuzz/scene
mkdir -p "$O" "$S"

for f in tests/data/obj/*.obj; do
	cp "$f" "$O/seed-$(basename "$f")"
done

# slice MESH F: the first F faces of a mesh with the vertices they use,
# renumbered in order of first use (texture and normal indices dropped),
# with the g / o / s / usemtl statements met on the way.
slice() {
	awk -v F="$2" '
	FNR == NR { if ($1 == "v") pos[++nv] = $0; next }
	$1 == "f" {
		if (++nf > F) exit
		line = "f"
		for (i = 2; i <= NF; i++) {
			split($i, idx, "/")
			a = idx[1] + 0
			if (a < 0) a = nv + 1 + a
			if (!(a in map)) { map[a] = ++used; order[used] = a }
			line = line " " map[a]
		}
		out[++no] = line
		next
	}
	$1 == "g" || $1 == "o" || $1 == "s" || $1 == "usemtl" { out[++no] = $0 }
	END {
		for (i = 1; i <= used; i++) print pos[order[i]]
		for (i = 1; i <= no; i++) print out[i]
	}
	' "$1" "$1"
}
for m in tests/data/meshes/*.obj; do
	b=$(basename "$m" .obj)
	slice "$m" 12 >"$O/seed-slice12-$b.obj"
	slice "$m" 80 >"$O/seed-slice80-$b.obj"
done
# One slice with texture coordinates and normals left in, as exported.
head -c 3000 tests/data/meshes/mh_male_casualsuit04.obj | sed '$d' >"$O/seed-head-mh_male_casualsuit04.obj"

for f in tests/data/scenes/*.json; do
	cp "$f" "$S/seed-$(basename "$f")"
done
for f in examples/*.json; do
	b=$(basename "$f" .json)
	sed 's#"\.\./tests/data/meshes/#"../meshes/#g' "$f" >"$S/seed-example-$b.json"
	# The same scene on a small mesh, so mutations of it stay fast.
	sed -E 's#"\.\./tests/data/meshes/[^"]*"#"../obj/sheet.obj"#g' "$f" >"$S/seed-example-$b-small.json"
done
echo "seeds: $(ls "$O" | wc -l) in $O, $(ls "$S" | wc -l) in $S"

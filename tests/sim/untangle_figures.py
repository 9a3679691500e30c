#!/usr/bin/env python3
"""Per-frame strain and intersections of a drape run: docs/untangle.md's figures
for cloth that starts tangled (the MakeHuman dress).

python3 tests/sim/untangle_figures.py REST.obj SCALE OUTDIR [--drape build/drape]

REST.obj is the cloth's mesh as the scene gives it and SCALE its scale;
OUTDIR holds the run's frames (`build/drape run SCENE --local --json --out
OUTDIR`, which writes OUTDIR/frame_NNNN.obj in the mesh's vertex order).
For each frame it prints the largest and the 99th percentile of
|l / l0 - 1| over the OBJ's polygon edges (l0 from REST.obj times SCALE;
drape's own max_strain also counts the quads' diagonals) and the
intersecting triangle pairs `drape check` finds in the frame's mesh.
"""
import argparse
import glob
import json
import math
import os
import re
import subprocess
import tempfile


def load(path):
    vs, fs = [], []
    with open(path) as f:
        for line in f:
            if line.startswith('v '):
                vs.append(tuple(float(t) for t in line.split()[1:4]))
            elif line.startswith('f '):
                fs.append([int(t.split('/')[0]) - 1 for t in line.split()[1:]])
    return vs, fs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('rest')
    ap.add_argument('scale', type=float)
    ap.add_argument('outdir')
    ap.add_argument('--drape', default='build/drape')
    args = ap.parse_args()
    rest, faces = load(args.rest)
    edges = sorted({(min(f[i], f[(i + 1) % len(f)]), max(f[i], f[(i + 1) % len(f)]))
                    for f in faces for i in range(len(f))})
    l0 = [args.scale * math.dist(rest[a], rest[b]) for a, b in edges]
    for path in sorted(glob.glob(os.path.join(args.outdir, 'frame_*.obj'))):
        v, _ = load(path)
        st = sorted(abs(math.dist(v[a], v[b]) / l - 1.0) for (a, b), l in zip(edges, l0))
        p99 = st[int(0.99 * (len(st) - 1))]
        with tempfile.NamedTemporaryFile('w', suffix='.json', delete=False) as scene:
            json.dump({"fps": 24, "frames": 1, "cloth": {"mesh": os.path.abspath(path)}}, scene)
        out = subprocess.run([args.drape, 'check', scene.name], capture_output=True,
                             text=True).stdout
        os.unlink(scene.name)
        m = re.search(r'intersecting pairs: *(\d+)', out)
        print('%s max %.1f %% p99 %.2f %% intersecting %s' %
              (os.path.basename(path), 100 * st[-1], 100 * p99, m.group(1) if m else '?'))


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""Faster walks from walk.pc2 (issue 16's "motions you have not seen").

Usage: tests/probe/fastwalk.py OUT_DIR [STEP ...]   (default steps 2 3)

Writes OUT_DIR/walk_xSTEP.pc2, every STEP-th sample of
tests/data/anim/walk.pc2 (the same motion STEP times faster at the same
24 fps; sample rate 1, start frame 1, so sample j is frame 1 + j), and
OUT_DIR/walk_xSTEP.json, examples/walk.json with "animation" pointing at it
and "frames" the samples it has. Also OUT_DIR/walk_x1.json (the original).
Run each with `build/drape run OUT_DIR/walk_xN.json --local --json --out
OUT_DIR/xN` from the repository root; measure with
`DRAPE_WALK_MEASURE=OUT_DIR/xN DRAPE_WALK_PC2=OUT_DIR/walk_xN.pc2
build/tests/test_sim_deform_walk measure`.
"""
import json, os, struct, sys

HEADER = struct.Struct('<12siiffi')

def main():
    out = sys.argv[1]
    steps = [int(s) for s in sys.argv[2:]] or [2, 3]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    src = os.path.join(root, 'tests/data/anim/walk.pc2')
    with open(src, 'rb') as f:
        data = f.read()
    magic, ver, pts, start, rate, samples = HEADER.unpack_from(data)
    assert magic == b'POINTCACHE2\0' and ver == 1
    size = pts * 12
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(root, 'examples/walk.json')) as f:
        scene = json.load(f)
    scene['cloth']['mesh'] = os.path.join(root, 'tests/data/meshes/mh_male_casualsuit04.obj')
    scene['colliders'][0]['mesh'] = os.path.join(root, 'tests/data/anim/body_rest_m.obj')
    scene['colliders'][0]['animation'] = src
    with open(os.path.join(out, 'walk_x1.json'), 'w') as f:
        json.dump(scene, f, indent=1)
    for step in steps:
        keep = list(range(0, samples, step))
        pc2 = os.path.join(os.path.abspath(out), 'walk_x%d.pc2' % step)
        with open(pc2, 'wb') as f:
            f.write(HEADER.pack(b'POINTCACHE2\0', 1, pts, 1.0, 1.0, len(keep)))
            for j in keep:
                f.write(data[32 + j * size:32 + (j + 1) * size])
        s = json.loads(json.dumps(scene))
        s['comment'] = 'walk.pc2 at %dx speed: every %d-th sample' % (step, step)
        s['frames'] = len(keep)
        s['colliders'][0]['animation'] = pc2
        with open(os.path.join(out, 'walk_x%d.json' % step), 'w') as f:
            json.dump(s, f, indent=1)
        print('%s: %d samples' % (pc2, len(keep)))

main()

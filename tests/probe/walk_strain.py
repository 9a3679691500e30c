#!/usr/bin/env python3
"""Where the walk's strain sits (issue 17/19 probe; pure Python, no numpy).

Usage: tests/probe/walk_strain.py OUT_DIR FRAME [FRAME ...]
OUT_DIR holds `drape run examples/walk.json --out OUT_DIR` frames
(frame_NNNN.obj is PC2 sample NNNN counted from 1, docs/animation.md,
"Faster motions and deeper bends"). For each frame:
the max and 99th percentile of |l - l0| / l0 over the suit's edges, and the
top edges with, for each end, the nearest body vertex (the PC2 pose of that
frame), its distance, the body region it belongs to (from the rest pose)
and how far that body vertex moved over the frame; plus the two body
points' separation now against one frame before (an edge whose ends sit on
two body parts moving apart).
"""
import math, struct, sys

def read_obj(path, scale=1.0):
    v, t = [], []
    with open(path) as f:
        for line in f:
            if line.startswith('v '):
                a = line.split()
                v.append((float(a[1]) * scale, float(a[2]) * scale, float(a[3]) * scale))
            elif line.startswith('f '):
                idx = [int(s.split('/')[0]) - 1 for s in line.split()[1:]]
                for j in range(1, len(idx) - 1):
                    t.append((idx[0], idx[j], idx[j + 1]))
    return v, t

def read_pc2(path):
    with open(path, 'rb') as f:
        h = f.read(32)
        pts, = struct.unpack('<i', h[16:20])
        smp, = struct.unpack('<i', h[28:32])
        data = f.read()
    fr = []
    for s in range(smp):
        off = s * pts * 12
        a = struct.unpack('<%df' % (pts * 3), data[off:off + pts * 12])
        fr.append([(a[3 * i], a[3 * i + 1], a[3 * i + 2]) for i in range(pts)])
    return fr

def dist(a, b):
    return math.sqrt(sum((a[k] - b[k]) ** 2 for k in range(3)))

def region(p, box):
    # p in the rest pose; y up, x the body's left/right (MakeHuman).
    (x0, y0, z0), (x1, y1, z1) = box
    h = (p[1] - y0) / (y1 - y0)
    side = 'L' if p[0] > 0.5 * (x0 + x1) else 'R'
    if h > 0.80: return 'neck/head'
    if abs(p[0] - 0.5 * (x0 + x1)) > 0.17 * (x1 - x0) and h > 0.5: return 'arm' + side
    if h > 0.58: return 'torso'
    if h > 0.47: return 'hip/crotch' + side
    if h > 0.28: return 'thigh' + side
    if h > 0.08: return 'shin' + side
    return 'foot' + side

def main():
    out, frames = sys.argv[1], [int(a) for a in sys.argv[2:]]
    rest, tris = read_obj('tests/data/meshes/mh_male_casualsuit04.obj', 0.1)
    body, _ = read_obj('tests/data/anim/body_rest_m.obj')
    anim = read_pc2('tests/data/anim/walk.pc2')
    box = (tuple(min(p[k] for p in body) for k in range(3)), tuple(max(p[k] for p in body) for k in range(3)))
    nbr = {}
    for t in tris:
        for a in t:
            nbr.setdefault(a, set()).update(t)
    edges = sorted({(min(a, b), max(a, b)) for t in tris for a, b in ((t[0], t[1]), (t[1], t[2]), (t[2], t[0]))})
    for f in frames:
        pos, _ = read_obj('%s/frame_%04d.obj' % (out, f))
        g = min(f - 1, len(anim) - 1)
        P, Pm = anim[g], anim[max(g - 1, 0)]
        s = sorted(((abs(dist(pos[a], pos[b]) / dist(rest[a], rest[b]) - 1), dist(pos[a], pos[b]) > dist(rest[a], rest[b]), a, b)
                    for a, b in edges), reverse=True)
        vals = [e[0] for e in s]
        p99 = vals[int(0.01 * len(vals))]
        ten = sorted((e[0] if e[1] else 0.0 for e in s), reverse=True)
        com = sorted((0.0 if e[1] else e[0] for e in s), reverse=True)
        k = int(0.01 * len(vals))
        print('frame %d: |strain| max %.1f %% p99 %.2f %% (tension max %.1f %% p99 %.2f %%, compression max %.1f %% p99 %.2f %%)'
              '  edges >5%%: %d, >10%%: %d' % (f, 100 * vals[0], 100 * p99, 100 * ten[0], 100 * ten[k], 100 * com[0], 100 * com[k],
              sum(v > 0.05 for v in vals), sum(v > 0.10 for v in vals)))
        seen = set()
        for st, stretched, a, b in s[:12]:
            near = []
            for c in (a, b):
                j = min(range(len(P)), key=lambda k: (P[k][0] - pos[c][0]) ** 2 + (P[k][1] - pos[c][1]) ** 2 + (P[k][2] - pos[c][2]) ** 2)
                near.append(j)
            sep, sepm = dist(P[near[0]], P[near[1]]), dist(Pm[near[0]], Pm[near[1]])
            # The nearest cloth vertex outside the end's two-ring: another
            # layer of the garment touching it (self-contact).
            gap = []
            for c in (a, b):
                ring = set().union(*(nbr[u] for u in nbr[c]))
                gap.append(min(dist(pos[c], pos[u]) for u in range(len(pos)) if u not in ring))
            print('  %5.1f%% %s e(%d,%d) l0 %.1f mm | %s d %.1f mm mv %.1f | %s d %.1f mm mv %.1f | body sep %.1f->%.1f mm | cloth gap %.1f %.1f mm' % (
                100 * st, '+' if stretched else '-', a, b, 1e3 * dist(rest[a], rest[b]),
                region(body[near[0]], box), 1e3 * dist(pos[a], P[near[0]]), 1e3 * dist(P[near[0]], Pm[near[0]]),
                region(body[near[1]], box), 1e3 * dist(pos[b], P[near[1]]), 1e3 * dist(P[near[1]], Pm[near[1]]),
                1e3 * sepm, 1e3 * sep, 1e3 * gap[0], 1e3 * gap[1]))

main()

"""What a bake sends, gathered from the Blender scene (main thread only).

Blender is Z-up, drape Y-up: a Blender point (x, y, z) is drape's
(x, z, -y), and back (x, -z, y). Both directions only move and negate
float32 values, so they are exact. The cloth keeps Blender's vertex order
(the mesh data's, before modifiers), so the cache maps back vertex for
vertex; positions go to the world through the object's matrix, skipped when
it is the identity so that an untransformed object round-trips bit for bit.
"""

import numpy as np


class GatherError(Exception):
    """A scene the bake cannot send; the message says what to change."""


def to_drape(p):
    p = np.asarray(p, dtype=np.float32)
    return np.ascontiguousarray(np.stack([p[..., 0], p[..., 2], -p[..., 1]], axis=-1))


def to_blender(p):
    p = np.asarray(p, dtype=np.float32)
    return np.ascontiguousarray(np.stack([p[..., 0], -p[..., 2], p[..., 1]], axis=-1))


def _matrix(obj):
    m = np.array(obj.matrix_world, dtype=np.float64)
    return None if np.array_equal(m, np.eye(4)) else m


def _apply(m, p):
    if m is None:
        return p
    return (p.astype(np.float64) @ m[:3, :3].T + m[:3, 3]).astype(np.float32)


def _mesh_arrays(me):
    n = len(me.vertices)
    co = np.empty(n * 3, dtype=np.float32)
    me.vertices.foreach_get("co", co)
    me.calc_loop_triangles()
    tri = np.empty(len(me.loop_triangles) * 3, dtype=np.int32)
    me.loop_triangles.foreach_get("vertices", tri)
    return co.reshape(n, 3), tri.reshape(-1, 3).astype(np.uint32)


def cloth(obj, pin_group):
    """(positions in drape's frame, triangles, pins, matrix or None)."""
    if obj.type != "MESH":
        raise GatherError("%s is not a mesh" % obj.name)
    co, tri = _mesh_arrays(obj.data)
    if len(tri) == 0:
        raise GatherError("%s has no faces to simulate" % obj.name)
    pins = []
    if pin_group:
        vg = obj.vertex_groups.get(pin_group)
        if vg is None:
            raise GatherError("pin group %r is not a vertex group of %s (it has: %s)" % (
                pin_group, obj.name, ", ".join(g.name for g in obj.vertex_groups) or "none"))
        gi = vg.index
        pins = [v.index for v in obj.data.vertices if any(g.group == gi and g.weight > 0.5 for g in v.groups)]
        if not pins:
            raise GatherError("pin group %r of %s has no vertex with weight above 0.5" % (pin_group, obj.name))
    m = _matrix(obj)
    return to_drape(_apply(m, co)), tri, np.array(pins, dtype=np.uint32), m


def collision_objects(scene, cloth_obj):
    """Objects of the scene marked by Blender's Collision modifier."""
    out = []
    for obj in scene.objects:
        if obj is cloth_obj or obj.type != "MESH" or obj.hide_render:
            continue
        if any(m.type == "COLLISION" for m in obj.modifiers):
            out.append(obj)
    return out


# The axis change as a matrix: drape = C @ blender.
_C = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def _rigid_keys(mats):
    """Keyframes [(k, translate, rotate degrees)] in drape's frame for
    object matrices (4x4, one per frame) that differ only by a rotation and
    a translation, with the (constant) scale per local axis; None when the
    matrices shear or change scale. drape applies world = T + Rz Ry Rx local
    (server/sim/collider.c); in drape's axes R = C R_blender C^T, T = C t."""
    m3 = np.array([m[:3, :3] for m in mats])
    scale = np.linalg.norm(m3, axis=1)  # column norms: the scale per local axis
    if not np.allclose(scale, scale[0], rtol=1e-6, atol=0):
        return None
    rots = m3 / scale[0]
    for r in rots:
        if not np.allclose(r.T @ r, np.eye(3), atol=1e-5) or np.linalg.det(r) < 0:
            return None
    rd = np.einsum("ij,fjk,lk->fil", _C, rots, _C)
    x = np.unwrap(np.arctan2(rd[:, 2, 1], rd[:, 2, 2]))
    y = np.arcsin(np.clip(-rd[:, 2, 0], -1.0, 1.0))
    z = np.unwrap(np.arctan2(rd[:, 1, 0], rd[:, 0, 0]))
    t = np.array([_C @ m[:3, 3] for m in mats])
    keys = []
    for k in range(len(mats)):
        keys.append((float(k), tuple(float(v) for v in t[k]),
                     # + 0.0 turns asin's -0.0 into 0.0, the angle a
                     # scene file would give.
                     (float(np.degrees(x[k])) + 0.0, float(np.degrees(y[k])) + 0.0,
                      float(np.degrees(z[k])) + 0.0)))
    return keys, scale[0]


def colliders(context, cloth_obj, start, frames):
    """[(name, vertices, triangles, motion)] in drape's frame: each
    collision object's evaluated mesh at every frame from start to start +
    frames (sim frame k, the state after k steps, plays at scene frame
    start + k). motion is ("static", None) for one that never moves (its
    world-space mesh); ("rigid", keys) for one whose mesh stays the same in
    its own space while its object matrix moves it (the mesh in its own
    space, scaled, and one keyframe per frame: its field is built once);
    ("deforming", poses) for any other, its world-space pose per frame."""
    objs = collision_objects(context.scene, cloth_obj)
    if not objs:
        return []
    scene = context.scene
    keep_frame = scene.frame_current, scene.frame_subframe
    local = {o.name: [] for o in objs}
    mats = {o.name: [] for o in objs}
    topo = {}
    try:
        for f in range(start, start + frames + 1):
            scene.frame_set(f)
            dg = context.evaluated_depsgraph_get()
            for o in objs:
                ev = o.evaluated_get(dg)
                me = ev.to_mesh()
                try:
                    co, tri = _mesh_arrays(me)
                finally:
                    ev.to_mesh_clear()
                if o.name not in topo:
                    if len(tri) == 0:
                        raise GatherError("collider %s has no faces" % o.name)
                    topo[o.name] = tri
                elif len(co) != len(local[o.name][0]) or not np.array_equal(tri, topo[o.name]):
                    raise GatherError("collider %s changes its topology during the bake (frame %d); "
                                      "drape's deforming colliders keep one mesh" % (o.name, f))
                local[o.name].append(co)
                mats[o.name].append(np.array(ev.matrix_world, dtype=np.float64))
    finally:
        scene.frame_set(keep_frame[0], subframe=keep_frame[1])
    out = []
    for o in objs:
        cos, ms = local[o.name], mats[o.name]
        same_mesh = all(np.array_equal(c, cos[0]) for c in cos[1:])
        same_matrix = all(np.array_equal(m, ms[0]) for m in ms[1:])
        world0 = to_drape(_apply(None if np.array_equal(ms[0], np.eye(4)) else ms[0], cos[0]))
        if same_mesh and same_matrix:
            out.append((o.name, world0, topo[o.name], ("static", None)))
            continue
        rigid = _rigid_keys(ms) if same_mesh else None
        if rigid is not None:
            keys, scale = rigid
            verts = to_drape((cos[0].astype(np.float64) * scale).astype(np.float32))
            out.append((o.name, verts, topo[o.name], ("rigid", keys)))
            continue
        poses = np.stack([to_drape(_apply(m, c)) for m, c in zip(ms, cos)])
        out.append((o.name, world0, topo[o.name], ("deforming", poses)))
    return out

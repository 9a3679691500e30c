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


def colliders(context, cloth_obj, start, frames):
    """[(name, vertices, triangles, poses or None)] in drape's frame: each
    collision object's evaluated mesh in world space at every frame from
    start to start + frames. One that never moves is static (poses None);
    one that moves or deforms gets its pose per frame (pose i at sim frame
    i, the state after i steps, which plays at scene frame start + i)."""
    objs = collision_objects(context.scene, cloth_obj)
    if not objs:
        return []
    scene = context.scene
    keep_frame = scene.frame_current, scene.frame_subframe
    samples = {o.name: [] for o in objs}
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
                elif len(co) != len(samples[o.name][0]) or not np.array_equal(tri, topo[o.name]):
                    raise GatherError("collider %s changes its topology during the bake (frame %d); "
                                      "drape's deforming colliders keep one mesh" % (o.name, f))
                samples[o.name].append(to_drape(_apply(np.array(ev.matrix_world, dtype=np.float64), co)))
    finally:
        scene.frame_set(keep_frame[0], subframe=keep_frame[1])
    out = []
    for o in objs:
        poses = samples[o.name]
        moving = any(not np.array_equal(p, poses[0]) for p in poses[1:])
        out.append((o.name, poses[0], topo[o.name], np.stack(poses) if moving else None))
    return out

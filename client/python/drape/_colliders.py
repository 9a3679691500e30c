"""Collider descriptions: analytic shapes and (rigid or deforming) meshes.

A Collider is plain data the caller builds with sphere(), plane(), box(),
capsule() or mesh(); Session.add_collider() turns it into a
drape_collider_desc for drape_collider_add. Response fields left at None
(friction, static_friction, restitution, thickness, voxel_size) take the
server's defaults. Positions are in drape's frame: metres, Y up.
"""

import ctypes
import math

import numpy as np

from . import _lib
from ._errors import InvalidArgument

SHAPES = {"plane": 1, "sphere": 2, "box": 3, "capsule": 4, "mesh": 5}


def _bad(what, why):
    return InvalidArgument(-1, "EINVAL", "%s: %s" % (what, why))


def _vec3(what, v):
    try:
        out = [float(x) for x in v]
    except (TypeError, ValueError):
        raise _bad(what, "expected three numbers, got %r" % (v,)) from None
    if len(out) != 3 or not all(math.isfinite(x) for x in out):
        raise _bad(what, "expected three finite numbers, got %r" % (v,))
    return out


class Collider:
    """One collider: shape name, its geometry and optional response fields."""

    def __init__(self, shape, **fields):
        if shape not in SHAPES:
            raise _bad("collider.shape", "%r is not one of %s" % (shape, ", ".join(SHAPES)))
        self.shape = shape
        self.fields = fields

    def __repr__(self):
        return "drape.Collider(%r)" % self.shape


def _response(kw):
    known = ("friction", "static_friction", "restitution", "thickness", "voxel_size", "keyframes")
    for k in kw:
        if k not in known:
            raise _bad("collider." + k, "unknown key; known: " + ", ".join(known))
    return kw


def sphere(center, radius, **kw):
    return Collider("sphere", center=_vec3("sphere.center", center), radius=float(radius), **_response(kw))


def plane(point, normal, **kw):
    return Collider("plane", point=_vec3("plane.point", point), normal=_vec3("plane.normal", normal),
                    **_response(kw))


def box(center, half_extents, **kw):
    return Collider("box", center=_vec3("box.center", center),
                    half_extents=_vec3("box.half_extents", half_extents), **_response(kw))


def capsule(a, b, radius, **kw):
    return Collider("capsule", a=_vec3("capsule.a", a), b=_vec3("capsule.b", b), radius=float(radius),
                    **_response(kw))


def mesh(vertices, triangles, frames=None, frame_start=0.0, **kw):
    """A triangle mesh collider. frames: (F, N, 3) poses of a deforming
    body, pose i at sim frame frame_start + i (sim frame 0 is the cloth's
    input state, k the state after k frames; default: pose 0 with the input
    state); keyframes=[(frame, (tx, ty, tz), (rx, ry, rz) degrees), ...] for
    a rigid motion."""
    v = np.ascontiguousarray(vertices, dtype=np.float32)
    if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] == 0:
        raise _bad("mesh.vertices", "expected an (N, 3) array, got shape %s" % (v.shape,))
    t = np.asarray(triangles)
    if t.ndim != 2 or t.shape[1] != 3 or t.shape[0] == 0:
        raise _bad("mesh.triangles", "expected an (M, 3) array, got shape %s" % (t.shape,))
    if t.min() < 0:
        raise _bad("mesh.triangles", "negative vertex index %d" % t.min())
    t = np.ascontiguousarray(t, dtype=np.uint32)
    f = None
    if frames is not None:
        f = np.ascontiguousarray(frames, dtype=np.float32)
        if f.ndim != 3 or f.shape[1:] != v.shape:
            raise _bad("mesh.frames", "expected (F, %d, 3) poses, got shape %s" % (v.shape[0], f.shape))
    return Collider("mesh", vertices=v, triangles=t, frames=f, frame_start=float(frame_start), **_response(kw))


def to_struct(lib, c):
    """(desc, keep): the drape_collider_desc and the objects it points into."""
    if not isinstance(c, Collider):
        raise _bad("colliders", "expected a drape.Collider (drape.sphere(), drape.mesh(), ...), got %r" % (c,))
    d = _lib.drape_collider_desc()
    lib.drape_collider_desc_unset(ctypes.byref(d))
    d.shape = SHAPES[c.shape]
    keep = []
    f = c.fields
    for k in ("point", "normal", "center", "half_extents", "a", "b"):
        if k in f:
            setattr(d, k, _lib.c_float3(*f[k]))
    if "radius" in f:
        d.radius = f["radius"]
    for k in ("friction", "static_friction", "restitution", "thickness", "voxel_size"):
        if f.get(k) is not None:
            setattr(d, k, float(f[k]))
    if c.shape == "mesh":
        v, t = f["vertices"], f["triangles"]
        keep += [v, t]
        d.vertices = v.ctypes.data
        d.vertex_count = v.shape[0]
        d.triangles = t.ctypes.data
        d.triangle_count = t.shape[0]
        if f.get("frames") is not None:
            keep.append(f["frames"])
            d.frames = f["frames"].ctypes.data
            d.frame_count = f["frames"].shape[0]
            d.frame_start = f["frame_start"]
    keys = f.get("keyframes")
    if keys:
        arr = (_lib.drape_keyframe * len(keys))()
        for i, key in enumerate(keys):
            try:
                frame, tr, rot = key
            except (TypeError, ValueError):
                raise _bad("keyframes[%d]" % i, "expected (frame, (tx, ty, tz), (rx, ry, rz))") from None
            arr[i].frame = float(frame)
            arr[i].translate = _lib.c_float3(*_vec3("keyframes[%d].translate" % i, tr))
            arr[i].rotate = _lib.c_float3(*_vec3("keyframes[%d].rotate" % i, rot))
        keep.append(arr)
        d.keyframes = arr
        d.keyframe_count = len(keys)
    return d, keep

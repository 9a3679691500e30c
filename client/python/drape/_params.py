"""Solver parameters from a Python dict to drape_sim_params.

Only the keys given are set; every other field keeps libdrape's "unset"
marker so the server applies its default (drape_params_unset). Keys are the
C field names of drape_sim_params (include/drape/sim.h), plus "material": a
fabric preset name ("cotton", "denim", ...) that sets the XPBD model and its
constants before the other keys apply. An unknown key or a value of the wrong
shape is an InvalidArgument naming it, raised before anything is sent.
"""

import ctypes
import math

from . import _lib
from ._errors import InvalidArgument

_VECTORS = {"gravity", "wind"}
_INTS = {n for n, t in _lib.drape_sim_params._fields_ if t is ctypes.c_int32}
_FIELDS = [n for n, _ in _lib.drape_sim_params._fields_]
MODELS = {"pbd": 0, "xpbd": 1}
SCHEDULES = {"frame": 0, "mesh": 1}


def _bad(key, why):
    return InvalidArgument(-1, "EINVAL", "params.%s: %s" % (key, why))


def to_struct(lib, params):
    """A drape_sim_params with the keys of `params` set, the rest unset."""
    p = _lib.drape_sim_params()
    lib.drape_params_unset(ctypes.byref(p))
    params = dict(params or {})
    material = params.pop("material", None)
    if material is not None:
        if lib.drape_material_preset is None:
            raise _bad("material", "this libdrape has no material presets; give stretch_k, shear_k, "
                       "bend_k, density and model='xpbd' instead")
        err = _lib.drape_error()
        if lib.drape_material_preset(str(material).encode(), ctypes.byref(p), ctypes.byref(err)) != 0:
            raise _bad("material", err.message.decode(errors="replace"))
    for key, value in params.items():
        if key not in _FIELDS:
            raise _bad(key, "unknown parameter; known: material, " + ", ".join(_FIELDS))
        if key == "model" and isinstance(value, str):
            if value not in MODELS:
                raise _bad(key, "%r is not one of %s" % (value, ", ".join(MODELS)))
            value = MODELS[value]
        if key == "schedule" and isinstance(value, str):
            if value not in SCHEDULES:
                raise _bad(key, "%r is not one of %s" % (value, ", ".join(SCHEDULES)))
            value = SCHEDULES[value]
        if key in _VECTORS:
            try:
                vec = [float(v) for v in value]
            except (TypeError, ValueError):
                raise _bad(key, "expected three numbers, got %r" % (value,)) from None
            if len(vec) != 3 or not all(math.isfinite(v) for v in vec):
                raise _bad(key, "expected three finite numbers, got %r" % (value,))
            setattr(p, key, _lib.c_float3(*vec))
        elif key in _INTS:
            if isinstance(value, bool):
                value = int(value)
            if not isinstance(value, int):
                raise _bad(key, "expected an integer, got %r" % (value,))
            if not -2**31 < value < 2**31:
                raise _bad(key, "%d is out of range" % value)
            setattr(p, key, value)
        else:
            try:
                f = float(value)
            except (TypeError, ValueError):
                raise _bad(key, "expected a number, got %r" % (value,)) from None
            if not math.isfinite(f):
                raise _bad(key, "expected a finite number, got %r" % (value,))
            setattr(p, key, f)
    return p


def preset_names(lib):
    """The material preset names the library knows ([] without presets)."""
    if lib.drape_material_preset_names is None:
        return []
    out = []
    names = lib.drape_material_preset_names()
    i = 0
    while names[i] is not None:
        out.append(names[i].decode())
        i += 1
    return out

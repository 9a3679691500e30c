"""drape cloth: bake a mesh as cloth on a drape server, from Blender.

The add-on is built on the `drape` Python package (make install puts it in
the system Python's path, where Debian's Blender finds it; the library path
can also be set in the preferences). Properties > Physics > drape Cloth
holds the settings of a mesh object; Bake sends the mesh (Blender's vertex
order, Z-up converted to drape's Y-up), its pin vertex group and every
scene object with a Collision modifier, receives the frames on a worker
thread and applies them as a PC2 cache through a Mesh Cache modifier.
"""

bl_info = {
    "name": "drape Cloth",
    "author": "drape",
    "version": (0, 2, 0),
    "blender": (3, 4, 0),
    "location": "Properties > Physics > drape Cloth",
    "description": "Bake cloth on a drape simulation server and play it back as a PC2 cache",
    "category": "Physics",
}

from . import bake, panel, prefs, props  # noqa: E402

_MODULES = (prefs, props, bake, panel)


def register():
    for m in _MODULES:
        m.register()


def unregister():
    for m in reversed(_MODULES):
        m.unregister()

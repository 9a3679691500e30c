"""The cloth settings of a mesh object (Object.drape_cloth)."""

import bpy

# The fabric presets of libdrape (drape.material_presets()); listed here so
# the panel draws without loading the library. An unknown name is refused by
# the library at bake time with the list it knows.
PRESETS = ("cotton", "denim", "silk", "wool", "jersey", "polyester", "leather")


def _material_items(self, context):
    items = [("NONE", "None (pbd)", "The dimensionless pbd model with drape's default stiffness")]
    items += [(p, p.capitalize(), "The %s preset, solved as XPBD in physical units" % p) for p in PRESETS]
    return items


class DrapeClothSettings(bpy.types.PropertyGroup):
    material: bpy.props.EnumProperty(name="Material", items=_material_items,
                                     description="Fabric preset (physical units, XPBD) or the pbd model")
    substeps: bpy.props.IntProperty(name="Substeps", default=4, min=1, max=64,
                                    description="Solver substeps per frame")
    iterations: bpy.props.IntProperty(name="Iterations", default=10, min=1, max=256,
                                      description="Constraint sweeps per substep")
    frames: bpy.props.IntProperty(name="Frames", default=48, min=1, max=1000000,
                                  description="Frames to bake after the start frame")
    start_frame: bpy.props.IntProperty(name="Start frame", default=1,
                                       description="Scene frame at which the cloth is at rest (the input pose)")
    thickness: bpy.props.FloatProperty(name="Thickness", default=0.005, min=0.0, max=1.0, subtype="DISTANCE",
                                       description="Cloth half-thickness for collisions")
    pin_group: bpy.props.StringProperty(name="Pin group", default="",
                                        description="Vertex group whose vertices (weight > 0.5) stay in place")
    cache_path: bpy.props.StringProperty(name="Cache", subtype="FILE_PATH", default="//drape/{object}.pc2",
                                         description="PC2 file the bake writes ({object}: the object's name)")


def register():
    bpy.utils.register_class(DrapeClothSettings)
    bpy.types.Object.drape_cloth = bpy.props.PointerProperty(type=DrapeClothSettings)


def unregister():
    del bpy.types.Object.drape_cloth
    bpy.utils.unregister_class(DrapeClothSettings)

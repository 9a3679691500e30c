"""The drape Cloth panel in Properties > Physics of a mesh object."""

import bpy

from . import bake


class DRAPE_PT_cloth(bpy.types.Panel):
    bl_label = "drape Cloth"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type == "MESH"

    def draw(self, context):
        obj = context.object
        s = obj.drape_cloth
        col = self.layout.column()
        col.prop(s, "material")
        col.prop(s, "substeps")
        col.prop(s, "iterations")
        col.prop(s, "start_frame")
        col.prop(s, "frames")
        col.prop(s, "thickness")
        col.prop_search(s, "pin_group", obj, "vertex_groups")
        col.prop(s, "cache_path")
        job = bake.running(obj)
        if job is None:
            col.operator("drape.bake", icon="PHYSICS")
        else:
            col.label(text="Baking: frame %d of %d" % (job.done, job.frames))
            col.operator("drape.bake_cancel", icon="CANCEL")
        col.label(text="Colliders: objects with a Collision modifier")


def register():
    bpy.utils.register_class(DRAPE_PT_cloth)


def unregister():
    bpy.utils.unregister_class(DRAPE_PT_cloth)

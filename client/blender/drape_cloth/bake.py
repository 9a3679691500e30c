"""The Bake operator: a worker thread talks to draped while Blender runs.

Blender's data is read on the main thread (gather), then a BakeJob thread
connects, creates the session, runs it and receives every frame (ctypes
releases the GIL during each library call, so the UI stays live), and writes
the PC2 file; the main thread then points a Mesh Cache modifier at it.
Invoked from the UI the operator is modal: a timer shows the progress in the
status bar and Esc cancels. Run from a script or `blender -b` (execute), it
waits for the job.
"""

import os
import threading
import time

import bpy
import numpy as np

from . import gather, pc2, prefs

_JOBS = {}  # object name -> the BakeJob baking it


def running(obj):
    job = _JOBS.get(obj.name)
    return job if job is not None and job.is_alive() else None


def _import_drape(p):
    if p.library:
        os.environ["DRAPE_LIBRARY"] = bpy.path.abspath(p.library)
    import drape  # noqa: F401 (raises ImportError with the reason)
    return drape


class BakeJob(threading.Thread):
    """One bake on its own thread and its own drape connection. .done is the
    last frame received, .state "running", "done", "canceled" or "failed"
    (.error then holds the exception)."""

    def __init__(self, drape, connect_args, name, positions, triangles, pins, params, colliders,
                 frames, path, matrix):
        super().__init__(name="drape bake " + name, daemon=True)
        self.drape = drape
        self.connect_args = connect_args
        self.obj_name = name
        self.positions, self.triangles, self.pins = positions, triangles, pins
        self.params, self.colliders = params, colliders
        self.frames, self.path, self.matrix = frames, path, matrix
        self.cancel_requested = threading.Event()
        self.done = 0
        self.state = "running"
        self.error = None
        self.seconds = 0.0

    def cancel(self):
        self.cancel_requested.set()

    def run(self):
        drape = self.drape
        t0 = time.monotonic()
        try:
            with drape.connect(**self.connect_args) as c:
                cols = []
                for cname, v, t, (kind, motion) in self.colliders:
                    if kind == "rigid":
                        cols.append(drape.mesh(v, t, keyframes=motion))
                    else:
                        cols.append(drape.mesh(v, t, frames=motion, frame_start=0.0))
                s = c.create(self.positions, self.triangles, pins=self.pins, params=self.params,
                             colliders=cols, name="blender:" + self.obj_name)
                try:
                    self._receive(drape, s)
                finally:
                    try:
                        s.delete()
                    except drape.Error:
                        pass
        except Exception as e:  # reported on the main thread
            self.error = e
            self.state = "failed"
        self.seconds = time.monotonic() - t0

    def _receive(self, drape, s):
        out = np.empty((self.frames + 1,) + self.positions.shape, dtype=np.float32)
        out[0] = self.positions
        s.run(self.frames)
        while True:
            if self.cancel_requested.is_set():
                s.cancel()
                self.state = "canceled"
                return
            try:
                fr = s.next_frame(timeout=0.25)
            except drape.Timeout:
                continue
            if fr is None:
                break
            out[fr.index] = fr.positions
            self.done = fr.index
        if self.done != self.frames:
            raise drape.Error(-6, "ESTATE", "the run ended at frame %d of %d" % (self.done, self.frames))
        local = gather.to_blender(out)
        if self.matrix is not None:
            inv = np.linalg.inv(self.matrix)
            local = (local.astype(np.float64) @ inv[:3, :3].T + inv[:3, 3]).astype(np.float32)
        pc2.write(self.path, local, start_frame=0.0, sample_rate=1.0)
        self.state = "done"


def apply_cache(obj, path, start_frame):
    """Points the object's "drape" Mesh Cache modifier (made first in the
    stack, so it replaces the base mesh's positions) at the PC2 file: PC2
    sample i plays at scene frame start_frame + i."""
    mod = obj.modifiers.get("drape")
    if mod is None or mod.type != "MESH_CACHE":
        mod = obj.modifiers.new("drape", "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = path
    mod.play_mode = "SCENE"
    mod.time_mode = "FRAME"
    mod.frame_start = start_frame
    mod.frame_scale = 1.0
    mod.interpolation = "LINEAR"
    mod.deform_mode = "OVERWRITE"
    mod.factor = 1.0
    mod.forward_axis = "POS_Y"
    mod.up_axis = "POS_Z"
    if obj.modifiers[0] != mod:
        with bpy.context.temp_override(object=obj, active_object=obj):
            bpy.ops.object.modifier_move_to_index(modifier=mod.name, index=0)
    return mod


def _cache_path(obj, s):
    raw = s.cache_path.replace("{object}", bpy.path.clean_name(obj.name))
    if raw.startswith("//") and not bpy.data.filepath:
        raise gather.GatherError("the cache path %r is relative to the .blend file: save the file first "
                                 "or give an absolute path" % s.cache_path)
    return os.path.abspath(bpy.path.abspath(raw))


class DRAPE_OT_bake(bpy.types.Operator):
    """Bake the active mesh as cloth on the drape server"""

    bl_idname = "drape.bake"
    bl_label = "Bake on drape"
    bl_options = {"REGISTER"}

    _timer = None
    _job = None
    _obj_name = ""

    @classmethod
    def poll(cls, context):
        obj = context.object
        return obj is not None and obj.type == "MESH" and running(obj) is None

    def _prepare(self, context):
        obj = context.object
        s = obj.drape_cloth
        p = prefs.get(context)
        try:
            drape = _import_drape(p)
        except ImportError as e:
            raise gather.GatherError("the drape Python package cannot be loaded (%s); run make install, "
                                     "or set libdrape's path in the add-on's preferences" % e) from None
        pos, tri, pins, matrix = gather.cloth(obj, s.pin_group)
        cols = gather.colliders(context, obj, s.start_frame, s.frames)
        params = {"fps": context.scene.render.fps / context.scene.render.fps_base,
                  "substeps": s.substeps, "iterations": s.iterations, "thickness": s.thickness}
        if s.material != "NONE":
            params["material"] = s.material
        args = {"url": p.server_url or None, "token_file": p.token_file and bpy.path.abspath(p.token_file) or None,
                "tls_ca": p.tls_ca and bpy.path.abspath(p.tls_ca) or None,
                "tls_cert": p.tls_cert and bpy.path.abspath(p.tls_cert) or None,
                "tls_key": p.tls_key and bpy.path.abspath(p.tls_key) or None}
        self._obj_name = obj.name
        return BakeJob(drape, args, obj.name, pos, tri, pins, params, cols, s.frames, _cache_path(obj, s), matrix)

    def _finish(self, context, job):
        _JOBS.pop(job.obj_name, None)
        obj = bpy.data.objects.get(job.obj_name)
        if job.state == "done" and obj is None:
            self.report({"WARNING"}, "drape: %s was removed during its bake; the cache is in %s"
                        % (job.obj_name, job.path))
            return {"CANCELLED"}
        if job.state == "done":
            apply_cache(obj, job.path, obj.drape_cloth.start_frame)
            self.report({"INFO"}, "drape: baked %d frames of %s in %.1f s" % (job.frames, job.obj_name, job.seconds))
            return {"FINISHED"}
        if job.state == "canceled":
            self.report({"WARNING"}, "drape: bake of %s cancelled at frame %d" % (job.obj_name, job.done))
            return {"CANCELLED"}
        e = job.error
        msg = "%s: %s" % (e.name, e.message) if hasattr(e, "name") else "%s: %s" % (type(e).__name__, e)
        self.report({"ERROR"}, "drape: bake of %s failed: %s" % (job.obj_name, msg))
        return {"CANCELLED"}

    def execute(self, context):
        try:
            job = self._prepare(context)
        except gather.GatherError as e:
            self.report({"ERROR"}, "drape: %s" % e)
            return {"CANCELLED"}
        _JOBS[job.obj_name] = job
        job.start()
        job.join()
        return self._finish(context, job)

    def invoke(self, context, event):
        try:
            job = self._prepare(context)
        except gather.GatherError as e:
            self.report({"ERROR"}, "drape: %s" % e)
            return {"CANCELLED"}
        self._job = job
        _JOBS[job.obj_name] = job
        job.start()
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.1, window=context.window)
        wm.progress_begin(0, job.frames)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        job = self._job
        if event.type == "ESC" and event.value == "PRESS":
            job.cancel()
            return {"RUNNING_MODAL"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        wm = context.window_manager
        wm.progress_update(job.done)
        context.workspace.status_text_set("drape: baking %s, frame %d of %d (Esc cancels)"
                                          % (job.obj_name, job.done, job.frames))
        for area in context.screen.areas:
            if area.type == "PROPERTIES":
                area.tag_redraw()
        if job.is_alive():
            return {"RUNNING_MODAL"}
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        context.workspace.status_text_set(None)
        return self._finish(context, job)


class DRAPE_OT_bake_cancel(bpy.types.Operator):
    """Cancel the drape bake of the active object"""

    bl_idname = "drape.bake_cancel"
    bl_label = "Cancel bake"

    @classmethod
    def poll(cls, context):
        return context.object is not None and running(context.object) is not None

    def execute(self, context):
        running(context.object).cancel()
        return {"FINISHED"}


def register():
    bpy.utils.register_class(DRAPE_OT_bake)
    bpy.utils.register_class(DRAPE_OT_bake_cancel)


def unregister():
    for job in list(_JOBS.values()):
        job.cancel()
    bpy.utils.unregister_class(DRAPE_OT_bake_cancel)
    bpy.utils.unregister_class(DRAPE_OT_bake)

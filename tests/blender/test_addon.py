"""The drape Cloth add-on in a real Blender against a real draped.

    blender -b --factory-startup --python tests/blender/test_addon.py

(tests/blender/run.sh sets the environment: DRAPE_BUILD, DRAPE_LIBRARY,
BLENDER_USER_SCRIPTS in a temporary folder.) The add-on is installed from
the zip make builds and enabled as a user would; a 16 x 16 plane pinned
along one edge falls on a UV sphere that carries Blender's Collision
modifier, baked against a private draped; the Mesh Cache modifier's result
(the evaluated mesh at every frame) is compared with `drape run` of the same
scene. Prints PASS/FAIL per case and "N passed, M failed".
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

import addon_utils
import bpy
import numpy as np

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("DRAPE_BUILD", os.path.join(TOP, "build"))
os.environ.setdefault("DRAPE_LIBRARY", os.path.join(BUILD, "libdrape.so"))
sys.path.insert(0, os.path.join(TOP, "client", "python"))
import drape  # noqa: E402

DRAPED = os.environ.get("DRAPED", os.path.join(BUILD, "draped"))
DRAPE = os.environ.get("DRAPE", os.path.join(BUILD, "drape"))
DEADLINE_S = 120.0
FRAMES = 24
RADIUS = 0.4
results = []
tmp = tempfile.mkdtemp(prefix="drape-blender-")


def case(fn):
    try:
        fn()
        results.append(True)
        print("PASS blender %s" % fn.__name__, flush=True)
    except Exception:
        traceback.print_exc()
        results.append(False)
        print("FAIL blender %s" % fn.__name__, flush=True)
    return fn


def start_draped():
    url = "ipc://" + os.path.join(tmp, "draped.sock")
    log = open(os.path.join(tmp, "draped.log"), "wb")
    p = subprocess.Popen([DRAPED, "--listen", url, "--state-dir", os.path.join(tmp, "state"),
                          "--threads", "2", "--pool-threads", "1"], stdout=log, stderr=subprocess.STDOUT)
    end = time.monotonic() + DEADLINE_S
    while True:
        if p.poll() is not None:
            raise RuntimeError("draped exited %d" % p.returncode)
        try:
            drape.connect(url, timeout=5).close()
            return p, url
        except drape.Unavailable:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)


def verts(me):
    co = np.empty(len(me.vertices) * 3, dtype=np.float32)
    me.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def evaluated(obj, frame):
    bpy.context.scene.frame_set(frame)
    dg = bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(dg)
    me = ev.to_mesh()
    try:
        return verts(me)
    finally:
        ev.to_mesh_clear()


def to_drape(p):
    return np.stack([p[:, 0], p[:, 2], -p[:, 1]], axis=1)


def write_obj(path, v, t):
    # repr of a float32's double value is the shortest text that reads back
    # to the same double, so drape's reader gets the same float32.
    with open(path, "w") as f:
        for x in v:
            f.write("v %r %r %r\n" % (float(x[0]), float(x[1]), float(x[2])))
        for a in t:
            f.write("f %d %d %d\n" % (a[0] + 1, a[1] + 1, a[2] + 1))


def read_obj(path):
    v = []
    with open(path) as f:
        for line in f:
            if line.startswith("v "):
                v.append([np.float32(float(s)) for s in line.split()[1:4]])
    return np.array(v, dtype=np.float32)


daemon, URL = start_draped()
state = {}
try:
    @case
    def addon_installs_from_the_zip_and_enables():
        z = os.path.join(BUILD, "drape_cloth.zip")
        assert os.path.isfile(z), z
        bpy.ops.preferences.addon_install(filepath=z, overwrite=True)
        addon_utils.enable("drape_cloth", default_set=True, handle_error=None)
        assert "drape_cloth" in bpy.context.preferences.addons
        assert hasattr(bpy.types.Object, "drape_cloth") and hasattr(bpy.ops.drape, "bake")
        bpy.context.preferences.addons["drape_cloth"].preferences.server_url = URL

    @case
    def scene_with_a_pinned_plane_and_a_sphere_collider():
        bpy.ops.object.select_all(action="SELECT")
        bpy.ops.object.delete()
        scene = bpy.context.scene
        scene.render.fps, scene.render.fps_base = 24, 1.0
        bpy.ops.mesh.primitive_grid_add(x_subdivisions=16, y_subdivisions=16, size=1.2, location=(0, 0, 0))
        plane = bpy.context.object
        plane.name = "Cloth"
        # Lift the mesh, not the object: an identity object matrix keeps
        # the round trip free of any rounding.
        for v in plane.data.vertices:
            v.co.z += 0.8
        ymax = max(v.co.y for v in plane.data.vertices)
        pins = [v.index for v in plane.data.vertices if v.co.y == ymax]
        plane.vertex_groups.new(name="pin").add(pins, 1.0, "REPLACE")
        bpy.ops.mesh.primitive_uv_sphere_add(radius=RADIUS, segments=24, ring_count=12, location=(0, 0, 0))
        sphere = bpy.context.object
        sphere.name = "Ball"
        sphere.modifiers.new("Collision", "COLLISION")
        s = plane.drape_cloth
        s.substeps, s.iterations, s.frames, s.start_frame = 4, 10, FRAMES, 1
        s.thickness = 0.005
        s.pin_group = "pin"
        s.cache_path = os.path.join(tmp, "cache", "{object}.pc2")
        bpy.context.view_layer.objects.active = plane
        state.update(plane=plane, sphere=sphere, pins=pins, rest=verts(plane.data).copy())
        assert len(plane.data.vertices) == 17 * 17 and len(pins) == 17

    @case
    def missing_pin_group_is_reported_and_changes_nothing():
        plane = state["plane"]
        plane.drape_cloth.pin_group = "no-such-group"
        try:
            with bpy.context.temp_override(object=plane, active_object=plane):
                bpy.ops.drape.bake()
            raise AssertionError("the bake did not fail")
        except RuntimeError as e:
            assert "pin group 'no-such-group' is not a vertex group of Cloth" in str(e), e
        finally:
            plane.drape_cloth.pin_group = "pin"
        assert len(plane.modifiers) == 0

    @case
    def unreachable_server_is_reported():
        plane = state["plane"]
        p = bpy.context.preferences.addons["drape_cloth"].preferences
        p.server_url = "ipc://" + os.path.join(tmp, "nobody.sock")
        try:
            with bpy.context.temp_override(object=plane, active_object=plane):
                bpy.ops.drape.bake()
            raise AssertionError("the bake did not fail")
        except RuntimeError as e:
            assert "EUNAVAILABLE" in str(e), e
        finally:
            p.server_url = URL
        assert len(plane.modifiers) == 0

    @case
    def bake_applies_a_mesh_cache():
        plane = state["plane"]
        t0 = time.monotonic()
        with bpy.context.temp_override(object=plane, active_object=plane):
            assert bpy.ops.drape.bake() == {"FINISHED"}
        state["bake_s"] = time.monotonic() - t0
        print("blender bake: %d frames of %d vertices against a %d-vertex sphere in %.2f s"
              % (FRAMES, len(plane.data.vertices), len(state["sphere"].data.vertices), state["bake_s"]))
        mod = plane.modifiers[0]
        assert mod.type == "MESH_CACHE" and mod.cache_format == "PC2", mod
        assert os.path.isfile(mod.filepath)
        with open(mod.filepath, "rb") as f:
            head = f.read(32)
        assert head[:12] == b"POINTCACHE2\0"
        assert int.from_bytes(head[16:20], "little") == 17 * 17 and int.from_bytes(head[28:32], "little") == FRAMES + 1
        # The base mesh is untouched: the cache only plays on top of it.
        assert np.array_equal(verts(plane.data), state["rest"])

    @case
    def playback_holds_pins_and_stays_out_of_the_sphere():
        plane, pins = state["plane"], state["pins"]
        rest = state["rest"]
        frames = [evaluated(plane, 1 + k) for k in range(FRAMES + 1)]
        assert np.array_equal(frames[0], rest)
        for k, p in enumerate(frames):
            assert np.array_equal(p[pins], rest[pins]), k
            assert np.linalg.norm(p, axis=1).min() > RADIUS - 0.02, (k, np.linalg.norm(p, axis=1).min())
        assert frames[-1][:, 2].min() < 0.8 - 0.2  # the free edge fell
        state["played"] = frames

    @case
    def playback_equals_drape_run_bit_for_bit():
        plane, sphere = state["plane"], state["sphere"]
        scene_dir = os.path.join(tmp, "scene")
        os.makedirs(scene_dir)
        me = plane.data
        me.calc_loop_triangles()
        tri = np.array([t.vertices[:] for t in me.loop_triangles])
        write_obj(os.path.join(scene_dir, "cloth.obj"), to_drape(state["rest"]), tri)
        sm = sphere.data
        sm.calc_loop_triangles()
        write_obj(os.path.join(scene_dir, "ball.obj"), to_drape(verts(sm)),
                  np.array([t.vertices[:] for t in sm.loop_triangles]))
        import json
        scene = {"fps": 24, "substeps": 4, "iterations": 10, "frames": FRAMES,
                 "cloth": {"mesh": "cloth.obj", "thickness": 0.005, "pins": {"indices": state["pins"]}},
                 "colliders": [{"mesh": "ball.obj"}]}
        with open(os.path.join(scene_dir, "scene.json"), "w") as f:
            json.dump(scene, f)
        out = os.path.join(tmp, "run")
        r = subprocess.run([DRAPE, "run", os.path.join(scene_dir, "scene.json"), "--server", URL,
                            "--out", out, "--quiet"], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        played = state["played"]
        for k in range(1, FRAMES + 1):
            ref = read_obj(os.path.join(out, "frame_%04d.obj" % k))
            got = to_drape(played[k])
            assert ref.shape == got.shape, (k, ref.shape, got.shape)
            diff = np.abs(ref - got).max()
            assert np.array_equal(ref, got), "frame %d differs by up to %g m" % (k, diff)

    @case
    def drape_run_pc2_and_mdd_play_through_mesh_cache():
        # drape run's own cache writers (--format pc2, mdd: drape's Y-up
        # positions, frame k of the run as sample k - 1) read by Blender's
        # Mesh Cache modifier with its axis conversion, against the same
        # run's OBJ frames.
        plane = state["plane"]
        scene_json = os.path.join(tmp, "scene", "scene.json")
        assert os.path.isfile(scene_json)
        for fmt in ("pc2", "mdd"):
            out = os.path.join(tmp, "run-" + fmt)
            r = subprocess.run([DRAPE, "run", scene_json, "--server", URL, "--out", out, "--format", fmt, "--quiet"],
                               capture_output=True, text=True, timeout=600)
            assert r.returncode == 0, r.stderr
            copy = plane.copy()
            copy.data = plane.data.copy()
            copy.name = "Cloth-" + fmt
            bpy.context.scene.collection.objects.link(copy)
            copy.modifiers.clear()
            mod = copy.modifiers.new("cache", "MESH_CACHE")
            mod.cache_format = fmt.upper()
            mod.filepath = os.path.join(out, "cloth." + fmt)
            mod.time_mode = "FRAME"
            mod.play_mode = "SCENE"
            mod.frame_start = 2.0
            mod.interpolation = "NONE"
            # What turns drape's Y-up into Blender's Z-up in this modifier
            # (its axis fields name the conversion the other way round
            # from the importers': checked here, not assumed).
            mod.forward_axis = "POS_Z"
            mod.up_axis = "NEG_Y"
            for k in (1, 2, FRAMES // 2, FRAMES):
                ref = read_obj(os.path.join(tmp, "run", "frame_%04d.obj" % k))
                got = to_drape(evaluated(copy, 1 + k))
                assert np.array_equal(ref, got), "%s frame %d differs by up to %g m" % (fmt, k, np.abs(ref - got).max())
            bpy.data.objects.remove(copy)

    def bake_and_compare(tag, colliders_json, files):
        """Bakes the plane, then runs drape run on the same cloth with the
        given colliders (files: name -> bytes written beside the scene) and
        compares every played frame with drape run's, bit for bit."""
        import json
        plane = state["plane"]
        with bpy.context.temp_override(object=plane, active_object=plane):
            assert bpy.ops.drape.bake() == {"FINISHED"}
        played = [evaluated(plane, 1 + k) for k in range(FRAMES + 1)]
        d = os.path.join(tmp, tag)
        os.makedirs(d)
        me = plane.data
        me.calc_loop_triangles()
        write_obj(os.path.join(d, "cloth.obj"), to_drape(state["rest"]), [t.vertices[:] for t in me.loop_triangles])
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        scene = {"fps": 24, "substeps": 4, "iterations": 10, "frames": FRAMES,
                 "cloth": {"mesh": "cloth.obj", "thickness": 0.005, "pins": {"indices": state["pins"]}},
                 "colliders": colliders_json}
        with open(os.path.join(d, "scene.json"), "w") as f:
            json.dump(scene, f)
        out = os.path.join(d, "run")
        r = subprocess.run([DRAPE, "run", os.path.join(d, "scene.json"), "--server", URL, "--out", out, "--quiet"],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        for k in range(1, FRAMES + 1):
            ref = read_obj(os.path.join(out, "frame_%04d.obj" % k))
            got = to_drape(played[k])
            assert np.array_equal(ref, got), "frame %d differs by up to %g m" % (k, np.abs(ref - got).max())
        return played

    def obj_bytes(v, t):
        path = os.path.join(tmp, "obj.tmp")
        write_obj(path, v, t)
        with open(path, "rb") as f:
            return f.read()

    @case
    def moving_sphere_becomes_a_rigid_collider_equal_to_drape_run():
        from drape_cloth import gather
        plane, sphere = state["plane"], state["sphere"]
        sphere.location = (0, 0, -0.6)
        sphere.keyframe_insert("location", frame=1)
        sphere.location = (0.1, 0, -0.25)
        sphere.keyframe_insert("location", frame=1 + FRAMES)
        cols = gather.colliders(bpy.context, plane, 1, FRAMES)
        assert [(c[0], c[3][0]) for c in cols] == [("Ball", "rigid")], [(c[0], c[3][0]) for c in cols]
        # One key per frame: the ball's location at scene frame 1 + k in
        # drape's axes, no rotation; the mesh is the ball's own.
        keys = []
        for k in range(FRAMES + 1):
            bpy.context.scene.frame_set(1 + k)
            x, y, z = (float(np.float32(c)) for c in sphere.matrix_world.translation)
            keys.append({"frame": k, "translate": [x, z, -y], "rotate": [0, 0, 0]})
        got = [{"frame": f, "translate": list(t), "rotate": list(r)} for f, t, r in cols[0][3][1]]
        assert got == keys, (got[:2], keys[:2])
        sm = sphere.data
        sm.calc_loop_triangles()
        played = bake_and_compare("rigid", [{"mesh": "ball.obj", "keyframes": keys}],
                                  {"ball.obj": obj_bytes(to_drape(verts(sm)), [t.vertices[:] for t in sm.loop_triangles])})
        for k, p in enumerate(played):
            centre = np.array([0.1 * k / FRAMES, 0, -0.6 + 0.35 * k / FRAMES], dtype=np.float32)
            assert np.linalg.norm(p - centre, axis=1).min() > RADIUS - 0.02, k
        sphere.animation_data_clear()
        sphere.location = (0, 0, 0)

    @case
    def turning_scaled_ball_keys_reproduce_blenders_matrix():
        # drape moves a rigid collider by world = T + Rz Ry Rx local
        # (server/sim/collider.c); the keys the add-on derives must put every
        # vertex where Blender's own object matrix does.
        from drape_cloth import gather
        plane, sphere = state["plane"], state["sphere"]
        sphere.scale = (1.0, 1.5, 0.8)
        sphere.rotation_euler = (0.3, -0.9, 2.0)
        sphere.location = (0.2, -0.1, -0.7)
        sphere.keyframe_insert("rotation_euler", frame=1)
        sphere.keyframe_insert("location", frame=1)
        sphere.rotation_euler = (2.5, 0.4, -3.0)
        sphere.location = (0.0, 0.1, -0.5)
        sphere.keyframe_insert("rotation_euler", frame=1 + FRAMES)
        sphere.keyframe_insert("location", frame=1 + FRAMES)
        try:
            cols = gather.colliders(bpy.context, plane, 1, FRAMES)
            name, v, t, (kind, keys) = cols[0]
            assert kind == "rigid" and len(keys) == FRAMES + 1
            for k in range(FRAMES + 1):
                frame, tr, rot = keys[k]
                assert frame == k
                ax, ay, az = np.radians(rot)
                rx = np.array([[1, 0, 0], [0, np.cos(ax), -np.sin(ax)], [0, np.sin(ax), np.cos(ax)]])
                ry = np.array([[np.cos(ay), 0, np.sin(ay)], [0, 1, 0], [-np.sin(ay), 0, np.cos(ay)]])
                rz = np.array([[np.cos(az), -np.sin(az), 0], [np.sin(az), np.cos(az), 0], [0, 0, 1]])
                pred = v.astype(np.float64) @ (rz @ ry @ rx).T + np.array(tr)
                bpy.context.scene.frame_set(1 + k)
                world = np.array([(sphere.matrix_world @ p.co)[:] for p in sphere.data.vertices])
                np.testing.assert_allclose(pred, to_drape(world), rtol=0, atol=2e-5, err_msg="frame %d" % k)
        finally:
            sphere.animation_data_clear()
            sphere.scale = (1, 1, 1)
            sphere.rotation_euler = (0, 0, 0)
            sphere.location = (0, 0, 0)

    @case
    def swelling_sphere_becomes_a_deforming_collider_equal_to_drape_run():
        from drape_cloth import gather
        import struct
        plane, sphere = state["plane"], state["sphere"]
        sphere.shape_key_add(name="Basis")
        swell = sphere.shape_key_add(name="swell")
        for p in swell.data:
            p.co = p.co * 1.25
        swell.value = 0.0
        swell.keyframe_insert("value", frame=1)
        swell.value = 1.0
        swell.keyframe_insert("value", frame=1 + FRAMES)
        cols = gather.colliders(bpy.context, plane, 1, FRAMES)
        assert [(c[0], c[3][0]) for c in cols] == [("Ball", "deforming")]
        poses = cols[0][3][1]
        assert poses.shape == (FRAMES + 1, len(sphere.data.vertices), 3)
        # Pose k is the evaluated ball at scene frame 1 + k in drape's axes.
        for k in (0, 7, FRAMES):
            np.testing.assert_array_equal(poses[k], to_drape(evaluated(sphere, 1 + k)))
        assert np.abs(np.linalg.norm(poses[FRAMES], axis=1) - 1.25 * RADIUS).max() < 1e-5
        sm = sphere.data
        sm.calc_loop_triangles()
        pc2 = (b"POINTCACHE2\0" + struct.pack("<iiffi", 1, poses.shape[1], 0.0, 1.0, poses.shape[0])
               + np.ascontiguousarray(poses, dtype="<f4").tobytes())
        played = bake_and_compare("deforming", [{"mesh": "ball.obj", "animation": "ball.pc2"}],
                                  {"ball.obj": obj_bytes(poses[0], [t.vertices[:] for t in sm.loop_triangles]),
                                   "ball.pc2": pc2})
        for k, p in enumerate(played):
            r = RADIUS * (1 + 0.25 * k / FRAMES)
            assert np.linalg.norm(p, axis=1).min() > r - 0.02, k

    @case
    def panel_presets_are_the_library_presets():
        from drape_cloth import props
        assert set(props.PRESETS) <= set(drape.material_presets()), drape.material_presets()

    @case
    def cancel_stops_the_job_without_a_cache():
        from drape_cloth import bake, gather
        plane = state["plane"]
        pos, tri, pins, m = gather.cloth(plane, "pin")
        job = bake.BakeJob(drape, {"url": URL}, "Cloth", pos, tri, pins, {"fps": 24.0}, [], 100000,
                           os.path.join(tmp, "cancelled.pc2"), m)
        job.start()
        end = time.monotonic() + DEADLINE_S
        while job.done < 1 and job.is_alive() and time.monotonic() < end:
            time.sleep(0.02)
        assert job.done >= 1, job.error
        job.cancel()
        job.join(DEADLINE_S)
        assert not job.is_alive()
        assert job.state == "canceled", (job.state, job.error)
        assert not os.path.exists(os.path.join(tmp, "cancelled.pc2"))
        with drape.connect(URL) as c:
            # The job deleted its session on the way out.
            assert all(e.name != "blender:Cloth" for e in c.sessions())

finally:
    daemon.send_signal(signal.SIGTERM)
    try:
        daemon.wait(60)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()
    shutil.rmtree(tmp, ignore_errors=True)

print("%d passed, %d failed" % (sum(results), len(results) - sum(results)), flush=True)
sys.stdout.flush()
os._exit(0 if all(results) else 1)

"""The drape Python package against a real draped (see conftest.py)."""

import ctypes
import os
import re
import time

import numpy as np
import pytest

import drape
from drape import _lib
from conftest import DEADLINE_S, TOP, Daemon, grid

# No air, no damping: the sheet is a free body under gravity alone.
FREE = {"gravity": (0, -9.81, 0), "damping": 1.0, "drag": 0.0, "lift": 0.0, "air_density": 0.0,
        "fps": 24.0, "substeps": 4, "iterations": 10}


def test_version_is_the_headers():
    h = open(os.path.join(TOP, "include", "drape", "drape.h")).read()
    parts = [re.search(r"#define DRAPE_VERSION_%s (\d+)" % k, h).group(1) for k in ("MAJOR", "MINOR", "PATCH")]
    assert drape.version() == ".".join(parts)


def test_every_struct_matches_the_library():
    lib = drape._LIB
    for cls in _lib.STRUCTS:
        assert lib.drape_abi_struct_size(cls.__name__.encode()) == ctypes.sizeof(cls), cls.__name__


def test_abi_mismatch_is_refused_by_name():
    class drape_status(ctypes.Structure):  # one field short of the real one
        _fields_ = [("state", ctypes.c_int)]

    class drape_no_such_struct(ctypes.Structure):
        _fields_ = [("x", ctypes.c_int)]

    with pytest.raises(drape.AbiMismatch) as e:
        _lib.check_abi(drape._LIB, [_lib.drape_session, drape_status, drape_no_such_struct])
    msg = e.value.message
    assert "drape_status: package 4 bytes, library %d bytes" % ctypes.sizeof(_lib.drape_status) in msg
    assert "drape_no_such_struct: package 4 bytes, library does not know it" in msg
    assert "drape_session" not in msg.split(":", 1)[1].replace("drape_session_", "")
    assert isinstance(e.value, ImportError)


def test_free_fall_matches_symplectic_euler(client):
    pos, tri = grid(5, 5, y=2.0)
    s = client.create(pos, tri, params=FREE)
    assert s.create_info["vertices"] == 25
    frames = 10
    assert s.run(frames) == frames
    got = list(s.frames(timeout=DEADLINE_S))
    assert [f.index for f in got] == list(range(1, frames + 1))
    # After n substeps of dt the method's velocity is n g dt and the drop
    # g dt^2 n (n + 1) / 2 (semi-implicit Euler; the continuous g t^2 / 2
    # differs by g dt^2 n / 2, 2.5 % at frame 10, far above the tolerance).
    dt = 1.0 / (24 * 4)
    for f in got:
        assert f.positions.dtype == np.float32 and f.positions.shape == (25, 3)
        n = f.index * 4
        drop = 9.81 * dt * dt * n * (n + 1) / 2
        np.testing.assert_allclose(f.positions[:, 1], 2.0 - drop, rtol=0, atol=2e-5 * (1 + drop))
        np.testing.assert_array_equal(f.positions[:, [0, 2]], pos[:, [0, 2]])
    st = s.status()
    assert st.state == "done" and st.frames_done == frames and st.vertices == 25
    s.delete()
    with pytest.raises(drape.NotFound):
        s.status()


def test_pins_hold_exactly_and_the_rest_falls(client):
    pos, tri = grid(6, 6, y=1.0)
    pins = [0, 5]
    s = client.create(pos, tri, pins=pins, params={"fps": 24.0})
    s.run(5)
    last = None
    for f in s.frames(timeout=DEADLINE_S):
        np.testing.assert_array_equal(f.positions[pins], pos[pins])
        last = f
    assert last.index == 5
    assert last.positions[35, 1] < 1.0 - 0.01
    s.delete()


def test_sheet_rests_on_a_sphere_without_entering_it(client):
    pos, tri = grid(21, 21, size=1.2, y=0.8)
    r = 0.4
    s = client.create(pos, tri, params={"fps": 24.0, "thickness": 0.005},
                      colliders=[drape.sphere((0, 0, 0), r, friction=0.8)])
    s.run(36)
    frames = list(s.frames(timeout=DEADLINE_S))
    assert len(frames) == 36
    for f in frames:
        d = np.linalg.norm(f.positions, axis=1)
        # The collider keeps the cloth outside radius + thickness; one
        # substep's penetration is allowed for, no more.
        assert d.min() > r - 0.01, (f.index, d.min())
    centre = frames[-1].positions[220]
    assert r <= centre[1] <= r + 0.03, centre
    s.delete()


def test_cancel_ends_an_endless_run(client):
    pos, tri = grid(8, 8)
    s = client.create(pos, tri, pins=[0])
    assert s.run(0) == 0
    first = s.next_frame(timeout=DEADLINE_S)
    assert first.index == 1
    assert s.cancel() in ("canceled", "running")
    end = time.monotonic() + DEADLINE_S
    with pytest.raises(drape.Canceled) as e:
        while time.monotonic() < end:
            s.next_frame(timeout=DEADLINE_S)
    assert e.value.name == "ECANCELED" and e.value.code < 0
    assert s.status().state == "canceled"
    s.delete()


def test_timeout_on_a_session_that_is_not_running_yet(client):
    pos, tri = grid(3, 3)
    s = client.create(pos, tri)
    # Idle with nothing solved: the end of a (non-)run, not a wait.
    assert s.next_frame(timeout=0.1) is None
    s.delete()


def test_bad_input_names_the_field_and_changes_nothing(client):
    before = {e.id for e in client.sessions()}
    pos, tri = grid(3, 3)
    bad = tri.copy()
    bad[2, 1] = 9
    with pytest.raises(drape.InvalidArgument) as e:
        client.create(pos, bad)
    assert e.value.name in ("EINVAL", "ERANGE") and "triangles[2][1]" in e.value.message
    with pytest.raises(drape.InvalidArgument) as e:
        client.create(pos, tri, params={"strech": 1.0})
    assert "params.strech: unknown parameter" in e.value.message
    with pytest.raises(drape.InvalidArgument) as e:
        client.create(pos[:, :2], tri)
    assert "positions: expected an (N, 3) array" in e.value.message
    with pytest.raises(drape.InvalidArgument) as e:
        client.create(pos, tri, pins=[-1])
    assert "pins: negative index -1" in e.value.message
    with pytest.raises(drape.InvalidArgument) as e:
        client.create(pos, tri, params={"substeps": 1000})
    assert "substeps" in e.value.message
    with pytest.raises(drape.InvalidArgument) as e:
        client.create(pos, tri, colliders=[drape.sphere((0, 0, 0), -1.0)])
    assert e.value.message.startswith("colliders[0]: ") and "radius" in e.value.message
    with pytest.raises(drape.InvalidArgument) as e:
        drape.sphere((0, 0), 1.0)
    assert "sphere.center" in e.value.message
    # The session of the refused collider was deleted again: the client
    # still works and the server holds no session of ours.
    assert {e.id for e in client.sessions()} == before
    s = client.create(pos, tri, name="survivor")
    assert s.status().state == "idle"
    assert [(e.name, e.state, e.vertices) for e in client.sessions() if e.id not in before] == [("survivor", "idle", 9)]
    s.delete()


def test_material_preset_sets_xpbd(client):
    names = drape.material_presets()
    assert "cotton" in names and "denim" in names
    pos, tri = grid(4, 4)
    s = client.create(pos, tri, pins=[0, 3], params={"material": "denim"})
    s.run(2)
    assert [f.index for f in s.frames(timeout=DEADLINE_S)] == [1, 2]
    s.delete()
    with pytest.raises(drape.InvalidArgument) as e:
        client.create(pos, tri, params={"material": "chainmail"})
    assert "params.material" in e.value.message and "denim" in e.value.message


def test_unreachable_server_is_unavailable(tmp_path):
    with pytest.raises(drape.Unavailable) as e:
        drape.connect("ipc://" + str(tmp_path / "nobody.sock"), timeout=5)
    assert e.value.name == "EUNAVAILABLE" and e.value.code == -14
    assert isinstance(e.value, ConnectionError)


def test_auth_token_from_a_file(tmp_path):
    tok = tmp_path / "token"
    tok.write_text("s3cret-token-for-the-test\n")
    d = Daemon("--auth-token-file", str(tok))
    try:
        pos, tri = grid(3, 3)
        with drape.connect(d.url, timeout=30) as c:
            assert c.server_info()["auth_required"] is True
            with pytest.raises(drape.PermissionDenied):
                c.create(pos, tri)
        with drape.connect(d.url, token="wrong", timeout=30) as c:
            with pytest.raises(drape.PermissionDenied):
                c.create(pos, tri)
        with drape.connect(d.url, token_file=str(tok), timeout=30) as c:
            s = c.create(pos, tri)
            s.run(1)
            assert [f.index for f in s.frames(timeout=DEADLINE_S)] == [1]
        with pytest.raises(drape.InvalidArgument) as e:
            drape.connect(d.url, token_file=str(tmp_path / "missing"))
        assert "token_file: cannot read" in e.value.message
    finally:
        d.stop()


def test_reattach_with_id_and_token(client, daemon):
    pos, tri = grid(4, 4)
    s = client.create(pos, tri, pins=[0])
    s.run(3)
    with drape.connect(daemon.url, timeout=30) as other:
        again = other.session(s.id, s.token)
        assert [f.index for f in again.frames(timeout=DEADLINE_S)] == [1, 2, 3]
        with pytest.raises(drape.PermissionDenied):
            other.session(s.id, "1" * 32).run(1)
        with pytest.raises(drape.InvalidArgument):
            other.session(s.id, "xyz")
    s.delete()


def test_load_scene_runs_like_drape_run(client, daemon, tmp_path):
    import subprocess
    from conftest import DRAPE
    scene = os.path.join(TOP, "tests", "data", "scenes", "grid_flat.json")
    s = drape.load_scene(scene, client, name="from-python")
    info = s.scene
    assert info["vertex_count"] == 21 * 11 and info["frames"] == 24 and info["collider_count"] == 1
    assert info["pin_count"] == 4 and info["start_frame"] == 1 and info["fps"] == 24.0
    assert s.status().name == "from-python"
    s.run(info["frames"])
    got = [f.positions for f in s.frames(timeout=DEADLINE_S)]
    assert len(got) == 24
    s.delete()
    out = tmp_path / "run"
    r = subprocess.run([DRAPE, "run", scene, "--server", daemon.url, "--out", str(out), "--quiet"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    for k in (1, 12, 24):
        with open(out / ("frame_%04d.obj" % k)) as f:
            ref = np.array([[np.float32(float(x)) for x in line.split()[1:4]] for line in f if line.startswith("v ")])
        np.testing.assert_array_equal(got[k - 1], ref)


def test_load_scene_refuses_a_bad_scene_and_leaves_nothing(client, tmp_path):
    before = {e.id for e in client.sessions()}
    bad = tmp_path / "bad.json"
    bad.write_text('{"cloth": {"mesh": {"grid": {"size": [1, 1], "resolution": [3, 3]}}, "strech": 1}}')
    with pytest.raises(drape.Error) as e:
        client.load_scene(str(bad))
    assert "bad.json" in e.value.message and "strech" in e.value.message
    with pytest.raises(drape.Error) as e:
        client.load_scene(str(tmp_path / "missing.json"))
    assert "missing.json" in e.value.message
    assert {e.id for e in client.sessions()} == before


def _run_all(s, frames):
    s.run(frames)
    out = [f.positions for f in s.frames(timeout=DEADLINE_S)]
    s.delete()
    return out


def test_keyframed_and_deforming_colliders_equal_the_scene_loaders(client, tmp_path):
    # The same cloth and moving colliders through the package's structs and
    # through the scene loader: the frames must agree bit for bit, which they
    # do only if every keyframe and pose field lands where libdrape reads it.
    import json
    import struct
    pos, tri = grid(12, 12, size=1.0, y=0.6)
    with open(tmp_path / "cloth.obj", "w") as f:
        f.writelines("v %r %r %r\n" % tuple(float(c) for c in p) for p in pos)
        f.writelines("f %d %d %d\n" % tuple(int(i) + 1 for i in t) for t in tri)
    # A small box under the sheet as a mesh, rising and turning over 6 frames.
    bv = np.array([[x, y, z] for x in (-.2, .2) for y in (0, .3) for z in (-.2, .2)], dtype=np.float32)
    bt = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                   [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]], dtype=np.uint32)
    with open(tmp_path / "box.obj", "w") as f:
        f.writelines("v %r %r %r\n" % tuple(float(c) for c in p) for p in bv)
        f.writelines("f %d %d %d\n" % tuple(int(i) + 1 for i in t) for t in bt)
    poses = np.stack([bv + np.float32(0.05 * k) * np.array([0, 1, 0], np.float32) for k in range(7)])
    with open(tmp_path / "box.pc2", "wb") as f:
        f.write(b"POINTCACHE2\0" + struct.pack("<iiffi", 1, 8, 0.0, 1.0, 7))
        f.write(poses.astype("<f4").tobytes())
    keys = [(1.0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)), (6.0, (0.1, 0.2, 0.0), (0.0, 45.0, 10.0))]
    scene = {"fps": 24, "frames": 6, "cloth": {"mesh": "cloth.obj", "pins": {"indices": [0, 11]}},
             "colliders": [{"sphere": {"center": [0, 0, 0], "radius": 0.3},
                            "keyframes": [{"frame": k[0], "translate": list(k[1]), "rotate": list(k[2])} for k in keys]},
                           {"mesh": "box.obj", "animation": "box.pc2", "translate": [0.3, 0, 0]}]}
    (tmp_path / "scene.json").write_text(json.dumps(scene))
    ref = _run_all(client.load_scene(str(tmp_path / "scene.json")), 6)
    moved = poses + np.array([0.3, 0, 0], np.float32)
    got = _run_all(client.create(pos, tri, pins=[0, 11], params={"fps": 24.0}, colliders=[
        drape.sphere((0, 0, 0), 0.3, keyframes=keys),
        drape.mesh(moved[0], bt, frames=moved)]), 6)
    assert len(ref) == len(got) == 6
    for k in range(6):
        np.testing.assert_array_equal(got[k], ref[k], err_msg="frame %d" % (k + 1))
    # And the colliders did something: without them the sheet falls freely.
    free = _run_all(client.create(pos, tri, pins=[0, 11], params={"fps": 24.0}), 6)
    assert np.abs(free[-1] - got[-1]).max() > 1e-3


def _free_port():
    import socket
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def _openssl(*args):
    import subprocess
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True)


def test_tls_server_and_client_certificates(tmp_path):
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"]
    t = str(tmp_path)
    _openssl("req", "-x509", *ec, "-keyout", t + "/server.key", "-out", t + "/server.crt", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1")
    _openssl("req", "-x509", *ec, "-keyout", t + "/other.key", "-out", t + "/other.crt", "-subj", "/CN=localhost")
    _openssl("req", "-x509", *ec, "-keyout", t + "/ca.key", "-out", t + "/ca.crt", "-subj", "/CN=drape-test-ca",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    _openssl("req", "-new", *ec, "-keyout", t + "/client.key", "-out", t + "/client.csr", "-subj", "/CN=artist")
    _openssl("x509", "-req", "-in", t + "/client.csr", "-CA", t + "/ca.crt", "-CAkey", t + "/ca.key",
             "-CAcreateserial", "-days", "2", "-out", t + "/client.crt")
    good = {"tls_ca": t + "/server.crt", "tls_server_name": "localhost",
            "tls_cert": t + "/client.crt", "tls_key": t + "/client.key"}
    url = "tls+tcp://127.0.0.1:%d" % _free_port()
    d = Daemon("--tls-cert", t + "/server.crt", "--tls-key", t + "/server.key", "--tls-ca", t + "/ca.crt",
               url=url, client_args=good)
    try:
        pos, tri = grid(3, 3)
        with drape.connect(url, timeout=30, **good) as c:
            s = c.create(pos, tri)
            s.run(1)
            assert [f.index for f in s.frames(timeout=DEADLINE_S)] == [1]
            s.delete()
        # A server certificate the given CA did not sign, and a missing
        # client certificate, are both refused at connect.
        with pytest.raises(drape.Error) as e:
            drape.connect(url, timeout=10, **dict(good, tls_ca=t + "/other.crt")).close()
        assert e.value.name == "EUNAVAILABLE" and "TLS handshake failed" in e.value.message
        with pytest.raises(drape.Error) as e:
            drape.connect(url, timeout=10, tls_ca=t + "/server.crt", tls_server_name="localhost").close()
        assert e.value.name == "EUNAVAILABLE" and "client certificate" in e.value.message
    finally:
        d.stop()

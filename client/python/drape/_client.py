"""Client, Session and Frame: the Python face of drape_client and drape_session.

A Client is one connection (one drape_client); like the C library it may be
used by one thread at a time, so a program that talks to the server from
several threads opens one Client per thread. ctypes releases the GIL during
every library call, so a bake on a worker thread does not freeze the UI
thread that started it.
"""

import ctypes
import os

import numpy as np

from . import _colliders, _lib, _params
from ._errors import Error, InvalidArgument, error_class

WAIT_FOREVER = -1
# drape_next_frame's code for "every frame delivered, nothing more coming"
# (DRAPE_EDONE). The package needs a libdrape that has drape_abi_struct_size,
# and every such library ends a run with EDONE, so ECLOSED stays an error.
_END_CODES = (-23,)


def raise_for(lib, rc, err):
    """Raises the exception for a failed call (rc < 0) with err's message."""
    name = lib.drape_err_name(rc).decode()
    msg = err.message.decode(errors="replace") if err.message else lib.drape_strerror(rc).decode()
    raise error_class(name)(rc, name, msg)


def _call(lib, fn, *args):
    err = _lib.drape_error()
    rc = fn(*args, ctypes.byref(err))
    if rc != 0:
        raise_for(lib, rc, err)


class Stats:
    """Per-frame solver figures (drape_sim_stats) as attributes."""

    __slots__ = [n for n, _ in _lib.drape_sim_stats._fields_]

    def __init__(self, s):
        for n in self.__slots__:
            setattr(self, n, getattr(s, n))

    def __repr__(self):
        return "drape.Stats(frame=%d, solve_ms=%.3f, max_strain=%g)" % (self.frame, self.solve_ms, self.max_strain)


class Frame:
    """One solved frame: .index (1-based: the state after index steps),
    .positions ((N, 3) float32, the session mesh's vertex order) and .stats."""

    __slots__ = ("index", "positions", "stats")

    def __init__(self, index, positions, stats):
        self.index = index
        self.positions = positions
        self.stats = stats

    def __repr__(self):
        return "drape.Frame(index=%d, vertices=%d)" % (self.index, self.positions.shape[0])


class Status:
    """A session's status (drape_status): .state ("running", "done", ...),
    .frames_done, .frames_target, .vertices, .error (a drape.Error or None)."""

    def __init__(self, lib, s):
        self.state = lib.drape_state_name(s.state).decode()
        self.name = s.name.decode(errors="replace")
        for n in ("queue_position", "frames_done", "frames_target", "frames_first",
                  "vertices", "triangles", "colliders", "error_frame"):
            setattr(self, n, getattr(s, n))
        self.error = None
        if s.has_error:
            name = lib.drape_err_name(s.error.code).decode()
            self.error = error_class(name)(s.error.code, name, s.error.message.decode(errors="replace"))
        self.stats = Stats(s.stats) if s.has_stats else None

    def __repr__(self):
        return "drape.Status(state=%r, frames_done=%d)" % (self.state, self.frames_done)


class SessionEntry:
    """One line of Client.sessions(): .id, .name, .state, .frames_done,
    .vertices, and from a server that says (draped --users-file): .owner,
    .host, .created (Unix seconds), .frames_target, .memory, .disk."""

    def __init__(self, lib, e):
        self.id = e.id
        self.name = e.name.decode(errors="replace")
        self.state = lib.drape_state_name(e.state).decode()
        self.frames_done = e.frames_done
        self.vertices = e.vertices
        self.owner = e.owner.decode(errors="replace")
        self.host = e.host.decode(errors="replace")
        self.created = e.created
        self.frames_target = e.frames_target
        self.memory = e.memory
        self.disk = e.disk

    def __repr__(self):
        return "drape.SessionEntry(id=%d, name=%r, state=%r)" % (self.id, self.name, self.state)


_libc = ctypes.CDLL(None)
_libc_free = _libc.free
_libc_free.argtypes = [ctypes.c_void_p]
_libc_free.restype = None


class Session:
    """A session on the server: .id, .token (hex owner token) and the client
    it talks through. Create with Client.create or reattach with
    Client.session(id, token)."""

    def __init__(self, client, handle, info=None):
        self._client = client
        self._h = handle
        self.create_info = info
        self.scene = None

    @property
    def id(self):
        return self._h.id

    @property
    def token(self):
        buf = (ctypes.c_char * 33)()
        self._client._lib.drape_token_format(self._h.token, buf)
        return buf.value.decode()

    def __repr__(self):
        return "drape.Session(id=%d)" % self.id

    def run(self, frames):
        """Solves `frames` more frames (0 = until cancelled); returns the
        frame index the run stops at."""
        if not isinstance(frames, int) or isinstance(frames, bool) or not 0 <= frames < 2**32:
            raise InvalidArgument(-1, "EINVAL", "frames: expected an integer >= 0, got %r" % (frames,))
        lib = self._client._lib
        info = _lib.drape_run_info()
        _call(lib, lib.drape_session_run, self._client._ptr(), self._h, frames, ctypes.byref(info))
        return info.frames_target

    def next_frame(self, timeout=None):
        """The next frame in order, waiting up to `timeout` seconds (None =
        as long as it takes). Returns None once the run has delivered every
        frame; raises drape.Timeout when no frame came in time (call again),
        drape.Canceled after a cancel, or the run's error if it failed."""
        lib = self._client._lib
        ms = WAIT_FOREVER if timeout is None else max(0, int(timeout * 1000))
        f = _lib.drape_frame()
        err = _lib.drape_error()
        rc = lib.drape_next_frame(self._client._ptr(), self._h, ctypes.byref(f), ms, ctypes.byref(err))
        if rc in _END_CODES:
            return None
        if rc != 0:
            raise_for(lib, rc, err)
        try:
            n = f.vertex_count
            # The one copy: out of the library's buffer into numpy's.
            pos = np.ctypeslib.as_array(f.positions, shape=(n, 3)).copy() if n else np.empty((0, 3), np.float32)
            return Frame(f.index, pos, Stats(f.stats))
        finally:
            lib.drape_frame_free(ctypes.byref(f))

    def frames(self, timeout=None):
        """Iterates over the run's frames in order, each exactly once, until
        the run ends. timeout bounds the wait for each frame (seconds)."""
        while True:
            fr = self.next_frame(timeout)
            if fr is None:
                return
            yield fr

    def seek(self, next_index):
        """Makes next_frame() continue at frame `next_index` (>= 1)."""
        lib = self._client._lib
        _call(lib, lib.drape_frames_seek, self._client._ptr(), self._h, int(next_index))

    def cancel(self):
        """Stops the run (the frame in flight finishes); returns the state
        name the server reports."""
        lib = self._client._lib
        state = ctypes.c_int()
        done = ctypes.c_uint32()
        _call(lib, lib.drape_session_cancel, self._client._ptr(), self._h, ctypes.byref(state), ctypes.byref(done))
        return lib.drape_state_name(state.value).decode()

    def status(self):
        lib = self._client._lib
        s = _lib.drape_status()
        _call(lib, lib.drape_session_status, self._client._ptr(), self._h, ctypes.byref(s))
        return Status(lib, s)

    def update(self, **params):
        """Changes solver parameters between runs (keys as for create)."""
        lib = self._client._lib
        p = _params.to_struct(lib, params)
        _call(lib, lib.drape_session_update, self._client._ptr(), self._h, ctypes.byref(p))

    def add_collider(self, collider):
        """Adds a drape.Collider; returns its index in the session."""
        lib = self._client._lib
        d, keep = _colliders.to_struct(lib, collider)
        idx = ctypes.c_uint32()
        _call(lib, lib.drape_collider_add, self._client._ptr(), self._h, ctypes.byref(d), ctypes.byref(idx))
        del keep
        return idx.value

    def delete(self):
        lib = self._client._lib
        _call(lib, lib.drape_session_delete, self._client._ptr(), self._h)


def _array(what, a, dtype, cols):
    try:
        arr = np.asarray(a)
    except Exception as e:  # numpy's own message says why
        raise InvalidArgument(-1, "EINVAL", "%s: %s" % (what, e)) from None
    if cols and (arr.ndim != 2 or arr.shape[1] != cols):
        raise InvalidArgument(-1, "EINVAL", "%s: expected an (N, %d) array, got shape %s" % (what, cols, arr.shape))
    if not cols and arr.ndim != 1:
        raise InvalidArgument(-1, "EINVAL", "%s: expected a 1-D array, got shape %s" % (what, arr.shape))
    if np.issubdtype(dtype, np.integer) and arr.size:
        if not np.issubdtype(arr.dtype, np.integer):
            raise InvalidArgument(-1, "EINVAL", "%s: expected integers, got %s" % (what, arr.dtype))
        if arr.min() < 0:
            raise InvalidArgument(-1, "EINVAL", "%s: negative index %d" % (what, arr.min()))
        if arr.max() >= 2**32:
            raise InvalidArgument(-1, "EINVAL", "%s: index %d is out of range" % (what, arr.max()))
    return np.ascontiguousarray(arr, dtype=dtype)


class Client:
    """A connection to draped. Use drape.connect(); close() or a with block
    ends it (sessions stay on the server)."""

    def __init__(self, lib, handle):
        self._lib = lib
        self._handle = handle

    def _ptr(self):
        if not self._handle:
            raise Error(-16, "ECLOSED", "the drape.Client is closed")
        return self._handle

    def close(self):
        if self._handle:
            self._lib.drape_close(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def server_info(self):
        """What the server said at hello: a dict of version, server, auth_required, limits."""
        s = _lib.drape_server_info()
        self._lib.drape_server_info_get(self._ptr(), ctypes.byref(s))
        return {"version": s.version, "server": s.server.decode(errors="replace"),
                "auth_required": bool(s.auth_required),
                "limits": {n: getattr(s.limits, n) for n, _ in _lib.drape_server_limits._fields_}}

    def sessions(self):
        """The server's sessions: a list of SessionEntry (id, name, state,
        frames_done, vertices)."""
        lib = self._lib
        arr = ctypes.POINTER(_lib.drape_session_entry)()
        n = ctypes.c_uint32()
        _call(lib, lib.drape_session_list, self._ptr(), ctypes.byref(arr), ctypes.byref(n))
        try:
            return [SessionEntry(lib, arr[i]) for i in range(n.value)]
        finally:
            if arr:
                # The library allocated the array with malloc: free() it.
                _libc_free(ctypes.cast(arr, ctypes.c_void_p))

    def ping(self):
        _call(self._lib, self._lib.drape_ping, self._ptr())

    def create(self, positions, triangles, pins=None, params=None, colliders=None, name=None,
               inv_mass=None, uvs=None):
        """Creates a session from an (N, 3) vertex array and (M, 3) triangle
        indices. pins: vertex indices that stay put; params: a dict of
        solver parameters (see _params); colliders: drape.Collider objects.
        If a collider is refused the new session is deleted again, so a
        failed create leaves nothing behind."""
        lib = self._lib
        pos = _array("positions", positions, np.float32, 3)
        tri = _array("triangles", triangles, np.uint32, 3)
        d = _lib.drape_session_desc()
        lib.drape_session_desc_default(ctypes.byref(d))
        d.positions = pos.ctypes.data
        d.vertex_count = pos.shape[0]
        d.triangles = tri.ctypes.data
        d.triangle_count = tri.shape[0]
        keep = [pos, tri]
        if pins is not None:
            pin = _array("pins", pins, np.uint32, 0)
            keep.append(pin)
            d.pins = pin.ctypes.data if pin.size else None
            d.pin_count = pin.size
        if inv_mass is not None:
            im = _array("inv_mass", inv_mass, np.float32, 0)
            keep.append(im)
            d.inv_mass = im.ctypes.data
        if uvs is not None:
            uv = _array("uvs", uvs, np.float32, 2)
            keep.append(uv)
            d.uvs = uv.ctypes.data
        d.params = _params.to_struct(lib, params)
        if name is not None:
            d.name = str(name).encode()
        descs = [_colliders.to_struct(lib, c) for c in (colliders or [])]
        h = _lib.drape_session()
        info = _lib.drape_create_info()
        _call(lib, lib.drape_session_create, self._ptr(), ctypes.byref(d), ctypes.byref(h), ctypes.byref(info))
        s = Session(self, h, {n: getattr(info.topology, n) for n, _ in _lib.drape_sim_topology._fields_})
        for i, (cd, _keep) in enumerate(descs):
            idx = ctypes.c_uint32()
            err = _lib.drape_error()
            rc = lib.drape_collider_add(self._ptr(), h, ctypes.byref(cd), ctypes.byref(idx), ctypes.byref(err))
            if rc != 0:
                err.message = ("colliders[%d]: " % i).encode() + err.message[:200]
                try:
                    s.delete()
                finally:
                    raise_for(lib, rc, err)
        return s

    def load_scene(self, path, name=None):
        """Builds a scene file (client/SCENE.md) as a new session, as `drape
        run` does before it runs: cloth, pins, parameters and colliders. The
        Session's .scene holds what was built (frames, start_frame, fps,
        vertex_count, ...); run it with session.run(session.scene["frames"]).
        A scene that does not load leaves nothing on the server."""
        lib = self._lib
        h = _lib.drape_session()
        info = _lib.drape_scene_info()
        _call(lib, lib.drape_scene_load, self._ptr(), os.fsencode(os.fspath(path)),
              None if name is None else str(name).encode(), ctypes.byref(h), ctypes.byref(info))
        s = Session(self, h)
        s.scene = {n: getattr(info, n) for n, _ in _lib.drape_scene_info._fields_}
        return s

    def session(self, id, token=None):
        """A handle on an existing session (token: its 32 hex digits owner token)."""
        h = _lib.drape_session()
        h.id = int(id)
        if token is not None:
            if lib_token_parse(self._lib, token, h) != 0:
                raise InvalidArgument(-1, "EINVAL", "token: expected 32 hex digits, got %r" % (token,))
        return Session(self, h)


def lib_token_parse(lib, token, h):
    return lib.drape_token_parse(str(token).encode(), h.token)

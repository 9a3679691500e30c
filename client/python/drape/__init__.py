"""drape: the Python client of the drape cloth-simulation server.

    import drape
    with drape.connect("ipc:///run/drape/draped.sock", token_file="~/.drape/token") as c:
        s = c.create(positions, triangles, pins=[0, 1], params={"material": "cotton"},
                     colliders=[drape.sphere((0, 0.5, 0), 0.3)])
        s.run(48)
        for frame in s.frames():
            frame.positions  # (N, 3) float32, the input's vertex order

Pure Python over libdrape.so (ctypes) and numpy. The library is found
through $DRAPE_LIBRARY, then next to this package, then the system linker
path; on import its struct layouts are checked against this package's.
Failures raise drape.Error (with .code, .name, .message) or a subclass.
Units are metres and seconds, Y up.
"""

import ctypes
import os

from . import _lib, _params
from ._client import Client, Frame, Session, SessionEntry, Stats, Status
from ._colliders import Collider, box, capsule, mesh, plane, sphere
from ._errors import (AbiMismatch, Canceled, Closed, Error, InvalidArgument, LimitExceeded,
                      NotFound, PermissionDenied, ProtocolError, Timeout, Unavailable)
from ._client import raise_for as _raise_for

_LIB = _lib.load()

__all__ = [
    "connect", "version", "material_presets", "load_scene", "Client", "Session", "Frame", "Stats",
    "Status", "Collider", "sphere", "plane", "box", "capsule", "mesh", "Error", "InvalidArgument",
    "LimitExceeded", "PermissionDenied", "NotFound", "Unavailable", "Timeout", "Closed", "Canceled",
    "ProtocolError", "AbiMismatch",
]


def version():
    """The version of the libdrape loaded ("MAJOR.MINOR.PATCH")."""
    return _LIB.drape_version().decode()


def library_path():
    """The file libdrape was loaded from."""
    return _LIB._name


def material_presets():
    """The fabric preset names params={"material": ...} accepts."""
    return _params.preset_names(_LIB)


def load_scene(path, client, name=None):
    """Builds the scene file at `path` as a new session on `client` (the
    scene loader creates the session on a server, so it needs a connection):
    the same as client.load_scene(path, name)."""
    return client.load_scene(path, name)


def _read_token(path):
    try:
        with open(os.path.expanduser(path), "rb") as f:
            tok = f.read()
    except OSError as e:
        raise InvalidArgument(-1, "EINVAL", "token_file: cannot read %s: %s" % (path, e.strerror)) from None
    tok = tok.rstrip(b"\r\n")
    if not tok:
        raise InvalidArgument(-1, "EINVAL", "token_file: %s is empty" % path)
    return tok


def connect(url=None, token=None, token_file=None, tls_ca=None, tls_cert=None, tls_key=None,
            tls_server_name=None, timeout=None, client_name="drape-python"):
    """Connects to draped's control URL (None: libdrape's default, which
    $DRAPE_SERVER overrides where the library supports it) and says hello.
    token (or token_file, whose trailing newline is dropped) is the server's
    auth token; tls_* name PEM files for tls+tcp:// URLs; timeout bounds
    each reply, seconds. Returns a Client; raises drape.Unavailable when no
    server answers."""
    if token is not None and token_file is not None:
        raise InvalidArgument(-1, "EINVAL", "token, token_file: give one or the other")
    if token_file is not None:
        token = _read_token(token_file)
    elif isinstance(token, str):
        token = token.encode()
    opts = _lib.drape_client_opts()
    _LIB.drape_client_opts_default(ctypes.byref(opts))
    keep = []

    def s(v):
        b = None if v is None else os.fsencode(os.path.expanduser(v)) if not isinstance(v, bytes) else v
        keep.append(b)
        return b

    opts.auth_token = token
    opts.client_name = s(client_name)
    opts.tls_ca_file = s(tls_ca)
    opts.tls_cert_file = s(tls_cert)
    opts.tls_key_file = s(tls_key)
    opts.tls_server_name = None if tls_server_name is None else str(tls_server_name).encode()
    if timeout is not None:
        if not timeout > 0:
            raise InvalidArgument(-1, "EINVAL", "timeout: expected seconds > 0, got %r" % (timeout,))
        opts.request_timeout_ms = int(timeout * 1000)
    handle = ctypes.c_void_p()
    err = _lib.drape_error()
    rc = _LIB.drape_connect(None if url is None else str(url).encode(), ctypes.byref(opts),
                            ctypes.byref(handle), ctypes.byref(err))
    if rc != 0:
        _raise_for(_LIB, rc, err)
    return Client(_LIB, handle.value)

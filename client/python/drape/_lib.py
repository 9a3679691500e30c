"""Loading libdrape.so, its public structs as ctypes, and the layout check.

The library is looked for in this order: the DRAPE_LIBRARY environment
variable (a path), a libdrape.so next to this package, then the system's
linker path (ctypes.util.find_library). Every Structure below mirrors one
struct of include/drape/drape.h, sim.h or error.h field by field; on load,
each one's ctypes.sizeof is compared with the library's own
drape_abi_struct_size(name), so a package and a library built from different
headers refuse to work together instead of corrupting memory.
"""

import ctypes
import ctypes.util
import os

from ._errors import AbiMismatch

c_float3 = ctypes.c_float * 3
DRAPE_TOKEN_SIZE = 16
DRAPE_NAME_MAX = 128
DRAPE_ERROR_MESSAGE_MAX = 256


class drape_error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * DRAPE_ERROR_MESSAGE_MAX)]


class drape_sim_params(ctypes.Structure):
    _fields_ = [
        ("fps", ctypes.c_float),
        ("substeps", ctypes.c_int32),
        ("iterations", ctypes.c_int32),
        ("gravity", c_float3),
        ("damping", ctypes.c_float),
        ("wind", c_float3),
        ("drag", ctypes.c_float),
        ("lift", ctypes.c_float),
        ("air_density", ctypes.c_float),
        ("density", ctypes.c_float),
        ("stretch", ctypes.c_float),
        ("shear", ctypes.c_float),
        ("bend", ctypes.c_float),
        ("thickness", ctypes.c_float),
        ("long_range", ctypes.c_int32),
        ("self_collision", ctypes.c_int32),
        ("self_thickness", ctypes.c_float),
        ("self_friction", ctypes.c_float),
        ("model", ctypes.c_int32),
        ("stretch_k", ctypes.c_float),
        ("stretch_k_weft", ctypes.c_float),
        ("shear_k", ctypes.c_float),
        ("bend_k", ctypes.c_float),
        ("compress_k", ctypes.c_float),
        ("damping_rate", ctypes.c_float),
        ("tear_strain", ctypes.c_float),
        ("schedule", ctypes.c_int32),
    ]


class drape_client_opts(ctypes.Structure):
    _fields_ = [
        ("request_timeout_ms", ctypes.c_int32),
        ("poll_interval_ms", ctypes.c_int32),
        ("auth_token", ctypes.c_char_p),
        ("client_name", ctypes.c_char_p),
        ("max_message", ctypes.c_uint64),
        ("use_stream", ctypes.c_bool),
        ("tls_ca_file", ctypes.c_char_p),
        ("tls_server_name", ctypes.c_char_p),
        ("tls_cert_file", ctypes.c_char_p),
        ("tls_key_file", ctypes.c_char_p),
        ("build_timeout_ms", ctypes.c_int32),
        ("reconnect_timeout_ms", ctypes.c_int32),
    ]


class drape_server_limits(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "max_message", "max_vertices", "max_triangles", "max_colliders", "max_voxels",
        "max_keyframes", "max_sessions", "max_sessions_per_client", "max_frames_retained",
        "max_frames_per_get", "max_session_memory", "idle_timeout_s", "max_memory",
        "max_connections", "max_connections_per_peer", "max_anim_frames", "max_anim_bytes")]


class drape_server_info(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint32),
        ("server", ctypes.c_char * 256),
        ("stream_url", ctypes.c_char * 1024),
        ("auth_required", ctypes.c_bool),
        ("limits", drape_server_limits),
    ]


class drape_session(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32), ("token", ctypes.c_uint8 * DRAPE_TOKEN_SIZE)]


class drape_session_desc(ctypes.Structure):
    _fields_ = [
        ("positions", ctypes.c_void_p),
        ("vertex_count", ctypes.c_uint32),
        ("triangles", ctypes.c_void_p),
        ("triangle_count", ctypes.c_uint32),
        ("inv_mass", ctypes.c_void_p),
        ("pins", ctypes.c_void_p),
        ("pin_count", ctypes.c_uint32),
        ("params", drape_sim_params),
        ("name", ctypes.c_char_p),
        ("uvs", ctypes.c_void_p),
        ("rest_positions", ctypes.c_void_p),
        ("stitches", ctypes.c_void_p),
        ("stitch_count", ctypes.c_uint32),
        ("stitch_k", ctypes.c_float),
        ("sew_speed", ctypes.c_float),
        ("pin_stiffness", ctypes.c_void_p),
        ("rest_scale", ctypes.c_void_p),
        ("stiffness_scale", ctypes.c_void_p),
        ("vertex_thickness", ctypes.c_void_p),
        ("vertex_friction", ctypes.c_void_p),
        ("objects", ctypes.c_void_p),
        ("object_count", ctypes.c_uint32),
    ]


class drape_sim_topology(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in (
        "vertices", "triangles", "edges", "bends", "boundary_edges", "nonmanifold_edges",
        "zero_area_triangles", "degenerate_edges", "unreferenced_vertices", "pinned_vertices",
        "long_range", "colours", "stitches", "welds")]


class drape_create_info(ctypes.Structure):
    _fields_ = [("topology", drape_sim_topology), ("intersections", ctypes.c_uint64)]


class drape_run_info(ctypes.Structure):
    _fields_ = [
        ("state", ctypes.c_int),
        ("frames_done", ctypes.c_uint32),
        ("frames_target", ctypes.c_uint32),
        ("queue_position", ctypes.c_uint32),
    ]


class drape_sim_stats(ctypes.Structure):
    _fields_ = [
        ("frame", ctypes.c_uint32),
        ("solve_ms", ctypes.c_double),
        ("collide_ms", ctypes.c_double),
        ("self_ms", ctypes.c_double),
        ("max_strain", ctypes.c_float),
        ("mean_strain", ctypes.c_float),
        ("nonfinite", ctypes.c_uint32),
        ("contacts", ctypes.c_uint32),
        ("self_pairs", ctypes.c_uint32),
        ("projections", ctypes.c_uint64),
        ("torn_edges", ctypes.c_uint32),
        ("split_vertices", ctypes.c_uint32),
        ("topology", ctypes.c_uint32),
        ("tear_ms", ctypes.c_double),
        ("split", ctypes.c_uint32),
        ("substeps", ctypes.c_uint32),
        ("body_turn", ctypes.c_float),
    ]


class drape_status(ctypes.Structure):
    _fields_ = [
        ("state", ctypes.c_int),
        ("name", ctypes.c_char * (DRAPE_NAME_MAX + 1)),
        ("queue_position", ctypes.c_uint32),
        ("frames_done", ctypes.c_uint32),
        ("frames_target", ctypes.c_uint32),
        ("frames_first", ctypes.c_uint32),
        ("vertices", ctypes.c_uint32),
        ("triangles", ctypes.c_uint32),
        ("colliders", ctypes.c_uint32),
        ("has_error", ctypes.c_bool),
        ("error", drape_error),
        ("error_frame", ctypes.c_uint32),
        ("has_stats", ctypes.c_bool),
        ("stats", drape_sim_stats),
        ("has_storage_error", ctypes.c_bool),
        ("storage_error", drape_error),
    ]


class drape_session_entry(ctypes.Structure):
    _fields_ = [
        ("id", ctypes.c_uint32),
        ("name", ctypes.c_char * (DRAPE_NAME_MAX + 1)),
        ("state", ctypes.c_int),
        ("frames_done", ctypes.c_uint32),
        ("vertices", ctypes.c_uint32),
        ("owner", ctypes.c_char * (DRAPE_NAME_MAX + 1)),
        ("host", ctypes.c_char * (DRAPE_NAME_MAX + 1)),
        ("created", ctypes.c_uint64),
        ("frames_target", ctypes.c_uint32),
        ("memory", ctypes.c_uint64),
        ("disk", ctypes.c_uint64),
    ]


class drape_scene_info(ctypes.Structure):
    _fields_ = [
        ("vertex_count", ctypes.c_uint32),
        ("triangle_count", ctypes.c_uint32),
        ("frames", ctypes.c_uint32),
        ("start_frame", ctypes.c_uint32),
        ("collider_count", ctypes.c_uint32),
        ("pin_count", ctypes.c_uint32),
        ("fps", ctypes.c_float),
        ("intersections", ctypes.c_uint64),
    ]


class drape_frame(ctypes.Structure):
    _fields_ = [
        ("index", ctypes.c_uint32),
        ("vertex_count", ctypes.c_uint32),
        ("positions", ctypes.POINTER(ctypes.c_float)),
        ("stats", drape_sim_stats),
        ("topology", ctypes.c_uint32),
        ("triangles", ctypes.POINTER(ctypes.c_uint32)),
        ("triangle_count", ctypes.c_uint32),
    ]


class drape_keyframe(ctypes.Structure):
    _fields_ = [("frame", ctypes.c_float), ("translate", c_float3), ("rotate", c_float3)]


class drape_collider_desc(ctypes.Structure):
    _fields_ = [
        ("shape", ctypes.c_int),
        ("point", c_float3),
        ("normal", c_float3),
        ("center", c_float3),
        ("radius", ctypes.c_float),
        ("half_extents", c_float3),
        ("a", c_float3),
        ("b", c_float3),
        ("sdf", ctypes.c_void_p),
        ("vertices", ctypes.c_void_p),
        ("vertex_count", ctypes.c_uint32),
        ("triangles", ctypes.c_void_p),
        ("triangle_count", ctypes.c_uint32),
        ("voxel_size", ctypes.c_float),
        ("max_voxels", ctypes.c_uint64),
        ("friction", ctypes.c_float),
        ("static_friction", ctypes.c_float),
        ("restitution", ctypes.c_float),
        ("thickness", ctypes.c_float),
        ("keyframes", ctypes.POINTER(drape_keyframe)),
        ("keyframe_count", ctypes.c_uint32),
        ("frames", ctypes.c_void_p),
        ("frame_count", ctypes.c_uint32),
        ("frame_start", ctypes.c_float),
    ]


# Every struct the package passes to or receives from the library, checked
# against drape_abi_struct_size() on load.
STRUCTS = (
    drape_error, drape_sim_params, drape_client_opts, drape_server_limits, drape_server_info,
    drape_session, drape_session_desc, drape_sim_topology, drape_create_info, drape_run_info,
    drape_sim_stats, drape_status, drape_session_entry, drape_frame, drape_keyframe, drape_collider_desc,
    drape_scene_info,
)

_E = ctypes.c_int  # drape_err
_P = ctypes.c_void_p
_ERR = ctypes.POINTER(drape_error)

# name: (restype, argtypes)
_PROTOTYPES = {
    "drape_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "drape_err_name": (ctypes.c_char_p, [ctypes.c_int]),
    "drape_version": (ctypes.c_char_p, []),
    "drape_abi_struct_size": (ctypes.c_size_t, [ctypes.c_char_p]),
    "drape_client_opts_default": (None, [ctypes.POINTER(drape_client_opts)]),
    "drape_connect": (_E, [ctypes.c_char_p, ctypes.POINTER(drape_client_opts), ctypes.POINTER(_P), _ERR]),
    "drape_close": (None, [_P]),
    "drape_server_info_get": (None, [_P, ctypes.POINTER(drape_server_info)]),
    "drape_ping": (_E, [_P, _ERR]),
    "drape_params_unset": (None, [ctypes.POINTER(drape_sim_params)]),
    "drape_session_desc_default": (None, [ctypes.POINTER(drape_session_desc)]),
    "drape_session_create": (_E, [_P, ctypes.POINTER(drape_session_desc), ctypes.POINTER(drape_session),
                                  ctypes.POINTER(drape_create_info), _ERR]),
    "drape_session_run": (_E, [_P, drape_session, ctypes.c_uint32, ctypes.POINTER(drape_run_info), _ERR]),
    "drape_session_cancel": (_E, [_P, drape_session, ctypes.POINTER(ctypes.c_int),
                                  ctypes.POINTER(ctypes.c_uint32), _ERR]),
    "drape_session_update": (_E, [_P, drape_session, ctypes.POINTER(drape_sim_params), _ERR]),
    "drape_session_delete": (_E, [_P, drape_session, _ERR]),
    "drape_session_status": (_E, [_P, drape_session, ctypes.POINTER(drape_status), _ERR]),
    "drape_session_list": (_E, [_P, ctypes.POINTER(ctypes.POINTER(drape_session_entry)),
                                ctypes.POINTER(ctypes.c_uint32), _ERR]),
    "drape_scene_load": (_E, [_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(drape_session),
                              ctypes.POINTER(drape_scene_info), _ERR]),
    "drape_state_name": (ctypes.c_char_p, [ctypes.c_int]),
    "drape_token_format": (None, [ctypes.c_uint8 * DRAPE_TOKEN_SIZE, ctypes.c_char * 33]),
    "drape_token_parse": (_E, [ctypes.c_char_p, ctypes.c_uint8 * DRAPE_TOKEN_SIZE]),
    "drape_collider_desc_unset": (None, [ctypes.POINTER(drape_collider_desc)]),
    "drape_collider_add": (_E, [_P, drape_session, ctypes.POINTER(drape_collider_desc),
                                ctypes.POINTER(ctypes.c_uint32), _ERR]),
    "drape_frame_free": (None, [ctypes.POINTER(drape_frame)]),
    "drape_frames_seek": (_E, [_P, drape_session, ctypes.c_uint32, _ERR]),
    "drape_next_frame": (_E, [_P, drape_session, ctypes.POINTER(drape_frame), ctypes.c_int32, _ERR]),
    "drape_material_preset": (_E, [ctypes.c_char_p, ctypes.POINTER(drape_sim_params), _ERR]),
    "drape_material_preset_names": (ctypes.POINTER(ctypes.c_char_p), []),
}

# Functions the package works without (an older or thinner library): the
# callers check for None and say what is missing.
_OPTIONAL = {"drape_material_preset", "drape_material_preset_names"}


def _candidates():
    env = os.environ.get("DRAPE_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = [os.path.join(here, n) for n in ("libdrape.so", "libdrape.so.1") if os.path.exists(os.path.join(here, n))]
    found = ctypes.util.find_library("drape")
    if found:
        out.append(found)
    return out


def load():
    """Loads libdrape, sets every prototype and checks the struct layouts."""
    cands = _candidates()
    if not cands:
        raise ImportError("drape: libdrape.so not found: set DRAPE_LIBRARY to its path, "
                          "or install it (make install) where the linker finds it")
    errors = []
    for path in cands:
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            errors.append("%s: %s" % (path, e))
    else:
        raise ImportError("drape: cannot load libdrape: " + "; ".join(errors))
    for name, (res, args) in _PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            if name in _OPTIONAL:
                setattr(lib, name, None)
                continue
            raise ImportError("drape: %s has no %s(): the library is older than this package "
                              "(build and install libdrape from the same drape as the package)"
                              % (lib._name, name)) from None
        fn.restype = res
        fn.argtypes = args
    check_abi(lib, STRUCTS)
    return lib


def check_abi(lib, structs):
    """Raises AbiMismatch naming every struct whose size differs from the library's."""
    bad = []
    for cls in structs:
        theirs = lib.drape_abi_struct_size(cls.__name__.encode())
        ours = ctypes.sizeof(cls)
        if theirs != ours:
            bad.append("%s: package %d bytes, library %s" % (
                cls.__name__, ours, "does not know it" if theirs == 0 else "%d bytes" % theirs))
    if bad:
        raise AbiMismatch(-13, "EVERSION", "libdrape %s at %s does not match the drape package: %s"
                          % (lib.drape_version().decode(), lib._name, "; ".join(bad)))

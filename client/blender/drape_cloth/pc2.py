"""PC2 point caches (the format of Blender's Mesh Cache modifier).

Layout, little-endian: the 12 bytes "POINTCACHE2\\0", int32 version (1),
int32 point count, float32 start frame, float32 sample rate (frames per
sample), int32 sample count, then sample count x point count x 3 float32.
"""

import os
import struct

import numpy as np

MAGIC = b"POINTCACHE2\0"


def write(path, samples, start_frame=0.0, sample_rate=1.0):
    """Writes (S, N, 3) float32 samples to path through a temporary file, so
    a Mesh Cache reading the old file never sees half a new one."""
    a = np.ascontiguousarray(samples, dtype="<f4")
    if a.ndim != 3 or a.shape[2] != 3:
        raise ValueError("pc2: expected (samples, points, 3), got shape %s" % (a.shape,))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(MAGIC + struct.pack("<iiffi", 1, a.shape[1], float(start_frame), float(sample_rate), a.shape[0]))
        f.write(a.tobytes())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read(path):
    """(samples (S, N, 3) float32, start_frame, sample_rate)."""
    with open(path, "rb") as f:
        head = f.read(32)
        if len(head) != 32 or head[:12] != MAGIC:
            raise ValueError("%s: not a PC2 file" % path)
        _, n, start, rate, s = struct.unpack("<iiffi", head[12:])
        data = np.frombuffer(f.read(), dtype="<f4")
    if data.size != s * n * 3:
        raise ValueError("%s: %d floats for %d samples of %d points" % (path, data.size, s, n))
    return data.reshape(s, n, 3).astype(np.float32), start, rate

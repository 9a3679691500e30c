"""Fixtures of the drape package's tests: a private draped per test module.

The package is imported from client/python (this checkout), libdrape from
$DRAPE_LIBRARY (default build/libdrape.so) and the daemon from $DRAPED
(default build/draped). Each draped listens on an ipc:// socket in a folder
of its own and is stopped (SIGTERM, then SIGKILL) when its module is done.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("DRAPE_BUILD", os.path.join(TOP, "build"))
os.environ.setdefault("DRAPE_LIBRARY", os.path.join(BUILD, "libdrape.so"))
sys.path.insert(0, os.path.join(TOP, "client", "python"))

import drape  # noqa: E402

DRAPED = os.environ.get("DRAPED", os.path.join(BUILD, "draped"))
DRAPE = os.environ.get("DRAPE", os.path.join(BUILD, "drape"))
# Generous: the machine may be shared by many builds at once.
DEADLINE_S = 60.0


class Daemon:
    """A draped started in a temporary folder; .url is its control URL."""

    def __init__(self, *args, url=None, client_args=None):
        self.dir = tempfile.mkdtemp(prefix="drape-py-")
        self.url = url or "ipc://" + os.path.join(self.dir, "draped.sock")
        self.client_args = client_args or {}
        self.log = open(os.path.join(self.dir, "draped.log"), "wb")
        self.proc = subprocess.Popen([DRAPED, "--listen", self.url, "--state-dir", os.path.join(self.dir, "state"),
                                      "--threads", "2", "--pool-threads", "1"] + list(args),
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.wait_ready()

    def wait_ready(self):
        end = time.monotonic() + DEADLINE_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("draped exited with %d; log in %s" % (self.proc.returncode, self.log.name))
            # hello needs no token, so connecting tells that it listens.
            try:
                drape.connect(self.url, timeout=5, **self.client_args).close()
                return
            except drape.Unavailable:
                if time.monotonic() > end:
                    raise
                time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(DEADLINE_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        subprocess.run(["rm", "-rf", self.dir], check=False)


@pytest.fixture(scope="module")
def daemon():
    d = Daemon()
    yield d
    d.stop()


@pytest.fixture
def client(daemon):
    with drape.connect(daemon.url, timeout=60) as c:
        yield c


def grid(nx, ny, size=1.0, y=0.0):
    """A flat nx x ny sheet in the XZ plane at height y: (positions, triangles)."""
    import numpy as np
    xs = np.linspace(-size / 2, size / 2, nx, dtype=np.float32)
    zs = np.linspace(-size / 2, size / 2, ny, dtype=np.float32)
    X, Z = np.meshgrid(xs, zs)
    pos = np.stack([X.ravel(), np.full(X.size, y, np.float32), Z.ravel()], axis=1).astype(np.float32)
    tris = []
    for j in range(ny - 1):
        for i in range(nx - 1):
            a = j * nx + i
            tris.append((a, a + nx, a + 1))
            tris.append((a + 1, a + nx, a + nx + 1))
    return pos, np.array(tris, dtype=np.uint32)

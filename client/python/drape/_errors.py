"""drape's error codes as Python exceptions.

Every failing libdrape call becomes a drape.Error carrying the library's
code (a negative int), its symbolic name ("EINVAL") and the message that
names the field at fault. Common codes get subclasses so callers can catch
what they handle (drape.Unavailable for a server that is down, drape.Canceled
for a cancelled run) and let the rest propagate.
"""


class Error(Exception):
    """A libdrape failure: .code (int < 0), .name ("EINVAL"), .message."""

    def __init__(self, code, name, message):
        self.code = int(code)
        self.name = str(name)
        self.message = str(message)
        super().__init__("%s (%s): %s" % (self.name, self.code, self.message))


class InvalidArgument(Error, ValueError):
    """EINVAL, ERANGE, ENONFINITE: an input the library or the server refused."""


class LimitExceeded(Error):
    """ELIMIT, ENOMEM, ETOOLARGE: over a limit of the server."""


class PermissionDenied(Error):
    """EPERM: a wrong or missing auth or owner token."""


class NotFound(Error):
    """ENOTFOUND: no such session or collider."""


class Unavailable(Error, ConnectionError):
    """EUNAVAILABLE: no server at the URL (refused, no socket)."""


class Timeout(Error, TimeoutError):
    """ETIMEDOUT: no reply, or no frame, within the time allowed."""


class Closed(Error):
    """ECLOSED: the connection closed."""


class Canceled(Error):
    """ECANCELED: the run was cancelled."""


class ProtocolError(Error):
    """EPROTO, EVERSION, ETRUNCATED, ETOODEEP: the two sides disagree."""


class AbiMismatch(Error, ImportError):
    """The loaded libdrape's structs differ from this package's."""


_CLASSES = {
    "EINVAL": InvalidArgument,
    "ERANGE": InvalidArgument,
    "ENONFINITE": InvalidArgument,
    "ELIMIT": LimitExceeded,
    "ENOMEM": LimitExceeded,
    "ETOOLARGE": LimitExceeded,
    "EPERM": PermissionDenied,
    "ENOTFOUND": NotFound,
    "EUNAVAILABLE": Unavailable,
    "ETIMEDOUT": Timeout,
    "ECLOSED": Closed,
    "ECANCELED": Canceled,
    "EPROTO": ProtocolError,
    "EVERSION": ProtocolError,
    "ETRUNCATED": ProtocolError,
    "ETOODEEP": ProtocolError,
}


def error_class(name):
    """The exception class for a symbolic code name (Error when none fits)."""
    return _CLASSES.get(name, Error)

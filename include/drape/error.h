/*
 * drape — error codes shared by the solver, the codec, the daemon and the
 * client library.
 *
 * One X-macro table feeds both the enum and drape_strerror(), so a code and
 * its text can never drift apart. Codes are negative like libuv's; DRAPE_OK is
 * zero. A function that fails leaves its output arguments untouched and, when
 * given a drape_error, fills it with the code and a message that names the
 * field (and index) at fault.
 */
#ifndef DRAPE_ERROR_H
#define DRAPE_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is libdrape's API; the library is built with
 * -fvisibility=hidden, so only these declarations are exported. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define DRAPE_ERRNO_MAP(X)                                                   \
	X(OK, 0, "success")                                                  \
	X(EINVAL, -1, "invalid argument")                                    \
	X(ERANGE, -2, "index out of range")                                  \
	X(ENONFINITE, -3, "non-finite number")                               \
	X(ENOMEM, -4, "out of memory")                                       \
	X(ELIMIT, -5, "over a configured limit")                             \
	X(ESTATE, -6, "not allowed in the current state")                    \
	X(ENOTFOUND, -7, "no such object")                                   \
	X(EPERM, -8, "not permitted")                                        \
	X(EPROTO, -9, "protocol error")                                      \
	X(ETRUNCATED, -10, "message truncated")                              \
	X(ETOODEEP, -11, "message nested too deeply")                        \
	X(ETOOLARGE, -12, "message too large")                               \
	X(EVERSION, -13, "unsupported protocol version")                     \
	X(EUNAVAILABLE, -14, "server unavailable")                           \
	X(ETIMEDOUT, -15, "timed out")                                       \
	X(ECLOSED, -16, "connection closed")                                 \
	X(ECANCELED, -17, "canceled")                                        \
	X(EIO, -18, "input/output error")                                    \
	X(EPARSE, -19, "cannot parse input file")                            \
	X(ESDF, -20, "signed distance field error")                          \
	X(EBUSY, -21, "busy")                                                \
	X(EINTERNAL, -22, "internal error")                                  \
	X(EDONE, -23, "run finished")

typedef enum drape_err {
#define DRAPE_ERR_ENUM_(name, value, text) DRAPE_##name = value,
	DRAPE_ERRNO_MAP(DRAPE_ERR_ENUM_)
#undef DRAPE_ERR_ENUM_
} drape_err;

/* Size of the message buffer in drape_error, including the terminating NUL. */
#define DRAPE_ERROR_MESSAGE_MAX 256

/*
 * Detail of a failure: the code and a human-readable sentence naming what is
 * wrong, for example "triangles[17][2]: vertex index 9000 >= vertex count 4096".
 * Callers own the struct (usually on the stack); functions that take a
 * `drape_error *` accept NULL when the caller does not want the detail.
 */
typedef struct drape_error {
	drape_err code;
	char message[DRAPE_ERROR_MESSAGE_MAX];
} drape_error;

/* Static text for a code; never NULL, "unknown error" for unknown codes. */
const char *drape_strerror(drape_err code);

/* Short symbolic name ("EINVAL") for a code; used on the wire and in logs. */
const char *drape_err_name(drape_err code);

/* Parses a symbolic name back to a code; returns DRAPE_EINTERNAL if unknown. */
drape_err drape_err_from_name(const char *name);

/*
 * Fills *err (if not NULL) with code and a printf-formatted message and
 * returns code, so a failing path reads `return drape_error_setf(err, ...)`.
 */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
drape_err drape_error_setf(drape_error *err, drape_err code, const char *fmt, ...);

/* Clears *err (if not NULL) to DRAPE_OK with an empty message. */
void drape_error_clear(drape_error *err);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif

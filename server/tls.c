/*
 * The server side of TLS (see tls.h).
 */
#include "server/tls.h"

#include <errno.h>
#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

/* PEM files are small; anything larger than this is not one. */
#define SRV_TLS_MAX_FILE (1u << 20)

static int srv_tls_fail(char *msg, size_t msg_len, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (msg != NULL && msg_len > 0)
		vsnprintf(msg, msg_len, fmt, ap);
	va_end(ap);
	return code;
}

/* Reads a whole PEM file as a NUL-terminated string (nng wants strings). */
static char *srv_tls_read(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	char *buf = malloc(SRV_TLS_MAX_FILE + 1);
	size_t n = buf != NULL ? fread(buf, 1, SRV_TLS_MAX_FILE + 1, f) : 0;
	int read_err = ferror(f);
	fclose(f);
	if (buf == NULL || read_err || n > SRV_TLS_MAX_FILE) {
		free(buf);
		errno = buf == NULL ? ENOMEM : read_err ? EIO : EFBIG;
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

int srv_tls_open(srv_config *c, char *msg, size_t msg_len)
{
	c->tls = NULL;
	if (c->tls_cert == NULL)
		return SRV_EXIT_OK;
	char *cert = srv_tls_read(c->tls_cert);
	if (cert == NULL)
		return srv_tls_fail(msg, msg_len, SRV_EXIT_NOINPUT, "--tls-cert %s: %s", c->tls_cert,
				    strerror(errno));
	char *key = srv_tls_read(c->tls_key);
	if (key == NULL) {
		int e = errno;
		free(cert);
		return srv_tls_fail(msg, msg_len, SRV_EXIT_NOINPUT, "--tls-key %s: %s", c->tls_key, strerror(e));
	}
	if (c->tls_ca != NULL) {
		/* nng reads the CA file itself; reading it here first tells an
		 * unreadable file (66) from one that is not PEM (69). */
		char *ca = srv_tls_read(c->tls_ca);
		if (ca == NULL) {
			int e = errno;
			free(cert);
			free(key);
			return srv_tls_fail(msg, msg_len, SRV_EXIT_NOINPUT, "--tls-ca %s: %s", c->tls_ca, strerror(e));
		}
		free(ca);
	}

	int code = SRV_EXIT_OK;
	nng_tls_config *probe = NULL, *t = NULL;
	int rv = nng_tls_config_alloc(&t, NNG_TLS_MODE_SERVER);
	if (rv == 0)
		rv = nng_tls_config_alloc(&probe, NNG_TLS_MODE_CLIENT);
	if (rv != 0) {
		code = srv_tls_fail(msg, msg_len, SRV_EXIT_UNAVAILABLE, "TLS: %s", nng_strerror(rv));
		goto done;
	}
	/* nng_tls_config_own_cert parses certificate and key in one call and
	 * cannot say which was bad; parsing the certificate alone first (as a
	 * CA chain of a scratch configuration) lets the message name the
	 * right file. */
	rv = nng_tls_config_ca_chain(probe, cert, NULL);
	if (rv != 0) {
		code = srv_tls_fail(msg, msg_len, SRV_EXIT_UNAVAILABLE,
				    "--tls-cert %s: not a PEM certificate (%s)", c->tls_cert, nng_strerror(rv));
		goto done;
	}
	rv = nng_tls_config_own_cert(t, cert, key, NULL);
	if (rv != 0) {
		code = srv_tls_fail(msg, msg_len, SRV_EXIT_UNAVAILABLE,
				    "--tls-key %s: not a usable private key for --tls-cert %s "
				    "(PEM, not encrypted) (%s)",
				    c->tls_key, c->tls_cert, nng_strerror(rv));
		goto done;
	}
	if (c->tls_ca != NULL) {
		rv = nng_tls_config_ca_file(t, c->tls_ca);
		if (rv != 0) {
			code = srv_tls_fail(msg, msg_len, SRV_EXIT_UNAVAILABLE,
					    "--tls-ca %s: not PEM CA certificates (%s)", c->tls_ca, nng_strerror(rv));
			goto done;
		}
	}
	/* Without --tls-ca no client certificate is asked for: the auth token
	 * is what identifies clients then. */
	rv = nng_tls_config_auth_mode(t, c->tls_ca != NULL ? NNG_TLS_AUTH_MODE_REQUIRED : NNG_TLS_AUTH_MODE_NONE);
	if (rv != 0) {
		code = srv_tls_fail(msg, msg_len, SRV_EXIT_UNAVAILABLE, "TLS: %s", nng_strerror(rv));
		goto done;
	}
	c->tls = t;
	t = NULL;
done:
	if (probe != NULL)
		nng_tls_config_free(probe);
	if (t != NULL)
		nng_tls_config_free(t);
	/* The key is secret: do not leave it in freed heap memory. */
	explicit_bzero(key, strlen(key));
	free(key);
	free(cert);
	return code;
}

void srv_tls_close(srv_config *c)
{
	if (c->tls != NULL)
		nng_tls_config_free(c->tls);
	c->tls = NULL;
}

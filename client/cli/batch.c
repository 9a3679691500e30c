/*
 * drape CLI: the state folder of a resumable batch run (`drape run
 * --state-dir DIR`). The run's solver state is the daemon's own crash
 * recovery (server/checkpoint.c's files, in DIR/daemon, written by the
 * embedded draped every --checkpoint-every frames and when it is stopped);
 * this file keeps the rest: which session on which server the run is,
 * in DIR/session.json, and a lock so two tasks never drive one folder.
 *
 *   DIR/lock           flock'ed while a run owns the folder
 *   DIR/session.json   {"server":..,"box":..,"session":N,"token":HEX,"frames":N}
 *   DIR/daemon/        the embedded daemon's --state-dir
 *   DIR/frames/        frame_NNNN.obj, unless --out says otherwise
 */
#include "client/cli/cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p; false with errno set on failure. */
static bool batch_mkdirs(const char *path)
{
	char buf[4096];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
		errno = ENAMETOOLONG;
		return false;
	}
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return false;
		*p = '/';
	}
	if (mkdir(buf, 0777) != 0 && errno != EEXIST)
		return false;
	struct stat sb;
	if (stat(path, &sb) != 0)
		return false;
	if (!S_ISDIR(sb.st_mode)) {
		errno = ENOTDIR;
		return false;
	}
	return true;
}

/* Reads DIR/session.json into *b. Returns 0 (found or not) or an exit code
 * for a record that exists but cannot be used. */
static int batch_read(const char *dir, cli_batch *b, bool *found)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/session.json", dir);
	*found = false;
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "drape run: --state-dir: cannot read %s: %s\n", path, strerror(errno));
		return CLI_IOERR;
	}
	char text[8192];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	cJSON *j = cJSON_Parse(text);
	const cJSON *server = cJSON_GetObjectItemCaseSensitive(j, "server");
	const cJSON *box = cJSON_GetObjectItemCaseSensitive(j, "box");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "session");
	const cJSON *token = cJSON_GetObjectItemCaseSensitive(j, "token");
	const cJSON *frames = cJSON_GetObjectItemCaseSensitive(j, "frames");
	const char *bad = j == NULL                                       ? "not JSON"
			  : !cJSON_IsString(server)                       ? "\"server\" is not a string"
			  : !cJSON_IsString(box)                          ? "\"box\" is not a string"
			  : !cJSON_IsNumber(id) || id->valuedouble < 1 ||
					  id->valuedouble > 4294967295.0 ? "\"session\" is not an id"
			  : !cJSON_IsString(token) ||
					  drape_token_parse(token->valuestring, b->session.token) != DRAPE_OK
					  ? "\"token\" is not 32 hex digits"
			  : !cJSON_IsNumber(frames) || frames->valuedouble < 1 ||
					  frames->valuedouble > 1000000 ? "\"frames\" is not a frame count"
			  : strlen(server->valuestring) >= sizeof b->server ||
					  strlen(box->valuestring) >= sizeof b->url
					  ? "a URL is too long"
					  : NULL;
	if (bad != NULL) {
		fprintf(stderr, "drape run: --state-dir: %s: %s; remove the folder to start over\n", path, bad);
		cJSON_Delete(j);
		return CLI_DATAERR;
	}
	snprintf(b->server, sizeof b->server, "%s", server->valuestring);
	snprintf(b->url, sizeof b->url, "%s", box->valuestring);
	b->session.id = (uint32_t)id->valuedouble;
	b->frames = (uint32_t)frames->valuedouble;
	cJSON_Delete(j);
	*found = true;
	return 0;
}

int cli_batch_open(const char *dir, cli_batch *b, bool *found)
{
	memset(b, 0, sizeof *b);
	b->lock_fd = -1;
	char path[4200];
	snprintf(path, sizeof path, "%s/daemon", dir);
	if (!batch_mkdirs(dir) || !batch_mkdirs(path)) {
		fprintf(stderr, "drape run: --state-dir: cannot create %s: %s\n", path, strerror(errno));
		return CLI_IOERR;
	}
	snprintf(path, sizeof path, "%s/lock", dir);
	/* Not O_CLOEXEC on purpose: the embedded draped inherits the lock and
	 * holds it until it has exited, so a retry started while a killed
	 * run's daemon still writes its last checkpoint finds the folder busy
	 * instead of starting a second daemon on the same state. */
	b->lock_fd = open(path, O_RDWR | O_CREAT, 0644);
	if (b->lock_fd < 0) {
		fprintf(stderr, "drape run: --state-dir: cannot open %s: %s\n", path, strerror(errno));
		return CLI_IOERR;
	}
	/* Another run on the folder (a task started twice, or the previous
	 * attempt still stopping): busy, try again later. */
	if (flock(b->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		fprintf(stderr, "drape run: --state-dir %s is in use by another drape run\n", dir);
		close(b->lock_fd);
		b->lock_fd = -1;
		return CLI_TEMPFAIL;
	}
	return batch_read(dir, b, found);
}

int cli_batch_save(const char *dir, const cli_batch *b)
{
	char path[4200], tmp[4300], hex[DRAPE_TOKEN_HEX_SIZE];
	snprintf(path, sizeof path, "%s/session.json", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	drape_token_format(b->session.token, hex);
	cJSON *j = cJSON_CreateObject();
	if (j == NULL || cJSON_AddStringToObject(j, "server", b->server) == NULL ||
	    cJSON_AddStringToObject(j, "box", b->url) == NULL ||
	    cJSON_AddNumberToObject(j, "session", b->session.id) == NULL ||
	    cJSON_AddStringToObject(j, "token", hex) == NULL ||
	    cJSON_AddNumberToObject(j, "frames", b->frames) == NULL) {
		cJSON_Delete(j);
		fprintf(stderr, "drape: out of memory\n");
		return CLI_SOFTWARE;
	}
	char *text = cJSON_Print(j);
	cJSON_Delete(j);
	if (text == NULL) {
		fprintf(stderr, "drape: out of memory\n");
		return CLI_SOFTWARE;
	}
	/* The record holds the owner token: only its owner reads it. */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t len = strlen(text);
	bool ok = fd >= 0 && write(fd, text, len) == (ssize_t)len && write(fd, "\n", 1) == 1 &&
		  fsync(fd) == 0;
	int en = errno;
	if (fd >= 0 && close(fd) != 0 && ok) {
		ok = false;
		en = errno;
	}
	cJSON_free(text);
	if (!ok || rename(tmp, path) != 0) {
		if (ok)
			en = errno;
		fprintf(stderr, "drape run: --state-dir: cannot write %s: %s\n", path, strerror(en));
		unlink(tmp);
		return CLI_IOERR;
	}
	return 0;
}

void cli_batch_close(cli_batch *b)
{
	if (b->lock_fd >= 0)
		close(b->lock_fd);
	b->lock_fd = -1;
}

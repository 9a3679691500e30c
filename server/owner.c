/* A session's owner file (owner.h). */
#include "server/owner.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/users.h"

drape_err srv_owner_save(const srv_session *s, drape_error *err)
{
	if (s->dir == NULL)
		return DRAPE_OK;
	char line[160], tmp[4400], path[4400];
	/* The host is written without spaces, so the line splits in four. */
	char host[64];
	snprintf(host, sizeof host, "%s", s->host[0] ? s->host : "-");
	for (char *p = host; *p; p++)
		if (*p == ' ' || *p == '\t' || *p == '\n')
			*p = '_';
	const int n = snprintf(line, sizeof line, "v1 %s %s %" PRIu64 "\n", s->owner[0] ? s->owner : "-", host,
			       s->created_unix);
	snprintf(tmp, sizeof tmp, "%.4000s/owner.tmp", s->dir);
	snprintf(path, sizeof path, "%.4000s/owner", s->dir);
	const char *step = "open";
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	step = "write";
	if (write(fd, line, (size_t)n) != n)
		goto fail_fd;
	step = "fsync";
	if (fsync(fd) != 0)
		goto fail_fd;
	close(fd);
	fd = -1;
	step = "rename";
	if (rename(tmp, path) != 0)
		goto fail;
	int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return DRAPE_OK;
fail_fd:;
	const int e = errno;
	close(fd);
	errno = e;
fail:;
	const int saved = errno;
	unlink(tmp);
	return drape_error_setf(err, DRAPE_EIO, "%.300s: %s: %s", path, step, strerror(saved));
}

bool srv_owner_load(const char *dir, srv_session *s)
{
	char path[4400];
	snprintf(path, sizeof path, "%.4000s/owner", dir);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return false;
	char line[256];
	const bool got = fgets(line, sizeof line, f) != NULL;
	fclose(f);
	if (!got)
		return false;
	char user[64], host[64];
	uint64_t created = 0;
	if (sscanf(line, "v1 %63s %63s %" SCNu64, user, host, &created) != 3)
		return false;
	if (strcmp(user, "-") != 0 && !proto_user_name_ok(user))
		return false;
	/* proto_user_name_ok bounds a name to 32 characters. */
	if (strcmp(user, "-") == 0)
		s->owner[0] = '\0';
	else
		memcpy(s->owner, user, strlen(user) + 1);
	if (strcmp(host, "-") == 0)
		s->host[0] = '\0';
	else
		memcpy(s->host, host, strlen(host) + 1);
	s->created_unix = created;
	srv_session_who(s);
	return true;
}

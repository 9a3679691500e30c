/* Whole-file reads for the client's file readers (readfile.h). */
#include "client/readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

drape_err readfile_whole(const char *path, uint64_t max, const char *kind, char **data, size_t *len,
			 drape_error *err)
{
	/* O_NONBLOCK: opening a FIFO named by a scene must not hang; regular
	 * files ignore the flag, and anything else is refused below. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return drape_error_setf(err, errno == ENOENT ? DRAPE_ENOTFOUND : DRAPE_EIO, "%s: cannot open: %s",
					path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return drape_error_setf(err, DRAPE_EIO, "%s: not a regular file", path);
	}
	if ((uint64_t)st.st_size > max || (uint64_t)st.st_size > SIZE_MAX - 1) {
		close(fd);
		return drape_error_setf(err, DRAPE_ELIMIT, "%s: %lld bytes is over the %s limit of %llu", path,
					(long long)st.st_size, kind, (unsigned long long)max);
	}
	size_t size = (size_t)st.st_size, got = 0;
	char *buf = malloc(size + 1);
	if (buf == NULL) {
		close(fd);
		return drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory for %zu bytes", path, size);
	}
	while (got < size) {
		ssize_t n = read(fd, buf + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int en = errno;
			free(buf);
			close(fd);
			return drape_error_setf(err, DRAPE_EIO, "%s: read failed: %s", path, strerror(en));
		}
		if (n == 0)
			break; /* the file shrank while it was read: the caller parses what there is */
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	*data = buf;
	*len = got;
	return DRAPE_OK;
}

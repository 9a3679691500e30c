/*
 * sd_notify's datagram protocol (see notify.h).
 */
#include "server/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int srv_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	if (path == NULL || path[0] == '\0')
		return 0;
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	const size_t n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof sa.sun_path)
		return -EINVAL;
	memcpy(sa.sun_path, path, n);
	/* "@name" is the abstract namespace: a leading NUL, and the length
	 * says where the name ends. */
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	const socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] == '/' ? 1 : 0));
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ssize_t w = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (const struct sockaddr *)&sa, len);
	int e = errno;
	close(fd);
	return w < 0 ? -e : 1;
}

uint64_t srv_notify_watchdog_usec(void)
{
	const char *us = getenv("WATCHDOG_USEC");
	if (us == NULL || us[0] < '0' || us[0] > '9')
		return 0;
	/* WATCHDOG_PID says which process the watchdog is meant for: a child
	 * that inherited the variables must not feed it. */
	const char *pid = getenv("WATCHDOG_PID");
	if (pid != NULL && pid[0] != '\0' && strtoull(pid, NULL, 10) != (unsigned long long)getpid())
		return 0;
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(us, &end, 10);
	if (errno != 0 || *end != '\0')
		return 0;
	return v;
}

/*
 * One-line-per-event logging to stderr (see log.h).
 */
#include "server/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static atomic_bool srv_log_verbose_;

void srv_log_set_verbose(bool verbose)
{
	atomic_store(&srv_log_verbose_, verbose);
}

bool srv_log_verbose(void)
{
	return atomic_load(&srv_log_verbose_);
}

static const char *const srv_log_names[] = { "debug", "info", "warn", "error" };

void srv_log(srv_log_level level, const char *fmt, ...)
{
	if (level == SRV_LOG_DEBUG && !srv_log_verbose())
		return;
	char line[1024];
	struct timeval tv;
	struct tm tm;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	int n = (int)strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
	n += snprintf(line + n, sizeof line - (size_t)n, ".%03dZ %s ", (int)(tv.tv_usec / 1000),
		      srv_log_names[level]);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	va_end(ap);
	/* A message longer than the buffer is cut, never split over lines. */
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n > sizeof line - 2)
		n = (int)sizeof line - 2;
	/* Wire text may carry control characters; keep the log one line per
	 * event whatever a client sent. */
	for (int i = 0; i < n; i++)
		if ((unsigned char)line[i] < 0x20)
			line[i] = ' ';
	line[n++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, (size_t)n);
	(void)w;
}

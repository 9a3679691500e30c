/*
 * One-line-per-event logging (see log.h).
 */
#include "server/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static atomic_bool srv_log_verbose_;
static atomic_int srv_log_format_;
static atomic_bool srv_log_journal_;
/* The descriptor lines go to: stderr, or the log file's descriptor, whose
 * number stays the same across reopens (dup2). */
static atomic_int srv_log_fd_ = STDERR_FILENO;
/* The log file's path; changed only by srv_log_open, under the lock that
 * also keeps two reopens from racing. */
static pthread_mutex_t srv_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char *srv_log_path_;

void srv_log_set_verbose(bool verbose)
{
	atomic_store(&srv_log_verbose_, verbose);
}

bool srv_log_verbose(void)
{
	return atomic_load(&srv_log_verbose_);
}

void srv_log_set_format(srv_log_format f)
{
	atomic_store(&srv_log_format_, (int)f);
}

bool srv_log_format_parse(const char *name, srv_log_format *out)
{
	if (strcmp(name, "text") == 0)
		*out = SRV_LOG_TEXT;
	else if (strcmp(name, "json") == 0)
		*out = SRV_LOG_JSON;
	else
		return false;
	return true;
}

void srv_log_detect_journal(void)
{
	/* systemd.exec(5): JOURNAL_STREAM is "DEVICE:INODE" of the stream
	 * stdout/stderr are connected to; a child whose stderr was redirected
	 * elsewhere inherits the variable but not the stream. */
	bool on = false;
	const char *js = getenv("JOURNAL_STREAM");
	struct stat st;
	unsigned long long dev, ino;
	if (js != NULL && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0)
		on = (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
	atomic_store(&srv_log_journal_, on);
}

bool srv_log_journal(void)
{
	return atomic_load(&srv_log_journal_);
}

static int srv_log_open_path(const char *path)
{
	/* O_NONBLOCK for the open only: a FIFO put where the log file was
	 * fails at once (ENXIO without a reader) instead of blocking the loop
	 * that asked for the reopen. The writes themselves block as before. */
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0640);
	if (fd >= 0) {
		int fl = fcntl(fd, F_GETFL);
		if (fl != -1)
			fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	}
	return fd;
}

int srv_log_open(const char *path)
{
	/* Other threads may be writing to the current descriptor while it is
	 * replaced: its number is never closed (it could be reused by a socket
	 * and receive log lines), only pointed elsewhere with dup2. */
	pthread_mutex_lock(&srv_log_mu);
	int rc = 0;
	const int cur = atomic_load(&srv_log_fd_);
	if (path == NULL) {
		if (cur != STDERR_FILENO) {
			/* The file's number becomes one more copy of stderr,
			 * kept open: a writer that loaded it still writes a
			 * whole line to stderr. */
			dup2(STDERR_FILENO, cur);
			atomic_store(&srv_log_fd_, STDERR_FILENO);
		}
		free(srv_log_path_);
		srv_log_path_ = NULL;
	} else {
		char *copy = strdup(path);
		int fd = copy != NULL ? srv_log_open_path(path) : -1;
		if (fd < 0) {
			rc = copy != NULL ? errno : ENOMEM;
			free(copy);
		} else {
			if (cur == STDERR_FILENO) {
				atomic_store(&srv_log_fd_, fd);
			} else {
				if (dup2(fd, cur) < 0)
					rc = errno;
				close(fd);
			}
			if (rc == 0) {
				free(srv_log_path_);
				srv_log_path_ = copy;
			} else {
				free(copy);
			}
		}
	}
	pthread_mutex_unlock(&srv_log_mu);
	return rc;
}

int srv_log_reopen(void)
{
	pthread_mutex_lock(&srv_log_mu);
	int rc = 0;
	if (srv_log_path_ != NULL) {
		int fd = srv_log_open_path(srv_log_path_);
		if (fd < 0) {
			rc = errno;
		} else {
			/* dup2 replaces the old file atomically under the same
			 * number: a write on another thread goes to one or the
			 * other. */
			if (dup2(fd, atomic_load(&srv_log_fd_)) < 0)
				rc = errno;
			close(fd);
		}
	}
	pthread_mutex_unlock(&srv_log_mu);
	return rc;
}

static const char *const srv_log_names[] = { "debug", "info", "warn", "error" };
/* syslog(3) priorities: LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERR. */
static const char srv_log_prio[] = { '7', '6', '4', '3' };

/* Appends s to line as JSON string content (quotes, backslashes and control
 * characters escaped); stops before cap. */
static size_t srv_log_json_escape(char *line, size_t n, size_t cap, const char *s)
{
	for (; *s != '\0' && n + 7 < cap; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\') {
			line[n++] = '\\';
			line[n++] = (char)ch;
		} else if (ch < 0x20) {
			n += (size_t)snprintf(line + n, cap - n, "\\u%04x", ch);
		} else {
			line[n++] = (char)ch;
		}
	}
	return n;
}

size_t srv_log_format_line(char *line, size_t cap, srv_log_level level, const char *text)
{
	char ts[64];
	struct timeval tv;
	struct tm tm;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	size_t t = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + t, sizeof ts - t, ".%03dZ", (int)(tv.tv_usec / 1000));
	/* Only lines that go to journald's stream carry the prefix. */
	const bool journal = srv_log_journal() && atomic_load(&srv_log_fd_) == STDERR_FILENO;
	size_t n = 0;
	if (journal) {
		line[n++] = '<';
		line[n++] = srv_log_prio[level];
		line[n++] = '>';
	}
	if (atomic_load(&srv_log_format_) == SRV_LOG_JSON) {
		n += (size_t)snprintf(line + n, cap - n, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":\"", ts,
				      srv_log_names[level]);
		n = srv_log_json_escape(line, n, cap - 3, text);
		line[n++] = '"';
		line[n++] = '}';
	} else {
		/* journald stamps each line itself. */
		if (journal)
			n += (size_t)snprintf(line + n, cap - n, "%s ", srv_log_names[level]);
		else
			n += (size_t)snprintf(line + n, cap - n, "%s %s ", ts, srv_log_names[level]);
		size_t m = strlen(text);
		/* A message longer than the buffer is cut, never split over
		 * lines. */
		if (m > cap - n - 2)
			m = cap - n - 2;
		/* Wire text may carry control characters; keep the log one
		 * line per event whatever a client sent. */
		for (size_t i = 0; i < m; i++)
			line[n++] = (unsigned char)text[i] < 0x20 ? ' ' : text[i];
	}
	line[n++] = '\n';
	return n;
}

void srv_log(srv_log_level level, const char *fmt, ...)
{
	if (level == SRV_LOG_DEBUG && !srv_log_verbose())
		return;
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	if (m < 0)
		text[0] = '\0';
	/* JSON escapes can grow the text up to six times. */
	char line[1200];
	size_t n = srv_log_format_line(line, sizeof line, level, text);
	ssize_t w = write(atomic_load(&srv_log_fd_), line, n);
	(void)w;
}

/*
 * draped's log: one line per event, "ISO-time level message" (text) or one
 * JSON object per line (--log-format json), on stderr or --log-file.
 *
 * The loop thread and the nng callback threads both log, so each line is
 * formatted into one buffer and written with a single write(2); lines from
 * different threads never interleave. The log file is reopened (SIGUSR1,
 * after logrotate renamed it) by opening the path again and dup2-ing the new
 * descriptor over the old number, so a writer on another thread writes
 * whole lines to either file, never to a closed descriptor.
 *
 * Under journald (JOURNAL_STREAM names the device and inode of our stderr,
 * see systemd.exec(5)) each line starts with its syslog priority, "<3>"
 * error to "<7>" debug, which journald strips and records, so
 * `journalctl -p err` filters; the time is then left to journald.
 */
#ifndef DRAPE_SRV_LOG_H
#define DRAPE_SRV_LOG_H

#include <stdbool.h>
#include <stddef.h>

typedef enum srv_log_level {
	SRV_LOG_DEBUG = 0,
	SRV_LOG_INFO,
	SRV_LOG_WARN,
	SRV_LOG_ERROR
} srv_log_level;

typedef enum srv_log_format {
	SRV_LOG_TEXT = 0,
	SRV_LOG_JSON
} srv_log_format;

/* Debug lines are dropped unless verbose is set (--verbose). */
void srv_log_set_verbose(bool verbose);
bool srv_log_verbose(void);

/* Text or JSON lines. */
void srv_log_set_format(srv_log_format f);
/* Parses "text" or "json"; false for anything else. */
bool srv_log_format_parse(const char *name, srv_log_format *out);

/*
 * Sends the log to path (opened append-only, created 0640) instead of
 * stderr; NULL goes back to stderr. Returns 0 or an errno value, and the
 * log is unchanged on failure.
 */
int srv_log_open(const char *path);
/* Opens the log file's path again (SIGUSR1). Returns 0 (also when there is
 * no log file) or an errno value; on failure the old file stays in use. */
int srv_log_reopen(void);

/* True when stderr is journald's stream (JOURNAL_STREAM matches it); lines
 * on stderr then carry "<N>" priority prefixes. Checked once at start by
 * srv_log_detect_journal, which tests may call again. */
void srv_log_detect_journal(void);
bool srv_log_journal(void);

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void srv_log(srv_log_level level, const char *fmt, ...);

/* Formats one line (without writing it) as srv_log would: for tests.
 * Returns its length including the newline. */
size_t srv_log_format_line(char *line, size_t cap, srv_log_level level, const char *text);

#define srv_debug(...) srv_log(SRV_LOG_DEBUG, __VA_ARGS__)
#define srv_info(...) srv_log(SRV_LOG_INFO, __VA_ARGS__)
#define srv_warn(...) srv_log(SRV_LOG_WARN, __VA_ARGS__)
#define srv_error(...) srv_log(SRV_LOG_ERROR, __VA_ARGS__)

#endif

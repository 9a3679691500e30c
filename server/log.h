/*
 * draped's log: one line per event on stderr, "ISO-time level message".
 *
 * The loop thread and the nng callback threads both log, so each line is
 * formatted into one buffer and written with a single write(2); lines from
 * different threads never interleave.
 */
#ifndef DRAPE_SRV_LOG_H
#define DRAPE_SRV_LOG_H

#include <stdbool.h>

typedef enum srv_log_level {
	SRV_LOG_DEBUG = 0,
	SRV_LOG_INFO,
	SRV_LOG_WARN,
	SRV_LOG_ERROR
} srv_log_level;

/* Debug lines are dropped unless verbose is set (--verbose). */
void srv_log_set_verbose(bool verbose);
bool srv_log_verbose(void);

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void srv_log(srv_log_level level, const char *fmt, ...);

#define srv_debug(...) srv_log(SRV_LOG_DEBUG, __VA_ARGS__)
#define srv_info(...) srv_log(SRV_LOG_INFO, __VA_ARGS__)
#define srv_warn(...) srv_log(SRV_LOG_WARN, __VA_ARGS__)
#define srv_error(...) srv_log(SRV_LOG_ERROR, __VA_ARGS__)

#endif

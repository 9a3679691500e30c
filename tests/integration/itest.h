/* Helpers every integration test shares: a monotonic clock, a polling
 * sleep, stopping a child daemon, removing its folder, finding free
 * loopback ports, and raw REQ calls that bypass libdrape so a test can send
 * exactly the bytes it means to. Compiled once and linked into each
 * program in tests/integration/ (see the Makefile); not a program itself. */
#ifndef DRAPE_TESTS_ITEST_H
#define DRAPE_TESTS_ITEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <nng/nng.h>

#include "proto/proto.h"

/* Milliseconds on the monotonic clock, for deadlines. */
double itest_now_ms(void);

void itest_sleep_ms(long ms);

/* Sends sig to pid and reaps it; if it has not exited after grace_ms it is
 * killed with SIGKILL. Does nothing for pid <= 0. */
void itest_pid_stop(pid_t pid, int sig, double grace_ms);

/* Starts $DRAPED (default build/draped) with args (NULL-terminated), stdin
 * from /dev/null and stdout/stderr appended to log_path, as a service
 * manager would, and records its pid so that itest_kill_all and
 * itest_on_fatal can stop it. Returns the pid or -1. */
pid_t itest_spawn(const char *log_path, const char *const *args);

/* Drops pid from the record (it was reaped by the caller). */
void itest_forget(pid_t pid);

/* Kills pid with SIGKILL, reaps it and drops it from the record. */
void itest_kill(pid_t pid);

/* Kills and reaps every recorded daemon: for atexit and the test's end. */
void itest_kill_all(void);

/* A signal handler that kills every recorded daemon, then re-raises sig,
 * so that a crashing test leaves no daemon behind. */
void itest_on_fatal(int sig);

/* Forks and execs argv[0] with argv (NULL-terminated) as a child that is
 * killed when this test dies (PR_SET_PDEATHSIG), stdout and stderr to log
 * (appended, or truncated first when truncate). Returns the pid or -1. */
pid_t itest_exec_child(const char *const *argv, const char *log, bool truncate);

/* Runs the drape CLI at exe with args (NULL-terminated, without argv[0])
 * and waits for it. env (NULL or NULL-terminated "NAME=value" entries) is
 * added to the child's environment after DRAPE_TOKEN and DRAPE_TLS_* are
 * cleared, so only what the test passes counts. The child dies with the
 * test. Its output goes to out_path, or is inherited when out_path is NULL:
 * with ITEST_OUT_FRESH stdout alone, the file truncated first (for output
 * the test parses); with ITEST_OUT_LOG stdout and stderr, appended (a log).
 * Returns the exit status, or -1 if it could not run or was killed. */
typedef enum itest_out { ITEST_OUT_FRESH, ITEST_OUT_LOG } itest_out;
int itest_run_cli(const char *exe, const char *const *env, const char *const *args, const char *out_path,
		  itest_out mode);

/* Prints, for each child still around that itest_exec_child or itest_spawn
 * started (the newest 32): whether it is alive or has exited and how, each
 * of its threads' state, kernel wait channel and CPU ticks, and the last
 * lines of its log. check.h calls it at a test's first failure. */
void itest_describe_children(void);

/* check.h's hook, defined in itest.c: itest_describe_children. */
void check_fail_hook(void);

/* Polls until a libdrape client connects to url (1), the child pid exits
 * (0; it is reaped) or ms pass (-1). */
int itest_wait_connect(pid_t pid, const char *url, double ms);

/* A draped a test started in a folder of its own. */
typedef struct itest_daemon {
	pid_t pid;     /* -1 when not running */
	int port;      /* its control port, tcp only */
	char dir[256]; /* socket, state and log; removed by itest_daemon_stop */
	char url[320]; /* control URL */
} itest_daemon;

/* Makes d's folder (/tmp/<prefix>-XXXXXX) and control URL: loopback tcp on
 * a free port pair, or ipc in the folder. false on failure (d->dir is empty
 * when the folder could not be made). */
bool itest_daemon_place(itest_daemon *d, const char *prefix, bool tcp);

/* As itest_daemon_place, but the folder is made on a memory file system
 * (/dev/shm, when it is a tmpfs with at least min_free bytes available)
 * and in /tmp otherwise: fsync there costs nothing, for a test that
 * measures the daemon's memory or CPU rather than its disk. */
bool itest_daemon_place_mem(itest_daemon *d, const char *prefix, bool tcp, unsigned long long min_free);

/* Stops d's draped (SIGTERM, SIGKILL after grace_ms) and removes its
 * folder. */
void itest_daemon_stop(itest_daemon *d, double grace_ms);

/* Removes dir and everything under it (no symlinks followed). */
void itest_rm_tree(const char *dir);

/* Whether a TCP port on loopback can be bound right now. */
bool itest_port_free(int port);

/* A loopback TCP port P nobody listens on, with P + 1 free too (where a
 * draped given --stream conventionally puts its PUB stream); -1 if none. */
int itest_free_port(void);

/* Opens a REQ socket dialled to url with the given receive and send
 * timeouts and no receive size limit. 0 or an nng error. */
int itest_req_open(const char *url, int recv_ms, int send_ms, nng_socket *s);

/* Sends raw bytes and receives the raw reply (the caller nng_free's it). */
int itest_raw_call(nng_socket s, const void *data, size_t len, void **rep, size_t *rep_len);

/* A fresh request id (starts at 1; safe across threads). */
uint64_t itest_next_id(void);

/* Encodes req (giving it a fresh id when it has none, safe across threads),
 * sends it and decodes the reply, ok or error. 0 when a reply was decoded;
 * failures are printed. */
int itest_call(nng_socket s, proto_request *req, proto_reply *rep);

#endif

/* Helpers shared by the integration tests; see itest.h. */
#include "tests/integration/itest.h"

#include "drape/drape.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nng/protocol/reqrep0/req.h>

double itest_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void itest_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

void itest_pid_stop(pid_t pid, int sig, double grace_ms)
{
	if (pid <= 0)
		return;
	kill(pid, sig);
	double t0 = itest_now_ms();
	int st;
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (itest_now_ms() - t0 > grace_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		itest_sleep_ms(10);
	}
}

/* The children itest_exec_child and itest_spawn started, with their logs,
 * for check_fail_hook (a ring: the newest ITEST_WATCHED). */
#define ITEST_WATCHED 32
static struct {
	pid_t pid;
	char name[64];
	char log[300];
} watched[ITEST_WATCHED];
static unsigned nwatched;

static void watch(pid_t pid, const char *exe, const char *log)
{
	const char *base = strrchr(exe, '/');
	unsigned k = nwatched++ % ITEST_WATCHED;
	watched[k].pid = pid;
	snprintf(watched[k].name, sizeof watched[k].name, "%s", base ? base + 1 : exe);
	snprintf(watched[k].log, sizeof watched[k].log, "%s", log ? log : "");
}

/* The daemons itest_spawn started and nobody reaped yet (0: free slot). */
#define MAX_DAEMONS 8
static pid_t daemons[MAX_DAEMONS];

pid_t itest_spawn(const char *log_path, const char *const *args)
{
	const char *bin = getenv("DRAPED");
	if (bin == NULL)
		bin = "build/draped";
	const char *argv[40];
	int n = 0;
	argv[n++] = bin;
	for (int i = 0; args[i] != NULL && n < 38; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		if (in >= 0 && in != 0) {
			dup2(in, 0);
			close(in);
		}
		int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, 2);
			dup2(fd, 1);
			if (fd > 2)
				close(fd);
		}
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	watch(pid, bin, log_path);
	for (int i = 0; i < MAX_DAEMONS; i++) {
		if (daemons[i] == 0) {
			daemons[i] = pid;
			break;
		}
	}
	return pid;
}

void itest_forget(pid_t pid)
{
	for (int i = 0; i < MAX_DAEMONS; i++)
		if (daemons[i] == pid)
			daemons[i] = 0;
}

void itest_kill(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	itest_forget(pid);
}

void itest_kill_all(void)
{
	for (int i = 0; i < MAX_DAEMONS; i++) {
		if (daemons[i] > 0) {
			kill(daemons[i], SIGKILL);
			waitpid(daemons[i], NULL, 0);
			daemons[i] = 0;
		}
	}
}

void itest_on_fatal(int sig)
{
	for (int i = 0; i < MAX_DAEMONS; i++)
		if (daemons[i] > 0)
			kill(daemons[i], SIGKILL);
	signal(sig, SIG_DFL);
	raise(sig);
}


/* The fields of /proc/<pid>[/task/<tid>]/stat after the command's closing
 * parenthesis (state first), or "" when it cannot be read. */
static void proc_stat(const char *path, char *out, size_t len)
{
	char buf[1024];
	out[0] = '\0';
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *r = strrchr(buf, ')');
	if (r != NULL && r[1] == ' ')
		snprintf(out, len, "%s", r + 2);
}

static void read_line(const char *path, char *out, size_t len)
{
	out[0] = '\0';
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return;
	if (fgets(out, (int)len, f) != NULL)
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

/* Field k (1 = state) of a stat line from proc_stat, as a number. */
static long long stat_field(const char *st, int k)
{
	const char *p = st;
	for (int i = 1; i < k && p != NULL; i++) {
		p = strchr(p, ' ');
		if (p != NULL)
			p++;
	}
	return p != NULL ? atoll(p) : -1;
}

/* What a failing test prints about each child still around: alive or
 * exited (and how), each thread's state, kernel wait channel and CPU
 * ticks, and the tail of its log; so that a daemon that stopped answering
 * in CI can be told from one that died. */
void itest_describe_children(void)
{
	const pid_t self = getpid();
	for (unsigned i = 0; i < ITEST_WATCHED && i < nwatched; i++) {
		const pid_t pid = watched[i].pid;
		char path[300], st[1024];
		snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
		proc_stat(path, st, sizeof st);
		/* Gone (reaped) or no longer ours (the pid was reused). */
		if (st[0] == '\0' || stat_field(st, 2) != self)
			continue;
		if (st[0] == 'Z') {
			/* Field 50 of the line after the state: exit_code, as wait
			 * would report it. */
			const long long code = stat_field(st, 50);
			printf("  [child %s pid %d has exited: %s %lld]\n", watched[i].name, (int)pid,
			       code >= 0 && WIFSIGNALED((int)code) ? "signal" : "status",
			       code >= 0 && WIFSIGNALED((int)code) ? (long long)WTERMSIG((int)code)
								  : (long long)WEXITSTATUS((int)code));
		} else {
			printf("  [child %s pid %d is alive; its threads (state, wait channel, CPU ticks):]\n",
			       watched[i].name, (int)pid);
			snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
			DIR *d = opendir(path);
			struct dirent *e;
			while (d != NULL && (e = readdir(d)) != NULL) {
				if (e->d_name[0] == '.')
					continue;
				char p2[640], comm[64], wchan[128], tst[1024];
				snprintf(p2, sizeof p2, "%s/%s/comm", path, e->d_name);
				read_line(p2, comm, sizeof comm);
				snprintf(p2, sizeof p2, "%s/%s/wchan", path, e->d_name);
				read_line(p2, wchan, sizeof wchan);
				snprintf(p2, sizeof p2, "%s/%s/stat", path, e->d_name);
				proc_stat(p2, tst, sizeof tst);
				printf("    %s %s %c %s %lld\n", e->d_name, comm, tst[0] ? tst[0] : '?',
				       wchan[0] ? wchan : "-", stat_field(tst, 12) + stat_field(tst, 13));
			}
			if (d != NULL)
				closedir(d);
		}
		if (watched[i].log[0] == '\0')
			continue;
		printf("  [the last lines of %s:]\n", watched[i].log);
		fflush(stdout);
		char cmd[400];
		snprintf(cmd, sizeof cmd, "tail -n 25 '%s' | sed 's/^/    /'", watched[i].log);
		if (system(cmd) != 0)
			printf("    (no log)\n");
	}
	fflush(stdout);
}

/* Called by check.h at a test's first failure (a weak symbol there, so
 * the unit tests, which do not link this file, have none). */
void check_fail_hook(void)
{
	itest_describe_children();
}

pid_t itest_exec_child(const char *const *argv, const char *log, bool truncate)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		int fd = open(log, O_WRONLY | O_CREAT | (truncate ? O_TRUNC : O_APPEND), 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	watch(pid, argv[0], log);
	return pid;
}

int itest_run_cli(const char *exe, const char *const *env, const char *const *args, const char *out_path,
		  itest_out mode)
{
	const char *argv[48];
	int k = 0;
	argv[k++] = exe;
	for (int i = 0; args[i] != NULL; i++) {
		if (k == 47)
			return -1; /* more arguments than any test passes: refuse, do not truncate */
		argv[k++] = args[i];
	}
	argv[k] = NULL;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		if (out_path != NULL) {
			int flags = O_WRONLY | O_CREAT | (mode == ITEST_OUT_FRESH ? O_TRUNC : O_APPEND);
			int fd = open(out_path, flags, 0600);
			if (fd < 0)
				_exit(127);
			dup2(fd, 1);
			if (mode == ITEST_OUT_LOG)
				dup2(fd, 2);
			close(fd);
		}
		unsetenv("DRAPE_TOKEN");
		unsetenv("DRAPE_TLS_CA");
		unsetenv("DRAPE_TLS_CERT");
		unsetenv("DRAPE_TLS_KEY");
		for (int i = 0; env != NULL && env[i] != NULL; i++)
			putenv((char *)env[i]);
		execv(exe, (char *const *)argv);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

int itest_wait_connect(pid_t pid, const char *url, double ms)
{
	double t0 = itest_now_ms();
	while (itest_now_ms() - t0 < ms) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			return 0;
		drape_client *c;
		if (drape_connect(url, NULL, &c, NULL) == DRAPE_OK) {
			drape_close(c);
			return 1;
		}
		itest_sleep_ms(20);
	}
	return -1;
}

static bool daemon_place_in(itest_daemon *d, const char *base, const char *prefix, bool tcp)
{
	snprintf(d->dir, sizeof d->dir, "%s/%s-XXXXXX", base, prefix);
	if (mkdtemp(d->dir) == NULL) {
		d->dir[0] = '\0';
		return false;
	}
	if (tcp) {
		d->port = itest_free_port();
		if (d->port < 0)
			return false;
		snprintf(d->url, sizeof d->url, "tcp://127.0.0.1:%d", d->port);
	} else {
		snprintf(d->url, sizeof d->url, "ipc://%s/ctl.sock", d->dir);
	}
	return true;
}

bool itest_daemon_place(itest_daemon *d, const char *prefix, bool tcp)
{
	return daemon_place_in(d, "/tmp", prefix, tcp);
}

bool itest_daemon_place_mem(itest_daemon *d, const char *prefix, bool tcp, unsigned long long min_free)
{
	struct statfs fs;
	if (statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC &&
	    (unsigned long long)fs.f_bavail * (unsigned long long)fs.f_bsize >= min_free &&
	    access("/dev/shm", W_OK | X_OK) == 0) {
		if (daemon_place_in(d, "/dev/shm", prefix, tcp))
			return true;
		if (d->dir[0] != '\0')
			rmdir(d->dir);
	}
	return daemon_place_in(d, "/tmp", prefix, tcp);
}

void itest_daemon_stop(itest_daemon *d, double grace_ms)
{
	itest_pid_stop(d->pid, SIGTERM, grace_ms);
	d->pid = -1;
	if (d->dir[0]) {
		itest_rm_tree(d->dir);
		d->dir[0] = '\0';
	}
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void itest_rm_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

bool itest_port_free(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

int itest_free_port(void)
{
	for (int tries = 0; tries < 50; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t len = sizeof a;
		if (fd < 0)
			return -1;
		if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
		    getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
			close(fd);
			return -1;
		}
		close(fd);
		int port = ntohs(a.sin_port);
		if (port < 65535 && itest_port_free(port + 1))
			return port;
	}
	return -1;
}

int itest_req_open(const char *url, int recv_ms, int send_ms, nng_socket *s)
{
	int rv = nng_req0_open(s);
	if (rv != 0)
		return rv;
	nng_socket_set_ms(*s, NNG_OPT_RECVTIMEO, recv_ms);
	nng_socket_set_ms(*s, NNG_OPT_SENDTIMEO, send_ms);
	nng_socket_set_size(*s, NNG_OPT_RECVMAXSZ, 0);
	rv = nng_dial(*s, url, NULL, 0);
	if (rv != 0)
		nng_close(*s);
	return rv;
}

int itest_raw_call(nng_socket s, const void *data, size_t len, void **rep, size_t *rep_len)
{
	int rv = nng_send(s, (void *)data, len, 0);
	if (rv != 0)
		return rv;
	return nng_recv(s, rep, rep_len, NNG_FLAG_ALLOC);
}

/* Atomic: test_daemon_raw's concurrent-clients test calls from threads. */
static _Atomic uint64_t next_id = 1;

uint64_t itest_next_id(void)
{
	return next_id++;
}

int itest_call(nng_socket s, proto_request *req, proto_reply *rep)
{
	if (req->id == 0)
		req->id = itest_next_id();
	proto_buf b = {NULL, 0};
	drape_error err;
	if (proto_request_encode(req, &b, &err) != DRAPE_OK) {
		printf("  encode failed: %s\n", err.message);
		return -1;
	}
	void *r = NULL;
	size_t rl = 0;
	int rv = itest_raw_call(s, b.data, b.len, &r, &rl);
	proto_buf_free(&b);
	if (rv != 0) {
		printf("  nng: %s\n", nng_strerror(rv));
		return rv;
	}
	drape_err rc = proto_reply_decode(r, rl, 0, req->op, rep, &err);
	nng_free(r, rl);
	if (rc != DRAPE_OK) {
		printf("  reply decode: %s\n", err.message);
		return -1;
	}
	return 0;
}

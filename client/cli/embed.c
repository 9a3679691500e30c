/*
 * drape CLI: the embedded server. `drape run` without --server starts a
 * private draped listening on an ipc socket in a fresh temporary folder, so
 * a user needs no daemon to try the tool, and stops it at the end.
 *
 * The daemon runs in its own process group, so a Ctrl-C at the terminal
 * reaches only the CLI, which then cancels and stops the daemon in order;
 * PR_SET_PDEATHSIG stops it if the CLI itself dies without cleaning up.
 */
#include "client/cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long the daemon gets to answer hello, and to exit after SIGTERM. */
#define EMBED_START_MS 10000
#define EMBED_STOP_MS 5000

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Finds the draped binary: $DRAPED, else next to this executable. */
static bool find_draped(char *path, size_t size)
{
	const char *env = getenv("DRAPED");
	if (env != NULL && env[0] != '\0') {
		snprintf(path, size, "%s", env);
		return true;
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return false;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash == NULL)
		return false;
	*slash = '\0';
	return snprintf(path, size, "%s/draped", self) < (int)size;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* Prints the end of the daemon's log, which says why it did not start. */
static void print_log(const cli_embed *e)
{
	char path[600];
	snprintf(path, sizeof path, "%s/draped.log", e->dir);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return;
	char line[512];
	int shown = 0;
	while (fgets(line, sizeof line, f) != NULL && shown < 20) {
		fprintf(stderr, "  draped: %s", line);
		shown++;
	}
	fclose(f);
}

int cli_embed_start(cli_embed *e, const cli_opts *o)
{
	memset(e, 0, sizeof *e);
	e->pid = -1;
	char draped[PATH_MAX];
	if (!find_draped(draped, sizeof draped)) {
		fprintf(stderr, "drape: cannot locate draped (set DRAPED to its path, or pass --server URL)\n");
		return CLI_UNAVAILABLE;
	}
	if (access(draped, X_OK) != 0) {
		fprintf(stderr,
			"drape: the embedded server needs draped, but %s is %s (set DRAPED to its path, "
			"or pass --server URL)\n",
			draped, errno == ENOENT ? "missing" : "not executable");
		return CLI_UNAVAILABLE;
	}
	const char *tmp = getenv("TMPDIR");
	if (tmp == NULL || tmp[0] == '\0')
		tmp = "/tmp";
	snprintf(e->dir, sizeof e->dir, "%s/drape-XXXXXX", tmp);
	if (mkdtemp(e->dir) == NULL) {
		fprintf(stderr, "drape: cannot make a temporary folder in %s: %s\n", tmp,
			strerror(errno));
		e->dir[0] = '\0';
		return CLI_IOERR;
	}
	/* A unix socket path holds at most 107 bytes. */
	if (strlen(e->dir) + sizeof "/ctl.sock" > 100) {
		fprintf(stderr, "drape: temporary folder %s is too long for a socket path; set TMPDIR "
				"to a shorter one\n",
			e->dir);
		cli_embed_stop(e);
		return CLI_IOERR;
	}
	snprintf(e->url, sizeof e->url, "ipc://%s/ctl.sock", e->dir);
	char state[4200], log[600];
	/* A resumable batch run keeps the daemon's state (its checkpoints and
	 * frame cache) in DIR/daemon, which outlives this process; otherwise
	 * it is temporary like the socket. */
	if (o->state_dir != NULL)
		snprintf(state, sizeof state, "%s/daemon", o->state_dir);
	else
		snprintf(state, sizeof state, "%s/state", e->dir);
	snprintf(log, sizeof log, "%s/draped.log", e->dir);

	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "drape: fork: %s\n", strerror(errno));
		cli_embed_stop(e);
		return CLI_SOFTWARE;
	}
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		/* The parent may have died between fork and prctl. */
		if (getppid() != parent)
			_exit(127);
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, STDERR_FILENO);
			dup2(fd, STDOUT_FILENO);
			/* With stdout or stderr closed in the CLI, open returned
			 * that very number: closing it would undo the dup2. */
			if (fd > STDERR_FILENO)
				close(fd);
		}
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (o->threads != 0) {
			/* One session: N threads split each frame (the pool),
			 * and at most N frames solve at once. */
			char n[16];
			snprintf(n, sizeof n, "%u", (unsigned)o->threads);
			execl(draped, draped, "--listen", e->url, "--state-dir", state, "--threads", n,
			      "--pool-threads", n, (char *)NULL);
		} else {
			execl(draped, draped, "--listen", e->url, "--state-dir", state, (char *)NULL);
		}
		fprintf(stderr, "exec %s: %s\n", draped, strerror(errno));
		_exit(127);
	}
	e->pid = pid;

	/* Wait until the daemon answers hello, or exits, or time runs out. */
	double start = cli_now_ms();
	drape_error err;
	for (;;) {
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			e->pid = -1;
			fprintf(stderr, "drape: the embedded server %s exited (%s %d) before answering:\n",
				draped, WIFEXITED(status) ? "status" : "signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			print_log(e);
			cli_embed_stop(e);
			return CLI_UNAVAILABLE;
		}
		drape_client *c;
		cli_opts co = *o;
		co.timeout_ms = 2000;
		drape_err rc = cli_connect(e->url, &co, &c, &err);
		if (rc == DRAPE_OK) {
			drape_close(c);
			return CLI_OK;
		}
		if (rc != DRAPE_EUNAVAILABLE || cli_now_ms() - start > EMBED_START_MS ||
		    cli_interrupted) {
			if (cli_interrupted)
				fprintf(stderr, "drape: interrupted while starting the embedded server\n");
			else
				fprintf(stderr, "drape: the embedded server did not answer within %d ms: %s\n",
					EMBED_START_MS, err.message);
			print_log(e);
			cli_embed_stop(e);
			return cli_interrupted ? CLI_INTERRUPTED : CLI_UNAVAILABLE;
		}
		sleep_ms(20);
	}
}

void cli_embed_stop(cli_embed *e)
{
	if (e->pid > 0) {
		kill(e->pid, SIGTERM);
		double start = cli_now_ms();
		int status;
		while (waitpid(e->pid, &status, WNOHANG) == 0) {
			if (cli_now_ms() - start > EMBED_STOP_MS) {
				kill(e->pid, SIGKILL);
				waitpid(e->pid, &status, 0);
				break;
			}
			sleep_ms(10);
		}
		e->pid = -1;
	}
	if (e->dir[0] != '\0') {
		nftw(e->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		e->dir[0] = '\0';
	}
}

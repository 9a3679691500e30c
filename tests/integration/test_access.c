/*
 * Integration tests of access control against a real draped ($DRAPED; the
 * CLI is $DRAPE, else drape next to draped): tls+tcp:// with a self-signed
 * certificate made by the `openssl` command, client certificates, the auth
 * token (library, --token-file and $DRAPE_TOKEN), ipc socket permissions,
 * and protected mode.
 *
 * Every daemon is started with PR_SET_PDEATHSIG so none outlives this
 * program, and stopped (SIGTERM, then SIGKILL) at the end of each test and
 * at exit. Daemons may bind 0.0.0.0, but every connection goes to
 * 127.0.0.1: no traffic ever leaves this machine.
 */
#include "tests/unit/check.h"
#include "tests/integration/grid.h"
#include "tests/integration/itest.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pubsub0/sub.h>
#include <nng/supplemental/tls/tls.h>

#include "drape/drape.h"

#define TOKEN "s3cret-token-for-the-access-test"

/* ---- Processes --------------------------------------------------------------------- */

typedef struct access_daemon {
	pid_t pid;
	char log[400];
} access_daemon;

#define MAX_DAEMONS 8
static access_daemon daemons[MAX_DAEMONS];
static const char *draped_path;
static char drape_path[1024];
static char tmp[256]; /* certificates, token files, state dirs, logs */

static void daemon_stop(access_daemon *d)
{
	itest_pid_stop(d->pid, SIGTERM, 5000);
	d->pid = -1;
}

static void stop_all(void)
{
	for (int i = 0; i < MAX_DAEMONS; i++)
		daemon_stop(&daemons[i]);
}

static void cleanup(void)
{
	stop_all();
	if (tmp[0] != '\0')
		itest_rm_tree(tmp);
}

/* Starts draped with a fresh state directory and the NULL-terminated
 * options in args; stdout and stderr go to d->log. */
static bool daemon_spawn(access_daemon *d, const char *const *args)
{
	static int serial;
	/* A test that failed half way may have left this slot's daemon
	 * running; never lose track of one. */
	daemon_stop(d);
	char state[400];
	int n = serial++;
	snprintf(state, sizeof state, "%s/state%d", tmp, n);
	snprintf(d->log, sizeof d->log, "%s/draped%d.log", tmp, n);
	const char *argv[32];
	int k = 0;
	argv[k++] = draped_path;
	argv[k++] = "--state-dir";
	argv[k++] = state;
	for (int i = 0; args[i] != NULL && k < 31; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	pid_t pid = itest_exec_child(argv, d->log, true);
	if (pid < 0)
		return false;
	d->pid = pid;
	return true;
}

static void print_log(const access_daemon *d)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "sed 's/^/    /' %s | tail -n 20", d->log);
	fflush(stdout);
	if (system(cmd) != 0)
		printf("    (no log)\n");
}

/* Waits until url answers hello with opts; false (log printed) if the
 * daemon exits first or 10 s pass. */
static bool daemon_ready(access_daemon *d, const char *url, const drape_client_opts *opts)
{
	double t0 = itest_now_ms();
	drape_error e = {0};
	while (itest_now_ms() - t0 < 10000) {
		int st;
		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			d->pid = -1;
			printf("  draped exited early (%d); its log:\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
			print_log(d);
			return false;
		}
		drape_client *c;
		if (drape_connect(url, opts, &c, &e) == DRAPE_OK) {
			drape_close(c);
			return true;
		}
		itest_sleep_ms(20);
	}
	printf("  %s did not answer: %s\n", url, e.message);
	return false;
}

/* Waits (bounded) for the daemon to exit by itself; its exit status, or -1
 * if it kept running (then it is stopped) or died of a signal. */
static int daemon_exit_status(access_daemon *d)
{
	double t0 = itest_now_ms();
	while (itest_now_ms() - t0 < 5000) {
		int st;
		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			d->pid = -1;
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		}
		itest_sleep_ms(10);
	}
	daemon_stop(d);
	return -1;
}

/* Whether the daemon's log holds text. */
static bool log_has(const access_daemon *d, const char *text)
{
	FILE *f = fopen(d->log, "r");
	if (f == NULL)
		return false;
	char line[2048];
	bool found = false;
	while (!found && fgets(line, sizeof line, f) != NULL)
		found = strstr(line, text) != NULL;
	fclose(f);
	return found;
}

/* Runs a command line through sh with output to a log; its exit status. */
static int shell(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs the drape CLI with env (NULL-terminated "K=V" list added to this
 * process's environment, DRAPE_TOKEN and DRAPE_TLS_* removed first) and
 * the NULL-terminated args; its exit status. Output goes to tmp/cli.log. */
static int run_cli(const char *const *env, const char *const *args)
{
	char log[400];
	snprintf(log, sizeof log, "%s/cli.log", tmp);
	return itest_run_cli(drape_path, env, args, log, ITEST_OUT_LOG);
}

/* ---- Files ------------------------------------------------------------------------- */

static char server_crt[400], server_key[400], other_crt[400], other_key[400];
static char ca_crt[400], client_crt[400], client_key[400], token_file[400], bad_token_file[400];

static bool write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return false;
	bool ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok;
}

/*
 * The certificates, made once: a self-signed server certificate for
 * localhost (and 127.0.0.1), a second unrelated self-signed one, a CA and a
 * client certificate it signed. EC P-256 keys keep this fast.
 */
static bool make_files(void)
{
	snprintf(server_crt, sizeof server_crt, "%s/server.crt", tmp);
	snprintf(server_key, sizeof server_key, "%s/server.key", tmp);
	snprintf(other_crt, sizeof other_crt, "%s/other.crt", tmp);
	snprintf(other_key, sizeof other_key, "%s/other.key", tmp);
	snprintf(ca_crt, sizeof ca_crt, "%s/ca.crt", tmp);
	snprintf(client_crt, sizeof client_crt, "%s/client.crt", tmp);
	snprintf(client_key, sizeof client_key, "%s/client.key", tmp);
	snprintf(token_file, sizeof token_file, "%s/token", tmp);
	snprintf(bad_token_file, sizeof bad_token_file, "%s/bad-token", tmp);
	const char *ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2";
	const char *quiet = ">/dev/null 2>&1";
	if (shell("openssl req -x509 %s -keyout %s -out %s -subj /CN=localhost "
		  "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 %s",
		  ec, server_key, server_crt, quiet) != 0 ||
	    shell("openssl req -x509 %s -keyout %s -out %s -subj /CN=localhost %s", ec, other_key, other_crt,
		  quiet) != 0 ||
	    shell("openssl req -x509 %s -keyout %s/ca.key -out %s -subj /CN=drape-test-ca "
		  "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign %s",
		  ec, tmp, ca_crt, quiet) != 0 ||
	    shell("openssl req -new %s -keyout %s -out %s/client.csr -subj /CN=artist %s", ec, client_key, tmp,
		  quiet) != 0 ||
	    shell("openssl x509 -req -in %s/client.csr -CA %s -CAkey %s/ca.key -CAcreateserial -days 2 "
		  "-out %s %s",
		  tmp, ca_crt, tmp, client_crt, quiet) != 0) {
		printf("  openssl failed (is the openssl package installed? deploy/deps.sh)\n");
		return false;
	}
	return write_file(token_file, TOKEN "\n") && write_file(bad_token_file, "not-" TOKEN "\n");
}

/* ---- A short session --------------------------------------------------------------- */

enum { NX = 12, NY = 12, NV = NX * NY, NT = 2 * (NX - 1) * (NY - 1), FRAMES = 6 };

static itest_sheet sheet; /* see grid.h */

static drape_err sheet_create(drape_client *c, drape_session *s, drape_error *e)
{
	drape_session_desc d;
	itest_sheet_desc(&sheet, &d);
	d.params.wind[0] = 2.0f;
	d.params.wind[1] = 0.0f;
	d.params.wind[2] = 1.0f;
	d.name = "access";
	return drape_session_create(c, &d, s, NULL, e);
}

/* Creates the sheet, runs FRAMES frames and copies them to out
 * (FRAMES * NV * 3 floats); false with the reason printed. */
static bool run_sheet(drape_client *c, float *out)
{
	drape_session s;
	drape_error e;
	drape_err rc = sheet_create(c, &s, &e);
	if (rc == DRAPE_OK)
		rc = drape_session_run(c, s, FRAMES, NULL, &e);
	for (uint32_t k = 1; rc == DRAPE_OK && k <= FRAMES; k++) {
		drape_frame f;
		rc = drape_next_frame(c, s, &f, 10000, &e);
		if (rc != DRAPE_OK)
			break;
		if (f.index != k || f.vertex_count != NV) {
			printf("  frame %u: got index %u with %u vertices\n", k, f.index, f.vertex_count);
			drape_frame_free(&f);
			return false;
		}
		memcpy(out + (size_t)(k - 1) * NV * 3, f.positions, sizeof(float) * NV * 3);
		drape_frame_free(&f);
	}
	if (rc != DRAPE_OK) {
		printf("  session: %s (%s)\n", e.message, drape_err_name(rc));
		return false;
	}
	drape_session_delete(c, s, NULL);
	return true;
}

/* Client options with the token and TLS files (NULL = not set). */
static drape_client_opts opts_with(const char *token, const char *ca, const char *cert, const char *key)
{
	drape_client_opts o;
	drape_client_opts_default(&o);
	o.request_timeout_ms = 5000;
	o.auth_token = token;
	o.tls_ca_file = ca;
	o.tls_cert_file = cert;
	o.tls_key_file = key;
	return o;
}

/* Starts a TLS daemon (certificate, token, optional client CA) on a free
 * loopback port; its URL in url. */
static bool start_tls(access_daemon *d, char *url, size_t url_len, const char *client_ca)
{
	int port = itest_free_port();
	if (port < 0)
		return false;
	snprintf(url, url_len, "tls+tcp://127.0.0.1:%d", port);
	const char *args[] = {"--listen", url, "--tls-cert", server_crt, "--tls-key", server_key,
			      "--auth-token-file", token_file, client_ca ? "--tls-ca" : NULL, client_ca, NULL};
	if (!daemon_spawn(d, args))
		return false;
	drape_client_opts o = opts_with(TOKEN, server_crt, client_ca ? client_crt : NULL,
					client_ca ? client_key : NULL);
	return daemon_ready(d, url, &o);
}

/* ---- Tests ------------------------------------------------------------------------- */

/* Opens a SUB socket on url, trusting ca for a TLS URL (NULL: nng's
 * default configuration, which trusts nothing), subscribed to everything:
 * what an eavesdropper on a PUB stream would do. */
static bool raw_sub(const char *url, const char *ca, nng_socket *out)
{
	nng_tls_config *t = NULL;
	nng_dialer d;
	int rv = nng_sub0_open(out);
	if (rv != 0)
		return false;
	nng_socket_set(*out, NNG_OPT_SUB_SUBSCRIBE, "", 0);
	nng_socket_set_ms(*out, NNG_OPT_RECVTIMEO, 10000);
	nng_socket_set_ms(*out, NNG_OPT_RECONNMINT, 50);
	rv = nng_dialer_create(&d, *out, url);
	if (rv == 0 && ca != NULL && strncmp(url, "tls+", 4) == 0) {
		rv = nng_tls_config_alloc(&t, NNG_TLS_MODE_CLIENT);
		if (rv == 0)
			rv = nng_tls_config_ca_file(t, ca);
		if (rv == 0)
			rv = nng_tls_config_server_name(t, "localhost");
		if (rv == 0)
			rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, t);
	}
	if (rv == 0)
		rv = nng_dialer_start(d, NNG_FLAG_NONBLOCK);
	if (t != NULL)
		nng_tls_config_free(t);
	if (rv != 0)
		nng_close(*out);
	return rv == 0;
}

/* A session over tls+tcp:// gives the same bits as over plain tcp://. */
static void test_tls_frames_match_plain(void)
{
	static float tls_frames[FRAMES * NV * 3], plain_frames[FRAMES * NV * 3];
	char url[128], plain_url[128];
	CHECK(start_tls(&daemons[0], url, sizeof url, NULL));
	int port = itest_free_port();
	CHECK(port > 0);
	snprintf(plain_url, sizeof plain_url, "tcp://127.0.0.1:%d", port);
	const char *args[] = {"--listen", plain_url, NULL};
	CHECK(daemon_spawn(&daemons[1], args));
	CHECK(daemon_ready(&daemons[1], plain_url, NULL));

	drape_client_opts o = opts_with(TOKEN, server_crt, NULL, NULL);
	drape_client *c;
	drape_error e;
	CHECKF(drape_connect(url, &o, &c, &e) == DRAPE_OK, "%s", e.message);
	drape_server_info info;
	drape_server_info_get(c, &info);
	bool ok = run_sheet(c, tls_frames);
	drape_close(c);
	CHECKF(info.auth_required && info.stream_url[0] == '\0', "auth_required %d, stream \"%.200s\"",
	       info.auth_required, info.stream_url);
	CHECK(ok);

	CHECKF(drape_connect(plain_url, NULL, &c, &e) == DRAPE_OK, "%s", e.message);
	ok = run_sheet(c, plain_frames);
	drape_close(c);
	CHECK(ok);
	CHECK(memcmp(tls_frames, plain_frames, sizeof tls_frames) == 0);
	/* The run moved the cloth, so equal frames are not two copies of the
	 * input. */
	CHECK(memcmp(tls_frames + (FRAMES - 1) * NV * 3, sheet.pos, sizeof(float) * NV * 3) != 0);
	stop_all();
}

/* A client that does not trust the server's certificate is refused at
 * connect, with a message that says what to do. */
static void test_tls_untrusted(void)
{
	char url[128];
	CHECK(start_tls(&daemons[0], url, sizeof url, NULL));
	drape_client *c = NULL;
	drape_error e;

	drape_client_opts o = opts_with(TOKEN, NULL, NULL, NULL);
	drape_err rc = drape_connect(url, &o, &c, &e);
	CHECKF(rc == DRAPE_EUNAVAILABLE, "no CA: %s (%s)", e.message, drape_err_name(rc));
	CHECKF(strstr(e.message, "TLS") != NULL && strstr(e.message, "--tls-ca") != NULL, "%s", e.message);

	o = opts_with(TOKEN, other_crt, NULL, NULL);
	rc = drape_connect(url, &o, &c, &e);
	CHECKF(rc == DRAPE_EUNAVAILABLE, "other CA: %s (%s)", e.message, drape_err_name(rc));
	CHECKF(strstr(e.message, "TLS handshake failed") != NULL, "%s", e.message);

	/* The right CA but a name the certificate does not carry. */
	o = opts_with(TOKEN, server_crt, NULL, NULL);
	o.tls_server_name = "not-this-host.example";
	rc = drape_connect(url, &o, &c, &e);
	CHECKF(rc == DRAPE_EUNAVAILABLE, "wrong name: %s (%s)", e.message, drape_err_name(rc));
	o.tls_server_name = "localhost";
	CHECKF(drape_connect(url, &o, &c, &e) == DRAPE_OK, "localhost: %s", e.message);
	drape_close(c);

	/* Plain tcp to a TLS port gets nowhere either. */
	char plain[128];
	snprintf(plain, sizeof plain, "tcp://%s", url + strlen("tls+tcp://"));
	o = opts_with(TOKEN, NULL, NULL, NULL);
	o.request_timeout_ms = 500;
	CHECK(drape_connect(plain, &o, &c, &e) != DRAPE_OK);
	stop_all();
}

/* With --tls-ca, only clients with a certificate signed by that CA get in. */
static void test_tls_client_certs(void)
{
	char url[128];
	CHECK(start_tls(&daemons[0], url, sizeof url, ca_crt));
	drape_client *c = NULL;
	drape_error e;
	drape_client_opts o = opts_with(TOKEN, server_crt, NULL, NULL);
	o.request_timeout_ms = 1000;
	drape_err rc = drape_connect(url, &o, &c, &e);
	CHECKF(rc != DRAPE_OK, "connected without a client certificate");
	CHECKF(strstr(e.message, "client certificate") != NULL, "%s", e.message);
	/* A certificate the CA did not sign. */
	o = opts_with(TOKEN, server_crt, other_crt, other_key);
	o.request_timeout_ms = 1000;
	rc = drape_connect(url, &o, &c, &e);
	CHECKF(rc != DRAPE_OK, "connected with a certificate from another CA");
	/* Half a pair is a usage error, before any network traffic. */
	o = opts_with(TOKEN, server_crt, client_crt, NULL);
	rc = drape_connect(url, &o, &c, &e);
	CHECKF(rc == DRAPE_EINVAL && strstr(e.message, "tls_key_file") != NULL, "%s", e.message);

	o = opts_with(TOKEN, server_crt, client_crt, client_key);
	CHECKF(drape_connect(url, &o, &c, &e) == DRAPE_OK, "%s", e.message);
	static float frames[FRAMES * NV * 3];
	bool ok = run_sheet(c, frames);
	drape_close(c);
	CHECK(ok);

	/* The CLI takes the same files. */
	const char *args[] = {"sessions", "--server", url, "--token-file", token_file, "--tls-ca", server_crt,
			      "--tls-cert", client_crt, "--tls-key", client_key, NULL};
	CHECK(run_cli(NULL, args) == 0);
	const char *args_nocert[] = {"sessions", "--server", url, "--token-file", token_file, "--tls-ca",
				     server_crt, "--timeout", "1000", NULL};
	CHECK(run_cli(NULL, args_nocert) != 0);
	stop_all();
}

/* Number of sessions, asked with the right token. */
static bool session_count(const char *url, const drape_client_opts *o, uint32_t *n)
{
	drape_client *c;
	drape_server_stats st;
	if (drape_connect(url, o, &c, NULL) != DRAPE_OK)
		return false;
	bool ok = drape_server_stats_get(c, &st, NULL) == DRAPE_OK;
	drape_close(c);
	*n = ok ? st.sessions : 0;
	return ok;
}

/* Requests without the token, or with a wrong one, get EPERM and change
 * nothing; with it they work (over TLS, as the token must never travel in
 * clear text off this machine). */
static void test_auth_token(void)
{
	char url[128];
	CHECK(start_tls(&daemons[0], url, sizeof url, NULL));
	drape_client_opts good = opts_with(TOKEN, server_crt, NULL, NULL);
	drape_client *c;
	drape_error e;
	uint32_t before, after;
	CHECK(session_count(url, &good, &before));

	/* Wrong tokens: none, one byte off at the end, a prefix, an extension,
	 * and the empty string. */
	const char *wrong[] = {NULL, TOKEN "x", "s3cret-token-for-the-access-tesT", "s3cret", "x" TOKEN, ""};
	for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
		drape_client_opts o = opts_with(wrong[i], server_crt, NULL, NULL);
		CHECKF(drape_connect(url, &o, &c, &e) == DRAPE_OK, "hello needs no token: %s", e.message);
		drape_server_info info;
		drape_server_info_get(c, &info);
		drape_session s;
		drape_err rc = sheet_create(c, &s, &e);
		drape_server_stats st;
		drape_err rc2 = drape_server_stats_get(c, &st, NULL);
		drape_session_entry *list = NULL;
		uint32_t n = 0;
		drape_err rc3 = drape_session_list(c, &list, &n, NULL);
		free(list);
		drape_close(c);
		CHECKF(info.auth_required && info.stream_url[0] == '\0',
		       "token %zu: auth_required %d, stream \"%.200s\"", i, info.auth_required, info.stream_url);
		CHECKF(rc == DRAPE_EPERM, "token %zu: create gave %s", i, drape_err_name(rc));
		CHECKF(rc2 == DRAPE_EPERM && rc3 == DRAPE_EPERM, "token %zu: stats %s, list %s", i,
		       drape_err_name(rc2), drape_err_name(rc3));
	}
	CHECK(session_count(url, &good, &after));
	CHECKF(after == before, "sessions %u before, %u after refused requests", before, after);

	CHECK(drape_connect(url, &good, &c, &e) == DRAPE_OK);
	drape_session s;
	drape_err rc = sheet_create(c, &s, &e);
	drape_close(c);
	CHECKF(rc == DRAPE_OK, "%s", e.message);
	CHECK(session_count(url, &good, &after));
	CHECK(after == before + 1);

	/* The CLI: --token-file, $DRAPE_TOKEN, and the TLS CA from
	 * --tls-ca or $DRAPE_TLS_CA. Exit 77 is "not permitted". */
	char env_token[128], env_bad[128], env_ca[512];
	snprintf(env_token, sizeof env_token, "DRAPE_TOKEN=%s", TOKEN);
	snprintf(env_bad, sizeof env_bad, "DRAPE_TOKEN=wrong-%s", TOKEN);
	snprintf(env_ca, sizeof env_ca, "DRAPE_TLS_CA=%s", server_crt);
	const char *a_file[] = {"sessions", "--server", url, "--token-file", token_file, "--tls-ca", server_crt, NULL};
	const char *a_bad[] = {"sessions", "--server", url, "--token-file", bad_token_file, "--tls-ca", server_crt,
			       NULL};
	const char *a_none[] = {"sessions", "--server", url, "--tls-ca", server_crt, NULL};
	const char *a_env[] = {"sessions", "--server", url, NULL};
	const char *e_tok[] = {env_token, env_ca, NULL};
	const char *e_bad[] = {env_bad, env_ca, NULL};
	const char *e_noca[] = {env_token, NULL};
	int r;
	CHECKF((r = run_cli(NULL, a_file)) == 0, "--token-file: exit %d", r);
	CHECKF((r = run_cli(NULL, a_bad)) == 77, "wrong --token-file: exit %d", r);
	CHECKF((r = run_cli(NULL, a_none)) == 77, "no token: exit %d", r);
	CHECKF((r = run_cli(e_tok, a_env)) == 0, "DRAPE_TOKEN + DRAPE_TLS_CA: exit %d", r);
	CHECKF((r = run_cli(e_bad, a_env)) == 77, "wrong DRAPE_TOKEN: exit %d", r);
	CHECKF((r = run_cli(e_noca, a_env)) == 69, "no CA: exit %d", r);
	CHECK(session_count(url, &good, &after));
	CHECK(after == before + 1);
	stop_all();
}

/* What a client that must not read session s gets: every way of asking
 * for its frames fails with EPERM, and it gets no frame. */
static bool refused(const char *url, const drape_client_opts *o, drape_session s, const char *who)
{
	drape_client *c;
	drape_error e;
	drape_err rc = drape_connect(url, o, &c, &e);
	if (rc != DRAPE_OK) {
		printf("  %s: connect: %s\n", who, e.message);
		return false;
	}
	drape_frame f;
	drape_err next = drape_next_frame(c, s, &f, 5000, &e);
	if (next == DRAPE_OK)
		drape_frame_free(&f);
	drape_frame *fs = NULL;
	uint32_t n = 0;
	drape_err get = drape_frames_get(c, s, 1, FRAMES, &fs, &n, NULL, &e);
	if (get == DRAPE_OK)
		drape_frames_free(fs, n);
	drape_close(c);
	if (next != DRAPE_EPERM || get != DRAPE_EPERM) {
		printf("  %s: next_frame %s, frames.get %s (%u frames)\n", who, drape_err_name(next),
		       drape_err_name(get), get == DRAPE_OK ? n : 0);
		return false;
	}
	return true;
}

/*
 * Frames reach only clients holding the auth token and the session's owner
 * token, over ipc, tcp and tls+tcp, each with --auth-token-file: while the
 * owner runs a session and receives every frame, a SUB socket on the
 * address a PUB stream used to take (PATH.stream, port + 1) subscribed to
 * everything, a client with the auth token and no owner token or a wrong
 * one, and a client with the owner token and no auth token all get
 * nothing. The owner's frames are the same bits on the three transports.
 */
static void test_frames_only_to_token_holders(void)
{
	static float frames[3][FRAMES * NV * 3];
	const char *names[3] = {"ipc", "tcp", "tls+tcp"};
	for (int t = 0; t < 3; t++) {
		char url[400], eaves[420];
		int port = t > 0 ? itest_free_port() : 0;
		CHECK(port >= 0);
		if (t == 0) {
			snprintf(url, sizeof url, "ipc://%s/frames.sock", tmp);
			snprintf(eaves, sizeof eaves, "%s.stream", url);
		} else {
			snprintf(url, sizeof url, "%s://127.0.0.1:%d", names[t], port);
			snprintf(eaves, sizeof eaves, "%s://127.0.0.1:%d", names[t], port + 1);
		}
		const char *args[] = {"--listen", url, "--auth-token-file", token_file, "--tls-cert", server_crt,
				      "--tls-key", server_key, NULL};
		CHECK(daemon_spawn(&daemons[0], args));
		drape_client_opts good = opts_with(TOKEN, t == 2 ? server_crt : NULL, NULL, NULL);
		CHECK(daemon_ready(&daemons[0], url, &good));

		nng_socket sub;
		CHECKF(raw_sub(eaves, server_crt, &sub), "%s: SUB socket on %s", names[t], eaves);
		drape_client *c;
		drape_error e;
		CHECKF(drape_connect(url, &good, &c, &e) == DRAPE_OK, "%s: %s", names[t], e.message);
		drape_session s;
		CHECKF(sheet_create(c, &s, &e) == DRAPE_OK, "%s: %s", names[t], e.message);
		CHECK_OK(drape_session_run(c, s, FRAMES, NULL, &e));

		/* While the run goes on: others are refused. */
		drape_session no_owner = {.id = s.id};
		drape_session wrong_owner = s;
		wrong_owner.token[0] ^= 1;
		CHECK(refused(url, &good, no_owner, "auth token, no owner token"));
		CHECK(refused(url, &good, wrong_owner, "auth token, wrong owner token"));
		drape_client_opts no_auth = opts_with(NULL, t == 2 ? server_crt : NULL, NULL, NULL);
		CHECK(refused(url, &no_auth, s, "owner token, no auth token"));

		/* The owner gets every frame. */
		uint32_t got = 0;
		for (uint32_t k = 1; k <= FRAMES; k++) {
			drape_frame f;
			drape_err rc = drape_next_frame(c, s, &f, 10000, &e);
			CHECKF(rc == DRAPE_OK, "%s: frame %u: %s", names[t], k, e.message);
			if (rc != DRAPE_OK)
				break;
			CHECK(f.index == k && f.vertex_count == NV);
			memcpy(frames[t] + (size_t)(k - 1) * NV * 3, f.positions, sizeof(float) * NV * 3);
			drape_frame_free(&f);
			got++;
		}
		drape_frame f;
		CHECKF(drape_next_frame(c, s, &f, 10000, &e) == DRAPE_EDONE, "%s: after the run: %s", names[t],
		       e.message);
		CHECK(got == FRAMES);
		/* Every frame was solved before the owner got it, so a stream
		 * would have sent it to the subscriber by now. */
		void *msg = NULL;
		size_t len = 0;
		nng_socket_set_ms(sub, NNG_OPT_RECVTIMEO, 500);
		int rv = nng_recv(sub, &msg, &len, NNG_FLAG_ALLOC);
		if (rv == 0)
			nng_free(msg, len);
		nng_close(sub);
		CHECKF(rv == NNG_ETIMEDOUT, "%s: subscriber on %s: %s", names[t], eaves,
		       rv == 0 ? "got a message" : nng_strerror(rv));
		drape_session_delete(c, s, NULL);
		drape_close(c);
		stop_all();
	}
	CHECK(memcmp(frames[0], frames[1], sizeof frames[0]) == 0);
	CHECK(memcmp(frames[0], frames[2], sizeof frames[0]) == 0);
	CHECK(memcmp(frames[0] + (FRAMES - 1) * NV * 3, sheet.pos, sizeof(float) * NV * 3) != 0);
}

/* An open PUB stream cannot go with an auth token: draped refuses to start
 * (64) and names --stream. */
static void test_stream_refused_with_token(void)
{
	char url[400], stream[420];
	snprintf(url, sizeof url, "ipc://%s/refuse.sock", tmp);
	snprintf(stream, sizeof stream, "%s.stream", url);
	const char *args[] = {"--listen", url, "--stream", stream, "--auth-token-file", token_file, NULL};
	CHECK(daemon_spawn(&daemons[0], args));
	int st = daemon_exit_status(&daemons[0]);
	CHECKF(st == 64, "exit %d", st);
	CHECK(log_has(&daemons[0], "--stream") && log_has(&daemons[0], "--auth-token-file"));
}

/* ipc sockets (control, and a --stream one) are created 0660, or
 * --ipc-mode. */
static void test_ipc_mode(void)
{
	const char *modes[] = {NULL, "0600", "0666"};
	const unsigned want[] = {0660, 0600, 0666};
	for (int i = 0; i < 3; i++) {
		char path[400], url[420], stream[420];
		snprintf(path, sizeof path, "%s/ctl%d.sock", tmp, i);
		snprintf(url, sizeof url, "ipc://%s", path);
		snprintf(stream, sizeof stream, "%s.stream", path);
		char stream_url[440];
		snprintf(stream_url, sizeof stream_url, "ipc://%s", stream);
		const char *args[] = {"--listen", url, "--stream", stream_url, modes[i] ? "--ipc-mode" : NULL, modes[i],
				      NULL};
		CHECK(daemon_spawn(&daemons[0], args));
		CHECK(daemon_ready(&daemons[0], url, NULL));
		struct stat st, st2;
		CHECK(stat(path, &st) == 0 && stat(stream, &st2) == 0);
		stop_all();
		CHECK(S_ISSOCK(st.st_mode));
		CHECKF((st.st_mode & 07777) == want[i], "%s: mode %o, expected %o", path, st.st_mode & 07777, want[i]);
		CHECKF((st2.st_mode & 07777) == want[i], "%s: mode %o, expected %o", stream, st2.st_mode & 07777,
		       want[i]);
	}
}

/* Protected mode: a non-loopback address needs TLS and a token, or
 * --allow-remote (which is logged). Binding 0.0.0.0 is fine; connections
 * go to 127.0.0.1 only. */
static void test_protected_mode(void)
{
	int port = itest_free_port(), port2 = itest_free_port();
	CHECK(port > 0 && port2 > 0 && port2 != port && port2 != port + 1 && port2 + 1 != port);
	char any[128], any_tls[128], local[128], local_tls[128];
	snprintf(any, sizeof any, "tcp://0.0.0.0:%d", port);
	snprintf(any_tls, sizeof any_tls, "tls+tcp://0.0.0.0:%d", port);
	snprintf(local, sizeof local, "tcp://127.0.0.1:%d", port);
	snprintf(local_tls, sizeof local_tls, "tls+tcp://127.0.0.1:%d", port);
	char local_tls2[128];
	snprintf(local_tls2, sizeof local_tls2, "tls+tcp://127.0.0.1:%d", port2);

	/* Plain tcp on every interface, no TLS, no token: refused. */
	const char *a1[] = {"--listen", any, NULL};
	CHECK(daemon_spawn(&daemons[0], a1));
	int st = daemon_exit_status(&daemons[0]);
	CHECKF(st == 64, "exit %d", st);
	CHECK(log_has(&daemons[0], "--allow-remote") && log_has(&daemons[0], "0.0.0.0"));

	/* TLS but no token: refused. */
	const char *a2[] = {"--listen", any_tls, "--tls-cert", server_crt, "--tls-key", server_key, NULL};
	CHECK(daemon_spawn(&daemons[0], a2));
	CHECKF((st = daemon_exit_status(&daemons[0])) == 64, "TLS without token: exit %d", st);

	/* A token but plain tcp: refused. */
	const char *a3[] = {"--listen", any, "--auth-token-file", token_file, NULL};
	CHECK(daemon_spawn(&daemons[0], a3));
	CHECKF((st = daemon_exit_status(&daemons[0])) == 64, "token without TLS: exit %d", st);

	/* Plain tcp on every interface next to a TLS listener, with a token:
	 * the plain one is still refused. */
	const char *a4[] = {"--listen", any, "--listen", local_tls2, "--tls-cert", server_crt, "--tls-key",
			    server_key, "--auth-token-file", token_file, NULL};
	CHECK(daemon_spawn(&daemons[0], a4));
	CHECKF((st = daemon_exit_status(&daemons[0])) == 64, "plain next to TLS: exit %d", st);

	/* TLS and a token: starts, no warning. */
	const char *a5[] = {"--listen", any_tls, "--tls-cert", server_crt, "--tls-key", server_key,
			    "--auth-token-file", token_file, NULL};
	CHECK(daemon_spawn(&daemons[0], a5));
	drape_client_opts o = opts_with(TOKEN, server_crt, NULL, NULL);
	CHECK(daemon_ready(&daemons[0], local_tls, &o));
	CHECK(!log_has(&daemons[0], "WARNING"));
	stop_all();

	/* --allow-remote: starts, answers on loopback, and warns. */
	const char *a6[] = {"--listen", any, "--allow-remote", NULL};
	CHECK(daemon_spawn(&daemons[0], a6));
	CHECK(daemon_ready(&daemons[0], local, NULL));
	CHECK(log_has(&daemons[0], "WARNING") && log_has(&daemons[0], any));
	stop_all();
}

/* Bad TLS files stop the daemon with the file named: unreadable 66,
 * unusable 69; a TLS URL without a certificate 64. */
static void test_tls_config_errors(void)
{
	int port = itest_free_port();
	CHECK(port > 0);
	char url[128], missing[400];
	snprintf(url, sizeof url, "tls+tcp://127.0.0.1:%d", port);
	snprintf(missing, sizeof missing, "%s/no-such.crt", tmp);
	int st;

	const char *a1[] = {"--listen", url, NULL};
	CHECK(daemon_spawn(&daemons[0], a1));
	CHECKF((st = daemon_exit_status(&daemons[0])) == 64, "no certificate: exit %d", st);
	CHECK(log_has(&daemons[0], "--tls-cert"));

	const char *a2[] = {"--listen", url, "--tls-cert", missing, "--tls-key", server_key, NULL};
	CHECK(daemon_spawn(&daemons[0], a2));
	CHECKF((st = daemon_exit_status(&daemons[0])) == 66, "missing certificate: exit %d", st);
	CHECK(log_has(&daemons[0], missing));

	/* A key where the certificate should be, and the other way round. */
	const char *a3[] = {"--listen", url, "--tls-cert", server_key, "--tls-key", server_key, NULL};
	CHECK(daemon_spawn(&daemons[0], a3));
	CHECKF((st = daemon_exit_status(&daemons[0])) == 69, "key as certificate: exit %d", st);
	CHECK(log_has(&daemons[0], "--tls-cert") && log_has(&daemons[0], server_key));

	const char *a4[] = {"--listen", url, "--tls-cert", server_crt, "--tls-key", server_crt, NULL};
	CHECK(daemon_spawn(&daemons[0], a4));
	CHECKF((st = daemon_exit_status(&daemons[0])) == 69, "certificate as key: exit %d", st);
	CHECK(log_has(&daemons[0], "--tls-key") && log_has(&daemons[0], server_crt));
}

static const check_test tests[] = {
	CHECK_TEST(test_tls_frames_match_plain),
	CHECK_TEST(test_tls_untrusted),    CHECK_TEST(test_tls_client_certs),
	CHECK_TEST(test_auth_token),       CHECK_TEST(test_frames_only_to_token_holders),
	CHECK_TEST(test_stream_refused_with_token),
	CHECK_TEST(test_ipc_mode),
	CHECK_TEST(test_protected_mode),   CHECK_TEST(test_tls_config_errors),
};

static void on_fatal(int sig)
{
	stop_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(int argc, char **argv)
{
	draped_path = getenv("DRAPED");
	if (draped_path == NULL || access(draped_path, X_OK) != 0) {
		printf("FAIL setup: $DRAPED must name the draped binary\n0 passed, 1 failed\n");
		return 1;
	}
	const char *cli = getenv("DRAPE");
	if (cli != NULL && cli[0] != '\0') {
		snprintf(drape_path, sizeof drape_path, "%s", cli);
	} else {
		snprintf(drape_path, sizeof drape_path, "%s", draped_path);
		char *slash = strrchr(drape_path, '/');
		snprintf(slash ? slash + 1 : drape_path, sizeof drape_path - (size_t)(slash ? slash + 1 - drape_path : 0),
			 "drape");
	}
	snprintf(tmp, sizeof tmp, "/tmp/drape-access-XXXXXX");
	if (mkdtemp(tmp) == NULL) {
		printf("FAIL setup: mkdtemp: %s\n0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	for (int i = 0; i < MAX_DAEMONS; i++)
		daemons[i].pid = -1;
	atexit(cleanup);
	signal(SIGINT, on_fatal);
	signal(SIGTERM, on_fatal);
	signal(SIGSEGV, on_fatal);
	signal(SIGABRT, on_fatal);
	signal(SIGPIPE, SIG_IGN);
	if (!itest_sheet_make(&sheet, NX, NY)) {
		printf("FAIL setup: out of memory\n0 passed, 1 failed\n");
		return 1;
	}
	if (!make_files()) {
		printf("FAIL setup: cannot make the test certificates\n0 passed, 1 failed\n");
		return 1;
	}
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}

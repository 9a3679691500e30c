/*
 * Users and roles of a real draped ($DRAPED) started with --users-file
 * (issue 20): user A cannot see, cancel, delete or read frames of user B's
 * session -- each refused with EPERM, even holding B's owner token -- while
 * an admin can; session.list shows a user their own sessions and an admin
 * every user's (all); the per-user session limit holds across three
 * clients of one user and replaces the per-client one; the CLI (`drape
 * admin hash-token` writes the users file, `drape sessions` shows owner
 * and host, `--all` is for admins). Every wait polls with a generous
 * deadline; the daemon dies with this program.
 */
#include "tests/unit/check.h"
#include "tests/integration/grid.h"
#include "tests/integration/itest.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drape/drape.h"

static itest_daemon dm = {.pid = -1};
static const char *draped_path;
static char drape_path[1024];
static char tok_ana[300], tok_bob[300], tok_boss[300], users_path[300];

static void stop_all(void)
{
	itest_daemon_stop(&dm, 10000);
}

/* Runs the drape CLI with args (NULL-ended), stdout to out_path; its exit
 * status, or -1. */
static int run_cli(const char *const *args, const char *out_path)
{
	return itest_run_cli(drape_path, NULL, args, out_path, ITEST_OUT_FRESH);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	char *b = calloc(1, 1 << 16);
	if (b != NULL)
		fread(b, 1, (1 << 16) - 1, f);
	fclose(f);
	return b;
}

static char *read_token(const char *path)
{
	char *t = slurp(path);
	if (t != NULL)
		t[strcspn(t, "\r\n")] = '\0';
	return t;
}

/* A pinned 12 x 12 sheet. */
#define NX 12u
#define NV (NX * NX)
#define NT (2u * (NX - 1u) * (NX - 1u))
static itest_sheet sheet; /* see grid.h */

static drape_err sheet_create(drape_client *c, drape_session *s, drape_error *e)
{
	drape_session_desc d;
	itest_sheet_desc(&sheet, &d);
	return drape_session_create(c, &d, s, NULL, e);
}

static drape_client *connect_as(const char *token_path)
{
	char *tok = read_token(token_path);
	drape_client_opts o;
	drape_client_opts_default(&o);
	o.auth_token = tok;
	drape_client *c = NULL;
	drape_error e;
	if (drape_connect(dm.url, &o, &c, &e) != DRAPE_OK) {
		printf("  connect: %s\n", e.message);
		c = NULL;
	}
	free(tok);
	return c;
}

static bool listed(drape_client *c, bool all, uint32_t id, drape_session_entry *out)
{
	drape_session_entry *e = NULL;
	uint32_t n = 0;
	drape_error err;
	if (drape_session_list_all(c, all, &e, &n, &err) != DRAPE_OK)
		return false;
	bool found = false;
	for (uint32_t i = 0; i < n; i++)
		if (e[i].id == id) {
			found = true;
			if (out != NULL)
				*out = e[i];
		}
	free(e);
	return found;
}

/* Runs frames frames of s and waits (bounded) until they are all solved. */
static bool run_to(drape_client *c, drape_session s, uint32_t frames)
{
	drape_error e;
	if (drape_session_run(c, s, frames, NULL, &e) != DRAPE_OK) {
		printf("  run: %s\n", e.message);
		return false;
	}
	const double until = itest_now_ms() + 60000;
	while (itest_now_ms() < until) {
		drape_status st;
		if (drape_session_status(c, s, &st, &e) == DRAPE_OK && st.state == DRAPE_STATE_DONE)
			return true;
		itest_sleep_ms(20);
	}
	return false;
}

static void test_other_user_refused_admin_allowed(void)
{
	drape_client *ana = connect_as(tok_ana), *bob = connect_as(tok_bob), *boss = connect_as(tok_boss);
	CHECK(ana != NULL && bob != NULL && boss != NULL);
	if (ana == NULL || bob == NULL || boss == NULL)
		goto out;
	drape_session s;
	drape_error e;
	CHECK_OK(sheet_create(ana, &s, &e));
	CHECK(run_to(ana, s, 4));

	/* bob holds ana's owner token (leaked, guessed): still refused, each
	 * with EPERM, and the session is unchanged. */
	drape_status st;
	CHECK(drape_session_status(bob, s, &st, &e) == DRAPE_EPERM);
	drape_frame *fr = NULL;
	uint32_t got = 0;
	CHECK(drape_frames_get(bob, s, 1, 4, &fr, &got, NULL, &e) == DRAPE_EPERM);
	drape_state cs;
	uint32_t done;
	CHECK(drape_session_cancel(bob, s, &cs, &done, &e) == DRAPE_EPERM);
	CHECK(drape_session_delete(bob, s, &e) == DRAPE_EPERM);
	drape_session no_token = {.id = s.id};
	CHECK(drape_session_delete(bob, no_token, &e) == DRAPE_EPERM);
	CHECK(drape_session_run(bob, s, 2, NULL, &e) == DRAPE_EPERM);
	/* Not in bob's list, and bob may not ask for everyone's. */
	CHECK(!listed(bob, false, s.id, NULL));
	drape_session_entry *all = NULL;
	uint32_t n = 0;
	CHECK(drape_session_list_all(bob, true, &all, &n, &e) == DRAPE_EPERM);
	free(all);
	CHECK_OK(drape_session_status(ana, s, &st, &e));
	CHECK(st.state == DRAPE_STATE_DONE && st.frames_done == 4);

	/* ana sees it with owner and host; the admin sees it with all only. */
	drape_session_entry ent;
	CHECK(listed(ana, false, s.id, &ent));
	CHECKF(strcmp(ent.owner, "ana") == 0 && ent.host[0] != '\0' && ent.created > 0 && ent.frames_done == 4 &&
		       ent.frames_target == 4 && ent.memory > 0 && ent.disk >= 4u * NV * 12u,
	       "owner '%s' host '%s' created %llu done %u target %u memory %llu disk %llu", ent.owner, ent.host,
	       (unsigned long long)ent.created, ent.frames_done, ent.frames_target,
	       (unsigned long long)ent.memory, (unsigned long long)ent.disk);
	CHECK(!listed(boss, false, s.id, NULL));
	CHECK(listed(boss, true, s.id, &ent) && strcmp(ent.owner, "ana") == 0);

	/* The admin: status, frames, cancel and delete, without a token. */
	CHECK_OK(drape_session_status(boss, no_token, &st, &e));
	CHECK_OK(drape_frames_get(boss, no_token, 1, 4, &fr, &got, NULL, &e));
	CHECK(got == 4);
	drape_frames_free(fr, got);
	CHECK_OK(drape_session_run(boss, no_token, 1000000, NULL, &e));
	CHECK_OK(drape_session_cancel(boss, no_token, &cs, &done, &e));
	CHECK_OK(drape_session_delete(boss, no_token, &e));
	CHECK(drape_session_status(ana, s, &st, &e) == DRAPE_ENOTFOUND);
out:
	drape_close(ana);
	drape_close(bob);
	drape_close(boss);
}

/* Three clients of one user share one quota (--max-sessions-per-user 2),
 * although each is under --max-sessions-per-client 1; another user is not
 * affected. */
static void test_user_limit_across_clients(void)
{
	drape_client *c[3] = {connect_as(tok_ana), connect_as(tok_ana), connect_as(tok_ana)};
	drape_client *bob = connect_as(tok_bob);
	CHECK(c[0] && c[1] && c[2] && bob);
	if (!(c[0] && c[1] && c[2] && bob))
		goto out;
	drape_session s[3], sb;
	drape_error e;
	CHECK_OK(sheet_create(c[0], &s[0], &e));
	CHECK_OK(sheet_create(c[1], &s[1], &e));
	drape_err rc = sheet_create(c[2], &s[2], &e);
	CHECKF(rc == DRAPE_ELIMIT && strstr(e.message, "max_sessions_per_user") != NULL &&
		       strstr(e.message, "ana") != NULL,
	       "third create of ana: %s %s", drape_err_name(rc), e.message);
	CHECK_OK(sheet_create(bob, &sb, &e));
	/* Freed quota is usable again from any of ana's clients. */
	CHECK_OK(drape_session_delete(c[0], s[0], &e));
	CHECK_OK(sheet_create(c[2], &s[2], &e));
	drape_session_delete(c[1], s[1], NULL);
	drape_session_delete(c[2], s[2], NULL);
	drape_session_delete(bob, sb, NULL);
out:
	for (int i = 0; i < 3; i++)
		drape_close(c[i]);
	drape_close(bob);
}

/* The per-user limit also holds across three drape processes. */
static void test_user_limit_across_processes(void)
{
	char scene[300], out[300];
	snprintf(scene, sizeof scene, "%s/scene.json", dm.dir);
	FILE *f = fopen(scene, "w");
	CHECK(f != NULL);
	if (f == NULL)
		return;
	fprintf(f, "{\"frames\": 1000000, \"substeps\": 2, \"iterations\": 5, \"cloth\": {\"mesh\": {\"grid\": "
		   "{\"size\": [1, 1], \"resolution\": [8, 8], \"center\": [0, 1, 0], \"normal\": [0, 0, 1]}}, "
		   "\"pins\": {\"group\": \"top\"}}}\n");
	fclose(f);
	pid_t p[3];
	for (int i = 0; i < 3; i++) {
		char log[320];
		snprintf(log, sizeof log, "%s/run%d.log", dm.dir, i);
		const char *argv[] = {drape_path, "run", scene, "--server", dm.url, "--token-file", tok_ana,
				      "--quiet", NULL};
		p[i] = itest_exec_child(argv, log, true);
	}
	/* Two run; the third is refused (ELIMIT: exit 65 or 75) at once. */
	int refused = 0;
	const double until = itest_now_ms() + 60000;
	while (refused == 0 && itest_now_ms() < until) {
		for (int i = 0; i < 3; i++) {
			int st;
			if (p[i] > 0 && waitpid(p[i], &st, WNOHANG) == p[i]) {
				p[i] = -1;
				refused++;
			}
		}
		itest_sleep_ms(20);
	}
	CHECK(refused == 1);
	snprintf(out, sizeof out, "%s/sessions.txt", dm.dir);
	const char *ls[] = {"sessions", "--server", dm.url, "--token-file", tok_ana, "--json", NULL};
	CHECK(run_cli(ls, out) == 0);
	char *txt = slurp(out);
	int lines = 0;
	for (char *q = txt; q != NULL && (q = strstr(q, "\"owner\":\"ana\"")) != NULL; q++)
		lines++;
	CHECKF(lines == 2, "ana's sessions listed: %d\n%s", lines, txt ? txt : "");
	free(txt);
	/* --all: refused for ana (77), fine for the admin. */
	const char *all_ana[] = {"sessions", "--server", dm.url, "--token-file", tok_ana, "--all", NULL};
	CHECK(run_cli(all_ana, out) == 77);
	const char *all_boss[] = {"sessions", "--server", dm.url, "--token-file", tok_boss, "--all", NULL};
	CHECK(run_cli(all_boss, out) == 0);
	txt = slurp(out);
	CHECKF(txt != NULL && strstr(txt, "OWNER") != NULL && strstr(txt, "ana") != NULL, "%s", txt ? txt : "");
	free(txt);
	for (int i = 0; i < 3; i++)
		if (p[i] > 0) {
			kill(p[i], SIGINT);
			waitpid(p[i], NULL, 0);
		}
	/* The CLIs cancel on SIGINT; clean up what is left as the admin. */
	drape_client *boss = connect_as(tok_boss);
	drape_session_entry *e = NULL;
	uint32_t n = 0;
	drape_error err;
	if (boss != NULL && drape_session_list_all(boss, true, &e, &n, &err) == DRAPE_OK)
		for (uint32_t i = 0; i < n; i++)
			drape_session_delete(boss, (drape_session){.id = e[i].id}, NULL);
	free(e);
	drape_close(boss);
}

/* --max-vertices-per-user and --max-disk-per-user, on a second daemon
 * with the same users: each refused with ELIMIT naming the limit and the
 * user, and another user's quota is their own. */
static void test_vertex_and_disk_limits(void)
{
	itest_daemon d2 = {.pid = -1};
	CHECK(itest_daemon_place(&d2, "drape-users2", false));
	char state[300], log[300];
	snprintf(state, sizeof state, "%s/state", d2.dir);
	snprintf(log, sizeof log, "%s/draped.log", d2.dir);
	/* One frame record of the 144-vertex sheet is a little over 1.7 kB:
	 * 40 kB of disk is about 20 frames. */
	const char *args[] = {draped_path, "--listen", d2.url, "--state-dir", state, "--users-file", users_path,
			      "--max-vertices-per-user", "300", "--max-disk-per-user", "40000", NULL};
	d2.pid = itest_exec_child(args, log, false);
	CHECK(d2.pid > 0 && itest_wait_connect(d2.pid, d2.url, 20000) == 1);
	char *ta = read_token(tok_ana), *tb = read_token(tok_bob);
	drape_client_opts o;
	drape_client_opts_default(&o);
	drape_client *ana = NULL, *bob = NULL;
	drape_error e;
	o.auth_token = ta;
	CHECK_OK(drape_connect(d2.url, &o, &ana, &e));
	o.auth_token = tb;
	CHECK_OK(drape_connect(d2.url, &o, &bob, &e));
	free(ta);
	free(tb);
	if (ana == NULL || bob == NULL)
		goto out;
	drape_session a1, a2, a3, b1;
	CHECK_OK(sheet_create(ana, &a1, &e));
	CHECK_OK(sheet_create(ana, &a2, &e));
	drape_err rc = sheet_create(ana, &a3, &e); /* 3 x 144 > 300 */
	CHECKF(rc == DRAPE_ELIMIT && strstr(e.message, "max_vertices_per_user") != NULL && strstr(e.message, "ana"),
	       "%s %s", drape_err_name(rc), e.message);
	CHECK_OK(sheet_create(bob, &b1, &e));
	/* Disk: 10 frames fit; 40 more of a second session would not. */
	CHECK(run_to(ana, a1, 10));
	rc = drape_session_run(ana, a2, 40, NULL, &e);
	CHECKF(rc == DRAPE_ELIMIT && strstr(e.message, "max_disk_per_user") != NULL && strstr(e.message, "ana"),
	       "%s %s", drape_err_name(rc), e.message);
	drape_status st;
	CHECK_OK(drape_session_status(ana, a2, &st, &e));
	CHECK(st.state == DRAPE_STATE_IDLE && st.frames_done == 0);
	/* bob's disk is bob's. */
	CHECK(run_to(bob, b1, 15));
	CHECK(run_to(ana, a2, 5));
out:
	drape_close(ana);
	drape_close(bob);
	itest_daemon_stop(&d2, 10000);
}

static void test_bad_users_file_refused(void)
{
	char bad[300], log[300];
	snprintf(bad, sizeof bad, "%s/bad-users", dm.dir);
	snprintf(log, sizeof log, "%s/bad.log", dm.dir);
	FILE *f = fopen(bad, "w");
	CHECK(f != NULL);
	if (f == NULL)
		return;
	char *good = slurp(users_path);
	fprintf(f, "%s# then a broken line\nmallory admin sha256$zz$00\n", good ? good : "");
	free(good);
	fclose(f);
	const char *argv[] = {draped_path, "--users-file", bad, "--listen", "ipc:///nonexistent/x", NULL};
	pid_t p = itest_exec_child(argv, log, true);
	int st = 0;
	CHECK(p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 64);
	char *txt = slurp(log);
	CHECKF(txt != NULL && strstr(txt, "line 6") != NULL && strstr(txt, "salt") != NULL, "%s", txt ? txt : "");
	free(txt);
}

/* The session's lines in the log name its user and peer: its creation,
 * its run, the run's end and its deletion (grep them by user). */
static void test_session_log_lines_name_the_user(void)
{
	char log[300];
	snprintf(log, sizeof log, "%s/draped.log", dm.dir);
	drape_client *c = connect_as(tok_ana);
	CHECK(c != NULL);
	if (c == NULL)
		return;
	drape_session s;
	drape_error e;
	CHECK_OK(sheet_create(c, &s, &e));
	CHECK(run_to(c, s, 2));
	CHECK_OK(drape_session_delete(c, s, &e));
	drape_close(c);
	char want[4][160];
	snprintf(want[0], sizeof want[0], "session %u created: ", (unsigned)s.id);
	snprintf(want[1], sizeof want[1], "session %u runs from frame 0 to 2, user ana, from ", (unsigned)s.id);
	snprintf(want[2], sizeof want[2], "session %u done at frame 2, user ana, from ", (unsigned)s.id);
	snprintf(want[3], sizeof want[3], "session %u deleted (", (unsigned)s.id);
	const double until = itest_now_ms() + 20000;
	int found = 0;
	while (itest_now_ms() < until) {
		char *txt = slurp(log);
		found = 0;
		for (int i = 0; i < 4 && txt != NULL; i++) {
			const char *at = strstr(txt, want[i]);
			const char *eol = at ? strchr(at, '\n') : NULL;
			/* Each of those lines carries ", user ana, from " before its end. */
			const char *u = at ? strstr(at, ", user ana, from ") : NULL;
			found += at != NULL && u != NULL && (eol == NULL || u < eol);
		}
		free(txt);
		if (found == 4)
			break;
		itest_sleep_ms(50);
	}
	CHECKF(found == 4, "%d of 4 session lines name user ana", found);
}

/* 1 when the user of token_path is let in (a listing answers), 0 when
 * refused with EPERM, -1 otherwise. */
static int let_in(const char *token_path)
{
	drape_client *c = connect_as(token_path);
	if (c == NULL)
		return 0; /* hello itself refused */
	/* session.list needs a user (ping and hello do not). */
	drape_session_entry *list = NULL;
	uint32_t n = 0;
	drape_error e;
	drape_err rc = drape_session_list_all(c, false, &list, &n, &e);
	free(list);
	drape_close(c);
	return rc == DRAPE_OK ? 1 : rc == DRAPE_EPERM ? 0 : -1;
}

/* Polls let_in until it says want (bounded). */
static bool wait_let_in(const char *token_path, int want)
{
	const double until = itest_now_ms() + 20000;
	while (itest_now_ms() < until) {
		if (let_in(token_path) == want)
			return true;
		itest_sleep_ms(50);
	}
	return false;
}

/* SIGHUP reloads the users file (issue 20): a user taken out is refused
 * from the next request on while the others go on; a file with a bad line
 * is refused by the reload, which keeps the table it had (and says so in
 * the log); the original file back, the user is let in again. */
static void test_users_file_reloads_on_sighup(void)
{
	char *orig = slurp(users_path), log[300];
	snprintf(log, sizeof log, "%s/draped.log", dm.dir);
	CHECK(orig != NULL);
	if (orig == NULL)
		return;
	CHECK(let_in(tok_bob) == 1 && let_in(tok_ana) == 1);
	/* Without bob's line. */
	char *bob = strstr(orig, "\nbob ");
	CHECK(bob != NULL);
	if (bob == NULL) {
		free(orig);
		return;
	}
	char *end = strchr(bob + 1, '\n');
	FILE *f = fopen(users_path, "w");
	CHECK(f != NULL);
	if (f == NULL) {
		free(orig);
		return;
	}
	fwrite(orig, 1, (size_t)(bob - orig) + 1, f);
	if (end != NULL)
		fputs(end + 1, f);
	fclose(f);
	CHECK(kill(dm.pid, SIGHUP) == 0);
	CHECKF(wait_let_in(tok_bob, 0), "bob still let in after the reload");
	CHECK(let_in(tok_ana) == 1 && let_in(tok_boss) == 1);
	/* A broken line: the reload fails and the table stays as it was. */
	f = fopen(users_path, "a");
	fputs("eve admin sha256$nothex$00\n", f);
	fclose(f);
	CHECK(kill(dm.pid, SIGHUP) == 0);
	const double until = itest_now_ms() + 20000;
	bool failed_logged = false;
	while (!failed_logged && itest_now_ms() < until) {
		char *txt = slurp(log);
		failed_logged = txt != NULL && strstr(txt, "reload failed") != NULL;
		free(txt);
		if (!failed_logged)
			itest_sleep_ms(50);
	}
	CHECK(failed_logged);
	CHECK(let_in(tok_ana) == 1 && let_in(tok_bob) == 0);
	/* The original back. */
	f = fopen(users_path, "w");
	fputs(orig, f);
	fclose(f);
	CHECK(kill(dm.pid, SIGHUP) == 0);
	CHECKF(wait_let_in(tok_bob, 1), "bob not let in after the file came back");
	free(orig);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_other_user_refused_admin_allowed),
		CHECK_TEST(test_user_limit_across_clients),
		CHECK_TEST(test_user_limit_across_processes),
		CHECK_TEST(test_vertex_and_disk_limits),
		CHECK_TEST(test_bad_users_file_refused),
		CHECK_TEST(test_users_file_reloads_on_sighup),
		CHECK_TEST(test_session_log_lines_name_the_user),
	};
	draped_path = getenv("DRAPED");
	const char *dp = getenv("DRAPE");
	if (draped_path == NULL || access(draped_path, X_OK) != 0 || dp == NULL || access(dp, X_OK) != 0) {
		printf("FAIL setup: DRAPED and DRAPE must name the binaries\n");
		printf("0 passed, 1 failed\n");
		return 1;
	}
	snprintf(drape_path, sizeof drape_path, "%s", dp);
	signal(SIGPIPE, SIG_IGN);
	atexit(stop_all);
	if (!itest_sheet_make(&sheet, NX, NX)) {
		printf("FAIL setup: out of memory\n0 passed, 1 failed\n");
		return 1;
	}
	if (!itest_daemon_place(&dm, "drape-users", false)) {
		printf("FAIL setup: no folder\n0 passed, 1 failed\n");
		return 1;
	}
	snprintf(tok_ana, sizeof tok_ana, "%s/ana.tok", dm.dir);
	snprintf(tok_bob, sizeof tok_bob, "%s/bob.tok", dm.dir);
	snprintf(tok_boss, sizeof tok_boss, "%s/boss.tok", dm.dir);
	snprintf(users_path, sizeof users_path, "%s/users", dm.dir);
	/* The users file, as an administrator writes it. */
	FILE *uf = fopen(users_path, "w");
	if (uf == NULL) {
		printf("FAIL setup: users file\n0 passed, 1 failed\n");
		return 1;
	}
	fprintf(uf, "# drape users\n");
	fclose(uf);
	const struct {
		const char *name, *role, *tok;
	} who[] = {{"ana", "user", tok_ana}, {"bob", "user", tok_bob}, {"boss", "admin", tok_boss}};
	for (int i = 0; i < 3; i++) {
		char line[300];
		snprintf(line, sizeof line, "%s/line", dm.dir);
		const char *args[] = {"admin", "hash-token", who[i].name, who[i].role, "--token-file", who[i].tok, NULL};
		char *txt = NULL;
		if (run_cli(args, line) != 0 || (txt = slurp(line)) == NULL) {
			printf("FAIL setup: drape admin hash-token\n0 passed, 1 failed\n");
			return 1;
		}
		uf = fopen(users_path, "a");
		fputs(txt, uf);
		fclose(uf);
		free(txt);
	}
	char state[300], log[300];
	snprintf(state, sizeof state, "%s/state", dm.dir);
	snprintf(log, sizeof log, "%s/draped.log", dm.dir);
	const char *args[] = {draped_path, "--listen", dm.url, "--state-dir", state, "--users-file", users_path,
			      "--max-sessions-per-user", "2", "--max-sessions-per-client", "1", "--threads", "2", NULL};
	dm.pid = itest_exec_child(args, log, false);
	if (dm.pid < 0 || itest_wait_connect(dm.pid, dm.url, 20000) != 1) {
		printf("FAIL setup: draped did not start (see %s)\n0 passed, 1 failed\n", log);
		return 1;
	}
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}

/*
 * Integration tests of the caches DCCs read, against a real draped: the
 * session.topology op through libdrape, and `drape export`, `drape attach`
 * and `drape run` with --format, --rm and --json through the CLI. Every
 * file the CLI writes is read back (PC2 and MDD with libdrape's point-cache
 * readers, OBJ with its OBJ reader) and compared bit for bit with the
 * frames the daemon's solver produced, as libdrape received them.
 *
 * Needs $DRAPED and $DRAPE (tests/run.sh sets both).
 */
#include "tests/unit/check.h"
#include "tests/integration/itest.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/obj.h"
#include "client/pointcache.h"
#include "drape/drape.h"
#include "drape/topology.h"

#define NX 12
#define NY 9
#define FRAMES 10

static itest_daemon dmn = {.pid = -1};
static const char *drape_path;

static void stop_all(void)
{
	itest_daemon_stop(&dmn, 5000);
}

/* A sheet hanging from its top row, with UVs, at 30 fps. */
typedef struct sheet {
	float pos[NX * NY * 3];
	float uvs[NX * NY * 2];
	uint32_t tri[(NX - 1) * (NY - 1) * 6];
	uint32_t pins[NX];
} sheet;

static void sheet_make(sheet *s)
{
	for (uint32_t j = 0; j < NY; j++)
		for (uint32_t i = 0; i < NX; i++) {
			uint32_t v = j * NX + i;
			s->pos[3 * v] = (float)i / (NX - 1) - 0.5f;
			s->pos[3 * v + 1] = 1.0f + (float)j / (NY - 1);
			s->pos[3 * v + 2] = 0.01f * (float)((i * 7 + j * 3) % 5);
			s->uvs[2 * v] = (float)i / (NX - 1);
			s->uvs[2 * v + 1] = (float)j / (NY - 1);
		}
	uint32_t t = 0;
	for (uint32_t j = 0; j + 1 < NY; j++)
		for (uint32_t i = 0; i + 1 < NX; i++) {
			uint32_t a = j * NX + i, b = a + 1, c = a + NX, d = c + 1;
			uint32_t q[6] = {a, b, d, a, d, c};
			memcpy(&s->tri[6 * t++], q, sizeof q);
		}
	for (uint32_t i = 0; i < NX; i++)
		s->pins[i] = (NY - 1) * NX + i;
}

static drape_err create(drape_client *c, const sheet *sh, drape_session *s)
{
	drape_session_desc d;
	drape_session_desc_default(&d);
	d.positions = sh->pos;
	d.vertex_count = NX * NY;
	d.triangles = sh->tri;
	d.triangle_count = (NX - 1) * (NY - 1) * 2;
	d.uvs = sh->uvs;
	d.pins = sh->pins;
	d.pin_count = NX;
	d.params.fps = 30.0f;
	d.params.substeps = 2;
	d.params.wind[0] = 0.0f;
	d.params.wind[1] = 0.0f;
	d.params.wind[2] = 3.0f;
	drape_error e;
	drape_err rc = drape_session_create(c, &d, s, NULL, &e);
	if (rc != DRAPE_OK)
		printf("  session.create: %s\n", e.message);
	return rc;
}

/* Runs a session to the end and keeps every frame libdrape received. */
static bool solve(drape_client *c, drape_session *s, float *frames)
{
	sheet sh;
	sheet_make(&sh);
	if (create(c, &sh, s) != DRAPE_OK || drape_session_run(c, *s, FRAMES, NULL, NULL) != DRAPE_OK)
		return false;
	uint32_t got = 0;
	double deadline = itest_now_ms() + 60000;
	while (got < FRAMES && itest_now_ms() < deadline) {
		drape_frame f;
		drape_err rc = drape_next_frame(c, *s, &f, 1000, NULL);
		if (rc == DRAPE_ETIMEDOUT)
			continue;
		if (rc != DRAPE_OK)
			return false;
		if (f.index == got + 1 && f.vertex_count == NX * NY)
			memcpy(frames + (size_t)got++ * NX * NY * 3, f.positions, NX * NY * 12);
		drape_frame_free(&f);
	}
	/* Export wants a finished run: wait for the state to say so. */
	while (itest_now_ms() < deadline) {
		drape_status st;
		if (drape_session_status(c, *s, &st, NULL) == DRAPE_OK && st.state == DRAPE_STATE_DONE)
			return got == FRAMES;
		itest_sleep_ms(20);
	}
	return false;
}

/* Runs the drape CLI with args (NULL-terminated, after the binary); stdout
 * and stderr to log. Returns its exit status, or -1. */
static int drape_cli(const char *log, const char *const *args)
{
	const char *argv[24];
	int n = 0;
	argv[n++] = drape_path;
	for (; *args != NULL && n < 23; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	pid_t pid = itest_exec_child(argv, log, true);
	if (pid < 0)
		return -1;
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void print_log(const char *log)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "sed 's/^/    /' %s | tail -n 8", log);
	fflush(stdout);
	if (system(cmd) != 0)
		printf("    (no log)\n");
}

/* ---- session.topology ------------------------------------------------------------ */

static void test_topology_as_created(void)
{
	drape_client *c;
	CHECK_OK(drape_connect(dmn.url, NULL, &c, NULL));
	sheet sh;
	sheet_make(&sh);
	drape_session s;
	CHECK_OK(create(c, &sh, &s));
	drape_topology t;
	drape_error e;
	drape_err rc = drape_session_topology(c, s, &t, &e);
	int bad = 0;
	if (rc == DRAPE_OK) {
		if (t.vertex_count != NX * NY || t.triangle_count != (NX - 1) * (NY - 1) * 2)
			bad = 1;
		else if (memcmp(t.positions, sh.pos, sizeof sh.pos) || memcmp(t.triangles, sh.tri, sizeof sh.tri))
			bad = 2;
		else if (t.uvs == NULL || memcmp(t.uvs, sh.uvs, sizeof sh.uvs))
			bad = 3;
		else if (t.fps != 30.0f)
			bad = 4;
		drape_topology_free(&t);
	}
	/* The mesh is the owner's, like the frames: refused without its token. */
	drape_session none = {.id = s.id};
	drape_topology u, before;
	memset(&u, 0xab, sizeof u);
	memcpy(&before, &u, sizeof u);
	drape_err no_token = drape_session_topology(c, none, &u, NULL);
	bool untouched = memcmp(&u, &before, sizeof u) == 0;
	drape_session missing = s;
	missing.id = s.id + 1000;
	drape_err nf = drape_session_topology(c, missing, &t, NULL);
	drape_session_delete(c, s, NULL);
	drape_close(c);
	CHECKF(rc == DRAPE_OK, "%s", e.message);
	CHECKF(bad == 0, "failure %d", bad);
	CHECKF(no_token == DRAPE_EPERM, "without the token: %s", drape_err_name(no_token));
	CHECK(untouched);
	CHECKF(nf == DRAPE_ENOTFOUND, "unknown session: %s", drape_err_name(nf));
}

/* ---- drape export and attach ------------------------------------------------------ */

static int compare_anim(const drape_anim *a, const float *frames, uint32_t first)
{
	if (a->vertex_count != NX * NY || a->sample_count != FRAMES - first + 1)
		return 1;
	for (uint32_t j = 0; j < a->sample_count; j++)
		if (memcmp(a->positions + (size_t)j * NX * NY * 3, frames + (size_t)(first - 1 + j) * NX * NY * 3,
			   NX * NY * 12) != 0)
			return 2;
	return 0;
}

static void test_export_formats_bitwise(void)
{
	drape_client *c;
	CHECK_OK(drape_connect(dmn.url, NULL, &c, NULL));
	static float frames[FRAMES * NX * NY * 3];
	drape_session s;
	bool solved = solve(c, &s, frames);
	drape_close(c);
	CHECK(solved);
	char id[16], hex[DRAPE_TOKEN_HEX_SIZE], out[400], log[400];
	snprintf(id, sizeof id, "%u", (unsigned)s.id);
	drape_token_format(s.token, hex);
	snprintf(log, sizeof log, "%s/cli.log", dmn.dir);
	int bad = 0;
	static const char *const formats[] = {"pc2", "mdd", "obj", "geo"};
	for (int f = 0; f < 4 && !bad; f++) {
		snprintf(out, sizeof out, "%s/export-%s", dmn.dir, formats[f]);
		const char *args[] = {"export", id, "--server", dmn.url, "--owner-token", hex, "--format",
				      formats[f], "--out", out, "--quiet", NULL};
		int x = drape_cli(log, args);
		if (x != 0) {
			printf("  drape export --format %s: exit %d\n", formats[f], x);
			print_log(log);
			bad = 10 + f;
			break;
		}
		char path[512];
		drape_anim a;
		drape_error e;
		if (f == 0 || f == 1) {
			snprintf(path, sizeof path, "%s/cloth.%s", out, formats[f]);
			drape_err rc = f == 0 ? drape_pc2_read_file(path, NULL, &a, &e)
					      : drape_mdd_read_file(path, NULL, &a, &e);
			if (rc != DRAPE_OK) {
				printf("  %s\n", e.message);
				bad = 20 + f;
				break;
			}
			bad = compare_anim(&a, frames, 1);
			if (!bad && f == 0 && a.start != 1.0f)
				bad = 3;
			if (!bad && f == 1 && a.times[FRAMES - 1] != (float)FRAMES / 30.0f)
				bad = 4;
			drape_anim_free(&a);
		} else if (f == 2) {
			/* The faces come from the server: every frame is a whole mesh. */
			for (uint32_t k = 1; k <= FRAMES && !bad; k++) {
				snprintf(path, sizeof path, "%s/frame_%04u.obj", out, k);
				drape_obj_mesh m;
				if (drape_obj_read_file(path, NULL, &m, &e) != DRAPE_OK) {
					printf("  %s\n", e.message);
					bad = 30;
					break;
				}
				if (m.vertex_count != NX * NY || m.triangle_count != (NX - 1) * (NY - 1) * 2 ||
				    memcmp(m.positions, frames + (size_t)(k - 1) * NX * NY * 3, NX * NY * 12) != 0)
					bad = 31;
				drape_obj_free(&m);
			}
		} else {
			struct stat sb;
			for (uint32_t k = 1; k <= FRAMES && !bad; k++) {
				snprintf(path, sizeof path, "%s/frame_%04u.geo", out, k);
				if (stat(path, &sb) != 0 || sb.st_size < 1000)
					bad = 40;
			}
		}
	}
	/* attach of the finished session without --scene: whole OBJ files too
	 * (before session.topology they held vertices only). */
	if (!bad) {
		snprintf(out, sizeof out, "%s/attach-obj", dmn.dir);
		const char *args[] = {"attach", id, "--server", dmn.url, "--owner-token", hex, "--out", out, "--quiet",
				      NULL};
		int x = drape_cli(log, args);
		char path[512];
		snprintf(path, sizeof path, "%s/frame_%04u.obj", out, FRAMES);
		drape_obj_mesh m;
		if (x != 0 || drape_obj_read_file(path, NULL, &m, NULL) != DRAPE_OK) {
			print_log(log);
			bad = 50;
		} else {
			if (m.triangle_count != (NX - 1) * (NY - 1) * 2 ||
			    memcmp(m.positions, frames + (size_t)(FRAMES - 1) * NX * NY * 3, NX * NY * 12) != 0)
				bad = 51;
			drape_obj_free(&m);
		}
	}
	/* --from 4: the PC2 starts at frame 4. */
	if (!bad) {
		snprintf(out, sizeof out, "%s/export-from", dmn.dir);
		const char *args[] = {"export", id, "--server", dmn.url, "--owner-token", hex, "--format", "pc2",
				      "--from", "4", "--out", out, "--quiet", NULL};
		char path[512];
		snprintf(path, sizeof path, "%s/cloth.pc2", out);
		drape_anim a;
		if (drape_cli(log, args) != 0 || drape_pc2_read_file(path, NULL, &a, NULL) != DRAPE_OK) {
			print_log(log);
			bad = 60;
		} else {
			if (a.start != 4.0f || compare_anim(&a, frames, 4) != 0)
				bad = 61;
			drape_anim_free(&a);
		}
	}
	CHECKF(bad == 0, "failure %d", bad);
}

/* Export refuses a running session (75), a missing --out (64), an unknown
 * format naming it (64), and a wrong token (77); none of them writes. */
static void test_export_refusals(void)
{
	drape_client *c;
	CHECK_OK(drape_connect(dmn.url, NULL, &c, NULL));
	sheet sh;
	sheet_make(&sh);
	drape_session s;
	CHECK_OK(create(c, &sh, &s));
	CHECK_OK(drape_session_run(c, s, 0, NULL, NULL)); /* until cancelled */
	char id[16], hex[DRAPE_TOKEN_HEX_SIZE], out[400], log[400];
	snprintf(id, sizeof id, "%u", (unsigned)s.id);
	drape_token_format(s.token, hex);
	snprintf(log, sizeof log, "%s/refuse.log", dmn.dir);
	snprintf(out, sizeof out, "%s/refused", dmn.dir);
	const char *running[] = {"export", id, "--server", dmn.url, "--owner-token", hex, "--out", out, NULL};
	int x_running = drape_cli(log, running);
	const char *no_out[] = {"export", id, "--server", dmn.url, "--owner-token", hex, NULL};
	int x_no_out = drape_cli(log, no_out);
	const char *bad_fmt[] = {"export", id, "--server", dmn.url, "--owner-token", hex, "--format", "fbx",
				 "--out", out, NULL};
	int x_fmt = drape_cli(log, bad_fmt);
	char msg[512] = "";
	FILE *f = fopen(log, "r");
	if (f != NULL) {
		size_t n = fread(msg, 1, sizeof msg - 1, f);
		msg[n] = '\0';
		fclose(f);
	}
	char wrong[DRAPE_TOKEN_HEX_SIZE];
	memcpy(wrong, hex, sizeof wrong);
	wrong[0] = wrong[0] == '0' ? '1' : '0';
	drape_session_cancel(c, s, NULL, NULL, NULL);
	const char *bad_tok[] = {"export", id, "--server", dmn.url, "--owner-token", wrong, "--out", out, NULL};
	int x_tok = drape_cli(log, bad_tok);
	struct stat sb;
	bool wrote = stat(out, &sb) == 0 && sb.st_nlink > 2;
	drape_session_delete(c, s, NULL);
	drape_close(c);
	CHECKF(x_running == 75, "export of a running session: exit %d", x_running);
	CHECKF(x_no_out == 64, "export without --out: exit %d", x_no_out);
	CHECKF(x_fmt == 64 && strstr(msg, "format") && strstr(msg, "fbx"), "bad format: exit %d, \"%s\"", x_fmt, msg);
	CHECKF(x_tok == 77, "wrong token: exit %d", x_tok);
	CHECK(!wrote);
}

/* ---- drape run --json --rm ----------------------------------------------------------- */

static void test_run_json_first_line_and_rm(void)
{
	char scene[400], out[400], log[400];
	snprintf(scene, sizeof scene, "%s/sheet.json", dmn.dir);
	FILE *f = fopen(scene, "w");
	CHECK(f != NULL);
	fprintf(f, "{\"frames\": 6, \"cloth\": {\"mesh\": {\"grid\": {\"size\": [1, 1], \"resolution\": [8, 8], "
		   "\"center\": [0, 1, 0], \"normal\": [0, 1, 0]}}, \"pins\": {\"group\": \"corners\"}}}\n");
	fclose(f);
	uint32_t ids[2] = {0, 0};
	char tokens[2][64] = {"", ""};
	int x[2];
	for (int rm = 0; rm < 2; rm++) {
		snprintf(out, sizeof out, "%s/run-%d", dmn.dir, rm);
		snprintf(log, sizeof log, "%s/run-%d.log", dmn.dir, rm);
		const char *with[] = {"run", scene, "--server", dmn.url, "--json", "--format", "pc2", "--out", out,
				      "--rm", NULL};
		const char *without[] = {"run", scene, "--server", dmn.url, "--json", "--format", "pc2", "--out", out,
					 NULL};
		x[rm] = drape_cli(log, rm ? with : without);
		/* The log holds stderr too: the first JSON line is the first
		 * line starting with '{'. */
		f = fopen(log, "r");
		char line[1024];
		while (f != NULL && fgets(line, sizeof line, f) != NULL) {
			if (line[0] != '{')
				continue;
			unsigned u;
			char tok[64];
			if (sscanf(line, "{\"session\":%u,\"owner_token\":\"%63[0-9a-f]\"", &u, tok) == 2) {
				ids[rm] = u;
				snprintf(tokens[rm], sizeof tokens[rm], "%s", tok);
			}
			break;
		}
		if (f != NULL)
			fclose(f);
		if (x[rm] != 0)
			print_log(log);
	}
	drape_client *c;
	CHECK_OK(drape_connect(dmn.url, NULL, &c, NULL));
	drape_status st;
	drape_session kept = {.id = ids[0]}, removed = {.id = ids[1]};
	drape_err kept_rc = drape_session_status(c, kept, &st, NULL);
	drape_err removed_rc = drape_session_status(c, removed, &st, NULL);
	if (kept_rc == DRAPE_OK && drape_token_parse(tokens[0], kept.token) == DRAPE_OK)
		drape_session_delete(c, kept, NULL);
	drape_close(c);
	char path[512];
	snprintf(path, sizeof path, "%s/run-1/cloth.pc2", dmn.dir);
	drape_anim a;
	drape_err rd = drape_pc2_read_file(path, NULL, &a, NULL);
	uint32_t samples = rd == DRAPE_OK ? a.sample_count : 0;
	if (rd == DRAPE_OK)
		drape_anim_free(&a);
	CHECKF(x[0] == 0 && x[1] == 0, "exits %d %d", x[0], x[1]);
	CHECKF(ids[0] > 0 && ids[1] > 0 && strlen(tokens[0]) == 32 && strlen(tokens[1]) == 32,
	       "first JSON lines name sessions %u, %u with tokens \"%s\", \"%s\"", ids[0], ids[1], tokens[0],
	       tokens[1]);
	CHECKF(kept_rc == DRAPE_OK, "the session run without --rm is gone: %s", drape_err_name(kept_rc));
	CHECKF(removed_rc == DRAPE_ENOTFOUND, "the session run with --rm: %s", drape_err_name(removed_rc));
	CHECKF(rd == DRAPE_OK && samples == 6, "cloth.pc2: %s, %u samples", drape_err_name(rd), samples);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_topology_as_created),
		CHECK_TEST(test_export_formats_bitwise),
		CHECK_TEST(test_export_refusals),
		CHECK_TEST(test_run_json_first_line_and_rm),
	};
	const char *draped = getenv("DRAPED");
	drape_path = getenv("DRAPE");
	if (draped == NULL || access(draped, X_OK) != 0 || drape_path == NULL || access(drape_path, X_OK) != 0) {
		printf("FAIL setup: DRAPED and DRAPE must name the draped and drape binaries\n");
		printf("0 passed, 1 failed\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	atexit(stop_all);
	if (!itest_daemon_place(&dmn, "drape-cache", false)) {
		printf("FAIL setup: no folder for draped\n0 passed, 1 failed\n");
		return 1;
	}
	char state[300], log[300];
	snprintf(state, sizeof state, "%s/state", dmn.dir);
	snprintf(log, sizeof log, "%s/draped.log", dmn.dir);
	const char *dargv[] = {draped, "--listen", dmn.url, "--state-dir", state, NULL};
	dmn.pid = itest_exec_child(dargv, log, false);
	if (dmn.pid < 0 || itest_wait_connect(dmn.pid, dmn.url, 10000) != 1) {
		dmn.pid = -1;
		printf("FAIL setup: draped did not start\n0 passed, 1 failed\n");
		return 1;
	}
	/* The CLI's token cache stays in the daemon's folder. */
	char cache[300];
	snprintf(cache, sizeof cache, "%s/cache", dmn.dir);
	setenv("XDG_CACHE_HOME", cache, 1);
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}

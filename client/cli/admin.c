/*
 * drape CLI: the commands that inspect and manage sessions (status,
 * sessions, cancel, delete) and the scene preflight (check).
 */
#include "client/cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "client/scene.h"

static const char *url_of(const cli_opts *o)
{
	return o->server ? o->server : DRAPE_DEFAULT_URL;
}

/* Parses the options and the optional/required ID of a session command. */
static int parse_id_cmd(int argc, char **argv, const char *cmd, bool id_required, cli_opts *o,
			uint32_t *id, bool *has_id)
{
	static const char *const allowed[] = {"--server", "--token-file", "--owner-token",
					      "--json", "--timeout", NULL};
	if (!cli_parse(argc, argv, 2, allowed, 1, cmd, o))
		return CLI_USAGE;
	if (o->help) {
		cli_usage(cmd, false);
		return -1;
	}
	*has_id = o->nargs == 1;
	if ((id_required && !*has_id) || (*has_id && !cli_parse_id(o->args[0], id))) {
		fprintf(stderr, "drape %s: expected a session ID\n", cmd);
		cli_usage(cmd, true);
		return CLI_USAGE;
	}
	return 0;
}

int cli_cmd_status(int argc, char **argv)
{
	cli_opts o;
	uint32_t id = 0;
	bool has_id;
	int x = parse_id_cmd(argc, argv, "status", false, &o, &id, &has_id);
	if (x != 0)
		return x < 0 ? CLI_OK : x;
	drape_client *c;
	drape_error err;
	char box[1024];
	const char *url = has_id ? cli_session_url(&o, id, box, sizeof box) : url_of(&o);
	if (url == NULL)
		return CLI_USAGE;
	if (!has_id && cli_url_is_pool(url)) {
		fprintf(stderr, "drape status: %s is a pool; ask one box at a time (--server URL)\n", url);
		return CLI_USAGE;
	}
	drape_err rc = cli_connect(url, &o, &c, &err);
	if (rc != DRAPE_OK)
		return cli_fail("connect", rc, &err);
	if (!has_id) {
		drape_server_info info;
		drape_server_stats st;
		drape_server_info_get(c, &info);
		rc = drape_server_stats_get(c, &st, &err);
		drape_close(c);
		if (rc != DRAPE_OK)
			return cli_fail("server.stats", rc, &err);
		if (o.json) {
			printf("{\"server\":");
			cli_json_str(stdout, info.server);
			printf(",\"protocol\":%u,\"stream\":", (unsigned)info.version);
			cli_json_str(stdout, info.stream_url);
			printf(",\"sessions\":%llu,"
			       "\"queued\":%llu,\"running\":%llu,\"memory\":%llu,\"frames_solved\":%llu,"
			       "\"frames_served\":%llu,\"requests\":%llu,\"clients\":%llu,\"threads\":%u,"
			       "\"uptime_s\":%.1f}\n",
			       (unsigned long long)st.sessions, (unsigned long long)st.queued,
			       (unsigned long long)st.running, (unsigned long long)st.memory,
			       (unsigned long long)st.frames_solved, (unsigned long long)st.frames_served,
			       (unsigned long long)st.requests, (unsigned long long)st.clients,
			       (unsigned)st.threads, st.uptime_s);
			return CLI_OK;
		}
		printf("server:        %s (protocol %u)\n", info.server, (unsigned)info.version);
		printf("stream:        %s\n", info.stream_url[0] ? info.stream_url : "(none)");
		printf("uptime:        %.1f s\n", st.uptime_s);
		printf("threads:       %u\n", (unsigned)st.threads);
		printf("sessions:      %llu (%llu running, %llu queued)\n",
		       (unsigned long long)st.sessions, (unsigned long long)st.running,
		       (unsigned long long)st.queued);
		printf("memory:        %.1f MiB\n", (double)st.memory / (1024.0 * 1024.0));
		printf("frames:        %llu solved, %llu served\n", (unsigned long long)st.frames_solved,
		       (unsigned long long)st.frames_served);
		printf("requests:      %llu from %llu clients\n", (unsigned long long)st.requests,
		       (unsigned long long)st.clients);
		return CLI_OK;
	}
	drape_session s = {.id = id};
	drape_status st;
	rc = drape_session_status(c, s, &st, &err);
	drape_close(c);
	if (rc != DRAPE_OK)
		return cli_fail("session.status", rc, &err);
	if (o.json) {
		printf("{\"session\":%u,\"name\":", (unsigned)id);
		cli_json_str(stdout, st.name);
		printf(",\"state\":\"%s\",\"frames_done\":%u,"
		       "\"frames_target\":%u,\"frames_first\":%u,\"queue_position\":%u,\"vertices\":%u,"
		       "\"triangles\":%u,\"colliders\":%u",
		       drape_state_name(st.state), (unsigned)st.frames_done,
		       (unsigned)st.frames_target, (unsigned)st.frames_first,
		       (unsigned)st.queue_position, (unsigned)st.vertices, (unsigned)st.triangles,
		       (unsigned)st.colliders);
		if (st.has_stats)
			printf(",\"last_sim_ms\":%.3f,\"max_strain\":%.6g", st.stats.solve_ms,
			       (double)st.stats.max_strain);
		if (st.has_error)
			printf(",\"error\":{\"code\":\"%s\",\"frame\":%u}", drape_err_name(st.error.code),
			       (unsigned)st.error_frame);
		if (st.has_storage_error) {
			printf(",\"storage_error\":{\"code\":\"%s\",\"message\":", drape_err_name(st.storage_error.code));
			cli_json_str(stdout, st.storage_error.message);
			printf("}");
		}
		printf("}\n");
		return CLI_OK;
	}
	printf("session:       %u%s%s\n", (unsigned)id, st.name[0] ? "  " : "", st.name);
	printf("state:         %s", drape_state_name(st.state));
	if (st.state == DRAPE_STATE_QUEUED)
		printf(" (position %u)", (unsigned)st.queue_position);
	printf("\n");
	if (st.frames_target)
		printf("frames:        %u of %u (%.0f%%)\n", (unsigned)st.frames_done,
		       (unsigned)st.frames_target, 100.0 * st.frames_done / st.frames_target);
	else
		printf("frames:        %u\n", (unsigned)st.frames_done);
	if (st.frames_first > 1)
		printf("retained from: frame %u\n", (unsigned)st.frames_first);
	printf("mesh:          %u vertices, %u triangles, %u colliders\n", (unsigned)st.vertices,
	       (unsigned)st.triangles, (unsigned)st.colliders);
	if (st.has_stats)
		printf("last frame:    %.2f ms, max strain %.4g\n", st.stats.solve_ms,
		       (double)st.stats.max_strain);
	if (st.has_error)
		printf("error:         %s at frame %u: %s\n", drape_err_name(st.error.code),
		       (unsigned)st.error_frame, st.error.message);
	if (st.has_storage_error)
		printf("not on disk:   %s: %s\n", drape_err_name(st.storage_error.code), st.storage_error.message);
	return CLI_OK;
}

/* "3.2 GiB", "12 KiB", "512 B". */
static void human_bytes(uint64_t b, char *out, size_t n)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = 0;
	while (v >= 1024.0 && u < 4) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(out, n, "%llu B", (unsigned long long)b);
	else
		snprintf(out, n, "%.1f %s", v, unit[u]);
}

/* "45s", "12m", "3h", "2d" since created (Unix seconds); "-" if unknown. */
static void human_age(uint64_t created, char *out, size_t n)
{
	const time_t now = time(NULL);
	if (created == 0 || (uint64_t)now < created) {
		snprintf(out, n, "-");
		return;
	}
	const uint64_t a = (uint64_t)now - created;
	if (a < 120)
		snprintf(out, n, "%llus", (unsigned long long)a);
	else if (a < 7200)
		snprintf(out, n, "%llum", (unsigned long long)(a / 60));
	else if (a < 172800)
		snprintf(out, n, "%lluh", (unsigned long long)(a / 3600));
	else
		snprintf(out, n, "%llud", (unsigned long long)(a / 86400));
}

int cli_cmd_sessions(int argc, char **argv)
{
	static const char *const allowed[] = {"--server", "--token-file", "--json", "--timeout", "--all",
					      NULL};
	cli_opts o;
	if (!cli_parse(argc, argv, 2, allowed, 0, "sessions", &o))
		return CLI_USAGE;
	if (o.help) {
		cli_usage("sessions", false);
		return CLI_OK;
	}
	if (cli_url_is_pool(url_of(&o))) {
		/* Ids are per box: a merged list would show one id several times. */
		fprintf(stderr, "drape sessions: %s is a pool; list one box at a time (--server URL)\n",
			url_of(&o));
		return CLI_USAGE;
	}
	drape_client *c;
	drape_error err;
	drape_err rc = cli_connect(url_of(&o), &o, &c, &err);
	if (rc != DRAPE_OK)
		return cli_fail("connect", rc, &err);
	drape_session_entry *e = NULL;
	uint32_t n = 0;
	rc = drape_session_list_all(c, o.all, &e, &n, &err);
	drape_close(c);
	if (rc != DRAPE_OK)
		return cli_fail("session.list", rc, &err);
	if (!o.json)
		printf("%-6s %-12s %-16s %5s %-10s %13s %10s %10s  %s\n", "ID", "OWNER", "HOST", "AGE", "STATE",
		       "PROGRESS", "MEMORY", "DISK", "NAME");
	for (uint32_t i = 0; i < n; i++) {
		if (o.json) {
			printf("{\"session\":%u,\"name\":", (unsigned)e[i].id);
			cli_json_str(stdout, e[i].name);
			printf(",\"state\":\"%s\",\"frames_done\":%u,\"vertices\":%u,\"owner\":",
			       drape_state_name(e[i].state), (unsigned)e[i].frames_done, (unsigned)e[i].vertices);
			cli_json_str(stdout, e[i].owner);
			printf(",\"host\":");
			cli_json_str(stdout, e[i].host);
			printf(",\"created\":%llu,\"frames_target\":%u,\"memory\":%llu,\"disk\":%llu}\n",
			       (unsigned long long)e[i].created, (unsigned)e[i].frames_target,
			       (unsigned long long)e[i].memory, (unsigned long long)e[i].disk);
			continue;
		}
		char age[32], mem[32], disk[32], prog[32];
		human_age(e[i].created, age, sizeof age);
		human_bytes(e[i].memory, mem, sizeof mem);
		human_bytes(e[i].disk, disk, sizeof disk);
		if (e[i].frames_target > 0)
			snprintf(prog, sizeof prog, "%u/%u", (unsigned)e[i].frames_done, (unsigned)e[i].frames_target);
		else
			snprintf(prog, sizeof prog, "%u", (unsigned)e[i].frames_done);
		printf("%-6u %-12s %-16s %5s %-10s %13s %10s %10s  %s\n", (unsigned)e[i].id,
		       e[i].owner[0] ? e[i].owner : "-", e[i].host[0] ? e[i].host : "-", age,
		       drape_state_name(e[i].state), prog, mem, disk, e[i].name);
	}
	free(e);
	return CLI_OK;
}

/* cancel and delete: the same shape, differing in the request. */
static int owner_cmd(int argc, char **argv, const char *cmd, bool is_delete)
{
	cli_opts o;
	uint32_t id = 0;
	bool has_id;
	int x = parse_id_cmd(argc, argv, cmd, true, &o, &id, &has_id);
	if (x != 0)
		return x < 0 ? CLI_OK : x;
	char box[1024];
	const char *url = cli_session_url(&o, id, box, sizeof box);
	if (url == NULL)
		return CLI_USAGE;
	bool have_token;
	drape_session s = cli_session_handle(url, id, &o, &have_token);
	drape_client *c;
	drape_error err;
	drape_err rc = cli_connect(url, &o, &c, &err);
	if (rc != DRAPE_OK)
		return cli_fail("connect", rc, &err);
	drape_state state = DRAPE_STATE_IDLE;
	uint32_t done = 0;
	/* Without a token the request still goes out: the server is the
	 * authority on ownership, and its refusal names the session. */
	if (is_delete)
		rc = drape_session_delete(c, s, &err);
	else
		rc = drape_session_cancel(c, s, &state, &done, &err);
	drape_close(c);
	if (rc != DRAPE_OK) {
		x = cli_fail(is_delete ? "session.delete" : "session.cancel", rc, &err);
		if (rc == DRAPE_EPERM && !have_token)
			fprintf(stderr,
				"drape: no owner token for session %u on %s: pass --owner-token HEX "
				"(drape run prints it and saves it under ~/.cache/drape/tokens)\n",
				(unsigned)id, url);
		return x;
	}
	if (is_delete) {
		cli_token_remove(url, id);
		printf("session %u deleted\n", (unsigned)id);
	} else {
		printf("session %u %s at frame %u\n", (unsigned)id, drape_state_name(state),
		       (unsigned)done);
	}
	return CLI_OK;
}

int cli_cmd_cancel(int argc, char **argv)
{
	return owner_cmd(argc, argv, "cancel", false);
}

int cli_cmd_delete(int argc, char **argv)
{
	return owner_cmd(argc, argv, "delete", true);
}

/* The cloth's material for `drape check`: the model, the preset (or
 * "custom"), the constants in SI units, and the UVs that orient them. */
static void print_material_text(const drape_scene *sc)
{
	const drape_sim_params *p = &sc->params;
	if (p->model == DRAPE_MODEL_XPBD) {
		printf("material:              %s (xpbd)\n", sc->material ? sc->material : "custom");
		printf("  stretch:             %g N/m warp, %g N/m weft%s\n", (double)p->stretch_k,
		       (double)(p->stretch_k_weft > 0.0f ? p->stretch_k_weft : p->stretch_k),
		       sc->cloth.uvs ? "" : " (no UVs: isotropic, warp value)");
		printf("  shear, bend:         %g N/m, %g N*m\n", (double)p->shear_k, (double)p->bend_k);
		printf("  density, damping:    %g kg/m^2, %g 1/s\n", (double)p->density, (double)p->damping_rate);
	} else {
		printf("material:              none (pbd: stretch %g, shear %g, bend %g; density %g kg/m^2)\n",
		       (double)p->stretch, (double)p->shear, (double)p->bend, (double)p->density);
	}
	if (sc->cloth.uvs != NULL)
		printf("UVs:                   yes (%u vertices on seams)\n", sc->cloth.uv_seam_vertices);
	else
		printf("UVs:                   no\n");
	/* A vertex on a UV seam keeps one side's coordinate (obj.h), so the
	 * faces on the other side see a displaced corner and a wrong grain.
	 * When most vertices are on seams the warp and weft are noise, which
	 * matters when they differ by more than a tenth. */
	const float warp = p->stretch_k;
	const float weft = p->stretch_k_weft > 0.0f ? p->stretch_k_weft : warp;
	if (p->model == DRAPE_MODEL_XPBD && sc->cloth.uvs != NULL && (weft > 1.1f * warp || warp > 1.1f * weft) &&
	    (uint64_t)sc->cloth.uv_seam_vertices * 2u > sc->cloth.vertex_count)
		printf("note: %u of %u cloth vertices sit on UV seams, so the texture coordinates do not "
		       "give the fabric's grain here and the warp (%g N/m) and weft (%g N/m) land in "
		       "arbitrary directions; \"uvs\": false in the cloth uses the warp stiffness in "
		       "every direction\n",
		       sc->cloth.uv_seam_vertices, sc->cloth.vertex_count, (double)warp, (double)weft);
}

static void print_material_json(const drape_scene *sc)
{
	const drape_sim_params *p = &sc->params;
	printf("\"model\":\"%s\",\"material\":", p->model == DRAPE_MODEL_XPBD ? "xpbd" : "pbd");
	if (sc->material != NULL)
		printf("\"%s\"", sc->material);
	else
		printf("null");
	printf(",\"density\":%.9g", (double)p->density);
	if (p->model == DRAPE_MODEL_XPBD)
		printf(",\"stretch_k\":%.9g,\"stretch_k_weft\":%.9g,\"shear_k\":%.9g,\"bend_k\":%.9g,"
		       "\"compress_k\":%.9g,\"damping_rate\":%.9g",
		       (double)p->stretch_k, (double)p->stretch_k_weft, (double)p->shear_k, (double)p->bend_k,
		       (double)p->compress_k, (double)p->damping_rate);
	printf(",\"uvs\":%s,\"uv_seam_vertices\":%u", sc->cloth.uvs ? "true" : "false",
	       sc->cloth.uv_seam_vertices);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/*
 * The intersecting pairs of a stitched cloth, less those along its seams:
 * two panels sewn edge to edge touch there by design. A pair is along a
 * seam when one triangle holds a vertex that a stitch joins to a vertex of
 * the other. Every pair is listed (in process), then filtered; the first
 * max_pairs kept are copied to pairs. Returns what drape_preflight does.
 */
static drape_err seam_aware_preflight(const drape_scene *sc, drape_tri_pair *pairs, uint32_t max_pairs,
				      uint64_t *count, uint64_t *along_seams, drape_error *err)
{
	const drape_obj_mesh *m = &sc->cloth;
	uint64_t all = 0;
	drape_err rc = drape_preflight(m->positions, m->vertex_count, m->triangles, m->triangle_count,
				       NULL, 0, &all, err);
	if (rc != DRAPE_OK)
		return rc;
	drape_tri_pair *list = malloc((size_t)(all ? all : 1) * sizeof *list);
	uint64_t *joins = malloc(4 * (size_t)sc->stitch_count * sizeof *joins + 1);
	if (list == NULL || joins == NULL || all > UINT32_MAX) {
		free(list);
		free(joins);
		return drape_error_setf(err, DRAPE_ENOMEM, "check: out of memory for %llu pairs",
					(unsigned long long)all);
	}
	rc = drape_preflight(m->positions, m->vertex_count, m->triangles, m->triangle_count, list,
			     (uint32_t)all, &all, err);
	size_t nj = 0;
	for (uint32_t i = 0; i < sc->stitch_count; i++) {
		const drape_stitch *s = &sc->stitches[i];
		uint32_t b[2] = {s->b0, s->b1};
		for (int k = 0; k < 2; k++) {
			uint64_t lo = s->a < b[k] ? s->a : b[k], hi = s->a < b[k] ? b[k] : s->a;
			joins[nj++] = lo << 32 | hi;
		}
	}
	qsort(joins, nj, sizeof *joins, u64_cmp);
	uint64_t kept = 0, seam = 0;
	for (uint64_t i = 0; rc == DRAPE_OK && i < all; i++) {
		const uint32_t *ta = &m->triangles[3 * (size_t)list[i].a];
		const uint32_t *tb = &m->triangles[3 * (size_t)list[i].b];
		int joined = 0;
		for (int j = 0; j < 3 && !joined; j++)
			for (int k = 0; k < 3 && !joined; k++) {
				uint64_t lo = ta[j] < tb[k] ? ta[j] : tb[k];
				uint64_t hi = ta[j] < tb[k] ? tb[k] : ta[j];
				uint64_t key = lo << 32 | hi;
				joined = bsearch(&key, joins, nj, sizeof *joins, u64_cmp) != NULL;
			}
		if (joined) {
			seam++;
		} else {
			if (kept < max_pairs)
				pairs[kept] = list[i];
			kept++;
		}
	}
	free(list);
	free(joins);
	*count = kept;
	*along_seams = seam;
	return rc;
}

/* What `drape check` says of the garment: stitches, seams, rest shape. */
static void print_garment(const drape_scene *sc, uint64_t along_seams, int json)
{
	const drape_seams_report *r = &sc->seams;
	if (json) {
		printf(",\"stitches\":%u,\"explicit_stitches\":%u,\"rest_mesh\":%s,"
		       "\"pairs_along_seams\":%llu",
		       sc->stitch_count, sc->explicit_stitches, sc->rest_positions ? "true" : "false",
		       (unsigned long long)along_seams);
		if (sc->has_seams)
			printf(",\"seams\":{\"panels\":%u,\"open_edge_vertices\":%u,\"welds\":%u,"
			       "\"edge_stitches\":%u,\"seam_sides\":%u}",
			       r->panels, r->boundary_vertices, r->welds, r->edge_stitches, r->seams);
		return;
	}
	if (sc->stitch_count == 0 && !sc->has_seams && sc->rest_positions == NULL)
		return;
	if (sc->has_seams)
		printf("seams:                 %u seam sides joined between %u panels: %u welds, %u "
		       "vertices stitched to edges\n",
		       r->seams, r->panels, r->welds, r->edge_stitches);
	printf("stitches:              %u (%u given, %u from seams)\n", sc->stitch_count,
	       sc->explicit_stitches, sc->stitch_count - sc->explicit_stitches);
	if (sc->rest_positions != NULL)
		printf("rest shape:            from rest_mesh\n");
	if (along_seams > 0)
		printf("touching along seams:  %llu triangle pairs (sewn, not counted below)\n",
		       (unsigned long long)along_seams);
}

/* The cloths of a scene with "cloths": name, vertex range, layers. */
static void print_cloths(const drape_scene *sc, int json)
{
	if (sc->object_count == 0)
		return;
	if (json) {
		printf(",\"cloths\":[");
		for (uint32_t i = 0; i < sc->object_count; i++) {
			const drape_object_desc *o = &sc->objects[i];
			printf("%s{\"name\":", i ? "," : "");
			cli_json_str(stdout, o->name);
			printf(",\"first_vertex\":%u,\"vertex_count\":%u,\"layer\":%u,"
			       "\"collides_with\":%u}",
			       o->range.first_vertex, o->range.vertex_count, o->range.layer,
			       o->range.collides_with);
		}
		printf("]");
		return;
	}
	printf("cloths:                %u\n", sc->object_count);
	for (uint32_t i = 0; i < sc->object_count; i++) {
		const drape_object_desc *o = &sc->objects[i];
		printf("  %-20s vertices %u to %u, layer bits 0x%x, collides with 0x%x\n", o->name,
		       o->range.first_vertex, o->range.first_vertex + o->range.vertex_count - 1,
		       o->range.layer, o->range.collides_with);
	}
}

int cli_cmd_check(int argc, char **argv)
{
	static const char *const allowed[] = {"--server", "--token-file", "--max-pairs", "--json",
					      "--timeout", NULL};
	cli_opts o;
	if (!cli_parse(argc, argv, 2, allowed, 1, "check", &o))
		return CLI_USAGE;
	if (o.help) {
		cli_usage("check", false);
		return CLI_OK;
	}
	if (o.nargs != 1) {
		fprintf(stderr, "drape check: expected one SCENE.json\n");
		cli_usage("check", true);
		return CLI_USAGE;
	}
	struct stat sb;
	if (stat(o.args[0], &sb) != 0) {
		perror(o.args[0]);
		return CLI_NOINPUT;
	}
	drape_scene sc;
	drape_error err;
	drape_err rc = drape_scene_read(o.args[0], NULL, &sc, &err);
	if (rc != DRAPE_OK) {
		fprintf(stderr, "drape: %s\n", err.message);
		return rc == DRAPE_ENOMEM ? CLI_SOFTWARE : CLI_DATAERR;
	}
	/* The topology comes from building the solver in process: it is cheap
	 * next to a run, and needs no server. */
	drape_sim_desc d;
	drape_sim *sim;
	int x = CLI_OK;
	float *inv_mass = NULL;
	rc = cli_scene_sim_desc(&sc, &d, &inv_mass, &err);
	if (rc == DRAPE_OK)
		rc = drape_sim_create(&d, &sim, &err);
	free(inv_mass);
	if (rc != DRAPE_OK) {
		x = cli_fail("cloth", rc, &err);
		drape_scene_free(&sc);
		return x;
	}
	drape_sim_topology t;
	drape_sim_get_topology(sim, &t);
	char sched[96];
	cli_schedule_text(sim, sched, sizeof sched);
	uint32_t steps = 0, iters = 0;
	drape_sim_get_schedule(sim, &steps, &iters);
	drape_sim_destroy(sim);

	drape_tri_pair *pairs = calloc(o.max_pairs ? o.max_pairs : 1, sizeof *pairs);
	uint64_t count = 0;
	uint32_t shown = 0;
	if (pairs == NULL) {
		drape_scene_free(&sc);
		return CLI_SOFTWARE;
	}
	uint64_t along_seams = 0;
	if (sc.stitch_count > 0) {
		/* Seams are told apart from crossings in process. */
		rc = seam_aware_preflight(&sc, pairs, o.max_pairs, &count, &along_seams, &err);
		shown = count < o.max_pairs ? (uint32_t)count : o.max_pairs;
	} else if (o.server != NULL) {
		drape_client *c;
		rc = cli_connect(o.server, &o, &c, &err);
		if (rc == DRAPE_OK) {
			rc = drape_server_preflight(c, sc.cloth.positions, sc.cloth.vertex_count,
						    sc.cloth.triangles, sc.cloth.triangle_count, pairs,
						    o.max_pairs, &shown, &count, &err);
			drape_close(c);
		}
	} else {
		rc = drape_preflight(sc.cloth.positions, sc.cloth.vertex_count, sc.cloth.triangles,
				     sc.cloth.triangle_count, pairs, o.max_pairs, &count, &err);
		shown = count < o.max_pairs ? (uint32_t)count : o.max_pairs;
	}
	if (rc != DRAPE_OK) {
		x = cli_fail("preflight", rc, &err);
		free(pairs);
		drape_scene_free(&sc);
		return x;
	}
	char units[1024];
	drape_scene_size_note(&sc, units, sizeof units);
	cli_inside inside;
	uint32_t pieces = 0, unpinned = 0;
	rc = cli_check_pieces(&sc, &pieces, &unpinned, &err);
	if (rc == DRAPE_OK)
		rc = cli_check_inside(&sc, &inside, &err);
	if (rc != DRAPE_OK) {
		x = cli_fail("colliders", rc, &err);
		free(pairs);
		drape_scene_free(&sc);
		return x;
	}
	if (o.json) {
		printf("{\"vertices\":%u,\"triangles\":%u,\"edges\":%u,\"bends\":%u,"
		       "\"boundary_edges\":%u,\"nonmanifold_edges\":%u,\"zero_area_triangles\":%u,"
		       "\"degenerate_edges\":%u,\"unreferenced_vertices\":%u,\"pinned_vertices\":%u,"
		       "\"welded_vertices\":%u,"
		       "\"colliders\":%u,\"intersecting_pairs\":%llu,\"pairs\":[",
		       t.vertices, t.triangles, t.edges, t.bends, t.boundary_edges, t.nonmanifold_edges,
		       t.zero_area_triangles, t.degenerate_edges, t.unreferenced_vertices,
		       t.pinned_vertices, t.welds, (unsigned)sc.collider_count, (unsigned long long)count);
		for (uint32_t i = 0; i < shown; i++)
			printf("%s[%u,%u]", i ? "," : "", pairs[i].a, pairs[i].b);
		printf("],\"frames\":%u,\"start_frame\":%u,\"animations\":[", (unsigned)sc.frames,
		       (unsigned)sc.start_frame);
		for (uint32_t i = 0, n = 0; i < sc.collider_count; i++) {
			const drape_collider_desc *cd = &sc.colliders[i];
			if (cd->frame_count == 0)
				continue;
			printf("%s{\"collider\":%u,\"path\":", n++ ? "," : "", (unsigned)i);
			cli_json_str(stdout, sc.collider_anims[i].path);
			printf(",\"samples\":%u,\"first_sample_frame\":%.9g,\"last_sample_frame\":%.9g,"
			       "\"frames\":%u,\"first_frame\":%u,\"last_frame\":%u,\"vertices\":%u}",
			       (unsigned)sc.collider_anims[i].samples, sc.collider_anims[i].first_frame,
			       sc.collider_anims[i].last_frame, (unsigned)cd->frame_count, (unsigned)cd->frame_start,
			       (unsigned)cd->frame_start + cd->frame_count - 1, (unsigned)cd->vertex_count);
		}
		printf("],\"schedule\":{\"name\":\"%s\",\"steps\":%u,\"iterations\":%u},",
		       sc.params.model != DRAPE_MODEL_XPBD ? "pbd"
		       : sc.params.schedule == DRAPE_SCHEDULE_MESH ? "mesh" : "frame",
		       (unsigned)steps, (unsigned)iters);
		print_material_json(&sc);
		print_garment(&sc, along_seams, 1);
		print_cloths(&sc, 1);
		printf(",\"pieces\":%u,\"unpinned_pieces\":%u", pieces, unpinned);
		printf(",\"inside_colliders\":{\"vertices\":%llu,\"deepest\":%.9g,\"collider\":%d",
		       (unsigned long long)inside.vertices, (double)inside.deepest, (int)inside.collider);
		if (inside.vertices > 0)
			printf(",\"deepest_vertex\":%u,\"deepest_at\":[%.9g,%.9g,%.9g]", inside.vertex,
			       (double)inside.at[0], (double)inside.at[1], (double)inside.at[2]);
		printf("}");
		printf(",\"units_warning\":");
		if (units[0] != '\0')
			cli_json_str(stdout, units);
		else
			printf("null");
		printf("}\n");
	} else {
		printf("vertices:              %u\n", t.vertices);
		printf("triangles:             %u\n", t.triangles);
		printf("edges:                 %u (%u boundary, %u non-manifold, %u degenerate)\n",
		       t.edges, t.boundary_edges, t.nonmanifold_edges, t.degenerate_edges);
		printf("bending pairs:         %u\n", t.bends);
		printf("zero-area triangles:   %u\n", t.zero_area_triangles);
		printf("unreferenced vertices: %u\n", t.unreferenced_vertices);
		printf("pinned vertices:       %u\n", t.pinned_vertices);
		printf("pieces:                %u", pieces);
		if (sc.pin_count > 0 && unpinned > 0)
			printf(" (%u with no pinned vertex: they fall unless a collider holds them)", unpinned);
		printf("\n");
		if (t.welds > 0)
			printf("welded vertices:       %u (one particle with their partners)\n", t.welds);
		if (sc.pin_stiffness != NULL) {
			uint32_t soft = 0;
			for (uint32_t i = 0; i < sc.pin_count; i++)
				soft += sc.pin_stiffness[i] > 0.0f;
			printf("soft pins:             %u (pulled to their start, not held)\n", soft);
		}
		printf("colliders:             %u\n", (unsigned)sc.collider_count);
		print_material_text(&sc);
		printf("schedule:              %s\n", sched);
		print_garment(&sc, along_seams, 0);
		print_cloths(&sc, 0);
		printf("intersecting pairs:    %llu", (unsigned long long)count);
		if (count > 0)
			printf(sc.params.self_collision
				       ? " (self-collision releases them until they separate; which side each part "
					 "ends on is left to the cloth's forces)"
				       : " (self-collision is off: they pass through each other)");
		printf("\n");
		for (uint32_t i = 0; i < shown; i++)
			printf("  triangles %u and %u\n", pairs[i].a, pairs[i].b);
		if (count > shown)
			printf("  ... and %llu more\n", (unsigned long long)(count - shown));
		if (inside.vertices > 0)
			printf("inside colliders:      %llu cloth vertices start inside (deepest %.1f mm, in "
			       "colliders[%d], vertex %u at [%.3f, %.3f, %.3f]): the solver moves each flat patch "
			       "of them out on the side it is less deep on, the rest to their nearest surface; "
			       "a body part through the cloth (an arm through a panel, not its sleeve) stays "
			       "through: move or scale the cloth until none is more than a few mm deep\n",
			       (unsigned long long)inside.vertices, 1000.0 * inside.deepest, (int)inside.collider,
			       inside.vertex, (double)inside.at[0], (double)inside.at[1], (double)inside.at[2]);
		else
			printf("inside colliders:      0 cloth vertices\n");
		if (units[0] != '\0')
			printf("units:                 warning: %s\n", units);
		printf("frames:                %u to %u written (%u solved)\n", (unsigned)sc.start_frame,
		       (unsigned)sc.frames, (unsigned)sc.frames);
		for (uint32_t i = 0; i < sc.collider_count; i++) {
			const drape_collider_desc *cd = &sc.colliders[i];
			if (cd->frame_count == 0)
				continue;
			const drape_scene_anim *a = &sc.collider_anims[i];
			const uint32_t last = (uint32_t)cd->frame_start + cd->frame_count - 1;
			printf("animation:             collider %u, %s: %u samples (frames %g to %g), "
			       "%u frames %u to %u of %u vertices\n",
			       (unsigned)i, a->path, (unsigned)a->samples, a->first_frame, a->last_frame,
			       (unsigned)cd->frame_count, (unsigned)cd->frame_start, (unsigned)last,
			       (unsigned)cd->vertex_count);
			if (last < sc.frames)
				printf("                       the body holds its last pose from frame %u to %u\n",
				       (unsigned)last, (unsigned)sc.frames);
		}
	}
	/* Intersecting triangles are reported, not refused: the solver releases
	 * a tangled start until it no longer intersects (selftangle.c), and
	 * without self-collision they do not hinder the run. */
	free(pairs);
	drape_scene_free(&sc);
	return x;
}

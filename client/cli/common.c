/*
 * drape CLI: option parsing, exit codes, connecting and the owner-token
 * cache shared by the commands.
 */
#include "client/cli/cli.h"

#include <dirent.h>
#include "drape/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t cli_interrupted;

static void on_signal(int sig)
{
	cli_interrupted = sig;
}

void cli_signals_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

double cli_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static bool parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	if (s == NULL || *s < '0' || *s > '9')
		return false;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		return false;
	*out = (uint32_t)v;
	return true;
}

bool cli_parse_id(const char *s, uint32_t *id)
{
	return parse_u32(s, UINT32_MAX, id);
}

static bool allowed_opt(const char *const *allowed, const char *name)
{
	for (; *allowed != NULL; allowed++)
		if (strcmp(*allowed, name) == 0)
			return true;
	return false;
}

bool cli_parse(int argc, char **argv, int first, const char *const *allowed, int max_args,
	       const char *cmd, cli_opts *o)
{
	memset(o, 0, sizeof *o);
	o->max_pairs = 16;
	for (int i = first; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			o->help = true;
			continue;
		}
		if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
			if (o->nargs >= max_args) {
				fprintf(stderr, "drape %s: unexpected argument \"%s\"\n", cmd, a);
				return false;
			}
			o->args[o->nargs++] = a;
			continue;
		}
		/* --name=value and --name value are both accepted. */
		char name[64];
		const char *val = NULL;
		const char *eq = strchr(a, '=');
		size_t n = eq ? (size_t)(eq - a) : strlen(a);
		if (n >= sizeof name) {
			fprintf(stderr, "drape %s: unknown option %s\n", cmd, a);
			return false;
		}
		memcpy(name, a, n);
		name[n] = '\0';
		/* The TLS options go with --server, so every command that
		 * connects takes them; they are not repeated in each list. */
		static const char *const tls_opts[] = {"--tls-ca", "--tls-cert", "--tls-key",
						       "--tls-server-name", NULL};
		if (!allowed_opt(allowed, name) && !allowed_opt(tls_opts, name)) {
			fprintf(stderr, "drape %s: unknown option %s (see drape %s --help)\n", cmd, name,
				cmd);
			return false;
		}
		bool flag = strcmp(name, "--json") == 0 || strcmp(name, "--local") == 0 ||
			    strcmp(name, "--quiet") == 0 || strcmp(name, "--all") == 0 ||
			    strcmp(name, "--rm") == 0;
		if (flag) {
			if (eq != NULL) {
				fprintf(stderr, "drape %s: %s takes no value\n", cmd, name);
				return false;
			}
		} else if (eq != NULL) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			fprintf(stderr, "drape %s: %s needs a value\n", cmd, name);
			return false;
		}
		uint32_t u;
		if (strcmp(name, "--json") == 0) {
			o->json = true;
		} else if (strcmp(name, "--local") == 0) {
			o->local = true;
		} else if (strcmp(name, "--quiet") == 0) {
			o->quiet = true;
		} else if (strcmp(name, "--all") == 0) {
			o->all = true;
		} else if (strcmp(name, "--server") == 0) {
			o->server = val;
		} else if (strcmp(name, "--token-file") == 0) {
			o->token_file = val;
		} else if (strcmp(name, "--tls-ca") == 0) {
			o->tls_ca = val;
		} else if (strcmp(name, "--tls-cert") == 0) {
			o->tls_cert = val;
		} else if (strcmp(name, "--tls-key") == 0) {
			o->tls_key = val;
		} else if (strcmp(name, "--tls-server-name") == 0) {
			o->tls_server_name = val;
		} else if (strcmp(name, "--owner-token") == 0) {
			uint8_t t[DRAPE_TOKEN_SIZE];
			if (drape_token_parse(val, t) != DRAPE_OK) {
				fprintf(stderr, "drape %s: --owner-token: expected 32 hex digits, got \"%s\"\n",
					cmd, val);
				return false;
			}
			o->owner_token = val;
		} else if (strcmp(name, "--set") == 0) {
			const char *eqv = strchr(val, '=');
			if (eqv == NULL || eqv == val) {
				fprintf(stderr, "drape %s: --set: expected KEY=VALUE, got \"%s\"\n", cmd, val);
				return false;
			}
			if (o->nsets >= (int)(sizeof o->sets / sizeof o->sets[0])) {
				fprintf(stderr, "drape %s: --set: at most %d\n", cmd,
					(int)(sizeof o->sets / sizeof o->sets[0]));
				return false;
			}
			o->sets[o->nsets++] = val;
		} else if (strcmp(name, "--state-dir") == 0) {
			if (val[0] == '\0') {
				fprintf(stderr, "drape %s: --state-dir: expected a folder, got \"\"\n", cmd);
				return false;
			}
			o->state_dir = val;
		} else if (strcmp(name, "--rm") == 0) {
			o->rm = true;
		} else if (strcmp(name, "--format") == 0) {
			drape_cache_format f;
			drape_error ferr;
			if (drape_cache_format_parse(val, &f, &ferr) != DRAPE_OK) {
				fprintf(stderr, "drape %s: --%s\n", cmd, ferr.message);
				return false;
			}
			o->format = val;
		} else if (strcmp(name, "--scene") == 0) {
			o->scene = val;
		} else if (strcmp(name, "--material") == 0) {
			o->material = val;
		} else if (strcmp(name, "--out") == 0) {
			o->out_dir = val;
		} else if (strcmp(name, "--frames") == 0) {
			if (!parse_u32(val, 1000000, &u) || u == 0) {
				fprintf(stderr, "drape %s: --frames: expected 1..1000000, got \"%s\"\n", cmd,
					val);
				return false;
			}
			o->frames = u;
		} else if (strcmp(name, "--from") == 0) {
			if (!parse_u32(val, UINT32_MAX, &u) || u == 0) {
				fprintf(stderr, "drape %s: --from: expected a frame index >= 1, got \"%s\"\n",
					cmd, val);
				return false;
			}
			o->from = u;
		} else if (strcmp(name, "--max-pairs") == 0) {
			if (!parse_u32(val, 1024, &u)) {
				fprintf(stderr, "drape %s: --max-pairs: expected 0..1024, got \"%s\"\n", cmd,
					val);
				return false;
			}
			o->max_pairs = u;
		} else if (strcmp(name, "--threads") == 0) {
			/* 256 is drape_pool_create's limit, and the daemon's
			 * --pool-threads limit. */
			if (!parse_u32(val, 256, &u) || u == 0) {
				fprintf(stderr, "drape %s: --threads: expected 1..256, got \"%s\"\n", cmd,
					val);
				return false;
			}
			o->threads = u;
		} else if (strcmp(name, "--timeout") == 0) {
			if (!parse_u32(val, 3600000, &u) || u == 0) {
				fprintf(stderr, "drape %s: --timeout: expected milliseconds >= 1, got \"%s\"\n",
					cmd, val);
				return false;
			}
			o->timeout_ms = (int32_t)u;
		}
	}
	/* $DRAPE_SERVER is the default server (or pool) of every command;
	 * --server overrides it, and `run --local` does without. */
	if (o->server == NULL && allowed_opt(allowed, "--server")) {
		const char *env = getenv("DRAPE_SERVER");
		if (env != NULL && env[0] != '\0' && !o->local) {
			o->server = env;
			o->server_from_env = true;
		}
	}
	return true;
}

void cli_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

int cli_exit_code(drape_err code)
{
	switch (code) {
	case DRAPE_OK:
	case DRAPE_EDONE: /* the end of a run is its success */
		return CLI_OK;
	case DRAPE_EUNAVAILABLE:
	case DRAPE_ETIMEDOUT:
	case DRAPE_ECLOSED:
		return CLI_UNAVAILABLE;
	case DRAPE_EPERM:
		return CLI_NOPERM;
	case DRAPE_EPROTO:
	case DRAPE_ETRUNCATED:
	case DRAPE_ETOODEEP:
	case DRAPE_ETOOLARGE:
	case DRAPE_EVERSION:
		return CLI_PROTOCOL;
	case DRAPE_EIO:
		return CLI_IOERR;
	case DRAPE_ESTATE:
	case DRAPE_EBUSY:
		return CLI_TEMPFAIL;
	case DRAPE_ENOMEM:
	case DRAPE_EINTERNAL:
		return CLI_SOFTWARE;
	case DRAPE_ECANCELED:
		return CLI_INTERRUPTED;
	default:
		/* EINVAL, ERANGE, ENONFINITE, ELIMIT, ENOTFOUND, EPARSE, ESDF:
		 * the input (scene, id, request) is what is wrong. */
		return CLI_DATAERR;
	}
}

void cli_schedule_text(const drape_sim *sim, char *buf, size_t size)
{
	drape_sim_params p;
	uint32_t steps = 0, iters = 0;
	drape_sim_get_params(sim, &p);
	drape_sim_get_schedule(sim, &steps, &iters);
	const char *name = p.model != DRAPE_MODEL_XPBD ? "pbd"
			   : p.schedule == DRAPE_SCHEDULE_MESH ? "xpbd, mesh" : "xpbd, frame";
	snprintf(buf, size, "%u step%s x %u iteration%s (%s)", (unsigned)steps, steps == 1 ? "" : "s",
		 (unsigned)iters, iters == 1 ? "" : "s", name);
}

int cli_fail(const char *what, drape_err code, const drape_error *e)
{
	const char *msg = e != NULL && e->message[0] != '\0' ? e->message : drape_strerror(code);
	fprintf(stderr, "drape: %s: %s (%s)\n", what, msg, drape_err_name(code));
	/* A connect refused as invalid is the command line's fault (a URL
	 * without a scheme or with a bad address, a bad --token-file or TLS
	 * file): EX_USAGE, which a farm does not retry. */
	if (code == DRAPE_EINVAL && strcmp(what, "connect") == 0)
		return CLI_USAGE;
	return cli_exit_code(code);
}

int cli_create_exit_code(drape_err code, const drape_error *e)
{
	/* ELIMIT names the limit at fault; the ones that other sessions
	 * ending will free mean "full now", the others "never fits". */
	if (code == DRAPE_ELIMIT && e != NULL &&
	    (strstr(e->message, "max_sessions") != NULL || strstr(e->message, "max_memory") != NULL))
		return CLI_TEMPFAIL;
	return cli_exit_code(code);
}

/* Reads the first line of the auth token file into buf. */
static drape_err read_token_file(const char *path, char *buf, size_t size, drape_error *err)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "--token-file %s: %s", path, strerror(errno));
	if (fgets(buf, (int)size, f) == NULL)
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\r\n")] = '\0';
	if (buf[0] == '\0')
		return drape_error_setf(err, DRAPE_EINVAL, "--token-file %s: empty", path);
	return DRAPE_OK;
}

/* The value of environment variable name, or NULL when unset or empty. */
static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);
	return v != NULL && v[0] != '\0' ? v : NULL;
}

drape_err cli_connect(const char *url, const cli_opts *o, drape_client **out, drape_error *err)
{
	drape_client_opts co;
	drape_client_opts_default(&co);
	co.client_name = "drape " DRAPE_CLIENT_VERSION;
	if (o->timeout_ms > 0)
		co.request_timeout_ms = o->timeout_ms;
	char token[512];
	if (o->token_file != NULL) {
		drape_err rc = read_token_file(o->token_file, token, sizeof token, err);
		if (rc != DRAPE_OK)
			return rc;
		co.auth_token = token;
	} else if (getenv("DRAPE_TOKEN") != NULL && getenv("DRAPE_TOKEN")[0] != '\0') {
		co.auth_token = getenv("DRAPE_TOKEN");
	}
	co.tls_ca_file = o->tls_ca != NULL ? o->tls_ca : env_nonempty("DRAPE_TLS_CA");
	co.tls_cert_file = o->tls_cert != NULL ? o->tls_cert : env_nonempty("DRAPE_TLS_CERT");
	co.tls_key_file = o->tls_key != NULL ? o->tls_key : env_nonempty("DRAPE_TLS_KEY");
	co.tls_server_name = o->tls_server_name;
	return drape_connect(url, &co, out, err);
}

/* ---- Owner-token cache ---------------------------------------------------------- */

/* FNV-1a: a stable, dependency-free name for a server URL. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Writes the cache folder into dir; false if there is no home to put it in. */
static bool token_dir(char *dir, size_t size)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	int n;
	if (xdg != NULL && xdg[0] == '/')
		n = snprintf(dir, size, "%s/drape/tokens", xdg);
	else if (home != NULL && home[0] != '\0')
		n = snprintf(dir, size, "%s/.cache/drape/tokens", home);
	else
		return false;
	return n > 0 && (size_t)n < size;
}

static bool token_path(const char *url, uint32_t id, char *path, size_t size)
{
	char dir[400];
	if (!token_dir(dir, sizeof dir))
		return false;
	int n = snprintf(path, size, "%s/%016llx-%u", dir, (unsigned long long)fnv1a(url),
			 (unsigned)id);
	return n > 0 && (size_t)n < size;
}

/* mkdir -p with the given mode for each created folder. */
static bool mkdirs(const char *path, mode_t mode)
{
	char buf[512];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return false;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) != 0 && errno != EEXIST)
			return false;
		*p = '/';
	}
	return mkdir(buf, mode) == 0 || errno == EEXIST;
}

void cli_token_save(const char *url, drape_session s)
{
	char dir[400], path[512], hex[DRAPE_TOKEN_HEX_SIZE];
	if (!token_dir(dir, sizeof dir) || !token_path(url, s.id, path, sizeof path) ||
	    !mkdirs(dir, 0700)) {
		fprintf(stderr, "drape: warning: cannot save the owner token (no writable cache "
				"folder); keep the token printed above\n");
		return;
	}
	/* The token grants control of the session: only its owner may read it. */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "drape: warning: cannot save the owner token to %s: %s\n", path,
			strerror(errno));
		return;
	}
	drape_token_format(s.token, hex);
	char line[DRAPE_TOKEN_HEX_SIZE + 1];
	int n = snprintf(line, sizeof line, "%s\n", hex);
	if (write(fd, line, (size_t)n) != n)
		fprintf(stderr, "drape: warning: cannot write %s\n", path);
	close(fd);
}

bool cli_token_load(const char *url, uint32_t id, uint8_t token[DRAPE_TOKEN_SIZE])
{
	char path[512], line[80];
	if (!token_path(url, id, path, sizeof path))
		return false;
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return false;
	bool ok = fgets(line, sizeof line, f) != NULL;
	fclose(f);
	if (!ok)
		return false;
	line[strcspn(line, "\r\n")] = '\0';
	return drape_token_parse(line, token) == DRAPE_OK;
}

void cli_token_remove(const char *url, uint32_t id)
{
	char path[512];
	if (token_path(url, id, path, sizeof path))
		unlink(path);
}

drape_session cli_session_handle(const char *url, uint32_t id, const cli_opts *o, bool *have_token)
{
	drape_session s;
	memset(&s, 0, sizeof s);
	s.id = id;
	*have_token = false;
	if (o->owner_token != NULL)
		*have_token = drape_token_parse(o->owner_token, s.token) == DRAPE_OK;
	else
		*have_token = cli_token_load(url, id, s.token);
	return s;
}

/* ---- Pools ---------------------------------------------------------------------- */

const char *cli_server_url(const cli_opts *o)
{
	return o->server != NULL ? o->server : DRAPE_DEFAULT_URL;
}

bool cli_url_is_pool(const char *url)
{
	return url != NULL && strchr(url, ',') != NULL;
}

/*
 * Session ids are per box, so in a pool session 3 may exist on every box.
 * `drape run` on a pool saves the owner token under the box's URL, as for a
 * single server, and beside it a record <hash of pool>-<id>@<hash of box>
 * holding the box's URL, so a later command given the pool and the id goes
 * straight to the box that holds it.
 */
void cli_pool_remember(const char *pool, const char *box, drape_session s)
{
	char dir[400], path[512];
	if (!token_dir(dir, sizeof dir) || !mkdirs(dir, 0700))
		return;
	int n = snprintf(path, sizeof path, "%s/%016llx-%u@%016llx", dir, (unsigned long long)fnv1a(pool),
			 (unsigned)s.id, (unsigned long long)fnv1a(box));
	if (n <= 0 || (size_t)n >= sizeof path)
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "drape: warning: cannot save %s: %s\n", path, strerror(errno));
		return;
	}
	size_t len = strlen(box);
	if (write(fd, box, len) != (ssize_t)len || write(fd, "\n", 1) != 1)
		fprintf(stderr, "drape: warning: cannot write %s\n", path);
	close(fd);
}

bool cli_pool_find_session(const char *pool, uint32_t id, char *box, size_t size)
{
	char dir[400], prefix[64];
	snprintf(prefix, sizeof prefix, "%016llx-%u@", (unsigned long long)fnv1a(pool), (unsigned)id);
	DIR *d = token_dir(dir, sizeof dir) ? opendir(dir) : NULL;
	unsigned found = 0;
	struct timespec newest = {0, 0};
	if (d != NULL) {
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
				continue;
			char path[700], line[1024];
			snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
			struct stat sb;
			FILE *f = stat(path, &sb) == 0 ? fopen(path, "r") : NULL;
			if (f == NULL)
				continue;
			bool ok = fgets(line, sizeof line, f) != NULL;
			fclose(f);
			line[strcspn(line, "\r\n")] = '\0';
			if (!ok || line[0] == '\0')
				continue;
			/* Ids are per box, so several boxes may each have had a
			 * session with this id from here: the newest is meant. */
			found++;
			if (found == 1 || sb.st_mtim.tv_sec > newest.tv_sec ||
			    (sb.st_mtim.tv_sec == newest.tv_sec && sb.st_mtim.tv_nsec > newest.tv_nsec)) {
				newest = sb.st_mtim;
				snprintf(box, size, "%s", line);
			}
		}
		closedir(d);
	}
	if (found == 0)
		fprintf(stderr, "drape: which box of the pool holds session %u is not known here (the record "
				"`drape run` saves is missing): pass the box with --server URL\n",
			(unsigned)id);
	else if (found > 1)
		fprintf(stderr, "drape: note: session %u was placed on %u boxes of the pool from here; using the "
				"newest, on %s (--server URL picks another)\n",
			(unsigned)id, found, box);
	return found > 0;
}

const char *cli_session_url(const cli_opts *o, uint32_t id, char *buf, size_t size)
{
	const char *url = cli_server_url(o);
	if (!cli_url_is_pool(url))
		return url;
	return cli_pool_find_session(url, id, buf, size) ? buf : NULL;
}

drape_err cli_scene_sim_desc(const drape_scene *sc, drape_sim_desc *d, float **inv_mass,
			     drape_error *err)
{
	drape_sim_desc_default(d);
	d->positions = sc->cloth.positions;
	d->vertex_count = sc->cloth.vertex_count;
	d->triangles = sc->cloth.triangles;
	d->triangle_count = sc->cloth.triangle_count;
	d->pins = sc->pins;
	d->pin_stiffness = sc->pin_stiffness;
	d->pin_count = sc->pin_count;
	d->uvs = sc->cloth.uvs;
	d->rest_positions = sc->rest_positions;
	d->rest_scale = sc->rest_scale;
	d->stiffness_scale = sc->stiffness_scale;
	d->vertex_thickness = sc->vertex_thickness;
	d->vertex_friction = sc->vertex_friction;
	d->objects = sc->object_ranges;
	d->object_count = sc->object_count;
	d->stitches = sc->stitches;
	d->stitch_count = sc->stitch_count;
	d->stitch_k = sc->stitch_k;
	d->sew_speed = sc->sew_speed;
	d->params = sc->params;
	drape_err rc = drape_scene_inv_mass(sc, inv_mass, err);
	d->inv_mass = *inv_mass;
	return rc;
}

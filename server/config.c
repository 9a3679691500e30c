/*
 * Configuration of draped (see config.h). One table describes every option,
 * so the command line, the JSON config file and --help can never disagree.
 */
#include "server/config.h"
#include "server/users.h"

#include "drape/sim.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum srv_opt_kind {
	SRV_OPT_URLS,   /* repeatable string, appended to a char*[SRV_MAX_URLS] */
	SRV_OPT_STRING, /* char * */
	SRV_OPT_U32,
	SRV_OPT_U64,
	SRV_OPT_OCTAL,  /* uint32_t written in octal */
	SRV_OPT_FLAG,   /* bool, no argument */
	SRV_OPT_CONFIG  /* --config itself: handled before the others */
} srv_opt_kind;

typedef struct srv_opt {
	const char *name;
	srv_opt_kind kind;
	size_t offset;     /* into srv_config */
	size_t count_off;  /* for SRV_OPT_URLS: offset of the count */
	uint64_t max;      /* largest accepted number (0 = no bound beyond the type) */
	const char *arg;
	const char *help;
} srv_opt;

#define OFF(f) offsetof(srv_config, f)

static const srv_opt srv_opts[] = {
	{ "listen", SRV_OPT_URLS, OFF(listen), OFF(listen_count), 0, "URL",
	  "control socket (REQ/REP); repeatable; ipc://PATH, tcp://HOST:PORT or "
	  "tls+tcp://HOST:PORT (needs --tls-cert and --tls-key). "
	  "Default " SRV_DEFAULT_LISTEN " (loopback only)" },
	{ "stream", SRV_OPT_URLS, OFF(stream), OFF(stream_count), 0, "URL",
	  "an open frame stream (PUB) for raw subscribers; repeatable; ipc:// or "
	  "loopback only, and refused with --auth-token-file: anyone who reaches it "
	  "reads every session's frames. Default: none (clients get frames with "
	  "frames.get, which checks both tokens)" },
	{ "state-dir", SRV_OPT_STRING, OFF(state_dir), 0, 0, "DIR",
	  "session state and frame caches (created 0700). Default $XDG_STATE_HOME/drape, "
	  "else ~/.local/state/drape, or /var/lib/drape for root" },
	{ "threads", SRV_OPT_U32, OFF(threads), 0, 1024, "N",
	  "solver worker threads, one frame per work item. Default: number of cores" },
	{ "pool-threads", SRV_OPT_U32, OFF(pool_threads), 0, 256, "N",
	  "threads of the one solver pool all sessions share: a session solving alone splits "
	  "each frame over N threads (its worker and N-1 pool threads); sessions solving side "
	  "by side each keep to their own worker. 1 = no pool. Results never depend on it. "
	  "Default: number of cores" },
	{ "config", SRV_OPT_CONFIG, 0, 0, 0, "FILE",
	  "JSON object whose keys are these long option names; the command line wins" },
	{ "idle-timeout", SRV_OPT_U64, OFF(idle_timeout_s), 0, 0, "SECONDS",
	  "delete sessions not running and not asked about for this long; 0 = never. Default 3600" },
	{ "orphan-timeout", SRV_OPT_U64, OFF(orphan_timeout_s), 0, 0, "SECONDS",
	  "delete a session that has never run once the connection its owner last used has been "
	  "closed this long (the owner never learnt the token, or went away before running it); "
	  "any request with its token adopts it again; 0 = never. Default 30" },
	{ "max-message", SRV_OPT_U64, OFF(max_message), 0, (uint64_t)INT32_MAX, "BYTES",
	  "largest request accepted, refused by nng before it is read. nng reserves a request's "
	  "announced size when its length arrives, before authentication, so with --max-connections "
	  "this bounds the memory strangers can take (max-connections x max-message). "
	  "Default 67108864 (64 MiB: a million-vertex session.create is about 36 MB)" },
	{ "max-vertices", SRV_OPT_U64, OFF(max_vertices), 0, UINT32_MAX, "N",
	  "vertices per session; 0 = no limit. Default 4000000" },
	{ "max-triangles", SRV_OPT_U64, OFF(max_triangles), 0, UINT32_MAX, "N",
	  "triangles per session; 0 = no limit. Default 8000000" },
	{ "max-colliders", SRV_OPT_U64, OFF(max_colliders), 0, UINT32_MAX, "N",
	  "colliders per session; 0 = no limit. Default 64" },
	{ "max-voxels", SRV_OPT_U64, OFF(max_voxels), 0, 0, "N",
	  "voxels per mesh collider field. Default 64000000" },
	{ "max-field-disk", SRV_OPT_U64, OFF(max_field_disk), 0, 0, "BYTES",
	  "bytes of mesh collider fields kept in STATE/fields/ for reuse after a restart, least "
	  "recently used removed first; 0 = none kept. Default 2147483648" },
	{ "max-anim-frames", SRV_OPT_U64, OFF(max_anim_frames), 0, UINT32_MAX, "N",
	  "animation frames per deforming collider (collider.add plus collider.frames); "
	  "0 = no limit of ours. Default 100000" },
	{ "max-anim-bytes", SRV_OPT_U64, OFF(max_anim_bytes), 0, 0, "BYTES",
	  "bytes of those frames per collider (frames * vertices * 12); 0 = no limit of ours. "
	  "Default 2147483648" },
	{ "max-sessions", SRV_OPT_U64, OFF(max_sessions), 0, UINT32_MAX, "N",
	  "sessions in all; 0 = no limit. Default 256" },
	{ "max-sessions-per-client", SRV_OPT_U64, OFF(max_sessions_per_client), 0, UINT32_MAX, "N",
	  "sessions per client id; 0 = no limit. Default 32" },
	{ "max-frames-retained", SRV_OPT_U64, OFF(max_frames_retained), 0, UINT32_MAX, "N",
	  "newest frames per session that frames.get can return (memory, then disk); "
	  "0 = all. Default 100000" },
	{ "max-frames-per-get", SRV_OPT_U64, OFF(max_frames_per_get), 0, UINT32_MAX, "N",
	  "frames in one frames.get reply (also bounded by 64 MiB per reply). Default 1024" },
	{ "max-session-memory", SRV_OPT_U64, OFF(max_session_memory), 0, 0, "BYTES",
	  "estimated memory per session, checked at create; 0 = no limit. Default 4294967296" },
	{ "max-memory", SRV_OPT_U64, OFF(max_memory), 0, 0, "BYTES",
	  "server memory budget: the estimated memory of every session, every create or collider "
	  "build in progress and the shared collider-field cache together; a session.create, "
	  "collider.add, collider.update or session.run that would pass it is refused with ENOMEM. "
	  "0 = no limit. Default: half the physical memory" },
	{ "max-connections", SRV_OPT_U64, OFF(max_connections), 0, UINT32_MAX, "N",
	  "control connections at once, over every --listen URL; more are closed as they arrive, "
	  "before a byte of a request is read. 0 = no limit. Default 256, or fewer (not under 64) "
	  "so that max-connections x max-message stays within --max-memory" },
	{ "max-connections-per-peer", SRV_OPT_U64, OFF(max_connections_per_peer), 0, UINT32_MAX, "N",
	  "control connections at once from one peer: one IP address over tcp://, tls+tcp:// "
	  "and ws://, one user id over ipc://. 0 = no limit. Default 64" },
	{ "frames-in-memory", SRV_OPT_U64, OFF(frames_in_memory), 0, 1u << 20, "N",
	  "newest frames per session kept in memory (older ones are read from disk). Default 32" },
	{ "checkpoint-every", SRV_OPT_U64, OFF(checkpoint_every), 0, UINT32_MAX, "N",
	  "frames between solver-state checkpoints; 0 = only on shutdown. Default 10" },
	{ "auth-token-file", SRV_OPT_STRING, OFF(auth_token_file), 0, 0, "FILE",
	  "require this token (file contents, trailing newline dropped) in every request "
	  "but hello. Default: none" },
	{ "ipc-mode", SRV_OPT_OCTAL, OFF(ipc_mode), 0, 0777, "OCTAL",
	  "permissions of ipc:// socket files; wider than 0660 is logged as a WARNING. Default 0660" },
	{ "tls-cert", SRV_OPT_STRING, OFF(tls_cert), 0, 0, "FILE",
	  "PEM certificate (or chain, leaf first) that tls+tcp:// listeners present. Default: none" },
	{ "tls-key", SRV_OPT_STRING, OFF(tls_key), 0, 0, "FILE",
	  "PEM private key of --tls-cert (not encrypted). Default: none" },
	{ "tls-ca", SRV_OPT_STRING, OFF(tls_ca), 0, 0, "FILE",
	  "PEM CA certificate(s); when given, TLS clients must present a certificate signed "
	  "by one of them. Default: no client certificates asked for" },
	{ "allow-remote", SRV_OPT_FLAG, OFF(allow_remote), 0, 0, NULL,
	  "protected mode, like redis': a non-loopback tcp://, tls+tcp:// or ws:// address is "
	  "refused unless it is tls+tcp:// with --tls-cert/--tls-key AND --auth-token-file is set; "
	  "this flag allows it anyway (logged as a warning)" },
	{ "users-file", SRV_OPT_STRING, OFF(users_file), 0, 0, "FILE",
	  "users and roles: lines of NAME ROLE sha256$SALT$HASH (`drape admin hash-token` writes "
	  "them); every request then authenticates as the user whose token it carries, sessions "
	  "belong to users, and limits count per user. Not with --auth-token-file. Default: none" },
	{ "max-sessions-per-user", SRV_OPT_U64, OFF(max_sessions_per_user), 0, UINT32_MAX, "N",
	  "with --users-file: sessions one user may hold, over all their connections. 0 = no limit. "
	  "Default 32" },
	{ "max-vertices-per-user", SRV_OPT_U64, OFF(max_vertices_per_user), 0, 0, "N",
	  "with --users-file: vertices of all of one user's sessions together. 0 = no limit. Default 0" },
	{ "max-disk-per-user", SRV_OPT_U64, OFF(max_disk_per_user), 0, 0, "BYTES",
	  "with --users-file: bytes of retained frames on disk of one user's sessions, checked when "
	  "a run starts (with the frames it will add). 0 = no limit. Default 0" },
	{ "resume-interrupted", SRV_OPT_FLAG, OFF(resume_interrupted), 0, 0, NULL,
	  "on start, runs that were going when the daemon stopped (crash or shutdown) continue by "
	  "themselves (the default)" },
	{ "no-resume-interrupted", SRV_OPT_FLAG, OFF(no_resume_interrupted), 0, 0, NULL,
	  "on start, interrupted runs come back canceled and wait for session.resume" },
	{ "log-file", SRV_OPT_STRING, OFF(log_file), 0, 0, "FILE",
	  "append the log here instead of stderr; SIGUSR1 reopens it (after logrotate renamed it). "
	  "Default: stderr (under systemd: the journal, with <N> priority prefixes)" },
	{ "log-format", SRV_OPT_STRING, OFF(log_format), 0, 0, "text|json",
	  "one line per event as text (\"TIME LEVEL MESSAGE\") or as a JSON object "
	  "{\"time\",\"level\",\"msg\"}. Default text" },
	{ "metrics", SRV_OPT_STRING, OFF(metrics), 0, 0, "tcp://HOST:PORT",
	  "serve Prometheus metrics at /metrics and a health check at /healthz over HTTP on this "
	  "address (loopback unless --allow-remote). Default: none" },
	{ "check-config", SRV_OPT_FLAG, OFF(check_config), 0, 0, NULL,
	  "read the config file and options, check them (token, certificate and key files too), "
	  "print the outcome and exit: 0 when valid, 64/66/69 otherwise" },
	{ "http", SRV_OPT_STRING, OFF(http), 0, 0, "tcp://HOST:PORT",
	  "the browser view: a page at http://HOST:PORT/ that asks for the auth token and shows "
	  "the box, its sessions and a live 3D view of one (frames over a WebSocket at /ws that "
	  "speaks the control protocol). Loopback only, and needs --auth-token-file or "
	  "--users-file (a user sees only their own sessions, an admin all): any web "
	  "page the user opens can reach a loopback WebSocket. Default: none" },
	{ "http-root", SRV_OPT_STRING, OFF(http_root), 0, 0, "DIR",
	  "the browser view's files. Default: www beside draped, else ../share/drape/www" },
	{ "verbose", SRV_OPT_FLAG, OFF(verbose), 0, 0, NULL, "log every request (debug lines)" },
	{ "version", SRV_OPT_FLAG, OFF(show_version), 0, 0, NULL, "print the version and exit" },
	{ "help", SRV_OPT_FLAG, OFF(show_help), 0, 0, NULL, "print this help and exit" },
};

#define SRV_NOPTS (sizeof srv_opts / sizeof srv_opts[0])

void srv_config_default(srv_config *c)
{
	memset(c, 0, sizeof *c);
	c->threads = 0;
	c->ipc_mode = 0660;
	c->idle_timeout_s = 3600;
	c->orphan_timeout_s = 30;
	c->max_message = 64u * 1024u * 1024u;
	c->max_vertices = 4000000;
	c->max_triangles = 8000000;
	c->max_colliders = 64;
	c->max_voxels = 64000000;
	c->max_field_disk = 2ull << 30;
	/* The solver's own caps (sim.h); an operator may set lower ones. */
	c->max_anim_frames = DRAPE_MAX_COLLIDER_FRAMES;
	c->max_anim_bytes = DRAPE_MAX_COLLIDER_FRAME_BYTES;
	c->max_sessions = 256;
	c->max_sessions_per_client = 32;
	c->max_sessions_per_user = 32;
	c->resume_interrupted = true;
	c->max_frames_retained = 100000;
	c->max_frames_per_get = 1024;
	c->max_session_memory = 4096ull * 1024u * 1024u;
	c->frames_in_memory = 32;
	c->checkpoint_every = 10;
	c->max_memory = UINT64_MAX; /* finish puts in half the physical memory */
	c->max_connections = UINT64_MAX; /* finish derives it from max_memory */
	c->max_connections_per_peer = 64;
}

uint64_t srv_config_default_connections(uint64_t max_memory, uint64_t max_message)
{
	/* Connections that never authenticate can hold max_message each, so
	 * by default they may not hold more than the memory budget; below 64
	 * a studio's clients and load tests would be turned away. */
	uint64_t n = 256;
	if (max_memory != 0 && max_message != 0 && max_memory / max_message < n)
		n = max_memory / max_message;
	return n < 64 ? 64 : n;
}

uint64_t srv_config_default_memory(void)
{
	const long pages = sysconf(_SC_PHYS_PAGES);
	const long page = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || page <= 0)
		return 0;
	return (uint64_t)pages * (uint64_t)page / 2u;
}

static srv_config_rc srv_config_fail(char *msg, size_t msg_len, srv_config_rc rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (msg != NULL && msg_len > 0)
		vsnprintf(msg, msg_len, fmt, ap);
	va_end(ap);
	return rc;
}

static const srv_opt *srv_opt_find(const char *name)
{
	for (size_t i = 0; i < SRV_NOPTS; i++)
		if (strcmp(srv_opts[i].name, name) == 0)
			return &srv_opts[i];
	return NULL;
}

/* Parses an unsigned decimal (or octal when base is 8) number with no sign,
 * no trailing text and no overflow. */
static bool srv_parse_u64(const char *s, int base, uint64_t *out)
{
	if (s == NULL || !isdigit((unsigned char)s[0]))
		return false;
	errno = 0;
	char *end = NULL;
	unsigned long long v = strtoull(s, &end, base);
	if (errno != 0 || end == s || *end != '\0')
		return false;
	*out = v;
	return true;
}

/* Sets one option from its textual value (command line or a JSON string or
 * number rendered as text). */
static srv_config_rc srv_opt_set(srv_config *c, const srv_opt *o, const char *value, const char *origin,
				 char *msg, size_t msg_len)
{
	char *base = (char *)c;
	switch (o->kind) {
	case SRV_OPT_URLS: {
		char **arr = (char **)(base + o->offset);
		size_t *n = (size_t *)(base + o->count_off);
		if (*n >= SRV_MAX_URLS)
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "%s --%s: at most %d URLs", origin, o->name, SRV_MAX_URLS);
		if (value[0] == '\0' || strstr(value, "://") == NULL)
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "%s --%s: \"%s\" is not a URL (ipc://PATH or tcp://HOST:PORT)",
					       origin, o->name, value);
		arr[*n] = strdup(value);
		if (arr[*n] == NULL)
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE, "out of memory");
		(*n)++;
		return SRV_CONFIG_OK;
	}
	case SRV_OPT_STRING: {
		char **p = (char **)(base + o->offset);
		if (value[0] == '\0')
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE, "%s --%s: empty value",
					       origin, o->name);
		free(*p);
		*p = strdup(value);
		return SRV_CONFIG_OK;
	}
	case SRV_OPT_U32:
	case SRV_OPT_U64:
	case SRV_OPT_OCTAL: {
		uint64_t v;
		uint64_t max = o->max ? o->max : (o->kind == SRV_OPT_U64 ? UINT64_MAX : UINT32_MAX);
		if (!srv_parse_u64(value, o->kind == SRV_OPT_OCTAL ? 8 : 10, &v) || v > max)
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "%s --%s: \"%s\" is not a%s number in [0, %llu]", origin,
					       o->name, value, o->kind == SRV_OPT_OCTAL ? "n octal" : "",
					       (unsigned long long)max);
		if (o->kind == SRV_OPT_U64)
			*(uint64_t *)(base + o->offset) = v;
		else
			*(uint32_t *)(base + o->offset) = (uint32_t)v;
		return SRV_CONFIG_OK;
	}
	case SRV_OPT_FLAG:
		*(bool *)(base + o->offset) = strcmp(value, "false") != 0 && strcmp(value, "0") != 0;
		return SRV_CONFIG_OK;
	case SRV_OPT_CONFIG:
		return SRV_CONFIG_OK;
	}
	return SRV_CONFIG_OK;
}

static void srv_urls_clear(char **arr, size_t *n)
{
	for (size_t i = 0; i < *n; i++) {
		free(arr[i]);
		arr[i] = NULL;
	}
	*n = 0;
}

srv_config_rc srv_config_apply_json(srv_config *c, const char *text, char *msg, size_t msg_len)
{
	cJSON *root = cJSON_Parse(text);
	if (root == NULL || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
				       "config: not a JSON object (near \"%.20s\")",
				       cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "");
	}
	srv_config_rc rc = SRV_CONFIG_OK;
	for (cJSON *it = root->child; it != NULL && rc == SRV_CONFIG_OK; it = it->next) {
		const srv_opt *o = srv_opt_find(it->string);
		if (o == NULL || o->kind == SRV_OPT_CONFIG || strcmp(o->name, "help") == 0 ||
		    strcmp(o->name, "version") == 0 || strcmp(o->name, "check-config") == 0) {
			rc = srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE, "config: unknown key \"%s\"",
					     it->string);
			break;
		}
		char num[64];
		if (o->kind == SRV_OPT_URLS) {
			srv_urls_clear((char **)((char *)c + o->offset), (size_t *)((char *)c + o->count_off));
			if (cJSON_IsString(it)) {
				rc = srv_opt_set(c, o, it->valuestring, "config", msg, msg_len);
			} else if (cJSON_IsArray(it)) {
				for (cJSON *u = it->child; u != NULL && rc == SRV_CONFIG_OK; u = u->next) {
					if (!cJSON_IsString(u))
						rc = srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
								     "config: \"%s\" must hold strings", o->name);
					else
						rc = srv_opt_set(c, o, u->valuestring, "config", msg, msg_len);
				}
			} else {
				rc = srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
						     "config: \"%s\" must be a string or an array of strings",
						     o->name);
			}
		} else if (o->kind == SRV_OPT_FLAG) {
			if (!cJSON_IsBool(it))
				rc = srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
						     "config: \"%s\" must be true or false", o->name);
			else
				*(bool *)((char *)c + o->offset) = cJSON_IsTrue(it);
		} else if (o->kind == SRV_OPT_STRING || o->kind == SRV_OPT_OCTAL) {
			if (cJSON_IsString(it))
				rc = srv_opt_set(c, o, it->valuestring, "config", msg, msg_len);
			else if (o->kind == SRV_OPT_OCTAL && cJSON_IsNumber(it) && it->valuedouble >= 0 &&
				 it->valuedouble <= 0777 && it->valuedouble == (double)(int)it->valuedouble)
				*(uint32_t *)((char *)c + o->offset) = (uint32_t)it->valuedouble;
			else
				rc = srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
						     "config: \"%s\" must be a string", o->name);
		} else {
			/* Integers arrive as doubles; accept only exact non-negative
			 * integers that a double represents exactly. */
			if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 9007199254740992.0 ||
			    it->valuedouble != (double)(uint64_t)it->valuedouble) {
				rc = srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
						     "config: \"%s\" must be a non-negative integer", o->name);
			} else {
				snprintf(num, sizeof num, "%llu", (unsigned long long)it->valuedouble);
				rc = srv_opt_set(c, o, num, "config", msg, msg_len);
			}
		}
	}
	cJSON_Delete(root);
	return rc;
}

static char *srv_read_file(const char *path, size_t max, size_t *len_out)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	char *buf = malloc(max + 1);
	size_t n = buf ? fread(buf, 1, max + 1, f) : 0;
	fclose(f);
	if (buf == NULL || n > max) {
		free(buf);
		errno = EFBIG;
		return NULL;
	}
	buf[n] = '\0';
	if (len_out)
		*len_out = n;
	return buf;
}

srv_config_rc srv_config_parse(srv_config *c, int argc, char **argv, char *msg, size_t msg_len)
{
	struct option longopts[SRV_NOPTS + 1];
	for (size_t i = 0; i < SRV_NOPTS; i++) {
		longopts[i].name = srv_opts[i].name;
		longopts[i].has_arg = srv_opts[i].kind == SRV_OPT_FLAG ? no_argument : required_argument;
		longopts[i].flag = NULL;
		longopts[i].val = 256 + (int)i;
	}
	memset(&longopts[SRV_NOPTS], 0, sizeof longopts[SRV_NOPTS]);

	/* Pass 1: only --config, so the file is applied before the command
	 * line and the command line wins. */
	const char *config_path = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			config_path = argv[++i];
		else if (strncmp(argv[i], "--config=", 9) == 0)
			config_path = argv[i] + 9;
	}
	/* No --config: the default file, when it exists (config.h). */
	if (config_path == NULL) {
		const char *def = getenv("DRAPED_CONFIG");
		if (def == NULL)
			def = SRV_DEFAULT_CONFIG;
		if (def[0] != '\0' && access(def, F_OK) == 0)
			config_path = def;
	}
	if (config_path != NULL) {
		free(c->config_file);
		c->config_file = strdup(config_path);
		char *text = srv_read_file(config_path, 1u << 20, NULL);
		if (text == NULL)
			return srv_config_fail(msg, msg_len, SRV_CONFIG_NOINPUT, "--config %s: %s",
					       config_path, strerror(errno));
		srv_config_rc rc = srv_config_apply_json(c, text, msg, msg_len);
		free(text);
		if (rc != SRV_CONFIG_OK)
			return rc;
	}

	/* Pass 2: the command line. Repeatable URL options given here replace
	 * the file's list rather than adding to it. */
	bool cli_listen = false, cli_stream = false;
	optind = 1;
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		if (ch == '?' || ch == ':') {
			const char *bad = argv[optind - 1] ? argv[optind - 1] : "?";
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       ch == ':' ? "option %s needs a value" : "unknown option %s",
					       bad);
		}
		const srv_opt *o = &srv_opts[ch - 256];
		if (o->kind == SRV_OPT_URLS) {
			bool *seen = o->offset == OFF(listen) ? &cli_listen : &cli_stream;
			if (!*seen)
				srv_urls_clear((char **)((char *)c + o->offset),
					       (size_t *)((char *)c + o->count_off));
			*seen = true;
		}
		srv_config_rc rc = srv_opt_set(c, o, o->kind == SRV_OPT_FLAG ? "true" : optarg,
					       "option", msg, msg_len);
		if (rc != SRV_CONFIG_OK)
			return rc;
	}
	if (optind < argc)
		return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE, "unexpected argument \"%s\"",
				       argv[optind]);
	return SRV_CONFIG_OK;
}

bool srv_config_host_is_loopback(const char *host)
{
	/* No host, or a wildcard, binds every interface. */
	if (host == NULL || host[0] == '\0' || strcmp(host, "*") == 0)
		return false;
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	/* A name that does not resolve is not known to be loopback: refused. */
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return false;
	bool all = res != NULL;
	for (const struct addrinfo *a = res; a != NULL && all; a = a->ai_next) {
		if (a->ai_family == AF_INET) {
			const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)a->ai_addr;
			all = (ntohl(in->sin_addr.s_addr) >> 24) == 127u;
		} else if (a->ai_family == AF_INET6) {
			const struct in6_addr *in6 = &((const struct sockaddr_in6 *)(const void *)a->ai_addr)->sin6_addr;
			all = IN6_IS_ADDR_LOOPBACK(in6) || (IN6_IS_ADDR_V4MAPPED(in6) && in6->s6_addr[12] == 127u);
		} else {
			all = false;
		}
	}
	freeaddrinfo(res);
	return all;
}

bool srv_config_url_is_local(const char *url)
{
	if (strncmp(url, "ipc://", 6) == 0 || strncmp(url, "inproc://", 9) == 0)
		return true;
	/* ws:// stays non-local even on loopback: a browser on this machine can
	 * reach it on behalf of any web page. */
	const char *tcp = strncmp(url, "tls+", 4) == 0 ? url + 4 : url;
	const char *host;
	if (strncmp(tcp, "tcp://", 6) == 0)
		host = tcp + 6;
	else if (strncmp(tcp, "tcp4://", 7) == 0 || strncmp(tcp, "tcp6://", 7) == 0)
		host = tcp + 7;
	else
		return false;
	/* The host is what comes before the port, without IPv6 brackets. The
	 * decision is on the addresses it resolves to, every one of which must
	 * be loopback: a name is only a name (127.example.com can point
	 * anywhere). */
	char name[256];
	size_t n;
	if (host[0] == '[') {
		const char *close = strchr(host, ']');
		if (close == NULL || close[1] != ':')
			return false;
		host++;
		n = (size_t)(close - host);
	} else {
		const char *colon = strrchr(host, ':');
		if (colon == NULL)
			return false;
		n = (size_t)(colon - host);
		if (memchr(host, ':', n) != NULL)
			return false; /* an unbracketed IPv6 address: not a URL nng takes */
	}
	if (n == 0 || n >= sizeof name)
		return false;
	memcpy(name, host, n);
	name[n] = '\0';
	return srv_config_host_is_loopback(name);
}

bool srv_config_url_is_tls(const char *url)
{
	return strncmp(url, "tls+", 4) == 0 || strncmp(url, "wss", 3) == 0;
}

bool srv_config_url_exposed(const srv_config *c, const char *url)
{
	if (srv_config_url_is_local(url))
		return false;
	/* Both are needed: TLS alone lets anyone who can reach the port in, and
	 * a token alone crosses the network in clear text. */
	return !(srv_config_url_is_tls(url) && c->tls_cert != NULL && c->tls_key != NULL &&
		 (c->auth_token_file != NULL || c->users_file != NULL));
}

static srv_config_rc srv_default_state_dir(srv_config *c, char *msg, size_t msg_len)
{
	char path[PATH_MAX];
	const char *xdg = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	if (geteuid() == 0)
		snprintf(path, sizeof path, "/var/lib/drape");
	else if (xdg != NULL && xdg[0] == '/')
		snprintf(path, sizeof path, "%s/drape", xdg);
	else if (home != NULL && home[0] != '\0')
		snprintf(path, sizeof path, "%s/.local/state/drape", home);
	else
		return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
				       "no --state-dir, and neither XDG_STATE_HOME nor HOME is set");
	c->state_dir = strdup(path);
	return SRV_CONFIG_OK;
}

srv_config_rc srv_config_finish(srv_config *c, char *msg, size_t msg_len)
{
	if (c->listen_count == 0) {
		c->listen[0] = strdup(SRV_DEFAULT_LISTEN);
		c->listen_count = 1;
	}
	/* The browser view: a tcp:// loopback address (its page and WebSocket
	 * share it), and only with an auth token, since any web page the user
	 * opens may connect to a loopback WebSocket (nng's ws transport does
	 * not check Origin). */
	if (c->http != NULL) {
		if (strncmp(c->http, "tcp://", 6) != 0 || strchr(c->http + 6, '/') != NULL ||
		    strchr(c->http + 6, ':') == NULL)
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "--http %s: expected tcp://HOST:PORT", c->http);
		if (!srv_config_url_is_local(c->http))
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "--http %s: not a loopback address; the browser view "
					       "listens on loopback only",
					       c->http);
		/* With --users-file the JSON API authenticates the user and
		 * lists only their sessions (webapi.c). */
		if (c->auth_token_file == NULL && c->users_file == NULL)
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "--http %s: needs --auth-token-file or --users-file (any "
					       "web page the user opens can reach a loopback WebSocket; "
					       "the token keeps it out)",
					       c->http);
	}
	/* nng's PUB socket cannot check who subscribes, and a subscriber to
	 * the empty topic gets every session: a stream is only for a box
	 * whose every user may read every session (PROTOCOL.md section 9). */
	for (size_t i = 0; i < c->stream_count; i++) {
		if (c->users_file != NULL)
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "--stream %s: a PUB stream serves every session's frames to "
					       "anyone, so it cannot go with --users-file",
					       c->stream[i]);
		if (c->auth_token_file != NULL)
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "--stream %s: a PUB stream serves every session's frames "
					       "without checking the auth token, so it cannot go with "
					       "--auth-token-file (clients get their frames with frames.get)",
					       c->stream[i]);
		if (!srv_config_url_is_local(c->stream[i]))
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "--stream %s: not a loopback or ipc address; a PUB stream "
					       "serves every session's frames to whoever connects",
					       c->stream[i]);
	}
	if ((c->tls_cert == NULL) != (c->tls_key == NULL))
		return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE, "--%s is given without --%s",
				       c->tls_cert != NULL ? "tls-cert" : "tls-key",
				       c->tls_cert != NULL ? "tls-key" : "tls-cert");
	if (c->tls_ca != NULL && c->tls_cert == NULL)
		return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
				       "--tls-ca asks TLS clients for certificates, but there is no "
				       "--tls-cert and --tls-key for the server itself");
	for (size_t i = 0; i < c->listen_count + c->stream_count; i++) {
		const char *u = i < c->listen_count ? c->listen[i] : c->stream[i - c->listen_count];
		if (srv_config_url_is_tls(u) && c->tls_cert == NULL)
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "%s needs a certificate: give --tls-cert FILE and --tls-key FILE",
					       u);
		if (!c->allow_remote && srv_config_url_exposed(c, u))
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "%s is not a loopback or ipc address (its host must resolve to "
					       "127.0.0.0/8 or ::1 only); a shared box "
					       "must not be reachable without TLS (tls+tcp:// with --tls-cert "
					       "and --tls-key) and an auth token (--auth-token-file) "
					       "(pass --allow-remote if this is intended)",
					       u);
	}
	if (c->state_dir == NULL) {
		srv_config_rc rc = srv_default_state_dir(c, msg, msg_len);
		if (rc != SRV_CONFIG_OK)
			return rc;
	}
	if (c->threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		c->threads = n > 0 ? (uint32_t)(n > 1024 ? 1024 : n) : 1;
	}
	if (c->pool_threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		c->pool_threads = n > 0 ? (uint32_t)(n > 256 ? 256 : n) : 1;
	}
	if (c->frames_in_memory == 0)
		c->frames_in_memory = 1;
	/* A machine whose size cannot be read gets no budget rather than a
	 * guessed one; --max-memory sets one explicitly. */
	if (c->max_memory == UINT64_MAX)
		c->max_memory = srv_config_default_memory();
	if (c->max_connections == UINT64_MAX)
		c->max_connections = srv_config_default_connections(c->max_memory, c->max_message);
	if (c->max_message < 1024)
		return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
				       "--max-message %llu is too small (at least 1024)",
				       (unsigned long long)c->max_message);
	if (c->log_format != NULL && strcmp(c->log_format, "text") != 0 && strcmp(c->log_format, "json") != 0)
		return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
				       "--log-format \"%s\": expected text or json", c->log_format);
	if (c->metrics != NULL) {
		if (strncmp(c->metrics, "tcp://", 6) != 0 && strncmp(c->metrics, "http://", 7) != 0)
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "--metrics \"%s\": expected tcp://HOST:PORT", c->metrics);
		char tcp[512];
		snprintf(tcp, sizeof tcp, "tcp://%s", strstr(c->metrics, "://") + 3);
		char *slash = strchr(tcp + 6, '/');
		if (slash != NULL)
			*slash = '\0';
		if (!c->allow_remote && !srv_config_url_is_local(tcp))
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "--metrics %s is not a loopback address; metrics describe every "
					       "session and the load (pass --allow-remote if this is intended)",
					       c->metrics);
	}
	if (c->auth_token_file != NULL) {
		size_t n = 0;
		char *tok = srv_read_file(c->auth_token_file, 4096, &n);
		if (tok == NULL)
			return srv_config_fail(msg, msg_len, SRV_CONFIG_NOINPUT, "--auth-token-file %s: %s",
					       c->auth_token_file, strerror(errno));
		while (n > 0 && (tok[n - 1] == '\n' || tok[n - 1] == '\r'))
			tok[--n] = '\0';
		if (n == 0 || n > 256) {
			free(tok);
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "--auth-token-file %s: the token must hold 1 to 256 bytes",
					       c->auth_token_file);
		}
		c->auth_token = tok;
		c->auth_token_len = n;
	}
	if (c->no_resume_interrupted)
		c->resume_interrupted = false;
	if (c->users_file != NULL) {
		if (c->auth_token_file != NULL)
			return srv_config_fail(msg, msg_len, SRV_CONFIG_USAGE,
					       "--users-file %s: not with --auth-token-file (the one token is "
					       "one user; put it in the users file instead)",
					       c->users_file);
		drape_error e;
		srv_users *u = NULL;
		if (srv_users_load(c->users_file, &u, &e) != DRAPE_OK)
			return srv_config_fail(msg, msg_len, e.code == DRAPE_EIO ? SRV_CONFIG_NOINPUT : SRV_CONFIG_USAGE,
					       "--users-file: %s", e.message);
		srv_users_free(c->users);
		c->users = u;
	}
	return SRV_CONFIG_OK;
}

bool srv_config_ipc_mode_warning(const srv_config *c, char *msg, size_t msg_len)
{
	/* 0660 lets the socket's owner and group in; any other bit lets more
	 * people in (or is meaningless on a socket), which on a shared box is
	 * worth a line in the log at every start. */
	if ((c->ipc_mode & ~(uint32_t)0660) == 0)
		return false;
	const char *ipc = NULL;
	for (size_t i = 0; i < c->listen_count + c->stream_count && ipc == NULL; i++) {
		const char *u = i < c->listen_count ? c->listen[i] : c->stream[i - c->listen_count];
		if (strncmp(u, "ipc://", 6) == 0)
			ipc = u;
	}
	if (ipc == NULL)
		return false; /* the mode applies to no socket */
	if (c->ipc_mode & 0007)
		snprintf(msg, msg_len, "WARNING: --ipc-mode %04o is wider than 0660: every local user can connect to %s%s",
			 (unsigned)c->ipc_mode, ipc,
			 c->auth_token_file != NULL ? " (they still need the auth token)"
						    : " and read and change every session");
	else
		snprintf(msg, msg_len,
			 "WARNING: --ipc-mode %04o is wider than 0660 (bits beyond read and write for owner and "
			 "group) on %s",
			 (unsigned)c->ipc_mode, ipc);
	return true;
}

bool srv_config_auth_ok(const srv_config *c, const uint8_t *got, size_t got_len)
{
	if (c->auth_token == NULL)
		return true;
	if (got == NULL)
		return false;
	/* Every byte of the configured token is compared and the differences
	 * are OR-ed (volatile, so the compiler cannot stop at the first one);
	 * a wrong length still walks the whole token. Bytes of got past its
	 * end read as 0, and the length check makes those count as different. */
	volatile uint8_t diff = (uint8_t)(got_len != c->auth_token_len);
	for (size_t i = 0; i < c->auth_token_len; i++) {
		uint8_t a = i < got_len ? got[i] : 0;
		diff |= (uint8_t)(a ^ (uint8_t)c->auth_token[i]);
	}
	return diff == 0;
}

void srv_config_usage(const char *argv0)
{
	printf("usage: %s [options]\n\n"
	       "draped " SRV_VERSION " - the drape cloth-simulation server.\n"
	       "Serves simulation sessions over nng (REQ/REP: requests, and frames to their owners).\n\n"
	       "options:\n",
	       argv0);
	for (size_t i = 0; i < SRV_NOPTS; i++) {
		char head[64];
		snprintf(head, sizeof head, "--%s%s%s", srv_opts[i].name, srv_opts[i].arg ? " " : "",
			 srv_opts[i].arg ? srv_opts[i].arg : "");
		printf("  %-32s %s\n", head, srv_opts[i].help);
	}
	printf("\nprotected mode: draped listens only on loopback (a host whose every resolved\n"
	       "address is in 127.0.0.0/8 or is ::1) and ipc:// unless a TCP address\n"
	       "is tls+tcp:// with --tls-cert/--tls-key and --auth-token-file is set, or\n"
	       "--allow-remote says an exposed address is intended (each is then logged as a\n"
	       "warning). A plain tcp:// on a non-loopback address is refused without\n"
	       "--allow-remote even when TLS is configured for another listener.\n"
	       "\nexit status: 0 after SIGTERM/SIGINT, 64 usage error, 66 unreadable config,\n"
	       "token, certificate or key file, 69 cannot listen (or the certificate or key\n"
	       "cannot be used), 70 internal error, 73 cannot create the state directory.\n");
}

void srv_config_free(srv_config *c)
{
	srv_urls_clear(c->listen, &c->listen_count);
	srv_urls_clear(c->stream, &c->stream_count);
	free(c->state_dir);
	free(c->auth_token);
	free(c->auth_token_file);
	free(c->users_file);
	srv_users_free(c->users);
	free(c->tls_cert);
	free(c->tls_key);
	free(c->tls_ca);
	free(c->config_file);
	free(c->log_file);
	free(c->log_format);
	free(c->metrics);
	free(c->http);
	free(c->http_root);
	memset(c, 0, sizeof *c);
}

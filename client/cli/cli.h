/*
 * The drape command-line tool: shared declarations of its commands
 * (main.c dispatches, run.c runs and attaches, admin.c holds status,
 * sessions, cancel, delete and check, embed.c the embedded server, common.c
 * option parsing, exit codes and the owner-token cache).
 */
#ifndef DRAPE_CLI_H
#define DRAPE_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "drape/cache.h"
#include "drape/drape.h"
#include "client/scene.h"

/* Exit codes, from sysexits.h (named here so the table in the usage text
 * and the code agree). */
enum {
	CLI_OK = 0,
	CLI_FAILED = 1,       /* the run itself ended badly (canceled by someone else) */
	CLI_USAGE = 64,       /* EX_USAGE */
	CLI_DATAERR = 65,     /* EX_DATAERR: bad scene, bad request, failed run */
	CLI_NOINPUT = 66,     /* EX_NOINPUT: the scene file does not exist */
	CLI_UNAVAILABLE = 69, /* EX_UNAVAILABLE: no server, or it stopped answering */
	CLI_SOFTWARE = 70,    /* EX_SOFTWARE: internal error */
	CLI_IOERR = 74,       /* EX_IOERR: cannot write frames */
	CLI_TEMPFAIL = 75,    /* EX_TEMPFAIL: the session is busy; try again */
	CLI_PROTOCOL = 76,    /* EX_PROTOCOL: the server spoke nonsense */
	CLI_NOPERM = 77,      /* EX_NOPERM: no owner token, or the wrong one */
	CLI_INTERRUPTED = 130 /* stopped by SIGINT / SIGTERM, as shells report it */
};

/* Options every command understands; each command reads what it needs. */
typedef struct cli_opts {
	const char *server;      /* --server URL; NULL = embedded (run) or default URL */
	const char *token_file;  /* --token-file F: the server's auth token */
	const char *owner_token; /* --owner-token HEX: a session's owner token */
	const char *out_dir;     /* --out DIR */
	const char *scene;       /* --scene SCENE.json (attach: the mesh's triangles) */
	uint32_t frames;         /* --frames N (0 = the scene's) */
	uint32_t from;           /* --from N (attach: first frame wanted) */
	uint32_t max_pairs;      /* --max-pairs N (check) */
	const char *material;    /* --material NAME (run): a fabric preset replacing the scene's */
	int32_t timeout_ms;      /* --timeout MS: request timeout */
	bool json;               /* --json */
	bool local;              /* --local: run the solver in this process */
	bool quiet;              /* --quiet: no progress bar or summary line */
	bool help;               /* --help */
	bool all;                /* --all (sessions: every user's, for admins) */
	const char *args[4];     /* positional arguments after the command */
	int nargs;
	const char *tls_ca;      /* --tls-ca F: CA that signed the server's certificate ($DRAPE_TLS_CA) */
	const char *tls_cert;    /* --tls-cert F: client certificate ($DRAPE_TLS_CERT) */
	const char *tls_key;     /* --tls-key F: its private key ($DRAPE_TLS_KEY) */
	const char *tls_server_name; /* --tls-server-name NAME: name the server's certificate carries */
	const char *state_dir;   /* --state-dir DIR (run): a resumable batch run's checkpoints */
	bool server_from_env;    /* server came from $DRAPE_SERVER, not --server */
	const char *sets[16];    /* --set KEY=VALUE (run): scene keys overridden, in order */
	int nsets;
	const char *format;      /* --format obj|pc2|mdd|geo (run, attach, export); NULL = obj */
	bool rm;                 /* --rm (run --server): delete the session once its frames are written */
	uint32_t threads;        /* --threads N (run, embedded or --local): solver threads; 0 = cores */
} cli_opts;

/* Set by the SIGINT/SIGTERM handler; long loops poll it. */
extern volatile sig_atomic_t cli_interrupted;

/* Installs the SIGINT/SIGTERM handler (no SA_RESTART, so a sleep returns). */
void cli_signals_install(void);

/* Parses argv[first..] into *o. Prints the problem and returns false on a
 * bad option. `allowed` is the list of option names the command takes. */
bool cli_parse(int argc, char **argv, int first, const char *const *allowed, int max_args,
	       const char *cmd, cli_opts *o);

/* Writes s as a JSON string literal (quoted and escaped). */
void cli_json_str(FILE *f, const char *s);

/* The exit code for a library error. */
int cli_exit_code(drape_err code);

/* Prints "drape: <what>: <message>" to stderr and returns the exit code. */
int cli_fail(const char *what, drape_err code, const drape_error *e);

/* The schedule a sim takes per frame (drape_sim_get_schedule), as the
 * `schedule:` line of check and run --local print it: "40 steps x 1
 * iteration (xpbd, frame)". */
void cli_schedule_text(const drape_sim *sim, char *buf, size_t size);

/* Connects to url with the auth token of --token-file or $DRAPE_TOKEN, and
 * for tls+tcp:// the TLS files of --tls-ca/--tls-cert/--tls-key or
 * $DRAPE_TLS_CA/$DRAPE_TLS_CERT/$DRAPE_TLS_KEY. */
drape_err cli_connect(const char *url, const cli_opts *o, drape_client **out, drape_error *err);

/* Parses a session id argument ("12"). */
bool cli_parse_id(const char *s, uint32_t *id);

/* Owner-token cache: $XDG_CACHE_HOME/drape/tokens/<hash of URL>-<id> (or
 * ~/.cache/...), one line of 32 hex digits, mode 0600. */
void cli_token_save(const char *url, drape_session s);
bool cli_token_load(const char *url, uint32_t id, uint8_t token[DRAPE_TOKEN_SIZE]);
void cli_token_remove(const char *url, uint32_t id);
/* The handle for id with --owner-token or the cached token (zero if none). */
drape_session cli_session_handle(const char *url, uint32_t id, const cli_opts *o, bool *have_token);

/* Milliseconds of a monotonic clock. */
double cli_now_ms(void);

/* The embedded server: a private draped in a temporary directory. */
typedef struct cli_embed {
	pid_t pid;
	char dir[512];
	char url[600];
} cli_embed;

/* Starts draped and waits (bounded) until it answers hello. On failure
 * prints why and returns the exit code; on success returns 0. */
int cli_embed_start(cli_embed *e, const cli_opts *o);
/* Stops it with SIGTERM (SIGKILL after a grace period) and removes the
 * directory. Safe to call twice. */
void cli_embed_stop(cli_embed *e);

/* Commands; each returns the process exit code. */
int cli_cmd_run(int argc, char **argv);
int cli_cmd_attach(int argc, char **argv);
int cli_cmd_status(int argc, char **argv);
int cli_cmd_sessions(int argc, char **argv);
int cli_cmd_cancel(int argc, char **argv);
int cli_cmd_delete(int argc, char **argv);
int cli_cmd_check(int argc, char **argv);

/* Cloth vertices inside the scene's mesh colliders at frame 0 (inside.c):
 * how many (a vertex inside two counts twice), the deepest in metres and
 * the collider it is in (-1 when none). */
typedef struct cli_inside {
	uint64_t vertices;
	float deepest;
	int32_t collider;
	uint32_t vertex; /* the deepest cloth vertex, and where it is (scene space) */
	float at[3];
} cli_inside;
drape_err cli_check_inside(const drape_scene *sc, cli_inside *out, drape_error *err);
/* The cloth's pieces, joined by triangles and stitches, and how many of
 * them hold no pinned vertex (pieces.c). */
drape_err cli_check_pieces(const drape_scene *sc, uint32_t *pieces, uint32_t *unpinned, drape_error *err);
int cli_cmd_resume(int argc, char **argv);
int cli_cmd_loadtest(int argc, char **argv);
int cli_cmd_admin(int argc, char **argv);
int cli_cmd_submit(int argc, char **argv); /* submit.c: a Slurm job array */
int cli_cmd_farm(int argc, char **argv);   /* farm.c: `drape farm status DIR` */

/* Exit code of a farm run interrupted by SIGTERM (128 + 15): the run was
 * checkpointed and continues when started again with the same --state-dir. */
#define CLI_TERMINATED 143

/* The exit code of a failed session.create: a server that is full (its
 * session or memory limits, which other sessions ending will free) is
 * EX_TEMPFAIL, a request that can never fit is EX_DATAERR. (common.c) */
int cli_create_exit_code(drape_err code, const drape_error *e);

/* ---- Resumable batch runs (batch.c) ---- */

/* What a --state-dir remembers of its run: where the session lives. */
typedef struct cli_batch {
	char server[1024];   /* --server as given (a pool, a URL); "" = the embedded server */
	char url[1024];      /* the box that holds the session; "" = the embedded server */
	drape_session session;
	uint32_t frames;     /* the run's frame count */
	int lock_fd;         /* flock on DIR/lock while the run is ours */
} cli_batch;

/* Creates DIR (and DIR/frames, DIR/daemon), takes its lock so two runs
 * never share a state dir, and reads DIR/session.json when an earlier run
 * wrote it (*found). Returns 0 or an exit code. */
int cli_batch_open(const char *dir, cli_batch *b, bool *found);
/* Writes DIR/session.json (temporary file, fsync, rename). Returns 0 or an
 * exit code. */
int cli_batch_save(const char *dir, const cli_batch *b);
/* Releases the lock. */
void cli_batch_close(cli_batch *b);

/* Loads the scene at path with the --set overrides applied: each KEY is a
 * dotted path into the scene's JSON object ("cloth.material",
 * "wind.drag"), its VALUE JSON (a number, array, quoted string) or else a
 * bare string. Relative file names stay relative to the scene's folder.
 * Returns the drape_scene_load result; err names the --set at fault.
 * (override.c) */
drape_err cli_scene_load_set(const char *path, const char *const *sets, int nsets, drape_scene *out,
			     drape_error *err);

/* ---- Pools of servers (common.c, beside the owner-token cache) ---- */

/* The server list: --server, else $DRAPE_SERVER, else the default URL. */
const char *cli_server_url(const cli_opts *o);
/* True when url lists several servers (comma-separated). */
bool cli_url_is_pool(const char *url);
/* For a command on an existing session (attach, cancel, ...) given a pool:
 * the box whose saved owner token names session id, written into box.
 * Returns false (and prints why) when none or several boxes match. */
bool cli_pool_find_session(const char *pool, uint32_t id, char *box, size_t size);
/* Remembers that session s of pool lives on box (the token cache). */
void cli_pool_remember(const char *pool, const char *box, drape_session s);
/* The URL of the box holding session id: the server, or for a pool the box
 * cli_pool_find_session names (in buf); NULL (and why on stderr) if none. */
const char *cli_session_url(const cli_opts *o, uint32_t id, char *buf, size_t size);
int cli_cmd_preview(int argc, char **argv); /* preview.c */
int cli_cmd_export(int argc, char **argv);

/*
 * Fills *d with the scene's cloth for an in-process solve: mesh, pins (soft
 * ones too), UVs, the garment's rest shape, rest scales and stitches, and
 * the parameters. *inv_mass receives the inverse masses of "mass_scale"
 * (NULL without), which d->inv_mass points to: free it after
 * drape_sim_create. The one place a scene becomes a solver description, for
 * run --local, check and preview alike (common.c).
 */
drape_err cli_scene_sim_desc(const drape_scene *sc, drape_sim_desc *d, float **inv_mass,
			     drape_error *err);

/* One cache per cloth of a session of several (objcache.c): each object's
 * vertices to DIR/<name>/ with its own triangles (those whose first vertex
 * is in its range, renumbered). init borrows the arrays (count 0: nothing
 * to do; paths may be NULL, else each object's OBJ source or NULL); write
 * opens the writers at the first frame (base: the desc a single cache
 * would get, its dir the --out folder; previous: the frame before, whole
 * mesh, or NULL); close finishes them (reporting errors when `report`)
 * and frees what write allocated. Functions return 0 or an exit code,
 * with the message printed. */
typedef struct cli_objcache {
	const drape_object_desc *objects;
	uint32_t count;
	const uint32_t *triangles;
	uint32_t triangle_count;
	char *const *paths;
	drape_cache_writer **cache;
	uint32_t **tri;
	uint32_t *tri_count;
} cli_objcache;
void cli_objcache_init(cli_objcache *w, const drape_object_desc *objects, uint32_t count,
		       const uint32_t *triangles, uint32_t triangle_count, char *const *paths);
int cli_objcache_write(cli_objcache *w, const drape_cache_desc *base, uint32_t index,
		       const float *positions, const float *previous);
int cli_objcache_close(cli_objcache *w, bool report);

/* Usage text of a command (NULL = the overview) to stdout or stderr. */
void cli_usage(const char *cmd, bool to_stderr);

/* Edge strain |l - l0| / l0 of positions `pos` against `rest` over the
 * unique edges of the triangles (zero-length rest edges skipped): the
 * maximum and the nearest-rank 99th percentile. Returns 0, or -1 when there
 * is no edge or no memory (outputs untouched). (strain.c) */
int cli_edge_strain(const float *rest, const float *pos, uint32_t vertex_count, const uint32_t *triangles,
		    uint32_t triangle_count, float *max_out, float *p99_out);

#endif

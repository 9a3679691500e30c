/*
 * draped's configuration: defaults, the --config JSON file and the command
 * line (which wins over the file). Parsing never exits; it returns an error
 * with a message naming the option, so it can be unit tested.
 */
#ifndef DRAPE_SRV_CONFIG_H
#define DRAPE_SRV_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SRV_VERSION "0.1.0"
#define SRV_DEFAULT_LISTEN "tcp://127.0.0.1:7450"
#define SRV_MAX_URLS 16

typedef struct srv_config {
	char *listen[SRV_MAX_URLS];
	size_t listen_count;
	char *stream[SRV_MAX_URLS]; /* --stream URLs (open PUB stream); none by default */
	size_t stream_count;
	char *state_dir;            /* absolute or relative path; never NULL after finish */
	char *auth_token;           /* contents of --auth-token-file; NULL = no auth */
	size_t auth_token_len;
	char *auth_token_file;
	uint32_t threads;           /* solver workers (0 before finish = cores) */
	uint32_t pool_threads;      /* threads of the shared solver pool, 1 = none (0 before finish = cores) */
	uint32_t ipc_mode;          /* permissions of ipc socket files */
	uint64_t idle_timeout_s;    /* 0 = never */
	uint64_t orphan_timeout_s;  /* never-run sessions whose owner's connection closed; 0 = never */
	uint64_t max_message;
	uint64_t max_vertices;
	uint64_t max_triangles;
	uint64_t max_colliders;
	uint64_t max_voxels;
	uint64_t max_field_disk;    /* bytes of STATE/fields/ (mesh fields kept on disk); 0 = none */
	uint64_t max_anim_frames;   /* animation frames per deforming collider; 0 = the solver's cap */
	uint64_t max_anim_bytes;    /* their bytes (frames * vertices * 12); 0 = the solver's cap */
	uint64_t max_sessions;
	uint64_t max_sessions_per_client;
	uint64_t max_frames_retained;
	uint64_t max_frames_per_get;
	uint64_t max_session_memory;
	uint64_t max_memory;        /* estimated bytes of every session, job and cached field together;
				     * 0 = no limit (UINT64_MAX before finish = half the physical RAM) */
	uint64_t max_connections;   /* control connections at once; 0 = no limit (UINT64_MAX before
				     * finish = srv_config_default_connections) */
	uint64_t max_connections_per_peer; /* from one IP address (tcp) or one uid (ipc); 0 = no limit */
	uint64_t frames_in_memory;  /* newest frames kept in memory per session */
	uint64_t checkpoint_every;  /* frames between solver checkpoints; 0 = only on shutdown */
	bool allow_remote;          /* listen on non-loopback tcp without TLS + auth */
	bool verbose;
	bool show_help;
	bool show_version;
	char *tls_cert;             /* --tls-cert: PEM certificate (chain) of tls+tcp:// listeners */
	char *tls_key;              /* --tls-key: its PEM private key (unencrypted) */
	char *tls_ca;               /* --tls-ca: PEM CA certificates; when set, clients must show a
				     * certificate signed by one of them */
	struct nng_tls_config *tls; /* built from the three by srv_tls_open (server/tls.c) before the
				     * server starts, freed by srv_tls_close; NULL without TLS */
	/* Users and restart (issue 20; users.h, resume.c). */
	char *users_file;           /* --users-file: NAME ROLE sha256$SALT$HASH lines; NULL = none */
	struct srv_users *users;    /* loaded from users_file by finish; NULL without it */
	uint64_t max_sessions_per_user;    /* with --users-file: sessions of one user; 0 = no limit */
	uint64_t max_vertices_per_user;    /* vertices of all the sessions of one user; 0 = no limit */
	uint64_t max_disk_per_user;        /* bytes of retained frames on disk of one user; 0 = no limit */
	bool resume_interrupted;    /* --resume-interrupted (default): runs a stop cut short go on at start */
	bool no_resume_interrupted; /* --no-resume-interrupted: they come back canceled instead */
	char *config_file;          /* the JSON file applied: --config, or the default file when it
				     * exists (SRV_DEFAULT_CONFIG, $DRAPED_CONFIG); NULL = none */
	char *log_file;             /* --log-file: append log lines here instead of stderr */
	char *log_format;           /* --log-format: "text" (default) or "json" */
	char *metrics;              /* --metrics: tcp://HOST:PORT of the /metrics and /healthz listener */
	bool check_config;          /* --check-config: validate, print the outcome and exit */
	char *http;                 /* --http tcp://HOST:PORT: the browser view (server/web.c); NULL = none */
	char *http_root;            /* --http-root DIR: its static files; NULL = beside the binary */
} srv_config;

/* The config file draped reads when no --config is given and it exists. The
 * environment variable DRAPED_CONFIG, when set, names another file instead
 * (empty: none), so tests and packagers need not touch /etc. */
#define SRV_DEFAULT_CONFIG "/etc/drape/draped.json"


/* Outcome of parsing. */
typedef enum srv_config_rc {
	SRV_CONFIG_OK = 0,
	SRV_CONFIG_USAGE = 64,  /* EX_USAGE: bad option or value */
	SRV_CONFIG_NOINPUT = 66 /* EX_NOINPUT: config or token file unreadable */
} srv_config_rc;

/* Fills *c with the defaults (listen and state_dir are filled by finish). */
void srv_config_default(srv_config *c);

/*
 * Reads --config (if any) and then every option of argv into *c. On failure
 * writes a one-line message naming the option into msg. Strings in *c are
 * heap copies owned by *c (srv_config_free).
 */
srv_config_rc srv_config_parse(srv_config *c, int argc, char **argv, char *msg, size_t msg_len);

/* Applies the JSON document text (keys = long option names) to *c. */
srv_config_rc srv_config_apply_json(srv_config *c, const char *text, char *msg, size_t msg_len);

/*
 * Fills what depends on the environment: the default listen URL, the default
 * state directory ($XDG_STATE_HOME/drape, ~/.local/state/drape, or
 * /var/lib/drape for root) and the thread count (cores). Also applies the
 * protected-mode rule: a non-loopback TCP address needs TLS and an auth
 * token, or --allow-remote; a TLS URL needs --tls-cert and --tls-key; and a
 * --stream URL (an open PUB stream) is refused with an auth token or on a
 * non-loopback address.
 */
srv_config_rc srv_config_finish(srv_config *c, char *msg, size_t msg_len);

/* True for ipc:// and inproc:// URLs, and for tcp:// (tcp4://, tcp6://,
 * tls+tcp://) URLs whose host resolves (getaddrinfo) to loopback addresses
 * only: 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104. A host that does not
 * resolve, a wildcard or an empty host is not local. */
bool srv_config_url_is_local(const char *url);
/* True when host (no port, no brackets) resolves, and every address it
 * resolves to is loopback. */
bool srv_config_host_is_loopback(const char *host);

/* True for URLs whose transport runs over TLS (tls+tcp://, wss://). */
bool srv_config_url_is_tls(const char *url);

/*
 * True when url would let other machines in without the protection of
 * protected mode: not loopback or ipc, and not (a TLS URL with a
 * certificate configured and an auth token required). finish refuses such
 * URLs unless allow_remote is set; the daemon then warns about each.
 */
bool srv_config_url_exposed(const srv_config *c, const char *url);

/*
 * True when got (got_len bytes, NULL = none) equals the configured token
 * c->auth_token, or when no token is configured. Runs in time that depends
 * only on the configured token's length, never on how much of got matches,
 * so response times do not help guess the token byte by byte.
 */
bool srv_config_auth_ok(const srv_config *c, const uint8_t *got, size_t got_len);

/*
 * When --ipc-mode grants more than 0660 (read and write for the socket's
 * owner and group) and an ipc:// socket is configured, writes the WARNING
 * line draped logs at start into msg and returns true.
 */
bool srv_config_ipc_mode_warning(const srv_config *c, char *msg, size_t msg_len);

/* Half the physical memory of this machine (the default --max-memory), or
 * 0 when it cannot be read. */
uint64_t srv_config_default_memory(void);

/* The default --max-connections: 256, lowered so that max_connections x
 * max_message fits max_memory, but never under 64. */
uint64_t srv_config_default_connections(uint64_t max_memory, uint64_t max_message);

/* Writes --help text to stdout. */
void srv_config_usage(const char *argv0);

void srv_config_free(srv_config *c);

#endif

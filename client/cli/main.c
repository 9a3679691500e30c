/*
 * drape — the command-line client of the drape cloth-simulation server.
 * This file dispatches commands and holds the help texts; each command
 * lives in run.c or admin.c.
 */
#include "client/cli/cli.h"

#include <stdio.h>
#include <string.h>

static const char overview[] =
	"usage: drape COMMAND [ARGS] [OPTIONS]\n"
	"\n"
	"Runs cloth simulations on a draped server and fetches their frames.\n"
	"\n"
	"commands:\n"
	"  run SCENE.json      submit a scene, run it, write every frame\n"
	"  attach ID           write the frames of an existing session, and the rest as they come\n"
	"  status [ID]         show a session, or the server without ID\n"
	"  sessions            list the server's sessions\n"
	"  cancel ID           stop a session's run (needs its owner token)\n"
	"  delete ID           delete a session and its frames (needs its owner token)\n"
	"  check SCENE.json    report the cloth's topology and intersecting triangles\n"
	"\n"
	"common options:\n"
	"  --server URL        control URL of draped (ipc://PATH, tcp://HOST:PORT);\n"
	"                      default " DRAPE_DEFAULT_URL ", except that `run` without\n"
	"                      --server starts a private embedded server\n"
	"  --token-file F      the server's auth token (first line of F); $DRAPE_TOKEN also works\n"
	"  --timeout MS        request timeout (default 10000)\n"
	"  --json              machine-readable output on stdout\n"
	"  -h, --help          this text; `drape COMMAND --help` for a command\n"
	"\n"
	"owner tokens:\n"
	"  Each session belongs to the token session.create returns; cancel and delete need\n"
	"  it. `drape run --server URL` prints it and saves it to\n"
	"  ~/.cache/drape/tokens/<hash of URL>-<ID> ($XDG_CACHE_HOME/drape/tokens when set,\n"
	"  mode 0600), where cancel and delete find it; from another machine or account\n"
	"  pass it with --owner-token HEX.\n"
	"\n"
	"exit status (sysexits):\n"
	"  0 success, 1 run canceled by someone else, 64 usage, 65 bad input data (scene,\n"
	"  session id, failed run), 66 scene file missing, 69 server unavailable, 70 internal\n"
	"  error, 74 cannot write frames, 75 session busy, 76 protocol error, 77 not permitted,\n"
	"  130 interrupted.\n"
	"\n"
	"environment:\n"
	"  DRAPED        the draped binary the embedded server runs (default: next to drape)\n"
	"  DRAPE_TOKEN   the server's auth token, when --token-file is not given\n";

static const struct {
	const char *name;
	const char *usage;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{"run",
	 "usage: drape run SCENE.json [--server URL] [--out DIR] [--frames N] [--json]\n"
	 "                 [--token-file F] [--local] [--quiet] [--timeout MS]\n"
	 "\n"
	 "Loads the scene (see client/SCENE.md), creates a session with its cloth, pins and\n"
	 "colliders, runs it, and receives every frame in order.\n"
	 "\n"
	 "  --out DIR       write DIR/frame_0001.obj ... (the scene's triangulated mesh)\n"
	 "  --frames N      frames to solve (default: the scene's \"frames\")\n"
	 "  --json          one JSON object per frame on stdout,\n"
	 "                  {\"frame\":N,\"sim_ms\":..,\"max_strain\":..,...}, then {\"summary\":{...}}\n"
	 "  --server URL    use a running draped; prints the session id and owner token\n"
	 "                  (stderr) and saves the token for cancel/delete. Without it, a\n"
	 "                  private draped runs on an ipc socket in a temporary folder and\n"
	 "                  is stopped at the end ($DRAPED, or draped next to drape).\n"
	 "  --local         no server at all: the solver runs in this process (to measure\n"
	 "                  the server's overhead, or to work without draped)\n"
	 "  --quiet         no progress bar (shown on stderr when it is a terminal) or summary\n"
	 "\n"
	 "Ctrl-C cancels the session and stops the embedded server (exit 130).\n",
	 cli_cmd_run},
	{"attach",
	 "usage: drape attach ID [--server URL] [--out DIR] [--scene SCENE.json] [--from N]\n"
	 "                    [--json] [--token-file F]\n"
	 "\n"
	 "Writes every frame session ID still holds and, while it runs, the rest as they\n"
	 "come; returns when the run ends. No owner token needed.\n"
	 "\n"
	 "  --out DIR       write DIR/frame_NNNN.obj; the faces come from --scene (the\n"
	 "                  protocol sends positions only), else the files hold vertices only\n"
	 "  --scene FILE    the scene the session was made from, for the OBJ faces\n"
	 "  --from N        start at frame N (after a reconnect, the first frame not yet seen)\n",
	 cli_cmd_attach},
	{"status",
	 "usage: drape status [ID] [--server URL] [--json] [--token-file F]\n"
	 "\n"
	 "With ID: the session's state, frames, mesh and last error. Without: the server's\n"
	 "build, stream URL, sessions, memory and counters.\n",
	 cli_cmd_status},
	{"sessions",
	 "usage: drape sessions [--server URL] [--json] [--token-file F]\n"
	 "\n"
	 "Lists every session: id, state, frames solved, vertices, name.\n",
	 cli_cmd_sessions},
	{"cancel",
	 "usage: drape cancel ID [--server URL] [--owner-token HEX] [--token-file F]\n"
	 "\n"
	 "Stops the session's run after the frame in flight. Needs the owner token: the one\n"
	 "`drape run --server URL` saved, or --owner-token HEX. Exit 77 when refused.\n",
	 cli_cmd_cancel},
	{"delete",
	 "usage: drape delete ID [--server URL] [--owner-token HEX] [--token-file F]\n"
	 "\n"
	 "Deletes the session and its frames. Needs the owner token, as cancel does.\n",
	 cli_cmd_delete},
	{"check",
	 "usage: drape check SCENE.json [--max-pairs N] [--server URL] [--json]\n"
	 "\n"
	 "Loads the scene and reports the cloth's topology (vertices, triangles, edges,\n"
	 "bending pairs, boundary/non-manifold/degenerate edges, pins) and the pairs of\n"
	 "triangles that intersect (up to --max-pairs, default 16). Runs in process; with\n"
	 "--server the intersection test runs on the server. Exit 65 if any pair\n"
	 "intersects (the solver cannot untangle a cloth that starts tangled).\n",
	 cli_cmd_check},
};

void cli_usage(const char *cmd, bool to_stderr)
{
	FILE *f = to_stderr ? stderr : stdout;
	if (cmd != NULL)
		for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
			if (strcmp(commands[i].name, cmd) == 0) {
				fputs(commands[i].usage, f);
				return;
			}
	fputs(overview, f);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		cli_usage(NULL, true);
		return CLI_USAGE;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		cli_usage(argc > 2 ? argv[2] : NULL, false);
		return CLI_OK;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("drape %s\n", DRAPE_CLIENT_VERSION);
		return CLI_OK;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(commands[i].name, cmd) == 0)
			return commands[i].fn(argc, argv);
	fprintf(stderr, "drape: unknown command \"%s\"\n\n", cmd);
	cli_usage(NULL, true);
	return CLI_USAGE;
}

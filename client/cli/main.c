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
	"  export ID           write a finished session's frames (--format obj|pc2|mdd|geo)\n"
	"  resume ID           continue a run a daemon restart interrupted (needs its owner token)\n"
	"  status [ID]         show a session, or the server without ID\n"
	"  sessions            list the server's sessions: owner, host, age, progress, memory, disk\n"
	"  admin hash-token    write a line of draped's --users-file\n"
	"  cancel ID           stop a session's run (needs its owner token)\n"
	"  delete ID           delete a session and its frames (needs its owner token)\n"
	"  check SCENE.json    report the cloth's topology and intersecting triangles\n"
	"  loadtest            many concurrent clients run sessions: throughput, latency, errors\n"
	"  submit SCENE...     a Slurm job array of resumable batch runs (scenes x wedges)\n"
	"  farm status DIR     the state and frames of the tasks drape submit put in DIR\n"
	"  preview SCENE.json  a PNG of the cloth at a frame, or a contact sheet of frames\n"
	"\n"
	"common options:\n"
	"  --server URL        control URL of draped (ipc://PATH, tcp://HOST:PORT);\n"
	"                      default $DRAPE_SERVER, else " DRAPE_DEFAULT_URL ", except that\n"
	"                      `run` without either starts a private embedded server.\n"
	"                      Several URLs separated by commas are a pool: `run` places\n"
	"                      the session on the least-loaded box; ID commands go to the\n"
	"                      box `run` placed session ID on\n"
	"  --token-file F      the server's auth token (first line of F); $DRAPE_TOKEN also works\n"
	"  --tls-ca F          for tls+tcp:// servers: the PEM CA certificate that signed the\n"
	"                      server's certificate (a self-signed server: that certificate);\n"
	"                      required for TLS, nothing is trusted by default\n"
	"  --tls-cert F        client certificate (PEM), for a server started with --tls-ca\n"
	"  --tls-key F         its private key (PEM, not encrypted)\n"
	"  --tls-server-name N name the server's certificate must carry (default: the URL's host)\n"
	"  --timeout MS        request timeout (default 10000)\n"
	"  --json              machine-readable output on stdout\n"
	"  -h, --help          this text; `drape COMMAND --help` for a command\n"
	"\n"
	"owner tokens:\n"
	"  Each session belongs to the token session.create returns; cancel, delete and\n"
	"  resume need it. `drape run --server URL` prints it and saves it to\n"
	"  ~/.cache/drape/tokens/<hash of URL>-<ID> ($XDG_CACHE_HOME/drape/tokens when set,\n"
	"  mode 0600), where they find it; from another machine or account pass it with\n"
	"  --owner-token HEX.\n"
	"\n"
	"exit status (sysexits):\n"
	"  0 success, 1 run canceled by someone else, 64 usage (also a malformed server URL),\n"
	"  65 bad input data (scene, session id, failed run), 66 scene or a mesh it names\n"
	"  missing, 69 server unavailable, 70 internal error, 74 cannot write frames, 75 session\n"
	"  busy or server full (retry later), 76 protocol error, 77 not permitted, 130\n"
	"  interrupted, 143 terminated (run --state-dir: checkpointed, resumable).\n"
	"\n"
	"environment:\n"
	"  DRAPE_SERVER  the default --server (a URL, or a comma-separated pool)\n"
	"  DRAPED        the draped binary the embedded server runs (default: next to drape)\n"
	"  DRAPE_TOKEN   the server's auth token, when --token-file is not given\n"
	"  DRAPE_TLS_CA, DRAPE_TLS_CERT, DRAPE_TLS_KEY\n"
	"                the TLS files, when --tls-ca, --tls-cert, --tls-key are not given\n";

static const struct {
	const char *name;
	const char *usage;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{"run",
	 "usage: drape run SCENE.json [--server URL] [--out DIR] [--frames N] [--json]\n"
	 "                 [--material NAME] [--token-file F] [--local] [--threads N] [--quiet]\n"
	 "                 [--timeout MS]\n"
	 "                 [--state-dir DIR] [--set KEY=VALUE]...\n"
	 "                 [--format obj|pc2|mdd|geo] [--rm]\n"
	 "\n"
	 "Loads the scene (see client/SCENE.md), creates a session with its cloth, pins and\n"
	 "colliders, runs it, and receives every frame in order.\n"
	 "\n"
	 "  --out DIR       write DIR/frame_0001.obj ... (the scene's triangulated mesh);\n"
	 "                  frames before the scene's \"start_frame\" are solved, not written\n"
	 "  --format F      what --out holds (README.md, Caches): obj (default; a cloth read\n"
	 "                  from an OBJ keeps its faces, UVs and groups, with new normals),\n"
	 "                  pc2 (DIR/cloth.pc2, one file), mdd (DIR/cloth.mdd, one file), geo\n"
	 "                  (DIR/frame_NNNN.geo, Houdini JSON with P and velocity v)\n"
	 "  --rm            with --server: delete the session once its frames are written\n"
	 "  --frames N      frames to solve (default: the scene's \"frames\")\n"
	 "  --material NAME a fabric preset (cotton, denim, silk, ...; see README.md,\n"
	 "                  Materials) in place of the scene's cloth material\n"
	 "  --json          first {\"session\":ID,\"owner_token\":HEX,\"server\":URL,...}, then one\n"
	 "                  JSON object per frame on stdout,\n"
	 "                  {\"frame\":N,\"sim_ms\":..,\"max_strain\":..,...}, then {\"summary\":{...}}\n"
	 "  --server URL    use a running draped; prints the session id and owner token\n"
	 "                  (stderr) and saves the token for cancel/delete. Without it, a\n"
	 "                  private draped runs on an ipc socket in a temporary folder and\n"
	 "                  is stopped at the end ($DRAPED, or draped next to drape).\n"
	 "  --local         no server at all: the solver runs in this process (to measure\n"
	 "                  the server's overhead, or to work without draped)\n"	 "  --threads N     solver threads of the embedded server or of --local (default:\n"
	 "                  one per core); frames are bit-identical whatever N. Not with\n"
	 "                  --server (a running draped has its own --threads/--pool-threads)\n"
	 "  --quiet         no progress bar (shown on stderr when it is a terminal) or summary\n"
	 "  --state-dir DIR a resumable batch run: the embedded server checkpoints into\n"
	 "                  DIR/daemon, frames go to DIR/frames (or --out); run again with\n"
	 "                  the same DIR to continue from the last checkpoint, keeping the\n"
	 "                  frames written. SIGTERM checkpoints and exits 143; a lost or\n"
	 "                  busy server exits 75 (retry); see README.md, Farm\n"
	 "  --set KEY=VALUE override a scene key: a dotted path (cloth.material, wind.drag)\n"
	 "                  and a JSON value or a bare word; repeatable\n"
	 "\n"
	 "Ctrl-C cancels the session and stops the embedded server (exit 130); with\n"
	 "--state-dir the session is kept instead, to continue later.\n"
	 "$DRAPE_SERVER is the default --server; it may list several URLs separated by\n"
	 "commas (a pool): the session goes to the least-loaded box that answers.\n",
	 cli_cmd_run},
	{"attach",
	 "usage: drape attach ID [--server URL] [--out DIR] [--scene SCENE.json] [--from N]\n"
	 "                    [--owner-token HEX] [--json] [--token-file F] [--format F]\n"
	 "\n"
	 "Writes every frame session ID still holds and, while it runs, the rest as they\n"
	 "come; returns when the run ends. Needs the owner token (the server gives a\n"
	 "session's frames to nobody else): the one `drape run --server URL` saved, or\n"
	 "--owner-token HEX; exit 77 without it or with the wrong one.\n"
	 "\n"
	 "  --out DIR       write DIR/frame_NNNN.obj (or --format pc2|mdd|geo, as for run);\n"
	 "                  the faces come from the server (session.topology)\n"
	 "  --scene FILE    the scene the session was made from: OBJ frames then keep its\n"
	 "                  OBJ's faces, UVs and groups\n"
	 "  --from N        start at frame N (after a reconnect, the first frame not yet seen)\n",
	 cli_cmd_attach},
	{"export",
	 "usage: drape export ID --out DIR [--format obj|pc2|mdd|geo] [--server URL]\n"
	 "                    [--scene SCENE.json] [--from N] [--owner-token HEX] [--json]\n"
	 "\n"
	 "Writes the frames a finished session (done, canceled or failed) still holds, from\n"
	 "the oldest (or --from N), in the --format of run, with the mesh from the server.\n"
	 "Needs the owner token like attach. Exit 75 while the session is still running\n"
	 "(drape attach follows a run), 65 when it has no frame.\n",
	 cli_cmd_export},
	{"resume",
	 "usage: drape resume ID [--server URL] [--out DIR] [--scene SCENE.json] [--from N]\n"
	 "                    [--owner-token HEX] [--json] [--quiet] [--token-file F]\n"
	 "\n"
	 "Continues a run that a daemon crash or restart interrupted (the daemon reloads\n"
	 "its sessions from --state-dir and lists them as canceled), then follows it to\n"
	 "the end like attach. Needs the owner token: the one `drape run --server URL`\n"
	 "saved, or --owner-token HEX. With --out, every frame the folder lacks is\n"
	 "written: those solved before the interruption but never received (fetched\n"
	 "from the server's frame cache) and the new ones, the same, bit for bit, as\n"
	 "those of a run that was never interrupted.\n"
	 "\n"
	 "  --out DIR       write DIR/frame_NNNN.obj from the first frame DIR lacks on\n"
	 "  --scene FILE    the scene the session was made from, for the OBJ faces\n"
	 "  --from N        write frames from N on (default: the first frame --out lacks,\n"
	 "                  or the first new frame without --out)\n"
	 "\n"
	 "Ctrl-C stops following; the session keeps running. Exit 65 if the run fails,\n"
	 "1 if someone cancels it, 75 if it is already running or has nothing to resume.\n",
	 cli_cmd_resume},
	{"status",
	 "usage: drape status [ID] [--server URL] [--json] [--token-file F]\n"
	 "\n"
	 "With ID: the session's state, frames, mesh and last error. Without: the server's\n"
	 "build, stream URL, sessions, memory and counters.\n",
	 cli_cmd_status},
	{"sessions",
	 "usage: drape sessions [--server URL] [--all] [--json] [--token-file F]\n"
	 "\n"
	 "Lists sessions: id, owner, host, age, state, progress (done/target), memory,\n"
	 "disk, name. Against a draped with --users-file, your own sessions; --all\n"
	 "(admins only) every user's.\n",
	 cli_cmd_sessions},
	{"admin",
	 "usage: drape admin hash-token NAME ROLE [--token-file F]\n"
	 "\n"
	 "Writes a line of draped's --users-file on stdout: NAME, ROLE (user or admin)\n"
	 "and the salted SHA-256 of the user's token. With --token-file F the token is\n"
	 "read from F, or, when F does not exist, a new random one is written there\n"
	 "(mode 0600); without it a new token is printed on stderr. The user passes the\n"
	 "token as the auth token (drape --token-file, DRAPE_TOKEN).\n",
	 cli_cmd_admin},
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
	 "triangles that intersect (up to --max-pairs, default 16), the frames written,\n"
	 "and each animated collider's samples and frame range; the cloth's pieces and\n"
	 "how many have no pin, the cloth vertices that start inside a mesh collider\n"
	 "(count, deepest, which), and a warning when a size suggests a mesh not in\n"
	 "metres. Runs in process; with --server the intersection test runs on the\n"
	 "server. Intersecting pairs are reported, not an error: self-collision\n"
	 "releases a tangled start until it no longer intersects.\n",
	 cli_cmd_check},
	{"loadtest",
	 "usage: drape loadtest [--server URL] [--clients N] [--sessions-per-client M]\n"
	 "                      [--frames F] [--vertices V] [--stalled-clients K]\n"
	 "                      [--stalled-vertices V] [--churn R] [--poll] [--json]\n"
	 "                      [--token-file F] [--timeout MS]\n"
	 "\n"
	 "Runs N concurrent clients (threads, each with its own connection). Each creates\n"
	 "M sessions one after another (a pinned grid sheet of about V vertices), runs F\n"
	 "frames, receives every frame with drape_next_frame and verifies it (index in\n"
	 "order without gaps, vertex count, finite values), checks the final status and\n"
	 "deletes the session. Prints frames/s, MB/s of positions received, request\n"
	 "latency p50/p99 (create, run, status, delete) and frame wait p50/p99 (each\n"
	 "drape_next_frame call), and the error and lost-frame counts.\n"
	 "\n"
	 "  --clients N              concurrent clients, 1..1024 (default 4)\n"
	 "  --sessions-per-client M  sessions each client runs in turn, 1..10000 (default 1)\n"
	 "  --frames F               frames per session (default 24)\n"
	 "  --vertices V             vertices per sheet, about (default 1024)\n"
	 "  --stalled-clients K      K more clients each run one session of\n"
	 "                           --stalled-vertices (default 4096) until the others\n"
	 "                           finish, and never read a frame; they are canceled and\n"
	 "                           deleted at the end and not counted in the figures\n"
	 "  --churn R                instead of running sessions, each client connects\n"
	 "                           (hello), creates and deletes a session on every other\n"
	 "                           round, and closes, R times\n"
	 "  --poll                   frames.get asked every 10 ms, instead of held by the\n"
	 "                           server until the next frame is solved\n"
	 "  --json                   the figures as one JSON object on stdout\n"
	 "\n"
	 "Without --server an embedded draped runs it, as for `drape run`. Exit 0 when\n"
	 "every request succeeded and every frame arrived intact, 65 otherwise.\n",
	 cli_cmd_loadtest},
	{"submit",
	 "usage: drape submit SCENE.json... --out DIR [--wedge KEY=V1,V2,...]... [--frames N]\n"
	 "                    [--slurm \"sbatch options\"] [--dry-run]\n"
	 "\n"
	 "Submits a Slurm job array: one task per scene and combination of wedge values\n"
	 "(the cartesian product of every --wedge), each a resumable `drape run\n"
	 "--state-dir DIR/task_NNNN` with `--set KEY=VALUE` for its wedge values, so a\n"
	 "requeue continues from the task's last checkpoint. Parameters go to\n"
	 "DIR/task_NNNN/params.json and into the frames folder's name\n"
	 "(DIR/task_NNNN/SCENE_KEY=VALUE.../frame_NNNN.obj). Prints the job id.\n"
	 "\n"
	 "  --wedge KEY=V1,V2  a dotted scene key (cloth.material, wind.drag) and its values\n"
	 "                     (JSON, or bare words as strings); repeat for more keys\n"
	 "  --frames N         frames per task (default: each scene's \"frames\")\n"
	 "  --slurm \"OPTS\"     more sbatch options (--partition=..., --time=...)\n"
	 "  --dry-run          print the job script instead of submitting it\n",
	 cli_cmd_submit},
	{"farm",
	 "usage: drape farm status DIR [--json]\n"
	 "\n"
	 "Per task of a `drape submit --out DIR`: done, active or failed, Slurm's state\n"
	 "(sacct, or squeue when the cluster keeps no accounting) and the frames written.\n"
	 "Exit 0 when every task wrote all its frames, 75 while some are queued or\n"
	 "running, 1 when one left the queue without them.\n",
	 cli_cmd_farm},
	{"preview",
	 "usage: drape preview SCENE.json [--frames-dir DIR] [--frame N | --sheet N] [--out FILE.png]\n"
	 "                     [--size WxH] [--camera az,el[,dist] | auto] [--json]\n"
	 "       drape preview --session ID --scene SCENE.json [--server URL] [--owner-token HEX] ...\n"
	 "\n"
	 "Draws the cloth (front and back in two colours) and its colliders at a frame into\n"
	 "a PNG, shaded, on the CPU. The frames come from DIR/frame_NNNN.obj as `drape run\n"
	 "--out DIR` wrote them (--frames-dir), from a session of a running draped\n"
	 "(--session; needs its owner token and the scene, for the triangles), or else from\n"
	 "the solver run in this process. Frame 0 is the scene's own pose.\n"
	 "\n"
	 "  --frame N       the frame to draw (default: the last one)\n"
	 "  --sheet N       a contact sheet of N frames (2..64) spread evenly from the first\n"
	 "                  (0, or the first file in DIR) to the last, each labelled with its\n"
	 "                  number, all seen from one camera\n"
	 "  --out FILE      the PNG (default preview.png, or sheet.png for --sheet)\n"
	 "  --size WxH      image size, or each tile's for --sheet (default 640x480; 320x240)\n"
	 "  --camera A,E,D  azimuth and elevation in degrees (azimuth about +Y from +Z towards\n"
	 "                  +X) and distance in metres from the centre of the cloth's bounds;\n"
	 "                  without D, or with auto (35,20), the cloth fills the frame\n"
	 "  --json          {\"out\":..,\"frames\":[..],\"render_ms\":..} on stdout\n",
	 cli_cmd_preview},
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

/*
 * drape CLI: `drape submit`, batch runs on Slurm. Every combination of a
 * scene and one value of each --wedge (their cartesian product) is one task
 * of one job array; each task is a resumable batch run (`drape run
 * --state-dir DIR/task_NNNN`), so a requeue (preemption, a node lost, a
 * retry) continues from the task's last checkpoint and keeps the frames it
 * wrote. The task's parameters are in DIR/task_NNNN/params.json and in the
 * name of its frames folder.
 *
 *   DIR/job_<time>.sh            the job script handed to sbatch
 *   DIR/jobs                     the job ids submitted, one a line
 *   DIR/task_NNNN/params.json    {"task":N,"scene":..,"set":{..},"frames":N,"frames_dir":..}
 *   DIR/task_NNNN/<scene>[_KEY=VALUE...]/frame_NNNN.obj
 */
#include "client/cli/cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SUBMIT_MAX_WEDGES 8
#define SUBMIT_MAX_VALUES 64
#define SUBMIT_MAX_SCENES 256
#define SUBMIT_MAX_TASKS 10000

typedef struct wedge {
	char key[128];
	char *values[SUBMIT_MAX_VALUES];
	int count;
} wedge;

/* Splits "KEY=V1,V2,..." at the commas outside brackets and quotes (so an
 * array value [0,1,0] stays whole). Returns false with a message. */
static bool wedge_parse(const char *arg, wedge *w)
{
	const char *eq = strchr(arg, '=');
	if (eq == NULL || eq == arg || (size_t)(eq - arg) >= sizeof w->key || eq[1] == '\0') {
		fprintf(stderr, "drape submit: --wedge: expected KEY=V1,V2,..., got \"%s\"\n", arg);
		return false;
	}
	memcpy(w->key, arg, (size_t)(eq - arg));
	w->key[eq - arg] = '\0';
	const char *p = eq + 1, *start = p;
	int depth = 0;
	bool quoted = false;
	for (;; p++) {
		if (*p == '"')
			quoted = !quoted;
		else if (!quoted && (*p == '[' || *p == '{'))
			depth++;
		else if (!quoted && (*p == ']' || *p == '}'))
			depth--;
		if (*p == '\0' || (*p == ',' && depth == 0 && !quoted)) {
			if (p == start) {
				fprintf(stderr, "drape submit: --wedge %s: an empty value\n", w->key);
				return false;
			}
			if (w->count >= SUBMIT_MAX_VALUES) {
				fprintf(stderr, "drape submit: --wedge %s: more than %d values\n", w->key,
					SUBMIT_MAX_VALUES);
				return false;
			}
			w->values[w->count] = strndup(start, (size_t)(p - start));
			if (w->values[w->count] == NULL)
				return false;
			w->count++;
			if (*p == '\0')
				break;
			start = p + 1;
		}
	}
	return true;
}

/* Quotes s for sh in single quotes. */
static void sh_quote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

/* A folder-name-safe copy of s: '/', spaces and quotes become '_'. */
static void safe_name(char *out, size_t size, const char *s)
{
	size_t n = 0;
	for (; *s && n + 1 < size; s++)
		out[n++] = (*s == '/' || *s == ' ' || *s == '\'' || *s == '"' || *s == '\\' || *s < 0x20)
				   ? '_'
				   : *s;
	out[n] = '\0';
}

static bool mkdir_p(const char *path)
{
	char buf[4096];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return false;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return false;
		*p = '/';
	}
	return mkdir(buf, 0777) == 0 || errno == EEXIST;
}

static const char submit_usage[] =
	"usage: drape submit SCENE.json... --out DIR [--wedge KEY=V1,V2,...]... [--frames N]\n"
	"                    [--slurm \"sbatch options\"] [--dry-run]\n";

int cli_cmd_submit(int argc, char **argv)
{
	const char *scenes[SUBMIT_MAX_SCENES];
	int nscenes = 0, nwedges = 0;
	wedge wedges[SUBMIT_MAX_WEDGES];
	memset(wedges, 0, sizeof wedges);
	const char *out = NULL, *slurm = NULL;
	uint32_t frames = 0;
	bool dry = false;
	int x = CLI_USAGE;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			cli_usage("submit", false);
			return CLI_OK;
		} else if (strcmp(a, "--dry-run") == 0) {
			dry = true;
		} else if (strcmp(a, "--out") == 0 || strcmp(a, "--slurm") == 0 || strcmp(a, "--wedge") == 0 ||
			   strcmp(a, "--frames") == 0) {
			if (v == NULL) {
				fprintf(stderr, "drape submit: %s needs a value\n", a);
				goto done;
			}
			i++;
			if (a[2] == 'o') {
				out = v;
			} else if (a[2] == 's') {
				slurm = v;
			} else if (a[2] == 'f') {
				char *end;
				errno = 0;
				unsigned long n = strtoul(v, &end, 10);
				if (errno != 0 || *end != '\0' || n == 0 || n > 1000000 || v[0] == '-') {
					fprintf(stderr, "drape submit: --frames: expected 1..1000000, got \"%s\"\n", v);
					goto done;
				}
				frames = (uint32_t)n;
			} else {
				if (nwedges >= SUBMIT_MAX_WEDGES) {
					fprintf(stderr, "drape submit: at most %d --wedge\n", SUBMIT_MAX_WEDGES);
					goto done;
				}
				if (!wedge_parse(v, &wedges[nwedges++]))
					goto done;
			}
		} else if (a[0] == '-') {
			fprintf(stderr, "drape submit: unknown option %s (see drape submit --help)\n", a);
			goto done;
		} else {
			if (nscenes >= SUBMIT_MAX_SCENES) {
				fprintf(stderr, "drape submit: at most %d scenes\n", SUBMIT_MAX_SCENES);
				goto done;
			}
			scenes[nscenes++] = a;
		}
	}
	if (nscenes == 0 || out == NULL) {
		fprintf(stderr, "drape submit: %s\n%s", nscenes == 0 ? "expected a SCENE.json" : "--out DIR is required",
			submit_usage);
		goto done;
	}
	/* The tasks run on other nodes, from another folder: absolute paths. */
	char *abs_scenes[SUBMIT_MAX_SCENES] = {0};
	for (int i = 0; i < nscenes; i++) {
		abs_scenes[i] = realpath(scenes[i], NULL);
		if (abs_scenes[i] == NULL) {
			fprintf(stderr, "drape submit: %s: %s\n", scenes[i], strerror(errno));
			x = errno == ENOENT ? CLI_NOINPUT : CLI_IOERR;
			for (int k = 0; k < i; k++)
				free(abs_scenes[k]);
			goto done;
		}
	}
	long ntasks = nscenes;
	for (int w = 0; w < nwedges; w++)
		ntasks *= wedges[w].count;
	char self[PATH_MAX], outabs[PATH_MAX], script[PATH_MAX + 64];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	if (ntasks > SUBMIT_MAX_TASKS || sl <= 0) {
		fprintf(stderr, ntasks > SUBMIT_MAX_TASKS ? "drape submit: %ld tasks, more than %d\n"
							  : "drape submit: cannot find the drape binary\n",
			ntasks, SUBMIT_MAX_TASKS);
		x = sl <= 0 ? CLI_SOFTWARE : CLI_USAGE;
		goto free_scenes;
	}
	self[sl] = '\0';
	if (!mkdir_p(out) || realpath(out, outabs) == NULL) {
		fprintf(stderr, "drape submit: cannot create --out %s: %s\n", out, strerror(errno));
		x = CLI_IOERR;
		goto free_scenes;
	}
	snprintf(script, sizeof script, "%s/job_%lld.sh", outabs, (long long)time(NULL));
	char *text = NULL;
	size_t text_len = 0;
	FILE *f = open_memstream(&text, &text_len);
	if (f == NULL) {
		x = CLI_SOFTWARE;
		goto free_scenes;
	}
	fprintf(f, "#!/bin/sh\n# written by drape submit: %ld tasks, each a resumable batch run\n", ntasks);
	fprintf(f, "#SBATCH --job-name=drape\n#SBATCH --array=1-%ld\n#SBATCH --requeue\n", ntasks);
	fprintf(f, "#SBATCH --open-mode=append\n#SBATCH --output=%s/task_%%4a/slurm.out\n", outabs);
	if (slurm != NULL)
		fprintf(f, "# sbatch options given with --slurm (on the sbatch command line): %s\n", slurm);
	fprintf(f, "# The farm contract (README, Farm): 0 done, 143 checkpointed on SIGTERM,\n"
		   "# 75 retryable, 64/65/66 bad input (do not retry).\n"
		   "unset DRAPE_SERVER\ncase \"$SLURM_ARRAY_TASK_ID\" in\n");
	for (long t = 0; t < ntasks && x == CLI_USAGE; t++) {
		long rest = t;
		int si = (int)(rest % nscenes);
		rest /= nscenes;
		char taskdir[PATH_MAX + 32], name[1024], frames_dir[PATH_MAX + 1100];
		snprintf(taskdir, sizeof taskdir, "%s/task_%04ld", outabs, t + 1);
		const char *base = strrchr(abs_scenes[si], '/') + 1;
		size_t bl = strcspn(base, ".");
		snprintf(name, sizeof name, "%.*s", (int)bl, base);
		cJSON *params = cJSON_CreateObject(), *set = cJSON_CreateObject();
		cJSON_AddNumberToObject(params, "task", (double)(t + 1));
		cJSON_AddStringToObject(params, "scene", abs_scenes[si]);
		fprintf(f, "%ld) exec ", t + 1);
		sh_quote(f, self);
		fputs(" run ", f);
		sh_quote(f, abs_scenes[si]);
		for (int w = 0; w < nwedges; w++) {
			const char *val = wedges[w].values[rest % wedges[w].count];
			rest /= wedges[w].count;
			char setarg[1200], piece[400];
			snprintf(setarg, sizeof setarg, "%.127s=%.1000s", wedges[w].key, val);
			fputs(" --set ", f);
			sh_quote(f, setarg);
			snprintf(piece, sizeof piece, "_%.100s=%.250s", wedges[w].key, val);
			size_t nl = strlen(name);
			safe_name(name + nl, sizeof name - nl, piece);
			cJSON *jv = cJSON_Parse(val);
			cJSON_AddItemToObject(set, wedges[w].key, jv ? jv : cJSON_CreateString(val));
		}
		snprintf(frames_dir, sizeof frames_dir, "%s/%s", taskdir, name);
		cJSON_AddItemToObject(params, "set", set);
		if (frames > 0)
			cJSON_AddNumberToObject(params, "frames", frames);
		cJSON_AddStringToObject(params, "frames_dir", frames_dir);
		if (frames > 0)
			fprintf(f, " --frames %u", (unsigned)frames);
		fputs(" --state-dir ", f);
		sh_quote(f, taskdir);
		fputs(" --out ", f);
		sh_quote(f, frames_dir);
		fputs(" --json --quiet ;;\n", f);
		char *pj = cJSON_Print(params);
		cJSON_Delete(params);
		if (!dry) {
			char pp[PATH_MAX + 64];
			snprintf(pp, sizeof pp, "%s/params.json", taskdir);
			FILE *pf = mkdir_p(taskdir) ? fopen(pp, "w") : NULL;
			if (pf == NULL || pj == NULL || fprintf(pf, "%s\n", pj) < 0 || fclose(pf) != 0) {
				fprintf(stderr, "drape submit: cannot write %s: %s\n", pp, strerror(errno));
				x = CLI_IOERR;
			}
		}
		cJSON_free(pj);
	}
	fputs("*) echo \"drape: no task $SLURM_ARRAY_TASK_ID in this job\" >&2; exit 64 ;;\nesac\n", f);
	fclose(f);
	if (x != CLI_USAGE)
		goto free_text;
	if (dry) {
		fputs(text, stdout);
		x = CLI_OK;
		goto free_text;
	}
	FILE *sf = fopen(script, "w");
	if (sf == NULL || fputs(text, sf) < 0 || fclose(sf) != 0) {
		fprintf(stderr, "drape submit: cannot write %s: %s\n", script, strerror(errno));
		x = CLI_IOERR;
		goto free_text;
	}
	/* sbatch --parsable prints "JOBID" (or "JOBID;CLUSTER"). */
	char cmd[8192];
	snprintf(cmd, sizeof cmd, "sbatch --parsable %s '%s'", slurm ? slurm : "", script);
	FILE *p = popen(cmd, "r");
	char line[256] = "";
	bool got = p != NULL && fgets(line, sizeof line, p) != NULL;
	int st = p != NULL ? pclose(p) : -1;
	line[strcspn(line, ";\r\n")] = '\0';
	if (!got || st != 0 || line[0] < '0' || line[0] > '9') {
		fprintf(stderr, "drape submit: sbatch failed (%s); the script is %s\n",
			p == NULL ? strerror(errno)
			: WIFEXITED(st) && WEXITSTATUS(st) == 127 ? "sbatch not found: is Slurm installed?"
								 : "see its message above",
			script);
		x = CLI_UNAVAILABLE;
		goto free_text;
	}
	char jobs[PATH_MAX + 16];
	snprintf(jobs, sizeof jobs, "%s/jobs", outabs);
	FILE *jf = fopen(jobs, "a");
	if (jf == NULL || fprintf(jf, "%s\n", line) < 0 || fclose(jf) != 0)
		fprintf(stderr, "drape submit: warning: cannot record the job id in %s\n", jobs);
	printf("%s\n", line);
	fprintf(stderr, "drape: job %s: %ld tasks, script %s; drape farm status %s\n", line, ntasks, script, outabs);
	x = CLI_OK;
free_text:
	free(text);
free_scenes:
	for (int i = 0; i < nscenes; i++)
		free(abs_scenes[i]);
done:
	for (int w = 0; w < nwedges; w++)
		for (int k = 0; k < wedges[w].count; k++)
			free(wedges[w].values[k]);
	return x;
}

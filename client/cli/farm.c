/*
 * drape CLI: `drape farm status DIR`, the state of the tasks `drape submit`
 * put under DIR. Per task: the scheduler's state (sacct when Slurm keeps
 * accounting, else squeue for the tasks still queued or running) and the
 * frames written, counted on disk, which is what a task's exit 0 promises.
 * Exit 0 when every task has all its frames; 75 while some are pending or
 * running; 1 when a task left the queue without them (failed, canceled).
 */
#include "client/cli/cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FARM_MAX_TASKS 10000

typedef struct farm_task {
	char state[32];  /* the scheduler's word; "" = not known to it */
	uint32_t frames; /* the run's frame count (from its session.json), 0 = not started */
	uint32_t written;
	char frames_dir[PATH_MAX];
} farm_task;

/* Reads a small JSON file; NULL when missing or broken. */
static cJSON *read_json(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return NULL;
	char buf[16384];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return cJSON_Parse(buf);
}

/* Parses scheduler lines "JOBID_TASK STATE" (sacct -P uses '|') into the
 * task table; the job-array summary lines ("123_[1-3]") are skipped. */
static int read_states(const char *cmd, farm_task *t, long n)
{
	FILE *p = popen(cmd, "r");
	if (p == NULL)
		return -1;
	char line[512];
	int got = 0;
	while (fgets(line, sizeof line, p) != NULL) {
		char *us = strchr(line, '_');
		if (us == NULL || us[1] < '0' || us[1] > '9')
			continue;
		char *end;
		long idx = strtol(us + 1, &end, 10);
		while (*end == '|' || *end == ' ')
			end++;
		if (idx < 1 || idx > n)
			continue;
		end[strcspn(end, " |\r\n")] = '\0';
		/* Requeued tasks appear more than once in sacct: the last
		 * line is the current attempt. */
		snprintf(t[idx - 1].state, sizeof t[idx - 1].state, "%s", end);
		got++;
	}
	int st = pclose(p);
	return st == 0 ? got : -1;
}

int cli_cmd_farm(int argc, char **argv)
{
	bool json = false;
	const char *dir = NULL;
	if (argc >= 3 && (strcmp(argv[2], "-h") == 0 || strcmp(argv[2], "--help") == 0)) {
		cli_usage("farm", false);
		return CLI_OK;
	}
	if (argc < 3 || strcmp(argv[2], "status") != 0) {
		fprintf(stderr, "drape farm: expected `drape farm status DIR`\n");
		return CLI_USAGE;
	}
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (argv[i][0] == '-' || dir != NULL) {
			fprintf(stderr, "drape farm status: unexpected argument \"%s\"\n", argv[i]);
			return CLI_USAGE;
		} else
			dir = argv[i];
	}
	if (dir == NULL) {
		fprintf(stderr, "drape farm status: expected the DIR given to drape submit --out\n");
		return CLI_USAGE;
	}
	long n = 0;
	for (;; n++) {
		char path[PATH_MAX + 64];
		snprintf(path, sizeof path, "%s/task_%04ld/params.json", dir, n + 1);
		struct stat sb;
		if (n >= FARM_MAX_TASKS || stat(path, &sb) != 0)
			break;
	}
	if (n == 0) {
		fprintf(stderr, "drape farm status: %s holds no task (no task_0001/params.json): not a drape "
				"submit --out folder\n",
			dir);
		return CLI_NOINPUT;
	}
	farm_task *t = calloc((size_t)n, sizeof *t);
	if (t == NULL)
		return CLI_SOFTWARE;
	for (long i = 0; i < n; i++) {
		char path[PATH_MAX + 64];
		snprintf(path, sizeof path, "%s/task_%04ld/params.json", dir, i + 1);
		cJSON *p = read_json(path);
		const cJSON *fd = cJSON_GetObjectItemCaseSensitive(p, "frames_dir");
		if (cJSON_IsString(fd))
			snprintf(t[i].frames_dir, sizeof t[i].frames_dir, "%s", fd->valuestring);
		cJSON_Delete(p);
		snprintf(path, sizeof path, "%s/task_%04ld/session.json", dir, i + 1);
		cJSON *s = read_json(path);
		const cJSON *fr = cJSON_GetObjectItemCaseSensitive(s, "frames");
		if (cJSON_IsNumber(fr) && fr->valuedouble >= 1 && fr->valuedouble <= 1000000)
			t[i].frames = (uint32_t)fr->valuedouble;
		cJSON_Delete(s);
		for (uint32_t k = 1; k <= t[i].frames; k++) {
			char fp[PATH_MAX + 32];
			snprintf(fp, sizeof fp, "%s/frame_%04u.obj", t[i].frames_dir, (unsigned)k);
			struct stat sb;
			if (stat(fp, &sb) == 0 && S_ISREG(sb.st_mode))
				t[i].written++;
		}
	}
	/* The job ids drape submit recorded; the newest submission wins. */
	char jobs_path[PATH_MAX + 16], job[64] = "";
	snprintf(jobs_path, sizeof jobs_path, "%s/jobs", dir);
	FILE *jf = fopen(jobs_path, "r");
	if (jf != NULL) {
		char line[64];
		while (fgets(line, sizeof line, jf) != NULL)
			if (line[0] >= '0' && line[0] <= '9')
				snprintf(job, sizeof job, "%.*s", (int)strspn(line, "0123456789"), line);
		fclose(jf);
	}
	const char *source = "none";
	if (job[0] != '\0') {
		char cmd[256];
		snprintf(cmd, sizeof cmd, "sacct -n -P -X -D -j %s -o JobID,State 2>/dev/null", job);
		if (read_states(cmd, t, n) > 0) {
			source = "sacct";
		} else {
			/* No accounting (accounting_storage/none): squeue knows the
			 * tasks still queued or running; the rest have ended, and
			 * the frames on disk say how. */
			snprintf(cmd, sizeof cmd, "squeue -h -r -j %s -o '%%i %%T' 2>/dev/null", job);
			source = read_states(cmd, t, n) >= 0 ? "squeue" : "none";
		}
	}
	long done = 0, active = 0, failed = 0;
	for (long i = 0; i < n; i++) {
		bool complete = t[i].frames > 0 && t[i].written == t[i].frames;
		const char *st = t[i].state;
		bool queued = strcmp(st, "PENDING") == 0 || strcmp(st, "RUNNING") == 0 ||
			      strcmp(st, "REQUEUED") == 0 || strcmp(st, "CONFIGURING") == 0 ||
			      strcmp(st, "COMPLETING") == 0 || strcmp(st, "SUSPENDED") == 0 ||
			      strcmp(st, "REQUEUE_HOLD") == 0 || strcmp(st, "PREEMPTED") == 0;
		const char *word;
		if (complete && !queued) {
			word = "done";
			done++;
		} else if (queued) {
			word = "active";
			active++;
		} else {
			word = "failed";
			failed++;
		}
		if (st[0] == '\0')
			st = complete ? "ENDED" : "UNKNOWN";
		if (json) {
			printf("{\"task\":%ld,\"state\":\"%s\",\"slurm\":", i + 1, word);
			cli_json_str(stdout, st);
			printf(",\"frames\":%u,\"written\":%u,\"frames_dir\":", (unsigned)t[i].frames,
			       (unsigned)t[i].written);
			cli_json_str(stdout, t[i].frames_dir);
			printf("}\n");
		} else {
			printf("task_%04ld  %-7s %-12s %u/%u frames  %s\n", i + 1, word, st, (unsigned)t[i].written,
			       (unsigned)t[i].frames, t[i].frames_dir);
		}
	}
	if (json)
		printf("{\"summary\":{\"job\":\"%s\",\"tasks\":%ld,\"done\":%ld,\"active\":%ld,\"failed\":%ld,"
		       "\"source\":\"%s\"}}\n",
		       job, n, done, active, failed, source);
	else
		printf("job %s: %ld tasks, %ld done, %ld active, %ld failed (scheduler state from %s)\n",
		       job[0] ? job : "?", n, done, active, failed, source);
	free(t);
	return done == n ? CLI_OK : active > 0 ? CLI_TEMPFAIL : CLI_FAILED;
}

/*
 * Replays fuzz corpora through a target's LLVMFuzzerTestOneInput without
 * libFuzzer, so `make test` checks every stored input (the crashes found
 * included) with the ordinary build.
 *   fuzz_replay_NAME DIR_OR_FILE...
 * Every regular file of each directory (sorted by name, dot files skipped)
 * is read into a buffer of exactly its size and passed in, in this process.
 * A crash kills the process; a handler for the fatal signals (and the
 * sanitizers' death callback, when built with them) first prints a FAIL line
 * naming the file being replayed. Otherwise it prints one PASS line per
 * argument with the count of inputs, then "N passed, M failed". A directory
 * that is missing or empty is a failure: a corpus that vanished must not
 * pass quietly.
 */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Present only in sanitizer builds; weak so the plain build links. */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static const char *g_prog = "fuzz_replay";
static char g_current[4096];

static void say_current(const char *why)
{
	/* Only async-signal-safe calls here. */
	const char *parts[] = {"FAIL ", g_prog, ": ", g_current, " ", why, "\n"};
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
		ssize_t w = write(2, parts[i], strlen(parts[i]));
		(void)w;
	}
}

static void on_signal(int sig)
{
	say_current(sig == SIGABRT ? "crashed (abort)" : sig == SIGSEGV ? "crashed (SIGSEGV)" : "crashed (signal)");
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_sanitizer_death(void)
{
	say_current("crashed (sanitizer report above)");
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		printf("FAIL %s: cannot open %s\n", g_prog, path);
		return -1;
	}
	struct stat st;
	if (fstat(fileno(f), &st) != 0 || st.st_size < 0) {
		fclose(f);
		printf("FAIL %s: cannot stat %s\n", g_prog, path);
		return -1;
	}
	size_t n = (size_t)st.st_size;
	/* Exactly n bytes, so an overread past the input is a real overread
	 * under AddressSanitizer. malloc(0) may return NULL; pass a valid
	 * pointer anyway, as libFuzzer does. */
	uint8_t *buf = malloc(n > 0 ? n : 1);
	if (buf == NULL || (n > 0 && fread(buf, 1, n, f) != n)) {
		fclose(f);
		free(buf);
		printf("FAIL %s: cannot read %s\n", g_prog, path);
		return -1;
	}
	fclose(f);
	snprintf(g_current, sizeof g_current, "%s", path);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

/* Returns the number of inputs replayed, or -1 after printing a FAIL. */
static long replay_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d == NULL) {
		printf("FAIL %s: cannot open corpus %s\n", g_prog, dir);
		return -1;
	}
	char **names = NULL;
	size_t count = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (count == cap) {
			cap = cap ? cap * 2 : 256;
			char **grown = realloc(names, cap * sizeof *names);
			if (grown == NULL)
				abort();
			names = grown;
		}
		names[count++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, count, sizeof *names, by_name);
	long done = 0;
	for (size_t i = 0; i < count; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		struct stat st;
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			if (replay_file(path) != 0) {
				done = -1;
				break;
			}
			done++;
		}
	}
	for (size_t i = 0; i < count; i++)
		free(names[i]);
	free(names);
	return done;
}

int main(int argc, char **argv)
{
	const char *slash = strrchr(argv[0], '/');
	g_prog = slash ? slash + 1 : argv[0];
	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", g_prog);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGABRT, on_signal);
	signal(SIGSEGV, on_signal);
	signal(SIGBUS, on_signal);
	signal(SIGFPE, on_signal);
	signal(SIGILL, on_signal);
	if (__sanitizer_set_death_callback != NULL)
		__sanitizer_set_death_callback(on_sanitizer_death);

	int passed = 0, failed = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		long n;
		if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode))
			n = replay_file(argv[i]) == 0 ? 1 : -1;
		else
			n = replay_dir(argv[i]);
		if (n < 0) {
			failed++;
		} else if (n == 0) {
			printf("FAIL %s: no inputs in %s\n", g_prog, argv[i]);
			failed++;
		} else {
			printf("PASS %s: %ld inputs from %s replayed\n", g_prog, n, argv[i]);
			passed++;
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}

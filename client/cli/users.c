/*
 * drape admin: tools for the administrator of a shared draped. For now one,
 * hash-token, which writes a line of draped's --users-file.
 */
#include "client/cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/userhash.h"

/* A fresh token: 32 random bytes as 64 hex digits. */
static bool new_token(char out[65])
{
	uint8_t b[32];
	if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
		return false;
	for (size_t i = 0; i < sizeof b; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return true;
}

/* Reads a token file (trailing newline dropped); NULL with errno set. */
static char *read_token(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	char *buf = malloc(258);
	size_t n = buf ? fread(buf, 1, 257, f) : 0;
	fclose(f);
	if (buf == NULL)
		return NULL;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int hash_token(int argc, char **argv)
{
	static const char *const allowed[] = {"--token-file", NULL};
	cli_opts o;
	if (!cli_parse(argc, argv, 3, allowed, 2, "admin", &o))
		return CLI_USAGE;
	if (o.help) {
		cli_usage("admin", false);
		return CLI_OK;
	}
	if (o.nargs != 2) {
		fprintf(stderr, "drape admin hash-token: expected NAME and ROLE (user or admin)\n");
		cli_usage("admin", true);
		return CLI_USAGE;
	}
	char fresh[65];
	char *tok = NULL;
	size_t len = 0;
	bool made = false;
	if (o.token_file != NULL && access(o.token_file, F_OK) == 0) {
		tok = read_token(o.token_file, &len);
		if (tok == NULL) {
			fprintf(stderr, "drape admin hash-token: --token-file %s: %s\n", o.token_file, strerror(errno));
			return CLI_NOINPUT;
		}
	} else {
		if (!new_token(fresh)) {
			fprintf(stderr, "drape admin hash-token: getrandom failed: %s\n", strerror(errno));
			return CLI_SOFTWARE;
		}
		tok = fresh;
		len = strlen(fresh);
		made = true;
	}
	char line[PROTO_USER_LINE_MAX];
	drape_error err;
	drape_err rc = proto_user_line(o.args[0], o.args[1], (const uint8_t *)tok, len, line, &err);
	if (tok != fresh)
		free(tok);
	if (rc != DRAPE_OK) {
		fprintf(stderr, "drape admin hash-token: %s\n", err.message);
		return rc == DRAPE_EINVAL ? CLI_USAGE : CLI_SOFTWARE;
	}
	if (made && o.token_file != NULL) {
		/* The new token goes to the user's file, readable by them only. */
		int fd = open(o.token_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, fresh, strlen(fresh)) != (ssize_t)strlen(fresh) || write(fd, "\n", 1) != 1) {
			fprintf(stderr, "drape admin hash-token: --token-file %s: %s\n", o.token_file, strerror(errno));
			if (fd >= 0)
				close(fd);
			return CLI_IOERR;
		}
		close(fd);
		fprintf(stderr, "drape: a new token for %s is in %s\n", o.args[0], o.token_file);
	} else if (made) {
		fprintf(stderr, "drape: token for %s (give it to them; it is not stored anywhere): %s\n", o.args[0],
			fresh);
	}
	printf("%s\n", line);
	return CLI_OK;
}

int cli_cmd_admin(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[2], "hash-token") == 0)
		return hash_token(argc, argv);
	if (argc >= 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
		cli_usage("admin", false);
		return CLI_OK;
	}
	fprintf(stderr, "drape admin: expected a subcommand: hash-token\n");
	cli_usage("admin", true);
	return CLI_USAGE;
}

/*
 * drape CLI: scene overrides (`drape run --set KEY=VALUE`), the way a
 * wedge of `drape submit` varies one scene: the scene file's JSON with the
 * dotted keys replaced, loaded as if it were the file (relative mesh names
 * still resolve against the scene's folder).
 */
#include "client/cli/cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads a whole file (NUL-terminated); NULL with errno on failure. */
static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf != NULL) {
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
		if (n + 1 == cap) {
			char *nb = cap < ((size_t)1 << 28) ? realloc(buf, cap * 2) : NULL;
			if (nb == NULL) {
				free(buf);
				buf = NULL;
				errno = ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	fclose(f);
	if (buf != NULL) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

/* Applies one KEY=VALUE to the scene object. */
static drape_err apply_set(cJSON *root, const char *set, drape_error *err)
{
	const char *eq = strchr(set, '=');
	char key[256];
	size_t kl = (size_t)(eq - set);
	if (kl == 0 || kl >= sizeof key)
		return drape_error_setf(err, DRAPE_EINVAL, "--set %s: the key is empty or too long", set);
	memcpy(key, set, kl);
	key[kl] = '\0';
	const char *val = eq + 1;
	cJSON *v = cJSON_Parse(val);
	if (v == NULL)
		v = cJSON_CreateString(val); /* a bare word: a string */
	if (v == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "--set %s: out of memory", set);
	cJSON *obj = root;
	char *part = key;
	for (;;) {
		char *dot = strchr(part, '.');
		if (dot != NULL)
			*dot = '\0';
		if (part[0] == '\0') {
			cJSON_Delete(v);
			return drape_error_setf(err, DRAPE_EINVAL, "--set %s: empty part in the key", set);
		}
		if (dot == NULL) {
			if (cJSON_GetObjectItemCaseSensitive(obj, part) != NULL)
				cJSON_ReplaceItemInObjectCaseSensitive(obj, part, v);
			else
				cJSON_AddItemToObject(obj, part, v);
			return DRAPE_OK;
		}
		cJSON *next = cJSON_GetObjectItemCaseSensitive(obj, part);
		if (next == NULL) {
			next = cJSON_AddObjectToObject(obj, part);
		} else if (!cJSON_IsObject(next)) {
			cJSON_Delete(v);
			return drape_error_setf(err, DRAPE_EINVAL, "--set %s: \"%s\" is not an object in the scene",
						set, part);
		}
		if (next == NULL) {
			cJSON_Delete(v);
			return drape_error_setf(err, DRAPE_ENOMEM, "--set %s: out of memory", set);
		}
		obj = next;
		part = dot + 1;
	}
}

drape_err cli_scene_load_set(const char *path, const char *const *sets, int nsets, drape_scene *out,
			     drape_error *err)
{
	if (nsets == 0)
		return drape_scene_read(path, NULL, out, err);
	size_t len = 0;
	char *text = read_all(path, &len);
	if (text == NULL)
		return drape_error_setf(err, errno == ENOENT ? DRAPE_ENOTFOUND : DRAPE_EIO, "%s: cannot open: %s",
					path, strerror(errno));
	cJSON *root = cJSON_ParseWithLength(text, len);
	free(text);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		/* The loader says where the JSON is broken. */
		return drape_scene_read(path, NULL, out, err);
	}
	drape_err rc = DRAPE_OK;
	for (int i = 0; i < nsets && rc == DRAPE_OK; i++)
		rc = apply_set(root, sets[i], err);
	char *json = rc == DRAPE_OK ? cJSON_PrintUnformatted(root) : NULL;
	cJSON_Delete(root);
	if (rc != DRAPE_OK)
		return rc;
	if (json == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "--set: out of memory");
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash != NULL)
		*(slash == dir ? slash + 1 : slash) = '\0';
	rc = drape_scene_read_string(json, strlen(json), slash != NULL ? dir : NULL, path, NULL, out, err);
	cJSON_free(json);
	return rc;
}

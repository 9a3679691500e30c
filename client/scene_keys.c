/*
 * The scene parser's key check (scene_internal.h, scn_keys): every key of
 * a JSON object must be known, none repeated; an unknown one is named with
 * the nearest known key and the list of them.
 */
#include "client/scene_internal.h"

#include <stdio.h>
#include <string.h>

/* Levenshtein distance of two short keys, capped at 3 (more is "far"). */
static int key_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63 || (la > lb ? la - lb : lb - la) > 2)
		return 3;
	int row[64];
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j];
			int sub = diag + (a[i - 1] != b[j - 1]);
			int del = row[j] + 1, ins = row[j - 1] + 1;
			row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
			diag = up;
		}
	}
	return row[lb] < 3 ? row[lb] : 3;
}

/*
 * Checks that every key of `obj` is one of `keys` (NULL-terminated) and that
 * none repeats, so typos and copy-paste duplicates are reported rather than
 * ignored. The key "comment" is allowed everywhere, since JSON has no
 * comments.
 */
drape_err scn_keys(scn *c, const cJSON *obj, const char *const *keys)
{
	uint64_t seen = 0;
	int comment_seen = 0;
	for (const cJSON *it = obj->child; it != NULL; it = it->next) {
		const char *k = it->string ? it->string : "";
		int found = -1;
		for (int i = 0; keys[i] != NULL; i++)
			if (strcmp(k, keys[i]) == 0)
				found = i;
		size_t old = scn_push_key(c, k);
		if (found < 0 && strcmp(k, "comment") == 0) {
			if (comment_seen++)
				return scn_fail(c, DRAPE_EINVAL, "duplicate key");
			scn_pop(c, old);
			continue;
		}
		if (found < 0) {
			/* A typo's nearest key first (edit distance at most 2),
			 * then the keys, as many as the message holds: an
			 * object with many keys (a cloth) has more than fit. */
			char hint[96] = "";
			int best = 3;
			for (int i = 0; keys[i] != NULL; i++) {
				int d = key_distance(k, keys[i]);
				if (d < best) {
					best = d;
					snprintf(hint, sizeof hint, "did you mean \"%s\"? ", keys[i]);
				}
			}
			size_t room = DRAPE_ERROR_MESSAGE_MAX - 1;
			size_t fixed = strlen(c->name) + c->plen + 44 + strlen(hint);
			room = fixed < room ? room - fixed : 0;
			char list[256];
			size_t n = 0;
			list[0] = '\0';
			for (int i = 0; keys[i] != NULL; i++) {
				size_t need = strlen(keys[i]) + (i ? 2 : 0);
				if (n + need + (keys[i + 1] != NULL ? 5 : 0) > room ||
				    n + need + 1 > sizeof list) {
					snprintf(list + n, sizeof list - n, ", ...");
					break;
				}
				n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", keys[i]);
			}
			return scn_fail(c, DRAPE_EINVAL, "unknown key (%sexpected one of: %s)", hint, list);
		}
		if (seen & (1ull << found))
			return scn_fail(c, DRAPE_EINVAL, "duplicate key");
		seen |= 1ull << found;
		scn_pop(c, old);
	}
	return DRAPE_OK;
}

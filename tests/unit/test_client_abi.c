/*
 * Tests of what a binding checks before its first call: drape_version and
 * drape_abi_struct_size (client/version.c), and the end-of-run code. Run
 * from the repository root (tests/run.sh does): the layout test reads the
 * public headers to find every struct they define.
 */
#include "drape/drape.h"
#include "drape/scene.h"
#include "tests/unit/check.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each public struct with its size as this test program sees it. */
#define ABI_SIZE_(type) {#type, sizeof(type)}
static const struct {
	const char *name;
	size_t size;
} known[] = {
	ABI_SIZE_(drape_error),        ABI_SIZE_(drape_sim_params),    ABI_SIZE_(drape_sim_desc),
	ABI_SIZE_(drape_stitch),       ABI_SIZE_(drape_sim_object),    ABI_SIZE_(drape_object_desc),
	ABI_SIZE_(drape_sim_topology), ABI_SIZE_(drape_sim_stats),     ABI_SIZE_(drape_keyframe),
	ABI_SIZE_(drape_collider_desc), ABI_SIZE_(drape_sdf_info),     ABI_SIZE_(drape_tri_pair),
	ABI_SIZE_(drape_client_opts),  ABI_SIZE_(drape_server_limits), ABI_SIZE_(drape_server_info),
	ABI_SIZE_(drape_session),      ABI_SIZE_(drape_session_desc),  ABI_SIZE_(drape_create_info),
	ABI_SIZE_(drape_run_info),     ABI_SIZE_(drape_status),        ABI_SIZE_(drape_session_entry),
	ABI_SIZE_(drape_server_stats), ABI_SIZE_(drape_frame),         ABI_SIZE_(drape_scene_info),
};

static void test_version_matches_headers(void)
{
	const char *v = drape_version();
	CHECK(v != NULL);
	char want[32];
	snprintf(want, sizeof want, "%d.%d.%d", DRAPE_VERSION_MAJOR, DRAPE_VERSION_MINOR, DRAPE_VERSION_PATCH);
	CHECKF(strcmp(v, want) == 0, "drape_version() = \"%s\", headers say %s", v, want);
	CHECK(strcmp(DRAPE_CLIENT_VERSION, want) == 0);
}

static void test_struct_sizes_equal_sizeof(void)
{
	for (size_t i = 0; i < CHECK_COUNT(known); i++) {
		size_t got = drape_abi_struct_size(known[i].name);
		CHECKF(got != 0 && got == known[i].size, "%s: library says %zu, sizeof is %zu", known[i].name,
		       got, known[i].size);
	}
}

static void test_unknown_struct_is_zero(void)
{
	CHECK(drape_abi_struct_size(NULL) == 0);
	CHECK(drape_abi_struct_size("") == 0);
	CHECK(drape_abi_struct_size("drape_client") == 0); /* opaque: no size to check */
	CHECK(drape_abi_struct_size("drape_status ") == 0);
	CHECK(drape_abi_struct_size("DRAPE_STATUS") == 0);
}

/* Appends to names (n so far) every NAME of "typedef struct NAME {" in file. */
static int scan_header(const char *file, char names[][64], int n, int max)
{
	FILE *f = fopen(file, "r");
	if (f == NULL)
		return -1;
	char line[512];
	while (fgets(line, sizeof line, f) != NULL) {
		char name[64];
		char brace = 0;
		if (sscanf(line, "typedef struct %63[A-Za-z0-9_] %c", name, &brace) == 2 && brace == '{' &&
		    n < max)
			snprintf(names[n++], 64, "%s", name);
	}
	fclose(f);
	return n;
}

/* Every struct a public header defines is known to the library and to this
 * test: a struct added to a header without its size entry fails here. */
static void test_every_public_struct_is_listed(void)
{
	static const char *const headers[] = {"include/drape/error.h", "include/drape/sim.h",
					      "include/drape/drape.h", "include/drape/scene.h"};
	static char names[256][64];
	int n = 0, files = 0;
	for (size_t h = 0; h < CHECK_COUNT(headers); h++) {
		int m = scan_header(headers[h], names, n, 256);
		if (m >= 0) {
			n = m;
			files++;
		}
	}
	CHECKF(files == (int)CHECK_COUNT(headers), "only %d public headers readable (run from the repository root)", files);
	CHECKF(n >= 21, "only %d structs found in the public headers", n);
	for (int i = 0; i < n; i++) {
		CHECKF(drape_abi_struct_size(names[i]) != 0, "%.63s: drape_abi_struct_size returns 0", names[i]);
		size_t k = 0;
		while (k < CHECK_COUNT(known) && strcmp(known[k].name, names[i]) != 0)
			k++;
		CHECKF(k < CHECK_COUNT(known), "%.63s: not in this test's list of sizes", names[i]);
	}
}

static void test_edone_has_its_own_name(void)
{
	CHECK(DRAPE_EDONE == -23);
	CHECK(DRAPE_EDONE != DRAPE_ECLOSED);
	CHECK(strcmp(drape_strerror(DRAPE_EDONE), "run finished") == 0);
	CHECK(strcmp(drape_err_name(DRAPE_EDONE), "EDONE") == 0);
	CHECK(drape_err_from_name("EDONE") == DRAPE_EDONE);
	CHECK(strcmp(drape_strerror(DRAPE_ECLOSED), "connection closed") == 0);
}

static const check_test tests[] = {
	CHECK_TEST(test_version_matches_headers),  CHECK_TEST(test_struct_sizes_equal_sizeof),
	CHECK_TEST(test_unknown_struct_is_zero),   CHECK_TEST(test_every_public_struct_is_listed),
	CHECK_TEST(test_edone_has_its_own_name),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}

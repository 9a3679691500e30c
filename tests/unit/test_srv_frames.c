/*
 * Retained frames: memory ring, disk cache, retention window, checksums and
 * reloading a cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/checksum.h"
#include "server/frames.h"
#include "tests/unit/check.h"

#define NV 5

static void fill(float *p, uint32_t frame)
{
	for (int i = 0; i < NV * 3; i++)
		p[i] = (float)frame * 100.0f + (float)i;
}

/* Writes and stores frames first..last as the daemon does. */
static int produce(srv_frames *f, uint32_t first, uint32_t last, void *scratch)
{
	for (uint32_t i = first; i <= last; i++) {
		float *p = malloc(NV * 12);
		fill(p, i);
		drape_sim_stats st;
		memset(&st, 0, sizeof st);
		st.frame = i;
		st.max_strain = (float)i / 10.0f;
		bool ok = srv_frames_write(f, i, &st, p, scratch);
		srv_frames_store(f, i, &st, &p, ok);
		free(p);
		if (!ok)
			return -1;
	}
	return 0;
}

static void test_memory_and_disk(void)
{
	char path[] = "/tmp/drape-frames-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	srv_frames f;
	CHECK_OK(srv_frames_init(&f, NV, 4, 0, path, false, NULL));
	void *scratch = malloc(srv_frames_record_size(NV));
	CHECK(produce(&f, 1, 20, scratch) == 0);
	CHECK(f.newest == 20 && srv_frames_first(&f) == 1);
	float got[NV * 3], want[NV * 3];
	drape_sim_stats st;
	for (uint32_t i = 1; i <= 20; i++) {
		CHECK_OK(srv_frames_read(&f, i, got, &st, scratch, NULL));
		fill(want, i);
		CHECK(memcmp(got, want, sizeof got) == 0 && st.frame == i);
	}
	drape_error err;
	CHECK(srv_frames_read(&f, 21, got, &st, scratch, &err) == DRAPE_ERANGE);
	CHECK(srv_frames_read(&f, 0, got, &st, scratch, &err) == DRAPE_ERANGE);

	/* A corrupted record (frame 3, only on disk) is refused, not served. */
	fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	const off_t off = (off_t)2 * (off_t)srv_frames_record_size(NV) + 100;
	CHECK(pwrite(fd, "\x7f", 1, off) == 1);
	close(fd);
	CHECK(srv_frames_read(&f, 3, got, &st, scratch, &err) == DRAPE_EIO);
	srv_frames_free(&f);

	/* Reloading: verification stops at the first bad record. */
	CHECK_OK(srv_frames_init(&f, NV, 4, 0, path, true, NULL));
	CHECK(srv_frames_verify(&f, 20, scratch) == 2);
	srv_frames_free(&f);
	free(scratch);
	unlink(path);
}

static void test_retention_window(void)
{
	char path[] = "/tmp/drape-frames-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	srv_frames f;
	CHECK_OK(srv_frames_init(&f, NV, 8, 10, path, false, NULL));
	void *scratch = malloc(srv_frames_record_size(NV));
	CHECK(produce(&f, 1, 25, scratch) == 0);
	CHECK(srv_frames_first(&f) == 16);
	float got[NV * 3];
	drape_sim_stats st;
	CHECK(srv_frames_read(&f, 15, got, &st, scratch, NULL) == DRAPE_ERANGE);
	CHECK_OK(srv_frames_read(&f, 16, got, &st, scratch, NULL));
	srv_frames_free(&f);
	free(scratch);
	unlink(path);
}

static void test_memory_only(void)
{
	srv_frames f;
	CHECK_OK(srv_frames_init(&f, NV, 3, 0, NULL, false, NULL));
	void *scratch = malloc(srv_frames_record_size(NV));
	/* Without a cache file a write reports failure (the frame is still
	 * stored in memory), and only the ring's three frames can be served. */
	CHECK(produce(&f, 1, 1, scratch) == -1 && f.newest == 1);
	for (uint32_t i = f.newest + 1; i <= 10; i++) {
		float *p = malloc(NV * 12);
		fill(p, i);
		drape_sim_stats st = { 0 };
		st.frame = i;
		srv_frames_store(&f, i, &st, &p, false);
		free(p);
	}
	CHECK(f.newest == 10 && srv_frames_first(&f) == 8);
	float got[NV * 3], want[NV * 3];
	drape_sim_stats st;
	CHECK_OK(srv_frames_read(&f, 8, got, &st, scratch, NULL));
	fill(want, 8);
	CHECK(memcmp(got, want, sizeof got) == 0);
	CHECK(srv_frames_read(&f, 7, got, &st, scratch, NULL) == DRAPE_ERANGE);
	srv_frames_free(&f);
	free(scratch);
}

/* A full disk: every record write fails (/dev/full answers ENOSPC), and a
 * two-slot ring would push out every frame but the newest two. The frames
 * whose write failed are kept in memory and served, byte for byte, for as
 * long as they are retained; the store says how many are missing from disk;
 * once the disk takes writes again srv_frames_flush puts them there. */
static void test_failed_writes_stay_served(void)
{
	srv_frames f;
	CHECK_OK(srv_frames_init(&f, NV, 2, 6, "/dev/full", false, NULL));
	CHECK(f.fd >= 0);
	void *scratch = malloc(srv_frames_record_size(NV));
	float got[NV * 3], want[NV * 3];
	drape_sim_stats st;
	for (uint32_t i = 1; i <= 5; i++) {
		float *p = malloc(NV * 12);
		fill(p, i);
		drape_sim_stats s = { 0 };
		s.frame = i;
		errno = 0;
		bool ok = srv_frames_write(&f, i, &s, p, scratch);
		CHECK(!ok && errno == ENOSPC);
		srv_frames_store(&f, i, &s, &p, ok);
		free(p);
	}
	CHECK(f.newest == 5 && srv_frames_first(&f) == 1 && srv_frames_unsaved(&f) == 5);
	for (uint32_t i = 1; i <= 5; i++) {
		CHECK_OK(srv_frames_read(&f, i, got, &st, scratch, NULL));
		fill(want, i);
		CHECK(memcmp(got, want, sizeof got) == 0 && st.frame == i);
	}
	/* Still full: flushing fails on the oldest and keeps everything. */
	uint32_t bad = 0;
	CHECK(srv_frames_flush(&f, scratch, &bad) == ENOSPC && bad == 1 && srv_frames_unsaved(&f) == 5);
	/* Retention (6 frames) still applies: at frame 9, frames 1-3 go. */
	for (uint32_t i = 6; i <= 9; i++) {
		float *p = malloc(NV * 12);
		fill(p, i);
		drape_sim_stats s = { 0 };
		s.frame = i;
		srv_frames_store(&f, i, &s, &p, false);
		free(p);
	}
	CHECK(srv_frames_first(&f) == 4 && srv_frames_unsaved(&f) == 6);
	CHECK(srv_frames_read(&f, 3, got, &st, scratch, NULL) == DRAPE_ERANGE);
	CHECK_OK(srv_frames_read(&f, 4, got, &st, scratch, NULL));
	fill(want, 4);
	CHECK(memcmp(got, want, sizeof got) == 0);
	/* The disk has room again (a regular file behind the same store): the
	 * flush writes every kept frame and reads then come from disk. */
	char path[] = "/tmp/drape-frames-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(f.fd);
	f.fd = fd;
	CHECK(srv_frames_flush(&f, scratch, &bad) == 0 && srv_frames_unsaved(&f) == 0 && f.held_count == 0);
	for (uint32_t i = 4; i <= 9; i++) {
		CHECK_OK(srv_frames_read(&f, i, got, &st, scratch, NULL));
		fill(want, i);
		CHECK(memcmp(got, want, sizeof got) == 0 && st.frame == i);
	}
	srv_frames_free(&f);
	free(scratch);
	unlink(path);
}

/* XXH64 as xxHash computes it (values from libxxhash 0.8.1's XXH64): the
 * short-input path, the 32-byte stripes with a tail of every size class,
 * and a seed. */
static void test_xxh64_vectors(void)
{
	CHECK(srv_xxh64("", 0, 0) == 0xef46db3751d8e999ull);
	CHECK(srv_xxh64("abc", 3, 0) == 0x44bc2cf5ad770999ull);
	unsigned char b[101];
	for (int i = 0; i < 101; i++)
		b[i] = (unsigned char)i;
	CHECK(srv_xxh64(b, sizeof b, 0) == 0xe99038495f85381eull);
	CHECK(srv_xxh64(b, sizeof b, 0x9e3779b185ebca87ull) == 0xa18f7e69160478faull);
}

/* A cache written before version 2 (FNV-1a 64 records, "DRF1") is still
 * read and verified after an upgrade, new frames are appended as version 2,
 * and a damaged version-1 record is refused like a version-2 one. */
static void test_version1_records_still_read(void)
{
	char path[] = "/tmp/drape-frames-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	const size_t rec = srv_frames_record_size(NV);
	unsigned char *r = malloc(rec);
	for (uint32_t i = 1; i <= 3; i++) {
		/* The version 1 layout: magic, index, vertex count, 0, the stats
		 * block (frame first), positions, FNV-1a 64 of all that. */
		memset(r, 0, rec);
		const uint32_t head[4] = { 0x31465244u, i, NV, 0 };
		memcpy(r, head, sizeof head);
		memcpy(r + 16, &i, 4);
		float p[NV * 3];
		fill(p, i);
		memcpy(r + 16 + 56, p, sizeof p);
		const uint64_t h = srv_fnv1a64(SRV_FNV_INIT, r, rec - 8);
		memcpy(r + rec - 8, &h, 8);
		CHECK(pwrite(fd, r, rec, (off_t)(i - 1) * (off_t)rec) == (ssize_t)rec);
	}
	close(fd);
	srv_frames f;
	void *scratch = malloc(rec);
	CHECK_OK(srv_frames_init(&f, NV, 2, 0, path, true, NULL));
	CHECK(srv_frames_verify(&f, 3, scratch) == 3);
	CHECK(produce(&f, 4, 6, scratch) == 0);
	float got[NV * 3], want[NV * 3];
	drape_sim_stats st;
	for (uint32_t i = 1; i <= 6; i++) {
		CHECK_OK(srv_frames_read(&f, i, got, &st, scratch, NULL));
		fill(want, i);
		CHECK(memcmp(got, want, sizeof got) == 0 && st.frame == i);
	}
	srv_frames_free(&f);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	uint32_t magic = 0;
	CHECK(pread(fd, &magic, 4, (off_t)5 * (off_t)rec) == 4 && magic == 0x32465244u);
	CHECK(pwrite(fd, "\x7f", 1, (off_t)rec + 100) == 1);
	close(fd);
	CHECK_OK(srv_frames_init(&f, NV, 2, 0, path, true, NULL));
	CHECK(srv_frames_verify(&f, 6, scratch) == 1);
	srv_frames_free(&f);
	free(scratch);
	free(r);
	unlink(path);
}

/* Freeing a store that was never initialised (a session whose build failed
 * before its frames) closes nothing: its zeroed fd field must not close
 * descriptor 0. */
static void test_free_uninitialised_closes_nothing(void)
{
	if (fcntl(0, F_GETFD) == -1) {
		int n = open("/dev/null", O_RDONLY);
		CHECK(n == 0);
	}
	srv_frames f;
	memset(&f, 0, sizeof f);
	srv_frames_free(&f);
	CHECK(fcntl(0, F_GETFD) != -1);
	CHECK(f.fd == -1);
	/* Freeing twice is harmless too. */
	srv_frames_free(&f);
	CHECK(fcntl(0, F_GETFD) != -1);
}

/*
 * A tearing session's store holds up to a capacity of vertices; its frames
 * have their own counts and mesh generations. Frames of 3, 4 and 5 of a
 * capacity of 5 (the last record of the file shorter than a full one) are
 * served from the ring and, after they leave it, from disk with their own
 * counts and generations, and a reload verifies them all.
 */
static void test_torn_frames_own_counts(void)
{
	char path[] = "/tmp/drape-frames-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	srv_frames f;
	CHECK_OK(srv_frames_init(&f, NV, 2, 0, path, false, NULL));
	void *scratch = malloc(srv_frames_record_size(NV));
	/* Frame i has 3 + (i - 1) / 2 vertices (3, 3, 4, 4, 5) and generation (i - 1) / 2. */
	for (uint32_t i = 1; i <= 5; i++) {
		float *p = malloc(NV * 12);
		fill(p, i);
		drape_sim_stats st;
		memset(&st, 0, sizeof st);
		st.frame = i;
		uint32_t n = 3 + (i - 1) / 2;
		CHECK(srv_frames_write_mesh(&f, i, &st, p, n, (i - 1) / 2, scratch));
		srv_frames_store_mesh(&f, i, &st, &p, n, (i - 1) / 2, true);
		free(p);
	}
	/* The last record (5 vertices, full) and the one before it (4) end
	 * where their positions do: a file of frames 1-4 is shorter than
	 * four full records. */
	float got[NV * 3], want[NV * 3];
	drape_sim_stats st;
	uint32_t n = 0, topo = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 1; i <= 5; i++) {
			memset(got, 0, sizeof got);
			CHECK_OK(srv_frames_read_mesh(&f, i, got, &st, &n, &topo, scratch, NULL));
			fill(want, i);
			CHECKF(n == 3 + (i - 1) / 2 && topo == (i - 1) / 2, "frame %u: %u vertices, topology %u",
			       i, n, topo);
			CHECK(memcmp(got, want, (size_t)n * 12) == 0 && st.frame == i);
		}
		/* Then from disk only, as a reloaded daemon reads them. */
		srv_frames_free(&f);
		CHECK_OK(srv_frames_init(&f, NV, 2, 0, path, true, NULL));
		CHECK(srv_frames_verify(&f, 5, scratch) == 5);
	}
	/* A head claiming more vertices than the capacity is a bad record. */
	srv_frames_free(&f);
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0);
	const uint32_t big = NV + 1;
	CHECK(pwrite(fd, &big, 4, 2 * (off_t)srv_frames_record_size(NV) + 8) == 4);
	close(fd);
	CHECK_OK(srv_frames_init(&f, NV, 2, 0, path, true, NULL));
	CHECK(srv_frames_verify(&f, 5, scratch) == 2);
	srv_frames_free(&f);
	free(scratch);
	unlink(path);
}

static const check_test tests[] = {
	CHECK_TEST(test_torn_frames_own_counts),
	CHECK_TEST(test_free_uninitialised_closes_nothing),
	CHECK_TEST(test_memory_and_disk),
	CHECK_TEST(test_retention_window),
	CHECK_TEST(test_memory_only),
	CHECK_TEST(test_failed_writes_stay_served),
	CHECK_TEST(test_xxh64_vectors),
	CHECK_TEST(test_version1_records_still_read),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}

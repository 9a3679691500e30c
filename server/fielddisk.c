/* Mesh collider fields on disk (fielddisk.h): STATE/fields/<key>.vdb. */
#include "server/fielddisk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/log.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_dir[4200];
static uint64_t g_budget;
static uint64_t g_tmp_seq;

void srv_fielddisk_configure(const char *state_dir, uint64_t budget)
{
	pthread_mutex_lock(&g_lock);
	g_budget = budget;
	g_dir[0] = '\0';
	if (state_dir != NULL && state_dir[0] != '\0' && budget > 0)
		snprintf(g_dir, sizeof g_dir, "%s/fields", state_dir);
	pthread_mutex_unlock(&g_lock);
}

void srv_fielddisk_name(srv_field_key key, char name[40])
{
	snprintf(name, 40, "%016" PRIx64 "%016" PRIx64 ".vdb", key.h1, key.h2);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Reads the whole of path into a malloc'd buffer; false with errno set. */
static bool read_file(const char *path, unsigned char **data, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		int e = S_ISREG(st.st_mode) ? errno : EINVAL;
		close(fd);
		errno = e;
		return false;
	}
	size_t n = (size_t)st.st_size;
	unsigned char *buf = malloc(n ? n : 1);
	if (buf == NULL) {
		close(fd);
		errno = ENOMEM;
		return false;
	}
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*data = buf;
	*size = got; /* a file shrunk under us is simply shorter: the checksum judges */
	return true;
}

drape_sdf *srv_fielddisk_load(srv_field_key key, double *ms)
{
	char dir[sizeof g_dir], name[40], path[sizeof g_dir + 48];
	pthread_mutex_lock(&g_lock);
	memcpy(dir, g_dir, sizeof dir);
	pthread_mutex_unlock(&g_lock);
	if (dir[0] == '\0')
		return NULL;
	srv_fielddisk_name(key, name);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	const double t0 = now_ms();
	unsigned char *data = NULL;
	size_t size = 0;
	if (!read_file(path, &data, &size)) {
		if (errno != ENOENT)
			srv_warn("field cache: cannot read %s: %s; building the field instead", path,
				 strerror(errno));
		return NULL;
	}
	drape_sdf *sdf = NULL;
	drape_error err;
	drape_err rc = drape_sdf_deserialize(data, size, &sdf, &err);
	free(data);
	if (rc != DRAPE_OK) {
		srv_warn("field cache: %s does not load (%s); removing it and building the field again", path,
			 err.message);
		unlink(path);
		return NULL;
	}
	/* The mtime is the file's last use, for the eviction order. */
	if (utimensat(AT_FDCWD, path, NULL, 0) != 0)
		srv_debug("field cache: cannot touch %s: %s", path, strerror(errno));
	if (ms != NULL)
		*ms = now_ms() - t0;
	return sdf;
}

static bool write_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return false;
		}
		p += w;
		n -= (size_t)w;
	}
	return true;
}

typedef struct disk_file {
	char name[40];
	uint64_t bytes;
	struct timespec mtime;
} disk_file;

static int older_first(const void *a, const void *b)
{
	const disk_file *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Removes the least recently used *.vdb files of dir until at most budget
 * bytes remain. keep (just written) goes last of all. */
static void evict(const char *dir, uint64_t budget, const char *keep)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return;
	disk_file *files = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (len != 36 || strcmp(e->d_name + 32, ".vdb") != 0)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			size_t c = cap ? 2 * cap : 32;
			disk_file *f = realloc(files, c * sizeof *f);
			if (f == NULL)
				break;
			files = f;
			cap = c;
		}
		snprintf(files[n].name, sizeof files[n].name, "%s", e->d_name);
		files[n].bytes = (uint64_t)st.st_size;
		files[n].mtime = st.st_mtim;
		if (strcmp(e->d_name, keep) == 0)
			files[n].mtime.tv_sec = INT64_MAX; /* newest of all */
		total += files[n].bytes;
		n++;
	}
	closedir(d);
	if (total > budget && n > 0) {
		qsort(files, n, sizeof *files, older_first);
		for (size_t i = 0; i < n && total > budget; i++) {
			char path[4300];
			snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
			if (unlink(path) == 0) {
				total -= files[i].bytes;
				srv_info("field cache: removed %s (%.1f MB, least recently used) to stay within "
					 "--max-field-disk %" PRIu64 " bytes",
					 files[i].name, files[i].bytes / 1e6, budget);
			}
		}
	}
	free(files);
}

bool srv_fielddisk_store(srv_field_key key, const drape_sdf *sdf)
{
	char dir[sizeof g_dir], name[40], path[sizeof g_dir + 48], tmp[sizeof g_dir + 96];
	pthread_mutex_lock(&g_lock);
	memcpy(dir, g_dir, sizeof dir);
	const uint64_t budget = g_budget;
	const uint64_t seq = ++g_tmp_seq;
	pthread_mutex_unlock(&g_lock);
	if (dir[0] == '\0')
		return false;
	void *data = NULL;
	size_t size = 0;
	drape_error err;
	if (drape_sdf_serialize(sdf, &data, &size, &err) != DRAPE_OK) {
		srv_warn("field cache: cannot serialise a field: %s", err.message);
		return false;
	}
	srv_fielddisk_name(key, name);
	if (size > budget) {
		srv_info("field cache: %s is %.1f MB, over --max-field-disk %" PRIu64 " bytes; kept in memory only",
			 name, size / 1e6, budget);
		free(data);
		return false;
	}
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		srv_warn("field cache: cannot create %s: %s", dir, strerror(errno));
		free(data);
		return false;
	}
	snprintf(path, sizeof path, "%s/%s", dir, name);
	/* Unique per process and store, so two workers storing one key never
	 * write the same temporary file; the eviction scan skips these names. */
	snprintf(tmp, sizeof tmp, "%s/.%s.%ld.%" PRIu64 ".tmp", dir, name, (long)getpid(), seq);
	const char *step = "create";
	bool ok = false;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0) {
		step = "write";
		ok = write_all(fd, data, size);
		if (ok && fsync(fd) != 0) {
			ok = false;
			step = "fsync";
		}
		int saved = errno;
		if (close(fd) != 0 && ok) {
			ok = false;
			step = "close";
			saved = errno;
		}
		if (ok && rename(tmp, path) != 0) {
			ok = false;
			step = "rename";
			saved = errno;
		}
		errno = saved;
	}
	free(data);
	if (!ok) {
		srv_warn("field cache: cannot %s %s: %s; the field stays in memory only", step, tmp,
			 strerror(errno));
		unlink(tmp);
		return false;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		if (fsync(dfd) != 0)
			srv_debug("field cache: cannot fsync %s: %s", dir, strerror(errno));
		close(dfd);
	}
	srv_info("field cache: stored %s (%.1f MB)", path, size / 1e6);
	evict(dir, budget, name);
	return true;
}

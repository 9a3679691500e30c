/*
 * The shared worker pool (see pool.h for the contract).
 *
 * A job is posted by storing its descriptor and then one 64-bit word, the
 * claim state, holding the job's block count in the high half and the next
 * unclaimed block in the low half. Threads claim blocks by compare-and-swap
 * on that word and read the descriptor only after a successful claim: a
 * claim can succeed only while the job still has unclaimed blocks, and the
 * poster does not replace the descriptor before every block is done, so the
 * descriptor a thread reads is always the one its block belongs to. A thread
 * that was descheduled across jobs therefore either claims a block of the
 * current job or nothing.
 *
 * Idle workers spin for a short while (the solver posts one job per colour,
 * a few hundred per frame, with little serial work between them) and then
 * sleep on a condition variable, so an idle daemon burns no CPU.
 */
#include "server/sim/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define sim_cpu_relax() _mm_pause()
#else
#define sim_cpu_relax() ((void)0)
#endif

/* Upper bound on threads per pool; more than any box this serves. */
#define SIM_POOL_MAX_THREADS 256u

/* How long an idle worker spins before it sleeps, in nanoseconds. Longer
 * than the serial work between two colours, shorter than a frame. */
#define SIM_POOL_SPIN_NS 200000

/* How long the poster spins for the last blocks of its job before it
 * sleeps until they are done. Longer than a block normally takes (a tile of
 * the sweep is about 150 us on sheet300), so a balanced job never sleeps;
 * short next to a time slice, so a worker preempted mid-block (by the
 * daemon's output stage, say) costs that worker's delay only: the poster's
 * core falls idle and the kernel moves the preempted worker onto it, where
 * spinning would have kept both cores busy until the next load balance. */
#define SIM_POOL_WAIT_SPIN_NS 250000

typedef struct sim_pool_job {
	sim_pool_fn *fn;
	void *ctx;
	uint32_t count, block;
} sim_pool_job;

struct drape_pool {
	uint32_t threads; /* including the caller of sim_pool_for */
	uint32_t started; /* worker threads actually running */
	pthread_t *tid;

	_Atomic uint64_t state; /* blocks << 32 | next block */
	sim_pool_job *_Atomic job;
	_Atomic uint32_t done; /* blocks finished of the current job */
	_Atomic int stop;
	_Atomic uint32_t sleepers;
	_Atomic uint32_t poster_waiting; /* the poster sleeps on done_cv */
	_Atomic uint64_t inline_jobs;
	_Atomic uint64_t worker_blocks;

	pthread_mutex_t mu; /* guards the sleep/wake hand-off only */
	pthread_cond_t cv;
	pthread_cond_t done_cv; /* the last block of a job is done */
	pthread_mutex_t busy; /* held by the sim whose job is on the pool */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int has_work(uint64_t s)
{
	return (uint32_t)s < (uint32_t)(s >> 32);
}

/* Claims and runs blocks of the current job until none is left. Returns
 * how many it ran. */
static uint32_t run_blocks(drape_pool *pool)
{
	uint32_t ran = 0;
	uint64_t s = atomic_load(&pool->state);
	while (has_work(s)) {
		if (!atomic_compare_exchange_weak(&pool->state, &s, s + 1))
			continue;
		const sim_pool_job *j = atomic_load(&pool->job);
		uint32_t begin = (uint32_t)s * j->block;
		uint32_t end = j->count - begin > j->block ? begin + j->block : j->count;
		j->fn(j->ctx, begin, end);
		/* The finisher of the last block wakes a sleeping poster. The
		 * poster raises poster_waiting before its last look at done
		 * and this reads it after adding to done, so one of the two
		 * sees the other; a late wake-up of a later job's wait is
		 * harmless, the poster looks at done again. */
		if (atomic_fetch_add(&pool->done, 1) + 1 == (uint32_t)(s >> 32) &&
		    atomic_load(&pool->poster_waiting)) {
			pthread_mutex_lock(&pool->mu);
			pthread_cond_broadcast(&pool->done_cv);
			pthread_mutex_unlock(&pool->mu);
		}
		ran++;
		s = atomic_load(&pool->state);
	}
	return ran;
}

static void *worker_main(void *arg)
{
	drape_pool *pool = arg;
	uint64_t idle_since = mono_ns();
	unsigned spins = 0;
	while (!atomic_load(&pool->stop)) {
		uint32_t ran = run_blocks(pool);
		if (ran) {
			atomic_fetch_add_explicit(&pool->worker_blocks, ran, memory_order_relaxed);
			idle_since = mono_ns();
			spins = 0;
			continue;
		}
		sim_cpu_relax();
		if (++spins % 256 != 0 || mono_ns() - idle_since < SIM_POOL_SPIN_NS)
			continue;
		/* The sleeper count is raised before the last look at the
		 * state, and the poster stores the state before it reads the
		 * count, so one of the two always sees the other. */
		pthread_mutex_lock(&pool->mu);
		atomic_fetch_add(&pool->sleepers, 1);
		while (!atomic_load(&pool->stop) && !has_work(atomic_load(&pool->state)))
			pthread_cond_wait(&pool->cv, &pool->mu);
		atomic_fetch_sub(&pool->sleepers, 1);
		pthread_mutex_unlock(&pool->mu);
		idle_since = mono_ns();
		spins = 0;
	}
	return NULL;
}

static void wake_all(drape_pool *pool)
{
	pthread_mutex_lock(&pool->mu);
	pthread_cond_broadcast(&pool->cv);
	pthread_mutex_unlock(&pool->mu);
}

void drape_pool_destroy(drape_pool *pool)
{
	if (pool == NULL)
		return;
	atomic_store(&pool->stop, 1);
	wake_all(pool);
	for (uint32_t i = 0; i < pool->started; i++)
		pthread_join(pool->tid[i], NULL);
	pthread_mutex_destroy(&pool->mu);
	pthread_cond_destroy(&pool->cv);
	pthread_cond_destroy(&pool->done_cv);
	pthread_mutex_destroy(&pool->busy);
	free(pool->tid);
	free(pool);
}

drape_err drape_pool_create(uint32_t threads, drape_pool **out, drape_error *err)
{
	if (out == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "out: NULL");
	if (threads == 0) {
		long cores = sysconf(_SC_NPROCESSORS_ONLN);
		threads = cores < 1 ? 1u : (uint32_t)cores;
		if (threads > SIM_POOL_MAX_THREADS)
			threads = SIM_POOL_MAX_THREADS;
	}
	if (threads > SIM_POOL_MAX_THREADS)
		return drape_error_setf(err, DRAPE_EINVAL, "threads: %u > maximum %u", threads,
					SIM_POOL_MAX_THREADS);
	drape_pool *pool = calloc(1, sizeof *pool);
	if (pool == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "pool: out of memory");
	pool->threads = threads;
	pool->tid = calloc(threads, sizeof *pool->tid);
	if (pool->tid == NULL) {
		free(pool);
		return drape_error_setf(err, DRAPE_ENOMEM, "pool: out of memory");
	}
	atomic_init(&pool->state, 0);
	atomic_init(&pool->job, NULL);
	atomic_init(&pool->done, 0);
	atomic_init(&pool->stop, 0);
	atomic_init(&pool->sleepers, 0);
	atomic_init(&pool->poster_waiting, 0);
	atomic_init(&pool->inline_jobs, 0);
	atomic_init(&pool->worker_blocks, 0);
	pthread_mutex_init(&pool->mu, NULL);
	pthread_cond_init(&pool->cv, NULL);
	pthread_cond_init(&pool->done_cv, NULL);
	pthread_mutex_init(&pool->busy, NULL);
	for (uint32_t i = 0; i + 1 < threads; i++) {
		if (pthread_create(&pool->tid[i], NULL, worker_main, pool) != 0) {
			drape_pool_destroy(pool);
			return drape_error_setf(err, DRAPE_ENOMEM, "pool: cannot start thread %u of %u",
						i + 1, threads - 1);
		}
		pool->started++;
	}
	*out = pool;
	drape_error_clear(err);
	return DRAPE_OK;
}

uint32_t drape_pool_threads(const drape_pool *pool)
{
	return pool ? pool->threads : 1u;
}

uint64_t sim_pool_inline_jobs(const drape_pool *pool)
{
	return pool ? atomic_load(&((drape_pool *)pool)->inline_jobs) : 0u;
}

uint64_t sim_pool_worker_blocks(const drape_pool *pool)
{
	return pool ? atomic_load(&((drape_pool *)pool)->worker_blocks) : 0u;
}

uint32_t sim_pool_block(const drape_pool *pool, uint32_t count)
{
	uint64_t parts = (uint64_t)(pool ? pool->threads : 1u) * SIM_POOL_SPLIT;
	uint64_t block = ((uint64_t)count + parts - 1) / parts;
	block = (block + SIM_POOL_ALIGN - 1) / SIM_POOL_ALIGN * SIM_POOL_ALIGN;
	return block < SIM_POOL_BLOCK ? SIM_POOL_BLOCK : (uint32_t)block;
}

void sim_pool_for(drape_pool *pool, uint32_t count, uint32_t block, sim_pool_fn *fn, void *ctx)
{
	if (count == 0)
		return;
	if (block == 0)
		block = count;
	uint32_t blocks = count / block + (count % block != 0);
	if (pool == NULL || pool->started == 0 || blocks < 2) {
		fn(ctx, 0, count);
		return;
	}
	if (pthread_mutex_trylock(&pool->busy) != 0) {
		/* Another sim's job is on the pool: same blocks, this thread. */
		atomic_fetch_add(&pool->inline_jobs, 1);
		fn(ctx, 0, count);
		return;
	}
	sim_pool_job job = {fn, ctx, count, block};
	atomic_store(&pool->job, &job);
	atomic_store(&pool->done, 0);
	atomic_store(&pool->state, (uint64_t)blocks << 32);
	if (atomic_load(&pool->sleepers) > 0)
		wake_all(pool);
	run_blocks(pool);
	/* A block claimed by a worker that was then descheduled holds us
	 * here: spin for a balanced job's tail, then sleep (see
	 * SIM_POOL_WAIT_SPIN_NS). */
	const uint64_t t0 = mono_ns();
	for (unsigned spins = 1; atomic_load(&pool->done) < blocks; spins++) {
		sim_cpu_relax();
		if (spins % 64 != 0 || mono_ns() - t0 < SIM_POOL_WAIT_SPIN_NS)
			continue;
		pthread_mutex_lock(&pool->mu);
		atomic_store(&pool->poster_waiting, 1);
		while (atomic_load(&pool->done) < blocks)
			pthread_cond_wait(&pool->done_cv, &pool->mu);
		atomic_store(&pool->poster_waiting, 0);
		pthread_mutex_unlock(&pool->mu);
	}
	pthread_mutex_unlock(&pool->busy);
}

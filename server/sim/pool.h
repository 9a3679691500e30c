/*
 * The worker pool behind drape_pool (include/drape/sim.h): a few threads
 * shared by every sim of a process, and one primitive, a parallel-for over
 * the blocks of a range, in which the calling thread takes part.
 *
 * The solver calls it once per colour group (Box2D v3's constraint-graph
 * colouring: within a colour no two constraints share a vertex), and the
 * return of sim_pool_for is the barrier between colours. Which thread runs
 * which block never changes a result: the blocks of one call are
 * independent and each constraint's arithmetic is the same wherever it runs.
 *
 * Sharing: one job runs on the pool at a time. A caller that finds the pool
 * busy with another sim's job does not wait for it: it runs its own job
 * inline on its own thread (same blocks, same result), so concurrent sessions
 * never stall one another and never need the pool to be re-entrant.
 */
#ifndef DRAPE_SIM_POOL_H
#define DRAPE_SIM_POOL_H

#include <stdatomic.h>
#include <stdint.h>

#include "drape/sim.h"

/* The smallest block when the solver splits a colour: large enough that
 * claiming a block (one compare-and-swap) is noise beside projecting it,
 * small enough that two threads stay balanced on the colours of a
 * 100 x 100 sheet. Never changes a result. */
#define SIM_POOL_BLOCK 512u

/* Blocks are a multiple of this many records: every SIMD width, and four
 * 64-byte lines of 16-byte positions, so that two threads' ranges meet on
 * few shared cache lines. */
#define SIM_POOL_ALIGN 64u

/* Blocks per thread in a colour big enough for it: a thread that starts
 * late (woken from its spin, or preempted on a busy box) then finds the
 * others have taken its share instead of making them wait at the barrier
 * for a whole half of the colour. */
#define SIM_POOL_SPLIT 4u

/* Runs items [begin, end) of a job; ctx is the caller's. */
typedef void sim_pool_fn(void *ctx, uint32_t begin, uint32_t end);

/*
 * Calls fn over [0, count) in blocks of `block` items (the last may be
 * shorter), on the pool's workers and the calling thread, and returns when
 * every block is done. pool may be NULL (everything runs inline). Jobs of
 * one block or less never wake a worker.
 */
void sim_pool_for(drape_pool *pool, uint32_t count, uint32_t block, sim_pool_fn *fn, void *ctx);

/* The block size for a colour of `count` records: about a SIM_POOL_SPLIT-th
 * of each thread's share, a multiple of SIM_POOL_ALIGN and at least
 * SIM_POOL_BLOCK, so each block is a long contiguous run of the position
 * array. Never changes a result. */
uint32_t sim_pool_block(const drape_pool *pool, uint32_t count);

/* Counters since creation, for tests and logs: jobs that found the pool
 * busy with another sim's job and ran inline, and blocks run by the worker
 * threads (as opposed to the callers). */
uint64_t sim_pool_inline_jobs(const drape_pool *pool);
uint64_t sim_pool_worker_blocks(const drape_pool *pool);

/* Worker scratch for the jobs of a sim_pool_for: busy[j] marks slot j of
 * n taken. A job claims a free slot for its blocks and releases it after.
 * With as many slots as jobs can run at once (the pool's threads, or the
 * blocks when fewer), a claim waits at most for a running job to finish. */
static inline uint32_t sim_slot_claim(_Atomic uint8_t *busy, uint32_t n)
{
	for (;;)
		for (uint32_t j = 0; j < n; j++)
			if (!atomic_load_explicit(&busy[j], memory_order_relaxed) &&
			    !atomic_exchange_explicit(&busy[j], 1, memory_order_acquire))
				return j;
}

static inline void sim_slot_release(_Atomic uint8_t *busy, uint32_t j)
{
	atomic_store_explicit(&busy[j], 0, memory_order_release);
}

#endif

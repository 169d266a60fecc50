/* SPDX-License-Identifier: Apache-2.0 */
/*
 * driver.h - keeps N jobs in flight on one libuv loop: the one loop that
 * escrow-load, escrow-bench, the chaos client and esc_probe
 * share instead of each keeping its own.
 *
 * A job is what the tool calls one unit of work: one reserve (escrow-bench),
 * a buyer's story of reserve, think time and confirm (escrow-load), a chaos
 * story. The driver has `lanes` lanes, each running at most one job; jobs
 * are numbered 0, 1, 2... in the order they start. The tool starts a job in
 * its next callback and ends it with driver_done, usually from a libescrow
 * callback; between two calls a job may wait on its lane's timer
 * (driver_later).
 *
 * Two shapes:
 *   - closed loop (rate_per_s 0): every lane starts a job at once, and each
 *     lane whose job ends starts the next one, in the same stack;
 *   - open loop (rate_per_s R): a DRIVER_TICK_MS timer starts the jobs the
 *     schedule says are due (R per second since driver_start) on free
 *     lanes; jobs due while every lane is busy are skipped and counted, not
 *     queued, so a slow server does not see a burst afterwards.
 * The run stops at jobs_max jobs, after run_ms, or at driver_stop: no new
 * job starts, a lane waiting on its timer ends its job at once, jobs with a
 * call in flight end when it answers. When no lane has a job left the
 * driver closes its handles and calls end, exactly once.
 *
 * Everything runs on the loop's thread; nothing here blocks. The driver
 * links libuv only: it knows nothing of libescrow.
 */
#ifndef ESC_TOOLS_DRIVER_H
#define ESC_TOOLS_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

/* Lanes of one driver: libescrow accepts ESC_CLIENT_INFLIGHT_MAX calls in
 * flight per client; each lane costs a uv_timer_t (~150 bytes). */
#define DRIVER_LANES_MAX 65536u
/* Open loop: how often the schedule is looked at. */
#define DRIVER_TICK_MS 1u

typedef struct driver driver;

/* What a next callback did with its lane. */
typedef enum driver_step {
    DRIVER_BUSY = 0, /* a job runs on the lane: driver_done (or driver_stop) ends it */
    DRIVER_NEXT = 1, /* the job ended at once (e.g. the call was refused): next job now */
    DRIVER_IDLE = 2, /* no job started: closed loop, the lane retires; open loop, it is free */
} driver_step;

/* Starts job number `job` on lane (0..lanes-1). Returns a driver_step. May
 * call driver_done(d, lane) itself (the same as returning DRIVER_NEXT) and
 * driver_later(d, lane, ...). */
typedef int (*driver_next_fn)(driver *d, uint32_t lane, uint64_t job, void *arg);
/* Runs once, when the run is over and no lane has a job. The driver's
 * handles are closing; free it (driver_free) once the loop has run. */
typedef void (*driver_end_fn)(driver *d, void *arg);
/* A lane's timer fired (driver_later). */
typedef void (*driver_timer_fn)(driver *d, uint32_t lane, void *arg);

typedef struct driver_config {
    uint32_t lanes;    /* 1..DRIVER_LANES_MAX: jobs in flight at most */
    uint64_t jobs_max; /* 0: no limit */
    uint64_t run_ms;   /* 0: no limit; else driver_stop that long after driver_start */
    double rate_per_s; /* 0: closed loop; else open loop, jobs per second */
    driver_next_fn next;
    driver_end_fn end;
    void *arg; /* borrowed: passed to every callback */
} driver_config;

/* Creates a driver on loop (borrowed; must outlive it); cfg is copied.
 * Returns 0 and *out, ESC_EINVAL (lanes out of range, next or end missing,
 * a negative rate) or ESC_ENOMEM. Nothing runs, and no handle exists,
 * before driver_start: a driver never started is just freed. */
int driver_new(uv_loop_t *loop, const driver_config *cfg, driver **out);

/* Starts the run (makes the driver's handles): closed loop, every lane's
 * first job now (end may run before this returns, when no lane started
 * one); open loop, the schedule. Call it once. */
void driver_start(driver *d);

/* The job on lane ended (its last answer came in): the lane takes the next
 * job (closed loop) or becomes free (open loop). */
void driver_done(driver *d, uint32_t lane);

/* Runs cb for lane's job after ms (the job goes on waiting). Returns 0, or
 * a libuv error (nothing scheduled). One timer per lane. */
int driver_later(driver *d, uint32_t lane, uint64_t ms, driver_timer_fn cb);

/* Stops the run: see the header comment. Calling it again does nothing. */
void driver_stop(driver *d);

/* True once the run stopped (driver_stop, run_ms) or ended. */
bool driver_stopping(const driver *d);

/* Jobs numbered so far: started, ended at once, or skipped (open loop). */
uint64_t driver_jobs(const driver *d);

/* Open loop: jobs the schedule skipped because every lane was busy. */
uint64_t driver_skipped(const driver *d);

/* Frees d: one never started, or one whose end ran and whose loop has run
 * since (its handles are closed; freeing earlier is a bug, and asserted).
 * NULL does nothing. */
void driver_free(driver *d);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Work off the event loop: a small pool of threads that runs jobs whose cost grows with an
 * input's size (parsing a hook's 16 MiB values patch, a 100 MB list body), so that the loop
 * goes on serving timers, watches and probes meanwhile.
 *
 * A job is two functions and its data. run(data) is called on a pool thread; done(data,
 * cancelled) is then called on the loop's thread, from a wake-up source of the reactor, in the
 * order the jobs finished (with one thread: the order they were submitted).
 *
 * Ownership: @data belongs to the job from ao_worker_submit() until done() returns; its
 * submitter touches none of it meanwhile, and run() touches nothing else that the loop could
 * change or free (what it needs is copied into @data, or immutable for the life of the
 * process). done() is called exactly once for every submitted job. An owner that goes away
 * before done() ran calls ao_worker_job_cancel(): a job not yet started is never run, a running
 * one finishes, and done() then comes with @cancelled true. A cancelled done() must not touch
 * the owner (it may be gone): it releases @data and nothing more.
 *
 * A job handle is valid until its done() returns. Cancelling is the owner's way of letting go
 * of the handle: after ao_worker_job_cancel() it must forget it.
 *
 * No logging from run(): it may run on any thread, and its errors go back to the loop in
 * @data for the owner to report (the logger is thread-safe, but messages must keep the
 * context of the hook or object they are about, which lives on the loop's thread).
 *
 * Threads: everything here is called on the loop's thread; run() alone runs elsewhere. The
 * pool's threads block every signal and run at nice +10 over the loop's, so that where the two
 * share a CPU the loop takes it whenever it has work.
 */

#include <stdbool.h>
#include <stddef.h>

#include "ao/error.h"

struct ao_reactor;
struct ao_shutdown;
struct ao_worker;
struct ao_worker_job;

/** Off the loop: do the work, leaving the results in @data. Must not log. */
typedef void ao_worker_run_handler(void *data);
/** On the loop: take the results, or with @cancelled only release @data. */
typedef void ao_worker_done_handler(void *data, bool cancelled);

/**
 * A pool of @n_threads threads (at least 1) that deliver their results to @reactor (borrowed:
 * it outlives the pool). The threads start with every signal blocked. Fails with the reason
 * (no threads, no eventfd) in @reterr.
 */
int ao_worker_new(struct ao_reactor *reactor, unsigned n_threads, struct ao_worker **ret,
                  struct ao_error *reterr);

/**
 * Stop the pool: jobs not yet started are dropped, a running one finishes, the threads are
 * joined, then every done() not yet called is called with @cancelled true. The owners of the
 * jobs must be gone or have cancelled them by then. Not from inside a done(). NULL is accepted;
 * returns NULL.
 */
struct ao_worker *ao_worker_free(struct ao_worker *w);

/**
 * Submit a job (see the ownership notes above). *@ret_job (may be NULL) gets its handle.
 *
 * With @w NULL there is no pool: run() and then done(@data, false) are called at once, before
 * this returns, and *@ret_job is set to NULL first (done() may free what holds it). Tools that
 * run without a loop to keep free use this, with the same code path as the operator.
 *
 * -ESHUTDOWN once the pool is being freed; then nothing is called and @data stays the caller's.
 */
int ao_worker_submit(struct ao_worker *w, ao_worker_run_handler *run, ao_worker_done_handler *done,
                     void *data, struct ao_worker_job **ret_job);

/**
 * Free @data with @release on the pool: for a large structure (a parsed 16 MiB document) whose
 * freeing alone would hold the loop for tens of ms. @data is the pool's from now on; @release
 * runs exactly once, on a pool thread, or on the loop when the pool is freed first. Without a
 * pool (@w NULL), at once.
 */
void ao_worker_release(struct ao_worker *w, ao_worker_run_handler *release, void *data);

/** The job's owner goes away: done() comes with @cancelled true (see above). NULL is accepted. */
void ao_worker_job_cancel(struct ao_worker_job *job);

/** Jobs submitted whose done() has not run yet. */
size_t ao_worker_pending(const struct ao_worker *w);

/**
 * Take part in graceful shutdown: it completes only once every job's done() ran, so the
 * results of a hook that exited just before (its values patch, its metrics) are not lost.
 * Nothing is killed: a job ends on its own, its input being bounded.
 */
int ao_worker_attach_shutdown(struct ao_worker *w, struct ao_shutdown *shutdown);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The worker pool: jobs run on a pool thread and their done() on the loop's, in order;
 * cancelled jobs are never run (or finish and are told so); freeing the pool with jobs queued
 * drops them cleanly; graceful shutdown waits for the jobs; and the loop keeps running its
 * timers while a job parses a large document. Jobs block on semaphores the test posts, so
 * "running", "queued" and "finished" are decided by the test, not by timing.
 *
 * worker.c is included (rather than linked) to watch the pool's stopping flag while another
 * thread frees it. Runs on both reactor backends (AO_REACTOR).
 */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "../../src/reactor/worker.c"
#include "../tap.h"
#include "ao/log.h"
#include "ao/strbuf.h"
#include "reactor-backend.h"

#define DEADLINE_USEC (60 * AO_USEC_PER_SEC)

static struct ao_reactor *reactor;
static pthread_t loop_thread;

struct job {
        int index;
        int runs;             /* run() calls */
        pthread_t run_thread; /* where run() ran */
        int dones;            /* done() calls */
        bool cancelled;       /* as done() was told */
        bool done_on_loop;    /* done() ran on the loop's thread */
        int done_order;       /* 1-based position among the dones */
        sem_t *started;       /* posted when run() starts, if set */
        sem_t *release;       /* waited for before run() returns, if set */
};

static int n_dones;

static void job_run(void *data)
{
        struct job *j = data;
        j->runs++;
        j->run_thread = pthread_self();
        if (j->started)
                sem_post(j->started);
        if (j->release)
                while (sem_wait(j->release) < 0)
                        ;
}

static void job_done(void *data, bool cancelled)
{
        struct job *j = data;
        j->dones++;
        j->cancelled = cancelled;
        j->done_on_loop = pthread_equal(pthread_self(), loop_thread);
        j->done_order = ++n_dones;
}

/* Run the loop until @n dones have been called in all, or a deadline. */
static void run_until_dones(int n)
{
        uint64_t deadline = ao_clock_now_usec() + DEADLINE_USEC;
        while (n_dones < n && ao_clock_now_usec() < deadline)
                (void) ao_reactor_run_once(reactor, 100 * AO_USEC_PER_MSEC);
}

static struct ao_worker *worker_new(unsigned n)
{
        struct ao_worker *w = NULL;
        struct ao_error err = {0};
        if (ao_worker_new(reactor, n, &w, &err) < 0)
                tap_bail(err.msg);
        return w;
}

static void test_threads_and_order(void)
{
        struct ao_worker *w = worker_new(1);
        struct job jobs[8] = {0};
        n_dones = 0;
        for (int i = 0; i < 8; i++) {
                jobs[i].index = i;
                tap_is_int(ao_worker_submit(w, job_run, job_done, &jobs[i], NULL), 0, "job %d submitted", i);
        }
        tap_is_int(ao_worker_pending(w), 8, "8 jobs pending");
        run_until_dones(8);
        bool off_loop = true, on_loop = true, in_order = true, once = true;
        for (int i = 0; i < 8; i++) {
                off_loop &= !pthread_equal(jobs[i].run_thread, loop_thread);
                on_loop &= jobs[i].done_on_loop;
                in_order &= jobs[i].done_order == i + 1;
                once &= jobs[i].runs == 1 && jobs[i].dones == 1 && !jobs[i].cancelled;
        }
        tap_ok(off_loop, "every run() ran on a thread other than the loop's");
        tap_ok(on_loop, "every done() ran on the loop's thread");
        tap_ok(in_order, "dones came in the order the jobs were submitted");
        tap_ok(once, "each job ran once and was done once, not cancelled");
        tap_is_int(ao_worker_pending(w), 0, "nothing pending");
        tap_is_int(ao_reactor_count_sources(reactor), 1, "the pool holds one source (its wake-up)");
        w = ao_worker_free(w);
        tap_is_int(ao_reactor_count_sources(reactor), 0, "freeing the pool released its source");
}

static void test_without_pool(void)
{
        struct job j = {0};
        struct ao_worker_job *handle = (struct ao_worker_job *) &j; /* must be overwritten */
        n_dones = 0;
        tap_is_int(ao_worker_submit(NULL, job_run, job_done, &j, &handle), 0, "submit without a pool");
        tap_ok(handle == NULL, "no handle without a pool");
        tap_ok(j.runs == 1 && j.dones == 1 && !j.cancelled, "run and done were called at once");
        tap_ok(pthread_equal(j.run_thread, loop_thread), "on the caller's thread");
}

static void test_cancel(void)
{
        struct ao_worker *w = worker_new(1);
        sem_t started, release;
        sem_init(&started, 0, 0);
        sem_init(&release, 0, 0);
        struct job blocker = {.started = &started, .release = &release}, queued = {0}, running = {0};
        struct ao_worker_job *hq = NULL, *hr = NULL;
        n_dones = 0;

        /* A job still queued behind a running one is cancelled: never run, done told so. */
        (void) ao_worker_submit(w, job_run, job_done, &blocker, NULL);
        (void) ao_worker_submit(w, job_run, job_done, &queued, &hq);
        while (sem_wait(&started) < 0)
                ;
        ao_worker_job_cancel(hq);
        sem_post(&release);
        run_until_dones(2);
        tap_ok(blocker.runs == 1 && blocker.dones == 1 && !blocker.cancelled, "the running job finished");
        tap_is_int(queued.runs, 0, "the cancelled queued job never ran");
        tap_ok(queued.dones == 1 && queued.cancelled, "its done() came, cancelled");
        tap_ok(queued.done_on_loop, "on the loop's thread");

        /* A running job that is cancelled finishes, and its done() says it was cancelled. */
        running.started = &started;
        running.release = &release;
        (void) ao_worker_submit(w, job_run, job_done, &running, &hr);
        while (sem_wait(&started) < 0)
                ;
        ao_worker_job_cancel(hr);
        sem_post(&release);
        run_until_dones(3);
        tap_ok(running.runs == 1 && running.dones == 1 && running.cancelled,
               "a job cancelled while running finished; its done() came cancelled");
        tap_is_int(ao_worker_pending(w), 0, "nothing pending");
        w = ao_worker_free(w);
        sem_destroy(&started);
        sem_destroy(&release);
}

/* A done() that cancels a later job whose result is already waiting on the loop. */
static struct ao_worker_job *victim_handle;

static void cancelling_done(void *data, bool cancelled)
{
        job_done(data, cancelled);
        ao_worker_job_cancel(victim_handle);
}

static void test_cancel_from_done(void)
{
        struct ao_worker *w = worker_new(1);
        struct job first = {0}, victim = {0};
        n_dones = 0;
        (void) ao_worker_submit(w, job_run, cancelling_done, &first, NULL);
        (void) ao_worker_submit(w, job_run, job_done, &victim, &victim_handle);
        run_until_dones(2);
        tap_ok(first.dones == 1 && !first.cancelled, "the first job was done");
        tap_ok(victim.dones == 1 && victim.cancelled,
               "a job cancelled by an earlier done() is told so, even when it had finished");
        w = ao_worker_free(w);
}

/* --- releasing off the loop ----------------------------------------------------------------------- */

struct released {
        int calls;
        pthread_t thread;
};

static void release_it(void *data)
{
        struct released *r = data;
        r->calls++;
        r->thread = pthread_self();
}

static void test_release(void)
{
        struct ao_worker *w = worker_new(1);
        struct released r = {0};
        ao_worker_release(w, release_it, &r);
        uint64_t deadline = ao_clock_now_usec() + DEADLINE_USEC;
        while (ao_worker_pending(w) > 0 && ao_clock_now_usec() < deadline)
                (void) ao_reactor_run_once(reactor, 100 * AO_USEC_PER_MSEC);
        tap_ok(r.calls == 1 && !pthread_equal(r.thread, loop_thread), "release: once, on a pool thread");

        /* Queued behind a job that holds the thread when the pool is freed: released by the free. */
        sem_t started, release;
        sem_init(&started, 0, 0);
        sem_init(&release, 0, 0);
        struct job blocker = {.started = &started, .release = &release};
        struct released late = {0};
        (void) ao_worker_submit(w, job_run, job_done, &blocker, NULL);
        while (sem_wait(&started) < 0)
                ;
        ao_worker_release(w, release_it, &late);
        sem_post(&release); /* the blocker ends; whether the thread takes the release first or not */
        w = ao_worker_free(w);
        tap_is_int(late.calls, 1, "release: exactly once when the pool is freed with it queued or run");

        struct released now = {0};
        ao_worker_release(NULL, release_it, &now);
        tap_ok(now.calls == 1 && pthread_equal(now.thread, loop_thread), "release without a pool: at once");
        sem_destroy(&started);
        sem_destroy(&release);
}

struct freeing {
        struct ao_worker *w;
        sem_t freed;
};

static void *free_pool(void *userdata)
{
        struct freeing *f = userdata;
        f->w = ao_worker_free(f->w);
        sem_post(&f->freed);
        return NULL;
}

static bool pool_stopping(struct ao_worker *w)
{
        pthread_mutex_lock(&w->lock);
        bool stopping = w->stopping;
        pthread_mutex_unlock(&w->lock);
        return stopping;
}

/*
 * Free the pool while one job runs and three wait: the running one finishes, the queued ones
 * are never run, and every done() is called (cancelled) before the free returns. Another thread
 * frees it while this one, blocked, releases the running job once the pool is stopping (the loop
 * does not run meanwhile: the pool has one user at a time).
 */
static void test_free_with_jobs_pending(void)
{
        struct freeing f = {.w = worker_new(1)};
        sem_t started, release;
        sem_init(&started, 0, 0);
        sem_init(&release, 0, 0);
        sem_init(&f.freed, 0, 0);
        struct job running = {.started = &started, .release = &release}, queued[3] = {0};
        n_dones = 0;
        (void) ao_worker_submit(f.w, job_run, job_done, &running, NULL);
        for (int i = 0; i < 3; i++)
                (void) ao_worker_submit(f.w, job_run, job_done, &queued[i], NULL);
        while (sem_wait(&started) < 0)
                ;
        struct ao_worker *w = f.w;
        pthread_t t;
        if (pthread_create(&t, NULL, free_pool, &f) != 0)
                tap_bail("pthread_create");
        while (!pool_stopping(w))
                sched_yield();
        sem_post(&release);
        while (sem_wait(&f.freed) < 0)
                ;
        pthread_join(t, NULL);
        tap_ok(f.w == NULL, "the pool was freed");
        tap_ok(running.runs == 1 && running.dones == 1 && running.cancelled,
               "the running job finished; its done() came, cancelled");
        bool dropped = true;
        for (int i = 0; i < 3; i++)
                dropped &= queued[i].runs == 0 && queued[i].dones == 1 && queued[i].cancelled;
        tap_ok(dropped, "the queued jobs were never run; their done() came, cancelled");
        tap_is_int(n_dones, 4, "four dones in all");
        sem_destroy(&started);
        sem_destroy(&release);
        sem_destroy(&f.freed);
}

/* --- the loop stays responsive ------------------------------------------------------------------ */

#define TICKS 5

struct parse_job {
        const char *text; /* borrowed: the test's, unchanged until done */
        size_t len;
        sem_t ticked; /* posted by the loop's timer once it fired TICKS times */
        int items;    /* what run() found */
        int ticks_at_done;
};

static atomic_int ticks;
static struct parse_job *ticking_for;

static int on_tick(struct ao_source *s, uint64_t now, void *userdata)
{
        if (++ticks == TICKS && ticking_for)
                sem_post(&ticking_for->ticked);
        (void) ao_source_set_time_relative(s, 1000);
        return 0;
}

static void parse_run(void *data)
{
        struct parse_job *p = data;
        cJSON *doc = cJSON_ParseWithLength(p->text, p->len);
        p->items = cJSON_GetArraySize(doc);
        cJSON_Delete(doc);
        /* The job cannot end before the loop ticked TICKS times: a loop held by it never would. */
        while (sem_wait(&p->ticked) < 0)
                ;
}

static void parse_done(void *data, bool cancelled)
{
        struct parse_job *p = data;
        p->ticks_at_done = ticks;
        n_dones++;
}

static void test_loop_stays_responsive(void)
{
        struct ao_strbuf doc = {0};
        ao_strbuf_append(&doc, "[");
        for (int i = 0; i < 100000; i++)
                ao_strbuf_appendf(&doc, "%s{\"name\":\"object-%d\",\"labels\":{\"app\":\"x\",\"n\":%d}}",
                                  i ? "," : "", i, i);
        ao_strbuf_append(&doc, "]");
        struct parse_job p = {.text = ao_strbuf_str(&doc), .len = doc.len};
        sem_init(&p.ticked, 0, 0);
        ticking_for = &p;
        ticks = 0;
        n_dones = 0;
        struct ao_source *timer = NULL;
        if (ao_reactor_add_time_relative(reactor, &timer, 1000, on_tick, NULL) < 0)
                tap_bail("timer");
        struct ao_worker *w = worker_new(1);
        tap_is_int(ao_worker_submit(w, parse_run, parse_done, &p, NULL), 0, "a %zu-byte parse submitted",
                   doc.len);
        run_until_dones(1);
        tap_is_int(p.items, 100000, "the job parsed the document");
        tap_ok(p.ticks_at_done >= TICKS,
               "the loop's timer fired %d times before the job was done (want >= %d)", p.ticks_at_done,
               TICKS);
        ticking_for = NULL;
        timer = ao_source_free(timer);
        w = ao_worker_free(w);
        sem_destroy(&p.ticked);
        ao_strbuf_done(&doc);
}

/* --- graceful shutdown -------------------------------------------------------------------------- */

static int on_tick_count(struct ao_source *s, uint64_t now, void *userdata)
{
        ++*(int *) userdata;
        (void) ao_source_set_time_relative(s, 1000);
        return 0;
}

static void test_shutdown_waits(void)
{
        struct ao_shutdown *sd = NULL;
        if (ao_shutdown_new(reactor, 60 * AO_USEC_PER_SEC, &sd) < 0)
                tap_bail("ao_shutdown_new");
        struct ao_worker *w = worker_new(1);
        tap_is_int(ao_worker_attach_shutdown(w, sd), 0, "the pool takes part in shutdown");
        sem_t started, release;
        sem_init(&started, 0, 0);
        sem_init(&release, 0, 0);
        struct job j = {.started = &started, .release = &release};
        n_dones = 0;
        (void) ao_worker_submit(w, job_run, job_done, &j, NULL);
        while (sem_wait(&started) < 0)
                ;
        ao_shutdown_begin(sd, 0);
        int n = 0;
        struct ao_source *timer = NULL;
        (void) ao_reactor_add_time_relative(reactor, &timer, 1000, on_tick_count, &n);
        uint64_t deadline = ao_clock_now_usec() + DEADLINE_USEC;
        while (n < 20 && ao_clock_now_usec() < deadline)
                (void) ao_reactor_run_once(reactor, 100 * AO_USEC_PER_MSEC);
        tap_ok(!ao_reactor_exiting(reactor), "shutdown waits while a job runs (%d loop ticks)", n);
        sem_post(&release);
        timer = ao_source_free(timer);
        tap_is_int(ao_reactor_run(reactor), 0, "then the loop ends with 0");
        tap_ok(j.dones == 1 && !j.cancelled, "after the job's done() ran");
        w = ao_worker_free(w);
        sd = ao_shutdown_free(sd);
        sem_destroy(&started);
        sem_destroy(&release);
}

static void test_two_threads(void)
{
        struct ao_worker *w = worker_new(2);
        sem_t started, release;
        sem_init(&started, 0, 0);
        sem_init(&release, 0, 0);
        struct job a = {.started = &started, .release = &release}, b = {.started = &started};
        n_dones = 0;
        (void) ao_worker_submit(w, job_run, job_done, &a, NULL);
        (void) ao_worker_submit(w, job_run, job_done, &b, NULL);
        /* Both started: with a blocked, only the second thread can have run b. */
        for (int i = 0; i < 2; i++)
                while (sem_wait(&started) < 0)
                        ;
        run_until_dones(1);
        tap_ok(b.dones == 1 && a.dones == 0, "with two threads a job does not wait for a blocked one");
        sem_post(&release);
        run_until_dones(2);
        tap_ok(!pthread_equal(a.run_thread, b.run_thread), "on two different threads");
        w = ao_worker_free(w);
        sem_destroy(&started);
        sem_destroy(&release);
}

int main(void)
{
        /* As in the operator: SIGTERM and SIGINT are read through the loop. */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigprocmask(SIG_BLOCK, &set, NULL);
        struct ao_log_options log = {.format = AO_LOG_FORMAT_TEXT, .level = AO_LOG_ERROR, .fd = -1};
        ao_log_setup(&log);
        loop_thread = pthread_self();
        reactor = test_reactor_new();

        test_threads_and_order();
        test_without_pool();
        test_cancel();
        test_cancel_from_done();
        test_free_with_jobs_pending();
        test_release();
        test_loop_stays_responsive();
        test_two_threads();
        test_shutdown_waits();

        tap_is_int(ao_reactor_count_sources(reactor), 0, "no source left behind");
        reactor = ao_reactor_free(reactor);
        return tap_done();
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The worker pool (include/ao/worker.h): a mutex-protected queue of jobs for the threads, a list
 * of finished ones for the loop, and the reactor's wake-up source (an eventfd, watched by either
 * backend) to tell the loop that the list has something. The loop and the threads share nothing
 * else.
 */
#include "ao/worker.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/macro.h"
#include "ao/reactor.h"
#include "ao/shutdown.h"

struct ao_worker_job {
        struct ao_worker *worker;
        struct ao_worker_job *next; /* in queued or finished */
        ao_worker_run_handler *run;
        ao_worker_done_handler *done;
        void *data;     /* the job's until done() returns */
        bool cancelled; /* under the lock: set by the loop, read by a thread before run() */
};

struct job_list {
        struct ao_worker_job *head, *tail;
};

struct ao_worker {
        struct ao_reactor *reactor; /* borrowed, outlives the pool */
        struct ao_source *wakeup;   /* owned: a thread finished a job */
        pthread_mutex_t lock;       /* guards queued, finished, stopping and each job's cancelled */
        pthread_cond_t work;        /* queued got a job, or stopping was set */
        struct job_list queued;     /* submitted, waiting for a thread */
        struct job_list finished;   /* run (or skipped), waiting for done() on the loop */
        bool stopping;
        pthread_t *threads; /* owned */
        size_t n_threads;
        size_t n_pending;             /* loop only: submitted, done() not yet called */
        struct ao_shutdown *shutdown; /* borrowed; NULL: not attached */
};

static void list_push(struct job_list *l, struct ao_worker_job *job)
{
        job->next = NULL;
        if (l->tail)
                l->tail->next = job;
        else
                l->head = job;
        l->tail = job;
}

static struct ao_worker_job *list_pop(struct job_list *l)
{
        struct ao_worker_job *job = l->head;
        if (job) {
                l->head = job->next;
                if (!l->head)
                        l->tail = NULL;
        }
        return job;
}

/* Everything in @from goes to the end of @to, in order. */
static void list_move(struct job_list *to, struct job_list *from)
{
        if (!from->head)
                return;
        if (to->tail)
                to->tail->next = from->head;
        else
                to->head = from->head;
        to->tail = from->tail;
        *from = (struct job_list){0};
}

/* ---- the threads ----------------------------------------------------------------------------- */

/*
 * Below the loop's priority: where the two share a CPU (a pod with one, a busy node) the loop
 * takes it when it has work, and the job goes on in the loop's idle time. The nice value is a
 * thread's own on Linux (setpriority(2)); raising it needs no privilege.
 */
#define WORKER_NICE_INCREMENT 10

static void lower_priority(void)
{
        pid_t tid = (pid_t) syscall(SYS_gettid);
        errno = 0;
        int nice = getpriority(PRIO_PROCESS, (id_t) tid);
        if (nice == -1 && errno != 0)
                return;
        (void) setpriority(PRIO_PROCESS, (id_t) tid, AO_MIN(nice + WORKER_NICE_INCREMENT, 19));
}

static void *thread_main(void *userdata)
{
        struct ao_worker *w = userdata;
        lower_priority();
        pthread_mutex_lock(&w->lock);
        for (;;) {
                while (!w->stopping && !w->queued.head)
                        pthread_cond_wait(&w->work, &w->lock);
                if (w->stopping)
                        break; /* what is still queued is dropped by ao_worker_free() */
                struct ao_worker_job *job = list_pop(&w->queued);
                bool skip = job->cancelled;
                pthread_mutex_unlock(&w->lock);
                if (!skip)
                        job->run(job->data);
                pthread_mutex_lock(&w->lock);
                list_push(&w->finished, job);
                /* The source outlives the threads: ao_worker_free() joins them before freeing it. */
                ao_source_wakeup(w->wakeup);
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

/* ---- the loop -------------------------------------------------------------------------------- */

static void finish_job(struct ao_worker *w, struct ao_worker_job *job, bool cancelled)
{
        w->n_pending--;
        job->done(job->data, cancelled);
        free(job);
}

static int on_wakeup(struct ao_source *s, void *userdata)
{
        struct ao_worker *w = userdata;
        pthread_mutex_lock(&w->lock);
        struct job_list done = w->finished;
        w->finished = (struct job_list){0};
        pthread_mutex_unlock(&w->lock);
        /*
         * A done() may cancel a job further down this list (its owner went away): the flag is
         * read when that job's turn comes. Only the loop writes it, so no lock is needed here.
         */
        for (struct ao_worker_job *job; (job = list_pop(&done));)
                finish_job(w, job, job->cancelled);
        if (w->shutdown)
                ao_shutdown_progress(w->shutdown);
        return 0;
}

int ao_worker_new(struct ao_reactor *reactor, unsigned n_threads, struct ao_worker **ret,
                  struct ao_error *reterr)
{
        struct ao_worker *w = ao_xcalloc(1, sizeof(*w));
        w->reactor = reactor;
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->work, NULL);
        int r = ao_reactor_add_wakeup(reactor, &w->wakeup, on_wakeup, w);
        if (r < 0) {
                ao_error_set(reterr, r, "worker: cannot create the wake-up source: %s", strerror(-r));
                return ao_worker_free(w), r;
        }
        (void) ao_source_set_description(w->wakeup, "worker");
        w->threads = ao_xcalloc(AO_MAX(n_threads, 1u), sizeof(*w->threads));
        /* The threads must never take a signal: they start with all blocked, whatever our mask. */
        sigset_t all, saved;
        sigfillset(&all);
        (void) pthread_sigmask(SIG_SETMASK, &all, &saved);
        for (size_t i = 0; i < AO_MAX(n_threads, 1u) && r == 0; i++) {
                r = -pthread_create(&w->threads[i], NULL, thread_main, w);
                if (r == 0) {
                        (void) pthread_setname_np(w->threads[i], "ao-worker");
                        w->n_threads++;
                }
        }
        (void) pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (r < 0) {
                ao_error_set(reterr, r, "worker: cannot start a thread: %s", strerror(-r));
                return ao_worker_free(w), r;
        }
        *ret = w;
        return 0;
}

struct ao_worker *ao_worker_free(struct ao_worker *w)
{
        if (!w)
                return NULL;
        pthread_mutex_lock(&w->lock);
        w->stopping = true;
        pthread_cond_broadcast(&w->work);
        pthread_mutex_unlock(&w->lock);
        for (size_t i = 0; i < w->n_threads; i++)
                (void) pthread_join(w->threads[i], NULL);
        /* No thread is left: the lists are the loop's alone. */
        struct job_list left = w->finished;
        list_move(&left, &w->queued);
        for (struct ao_worker_job *job; (job = list_pop(&left));)
                finish_job(w, job, true);
        ao_source_free(w->wakeup);
        pthread_cond_destroy(&w->work);
        pthread_mutex_destroy(&w->lock);
        free(w->threads);
        free(w);
        return NULL;
}

int ao_worker_submit(struct ao_worker *w, ao_worker_run_handler *run, ao_worker_done_handler *done,
                     void *data, struct ao_worker_job **ret_job)
{
        if (ret_job)
                *ret_job = NULL;
        if (!w) {
                run(data);
                done(data, false);
                return 0;
        }
        struct ao_worker_job *job = ao_xmalloc(sizeof(*job));
        *job = (struct ao_worker_job){.worker = w, .run = run, .done = done, .data = data};
        pthread_mutex_lock(&w->lock);
        if (w->stopping) {
                pthread_mutex_unlock(&w->lock);
                free(job);
                return -ESHUTDOWN;
        }
        list_push(&w->queued, job);
        pthread_cond_signal(&w->work);
        pthread_mutex_unlock(&w->lock);
        w->n_pending++;
        if (ret_job)
                *ret_job = job;
        return 0;
}

/* What ao_worker_release() submits: whether the thread got to it decides who frees. */
struct release {
        ao_worker_run_handler *release;
        void *data;
        bool released;
};

static void release_run(void *data)
{
        struct release *rel = data;
        rel->release(rel->data);
        rel->released = true;
}

static void release_done(void *data, bool cancelled)
{
        struct release *rel = data;
        if (!rel->released) /* dropped by ao_worker_free() before a thread took it */
                rel->release(rel->data);
        free(rel);
}

void ao_worker_release(struct ao_worker *w, ao_worker_run_handler *release, void *data)
{
        struct release *rel = ao_xmalloc(sizeof(*rel));
        *rel = (struct release){.release = release, .data = data};
        if (ao_worker_submit(w, release_run, release_done, rel, NULL) < 0)
                release_done(rel, true); /* the pool is being freed: here and now */
}

void ao_worker_job_cancel(struct ao_worker_job *job)
{
        if (!job)
                return;
        struct ao_worker *w = job->worker;
        pthread_mutex_lock(&w->lock);
        job->cancelled = true;
        pthread_mutex_unlock(&w->lock);
}

size_t ao_worker_pending(const struct ao_worker *w)
{
        return w ? w->n_pending : 0;
}

/* ---- shutdown -------------------------------------------------------------------------------- */

static size_t shutdown_pending(void *userdata)
{
        return ((struct ao_worker *) userdata)->n_pending;
}

static const struct ao_shutdown_participant shutdown_participant = {
    .name = "jobs off the event loop",
    .pending = shutdown_pending,
};

int ao_worker_attach_shutdown(struct ao_worker *w, struct ao_shutdown *shutdown)
{
        w->shutdown = shutdown;
        return ao_shutdown_register(shutdown, &shutdown_participant, w);
}

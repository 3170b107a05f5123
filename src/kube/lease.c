/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Leader election on a Lease (include/ao/lease.h). One timer drives everything: each tick reads
 * the Lease and decides: create it, renew it, take it over, or wait. The record's changes are
 * timed on our monotonic clock, never by comparing the timestamps written in it.
 *
 * A second timer ends the leadership at the renew deadline after the last renewal was sent,
 * whatever the requests are doing. Were it checked only when a request fails, a request that
 * hangs (an API server that stalls), or a failure seen one retry period late, would keep a leader
 * leading after another replica, which takes over a lease duration after it last saw the record
 * change, had taken over: two leaders at once. Timed from the sending of the renewal, which the
 * other replica can only see later, the leader always stops (lease duration - renew deadline)
 * before anyone may take over.
 */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ao/alloc.h"
#include "ao/kube-client.h"
#include "ao/kube-discovery.h"
#include "ao/lease.h"
#include "ao/log.h"
#include "ao/reactor.h"

struct ao_lease {
        struct ao_lease_options options;
        char *namespace_, *name, *identity;
        char *path, *collection;
        struct ao_source *timer;
        struct ao_source *deadline; /* the leader's renew deadline */
        struct ao_kube_request *request;
        char *observed;         /* holder|acquireTime|renewTime|transitions of the last read */
        char *holder;           /* the holder of the last read; NULL before the first */
        uint64_t observed_usec; /* when that record last changed, on our clock */
        cJSON *last;            /* the Lease as last read or written (for renewals and release) */
        bool leader;
        bool lost;
        uint64_t renewed_usec;                    /* when the last successful renewal was sent */
        uint64_t sent_usec;                       /* when the write in flight was sent */
        char last_failure[AO_ERROR_MSG_MAX + 32]; /* since the last renewal; "" when none */
};

static void schedule_tick(struct ao_lease *l, uint64_t usec)
{
        (void) ao_source_set_time_relative(l->timer, usec);
}

/* metav1.MicroTime: "2026-11-23T03:10:00.123456Z". */
static void micro_time(char buf[40])
{
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        size_t n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + n, 40 - n, ".%06ldZ", ts.tv_nsec / 1000);
}

static const cJSON *spec_of(const cJSON *lease)
{
        return cJSON_GetObjectItemCaseSensitive(lease, "spec");
}

static const char *spec_string(const cJSON *lease, const char *field)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec_of(lease), field);
        return cJSON_IsString(v) ? v->valuestring : "";
}

static double spec_number(const cJSON *lease, const char *field, double fallback)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec_of(lease), field);
        return cJSON_IsNumber(v) ? v->valuedouble : fallback;
}

/* The Lease we want written: @holder with fresh times (acquireTime kept when renewing). */
static cJSON *lease_body(struct ao_lease *l, const cJSON *current, const char *holder, bool acquire)
{
        char now[40];
        micro_time(now);
        cJSON *body = current ? cJSON_Duplicate(current, true) : cJSON_CreateObject();
        if (!current) {
                cJSON_AddStringToObject(body, "apiVersion", "coordination.k8s.io/v1");
                cJSON_AddStringToObject(body, "kind", "Lease");
                cJSON *meta = cJSON_AddObjectToObject(body, "metadata");
                cJSON_AddStringToObject(meta, "name", l->name);
                cJSON_AddStringToObject(meta, "namespace", l->namespace_);
        }
        double transitions = current ? spec_number(current, "leaseTransitions", 0) : 0;
        bool changing_hands = current && strcmp(spec_string(current, "holderIdentity"), holder) != 0;
        cJSON_DeleteItemFromObjectCaseSensitive(body, "spec");
        cJSON *spec = cJSON_AddObjectToObject(body, "spec");
        cJSON_AddStringToObject(spec, "holderIdentity", holder);
        /* Whole seconds, at least 1; a released Lease says 1 so that it is free at once. */
        uint64_t seconds = l->options.lease_duration_usec / 1000000;
        cJSON_AddNumberToObject(spec, "leaseDurationSeconds", *holder && seconds > 1 ? (double) seconds : 1);
        cJSON_AddStringToObject(spec, "acquireTime", acquire ? now : spec_string(current, "acquireTime"));
        cJSON_AddStringToObject(spec, "renewTime", now);
        cJSON_AddNumberToObject(spec, "leaseTransitions", transitions + (changing_hands && *holder ? 1 : 0));
        return body;
}

static void became_leader(struct ao_lease *l)
{
        l->renewed_usec = l->sent_usec;
        l->last_failure[0] = '\0';
        (void) ao_source_set_time(l->deadline, l->renewed_usec + l->options.renew_deadline_usec);
        if (l->leader)
                return;
        l->leader = true;
        ao_log(AO_LOG_INFO, "leader election: %s holds Lease %s/%s now", l->identity, l->namespace_, l->name);
        if (l->options.on_acquired)
                l->options.on_acquired(l->options.userdata);
}

static void lose(struct ao_lease *l, const char *why)
{
        if (l->lost)
                return;
        l->lost = true;
        l->leader = false;
        ao_log(AO_LOG_ERROR, "leader election: lost Lease %s/%s: %s", l->namespace_, l->name, why);
        (void) ao_source_set_enabled(l->timer, AO_SOURCE_OFF);
        (void) ao_source_set_enabled(l->deadline, AO_SOURCE_OFF);
        ao_kube_request_cancel(l->request); /* a renewal still in flight must not make us leader again */
        l->request = NULL;
        if (l->options.on_lost)
                l->options.on_lost(l->options.userdata);
}

/* A renewal or read failed: as the leader, give up once the renew deadline has passed. */
static void failed(struct ao_lease *l, const char *what)
{
        uint64_t now = ao_reactor_now(l->options.reactor);
        if (l->leader && now - l->renewed_usec >= l->options.renew_deadline_usec) {
                lose(l, what);
                return;
        }
        snprintf(l->last_failure, sizeof(l->last_failure), "%s", what);
        ao_log(AO_LOG_WARN, "leader election: %s; trying again", what);
        schedule_tick(l, l->options.retry_period_usec);
}

static void on_written(const struct ao_kube_response *resp, void *userdata)
{
        struct ao_lease *l = userdata;
        l->request = NULL;
        if (resp->status == 200 || resp->status == 201) {
                cJSON_Delete(l->last);
                l->last = cJSON_ParseWithLength(resp->body, resp->len);
                became_leader(l);
        } else if (resp->status == 409) {
                /* Someone else wrote first: they won this round. */
                if (l->leader)
                        lose(l, "another replica wrote the Lease");
        } else {
                char what[AO_ERROR_MSG_MAX + 32];
                if (resp->status)
                        snprintf(what, sizeof(what), "writing the Lease: HTTP %ld", resp->status);
                else
                        snprintf(what, sizeof(what), "writing the Lease: %s", resp->error.msg);
                failed(l, what);
                return;
        }
        if (!l->lost)
                schedule_tick(l, l->options.retry_period_usec);
}

static void write_lease(struct ao_lease *l, cJSON *body, bool create)
{
        l->sent_usec = ao_reactor_now(l->options.reactor);
        char *text = cJSON_PrintUnformatted(body);
        struct ao_error err = {0};
        if (ao_kube_request(l->options.client, create ? "POST" : "PUT", create ? l->collection : l->path,
                            "application/json", text, strlen(text), on_written, l, &l->request, &err) < 0) {
                l->request = NULL;
                failed(l, err.msg);
        }
        free(text);
        cJSON_Delete(body);
}

/* Tell the owner who holds the Lease when that changed (a follower's /readyz asks the holder). */
static void observe_holder(struct ao_lease *l, const char *holder)
{
        if (l->holder && strcmp(l->holder, holder) == 0)
                return;
        free(l->holder);
        l->holder = ao_xstrdup(holder);
        if (l->options.on_holder)
                l->options.on_holder(holder, l->options.userdata);
}

/* Note when the record changed, on our clock. */
static void observe(struct ao_lease *l, const cJSON *lease)
{
        char record[512];
        snprintf(record, sizeof(record), "%s|%s|%s|%g", spec_string(lease, "holderIdentity"),
                 spec_string(lease, "acquireTime"), spec_string(lease, "renewTime"),
                 spec_number(lease, "leaseTransitions", 0));
        if (!l->observed || strcmp(l->observed, record) != 0) {
                free(l->observed);
                l->observed = ao_xstrdup(record);
                l->observed_usec = ao_reactor_now(l->options.reactor);
        }
        observe_holder(l, spec_string(lease, "holderIdentity"));
}

static void on_read(const struct ao_kube_response *resp, void *userdata)
{
        struct ao_lease *l = userdata;
        l->request = NULL;
        if (resp->status == 404) {
                write_lease(l, lease_body(l, NULL, l->identity, true), true);
                return;
        }
        cJSON *lease = resp->status == 200 ? cJSON_ParseWithLength(resp->body, resp->len) : NULL;
        if (!lease) {
                char what[AO_ERROR_MSG_MAX + 32];
                if (resp->status)
                        snprintf(what, sizeof(what), "reading the Lease: HTTP %ld", resp->status);
                else
                        snprintf(what, sizeof(what), "reading the Lease: %s", resp->error.msg);
                failed(l, what);
                return;
        }
        observe(l, lease);
        const char *holder = spec_string(lease, "holderIdentity");
        uint64_t duration = (uint64_t) (spec_number(lease, "leaseDurationSeconds", 0) * 1e6);
        uint64_t now = ao_reactor_now(l->options.reactor);
        if (strcmp(holder, l->identity) == 0) {
                write_lease(l, lease_body(l, lease, l->identity, false), false);
        } else if (l->leader) {
                lose(l, "another replica holds it");
        } else if (!*holder || now - l->observed_usec >= duration) {
                write_lease(l, lease_body(l, lease, l->identity, true), false);
        } else {
                schedule_tick(l, l->options.retry_period_usec);
        }
        cJSON_Delete(lease);
}

static int on_tick(struct ao_source *s, uint64_t now, void *userdata)
{
        struct ao_lease *l = userdata;
        struct ao_error err = {0};
        if (ao_kube_request(l->options.client, "GET", l->path, NULL, NULL, 0, on_read, l, &l->request, &err) <
            0) {
                l->request = NULL;
                failed(l, err.msg);
        }
        return 0;
}

static int on_deadline(struct ao_source *s, uint64_t now, void *userdata)
{
        struct ao_lease *l = userdata;
        if (!l->leader || now - l->renewed_usec < l->options.renew_deadline_usec)
                return 0;
        char why[sizeof(l->last_failure) + 64];
        if (l->last_failure[0])
                snprintf(why, sizeof(why), "not renewed within the renew deadline (last failure: %s)",
                         l->last_failure);
        else
                snprintf(why, sizeof(why), "not renewed within the renew deadline (no answer)");
        lose(l, why);
        return 0;
}

int ao_lease_start(const struct ao_lease_options *options, struct ao_lease **ret, struct ao_error *reterr)
{
        struct ao_lease *l = ao_xcalloc(1, sizeof(*l));
        l->options = *options;
        l->namespace_ = ao_xstrdup(options->namespace_);
        l->name = ao_xstrdup(options->name);
        l->identity = ao_xstrdup(options->identity);
        l->path = ao_kube_resource_path(options->resource, options->namespace_, options->name);
        l->collection = ao_kube_resource_path(options->resource, options->namespace_, NULL);
        int r = ao_reactor_add_time(options->reactor, &l->timer, 0, on_tick, l);
        if (r < 0) {
                ao_lease_free(l);
                return ao_error_set(reterr, r, "leader election: cannot create a timer");
        }
        (void) ao_source_set_description(l->timer, "lease");
        r = ao_reactor_add_time(options->reactor, &l->deadline, 0, on_deadline, l);
        if (r < 0) {
                ao_lease_free(l);
                return ao_error_set(reterr, r, "leader election: cannot create a timer");
        }
        (void) ao_source_set_enabled(l->deadline, AO_SOURCE_OFF);
        (void) ao_source_set_description(l->deadline, "lease-deadline");
        *ret = l;
        return 0;
}

static void on_released(const struct ao_kube_response *resp, void *userdata)
{
        (void) userdata;
        if (resp->status == 200)
                ao_log(AO_LOG_INFO, "leader election: Lease released");
        else
                ao_log(AO_LOG_WARN,
                       "leader election: releasing the Lease failed (HTTP %ld %s); it expires by itself",
                       resp->status, resp->error.msg);
}

struct ao_lease *ao_lease_free(struct ao_lease *l)
{
        if (!l)
                return NULL;
        ao_kube_request_cancel(l->request);
        l->request = NULL;
        if (l->leader && l->last) {
                /* Hand it over now rather than after a whole lease duration. */
                cJSON *body = lease_body(l, l->last, "", false);
                char *text = cJSON_PrintUnformatted(body);
                struct ao_error err = {0};
                (void) ao_kube_request(l->options.client, "PUT", l->path, "application/json", text,
                                       strlen(text), on_released, NULL, NULL, &err);
                free(text);
                cJSON_Delete(body);
        }
        ao_source_free(l->timer);
        ao_source_free(l->deadline);
        cJSON_Delete(l->last);
        free(l->observed);
        free(l->holder);
        free(l->namespace_);
        free(l->name);
        free(l->identity);
        free(l->path);
        free(l->collection);
        free(l);
        return NULL;
}

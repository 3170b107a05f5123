/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The queues as text and JSON for `queue list` and the debug socket: our
 * raw dump, and the documents and text the Go operator answers with, built
 * from it. The status words differ from the Go operator's ("sleep after
 * fail for 7s (2s left of 7s delay)"): nothing parses them, and ours say
 * which retry comes next.
 */
#include "ao/queue.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/reactor.h"
#include "ao/strbuf.h"

#include "internal.h"

#define TENTH_USEC (AO_USEC_PER_SEC / 10)

char *ao_queue_status(const struct ao_queue *q)
{
        if (q->running)
                return ao_xasprintf("running %s", q->running->description);
        if (q->length == 0)
                return ao_xstrdup("idle");
        if (q->set->stopped)
                return ao_xstrdup("stopped");
        if (q->wait == QUEUE_WAIT_NONE)
                return ao_xstrdup("starting");

        /* Tenths of a second left, rounded up: "0.0s" only once the time is up. */
        uint64_t now = ao_clock_now_usec();
        uint64_t left = q->wait_until > now ? q->wait_until - now : 0;
        uint64_t tenths = (left + TENTH_USEC - 1) / TENTH_USEC;
        if (q->wait == QUEUE_WAIT_BACKOFF)
                return ao_xasprintf("retry %u in %" PRIu64 ".%" PRIu64 "s after failure", q->retry,
                                    tenths / 10, tenths % 10);
        return ao_xasprintf("waiting for a token %" PRIu64 ".%" PRIu64 "s", tenths / 10, tenths % 10);
}

static cJSON *dump_task(const struct ao_task *t, uint64_t now)
{
        cJSON *o = cJSON_CreateObject();
        uint64_t waited = t->running ? t->wait_usec : now > t->ready_usec ? now - t->ready_usec : 0;
        cJSON_AddStringToObject(o, "description", t->description);
        cJSON_AddNumberToObject(o, "failures", t->failures);
        cJSON_AddNumberToObject(o, "waitingSeconds", (double) (waited / AO_USEC_PER_SEC));
        cJSON_AddNumberToObject(o, "contexts", t->contexts ? cJSON_GetArraySize(t->contexts) : 0);
        return o;
}

cJSON *ao_queues_dump(const struct ao_queues *qs)
{
        uint64_t now = ao_clock_now_usec();
        cJSON *all = cJSON_CreateArray();
        for (size_t i = 0; all && i < qs->n_queues; i++) {
                const struct ao_queue *q = qs->queues[i];
                cJSON *o = cJSON_CreateObject();
                cJSON_AddItemToArray(all, o);
                cJSON_AddStringToObject(o, "name", q->name);
                cJSON_AddNumberToObject(o, "length", (double) q->length);
                _cleanup_free_ char *status = ao_queue_status(q);
                cJSON_AddStringToObject(o, "status", status);
                cJSON *tasks = cJSON_AddArrayToObject(o, "tasks");
                for (const struct ao_task *t = q->head; tasks && t; t = t->next)
                        cJSON_AddItemToArray(tasks, dump_task(t, now));
        }
        return all;
}

/* ---- the Go operator's documents (shell-operator's task dump) ---------------------------------- */

static void json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}

static const char *name_of(const cJSON *q)
{
        return cJSON_GetObjectItemCaseSensitive(q, "name")->valuestring;
}

/* The main queue first, the others by name. */
static int queue_order(const void *a, const void *b)
{
        const char *x = name_of(*(const cJSON *const *) a), *y = name_of(*(const cJSON *const *) b);
        bool main_x = strcmp(x, AO_QUEUE_MAIN) == 0, main_y = strcmp(y, AO_QUEUE_MAIN) == 0;
        if (main_x != main_y)
                return main_x ? -1 : 1;
        return strcmp(x, y);
}

/* One queue as the Go operator shows it: name, tasksCount, status and tasks (not for an empty queue). */
static cJSON *peer_queue(const cJSON *raw, bool with_state)
{
        cJSON *q = cJSON_CreateObject();
        cJSON_AddStringToObject(q, "name", name_of(raw));
        cJSON_AddNumberToObject(q, "tasksCount",
                                cJSON_GetObjectItemCaseSensitive(raw, "length")->valuedouble);
        if (!with_state)
                return q;
        cJSON_AddStringToObject(q, "status", cJSON_GetObjectItemCaseSensitive(raw, "status")->valuestring);
        const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(raw, "tasks");
        if (cJSON_GetArraySize(tasks) == 0)
                return q;
        cJSON *list = cJSON_AddArrayToObject(q, "tasks");
        int index = 0;
        const cJSON *t;
        cJSON_ArrayForEach(t, tasks)
        {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddNumberToObject(o, "index", ++index);
                cJSON_AddItemToObject(
                    o, "description",
                    cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t, "description"), true));
                /* Ours beyond the Go operator's two keys: what the text form cannot show. */
                for (const cJSON *extra = t->child; extra; extra = extra->next)
                        if (strcmp(extra->string, "description") != 0)
                                cJSON_AddItemToObject(o, extra->string, cJSON_Duplicate(extra, true));
                cJSON_AddItemToArray(list, o);
        }
        return q;
}

cJSON *ao_queues_dump_main(const struct ao_queues *qs)
{
        /* The set makes the main queue first (ao_queues_new()): it is always there. */
        _cleanup_(json_deletep) cJSON *raw = ao_queues_dump(qs);
        return peer_queue(raw->child, true);
}

/*
 * The list document; *@ret_empty (taken) gets the empty queues when the Go operator shows them in
 * text: asked for, unless main is the only queue and it is empty. JSON carries them only when there
 * are some.
 */
static cJSON *list_document(const struct ao_queues *qs, bool show_empty, cJSON **ret_empty)
{
        _cleanup_(json_deletep) cJSON *raw = ao_queues_dump(qs);
        size_t n = (size_t) cJSON_GetArraySize(raw), i = 0;
        _cleanup_free_ const cJSON **sorted = ao_xcalloc(n + 1, sizeof(*sorted));
        const cJSON *q;
        cJSON_ArrayForEach(q, raw)
        {
                sorted[i++] = q;
        }
        qsort(sorted, n, sizeof(*sorted), queue_order);

        cJSON *doc = cJSON_CreateObject();
        cJSON *active = cJSON_AddArrayToObject(doc, "active"), *empty = cJSON_CreateArray();
        double main_tasks = 0, other_tasks = 0, other_active = 0, other_empty = 0;
        for (i = 0; i < n; i++) {
                double length = cJSON_GetObjectItemCaseSensitive(sorted[i], "length")->valuedouble;
                bool is_main = strcmp(name_of(sorted[i]), AO_QUEUE_MAIN) == 0;
                cJSON_AddItemToArray(length > 0 ? active : empty, peer_queue(sorted[i], length > 0));
                if (is_main)
                        main_tasks = length;
                else if (length > 0)
                        other_active++, other_tasks += length;
                else
                        other_empty++;
        }
        bool only_main_empty = cJSON_GetArraySize(empty) > 0 && other_active + other_empty == 0;
        if (show_empty && !only_main_empty && cJSON_GetArraySize(empty) > 0)
                cJSON_AddItemToObject(doc, "empty", cJSON_Duplicate(empty, true));
        if (show_empty && !only_main_empty)
                *ret_empty = empty;
        else
                cJSON_Delete(empty);
        cJSON *summary = cJSON_AddObjectToObject(doc, "summary");
        cJSON_AddNumberToObject(summary, "mainQueueTasks", main_tasks);
        cJSON *others = cJSON_AddObjectToObject(summary, "otherQueues");
        cJSON_AddNumberToObject(others, "active", other_active);
        cJSON_AddNumberToObject(others, "empty", other_empty);
        cJSON_AddNumberToObject(others, "tasks", other_tasks);
        cJSON_AddNumberToObject(summary, "totalTasks", main_tasks + other_tasks);
        return doc;
}

cJSON *ao_queues_dump_list(const struct ao_queues *qs, bool show_empty)
{
        _cleanup_(json_deletep) cJSON *empty = NULL;
        return list_document(qs, show_empty, &empty);
}

/* "Queue 'main': length 2, status: '...'", a blank line, then " 1. <description>" per task. */
static void queue_text(struct ao_strbuf *sb, const cJSON *q)
{
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(q, "status");
        ao_strbuf_appendf(sb, "Queue '%s': length %.0f, status: '%s'\n\n", name_of(q),
                          cJSON_GetObjectItemCaseSensitive(q, "tasksCount")->valuedouble,
                          cJSON_IsString(status) ? status->valuestring : "");
        const cJSON *t;
        cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(q, "tasks"))
        {
                const cJSON *failures = cJSON_GetObjectItemCaseSensitive(t, "failures");
                ao_strbuf_appendf(sb, "%2.0f. %s", cJSON_GetObjectItemCaseSensitive(t, "index")->valuedouble,
                                  cJSON_GetObjectItemCaseSensitive(t, "description")->valuestring);
                /* The Go operator's task descriptions end so after a failure. */
                if (cJSON_IsNumber(failures) && failures->valuedouble > 0)
                        ao_strbuf_appendf(sb, ":failures %.0f", failures->valuedouble);
                ao_strbuf_append(sb, "\n");
        }
}

char *ao_queues_text_main(const struct ao_queues *qs)
{
        _cleanup_(json_deletep) cJSON *q = ao_queues_dump_main(qs);
        struct ao_strbuf sb = {0};
        queue_text(&sb, q);
        return ao_strbuf_steal(&sb);
}

/* "1 task", "3 tasks", or @zero when there are none and it is given. */
static char *count_of(double n, const char *zero, const char *one, const char *many)
{
        if (n == 0 && zero)
                return ao_xstrdup(zero);
        return ao_xasprintf("%.0f %s", n, n == 1 ? one : many);
}

static double number_at(const cJSON *o, const char *a, const char *b)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
        return cJSON_GetObjectItemCaseSensitive(b ? v : o, b ? b : a)->valuedouble;
}

char *ao_queues_text_list(const struct ao_queues *qs, bool show_empty)
{
        _cleanup_(json_deletep) cJSON *empty = NULL;
        _cleanup_(json_deletep) cJSON *doc = list_document(qs, show_empty, &empty);
        const cJSON *active = cJSON_GetObjectItemCaseSensitive(doc, "active");
        const cJSON *summary = cJSON_GetObjectItemCaseSensitive(doc, "summary");
        struct ao_strbuf sb = {0};
        const cJSON *q;
        cJSON_ArrayForEach(q, active)
        {
                if (q != active->child)
                        ao_strbuf_append(&sb, "\n");
                queue_text(&sb, q);
        }
        if (empty) {
                ao_strbuf_appendf(&sb, "\nEmpty queues (%d):\n", cJSON_GetArraySize(empty));
                cJSON_ArrayForEach(q, empty)
                {
                        ao_strbuf_appendf(&sb, "- %s\n", name_of(q));
                }
        }
        double others =
            number_at(summary, "otherQueues", "active") + number_at(summary, "otherQueues", "empty");
        if (sb.len > 0)
                ao_strbuf_append(&sb, "\n");
        ao_strbuf_append(&sb, "Summary:\n");
        _cleanup_free_ char *main_tasks =
            count_of(number_at(summary, "mainQueueTasks", NULL), "empty", "task", "tasks");
        ao_strbuf_appendf(&sb, "- '%s' queue: %s.\n", AO_QUEUE_MAIN, main_tasks);
        if (others > 0) {
                _cleanup_free_ char *queues = count_of(others, NULL, "other queue", "other queues");
                _cleanup_free_ char *tasks =
                    count_of(number_at(summary, "otherQueues", "tasks"), NULL, "task", "tasks");
                ao_strbuf_appendf(&sb, "- %s (%.0f active, %.0f empty): %s.\n", queues,
                                  number_at(summary, "otherQueues", "active"),
                                  number_at(summary, "otherQueues", "empty"), tasks);
        }
        double total = number_at(summary, "totalTasks", NULL);
        if (total == 0) {
                ao_strbuf_append(&sb, "- no tasks to handle.\n");
        } else {
                _cleanup_free_ char *tasks = count_of(total, NULL, "task", "tasks");
                ao_strbuf_appendf(&sb, "- total %s to handle.\n", tasks);
        }
        return ao_strbuf_steal(&sb);
}

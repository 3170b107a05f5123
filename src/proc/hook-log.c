/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hooks that log JSON: a line of output that is one JSON object becomes a
 * structured record instead of an opaque string. Its "level" and "msg" are
 * used as the record's own, "time" is dropped (ours is better), and every
 * other key is kept as hook_<key>, with proxyJsonLog=true so log pipelines
 * can tell these records from the operator's. This is the shape users'
 * dashboards and alerts already parse. Any other line is logged as text.
 */
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/strbuf.h"
#include "internal.h"

#define JSON_FIELDS_MAX 32

static const char *const stream_names[] = {[AO_PROC_STDOUT] = "stdout", [AO_PROC_STDERR] = "stderr"};

struct record {
        struct ao_log_field fields[JSON_FIELDS_MAX + 2];
        size_t n_fields;
        char *owned[JSON_FIELDS_MAX * 2]; /* hook_<key> names and printed values */
        size_t n_owned;
};

static char *keep(struct record *r, char *s)
{
        r->owned[r->n_owned++] = s;
        return s;
}

static void add_member(struct record *r, const cJSON *item)
{
        struct ao_strbuf name = {0};
        ao_strbuf_appendf(&name, "hook_%s", item->string);
        char *value = cJSON_IsString(item) ? strdup(item->valuestring) : cJSON_PrintUnformatted(item);
        if (!value) {
                ao_strbuf_done(&name);
                return;
        }
        r->fields[r->n_fields++] = (struct ao_log_field){keep(r, ao_strbuf_steal(&name)), keep(r, value)};
}

bool proc_log_json_line(const struct ao_log_context *ctx, enum ao_proc_stream stream, const char *line,
                        size_t len)
{
        if (len < 2 || line[0] != '{' || memchr(line, '\0', len))
                return false;
        cJSON *obj = cJSON_ParseWithLength(line, len);
        if (!cJSON_IsObject(obj)) {
                cJSON_Delete(obj);
                return false;
        }
        const cJSON *level = cJSON_GetObjectItemCaseSensitive(obj, "level");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(obj, "msg");
        enum ao_log_level lvl =
            cJSON_IsString(level) ? ao_log_level_from_string(level->valuestring) : AO_LOG_INFO;
        if (lvl < 0)
                lvl = AO_LOG_INFO;

        struct record r = {.n_fields = 0};
        r.fields[r.n_fields++] = (struct ao_log_field){"output", stream_names[stream]};
        r.fields[r.n_fields++] = (struct ao_log_field){"proxyJsonLog", "true"};
        for (const cJSON *item = obj->child; item && r.n_fields < JSON_FIELDS_MAX + 2; item = item->next) {
                if (item == level || item == msg || strcmp(item->string, "time") == 0)
                        continue;
                add_member(&r, item);
        }

        const struct ao_log_context *prev = ao_log_context_swap(ctx);
        ao_log_full(lvl, r.fields, r.n_fields, "%s", cJSON_IsString(msg) ? msg->valuestring : "");
        ao_log_context_swap(prev);
        for (size_t i = 0; i < r.n_owned; i++)
                free(r.owned[i]);
        cJSON_Delete(obj);
        return true;
}

void proc_log_line_now(const struct ao_log_context *ctx, enum ao_proc_stream stream, const char *line,
                       size_t len)
{
        if (proc_log_json_line(ctx, stream, line, len))
                return;
        /* Lines are logged as C strings: a NUL byte from a hook becomes U+FFFD instead of cutting the line. */
        struct ao_strbuf sb = {0};
        for (const char *p = line, *end = line + len; p < end;) {
                const char *nul = memchr(p, '\0', (size_t) (end - p));
                size_t n = nul ? (size_t) (nul - p) : (size_t) (end - p);
                ao_strbuf_append_n(&sb, p, n);
                p += n;
                if (nul) {
                        ao_strbuf_append(&sb, "\xEF\xBF\xBD");
                        p++;
                }
        }
        const struct ao_log_context *prev = ao_log_context_swap(ctx);
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"output", stream_names[stream]}), "%s", ao_strbuf_str(&sb));
        ao_log_context_swap(prev);
        ao_strbuf_done(&sb);
}

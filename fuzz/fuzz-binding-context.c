/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Combining queued binding contexts. Input: a YAML or JSON document; when it
 * is an array of two arrays, they are combined (the second appended to the
 * first), otherwise the document is combined with itself as a one-element
 * array. Besides crashes and leaks it aborts when an invariant breaks: the
 * result never grows beyond both inputs, no grouped context is directly
 * followed by another of its group, ungrouped contexts all survive in order,
 * and the written file is one line of JSON that loads back to the same tree (or, with a
 * snapshot source, to valid JSON).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/binding-context.h"
#include "ao/json-writer.h"
#include "ao/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_INPUT_MAX (64 * 1024)

static const char *group_of(const cJSON *ctx)
{
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(ctx, "groupName");
        return cJSON_IsString(g) && *g->valuestring ? g->valuestring : NULL;
}

static int count_ungrouped(const cJSON *a)
{
        int n = 0;
        for (const cJSON *c = a->child; c; c = c->next)
                n += !group_of(c);
        return n;
}

/* Every binding's items: one item naming it, so that what is substituted shows. */
static int one_item(void *userdata, const char *binding, struct ao_json_writer *out)
{
        (void) userdata;
        cJSON *item = cJSON_CreateObject();
        cJSON_AddStringToObject(item, "filterResult", binding);
        ao_json_write_raw(out, "[");
        ao_json_write(out, item);
        ao_json_write_raw(out, "]");
        cJSON_Delete(item);
        return ao_json_writer_error(out);
}

/* The file, one line of JSON; NULL when it is not. */
static cJSON *written(const cJSON *contexts, const struct ao_snapshot_source *src, char **ret_text)
{
        struct ao_json_writer w;
        ao_json_writer_init(&w, -1);
        if (ao_binding_contexts_write(contexts, src, &w) < 0)
                abort();
        char *text = ao_json_writer_steal(&w);
        ao_json_writer_done(&w);
        size_t len = strlen(text);
        if (len == 0 || text[len - 1] != '\n' || memchr(text, '\n', len - 1))
                abort();
        cJSON *back = NULL;
        if (ao_yaml_load(text, len, "written", &back, NULL) < 0)
                abort();
        *ret_text = text;
        return back;
}

static void check(const cJSON *result, int before_total, int before_ungrouped)
{
        if (cJSON_GetArraySize(result) > before_total || count_ungrouped(result) != before_ungrouped)
                abort();
        for (const cJSON *c = result->child; c && c->next; c = c->next) {
                const char *g = group_of(c), *h = group_of(c->next);
                if (g && h && strcmp(g, h) == 0)
                        abort();
        }
        char *text;
        cJSON *back = written(result, NULL, &text);
        char *again = ao_json_canonical(back), *orig = ao_json_canonical(result);
        if (strcmp(again, orig) != 0 || strncmp(text, orig, strlen(orig)) != 0)
                abort();
        free(again);
        free(orig);
        cJSON_Delete(back);
        free(text);
        static const struct ao_snapshot_source src = {.write = one_item};
        cJSON_Delete(written(result, &src, &text));
        free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > FUZZ_INPUT_MAX)
                return 0;
        cJSON *doc = NULL;
        if (ao_yaml_load((const char *) data, size, "input", &doc, NULL) < 0)
                return 0;
        cJSON *first, *more;
        if (cJSON_IsArray(doc) && cJSON_GetArraySize(doc) == 2 && cJSON_IsArray(cJSON_GetArrayItem(doc, 0)) &&
            cJSON_IsArray(cJSON_GetArrayItem(doc, 1))) {
                more = cJSON_DetachItemFromArray(doc, 1);
                first = cJSON_DetachItemFromArray(doc, 0);
                cJSON_Delete(doc);
        } else {
                first = cJSON_CreateArray();
                more = cJSON_CreateArray();
                cJSON_AddItemToArray(more, doc);
        }
        int total = cJSON_GetArraySize(first) + cJSON_GetArraySize(more);
        int ungrouped = count_ungrouped(first) + count_ungrouped(more);
        ao_binding_contexts_combine(first, more);
        check(first, total, ungrouped);
        cJSON_Delete(first);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz helm's post-renderer (src/helm/post-render.c): the first line of the
 * input is the label list (ADDON_OPERATOR_CRD_EXTRA_LABELS syntax), the rest
 * the rendered manifest. Besides crashes, leaks and undefined behaviour, it
 * aborts when the contract breaks: a failure leaves the out-parameters
 * untouched with a negative code and a single printable line; a success is
 * NUL-terminated at its length and is a fixed point (rendering it again gives
 * the same text); and whenever ao_yaml_load_stream() reads the input, it
 * reads the output too, as the input's documents with the labels set in each
 * object's metadata.labels (the items of a List), compared as canonical
 * JSON: the post-renderer changes nothing else a Kubernetes reader sees.
 * That comparison is left out for inputs with merge keys ("<<", !!merge:
 * the loader expands them, the post-renderer leaves them be) and for label
 * keys that another spelling in the text could stand for (not starting with a
 * letter, or a YAML 1.1 boolean or null word: an existing label "1.0" or
 * "True" reads as "1" or "true", which the post-renderer, matching keys as
 * written, would then add a second time).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "ao/helm-post-render.h"
#include "ao/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A chart's manifest is larger, but the paths it takes are the same; the cap keeps runs fast. */
#define FUZZ_INPUT_MAX  (64 * 1024)
#define FUZZ_LABELS_MAX 255

static void check_line(const char *s)
{
        if (!s || s[0] == '\0')
                abort();
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p < 0x20 || *p == 0x7F)
                        abort();
}

static bool is_list(const cJSON *doc)
{
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
        size_t n = cJSON_IsString(kind) ? strlen(kind->valuestring) : 0;
        return n >= 4 && strcmp(kind->valuestring + n - 4, "List") == 0 &&
               cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "items"));
}

/* @parent's object @key, made (replacing null or absence); NULL when it is something else. */
static cJSON *child_object(cJSON *parent, const char *key)
{
        cJSON *child = cJSON_GetObjectItemCaseSensitive(parent, key);
        if (cJSON_IsObject(child))
                return child;
        if (child && !cJSON_IsNull(child))
                return NULL;
        cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
        return cJSON_AddObjectToObject(parent, key);
}

/* What the labels make of one object; false when the post-renderer must have refused it. */
static bool label_object(cJSON *object, const struct ao_helm_labels *labels)
{
        cJSON *metadata = cJSON_IsObject(object) ? child_object(object, "metadata") : NULL;
        cJSON *l = metadata ? child_object(metadata, "labels") : NULL;
        if (!l)
                return false;
        for (size_t i = 0; i < labels->n; i++) {
                cJSON_DeleteItemFromObjectCaseSensitive(l, labels->items[i].key);
                cJSON_AddStringToObject(l, labels->items[i].key, labels->items[i].value);
        }
        return true;
}

/* The input's documents as the output must read. */
static bool expected(cJSON *docs, const struct ao_helm_labels *labels)
{
        cJSON *doc;
        cJSON_ArrayForEach(doc, docs)
        {
                if (!is_list(doc)) {
                        if (!label_object(doc, labels))
                                return false;
                        continue;
                }
                cJSON *item;
                cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(
                                             doc, "items")) if (!label_object(item, labels)) return false;
        }
        return true;
}

/* A key no other spelling in the text can stand for: a letter first, no YAML 1.1 boolean or null. */
static bool plain_word(const char *key)
{
        static const char *const words[] = {"y", "yes", "n", "no", "true", "false", "on", "off", "null"};
        if (!((key[0] >= 'a' && key[0] <= 'z') || (key[0] >= 'A' && key[0] <= 'Z')))
                return false;
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
                if (strcasecmp(key, words[i]) == 0)
                        return false;
        return true;
}

static void check_meaning(const char *in, size_t in_len, const char *out, size_t out_len,
                          const struct ao_helm_labels *labels)
{
        cJSON *before = NULL, *after = NULL;
        struct ao_error err = {0};
        for (size_t i = 0; i < labels->n; i++)
                if (!plain_word(labels->items[i].key))
                        return;
        if (memmem(in, in_len, "<<", 2) || memmem(in, in_len, "merge", 5))
                return;
        if (ao_yaml_load_stream(in, in_len, "in", &before, &err) < 0)
                return;
        if (ao_yaml_load_stream(out, out_len, "out", &after, &err) < 0)
                abort();
        if (expected(before, labels)) {
                char *want = ao_json_canonical(before), *got = ao_json_canonical(after);
                if (strcmp(want, got) != 0)
                        abort();
                free(want);
                free(got);
        }
        cJSON_Delete(before);
        cJSON_Delete(after);
}

static void fuzz_post_render(const char *text, size_t len, const struct ao_helm_labels *labels)
{
        char *out = (char *) "untouched";
        size_t out_len = 9;
        struct ao_error err = {0};
        int r = ao_helm_post_render(text, len, labels, &out, &out_len, &err);
        if (r < 0) {
                if (err.code != r || strcmp(out, "untouched") != 0 || out_len != 9)
                        abort();
                check_line(err.msg);
                return;
        }
        if (r != 0 || strlen(out) != out_len)
                abort();
        char *again = NULL;
        size_t again_len = 0;
        if (ao_helm_post_render(out, out_len, labels, &again, &again_len, &err) < 0 || again_len != out_len ||
            memcmp(again, out, out_len) != 0)
                abort();
        free(again);
        check_meaning(text, len, out, out_len, labels);
        free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > FUZZ_INPUT_MAX)
                return 0;
        const char *text = (const char *) data;
        const char *nl = memchr(text, '\n', size);
        size_t line = nl ? (size_t) (nl - text) : size;
        if (line > FUZZ_LABELS_MAX || memchr(text, '\0', line))
                return 0;
        char labels_text[FUZZ_LABELS_MAX + 1];
        memcpy(labels_text, text, line);
        labels_text[line] = '\0';

        struct ao_helm_labels labels = {0};
        struct ao_error err = {0};
        if (ao_helm_labels_parse(labels_text, &labels, &err) < 0) {
                if (err.code != -EINVAL || labels.n != 0)
                        abort();
                check_line(err.msg);
                return 0;
        }
        char *round = ao_helm_labels_format(&labels);
        struct ao_helm_labels again = {0};
        if (ao_helm_labels_parse(round, &again, &err) < 0 || again.n != labels.n)
                abort();
        for (size_t i = 0; i < labels.n; i++)
                if (strcmp(again.items[i].key, labels.items[i].key) != 0 ||
                    strcmp(again.items[i].value, labels.items[i].value) != 0)
                        abort();
        free(round);
        ao_helm_labels_clear(&again);

        size_t skip = nl ? line + 1 : size;
        fuzz_post_render(text + skip, size - skip, &labels);
        ao_helm_labels_clear(&labels);
        return 0;
}

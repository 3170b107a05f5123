/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz JSON patch parsing and applying. Input: byte 0 selects the apply
 * flags (bit 0: AO_JSONPATCH_IGNORE_MISSING); the rest is a YAML or JSON
 * document and a patch, split at the first NUL byte or, when there is none,
 * at the first "\n---\n" (no separator: all of it is the patch, applied to
 * null). Besides crashes, leaks and undefined behaviour, it aborts when an
 * invariant breaks: a failed apply must leave the document exactly as it was
 * (same canonical text), a successful one must leave it at most
 * AO_JSONPATCH_MAX_DEPTH deep (loaded documents are at most AO_YAML_MAX_DEPTH,
 * the same), a patch of tests only must change nothing, a single add or
 * replace must leave its value at its path, and error messages must be a
 * single printable line (they go into logs).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/jsonpatch.h"
#include "ao/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Patch files are small; the cap keeps runs fast while copies still reach their budget. */
#define FUZZ_INPUT_MAX (64 * 1024)

static void check_message(const char *msg)
{
        if (msg[0] == '\0')
                abort();
        for (const unsigned char *p = (const unsigned char *) msg; *p; p++)
                if (*p < 0x20 || *p == 0x7F)
                        abort();
}

/* Whether @json nests deeper than @max objects and arrays; iterative, like the code under test. */
static int deeper_than(const cJSON *json, size_t max)
{
        const cJSON *stack[AO_JSONPATCH_MAX_DEPTH + 1];
        size_t depth = 0;

        if (!cJSON_IsArray(json) && !cJSON_IsObject(json))
                return 0;
        stack[depth++] = json->child;
        while (depth > 0) {
                const cJSON *c = stack[depth - 1];
                if (!c) {
                        depth--;
                        continue;
                }
                stack[depth - 1] = c->next;
                if (cJSON_IsArray(c) || cJSON_IsObject(c)) {
                        if (depth + 1 > max)
                                return 1;
                        stack[depth++] = c->child;
                }
        }
        return 0;
}

static bool is_op(const cJSON *op, const char *name)
{
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(op, "op");
        return cJSON_IsString(m) && strcmp(m->valuestring, name) == 0;
}

static bool only_tests(const cJSON *ops)
{
        for (const cJSON *op = ops->child; op; op = op->next)
                if (!is_op(op, "test"))
                        return false;
        return true;
}

/* After a successful patch of one add or replace (not skipped, not appending), the value is at its path. */
static void check_single(cJSON *doc, const cJSON *ops, unsigned flags)
{
        const cJSON *op = ops->child;
        if (!op || op->next || !(is_op(op, "add") || (is_op(op, "replace") && flags == 0)))
                return;
        const char *path = cJSON_GetObjectItemCaseSensitive(op, "path")->valuestring;
        size_t len = strlen(path);
        if (len >= 2 && strcmp(path + len - 2, "/-") == 0)
                return;
        const cJSON *found = ao_json_pointer_get(doc, path);
        if (!found)
                abort();
        char *want = ao_json_canonical(cJSON_GetObjectItemCaseSensitive(op, "value"));
        char *got = ao_json_canonical(found);
        if (strcmp(want, got) != 0)
                abort();
        free(want);
        free(got);
}

/* Split @data into document and patch text. */
static void split(const char *data, size_t size, size_t *ret_doc_len, const char **ret_patch,
                  size_t *ret_patch_len)
{
        const char *sep = memchr(data, '\0', size);
        size_t sep_len = 1;

        if (!sep) {
                sep = memmem(data, size, "\n---\n", 5);
                sep_len = 5;
        }
        if (!sep) {
                *ret_doc_len = 0;
                *ret_patch = data;
                *ret_patch_len = size;
                return;
        }
        *ret_doc_len = (size_t) (sep - data);
        *ret_patch = sep + sep_len;
        *ret_patch_len = size - *ret_doc_len - sep_len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct ao_error err = {0};
        cJSON *doc = NULL, *ops = NULL;
        const char *patch;
        size_t doc_len, patch_len;

        if (size < 1 || size > FUZZ_INPUT_MAX)
                return 0;
        unsigned flags = data[0] & 1 ? AO_JSONPATCH_IGNORE_MISSING : 0;
        split((const char *) data + 1, size - 1, &doc_len, &patch, &patch_len);

        if (ao_jsonpatch_parse(patch, patch_len, "fuzz.json-patch", &ops, &err) < 0) {
                check_message(err.msg);
                return 0;
        }
        if (ao_yaml_load((const char *) data + 1, doc_len, "fuzz.yaml", &doc, &err) < 0) {
                cJSON_Delete(ops);
                return 0;
        }
        char *before = ao_json_canonical(doc);
        int r = ao_jsonpatch_apply(doc, ops, flags, &err);
        char *after = ao_json_canonical(doc);
        if (r < 0) {
                check_message(err.msg);
                if (strcmp(before, after) != 0)
                        abort();
        } else {
                if (deeper_than(doc, AO_JSONPATCH_MAX_DEPTH))
                        abort();
                if (only_tests(ops) && strcmp(before, after) != 0)
                        abort();
                check_single(doc, ops, flags);
        }
        free(after);
        free(before);
        cJSON_Delete(ops);
        cJSON_Delete(doc);
        return 0;
}

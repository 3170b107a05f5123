/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz schema loading, validation and defaults. The input is a schema
 * (YAML) and a value (YAML) separated by the first NUL; without a NUL the
 * whole input is the schema and validates an empty mapping. The schema is
 * loaded as config-values and also as a values schema extending it, so
 * x-extend and x-required-for-helm run too. Besides crashes, leaks and
 * undefined behaviour, it aborts when an error message or line is not a
 * single printable line, when the error list is malformed, or when a
 * result disagrees with its error list.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/schema.h"
#include "ao/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_INPUT_MAX (64 * 1024)

static void check_line(const char *s)
{
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p < 0x20 || *p == 0x7F)
                        abort();
}

static void check_kind(const struct ao_schema *s, enum ao_schema_kind kind, const cJSON *value)
{
        char *errors = NULL;
        int r = ao_schema_validate(s, kind, "fuzz", value, &errors), lines = 0;

        if ((r == 0) != (errors == NULL) || (r != 0 && r != -EINVAL))
                abort();
        for (const char *e = errors; e && *e; e += strlen(e) + 1) {
                check_line(e);
                lines++;
        }
        if (errors && (lines == 0 || lines > 100))
                abort();
        free(errors);
}

static void run(const struct ao_schema *s, const cJSON *value)
{
        for (int kind = 0; kind < _AO_SCHEMA_KIND_MAX; kind++) {
                cJSON *copy = cJSON_Duplicate(value, true);

                if (!copy)
                        return;
                check_kind(s, kind, copy);
                ao_schema_apply_defaults(s, kind, copy);
                check_kind(s, kind, copy);
                cJSON_Delete(copy);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const uint8_t *nul;
        size_t schema_len;
        cJSON *schema = NULL, *value = NULL, *extending = NULL;
        struct ao_schema *s = NULL;
        struct ao_error err = {0};

        if (size > FUZZ_INPUT_MAX)
                return 0;
        nul = memchr(data, '\0', size);
        schema_len = nul ? (size_t) (nul - data) : size;
        if (ao_yaml_load((const char *) data, schema_len, "schema.yaml", &schema, &err) < 0)
                return 0;
        if (nul) {
                if (ao_yaml_load((const char *) nul + 1, size - schema_len - 1, "value.yaml", &value, &err) <
                    0)
                        goto out;
        } else
                value = cJSON_CreateObject();

        if (ao_schema_from_json(schema, NULL, &s, &err) < 0)
                check_line(err.msg);
        else
                run(s, value);
        s = ao_schema_free(s);

        /* The same document as a values schema extending itself. */
        extending = cJSON_Duplicate(schema, true);
        if (cJSON_IsObject(extending) && !cJSON_GetObjectItem(extending, "x-extend"))
                (void) cJSON_AddItemToObject(extending, "x-extend",
                                             cJSON_Parse("{\"schema\":\"config-values.yaml\"}"));
        if (ao_schema_from_json(schema, extending, &s, &err) < 0)
                check_line(err.msg);
        else
                run(s, value);
        ao_schema_free(s);
out:
        cJSON_Delete(extending);
        cJSON_Delete(value);
        cJSON_Delete(schema);
        return 0;
}

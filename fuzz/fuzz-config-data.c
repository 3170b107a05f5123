/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz ConfigMap data parsing and the YAML emitter. The input is a YAML
 * document; when it is a mapping it goes through ao_config_data_parse() as
 * the local config file would. Besides crashes, leaks and undefined
 * behaviour, it aborts when an invariant breaks:
 *   - error messages are one printable line (they go into logs);
 *   - ao_yaml_emit() of every loaded document (the input, the parsed data)
 *     loads back to the same canonical JSON;
 *   - parsed data formatted as ConfigMap data (ao_config_data_format())
 *     parses back to the same data.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/config-data.h"
#include "ao/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_INPUT_MAX (64 * 1024)
/* Aliases can expand 64 KiB to megabytes; round-trip the documents of ordinary size only. */
#define FUZZ_RELOAD_MAX (1024 * 1024)

static void check_message(const char *msg)
{
        for (const unsigned char *p = (const unsigned char *) msg; *p; p++)
                if (*p < 0x20 || *p == 0x7F)
                        abort();
}

/* ao_yaml_load(ao_yaml_emit(@json)) has @json's canonical text; returns that text (malloc'd). */
static char *check_emit(const cJSON *json)
{
        struct ao_error err = {0};
        char *canonical = ao_json_canonical(json);
        if (strlen(canonical) > FUZZ_RELOAD_MAX)
                return canonical;
        char *text = ao_yaml_emit(json);
        cJSON *again = NULL;
        /* Indentation makes deep documents larger as YAML than as JSON: past the loader's cap is no bug. */
        if (strlen(text) <= AO_YAML_MAX_INPUT) {
                if (ao_yaml_load(text, strlen(text), "emitted.yaml", &again, &err) < 0)
                        abort();
                char *canonical2 = ao_json_canonical(again);
                if (strcmp(canonical, canonical2) != 0)
                        abort();
                free(canonical2);
        }
        cJSON_Delete(again);
        free(text);
        return canonical;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct ao_error err = {0};
        cJSON *raw = NULL, *parsed = NULL, *formatted = NULL, *again = NULL;

        if (size > FUZZ_INPUT_MAX)
                return 0;
        if (ao_yaml_load((const char *) data, size, "config.yaml", &raw, &err) < 0) {
                check_message(err.msg);
                return 0;
        }
        free(check_emit(raw));
        if (!cJSON_IsObject(raw))
                goto done;

        if (ao_config_data_parse(raw, "config.yaml", &parsed, &err) < 0) {
                check_message(err.msg);
                goto done;
        }
        char *want = check_emit(parsed);
        if (strlen(want) > FUZZ_RELOAD_MAX) {
                free(want);
                goto done;
        }
        formatted = ao_config_data_format(parsed);
        if (ao_config_data_parse(formatted, "formatted", &again, &err) < 0) {
                /* Sections past the loader's limits once written out are no bug. */
                if (err.code != -E2BIG && err.code != -EFBIG)
                        abort();
        } else {
                char *got = ao_json_canonical(again);
                if (strcmp(want, got) != 0)
                        abort();
                free(got);
        }
        free(want);
done:
        cJSON_Delete(again);
        cJSON_Delete(formatted);
        cJSON_Delete(parsed);
        cJSON_Delete(raw);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the YAML loader and canonical JSON. Besides crashes, leaks and
 * undefined behaviour, it checks two invariants and aborts when one breaks:
 * error messages are a single printable line (they go into logs), and the
 * canonical text of anything loaded loads back to the same canonical text
 * (values are stored and checksummed in that form).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Values files are small; the cap keeps runs fast, and aliases still reach the expansion limits. */
#define FUZZ_INPUT_MAX (64 * 1024)
/*
 * Aliases can expand 64 KiB to ~50 MiB of canonical text, whose reload takes
 * seconds under ASan and runs the same code as a small one: check smaller ones.
 */
#define FUZZ_RELOAD_MAX (1024 * 1024)

static void check_message(const char *msg)
{
        for (const unsigned char *p = (const unsigned char *) msg; *p; p++)
                if (*p < 0x20 || *p == 0x7F)
                        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct ao_error err = {0};
        cJSON *json = NULL, *again = NULL;
        char *text = NULL, *text2 = NULL;

        if (size > FUZZ_INPUT_MAX)
                return 0;
        if (ao_yaml_load((const char *) data, size, "fuzz.yaml", &json, &err) < 0) {
                check_message(err.msg);
                return 0;
        }
        text = ao_json_canonical(json);
        if (strlen(text) <= FUZZ_RELOAD_MAX) {
                if (ao_yaml_load(text, strlen(text), "canonical.json", &again, &err) < 0)
                        abort();
                text2 = ao_json_canonical(again);
                if (strcmp(text, text2) != 0)
                        abort();
        }
        free(text2);
        free(text);
        cJSON_Delete(again);
        cJSON_Delete(json);
        return 0;
}

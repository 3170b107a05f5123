/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Module directory names and values keys: whatever the input, parsing must
 * not crash, and every accepted name must round-trip (name -> key -> name)
 * and classify back to itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ao/values.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > 4096)
                return 0;
        char *s = malloc(size + 1);
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';

        struct ao_module_name n;
        if (ao_module_name_parse(s, 1, &n, NULL) == 0) {
                char *back = ao_name_to_kebab(n.values_key);
                if (strcmp(back, n.name) != 0)
                        abort();
                char *module = NULL;
                if (ao_values_key_classify(n.enabled_key, &module, NULL) != AO_VALUES_KEY_ENABLED ||
                    strcmp(module, n.name) != 0)
                        abort();
                free(module);
                free(back);
                ao_module_name_done(&n);
        }
        char *m = NULL;
        (void) ao_values_key_classify(s, &m, NULL);
        free(m);
        free(ao_name_to_camel(s));
        free(s);
        return 0;
}

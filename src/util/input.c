/* SPDX-License-Identifier: Apache-2.0 */
/* The prologue of the parsers of untrusted text (see ao/input.h). */
#include "ao/input.h"

#include <string.h>

#include "ao/alloc.h"
#include "ao/error.h"

#define UTF8_BOM "\xEF\xBB\xBF"

size_t ao_input_bom(const char *text, size_t len)
{
        return len >= 3 && memcmp(text, UTF8_BOM, 3) == 0 ? 3 : 0;
}

int ao_input_check_size(size_t len, size_t max, const char *name, const char *what, struct ao_error *reterr)
{
        if (len <= max)
                return 0;
        if (!what)
                return ao_error_set(reterr, -EFBIG, "%s: larger than %zu bytes", name, max);
        return ao_error_set(reterr, -EFBIG, "%s: %s is larger than %zu bytes", name, what, max);
}

int ao_input_copy(const char *text, size_t len, size_t max, const char *name, const char *what,
                  char **ret_copy, size_t *ret_start, struct ao_error *reterr)
{
        int r = ao_input_check_size(len, max, name, what, reterr);
        if (r < 0)
                return r;
        char *copy = ao_xmalloc(len + 1);
        if (len > 0)
                memcpy(copy, text, len);
        copy[len] = '\0';
        *ret_start = ao_input_bom(copy, len);
        *ret_copy = copy;
        return 0;
}

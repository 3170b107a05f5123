/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int ao_error_set(struct ao_error *reterr, int code, const char *fmt, ...)
{
        if (code >= 0)
                code = -EINVAL;
        if (!reterr)
                return code;

        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(reterr->msg, sizeof(reterr->msg), fmt, ap);
        va_end(ap);
        reterr->code = code;
        return code;
}

int ao_error_prefix(struct ao_error *reterr, const char *fmt, ...)
{
        if (!reterr)
                return -EINVAL;
        if (reterr->code >= 0)
                reterr->code = -EINVAL;

        char prefix[AO_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);

        /* "prefix: old message", cut to fit; built by hand because the parts may overlap the limit. */
        char joined[AO_ERROR_MSG_MAX];
        size_t len = 0;
        const char *parts[] = {prefix, ": ", reterr->msg};
        for (size_t i = 0; i < AO_ARRAY_SIZE(parts); i++) {
                size_t n = AO_MIN(strlen(parts[i]), sizeof(joined) - 1 - len);
                memcpy(joined + len, parts[i], n);
                len += n;
        }
        joined[len] = '\0';
        memcpy(reterr->msg, joined, len + 1);
        return reterr->code;
}

void ao_error_clear(struct ao_error *reterr)
{
        if (!reterr)
                return;
        reterr->code = 0;
        reterr->msg[0] = '\0';
}

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

        char joined[AO_ERROR_MSG_MAX];
        (void) snprintf(joined, sizeof(joined), "%s: %s", prefix, reterr->msg);
        memcpy(reterr->msg, joined, sizeof(joined));
        return reterr->code;
}

void ao_error_clear(struct ao_error *reterr)
{
        if (!reterr)
                return;
        reterr->code = 0;
        reterr->msg[0] = '\0';
}

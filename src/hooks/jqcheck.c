/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether a jqFilter compiles, so that a bad filter is reported with the
 * hook's configuration instead of on the first event. The program is
 * compiled exactly as the filter cache compiles it (jq-compile.c) and thrown
 * away.
 */
#include <errno.h>

#include <jq.h>

#include "internal.h"

int ao_hook_config_jq_check(const char *filter, char reason[static AO_HOOK_CONFIG_JQ_REASON_MAX])
{
        jq_state *jq = hooks_jq_compile(filter, reason, AO_HOOK_CONFIG_JQ_REASON_MAX);
        if (!jq)
                return -EINVAL;
        jq_teardown(&jq);
        return 0;
}

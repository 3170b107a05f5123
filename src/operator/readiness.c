/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What /readyz and /status/converge say about convergence. Ready means the first converge is
 * done and, with ADDON_OPERATOR_ISOLATE_FAILING_MODULES, no module's isolated run is still
 * failing: isolation keeps one broken module from stalling the others, and readiness is where
 * the broken one still shows, by name.
 */
#include <stdlib.h>

#include "ao/alloc.h"
#include "ao/http.h"
#include "ao/log.h"
#include "ao/strbuf.h"
#include "internal.h"

char *readiness_held_back(const struct operator_state *op)
{
        struct ao_strbuf sb = {0};
        for (size_t i = 0; i < op->modules.n; i++)
                if (op->modules.items[i].isolated)
                        ao_strbuf_appendf(&sb, "%s'%s'", sb.len ? ", " : "", op->modules.items[i].name);
        return sb.len ? ao_strbuf_steal(&sb) : NULL;
}

void readiness_update(struct operator_state *op)
{
        if (!op->http) /* the unit tests of the engine have no HTTP server */
                return;
        _cleanup_free_ char *held = readiness_held_back(op);
        bool ready = op->first_converge_done && !held;
        _cleanup_free_ char *reason =
            held ? ao_xasprintf("Convergence held back by module(s) %s: their runs keep failing\n", held)
                 : NULL;
        ao_http_set_not_ready_reason(op->http, reason);
        ao_http_set_ready(op->http, ready);
}

bool readiness_isolate(struct operator_state *op, struct module *mod, const char *activation)
{
        if (!op->settings->isolate_failing_modules)
                return false;
        if (!mod->isolated)
                ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"module", mod->name}),
                            "module '%s': its run failed; it retries in queue 'isolated-%s' while the "
                            "others go on",
                            mod->name, mod->name);
        mod->isolated = true;
        tasks_isolate_module_run(op, mod, activation);
        readiness_update(op);
        return true;
}

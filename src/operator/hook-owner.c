/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hooks of one owner: the global hooks or one module's. Everything that runs hooks (tasks,
 * schedules, monitors, metrics) finds a hook's throttle and its owner's name here.
 */
#include <stdlib.h>

#include "ao/alloc.h"
#include "ao/hooks.h"
#include "ao/throttle.h"
#include "internal.h"

void hook_owner_set_hooks(struct hook_owner *o, struct ao_hook *hooks, size_t n)
{
        o->hooks = hooks;
        o->n_hooks = n;
        o->loaded = true;
        o->throttles = ao_xcalloc(n + 1, sizeof(*o->throttles));
        for (size_t i = 0; i < n; i++)
                o->throttles[i] = (struct ao_throttle){
                    .period_usec = hooks[i].config.execution_min_period_usec,
                    .burst = hooks[i].config.execution_burst ? hooks[i].config.execution_burst : 1};
}

void hook_owner_done(struct hook_owner *o)
{
        ao_hooks_free(o->hooks, o->n_hooks);
        free(o->throttles);
        *o = (struct hook_owner){.module = o->module, .values = o->values};
}

const char *hook_owner_module_name(const struct hook_owner *o)
{
        return o->module ? o->module->name : NULL;
}

char *hook_identity(const struct hook_owner *o, const struct ao_hook *hook)
{
        return o->module ? ao_xasprintf("%s/%s", o->module->name, hook->name) : ao_xstrdup(hook->name);
}

bool hook_owner_has_kube_bindings(const struct hook_owner *o)
{
        for (size_t i = 0; i < o->n_hooks; i++)
                if (o->hooks[i].config.n_kubernetes > 0)
                        return true;
        return false;
}

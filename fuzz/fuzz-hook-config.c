/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the hook configuration parser. Input: a hook's --config output, YAML
 * or JSON, parsed as a global hook; as a module hook when it starts with the
 * line "# module" (a YAML comment, so seeds stay valid configurations).
 * Besides crashes, leaks and undefined behaviour, it aborts when an
 * invariant breaks:
 *   - a failure leaves the result untouched and explains itself in one
 *     printable line that starts with the hook name;
 *   - a parsed configuration keeps its limits, every binding has a name, a
 *     kind and a queue, and waitForSynchronization is only off on a queue of
 *     the binding's own;
 *   - ao_hook_config_to_json() parses again (without "kind" and "ignored",
 *     as v1) to the same JSON; jqFilter is left out of that second parse,
 *     since libjq 1.6 takes some 15 ms for every compile;
 *   - the selector strings and binding lookups work for every binding.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/hook-config.h"
#include "ao/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HOOK "fuzz.sh"

/* Hook configurations are small; a cap keeps runs fast. */
#define FUZZ_INPUT_MAX (64 * 1024)
/* Each distinct jqFilter costs a libjq compile: inputs with many are skipped. */
#define FUZZ_JQ_FILTERS_MAX 8

static void check_message(const struct ao_error *err)
{
        if (err->code >= 0 || strncmp(err->msg, HOOK ": ", strlen(HOOK ": ")) != 0 ||
            err->msg[strlen(HOOK ": ")] == '\0')
                abort();
        for (const unsigned char *p = (const unsigned char *) err->msg; *p; p++)
                if (*p < 0x20 || *p == 0x7F)
                        abort();
}

static size_t count(const uint8_t *data, size_t size, const char *needle)
{
        size_t n = 0, len = strlen(needle);
        for (const uint8_t *p = data, *end = data + size; p < end;) {
                const uint8_t *hit = memmem(p, (size_t) (end - p), needle, len);
                if (!hit)
                        break;
                n++;
                p = hit + len;
        }
        return n;
}

static void check_label_selector(const struct ao_label_selector *sel)
{
        char *s = ao_label_selector_format(sel);
        if (!s || (!sel->present && s[0] != '\0'))
                abort();
        for (size_t i = 0; i < sel->n_requirements; i++) {
                const struct ao_label_requirement *req = &sel->requirements[i];
                bool needs_values = req->op == AO_SELECTOR_IN || req->op == AO_SELECTOR_NOT_IN;
                if (!req->key || req->op < 0 || req->op >= _AO_SELECTOR_OP_MAX ||
                    needs_values != (req->values.n > 0))
                        abort();
        }
        free(s);
}

static void check_config(const struct ao_hook_config *cfg, enum ao_hook_kind kind)
{
        if (cfg->kind != kind || (cfg->version != 0 && cfg->version != 1) || cfg->execution_burst < 1 ||
            cfg->n_schedules + cfg->n_kubernetes > AO_HOOK_CONFIG_MAX_BINDINGS)
                abort();
        for (int t = 0; t < _AO_BINDING_TYPE_MAX; t++)
                if (ao_binding_type_from_string(ao_binding_type_to_string(t)) != t)
                        abort();
        if (ao_hook_config_has(cfg, AO_BINDING_KUBERNETES) != (cfg->n_kubernetes > 0) ||
            ao_hook_config_has(cfg, AO_BINDING_SCHEDULE) != (cfg->n_schedules > 0))
                abort();
        /* The kind rules: no binding of the other kind survives parsing. */
        bool global_only = cfg->has_order[AO_BINDING_BEFORE_ALL] || cfg->has_order[AO_BINDING_AFTER_ALL];
        bool module_only = false;
        for (int t = AO_BINDING_BEFORE_HELM; t <= AO_BINDING_AFTER_DELETE_HELM; t++)
                module_only |= cfg->has_order[t];
        if ((kind == AO_HOOK_GLOBAL && module_only) || (kind == AO_HOOK_MODULE && global_only))
                abort();

        for (size_t i = 0; i < cfg->n_schedules; i++) {
                const struct ao_schedule_binding *s = &cfg->schedules[i];
                if (!s->name || !s->crontab || !s->queue || s->queue[0] == '\0')
                        abort();
        }
        for (size_t i = 0; i < cfg->n_kubernetes; i++) {
                const struct ao_kubernetes_binding *k = &cfg->kubernetes[i];
                if (!k->name || !k->kind || k->kind[0] == '\0' || !k->queue ||
                    (k->event_mask & ~AO_WATCH_ALL))
                        abort();
                if (!k->wait_for_synchronization && !k->queue_given)
                        abort();
                const struct ao_kubernetes_binding *found = ao_hook_config_find_kubernetes(cfg, k->name);
                if (!found || strcmp(found->name, k->name) != 0 || found > k)
                        abort();
                check_label_selector(&k->label_selector);
                check_label_selector(&k->namespace_labels);
                char *f = ao_field_selector_format(k->field_selector, k->n_field_selector);
                if (!f || (k->n_field_selector == 0) != (f[0] == '\0'))
                        abort();
                free(f);
        }
}

static void strip_jq_filters(cJSON *json)
{
        cJSON *kube = cJSON_GetObjectItemCaseSensitive(json, "kubernetes");
        for (cJSON *k = kube ? kube->child : NULL; k; k = k->next)
                cJSON_DeleteItemFromObjectCaseSensitive(k, "jqFilter");
}

static void check_round_trip(const struct ao_hook_config *cfg)
{
        struct ao_hook_config again;
        struct ao_error err = {0};
        cJSON *first = ao_hook_config_to_json(cfg);

        if (!first)
                abort();
        cJSON_DeleteItemFromObjectCaseSensitive(first, "kind");
        cJSON_DeleteItemFromObjectCaseSensitive(first, "ignored");
        cJSON_ReplaceItemInObjectCaseSensitive(first, "configVersion", cJSON_CreateString("v1"));
        strip_jq_filters(first);
        if (ao_hook_config_from_json(first, HOOK, cfg->kind, &again, &err) < 0)
                abort();
        cJSON *second = ao_hook_config_to_json(&again);
        if (!second)
                abort();
        cJSON_DeleteItemFromObjectCaseSensitive(second, "kind");
        char *a = ao_json_canonical(first), *b = ao_json_canonical(second);
        if (strcmp(a, b) != 0)
                abort();
        free(a);
        free(b);
        cJSON_Delete(first);
        cJSON_Delete(second);
        ao_hook_config_done(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct ao_hook_config cfg = {.version = -1};
        struct ao_error err = {0};
        enum ao_hook_kind kind = AO_HOOK_GLOBAL;

        if (size > FUZZ_INPUT_MAX || count(data, size, "jqFilter") > FUZZ_JQ_FILTERS_MAX)
                return 0;
        if (size >= strlen("# module\n") && memcmp(data, "# module\n", strlen("# module\n")) == 0)
                kind = AO_HOOK_MODULE;

        if (ao_hook_config_parse((const char *) data, size, HOOK, kind, &cfg, &err) < 0) {
                check_message(&err);
                if (cfg.version != -1)
                        abort();
                return 0;
        }
        check_config(&cfg, kind);
        check_round_trip(&cfg);
        ao_hook_config_done(&cfg);
        return 0;
}

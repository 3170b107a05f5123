/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Values against schemas, as the operator composes them at start-up with
 * no hook patches yet: config values (the config-values schema's defaults
 * under the config section) against openapi/config-values.yaml, and the
 * merged values (values.yaml files, config values, defaults) against
 * openapi/values.yaml.
 *
 * Two things lint cannot know are left out: without a config file, the
 * config section is empty, so what fails there only warns (the ConfigMap
 * may well supply it); and `required` in the values schema is not checked,
 * since hooks commonly fill those keys in through their patches.
 */
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/schema.h"
#include "ao/values.h"
#include "internal.h"

/* One values section and where to report about it. */
struct section {
        struct ao_values_sources sources;
        const char *report_path; /* the module directory, or GLOBAL_HOOKS_DIR */
        const char *config_path; /* the config file, or NULL */
        bool config_broken;      /* it could not be read (already reported) */
};

static bool ends_with(const char *s, const char *suffix)
{
        size_t n = strlen(s), m = strlen(suffix);
        return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Each line of a violation list as its own problem; required keys of the values schema skipped. */
static void report_violations(struct lint_report *r, enum lint_severity severity, const char *path,
                              const char *what, const char *errors, bool skip_required)
{
        for (const char *line = errors; *line; line += strlen(line) + 1)
                if (!(skip_required && ends_with(line, " (required)")))
                        lint_problem(r, severity, path, "%s: %s", what, line);
}

static void check_config_values(const struct section *s, struct lint_report *r)
{
        cJSON *config = NULL;
        struct ao_error err = {0};
        if (ao_values_compose_config(&s->sources, &config, &err) < 0) {
                lint_error(r, s->report_path, "config values: %s", err.msg);
                return;
        }
        char *errors = NULL;
        if (ao_schema_validate(s->sources.schema, AO_SCHEMA_CONFIG, s->sources.key, config, &errors) < 0 &&
            errors) {
                if (s->config_path)
                        report_violations(r, LINT_ERROR, s->config_path,
                                          "config values do not match openapi/config-values.yaml", errors,
                                          false);
                else
                        report_violations(r, LINT_WARNING, s->report_path,
                                          "with no config section, config values do not match "
                                          "openapi/config-values.yaml",
                                          errors, false);
        }
        free(errors);
        cJSON_Delete(config);
}

static void check_values(const struct section *s, struct lint_report *r)
{
        cJSON *values = NULL;
        struct ao_error err = {0};
        if (ao_values_compose(&s->sources, &values, &err) < 0) {
                lint_error(r, s->report_path, "values: %s", err.msg);
                return;
        }
        char *errors = NULL;
        if (ao_schema_validate(s->sources.schema, AO_SCHEMA_VALUES, s->sources.key, values, &errors) < 0 &&
            errors)
                report_violations(r, LINT_ERROR, s->report_path, "values do not match openapi/values.yaml",
                                  errors, true);
        free(errors);
        cJSON_Delete(values);
}

static void check_section(const struct section *s, struct lint_report *r)
{
        if (!s->sources.schema)
                return;
        if (ao_schema_has(s->sources.schema, AO_SCHEMA_CONFIG) && !s->config_broken)
                check_config_values(s, r);
        if (ao_schema_has(s->sources.schema, AO_SCHEMA_VALUES))
                check_values(s, r);
}

/* A section's static layers: its key in each common values.yaml, then the module's own section. */
struct layers {
        const cJSON **items;
        size_t n;
};

static struct layers collect_layers(const struct lint_tree *t, const char *key, const cJSON *own)
{
        struct layers l = {.items = ao_xcalloc(t->n_common + 1, sizeof(cJSON *))};
        for (size_t i = 0; i < t->n_common; i++) {
                const cJSON *s = cJSON_GetObjectItemCaseSensitive(t->common[i], key);
                if (cJSON_IsObject(s))
                        l.items[l.n++] = s;
        }
        if (own)
                l.items[l.n++] = own;
        return l;
}

static void check_one(const struct lint_tree *t, const char *key, const cJSON *own,
                      const struct ao_schema *schema, const char *report_path, struct lint_report *r)
{
        struct layers l = collect_layers(t, key, own);
        const cJSON *config = t->config ? cJSON_GetObjectItemCaseSensitive(t->config, key) : NULL;
        struct section s = {
            .sources = {.key = key,
                        .static_layers = l.items,
                        .n_static_layers = l.n,
                        .config = cJSON_IsObject(config) ? config : NULL,
                        .schema = schema},
            .report_path = report_path,
            .config_path = t->config_path,
            .config_broken = t->config_broken,
        };
        check_section(&s, r);
        free(l.items);
}

void lint_values(const struct lint_tree *t, const char *global_hooks_dir, struct lint_report *r)
{
        check_one(t, "global", NULL, t->global_schema, global_hooks_dir, r);
        for (size_t i = 0; i < t->n_modules; i++) {
                const struct lint_module *m = &t->modules[i];
                check_one(t, m->values_key, m->own_section, m->schema, m->dir, r);
        }
}

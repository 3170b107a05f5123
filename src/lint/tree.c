/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tree as a whole: each MODULES_DIR (its values.yaml and its module
 * directories), names used twice, the global schema, and the local config
 * file when one is set.
 */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/config-data.h"
#include "ao/schema.h"
#include "ao/settings.h"
#include "ao/values.h"
#include "ao/yaml.h"
#include "internal.h"

static bool is_dir(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void add_common_values(struct lint_tree *t, const char *dir, struct lint_report *r)
{
        char *path = ao_xasprintf("%s/values.yaml", dir);
        cJSON *doc = NULL;
        struct ao_error err = {0};
        if (ao_values_file_load(path, &doc, &err) < 0) {
                lint_error_message(r, path, err.msg);
                doc = cJSON_CreateObject();
        }
        t->common = ao_xreallocarray(t->common, t->n_common + 1, sizeof(*t->common));
        t->common_paths = ao_xreallocarray(t->common_paths, t->n_common + 1, sizeof(*t->common_paths));
        t->common[t->n_common] = doc;
        t->common_paths[t->n_common++] = path;
}

static void add_module(struct lint_tree *t, const char *dir, const char *entry, const struct ao_settings *s,
                       struct lint_report *r)
{
        struct lint_module m;
        if (!lint_module_load(dir, entry, s, r, &m))
                return;
        t->modules = ao_xreallocarray(t->modules, t->n_modules + 1, sizeof(*t->modules));
        t->modules[t->n_modules++] = m;
}

static void scan_modules_dir(struct lint_tree *t, const char *dir, const struct ao_settings *s,
                             struct lint_report *r)
{
        DIR *d = opendir(dir);
        if (!d) {
                lint_error(r, dir, "cannot read the modules directory: %s", strerror(errno));
                return;
        }
        add_common_values(t, dir, r);
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                _cleanup_free_ char *path = ao_xasprintf("%s/%s", dir, de->d_name);
                if (is_dir(path))
                        add_module(t, dir, de->d_name, s, r);
                else if (strcmp(de->d_name, "values.yaml") != 0)
                        lint_warning(r, path, "not a module directory, ignored");
        }
        closedir(d);
}

static int compare_modules(const void *a, const void *b)
{
        const struct lint_module *x = a, *y = b;
        if (x->order != y->order)
                return x->order < y->order ? -1 : 1;
        return strcmp(x->name, y->name);
}

/* The operator refuses to start with two modules of one name. */
static void check_unique_names(const struct lint_tree *t, struct lint_report *r)
{
        for (size_t i = 0; i < t->n_modules; i++)
                for (size_t j = 0; j < i; j++)
                        if (strcmp(t->modules[i].name, t->modules[j].name) == 0) {
                                lint_error(r, t->modules[i].dir, "a second module named '%s' (first: '%s')",
                                           t->modules[i].name, t->modules[j].dir);
                                break;
                        }
}

static const struct lint_module *find_module(const struct lint_tree *t, const char *name)
{
        for (size_t i = 0; i < t->n_modules; i++)
                if (strcmp(t->modules[i].name, name) == 0)
                        return &t->modules[i];
        return NULL;
}

/* One top-level key of a common values.yaml: what the operator makes of it. */
static void check_common_key(const struct lint_tree *t, const char *path, const cJSON *item,
                             struct lint_report *r)
{
        _cleanup_free_ char *module = NULL;
        struct ao_error err = {0};
        enum ao_values_key_kind kind = ao_values_key_classify(item->string, &module, &err);
        if (kind < 0) {
                lint_warning(r, path, "%s, ignored", err.msg);
                return;
        }
        if (kind == AO_VALUES_KEY_ENABLED && !cJSON_IsBool(item))
                lint_error(r, path, "'%s' must be true or false", item->string);
        if ((kind == AO_VALUES_KEY_GLOBAL || kind == AO_VALUES_KEY_MODULE) && !cJSON_IsObject(item) &&
            !cJSON_IsNull(item))
                lint_error(r, path, "'%s' must be a mapping", item->string);
        if (module && !find_module(t, module))
                lint_warning(r, path, "key '%s' is unused: there is no module '%s'", item->string, module);
}

static void check_common_values(const struct lint_tree *t, struct lint_report *r)
{
        for (size_t i = 0; i < t->n_common; i++) {
                const cJSON *item;
                cJSON_ArrayForEach(item, t->common[i]) check_common_key(t, t->common_paths[i], item, r);
        }
}

static void load_global_schema(struct lint_tree *t, const struct ao_settings *s, struct lint_report *r)
{
        _cleanup_free_ char *dir = ao_xasprintf("%s/openapi", s->global_hooks_dir);
        struct ao_error err = {0};
        t->global_schema_ok = ao_schema_load_dir(dir, &t->global_schema, &err) >= 0;
        if (!t->global_schema_ok)
                lint_error_message(r, dir, err.msg);
}

/* The local config file, read as the operator reads it (a missing file is empty config). */
static void load_config_file(struct lint_tree *t, const char *path, struct lint_report *r)
{
        cJSON *raw = NULL;
        struct ao_error err = {0};
        int k = ao_yaml_load_file(path, &raw, &err);
        if (k == -ENOENT) {
                lint_warning(r, path,
                             "the config file does not exist: the operator starts with empty config");
                return;
        }
        t->config_broken = true;
        if (k < 0) {
                lint_error_message(r, path, err.msg);
                return;
        }
        if (!cJSON_IsObject(raw) && !cJSON_IsNull(raw))
                lint_error(r, path, "the top level must be a mapping of keys");
        else if (cJSON_IsObject(raw) && ao_config_data_parse(raw, path, &t->config, &err) < 0)
                lint_error_message(r, path, err.msg);
        else
                t->config_broken = false;
        if (!t->config_broken)
                t->config_path = ao_xstrdup(path);
        cJSON_Delete(raw);
}

void lint_tree_load(const struct ao_settings *s, struct lint_report *r, struct lint_tree *ret)
{
        struct lint_tree t = {0};
        for (char **dir = s->modules_dirs; dir && *dir; dir++)
                scan_modules_dir(&t, *dir, s, r);
        if (t.n_modules > 1)
                qsort(t.modules, t.n_modules, sizeof(*t.modules), compare_modules);
        check_unique_names(&t, r);
        check_common_values(&t, r);
        load_global_schema(&t, s, r);
        if (s->config_file && s->config_file[0])
                load_config_file(&t, s->config_file, r);
        *ret = t;
}

void lint_tree_done(struct lint_tree *t)
{
        for (size_t i = 0; i < t->n_modules; i++)
                lint_module_done(&t->modules[i]);
        free(t->modules);
        for (size_t i = 0; i < t->n_common; i++) {
                cJSON_Delete(t->common[i]);
                free(t->common_paths[i]);
        }
        free(t->common);
        free(t->common_paths);
        ao_schema_free(t->global_schema);
        cJSON_Delete(t->config);
        free(t->config_path);
        *t = (struct lint_tree){0};
}

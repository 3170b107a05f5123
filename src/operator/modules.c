/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Module directories: every directory (or link to one) under each
 * MODULES_DIR entry is a module; a values.yaml beside them holds the common
 * values. Modules run in (order, name) order; two modules with one name are
 * an error naming both paths.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/log.h"
#include "ao/schema.h"
#include "ao/values-store.h"
#include "ao/values.h"
#include "ao/yaml.h"
#include "internal.h"

/* What a module directory holds for the values store, until modules_load() hands it over. */
struct module_files {
        cJSON *own_values;        /* the <key> section of the module's values.yaml, or NULL */
        int own_enabled;          /* <key>Enabled from the module's values.yaml: -1 unset, 0, 1 */
        struct ao_schema *schema; /* <dir>/openapi */
};

static void module_files_free(struct module_files *f)
{
        if (!f)
                return;
        cJSON_Delete(f->own_values);
        ao_schema_free(f->schema);
        free(f);
}

static bool is_dir(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void module_done(struct module *mod)
{
        free(mod->name);
        free(mod->values_key);
        free(mod->enabled_key);
        free(mod->dir);
        free(mod->hooks_root);
        module_files_free(mod->files);
        free(mod->enabled_script);
        free(mod->chart_version);
        hook_owner_done(&mod->owner);
}

/*
 * The module's own values.yaml: only its section and its enabled flag count. A missing file is an
 * empty one, unless STRICT_CHECK_VALUES_MODE_ENABLED asks for one in every module.
 */
static int load_own_values(struct module *mod, struct module_files *f, bool strict, struct ao_error *reterr)
{
        _cleanup_free_ char *path = ao_xasprintf("%s/values.yaml", mod->dir);
        if (strict && access(path, F_OK) < 0 && errno == ENOENT)
                return ao_error_set(reterr, -ENOENT,
                                    "module '%s': %s is missing (STRICT_CHECK_VALUES_MODE_ENABLED is on)",
                                    mod->name, path);
        cJSON *doc = NULL;
        int r = ao_values_file_load(path, &doc, reterr);
        if (r < 0)
                return r;
        f->own_values = cJSON_DetachItemFromObjectCaseSensitive(doc, mod->values_key);
        if (f->own_values && !cJSON_IsObject(f->own_values) && !cJSON_IsNull(f->own_values)) {
                cJSON_Delete(doc);
                return ao_error_set(reterr, -EINVAL, "%s: '%s' must be a mapping", path, mod->values_key);
        }
        const cJSON *flag = cJSON_GetObjectItemCaseSensitive(doc, mod->enabled_key);
        f->own_enabled = -1;
        if (flag && !cJSON_IsBool(flag)) {
                cJSON_Delete(doc);
                return ao_error_set(reterr, -EINVAL, "%s: '%s' must be true or false", path,
                                    mod->enabled_key);
        }
        if (flag)
                f->own_enabled = cJSON_IsTrue(flag);
        cJSON_Delete(doc);
        return 0;
}

/*
 * The version the module's own Chart.yaml declares (mm_module_enabled), "" without one. A chart
 * that cannot be read is the release step's error, and lint's: here it only warns.
 */
static char *read_chart_version(const struct module *mod)
{
        _cleanup_free_ char *path = ao_xasprintf("%s/Chart.yaml", mod->dir);
        if (access(path, F_OK) < 0)
                return ao_xstrdup("");
        cJSON *doc = NULL;
        struct ao_error err = {0};
        if (ao_yaml_load_file(path, &doc, &err) < 0) {
                ao_log_with(AO_LOG_WARN, AO_LOG_FIELDS({"module", mod->name}), "module '%s': %s", mod->name,
                            err.msg);
                return ao_xstrdup("");
        }
        const cJSON *version = cJSON_GetObjectItemCaseSensitive(doc, "version");
        char *ret = ao_xstrdup(cJSON_IsString(version) ? version->valuestring : "");
        cJSON_Delete(doc);
        return ret;
}

static int module_init(struct module *mod, const char *parent, const char *entry,
                       const struct ao_settings *settings, struct ao_error *reterr)
{
        struct ao_module_name n;
        *mod = (struct module){0};
        int r = ao_module_name_parse(entry, (uint32_t) settings->unnumbered_modules_order, &n, reterr);
        if (r < 0)
                return ao_error_prefix(reterr, "%s", parent);
        *mod = (struct module){
            .name = n.name,
            .values_key = n.values_key,
            .enabled_key = n.enabled_key,
            .order = n.order,
            .dir = ao_xasprintf("%s/%s", parent, entry),
            .files = ao_xcalloc(1, sizeof(struct module_files)),
        };
        mod->hooks_root = ao_xasprintf("%s/hooks", mod->dir);
        _cleanup_free_ char *script = ao_xasprintf("%s/enabled", mod->dir);
        if (access(script, F_OK) == 0)
                mod->enabled_script = TAKE_PTR(script);
        mod->chart_version = read_chart_version(mod);
        if ((r = load_own_values(mod, mod->files, settings->strict_check_values_mode, reterr)) < 0)
                return r;
        _cleanup_free_ char *openapi = ao_xasprintf("%s/openapi", mod->dir);
        if ((r = ao_schema_load_dir(openapi, &mod->files->schema, reterr)) < 0)
                return ao_error_prefix(reterr, "module '%s'", mod->name);
        return 0;
}

static int compare_modules(const void *a, const void *b)
{
        const struct module *x = a, *y = b;
        if (x->order != y->order)
                return x->order < y->order ? -1 : 1;
        return strcmp(x->name, y->name);
}

/* The values.yaml beside the modules: the store keeps them in MODULES_DIR order. */
static int add_common_values(struct ao_values_store *values, const char *dir, struct ao_error *reterr)
{
        _cleanup_free_ char *path = ao_xasprintf("%s/values.yaml", dir);
        cJSON *doc = NULL;
        int r = ao_values_file_load(path, &doc, reterr);
        if (r < 0)
                return r;
        ao_values_store_add_common_take(values, doc);
        return 0;
}

static int scan_dir(struct modules *m, struct ao_values_store *values, const char *dir,
                    const struct ao_settings *settings, struct ao_error *reterr)
{
        int r = add_common_values(values, dir, reterr);
        if (r < 0)
                return r;
        DIR *d = opendir(dir);
        if (!d) {
                if (errno == ENOENT) {
                        ao_log(AO_LOG_WARN, "modules: directory '%s' does not exist, no modules there", dir);
                        return 0;
                }
                return ao_error_set(reterr, ao_negative_errno(), "modules: cannot read '%s': %s", dir,
                                    strerror(errno));
        }
        struct dirent *de;
        while (r >= 0 && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                _cleanup_free_ char *path = ao_xasprintf("%s/%s", dir, de->d_name);
                if (!is_dir(path)) {
                        if (strcmp(de->d_name, "values.yaml") != 0)
                                ao_log(AO_LOG_WARN, "modules: '%s' is not a module directory, ignoring",
                                       path);
                        continue;
                }
                m->items = ao_xreallocarray(m->items, m->n + 1, sizeof(*m->items));
                r = module_init(&m->items[m->n], dir, de->d_name, settings, reterr);
                if (r < 0)
                        module_done(&m->items[m->n]);
                else
                        m->n++;
        }
        closedir(d);
        return r;
}

static int check_unique(const struct modules *m, struct ao_error *reterr)
{
        for (size_t i = 0; i < m->n; i++)
                for (size_t j = i + 1; j < m->n; j++)
                        if (strcmp(m->items[i].name, m->items[j].name) == 0)
                                return ao_error_set(reterr, -EEXIST,
                                                    "modules: two modules named '%s': '%s' and '%s'",
                                                    m->items[i].name, m->items[i].dir, m->items[j].dir);
        return 0;
}

/* Each module's section, in run order; the owner of its hooks reads and writes it there. */
static void add_sections(struct modules *m, struct ao_values_store *values)
{
        for (size_t i = 0; i < m->n; i++) {
                struct module *mod = &m->items[i];
                struct module_files *f = TAKE_PTR(mod->files);
                mod->owner.values = ao_values_store_add_module_take(values, mod->values_key, mod->enabled_key,
                                                                    TAKE_PTR(f->own_values), f->own_enabled,
                                                                    TAKE_PTR(f->schema));
                module_files_free(f);
        }
}

int modules_load(const struct ao_settings *settings, struct ao_values_store *values, struct modules *ret,
                 struct ao_error *reterr)
{
        struct modules m = {0};
        int r = 0;
        for (char **dir = settings->modules_dirs; r >= 0 && dir && *dir; dir++)
                r = scan_dir(&m, values, *dir, settings, reterr);
        if (r >= 0)
                r = check_unique(&m, reterr);
        if (r < 0) {
                modules_done(&m);
                return r;
        }
        if (m.n > 1)
                qsort(m.items, m.n, sizeof(*m.items), compare_modules);
        /* Items stay where they are from now on: each owner points back at its module. */
        for (size_t i = 0; i < m.n; i++)
                m.items[i].owner.module = &m.items[i];
        add_sections(&m, values);
        *ret = m;
        return 0;
}

void modules_done(struct modules *m)
{
        for (size_t i = 0; i < m->n; i++)
                module_done(&m->items[i]);
        free(m->items);
        *m = (struct modules){0};
}

struct module *modules_find(struct modules *m, const char *name)
{
        for (size_t i = 0; i < m->n; i++)
                if (strcmp(m->items[i].name, name) == 0)
                        return &m->items[i];
        return NULL;
}

bool modules_in_maintenance(const struct module *mod, const cJSON *config)
{
        _cleanup_free_ char *key = ao_xasprintf("%sMaintenance", mod->values_key);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(config, key);
        return cJSON_IsString(v) && strcmp(v->valuestring, "NoResourceReconciliation") == 0;
}

bool modules_has_crds(const struct module *mod)
{
        _cleanup_free_ char *dir = ao_xasprintf("%s/crds", mod->dir);
        return is_dir(dir);
}

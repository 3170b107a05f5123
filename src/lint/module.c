/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One module directory, file by file, as the operator reads it: the name,
 * values.yaml, openapi/, the enabled script, and what helm gets (Chart.yaml
 * and crds/). Hooks are hooks.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/schema.h"
#include "ao/settings.h"
#include "ao/values.h"
#include "ao/yaml.h"
#include "internal.h"

/* The module's own values.yaml: its section and its enabled flag; any other key is never read. */
static void check_own_values(struct lint_module *m, bool strict, struct lint_report *r)
{
        _cleanup_free_ char *path = ao_xasprintf("%s/values.yaml", m->dir);
        if (strict && access(path, F_OK) < 0 && errno == ENOENT) {
                lint_error(r, path, "missing (STRICT_CHECK_VALUES_MODE_ENABLED is on)");
                return;
        }
        cJSON *doc = NULL;
        struct ao_error err = {0};
        if (ao_values_file_load(path, &doc, &err) < 0) {
                lint_error_message(r, path, err.msg);
                return;
        }
        const cJSON *item;
        cJSON_ArrayForEach(item, doc)
        {
                if (strcmp(item->string, m->values_key) == 0) {
                        if (!cJSON_IsObject(item) && !cJSON_IsNull(item))
                                lint_error(r, path, "'%s' must be a mapping", item->string);
                } else if (strcmp(item->string, m->enabled_key) == 0) {
                        if (!cJSON_IsBool(item))
                                lint_error(r, path, "'%s' must be true or false", item->string);
                } else {
                        lint_warning(r, path, "key '%s' is ignored: this file is read for '%s' and '%s' only",
                                     item->string, m->values_key, m->enabled_key);
                }
        }
        cJSON *section = cJSON_DetachItemFromObjectCaseSensitive(doc, m->values_key);
        if (cJSON_IsObject(section))
                m->own_section = section;
        else
                cJSON_Delete(section);
        cJSON_Delete(doc);
}

static void check_schema(struct lint_module *m, struct lint_report *r)
{
        _cleanup_free_ char *dir = ao_xasprintf("%s/openapi", m->dir);
        struct ao_error err = {0};
        m->schema_ok = ao_schema_load_dir(dir, &m->schema, &err) >= 0;
        if (!m->schema_ok)
                lint_error_message(r, dir, err.msg);
}

static void check_enabled_script(const struct lint_module *m, struct lint_report *r)
{
        _cleanup_free_ char *path = ao_xasprintf("%s/enabled", m->dir);
        struct stat st;
        if (stat(path, &st) < 0)
                return;
        if (!S_ISREG(st.st_mode))
                lint_error(r, path, "the enabled script must be a regular file");
        else if (access(path, X_OK) < 0)
                lint_error(r, path, "the enabled script is not executable (chmod +x is required)");
}

/* A dependency is present as charts/<name>/ (unpacked) or charts/<name>-<version>.tgz. */
static bool dependency_present(const char *charts_dir, const char *name)
{
        _cleanup_free_ char *unpacked = ao_xasprintf("%s/%s/Chart.yaml", charts_dir, name);
        if (access(unpacked, F_OK) == 0)
                return true;
        DIR *d = opendir(charts_dir);
        if (!d)
                return false;
        size_t n = strlen(name);
        bool found = false;
        struct dirent *de;
        while (!found && (de = readdir(d))) {
                size_t len = strlen(de->d_name);
                found = len > n + 5 && strncmp(de->d_name, name, n) == 0 && de->d_name[n] == '-' &&
                        strcmp(de->d_name + len - 4, ".tgz") == 0;
        }
        closedir(d);
        return found;
}

/* helm refuses to render a chart whose dependencies are not vendored in charts/. */
static void check_dependencies(const struct lint_module *m, const cJSON *chart, const char *path,
                               struct lint_report *r)
{
        const cJSON *deps = cJSON_GetObjectItemCaseSensitive(chart, "dependencies");
        if (!deps)
                return;
        if (!cJSON_IsArray(deps)) {
                lint_error(r, path, "'dependencies' must be a list");
                return;
        }
        _cleanup_free_ char *charts_dir = ao_xasprintf("%s/charts", m->dir);
        const cJSON *dep;
        cJSON_ArrayForEach(dep, deps)
        {
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(dep, "name");
                if (!cJSON_IsString(name) || !name->valuestring[0])
                        lint_error(r, path, "a dependency without a name");
                else if (!dependency_present(charts_dir, name->valuestring))
                        lint_error(r, path, "dependency '%s' is missing in charts/ (helm dependency build)",
                                   name->valuestring);
        }
}

/* helm refuses a chart whose Chart.yaml lacks any of these. */
static void check_chart_yaml(const struct lint_module *m, struct lint_report *r)
{
        _cleanup_free_ char *path = ao_xasprintf("%s/Chart.yaml", m->dir);
        if (access(path, F_OK) < 0)
                return;
        cJSON *doc = NULL;
        struct ao_error err = {0};
        if (ao_yaml_load_file(path, &doc, &err) < 0) {
                lint_error_message(r, path, err.msg);
                return;
        }
        if (!cJSON_IsObject(doc)) {
                lint_error(r, path, "the document must be a mapping");
        } else {
                static const char *const required[] = {"apiVersion", "name", "version"};
                for (size_t i = 0; i < AO_ARRAY_SIZE(required); i++) {
                        const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, required[i]);
                        if (!cJSON_IsString(v) || !v->valuestring[0])
                                lint_error(r, path, "'%s' is required (a string)", required[i]);
                }
                check_dependencies(m, doc, path, r);
        }
        cJSON_Delete(doc);
}

static bool is_manifest(const char *name)
{
        const char *dot = strrchr(name, '.');
        return dot && (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0 || strcmp(dot, ".json") == 0);
}

/* Every document of a crds/ file goes to the cluster before helm runs, and must be a CRD. */
static void check_crd_file(const char *path, struct lint_report *r)
{
        cJSON *docs = NULL;
        struct ao_error err = {0};
        if (ao_yaml_load_stream_file(path, &docs, &err) < 0) {
                lint_error_message(r, path, err.msg);
                return;
        }
        int i = 0;
        const cJSON *doc;
        cJSON_ArrayForEach(doc, docs)
        {
                i++;
                const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
                if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "CustomResourceDefinition") != 0)
                        lint_error(r, path, "document %d is not a CustomResourceDefinition", i);
        }
        cJSON_Delete(docs);
}

static void check_crds(const struct lint_module *m, struct lint_report *r)
{
        _cleanup_free_ char *dir = ao_xasprintf("%s/crds", m->dir);
        DIR *d = opendir(dir);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && is_manifest(de->d_name)) {
                        _cleanup_free_ char *path = ao_xasprintf("%s/%s", dir, de->d_name);
                        check_crd_file(path, r);
                }
        closedir(d);
}

bool lint_module_load(const char *parent, const char *entry, const struct ao_settings *s,
                      struct lint_report *r, struct lint_module *ret)
{
        _cleanup_free_ char *dir = ao_xasprintf("%s/%s", parent, entry);
        struct ao_module_name n;
        struct ao_error err = {0};
        if (ao_module_name_parse(entry, (uint32_t) s->unnumbered_modules_order, &n, &err) < 0) {
                lint_error(r, dir, "%s", err.msg);
                return false;
        }
        *ret = (struct lint_module){
            .name = n.name,
            .values_key = n.values_key,
            .enabled_key = n.enabled_key,
            .order = n.order,
            .dir = TAKE_PTR(dir),
        };
        check_own_values(ret, s->strict_check_values_mode, r);
        check_schema(ret, r);
        check_enabled_script(ret, r);
        check_chart_yaml(ret, r);
        check_crds(ret, r);
        return true;
}

void lint_module_done(struct lint_module *m)
{
        free(m->name);
        free(m->values_key);
        free(m->enabled_key);
        free(m->dir);
        cJSON_Delete(m->own_section);
        ao_schema_free(m->schema);
        *m = (struct lint_module){0};
}

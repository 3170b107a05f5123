/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What helm is given for a module: the chart directory (the module
 * directory, or a generated chart when it has templates but no Chart.yaml),
 * the private values file, and the CRDs of its crds/ directory as
 * CreateOrUpdate operations for the object patcher, with the
 * group/version/Kind each of them serves.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ao-build-config.h"
#include "ao/alloc.h"
#include "ao/helm-output.h"
#include "ao/helm-post-render.h"
#include "ao/log.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"
#include "internal.h"

/* Module entries a generated chart leaves out, as the Go operator does. */
static const char *const not_chart_entries[] = {"crds", "docs", "hooks", "images", "lib", "Chart.yaml", NULL};

static bool exists_as(const char *dir, const char *name, mode_t type)
{
        _cleanup_free_ char *path = ao_xasprintf("%s/%s", dir, name);
        struct stat st;
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == type;
}

static bool is_listed(const char *name, const char *const *list)
{
        for (size_t i = 0; list[i]; i++)
                if (strcmp(name, list[i]) == 0)
                        return true;
        return false;
}

static int make_dirs(const char *path)
{
        _cleanup_free_ char *copy = ao_xstrdup(path);
        for (char *p = copy + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(copy, 0700) < 0 && errno != EEXIST)
                        return ao_negative_errno();
                *p = '/';
        }
        return mkdir(copy, 0700) < 0 && errno != EEXIST ? ao_negative_errno() : 0;
}

/* Empty @dir of what an earlier generation left: symlinks and Chart.yaml, nothing deeper. */
static int clear_generated(const char *dir)
{
        DIR *d = opendir(dir);
        if (!d)
                return ao_negative_errno();
        struct dirent *de;
        int r = 0;
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
                    unlinkat(dirfd(d), de->d_name, 0) < 0)
                        r = ao_negative_errno();
        closedir(d);
        return r;
}

static int link_entries(const struct module *mod, const char *chart, struct ao_error *reterr)
{
        DIR *d = opendir(mod->dir);
        if (!d)
                return ao_error_set(reterr, ao_negative_errno(), "cannot read '%s': %s", mod->dir,
                                    strerror(errno));
        struct dirent *de;
        int r = 0;
        while (r >= 0 && (de = readdir(d))) {
                if (de->d_name[0] == '.' || is_listed(de->d_name, not_chart_entries))
                        continue;
                _cleanup_free_ char *target = ao_xasprintf("%s/%s", mod->dir, de->d_name);
                _cleanup_free_ char *link = ao_xasprintf("%s/%s", chart, de->d_name);
                if (symlink(target, link) < 0)
                        r = ao_error_set(reterr, ao_negative_errno(), "cannot link '%s': %s", link,
                                         strerror(errno));
        }
        closedir(d);
        return r;
}

static int write_text(const char *path, const char *text, mode_t mode, struct ao_error *reterr)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd < 0)
                return ao_error_set(reterr, ao_negative_errno(), "cannot write '%s': %s", path,
                                    strerror(errno));
        size_t len = strlen(text);
        bool ok = write(fd, text, len) == (ssize_t) len;
        int saved = errno;
        if (close(fd) < 0 && ok) {
                ok = false;
                saved = errno;
        }
        return ok ? 0 : ao_error_set(reterr, -saved, "cannot write '%s': %s", path, strerror(saved));
}

/* A chart of the module's templates (and values, openapi, ...) with a Chart.yaml made up. */
static int generate_chart(const struct operator_state *op, const struct module *mod, char **ret_dir,
                          struct ao_error *reterr)
{
        _cleanup_free_ char *chart = ao_xasprintf("%s/charts/%s", op->settings->tmp_dir, mod->name);
        int r = make_dirs(chart);
        if (r >= 0)
                r = clear_generated(chart);
        if (r < 0)
                return ao_error_set(reterr, r, "cannot prepare '%s': %s", chart, strerror(-r));
        _cleanup_free_ char *chart_yaml = ao_xasprintf("%s/Chart.yaml", chart);
        _cleanup_free_ char *text = ao_xasprintf("apiVersion: v2\nname: %s\nversion: 0.2.0\n", mod->name);
        if ((r = write_text(chart_yaml, text, 0644, reterr)) < 0 ||
            (r = link_entries(mod, chart, reterr)) < 0)
                return r;
        *ret_dir = TAKE_PTR(chart);
        return 1;
}

int chart_dir(const struct operator_state *op, const struct module *mod, char **ret_dir,
              struct ao_error *reterr)
{
        *ret_dir = NULL;
        if (exists_as(mod->dir, "Chart.yaml", S_IFREG)) {
                *ret_dir = ao_xstrdup(mod->dir);
                return 1;
        }
        if (exists_as(mod->dir, "templates", S_IFDIR))
                return generate_chart(op, mod, ret_dir, reterr);
        return 0;
}

int chart_values_file(const struct operator_state *op, const struct module *mod, const cJSON *values,
                      char **ret_path, struct ao_error *reterr)
{
        const char *tmp = op->settings->tmp_dir;
        int r = make_dirs(tmp);
        if (r < 0)
                return ao_error_set(reterr, r, "cannot create '%s': %s", tmp, strerror(-r));
        char *path = ao_xasprintf("%s/%s.module-values.yaml-XXXXXX", tmp, mod->name);
        /* mkstemp: a name nobody can guess, mode 0600 (the values may hold secrets). */
        int fd = mkstemp(path);
        if (fd < 0) {
                r = ao_error_set(reterr, ao_negative_errno(), "cannot create a values file in '%s': %s", tmp,
                                 strerror(errno));
                free(path);
                return r;
        }
        close(fd);
        _cleanup_free_ char *text = ao_yaml_emit(values);
        if ((r = write_text(path, text, 0600, reterr)) < 0) {
                (void) unlink(path);
                free(path);
                return r;
        }
        *ret_path = path;
        return 0;
}

/* ---- what a render depends on ------------------------------------------------------------------ */

static int append_file(struct ao_strbuf *sb, const char *path, struct ao_error *reterr)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return ao_error_set(reterr, ao_negative_errno(), "cannot read '%s': %s", path,
                                    strerror(errno));
        char buf[65536];
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return ao_error_set(reterr, ao_negative_errno(), "cannot read '%s': %s", path,
                                            strerror(errno));
                if (n == 0)
                        return 0;
                ao_strbuf_append_n(sb, buf, (size_t) n);
        }
}

/* Append every regular file under @dir (symlinks followed), sorted by path, as "path NUL size NUL bytes". */
static int add_tree(struct ao_strbuf *sb, const char *root, const char *rel, int depth,
                    struct ao_error *reterr)
{
        _cleanup_free_ char *dir = rel[0] ? ao_xasprintf("%s/%s", root, rel) : ao_xstrdup(root);
        struct dirent **entries = NULL;
        int n = scandir(dir, &entries, NULL, alphasort);
        if (n < 0)
                return ao_error_set(reterr, ao_negative_errno(), "cannot read '%s': %s", dir,
                                    strerror(errno));
        int r = 0;
        for (int i = 0; i < n; i++) {
                const char *name = entries[i]->d_name;
                _cleanup_free_ char *child = rel[0] ? ao_xasprintf("%s/%s", rel, name) : ao_xstrdup(name);
                _cleanup_free_ char *path = ao_xasprintf("%s/%s", root, child);
                struct stat st;
                if (r < 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || stat(path, &st) < 0)
                        continue;
                if (S_ISDIR(st.st_mode) && depth < 32) {
                        r = add_tree(sb, root, child, depth + 1, reterr);
                } else if (S_ISREG(st.st_mode)) {
                        ao_strbuf_appendf(sb, "%s%c%lld%c", child, 0, (long long) st.st_size, 0);
                        r = append_file(sb, path, reterr);
                }
        }
        for (int i = 0; i < n; i++)
                free(entries[i]);
        free(entries);
        return r;
}

int chart_input_checksum(const struct module *mod, const char *chart, const cJSON *values, const char *ns,
                         const char *helm_version, const char *labels, char ret[static 33],
                         struct ao_error *reterr)
{
        _cleanup_(ao_strbuf_done) struct ao_strbuf sb = {0};
        /*
         * The format's version first: changing what goes in must not match an old checksum. The
         * post-renderer is this binary: its version and the labels it puts on every object.
         */
        ao_strbuf_appendf(&sb, "addon-operator render input 2%crelease %s%cnamespace %s%chelm %s%c", 0,
                          mod->name, 0, ns, 0, helm_version ? helm_version : "", 0);
        ao_strbuf_appendf(&sb, "post-render %s %s%c", AO_VERSION, labels ? labels : "", 0);
        _cleanup_free_ char *text = ao_yaml_emit(values);
        ao_strbuf_appendf(&sb, "values%c%zu%c", 0, strlen(text), 0);
        ao_strbuf_append(&sb, text);
        int r = add_tree(&sb, chart, "", 0, reterr);
        if (r < 0)
                return r;
        ao_helm_checksum(sb.buf, sb.len, ret);
        return 0;
}

/* ---- CRDs -------------------------------------------------------------------------------------- */

static bool filtered_out(const struct ao_settings *s, const char *name)
{
        for (char **p = s->crd_filter_prefixes; p && *p; p++)
                if (**p && strncmp(name, *p, strlen(*p)) == 0)
                        return true;
        return false;
}

static bool is_manifest_name(const char *name)
{
        const char *dot = strrchr(name, '.');
        return dot && (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0 || strcmp(dot, ".json") == 0);
}

int chart_labels(const struct ao_settings *s, struct ao_helm_labels *ret, struct ao_error *reterr)
{
        _cleanup_free_ char *all =
            ao_xasprintf("heritage=addon-operator,%s", s->crd_extra_labels ? s->crd_extra_labels : "");
        int r = ao_helm_labels_parse(all, ret, reterr);
        return r < 0 ? ao_error_prefix(reterr, "ADDON_OPERATOR_CRD_EXTRA_LABELS") : r;
}

/* The chart's labels into a CRD's metadata.labels, each in the place of one it had. */
static void add_labels(const struct ao_helm_labels *l, cJSON *object)
{
        cJSON *metadata = cJSON_GetObjectItemCaseSensitive(object, "metadata");
        if (!cJSON_IsObject(metadata))
                return;
        cJSON *labels = cJSON_GetObjectItemCaseSensitive(metadata, "labels");
        if (!cJSON_IsObject(labels)) {
                cJSON_DeleteItemFromObjectCaseSensitive(metadata, "labels");
                labels = cJSON_AddObjectToObject(metadata, "labels");
        }
        for (size_t i = 0; i < l->n; i++) {
                if (cJSON_GetObjectItemCaseSensitive(labels, l->items[i].key))
                        cJSON_ReplaceItemInObjectCaseSensitive(labels, l->items[i].key,
                                                               cJSON_CreateString(l->items[i].value));
                else
                        cJSON_AddStringToObject(labels, l->items[i].key, l->items[i].value);
        }
}

/*
 * "group/version/Kind" of every version @crd defines, in @kinds: the list the Go operator's CRD
 * installer reports, served or not. A CRD without a group, kind or versions adds nothing (the API
 * server refuses it anyway).
 */
static void add_crd_kinds(const cJSON *crd, cJSON *kinds)
{
        const cJSON *spec = cJSON_GetObjectItemCaseSensitive(crd, "spec");
        const cJSON *group = cJSON_GetObjectItemCaseSensitive(spec, "group");
        const cJSON *kind =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(spec, "names"), "kind");
        if (!cJSON_IsString(group) || !*group->valuestring || !cJSON_IsString(kind) || !*kind->valuestring)
                return;
        const cJSON *version;
        cJSON_ArrayForEach(version, cJSON_GetObjectItemCaseSensitive(spec, "versions"))
        {
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(version, "name");
                if (!cJSON_IsString(name) || !*name->valuestring)
                        continue;
                _cleanup_free_ char *gvk =
                    ao_xasprintf("%s/%s/%s", group->valuestring, name->valuestring, kind->valuestring);
                cJSON_AddItemToArray(kinds, cJSON_CreateString(gvk));
        }
}

/*
 * Each document of @path as a CreateOrUpdate operation in @ops, what it serves in @kinds; a
 * document that is no CRD is an error.
 */
static int add_crd_file(const struct ao_helm_labels *labels, const char *path, cJSON *ops, cJSON *kinds,
                        struct ao_error *reterr)
{
        cJSON *docs = NULL;
        int r = ao_yaml_load_stream_file(path, &docs, reterr);
        if (r < 0)
                return r;
        int i = 0;
        cJSON *doc;
        cJSON_ArrayForEach(doc, docs)
        {
                const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
                if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "CustomResourceDefinition") != 0) {
                        r = ao_error_set(reterr, -EINVAL, "%s: document %d is not a CustomResourceDefinition",
                                         path, i + 1);
                        break;
                }
                add_labels(labels, doc);
                add_crd_kinds(doc, kinds);
                cJSON *op = cJSON_CreateObject();
                cJSON_AddStringToObject(op, "operation", "CreateOrUpdate");
                cJSON_AddItemToObject(op, "object", cJSON_Duplicate(doc, true));
                cJSON_AddItemToArray(ops, op);
                i++;
        }
        cJSON_Delete(docs);
        return r;
}

static int compare_names(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int chart_crd_operations(const struct operator_state *op, const struct module *mod, char **ret_text,
                         cJSON **ret_kinds, struct ao_error *reterr)
{
        *ret_text = NULL;
        *ret_kinds = NULL;
        _cleanup_free_ char *dir = ao_xasprintf("%s/crds", mod->dir);
        DIR *d = opendir(dir);
        if (!d)
                return errno == ENOENT || errno == ENOTDIR
                           ? 0
                           : ao_error_set(reterr, ao_negative_errno(), "cannot read '%s': %s", dir,
                                          strerror(errno));
        char **names = NULL;
        size_t n = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && is_manifest_name(de->d_name) &&
                    !filtered_out(op->settings, de->d_name)) {
                        names = ao_xreallocarray(names, n + 1, sizeof(char *));
                        names[n++] = ao_xstrdup(de->d_name);
                }
        closedir(d);
        qsort(names, n, sizeof(char *), compare_names);
        cJSON *ops = cJSON_CreateArray(), *kinds = cJSON_CreateArray();
        _cleanup_(ao_helm_labels_clear) struct ao_helm_labels labels = {0};
        int r = n > 0 ? chart_labels(op->settings, &labels, reterr) : 0;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = ao_xasprintf("%s/%s", dir, names[i]);
                if (r >= 0)
                        r = add_crd_file(&labels, path, ops, kinds, reterr);
                free(names[i]);
        }
        free(names);
        /* The object patcher reads a stream of operations, one JSON object after another. */
        struct ao_strbuf text = {0};
        const cJSON *op_item;
        cJSON_ArrayForEach(op_item, ops)
        {
                _cleanup_free_ char *one = cJSON_PrintUnformatted(op_item);
                ao_strbuf_appendf(&text, "%s\n", one);
        }
        cJSON_Delete(ops);
        if (r >= 0 && text.len > 0) {
                *ret_text = ao_strbuf_steal(&text);
                *ret_kinds = TAKE_PTR(kinds);
        }
        cJSON_Delete(kinds);
        ao_strbuf_done(&text);
        return r < 0 ? r : *ret_text != NULL;
}

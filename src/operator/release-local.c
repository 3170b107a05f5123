/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The release step without a cluster: what helm would receive is written to
 * <state dir>/releases/<module>/values.yaml (atomically), and a release is
 * that directory. Deleting removes it; purging a release whose module is
 * gone is the same. This lets the whole lifecycle run, and be tested,
 * without Kubernetes or helm.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/log.h"
#include "ao/yaml.h"
#include "internal.h"

static char *release_dir(const struct operator_state *op, const char *release)
{
        return ao_xasprintf("%s/releases/%s", op->state_dir, release);
}

static int make_dir(const char *path)
{
        return mkdir(path, 0755) < 0 && errno != EEXIST ? ao_negative_errno() : 0;
}

static int write_file_atomically(const char *dir, const char *name, const char *text, struct ao_error *reterr)
{
        _cleanup_free_ char *tmp = ao_xasprintf("%s/.%s.XXXXXX", dir, name);
        _cleanup_free_ char *path = ao_xasprintf("%s/%s", dir, name);
        int fd = mkstemp(tmp);
        if (fd < 0)
                return ao_error_set(reterr, ao_negative_errno(), "cannot write in '%s': %s", dir,
                                    strerror(errno));
        size_t len = strlen(text);
        bool ok = fchmod(fd, 0644) == 0 && write(fd, text, len) == (ssize_t) len && fsync(fd) == 0;
        int saved = errno;
        close(fd);
        if (!ok || rename(tmp, path) < 0) {
                if (ok)
                        saved = errno;
                (void) unlink(tmp);
                return ao_error_set(reterr, -saved, "cannot write '%s': %s", path, strerror(saved));
        }
        return 0;
}

static int write_release(const struct operator_state *op, const struct module *mod, const cJSON *values,
                         struct ao_error *reterr)
{
        _cleanup_free_ char *releases = ao_xasprintf("%s/releases", op->state_dir);
        _cleanup_free_ char *dir = release_dir(op, mod->name);
        int r = make_dir(op->state_dir);
        if (r >= 0)
                r = make_dir(releases);
        if (r >= 0)
                r = make_dir(dir);
        if (r < 0)
                return ao_error_set(reterr, r, "cannot create '%s': %s", dir, strerror(-r));
        _cleanup_free_ char *text = ao_yaml_emit(values);
        if ((r = write_file_atomically(dir, "values.yaml", text, reterr)) < 0)
                return r;
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"module", mod->name}),
                    "release '%s' upgraded (local mode): values in '%s/values.yaml'", mod->name, dir);
        return 0;
}

static int delete_release(const struct operator_state *op, const char *release, struct ao_error *reterr)
{
        _cleanup_free_ char *dir = release_dir(op, release);
        _cleanup_free_ char *values = ao_xasprintf("%s/values.yaml", dir);
        if ((unlink(values) < 0 && errno != ENOENT) || (rmdir(dir) < 0 && errno != ENOENT))
                return ao_error_set(reterr, ao_negative_errno(), "cannot remove release '%s': %s", dir,
                                    strerror(errno));
        ao_log(AO_LOG_INFO, "release '%s' deleted (local mode)", release);
        return 0;
}

static bool has_release(const struct operator_state *op, const char *release)
{
        _cleanup_free_ char *dir = release_dir(op, release);
        struct stat st;
        return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

static int compare_strings(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static char **list_releases(const struct operator_state *op)
{
        _cleanup_free_ char *releases = ao_xasprintf("%s/releases", op->state_dir);
        char **names = ao_xcalloc(1, sizeof(char *));
        size_t n = 0;
        DIR *d = opendir(releases);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                names = ao_xreallocarray(names, n + 2, sizeof(char *));
                names[n++] = ao_xstrdup(de->d_name);
                names[n] = NULL;
        }
        if (d)
                closedir(d);
        qsort(names, n, sizeof(char *), compare_strings);
        return names;
}

/* The local step finishes at once: each operation calls back before it returns. */
static int helm_local_upgrade(struct operator_state *op, struct module *mod, const cJSON *values,
                              const char *activation, release_done *done, void *userdata,
                              struct ao_error *reterr)
{
        (void) activation;
        struct ao_error err = {0};
        int r = write_release(op, mod, values, &err);
        (void) reterr;
        done(op, r < 0 ? &err : NULL, userdata);
        return 0;
}

static int helm_local_remove(struct operator_state *op, const char *release, release_done *done,
                             void *userdata, struct ao_error *reterr)
{
        struct ao_error err = {0};
        int r = delete_release(op, release, &err);
        (void) reterr;
        done(op, r < 0 ? &err : NULL, userdata);
        return 0;
}

static int helm_local_exists(struct operator_state *op, const char *release, release_exists_done *done,
                             void *userdata, struct ao_error *reterr)
{
        (void) reterr;
        done(op, has_release(op, release), NULL, userdata);
        return 0;
}

static int helm_local_list(struct operator_state *op, release_list_done *done, void *userdata,
                           struct ao_error *reterr)
{
        (void) reterr;
        done(op, list_releases(op), NULL, userdata);
        return 0;
}

const struct release_ops release_local_ops = {
    .name = "local",
    .upgrade = helm_local_upgrade,
    .remove = helm_local_remove,
    .exists = helm_local_exists,
    .list = helm_local_list,
};

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The set of profiles the operator knows: the ones built into the binary
 * (sandbox/profiles/NAME.policy, embedded at build time so the operator runs
 * without its source tree), then every *.policy file of the extra
 * directory in name order, each adding a profile or replacing the built-in
 * one of the same name. Loaded once at start-up; read-only afterwards.
 */
#include "ao/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "internal.h"

#define POLICY_SUFFIX   ".policy"
#define POLICY_FILE_MAX (256u * 1024) /* as ao_sandbox_profile_parse() accepts */
#define EXTRA_FILES_MAX 256

struct ao_sandbox_profiles {
        struct ao_sandbox_profile **items; /* owned, each owned */
        size_t n;
};

struct ao_sandbox_profiles *ao_sandbox_profiles_free(struct ao_sandbox_profiles *set)
{
        if (!set)
                return NULL;
        for (size_t i = 0; i < set->n; i++)
                ao_sandbox_profile_free(set->items[i]);
        free(set->items);
        free(set);
        return NULL;
}

static void profiles_freep(struct ao_sandbox_profiles **set)
{
        *set = ao_sandbox_profiles_free(*set);
}

const struct ao_sandbox_profile *ao_sandbox_profiles_find(const struct ao_sandbox_profiles *set,
                                                          const char *name)
{
        for (size_t i = 0; set && name && i < set->n; i++)
                if (strcmp(set->items[i]->name, name) == 0)
                        return set->items[i];
        return NULL;
}

/* Add @p, replacing a profile of the same name: extra files override built-ins. */
static void profiles_put_take(struct ao_sandbox_profiles *set, struct ao_sandbox_profile *p)
{
        for (size_t i = 0; i < set->n; i++)
                if (strcmp(set->items[i]->name, p->name) == 0) {
                        ao_sandbox_profile_free(set->items[i]);
                        set->items[i] = p;
                        return;
                }
        set->items = ao_xreallocarray(set->items, set->n + 1, sizeof(*set->items));
        set->items[set->n++] = p;
}

int sandbox_read_file(const char *path, size_t max, char **ret_text, size_t *ret_len, struct ao_error *reterr)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 && errno == ENOENT)
                return -ENOENT;
        if (fd < 0)
                return ao_error_set(reterr, ao_negative_errno(), "%s: %m", path);

        struct stat st;
        if (fstat(fd, &st) < 0)
                return ao_error_set(reterr, ao_negative_errno(), "%s: %m", path);
        if (!S_ISREG(st.st_mode))
                return ao_error_set(reterr, -EINVAL, "%s: not a regular file", path);
        if ((uint64_t) st.st_size > max)
                return ao_error_set(reterr, -EFBIG, "%s: larger than %zu KiB", path, max / 1024);

        /* Read to EOF rather than trust st_size, which may change under us; a spare byte detects growth. */
        size_t cap = (size_t) st.st_size + 1, len = 0;
        _cleanup_free_ char *text = ao_xmalloc(cap + 1);
        for (;;) {
                ssize_t n = read(fd, text + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return ao_error_set(reterr, ao_negative_errno(), "%s: %m", path);
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len == cap) {
                        if (cap > max)
                                return ao_error_set(reterr, -EFBIG, "%s: larger than %zu KiB", path,
                                                    max / 1024);
                        cap = AO_MIN(2 * cap, max + 1);
                        text = ao_xrealloc(text, cap + 1);
                }
        }
        text[len] = '\0';
        *ret_text = TAKE_PTR(text);
        *ret_len = len;
        return 0;
}

static int load_builtins(struct ao_sandbox_profiles *set, struct ao_error *reterr)
{
        for (size_t i = 0; i < sandbox_n_builtin_profiles; i++) {
                const struct ao_sandbox_builtin *b = &sandbox_builtin_profiles[i];
                struct ao_sandbox_profile *p;
                int r = ao_sandbox_profile_parse(b->name, b->text, b->len, b->filename, &p, reterr);
                if (r < 0)
                        return r;
                profiles_put_take(set, p);
        }
        return 0;
}

static int compare_strings(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static void strv_free(char **v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

/* The *.policy names in @dir, sorted: loading, and its first error, must not depend on readdir order. */
static int list_policy_files(const char *dir, char ***ret, size_t *ret_n, struct ao_error *reterr)
{
        DIR *d = opendir(dir);
        if (!d)
                return ao_error_set(reterr, ao_negative_errno(), "sandbox profiles directory '%s': %m", dir);

        char **names = NULL;
        size_t n = 0;
        struct dirent *e;
        int r = 0;
        errno = 0;
        while ((e = readdir(d))) {
                size_t len = strlen(e->d_name), slen = strlen(POLICY_SUFFIX);
                if (e->d_name[0] == '.' || len <= slen || strcmp(e->d_name + len - slen, POLICY_SUFFIX) != 0)
                        continue;
                if (n == EXTRA_FILES_MAX) {
                        r = ao_error_set(reterr, -E2BIG,
                                         "sandbox profiles directory '%s': more than %d profiles", dir,
                                         EXTRA_FILES_MAX);
                        break;
                }
                names = ao_xreallocarray(names, n + 1, sizeof(*names));
                names[n++] = ao_xstrdup(e->d_name);
        }
        if (r == 0 && errno != 0)
                r = ao_error_set(reterr, ao_negative_errno(), "sandbox profiles directory '%s': %m", dir);
        (void) closedir(d);
        if (r < 0) {
                strv_free(names, n);
                return r;
        }
        if (n > 0)
                qsort(names, n, sizeof(*names), compare_strings);
        *ret = names;
        *ret_n = n;
        return 0;
}

static int load_extra_file(struct ao_sandbox_profiles *set, const char *dir, const char *file,
                           struct ao_error *reterr)
{
        char name[256], q[96];
        size_t nlen = strlen(file) - strlen(POLICY_SUFFIX);
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t len;
        int r;

        if (asprintf(&path, "%s/%s", dir, file) < 0) {
                path = NULL;
                return ao_error_set(reterr, -ENOMEM, "out of memory");
        }
        if (nlen >= sizeof(name))
                nlen = sizeof(name) - 1; /* too long to be valid: the check below says so */
        memcpy(name, file, nlen);
        name[nlen] = '\0';
        if (!sandbox_name_valid(name))
                return ao_error_set(reterr, -EINVAL,
                                    "%s: invalid profile name '%s': expected [a-z0-9-_.] before .policy",
                                    path, sandbox_escape(name, q, sizeof(q)));

        r = sandbox_read_file(path, POLICY_FILE_MAX, &text, &len, reterr);
        if (r == -ENOENT)
                return ao_error_set(reterr, r, "%s: vanished while loading", path);
        if (r < 0)
                return r;
        struct ao_sandbox_profile *p;
        r = ao_sandbox_profile_parse(name, text, len, path, &p, reterr);
        if (r < 0)
                return r;
        profiles_put_take(set, p);
        return 0;
}

static int load_extra_dir(struct ao_sandbox_profiles *set, const char *dir, struct ao_error *reterr)
{
        char **files = NULL;
        size_t n = 0;
        int r = list_policy_files(dir, &files, &n, reterr);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++)
                r = load_extra_file(set, dir, files[i], reterr);
        strv_free(files, n);
        return r;
}

int ao_sandbox_profiles_load(const char *extra_dir, struct ao_sandbox_profiles **ret, struct ao_error *reterr)
{
        _cleanup_(profiles_freep) struct ao_sandbox_profiles *set = ao_xcalloc(1, sizeof(*set));

        int r = load_builtins(set, reterr);
        if (r < 0)
                return r;
        if (extra_dir && extra_dir[0]) {
                r = load_extra_dir(set, extra_dir, reterr);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(set);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hook discovery: a recursive, sorted walk for executable files (see hooks.h).
 */
#include "ao/hooks.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ao/alloc.h"
#include "ao/log.h"
#include "ao/strbuf.h"

/* Directories on the way down from the root, to refuse symlink loops. */
struct ancestry {
        dev_t dev[AO_HOOKS_MAX_DEPTH + 1];
        ino_t ino[AO_HOOKS_MAX_DEPTH + 1];
        size_t depth;
};

struct walk {
        const char *root;
        const char *name_prefix; /* "hooks/" or "" */
        enum ao_hook_kind kind;
        struct ao_hook_path *items;
        size_t n, cap;
        struct ao_hook_skip *skipped;
        size_t n_skipped;
        struct ancestry ancestry;
};

/* Leave @full out: logged for the operator, recorded for `addon-operator lint`. */
static void skip(struct walk *w, const char *full, const char *reason)
{
        ao_log(AO_LOG_WARN, "hooks: '%s' %s, ignoring", full, reason);
        w->skipped = ao_xreallocarray(w->skipped, w->n_skipped + 1, sizeof(*w->skipped));
        w->skipped[w->n_skipped++] =
            (struct ao_hook_skip){.path = ao_xstrdup(full), .reason = ao_xstrdup(reason)};
}

static const char *const skipped_extensions[] = {".yaml", ".json", ".md", ".txt"};

static bool has_skipped_extension(const char *name)
{
        size_t len = strlen(name);
        for (size_t i = 0; i < AO_ARRAY_SIZE(skipped_extensions); i++) {
                size_t n = strlen(skipped_extensions[i]);
                if (len > n && strcmp(name + len - n, skipped_extensions[i]) == 0)
                        return true;
        }
        return false;
}

static bool is_skipped_dir(const struct walk *w, const char *name)
{
        return strcmp(name, "lib") == 0 || (w->kind == AO_HOOK_MODULE && strcmp(name, "venv") == 0);
}

static bool in_ancestry(const struct ancestry *a, const struct stat *st)
{
        for (size_t i = 0; i < a->depth; i++)
                if (a->dev[i] == st->st_dev && a->ino[i] == st->st_ino)
                        return true;
        return false;
}

static int add_hook(struct walk *w, const char *rel, struct ao_error *reterr)
{
        if (w->n >= AO_HOOKS_MAX_FILES)
                return ao_error_set(reterr, -E2BIG, "hooks: '%s': more than %u hooks", w->root,
                                    AO_HOOKS_MAX_FILES);
        if (w->n == w->cap) {
                w->cap = w->cap ? w->cap * 2 : 16;
                w->items = ao_xreallocarray(w->items, w->cap, sizeof(*w->items));
        }
        struct ao_strbuf path = {0}, name = {0};
        ao_strbuf_appendf(&path, "%s/%s", w->root, rel);
        ao_strbuf_appendf(&name, "%s%s", w->name_prefix, rel);
        w->items[w->n++] =
            (struct ao_hook_path){.path = ao_strbuf_steal(&path), .name = ao_strbuf_steal(&name)};
        return 0;
}

static int walk_dir(struct walk *w, const char *rel, struct ao_error *reterr);

/* One directory entry: recurse into directories, collect executables, say why others are skipped. */
static int visit(struct walk *w, const char *rel, const char *name, struct ao_error *reterr)
{
        _cleanup_free_ char *child_rel = *rel ? ao_xasprintf("%s/%s", rel, name) : ao_xstrdup(name);
        _cleanup_free_ char *full = ao_xasprintf("%s/%s", w->root, child_rel);

        struct stat st;
        if (stat(full, &st) < 0) {
                /* A dangling symlink, or a file removed while we walk. */
                _cleanup_free_ char *why = ao_xasprintf("cannot be read: %s", strerror(errno));
                skip(w, full, why);
                return 0;
        }
        if (S_ISDIR(st.st_mode)) {
                if (is_skipped_dir(w, name))
                        return 0;
                if (in_ancestry(&w->ancestry, &st)) {
                        skip(w, full, "leads back to a directory above it");
                        return 0;
                }
                if (w->ancestry.depth > AO_HOOKS_MAX_DEPTH) {
                        _cleanup_free_ char *why =
                            ao_xasprintf("is more than %d levels deep", AO_HOOKS_MAX_DEPTH);
                        skip(w, full, why);
                        return 0;
                }
                w->ancestry.dev[w->ancestry.depth] = st.st_dev;
                w->ancestry.ino[w->ancestry.depth] = st.st_ino;
                w->ancestry.depth++;
                int r = walk_dir(w, child_rel, reterr);
                w->ancestry.depth--;
                return r;
        }
        if (!S_ISREG(st.st_mode) || has_skipped_extension(name))
                return 0;
        if (!(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH))) {
                skip(w, full, "is not executable (chmod +x is required)");
                return 0;
        }
        return add_hook(w, child_rel, reterr);
}

static int walk_dir(struct walk *w, const char *rel, struct ao_error *reterr)
{
        _cleanup_free_ char *dir_path = ao_xasprintf("%s%s%s", w->root, *rel ? "/" : "", rel);
        DIR *d = opendir(dir_path);
        if (!d)
                return ao_error_set(reterr, ao_negative_errno(), "hooks: cannot read directory '%s': %s",
                                    dir_path, strerror(errno));
        int r = 0;
        struct dirent *de;
        while (r >= 0 && (de = readdir(d)))
                if (de->d_name[0] != '.')
                        r = visit(w, rel, de->d_name, reterr);
        closedir(d);
        return r;
}

static int compare_names(const void *a, const void *b)
{
        return strcmp(((const struct ao_hook_path *) a)->name, ((const struct ao_hook_path *) b)->name);
}

static bool is_directory(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *ao_hooks_global_root(const char *global_hooks_dir)
{
        char *sub = ao_xasprintf("%s/hooks", global_hooks_dir);
        if (is_directory(sub))
                return sub;
        free(sub);
        return ao_xstrdup(global_hooks_dir);
}

/* "hooks/" when the root directory itself is named hooks (trailing slashes ignored). */
static const char *name_prefix_for(const char *root)
{
        size_t len = strlen(root);
        while (len > 1 && root[len - 1] == '/')
                len--;
        size_t start = len;
        while (start > 0 && root[start - 1] != '/')
                start--;
        return len - start == 5 && strncmp(root + start, "hooks", 5) == 0 ? "hooks/" : "";
}

int ao_hooks_discover(const char *root, enum ao_hook_kind kind, struct ao_hook_paths *ret,
                      struct ao_error *reterr)
{
        struct stat st;
        if (stat(root, &st) < 0) {
                if (errno == ENOENT) {
                        *ret = (struct ao_hook_paths){0};
                        return 0;
                }
                return ao_error_set(reterr, ao_negative_errno(), "hooks: cannot access '%s': %s", root,
                                    strerror(errno));
        }
        if (!S_ISDIR(st.st_mode))
                return ao_error_set(reterr, -ENOTDIR, "hooks: '%s' is not a directory", root);

        struct walk w = {.root = root, .name_prefix = name_prefix_for(root), .kind = kind};
        w.ancestry.dev[0] = st.st_dev;
        w.ancestry.ino[0] = st.st_ino;
        w.ancestry.depth = 1;
        int r = walk_dir(&w, "", reterr);
        struct ao_hook_paths found = {
            .items = w.items, .n = w.n, .skipped = w.skipped, .n_skipped = w.n_skipped};
        if (r < 0) {
                ao_hook_paths_done(&found);
                return r;
        }
        if (found.n > 1)
                qsort(found.items, found.n, sizeof(*found.items), compare_names);
        *ret = found;
        return 0;
}

void ao_hook_paths_done(struct ao_hook_paths *paths)
{
        for (size_t i = 0; i < paths->n; i++) {
                free(paths->items[i].path);
                free(paths->items[i].name);
        }
        free(paths->items);
        for (size_t i = 0; i < paths->n_skipped; i++) {
                free(paths->skipped[i].path);
                free(paths->skipped[i].reason);
        }
        free(paths->skipped);
        *paths = (struct ao_hook_paths){0};
}

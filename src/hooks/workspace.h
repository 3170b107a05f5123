/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/hooks/: the operator's private temp directory and the
 * per-run directories inside it (see hook-run.h).
 */

#include <stdbool.h>
#include <stddef.h>

#include "ao/error.h"

struct ao_sandbox_profile;

struct workspace {
        char *dir; /* owned: the private directory, mode 0711 */
        bool keep; /* DEBUG_KEEP_TMP_FILES: leave everything in place */
        unsigned long long runs;
};

/** Pick the base (TMP_DIR, or /dev/shm when TMP_DIR is not tmpfs and was not chosen), create the private dir. */
int workspace_open(struct workspace *w, const char *tmp_dir, bool tmp_dir_explicit, bool keep,
                   struct ao_error *reterr);
/** Remove the private directory (unless keep) and release @w. */
void workspace_close(struct workspace *w);

/** A new run directory (0700, given to the profile's uid/gid when it drops privileges); malloc'd path. */
int workspace_new_run_dir(struct workspace *w, const char *hook_name,
                          const struct ao_sandbox_profile *profile, char **ret_path, struct ao_error *reterr);
/** Remove a run directory: the files named in @names, then anything else the hook left (unless keep). */
void workspace_remove_run_dir(struct workspace *w, const char *path, const char *const *names, size_t n);

/** Write @len bytes to @dir/@name (created 0644; given to the profile's uid/gid when it sets one). */
int workspace_write(const char *dir, const char *name, const char *data, size_t len,
                    const struct ao_sandbox_profile *profile, struct ao_error *reterr);

/**
 * Read @dir/@name: a regular file, never through a symbolic link, at most
 * @max bytes (-EFBIG beyond). A file the hook removed reads as empty.
 * @ret gets a malloc'd NUL-terminated copy.
 */
int workspace_read(const char *dir, const char *name, size_t max, char **ret, size_t *ret_len,
                   struct ao_error *reterr);

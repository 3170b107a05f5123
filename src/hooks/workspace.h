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
struct idle_dir;

/** The files of one kind of run: the inputs the operator writes, the outputs the hook may write. */
struct run_files {
        const char *const *inputs;
        size_t n_inputs;
        const char *const *outputs;
        size_t n_outputs;
};

struct workspace {
        char *dir; /* owned: the private directory, mode 0711 */
        bool keep; /* DEBUG_KEEP_TMP_FILES: leave everything in place */
        unsigned long long runs;
        struct idle_dir *idle; /* owned: run directories kept for the next run of their hook, newest first */
        size_t n_idle;
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

/**
 * A run directory for a run of @key (the hook and the kind of run) under @profile: an idle one
 * that an earlier run of the same key left (renamed to this run's name; *@ret_reused is true,
 * its outputs are empty and its inputs are to be rewritten with workspace_rewrite()), else a
 * new one as workspace_new_run_dir() makes. A NULL @key always gets a new one.
 */
int workspace_acquire_run_dir(struct workspace *w, const char *key, const char *hook_name,
                              const struct ao_sandbox_profile *profile, char **ret_path, bool *ret_reused,
                              struct ao_error *reterr);
/**
 * Done with run directory @path (taken) of @key. With @reusable, and when the directory holds
 * exactly @files, owned as it was made, each a plain file (regular, one link, the run's user),
 * its outputs are emptied and it is kept idle for the next run of @key (at most a few are kept;
 * the oldest goes). Otherwise it is removed. With keep, nothing is removed or reused. @files
 * must be static (idle directories point at it); @profile is compared by address and must
 * outlive the workspace's use of it, as it outlives the run.
 */
void workspace_release_run_dir(struct workspace *w, char *path, const char *key,
                               const struct ao_sandbox_profile *profile, const struct run_files *files,
                               bool reusable);

/** Write @len bytes to @dir/@name (created 0644; given to the profile's uid/gid when it sets one). */
int workspace_write(const char *dir, const char *name, const char *data, size_t len,
                    const struct ao_sandbox_profile *profile, struct ao_error *reterr);
/**
 * Replace the contents of the existing @dir/@name of a reused run directory with @len bytes:
 * only a plain file of the run's user is written (never a link, a FIFO or a second name of
 * another file); anything else is -EPERM.
 */
int workspace_rewrite(const char *dir, const char *name, const char *data, size_t len,
                      const struct ao_sandbox_profile *profile, struct ao_error *reterr);

/**
 * Open the existing output @dir/@name for writing, as a child's stdout (*@ret_fd, close-on-exec):
 * only a plain file of the run's user, as for workspace_rewrite().
 */
int workspace_open_output(const char *dir, const char *name, const struct ao_sandbox_profile *profile,
                          int *ret_fd, struct ao_error *reterr);

/**
 * Read @dir/@name: a regular file, never through a symbolic link, at most
 * @max bytes (-EFBIG beyond). A file the hook removed reads as empty.
 * @ret gets a malloc'd NUL-terminated copy.
 */
int workspace_read(const char *dir, const char *name, size_t max, char **ret, size_t *ret_len,
                   struct ao_error *reterr);

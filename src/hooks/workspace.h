/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/hooks/: the operator's private temp directory and the
 * per-run directories inside it (see hook-run.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ao/error.h"

struct ao_json_writer;
struct ao_sandbox_profile;
struct idle_dir;

/** The files of one kind of run: the inputs the operator writes, the outputs the hook may write. */
struct run_files {
        const char *const *inputs;
        size_t n_inputs;
        const char *const *outputs;
        size_t n_outputs;
};

/* Inputs of the kind of run with the most (an event run's binding context, values, config values). */
#define RUN_INPUTS_MAX 3

/**
 * A run directory, held open. The path is for the hook's environment and for messages; the
 * operator itself only works through the fds, so no path is walked twice and no name the hook
 * could swap is written through: inputs are written through the fds that made them.
 */
struct run_dir {
        char *path;                    /* owned; NULL: none */
        int fd;                        /* owned: the directory */
        const struct run_files *files; /* borrowed: static */
        int inputs[RUN_INPUTS_MAX];    /* owned: files->inputs, open for writing; -1: not made yet */
        ino_t input_inodes[RUN_INPUTS_MAX];
        off_t input_sizes[RUN_INPUTS_MAX]; /* as last written, or as found when the directory was released */
        uid_t uid;              /* whose the directory and its files are: the profile's user, or ours */
        unsigned outputs_clean; /* bit i: files->outputs[i] was read as an empty plain file */
        bool reused;            /* an earlier run's: its inputs are held above, its outputs are empty */
        bool name_safe; /* no process of its last run is left anywhere: the next run may keep its name */
};

struct workspace {
        char *dir;  /* owned: the private directory, mode 0711 */
        int fd;     /* owned: the private directory */
        bool keep;  /* DEBUG_KEEP_TMP_FILES: leave everything in place */
        bool tmpfs; /* the private directory is on tmpfs (directory sizes count entries) */
        unsigned long long runs;
        struct idle_dir *idle; /* owned: run directories kept for the next run of their hook, newest first */
        size_t n_idle;
};

/** Pick the base (TMP_DIR, or /dev/shm when TMP_DIR is not tmpfs and was not chosen), create the private dir. */
int workspace_open(struct workspace *w, const char *tmp_dir, bool tmp_dir_explicit, bool keep,
                   struct ao_error *reterr);
/** Remove the private directory (unless keep) and release @w. */
void workspace_close(struct workspace *w);

/**
 * A run directory (0700, given to the profile's uid/gid when it drops privileges) for a run of
 * @key (the hook and the kind of run) with @files (static) under @profile: an idle one that an
 * earlier run of the same key left (renamed to this run's name; @ret->reused, its outputs empty,
 * its inputs still held), else a new, empty one. A NULL @key always gets a new one.
 */
int workspace_acquire_run_dir(struct workspace *w, const char *key, const char *hook_name,
                              const struct ao_sandbox_profile *profile, const struct run_files *files,
                              struct run_dir *ret, struct ao_error *reterr);
/**
 * Done with run directory @rd of @key (taken: *@rd is reset). With @reusable, and when the
 * directory holds exactly its files, owned as they were made, each a plain file (regular, one
 * link, the run's user), the inputs still the files the operator made, its outputs are emptied
 * and it is kept idle for the next run of @key (at most a few are kept; the oldest goes).
 * Otherwise it is removed. With keep, nothing is removed or reused. @profile is compared by
 * address and must outlive the workspace's use of it, as it outlives the run.
 */
void workspace_release_run_dir(struct workspace *w, struct run_dir *rd, const char *key,
                               const struct ao_sandbox_profile *profile, bool reusable);

/** Writes an input's contents to @out; returns ao_json_writer_error(@out) or another -errno. */
typedef int workspace_producer(struct ao_json_writer *out, const void *userdata);

/**
 * Write input @name (one of @rd's files->inputs) with what @produce writes, flushed to the file
 * in chunks as it is produced: created 0644 (and given to the profile's uid/gid) in a new
 * directory; in a reused one, written over in place through the fd that made it
 * (workspace_release_run_dir() kept the directory only when that was still a plain file with one
 * name, under its name), then cut to its new length. *@ret_len: the bytes written.
 */
int workspace_write_input(struct run_dir *rd, const char *name, const struct ao_sandbox_profile *profile,
                          workspace_producer *produce, const void *userdata, size_t *ret_len,
                          struct ao_error *reterr);
/** Create the empty output @name in @rd's (new) directory, for the hook to write. */
int workspace_create_output(struct run_dir *rd, const char *name, const struct ao_sandbox_profile *profile,
                            struct ao_error *reterr);

/**
 * Open the existing output @name of @rd for writing, as a child's stdout (*@ret_fd,
 * close-on-exec): only a plain file of the run's user, never a link or a FIFO.
 */
int workspace_open_output(const struct run_dir *rd, const char *name,
                          const struct ao_sandbox_profile *profile, int *ret_fd, struct ao_error *reterr);

/**
 * Read @name in @rd: a regular file, never through a symbolic link, at most
 * @max bytes (-EFBIG beyond). A file the hook removed reads as empty.
 * @ret gets a malloc'd NUL-terminated copy.
 */
int workspace_read(struct run_dir *rd, const char *name, size_t max, char **ret, size_t *ret_len,
                   struct ao_error *reterr);

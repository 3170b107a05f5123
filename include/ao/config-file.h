/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The local config file: ConfigMap data (see config-data.h) in a YAML file,
 * for running without a cluster. It is read at start, watched with inotify
 * (the directory, so editors that write a new file and rename it are seen),
 * and re-read on every change; a change that parses is reported with the
 * new data, one that does not is reported as invalid and the previous data
 * stays. Writes (config patches from hooks) replace the file atomically:
 * a temp file in the same directory, fsync, rename, fsync of the directory.
 * The operator's own writes are not reported back as changes.
 *
 * Main thread only.
 */

#include "ao/error.h"

struct cJSON;
struct ao_reactor;
struct ao_config_file;

/** New data (borrowed, valid until the next change) after a change made by someone else. */
typedef void ao_config_file_changed_handler(const struct cJSON *data, void *userdata);
/** The file changed but cannot be used; the previous data stays. */
typedef void ao_config_file_invalid_handler(const struct ao_error *error, void *userdata);

struct ao_config_file_options {
        const char *path; /* the file; it need not exist (empty data until it does) */
        ao_config_file_changed_handler *on_change;
        ao_config_file_invalid_handler *on_invalid;
        void *userdata;
};

/**
 * Read the file and start watching it. An invalid file at start is an error
 * naming it. The handlers are called from the reactor; they may call
 * ao_config_file_set() and ao_config_file_free().
 */
int ao_config_file_open(struct ao_reactor *reactor, const struct ao_config_file_options *options,
                        struct ao_config_file **ret, struct ao_error *reterr);
struct ao_config_file *ao_config_file_free(struct ao_config_file *f);

/** The current data (parsed form, borrowed). */
const struct cJSON *ao_config_file_data(const struct ao_config_file *f);

/**
 * Set key @key to @value (parsed form: a section object or a boolean; NULL
 * removes the key) and write the file atomically. Other keys are kept as
 * they are in the file now (re-read first, so a concurrent edit of another
 * key is not lost). Returns 0 or an error naming the file.
 *
 * The whole file is rewritten (ao_yaml_emit(): sections as mappings, flags
 * as booleans; comments are not kept), unless it holds @value already.
 * on_change is not called: the current data has the change at once, and
 * the watch reports only what others changed (such as that concurrent
 * edit). A file that is invalid now is an error and is left alone.
 */
int ao_config_file_set(struct ao_config_file *f, const char *key, const struct cJSON *value,
                       struct ao_error *reterr);

const char *ao_config_file_path(const struct ao_config_file *f);

/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/config-file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/config-data.h"
#include "ao/reactor.h"
#include "ao/values.h"
#include "ao/yaml.h"

/*
 * The directory is watched, not the file: editors and ao_config_file_set()
 * replace the file by renaming a new one over it, which a watch on the file
 * itself would not survive. Events are filtered by name; one batch of
 * events (everything readable from the inotify fd) leads to at most one
 * re-read.
 *
 * What is reported is decided by content, not by events: the re-read data's
 * canonical JSON is compared with the current one, so the events of our own
 * writes, touch(1) and no-op saves report nothing.
 *
 * Two event patterns would report states the file is only in for a moment:
 *   - open(O_CREAT) of a new file gives IN_CREATE before anything is
 *     written; its IN_CLOSE_WRITE follows, so IN_CREATE of a fresh regular
 *     file (one link) is skipped (a hard link, or a symlink, is read);
 *   - editors that save by renaming the old file away first (vim's backup)
 *     leave no file for a moment: a missing file is reported as empty data
 *     only when it is still missing MISSING_GRACE_USEC later.
 *
 * Kubernetes mounts a ConfigMap volume as symlinks through "..data", which
 * it swaps with a rename: events on that name re-read the file too.
 *
 * Writes are synchronous (mkstemp, write, fsync, rename, fsync of the
 * directory): they happen when a hook patches the config, rarely, and the
 * file is small.
 */

#define INOTIFY_MASK \
        (IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_ONLYDIR)
#define MISSING_GRACE_USEC (250 * AO_USEC_PER_MSEC)
/* The symlink Kubernetes' AtomicWriter replaces in a ConfigMap volume. */
#define KUBERNETES_DATA_LINK "..data"

struct ao_config_file {
        struct ao_reactor *reactor; /* borrowed, outlives the file */
        char *path;                 /* owned */
        char *dir;                  /* owned: the directory watched */
        char *name;                 /* owned: the file's base name */
        ao_config_file_changed_handler *on_change;
        ao_config_file_invalid_handler *on_invalid;
        void *userdata;

        cJSON *data;     /* owned: the current data, parsed form */
        char *canonical; /* owned: ao_json_canonical(data) */
        /* The message last given to on_invalid, so one bad state is reported once; "" after a good read. */
        char last_invalid[AO_ERROR_MSG_MAX];

        int inotify_fd;
        struct ao_source *io;      /* owned */
        struct ao_source *missing; /* owned: MISSING_GRACE_USEC timer, NULL when not armed */
        unsigned dispatching;      /* > 0 while a handler runs: free is deferred */
        bool free_requested;
};

static void json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}

static void json_abort_if_null(const void *p)
{
        if (!p)
                abort(); /* as ao_xmalloc */
}

/*
 * Read and parse the file. A missing file is empty data with *ret_missing
 * set; an empty file or a null document is empty data too.
 */
static int read_data(const char *path, cJSON **ret, bool *ret_missing, struct ao_error *reterr)
{
        _cleanup_(json_deletep) cJSON *raw = NULL;
        struct ao_error err = {0};
        bool missing = false;
        int r = ao_yaml_load_file(path, &raw, &err);
        if (r == -ENOENT) {
                missing = true;
                json_abort_if_null(raw = cJSON_CreateObject());
        } else if (r < 0) {
                return ao_error_set(reterr, r, "%s", err.msg);
        }
        if (cJSON_IsNull(raw)) {
                cJSON_Delete(raw);
                json_abort_if_null(raw = cJSON_CreateObject());
        }
        if (!cJSON_IsObject(raw))
                return ao_error_set(reterr, -EINVAL, "%s: the top level must be a mapping of keys", path);
        if ((r = ao_config_data_parse(raw, path, ret, reterr)) < 0)
                return r;
        *ret_missing = missing;
        return 0;
}

/* Set @key in @data to @value (taken; NULL removes it), keeping the key's place. */
static void set_key(cJSON *data, const char *key, cJSON *value)
{
        if (!value) {
                cJSON_DeleteItemFromObjectCaseSensitive(data, key);
                return;
        }
        if (cJSON_GetObjectItemCaseSensitive(data, key))
                (void) cJSON_ReplaceItemInObjectCaseSensitive(data, key, value);
        else
                (void) cJSON_AddItemToObject(data, key, value);
}

static void destroy(struct ao_config_file *f)
{
        (void) ao_source_free(f->io);
        (void) ao_source_free(f->missing);
        (void) ao_safe_close(f->inotify_fd);
        cJSON_Delete(f->data);
        free(f->canonical);
        free(f->path);
        free(f->dir);
        free(f->name);
        free(f);
}

static int on_missing_timeout(struct ao_source *s, uint64_t now, void *userdata);

/* Arm the grace timer unless it is armed: a stream of events must not push it out forever. */
static void arm_missing_timer(struct ao_config_file *f)
{
        if (f->missing)
                return;
        if (ao_reactor_add_time_relative(f->reactor, &f->missing, MISSING_GRACE_USEC, on_missing_timeout, f) <
            0) {
                f->missing = NULL;
                return; /* the next event retries; without one the old data stays, which is safe */
        }
        (void) ao_source_set_description(f->missing, "config-file-missing");
}

/* Re-read the file and report what changed. @missing_final: the grace period of a missing file is over. */
static void reload(struct ao_config_file *f, bool missing_final)
{
        _cleanup_(json_deletep) cJSON *data = NULL;
        struct ao_error err = {0};
        bool missing = false;

        int r = read_data(f->path, &data, &missing, &err);
        if (r < 0) {
                f->missing = ao_source_free(f->missing);
                if (strcmp(err.msg, f->last_invalid) == 0)
                        return; /* reported already (several events for one bad state) */
                (void) snprintf(f->last_invalid, sizeof(f->last_invalid), "%s", err.msg);
                if (f->on_invalid)
                        f->on_invalid(&err, f->userdata);
                return;
        }
        f->last_invalid[0] = '\0';

        _cleanup_free_ char *canonical = ao_json_canonical(data);
        bool same = strcmp(canonical, f->canonical) == 0;
        if (missing && !missing_final && !same) {
                arm_missing_timer(f);
                return;
        }
        f->missing = ao_source_free(f->missing);
        if (same)
                return;
        cJSON_Delete(f->data);
        free(f->canonical);
        f->data = TAKE_PTR(data);
        f->canonical = TAKE_PTR(canonical);
        if (f->on_change)
                f->on_change(f->data, f->userdata);
}

/* The end of a handler: carry out an ao_config_file_free() called from the user's callback. */
static void dispatch_done(struct ao_config_file *f)
{
        if (--f->dispatching == 0 && f->free_requested)
                destroy(f);
}

static int on_missing_timeout(struct ao_source *s, uint64_t now, void *userdata)
{
        struct ao_config_file *f = userdata;
        (void) now;
        if (s != f->missing)
                return 0;
        f->missing = ao_source_free(f->missing);
        f->dispatching++;
        reload(f, true);
        dispatch_done(f);
        return 0;
}

/* Whether an event on our name can mean new content. */
static bool event_matters(const struct ao_config_file *f, const struct inotify_event *ev)
{
        struct stat st;
        if (!(ev->mask & IN_CREATE) || (ev->mask & ~(uint32_t) (IN_CREATE | IN_ISDIR)))
                return true;
        /* A new regular file is being written: its IN_CLOSE_WRITE follows. A hard link is complete. */
        if (lstat(f->path, &st) < 0)
                return true;
        return !S_ISREG(st.st_mode) || st.st_nlink > 1;
}

/* Read every queued event; true when one of them concerns the file. */
static int drain_events(struct ao_config_file *f, bool *ret_relevant)
{
        /* Aligned as inotify(7) asks: the events are read in place. */
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool relevant = false;

        for (;;) {
                ssize_t n = read(f->inotify_fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n < 0)
                        return ao_negative_errno();
                if (n == 0)
                        break;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;
                        p += sizeof(*ev) + ev->len;
                        /* The directory itself went away (IN_IGNORED follows), or events were lost. */
                        if (ev->mask & (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_IGNORED))
                                relevant = true;
                        else if (ev->len > 0 && strcmp(ev->name, f->name) == 0)
                                relevant = relevant || event_matters(f, ev);
                        else if (ev->len > 0 && strcmp(ev->name, KUBERNETES_DATA_LINK) == 0)
                                relevant = true;
                }
        }
        *ret_relevant = relevant;
        return 0;
}

static int on_inotify(struct ao_source *s, int fd, uint32_t revents, void *userdata)
{
        struct ao_config_file *f = userdata;
        bool relevant = false;
        (void) s;
        (void) fd;
        (void) revents;

        int r = drain_events(f, &relevant);
        if (r < 0)
                return r; /* the reactor disables the source and logs it */
        if (!relevant)
                return 0;
        f->dispatching++;
        reload(f, false);
        dispatch_done(f);
        return 0;
}

int ao_config_file_open(struct ao_reactor *reactor, const struct ao_config_file_options *options,
                        struct ao_config_file **ret, struct ao_error *reterr)
{
        struct ao_config_file *f = NULL;
        bool missing = false;
        int r;

        if (!reactor || !options || !options->path || !*options->path)
                return ao_error_set(reterr, -EINVAL, "config file: no path given");
        const char *path = options->path;
        const char *slash = strrchr(path, '/');
        if (slash && slash[1] == '\0')
                return ao_error_set(reterr, -EINVAL, "config file '%s': the path names a directory", path);

        f = ao_xcalloc(1, sizeof(*f));
        *f = (struct ao_config_file){
            .reactor = reactor,
            .path = ao_xstrdup(path),
            .dir = slash ? (slash == path ? ao_xstrdup("/") : ao_xstrndup(path, (size_t) (slash - path)))
                         : ao_xstrdup("."),
            .name = ao_xstrdup(slash ? slash + 1 : path),
            .on_change = options->on_change,
            .on_invalid = options->on_invalid,
            .userdata = options->userdata,
            .inotify_fd = -EBADF,
        };

        /* Watch first, then read: a change in between is seen by the watch. */
        f->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (f->inotify_fd < 0) {
                r = ao_negative_errno();
                (void) ao_error_set(reterr, r, "cannot watch '%s': inotify_init1: %s", path, strerror(-r));
                goto fail;
        }
        if (inotify_add_watch(f->inotify_fd, f->dir, INOTIFY_MASK) < 0) {
                r = ao_negative_errno();
                (void) ao_error_set(reterr, r, "cannot watch '%s': directory '%s': %s", path, f->dir,
                                    strerror(-r));
                goto fail;
        }
        if ((r = read_data(path, &f->data, &missing, reterr)) < 0)
                goto fail;
        f->canonical = ao_json_canonical(f->data);

        if ((r = ao_reactor_add_io(reactor, &f->io, f->inotify_fd, AO_IO_IN, on_inotify, f)) < 0) {
                (void) ao_error_set(reterr, r, "cannot watch '%s': %s", path, strerror(-r));
                goto fail;
        }
        (void) ao_source_set_description(f->io, "config-file");
        *ret = f;
        return 0;
fail:
        destroy(f);
        return r;
}

struct ao_config_file *ao_config_file_free(struct ao_config_file *f)
{
        if (!f)
                return NULL;
        if (f->dispatching > 0) {
                /* Called from on_change or on_invalid: the handler that called them frees it. */
                f->free_requested = true;
                f->io = ao_source_free(f->io);
                f->missing = ao_source_free(f->missing);
                return NULL;
        }
        destroy(f);
        return NULL;
}

const struct cJSON *ao_config_file_data(const struct ao_config_file *f)
{
        return f->data;
}

const char *ao_config_file_path(const struct ao_config_file *f)
{
        return f->path;
}

/* write(2) all of @text, retrying short writes. */
static int write_all(int fd, const char *text, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, text, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return ao_negative_errno();
                text += n;
                len -= (size_t) n;
        }
        return 0;
}

/*
 * After the rename, make it durable. Some file systems refuse fsync on a
 * directory (EINVAL): the new content is in place regardless.
 */
static void fsync_directory(const char *dir)
{
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0)
                (void) fsync(fd);
}

/* Replace the file with @text: a temp file in its directory, same mode, fsync, rename, fsync of the dir. */
static int write_atomic(const struct ao_config_file *f, const char *text, struct ao_error *reterr)
{
        _cleanup_free_ char *tmp = ao_xasprintf("%s/.%s.XXXXXX", f->dir, f->name);
        _cleanup_close_ int fd = -EBADF;
        const char *step;
        struct stat st;
        mode_t mode = 0644;
        int r;

        bool exists = stat(f->path, &st) == 0;
        if (exists)
                mode = st.st_mode & 07777;

        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0) {
                r = ao_negative_errno();
                return ao_error_set(reterr, r, "cannot write '%s': cannot create a file in '%s': %s", f->path,
                                    f->dir, strerror(-r));
        }
        /* Keep the owner when we may (root); otherwise the file becomes ours, as with any editor. */
        if (exists && (st.st_uid != geteuid() || st.st_gid != getegid()))
                (void) fchown(fd, st.st_uid, st.st_gid);
        step = "fchmod"; /* after fchown, which clears the set-id bits */
        if (fchmod(fd, mode) < 0)
                goto fail_errno;
        step = "write";
        if ((r = write_all(fd, text, strlen(text))) < 0)
                goto fail;
        step = "fsync";
        if (fsync(fd) < 0)
                goto fail_errno;
        step = "close";
        if (close(TAKE_FD(fd)) < 0)
                goto fail_errno;
        step = "rename";
        if (rename(tmp, f->path) < 0)
                goto fail_errno;

        fsync_directory(f->dir);
        return 0;

fail_errno:
        r = ao_negative_errno();
fail:
        (void) unlink(tmp);
        return ao_error_set(reterr, r, "cannot write '%s': %s: %s", f->path, step, strerror(-r));
}

/* @value must fit @key: a section an object, an enabled flag a boolean, maintenance a string. */
static int check_value(const struct ao_config_file *f, const char *key, const cJSON *value,
                       struct ao_error *reterr)
{
        struct ao_error err = {0};
        enum ao_values_key_kind kind = ao_values_key_classify(key, NULL, &err);
        const char *want = NULL;

        switch (kind) {
        case AO_VALUES_KEY_GLOBAL:
        case AO_VALUES_KEY_MODULE:
                if (value && !cJSON_IsObject(value))
                        want = "a mapping";
                break;
        case AO_VALUES_KEY_ENABLED:
                if (value && !cJSON_IsBool(value))
                        want = "a boolean";
                break;
        case AO_VALUES_KEY_MAINTENANCE:
                if (value && !cJSON_IsString(value))
                        want = "a string";
                break;
        default:
                return ao_error_set(reterr, -EINVAL, "cannot write '%s': %s", f->path, err.msg);
        }
        if (want)
                return ao_error_set(reterr, -EINVAL, "cannot write '%s': key '%s' must be %s", f->path, key,
                                    want);
        return 0;
}

int ao_config_file_set(struct ao_config_file *f, const char *key, const struct cJSON *value,
                       struct ao_error *reterr)
{
        _cleanup_(json_deletep) cJSON *fresh = NULL;
        bool missing = false;
        int r;

        if ((r = check_value(f, key, value, reterr)) < 0)
                return r;
        /* What the file holds now, so that edits to other keys not seen yet are kept. */
        if ((r = read_data(f->path, &fresh, &missing, reterr)) < 0) {
                (void) ao_error_prefix(reterr, "cannot write '%s'", f->path);
                return r;
        }

        _cleanup_free_ char *before = ao_json_canonical(fresh);
        cJSON *copy = NULL;
        if (value)
                json_abort_if_null(copy = cJSON_Duplicate(value, true));
        set_key(fresh, key, copy);
        _cleanup_free_ char *after = ao_json_canonical(fresh);
        /* Setting what the file has already leaves it alone, comments and formatting included. */
        if (strcmp(before, after) != 0) {
                _cleanup_free_ char *text = ao_yaml_emit(fresh);
                if ((r = write_atomic(f, text, reterr)) < 0)
                        return r;
        }

        /*
         * Our change goes on top of the data the caller knows, not the fresh one: the
         * events of this write then report exactly the edits of others it carried along.
         */
        copy = NULL;
        if (value)
                json_abort_if_null(copy = cJSON_Duplicate(value, true));
        set_key(f->data, key, copy);
        free(f->canonical);
        f->canonical = ao_json_canonical(f->data);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Temp directories for hook runs.
 *
 * The operator makes one private directory per process,
 * "<base>/addon-operator.<pid>.XXXXXX" (mkdtemp, so nobody can have
 * planted it), mode 0711 so that hooks running under another uid can reach
 * their own run directory without being able to list the others. Runs get
 * "<n>.<hook>.XXXXXX" inside it, mode 0700. Directories of operators that no
 * longer run are removed at start-up, so a crash leaves nothing behind for
 * long.
 *
 * Creating and removing a run directory with its seven files is most of
 * what a run costs the operator (tmpfs inodes made and torn down: ~100 us
 * against ~40 us for rewriting them, docs/PERFORMANCE.md). So a run that
 * went cleanly leaves its directory idle, outputs emptied, for the next run
 * of the same hook, which renames it to its own name and rewrites the
 * inputs in place. Only the same hook (and kind of run, and profile) gets
 * it back: whatever a hook could leave in there, only that hook sees. A
 * few idle directories are kept, the oldest go first.
 *
 * A run directory is held open (struct run_dir) from its creation until it
 * is removed, idle times included: the directory's fd and the fds of the
 * inputs the operator made. Every file operation is relative to the
 * directory's fd (no path walked from the root), and inputs are written
 * again through the fds that created them, so no name is opened twice; a
 * name the hook swapped for a link or another file is simply not its input
 * any more, and its directory is not kept.
 */
#include "workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/json-writer.h"
#include "ao/log.h"
#include "ao/sandbox.h"

#define PRIVATE_PREFIX  "addon-operator."
#define SHM_DIR         "/dev/shm"
#define HOOK_NAME_CHARS 48
/* Idle run directories kept: enough for the hooks that run over and over (schedules, events) on many queues. */
#define IDLE_MAX 16

struct idle_dir {
        struct run_dir rd; /* owned: closed, its fds still held */
        char *key;         /* owned */
        const struct ao_sandbox_profile *profile;
        struct idle_dir *next;
};

static bool on_tmpfs(const char *path)
{
        struct statfs st;
        return statfs(path, &st) == 0 && st.f_type == TMPFS_MAGIC;
}

/* mkdir -p; the last component gets @mode, missing parents 0755. */
static int make_dirs(const char *path, mode_t mode)
{
        _cleanup_free_ char *copy = ao_xstrdup(path);
        for (char *p = copy + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(copy, 0755) < 0 && errno != EEXIST)
                        return ao_negative_errno();
                *p = '/';
        }
        if (mkdir(copy, mode) < 0 && errno != EEXIST)
                return ao_negative_errno();
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        (void) st, (void) ftw;
        if (type == FTW_DP || type == FTW_D || type == FTW_DNR)
                (void) rmdir(path);
        else
                (void) unlink(path);
        return 0;
}

/* rm -rf without following symbolic links or crossing into other file systems. */
static void remove_tree(const char *path)
{
        (void) nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
        if (access(path, F_OK) == 0)
                ao_log(AO_LOG_WARN, "hooks: could not remove all of '%s', ignoring", path);
}

/* "addon-operator.<pid>.XXXXXX" of an operator that has exited, owned by us. */
static bool is_stale_private_dir(int dirfd, const char *name)
{
        unsigned long pid;
        int end = 0;
        if (sscanf(name, PRIVATE_PREFIX "%lu.%n", &pid, &end) != 1 || end == 0 || strlen(name + end) != 6)
                return false;
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
            st.st_uid != geteuid())
                return false;
        /* Our own pid: a previous operator in a container where we are PID 1 again. */
        return (pid_t) pid == getpid() || (kill((pid_t) pid, 0) < 0 && errno == ESRCH);
}

static void remove_stale_private_dirs(const char *base)
{
        DIR *d = opendir(base);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d)))
                if (is_stale_private_dir(dirfd(d), de->d_name)) {
                        _cleanup_free_ char *path = ao_xasprintf("%s/%s", base, de->d_name);
                        ao_log(AO_LOG_INFO, "hooks: removing '%s' left by an earlier operator", path);
                        remove_tree(path);
                }
        closedir(d);
}

/* TMP_DIR when it is tmpfs or the user chose it; /dev/shm when that is tmpfs; else TMP_DIR anyway. */
static const char *choose_base(const char *tmp_dir, bool explicit)
{
        if (explicit || on_tmpfs(tmp_dir))
                return tmp_dir;
        if (on_tmpfs(SHM_DIR) && access(SHM_DIR, W_OK | X_OK) == 0)
                return SHM_DIR;
        return tmp_dir;
}

int workspace_open(struct workspace *w, const char *tmp_dir, bool tmp_dir_explicit, bool keep,
                   struct ao_error *reterr)
{
        int r = make_dirs(tmp_dir, 0755);
        if (r < 0 && tmp_dir_explicit)
                return ao_error_set(reterr, r, "hooks: cannot create the temp dir '%s': %s", tmp_dir,
                                    strerror(-r));
        const char *base = r < 0 ? SHM_DIR : choose_base(tmp_dir, tmp_dir_explicit);
        remove_stale_private_dirs(base);

        char *dir = ao_xasprintf("%s/" PRIVATE_PREFIX "%d.XXXXXX", base, (int) getpid());
        if (!mkdtemp(dir)) {
                r = ao_negative_errno();
                ao_error_set(reterr, r, "hooks: cannot create a private directory in '%s': %s", base,
                             strerror(-r));
                free(dir);
                return r;
        }
        if (chmod(dir, 0711) < 0) {
                r = ao_negative_errno();
                ao_error_set(reterr, r, "hooks: cannot chmod '%s': %s", dir, strerror(-r));
                (void) rmdir(dir);
                free(dir);
                return r;
        }
        /* Held for the renames of reused run directories: no walk from the root for each. */
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
                r = ao_negative_errno();
                ao_error_set(reterr, r, "hooks: cannot open '%s': %s", dir, strerror(-r));
                (void) rmdir(dir);
                free(dir);
                return r;
        }
        *w = (struct workspace){.dir = dir, .fd = fd, .keep = keep, .tmpfs = on_tmpfs(dir)};
        return 0;
}

/* The user a run directory and its files belong to: the profile's, or ours. */
static uid_t owner_of(const struct ao_sandbox_profile *profile)
{
        /* The operator never changes its own uid: ask once, not a system call per file. */
        static uid_t euid = (uid_t) -1;
        if (euid == (uid_t) -1)
                euid = geteuid();
        return profile && profile->set_uid ? profile->uid : euid;
}

/* A regular file with one name, of @uid: writing it in place changes nothing but that file. */
static bool is_plain_file(const struct stat *st, uid_t uid)
{
        return S_ISREG(st->st_mode) && st->st_nlink == 1 && st->st_uid == uid;
}

/* --- run directories --------------------------------------------------------------------------- */

static void run_dir_init(struct run_dir *rd, char *path, int fd, const struct run_files *files, uid_t uid)
{
        *rd = (struct run_dir){.path = path, .fd = fd, .files = files, .uid = uid};
        for (size_t i = 0; i < RUN_INPUTS_MAX; i++)
                rd->inputs[i] = -1;
}

/* Close what @rd holds and reset it (the directory itself stays). */
static void run_dir_close(struct run_dir *rd)
{
        for (size_t i = 0; i < RUN_INPUTS_MAX; i++)
                (void) ao_safe_close(rd->inputs[i]);
        (void) ao_safe_close(rd->fd);
        free(rd->path);
        run_dir_init(rd, NULL, -1, NULL, 0);
}

/* Remove @rd's directory (unless keep) and close it: its files by name, then anything else the hook left. */
static void run_dir_remove(struct workspace *w, struct run_dir *rd)
{
        const struct run_files *f = rd->files;
        if (!w->keep && rd->path) {
                /*
                 * The files the protocol made, then the directory: a fraction of the system calls of a
                 * tree walk. Only when the hook left something else behind does rmdir fail and the
                 * careful walk run.
                 */
                for (size_t i = 0; f && rd->fd >= 0 && i < f->n_inputs + f->n_outputs; i++)
                        (void) unlinkat(rd->fd, i < f->n_inputs ? f->inputs[i] : f->outputs[i - f->n_inputs],
                                        0);
                if (rmdir(rd->path) < 0 && errno != ENOENT)
                        remove_tree(rd->path);
        }
        run_dir_close(rd);
}

static struct idle_dir *idle_free(struct workspace *w, struct idle_dir *d, bool remove)
{
        struct idle_dir *next = d->next;
        if (remove)
                run_dir_remove(w, &d->rd);
        else
                run_dir_close(&d->rd);
        free(d->key);
        free(d);
        return next;
}

void workspace_close(struct workspace *w)
{
        /* The tree walk takes the idle run directories with it. */
        if (w->dir && !w->keep)
                remove_tree(w->dir);
        for (struct idle_dir *d = w->idle; d;)
                d = idle_free(w, d, false);
        (void) ao_safe_close(w->fd);
        free(w->dir);
        *w = (struct workspace){.fd = -1};
}

/* Hand @fd (a run directory or one of its files) to the profile's user, when it drops privileges. */
static int give_to_profile(int fd, const struct ao_sandbox_profile *profile)
{
        if (!profile || (!profile->set_uid && !profile->set_gid))
                return 0;
        uid_t uid = profile->set_uid ? profile->uid : (uid_t) -1;
        gid_t gid = profile->set_gid ? profile->gid : (gid_t) -1;
        return fchown(fd, uid, gid) < 0 ? ao_negative_errno() : 0;
}

/* A file-name-safe version of the hook name, for people reading the directory. */
static void safe_name(const char *hook_name, char out[HOOK_NAME_CHARS + 1])
{
        size_t n = 0;
        for (const char *p = hook_name; *p && n < HOOK_NAME_CHARS; p++)
                out[n++] = (char) ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                                           (*p >= '0' && *p <= '9') || *p == '.' || *p == '_'
                                       ? *p
                                       : '-');
        out[n] = '\0';
}

/* "<private dir>/<run number>.<hook>.XXXXXX": the next run's directory name, template still to fill. */
static char *run_dir_template(struct workspace *w, const char *hook_name)
{
        char safe[HOOK_NAME_CHARS + 1];
        safe_name(hook_name, safe);
        return ao_xasprintf("%s/%llu.%s.XXXXXX", w->dir, ++w->runs, safe);
}

static int new_run_dir(struct workspace *w, const char *hook_name, const struct ao_sandbox_profile *profile,
                       const struct run_files *files, struct run_dir *ret, struct ao_error *reterr)
{
        char *path = run_dir_template(w, hook_name);
        int r = 0, fd = -1;
        if (!mkdtemp(path))
                r = ao_negative_errno();
        /* Ours to open: nobody else can write in the private directory. */
        else if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) < 0 ||
                 (r = give_to_profile(fd, profile)) < 0) {
                r = r < 0 ? r : ao_negative_errno();
                (void) ao_safe_close(fd);
                (void) rmdir(path);
        }
        if (r < 0) {
                ao_error_set(reterr, r, "cannot create a run directory in '%s': %s", w->dir, strerror(-r));
                free(path);
                return r;
        }
        run_dir_init(ret, path, fd, files, owner_of(profile));
        return 0;
}

/* --- reusing run directories ------------------------------------------------------------------- */

static bool is_listed(const char *name, const struct run_files *files)
{
        for (size_t i = 0; i < files->n_inputs; i++)
                if (strcmp(name, files->inputs[i]) == 0)
                        return true;
        for (size_t i = 0; i < files->n_outputs; i++)
                if (strcmp(name, files->outputs[i]) == 0)
                        return true;
        return false;
}

/* Whether @dirfd lists nothing but names of @files, as many as there are (a run's handful: one getdents64). */
static bool lists_exactly(int dirfd, const struct run_files *files)
{
        char buf[4096] __attribute__((aligned(8)));
        size_t seen = 0;
        if (lseek(dirfd, 0, SEEK_SET) < 0) /* an idle directory's fd was read by the run before */
                return false;
        for (;;) {
                ssize_t len = getdents64(dirfd, buf, sizeof(buf));
                if (len < 0)
                        return false;
                if (len == 0)
                        return seen == files->n_inputs + files->n_outputs;
                for (ssize_t off = 0; off < len;) {
                        const struct dirent64 *de = (const struct dirent64 *) (buf + off);
                        off += de->d_reclen;
                        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                                continue;
                        if (!is_listed(de->d_name, files))
                                return false;
                        seen++;
                }
        }
}

/*
 * Whether the directory (@st: its fstat) has as many entries as @files has names. tmpfs counts
 * them in the size (20 bytes each, "." and ".." included), which spares reading the directory;
 * the callers check each name, so the right count means nothing else is there. Anywhere else, or
 * should that size ever mean something else, the listing decides.
 */
static bool holds_as_many(const struct workspace *w, int dirfd, const struct stat *st,
                          const struct run_files *files)
{
        enum {
                TMPFS_DIRENT_SIZE = 20
        };
        size_t n = files->n_inputs + files->n_outputs;
        if (w->tmpfs && st->st_size == (off_t) (TMPFS_DIRENT_SIZE * (n + 2)))
                return true;
        return lists_exactly(dirfd, files);
}

/*
 * Input @i is still, under its name, the plain file the operator made and holds; its size is noted
 * for the next write. Checked here, once no process of the run is left, rather than before each
 * write: the writes go through the held fd, never through a name.
 */
static bool input_intact(struct run_dir *rd, size_t i, uid_t uid)
{
        struct stat st;
        if (rd->inputs[i] < 0 || fstatat(rd->fd, rd->files->inputs[i], &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            st.st_ino != rd->input_inodes[i] || !is_plain_file(&st, uid))
                return false;
        rd->input_sizes[i] = st.st_size;
        return true;
}

/*
 * Leave output @i empty for the next run; false when it is not a plain file of @uid. One that
 * workspace_read() found so is not looked at again: no process of the run is left to change it.
 */
static bool empty_output(const struct run_dir *rd, size_t i, uid_t uid)
{
        if (rd->outputs_clean & (1u << i))
                return true;
        int dirfd = rd->fd;
        const char *name = rd->files->outputs[i];
        struct stat st, now;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !is_plain_file(&st, uid))
                return false;
        if (st.st_size == 0)
                return true;
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        /* The same file as checked: a name swapped in between is refused, not truncated. */
        return fd >= 0 && fstat(fd, &now) == 0 && now.st_ino == st.st_ino && is_plain_file(&now, uid) &&
               ftruncate(fd, 0) == 0;
}

/* Still the 0700 directory of @uid it was made as, holding exactly its files, inputs intact, outputs emptied. */
static bool make_reusable(const struct workspace *w, struct run_dir *rd, uid_t uid)
{
        const struct run_files *files = rd->files;
        struct stat st;
        if (fstat(rd->fd, &st) < 0 || (st.st_mode & 07777) != 0700 || st.st_uid != uid ||
            files->n_inputs > RUN_INPUTS_MAX || !holds_as_many(w, rd->fd, &st, files))
                return false;
        for (size_t i = 0; i < files->n_inputs; i++)
                if (!input_intact(rd, i, uid))
                        return false;
        for (size_t i = 0; i < files->n_outputs; i++)
                if (!empty_output(rd, i, uid))
                        return false;
        return true;
}

/* The last component of @path (a run directory's: always below the private directory). */
static const char *base_name(const char *path)
{
        const char *slash = strrchr(path, '/');
        return slash ? slash + 1 : path;
}

/* The idle directory of @key and @profile, unlinked from the list; NULL when there is none. */
static struct idle_dir *take_idle(struct workspace *w, const char *key,
                                  const struct ao_sandbox_profile *profile)
{
        for (struct idle_dir **pp = &w->idle; *pp; pp = &(*pp)->next) {
                struct idle_dir *d = *pp;
                if (d->profile == profile && strcmp(d->key, key) == 0) {
                        *pp = d->next;
                        w->n_idle--;
                        return d;
                }
        }
        return NULL;
}

/* @ret takes over idle @d's directory, renamed to @path (owned) or, when NULL, under its old name. */
static void take_over(struct workspace *w, struct idle_dir *d, struct run_dir *ret, char *path)
{
        *ret = d->rd;
        if (path) {
                free(ret->path);
                ret->path = path;
        }
        ret->reused = true;
        ret->name_safe = false;
        ret->outputs_clean = 0;
        run_dir_init(&d->rd, NULL, -1, NULL, 0);
        idle_free(w, d, false);
}

int workspace_acquire_run_dir(struct workspace *w, const char *key, const char *hook_name,
                              const struct ao_sandbox_profile *profile, const struct run_files *files,
                              struct run_dir *ret, struct ao_error *reterr)
{
        struct idle_dir *d = key ? take_idle(w, key, profile) : NULL;
        if (d && d->rd.files == files && d->rd.name_safe) {
                /* No process of the run before is left anywhere to use the old name: it may stay. */
                take_over(w, d, ret, NULL);
                return 0;
        }
        if (d && d->rd.files == files) {
                /*
                 * This run's own name, as a new directory would have: a process of an earlier run
                 * that still writes to the old paths finds nothing there. The run number makes the
                 * name unique; RENAME_NOREPLACE makes sure of it. The fds follow the directory.
                 */
                char *path = run_dir_template(w, hook_name);
                memcpy(path + strlen(path) - 6, "reused", 6);
                if (renameat2(w->fd, base_name(d->rd.path), w->fd, base_name(path), RENAME_NOREPLACE) == 0) {
                        take_over(w, d, ret, path);
                        return 0;
                }
                free(path);
        }
        if (d)
                idle_free(w, d, true);
        return new_run_dir(w, hook_name, profile, files, ret, reterr);
}

void workspace_release_run_dir(struct workspace *w, struct run_dir *rd, const char *key,
                               const struct ao_sandbox_profile *profile, bool reusable)
{
        if (w->keep || !key || !reusable || !make_reusable(w, rd, owner_of(profile))) {
                run_dir_remove(w, rd);
                return;
        }
        struct idle_dir *d = ao_xcalloc(1, sizeof(*d));
        *d = (struct idle_dir){.rd = *rd, .key = ao_xstrdup(key), .profile = profile, .next = w->idle};
        d->rd.reused = false;
        run_dir_init(rd, NULL, -1, NULL, 0);
        w->idle = d;
        if (++w->n_idle <= IDLE_MAX)
                return;
        /* Too many: the one idle longest goes. */
        struct idle_dir **pp = &w->idle;
        while ((*pp)->next)
                pp = &(*pp)->next;
        idle_free(w, *pp, true);
        *pp = NULL;
        w->n_idle--;
}

/* --- the files ----------------------------------------------------------------------------------- */

/* A new, empty file @name in @rd's directory for the run's user (*@ret_fd open for writing). */
static int create_file(const struct run_dir *rd, const char *name, const struct ao_sandbox_profile *profile,
                       int *ret_fd)
{
        /* 0644 is enough for outputs too: the run directory, and every file in it, is the hook's user's. */
        _cleanup_close_ int fd =
            openat(rd->fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return ao_negative_errno();
        int r = give_to_profile(fd, profile);
        if (r < 0)
                return r;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static ssize_t input_index(const struct run_files *files, const char *name)
{
        for (size_t i = 0; i < files->n_inputs && i < RUN_INPUTS_MAX; i++)
                if (strcmp(files->inputs[i], name) == 0)
                        return (ssize_t) i;
        return -1;
}

/* Input @i made (a new directory's) or held already (a reused one's, checked when it was released). */
static int hold_input(struct run_dir *rd, size_t i, const struct ao_sandbox_profile *profile)
{
        if (rd->inputs[i] >= 0)
                return 0;
        int r = create_file(rd, rd->files->inputs[i], profile, &rd->inputs[i]);
        struct stat st;
        if (r >= 0 && fstat(rd->inputs[i], &st) < 0)
                r = ao_negative_errno();
        if (r < 0)
                return r;
        rd->input_inodes[i] = st.st_ino;
        rd->input_sizes[i] = 0;
        return 0;
}

int workspace_write_input(struct run_dir *rd, const char *name, const struct ao_sandbox_profile *profile,
                          workspace_producer *produce, const void *userdata, size_t *ret_len,
                          struct ao_error *reterr)
{
        ssize_t i = input_index(rd->files, name);
        int r = i < 0 ? -EINVAL : hold_input(rd, (size_t) i, profile);
        size_t len = 0;
        /*
         * Over the old contents, then cut what is left of them: the inputs of a hook's runs are
         * mostly the same size, and truncating first would free the tmpfs pages only to allocate
         * them again (ftruncate was 7 % of the operator's time per run).
         */
        if (r >= 0) {
                struct ao_json_writer w;
                ao_json_writer_init(&w, rd->inputs[i]);
                r = produce(&w, userdata);
                int f = ao_json_writer_finish(&w, &len);
                ao_json_writer_done(&w);
                if (r >= 0)
                        r = f;
        }
        if (r >= 0 && (size_t) rd->input_sizes[i] > len && ftruncate(rd->inputs[i], (off_t) len) < 0)
                r = ao_negative_errno();
        if (r < 0)
                return ao_error_set(reterr, r, "cannot write '%s/%s': %s", rd->path, name, strerror(-r));
        rd->input_sizes[i] = (off_t) len;
        *ret_len = len;
        return 0;
}

int workspace_create_output(struct run_dir *rd, const char *name, const struct ao_sandbox_profile *profile,
                            struct ao_error *reterr)
{
        int fd = -1;
        int r = create_file(rd, name, profile, &fd);
        (void) ao_safe_close(fd);
        if (r < 0)
                return ao_error_set(reterr, r, "cannot write '%s/%s': %s", rd->path, name, strerror(-r));
        return 0;
}

int workspace_open_output(const struct run_dir *rd, const char *name,
                          const struct ao_sandbox_profile *profile, int *ret_fd, struct ao_error *reterr)
{
        /* Never through a link, never a FIFO: O_NONBLOCK keeps one from stalling the loop before it is refused. */
        _cleanup_close_ int fd = openat(rd->fd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        struct stat st;
        int r = fd < 0 || fstat(fd, &st) < 0 ? ao_negative_errno() : 0;
        if (r >= 0 && !is_plain_file(&st, owner_of(profile)))
                r = -EPERM;
        if (r < 0)
                return ao_error_set(reterr, r, "cannot open '%s/%s': %s", rd->path, name, strerror(-r));
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Output @name of @rd was seen as @st: note when it is fit for the next run as it is (see empty_output()). */
static void note_output(struct run_dir *rd, const char *name, const struct stat *st)
{
        for (size_t i = 0; i < rd->files->n_outputs && i < 8 * sizeof(rd->outputs_clean); i++)
                if (strcmp(rd->files->outputs[i], name) == 0 && is_plain_file(st, rd->uid))
                        rd->outputs_clean |= 1u << i;
}

int workspace_read(struct run_dir *rd, const char *name, size_t max, char **ret, size_t *ret_len,
                   struct ao_error *reterr)
{
        /* Most outputs stay empty: one lstat says so (a symlink or FIFO goes on to the checks below). */
        struct stat lst;
        if (fstatat(rd->fd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(lst.st_mode) &&
            lst.st_size == 0) {
                note_output(rd, name, &lst);
                *ret = ao_xstrdup("");
                *ret_len = 0;
                return 0;
        }
        /* O_NONBLOCK: a FIFO planted by the hook must not stall the loop (and is refused below). */
        _cleanup_close_ int fd = openat(rd->fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0 && errno == ENOENT) {
                *ret = ao_xstrdup("");
                *ret_len = 0;
                return 0;
        }
        if (fd < 0)
                return ao_error_set(reterr, ao_negative_errno(), "%s: cannot open: %s", name,
                                    errno == ELOOP ? "it is a symbolic link" : strerror(errno));
        struct stat st;
        if (fstat(fd, &st) < 0)
                return ao_error_set(reterr, ao_negative_errno(), "%s: %s", name, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return ao_error_set(reterr, -EINVAL, "%s: not a regular file", name);
        if ((uint64_t) st.st_size > max)
                return ao_error_set(reterr, -EFBIG, "%s: %lld bytes, more than the %zu allowed", name,
                                    (long long) st.st_size, max);
        char *buf = ao_xmalloc((size_t) st.st_size + 1);
        size_t len = 0;
        for (;;) {
                ssize_t n = read(fd, buf + len, (size_t) st.st_size + 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int r = ao_negative_errno();
                        free(buf);
                        return ao_error_set(reterr, r, "%s: %s", name, strerror(-r));
                }
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len > (size_t) st.st_size) {
                        /* Still being written by a process the hook left behind. */
                        free(buf);
                        return ao_error_set(reterr, -EFBIG, "%s: grew while being read", name);
                }
        }
        buf[len] = '\0';
        *ret = buf;
        *ret_len = len;
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parse one profile document (docs/SANDBOX.md, "File format") into a
 * struct ao_sandbox_profile, compiling its seccomp section on the way.
 *
 * The parser is strict: unknown keys, wrong types and unknown syscall
 * names are errors naming the file and the key path. A typo in a security
 * policy must stop the operator, not quietly weaken the policy.
 */
#include "ao/sandbox.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ao/alloc.h"
#include "ao/yaml.h"
#include "internal.h"

/* Real profiles are a few KiB; the caps keep a hostile file from costing more than a moment. */
#define PROFILE_TEXT_MAX (256u * 1024)
#define RULES_MAX        1024
#define SYSCALL_NAME_MAX 64
#define PROFILE_NAME_MAX 128
/* 2^53: the largest integer every YAML number (a double in cJSON) holds exactly. */
#define EXACT_INT_MAX 9007199254740992.0

struct parser {
        const char *filename; /* for messages */
        struct ao_error *reterr;
        struct ao_sandbox_policy policy;
        size_t rules_cap;
};

static void cjson_deletep(cJSON **p)
{
        cJSON_Delete(*p);
}

/* ---- helpers shared with the other files of sandbox/ ----------------------- */

bool sandbox_name_valid(const char *name)
{
        size_t len = strlen(name);
        if (len == 0 || len > PROFILE_NAME_MAX)
                return false;
        return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-_.") == len;
}

const char *sandbox_escape(const char *s, char *buf, size_t size)
{
        static const char hex[] = "0123456789abcdef";
        size_t o = 0;

        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;
                char esc[4] = {c, 0, 0, 0};
                size_t n = 1;
                if (c < 0x20 || c == 0x7f) {
                        esc[0] = '\\', esc[1] = 'x', esc[2] = hex[c >> 4], esc[3] = hex[c & 0xf];
                        n = 4;
                } else if (c == '\\' || c == '\'') {
                        esc[0] = '\\', esc[1] = (char) c;
                        n = 2;
                }
                /* Keep room for "..." and the NUL. */
                if (o + n + 4 > size) {
                        memcpy(buf + o, "...", 3);
                        o += 3;
                        break;
                }
                memcpy(buf + o, esc, n);
                o += n;
        }
        buf[o] = '\0';
        return buf;
}

/* ---- messages ---------------------------------------------------------------- */

static int fail(struct parser *p, const char *path, const char *fmt, ...) _printf_(3, 4);
static int fail(struct parser *p, const char *path, const char *fmt, ...)
{
        char msg[AO_ERROR_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (path[0])
                return ao_error_set(p->reterr, -EINVAL, "%s: %s: %s", p->filename, path, msg);
        return ao_error_set(p->reterr, -EINVAL, "%s: %s", p->filename, msg);
}

static int check_keys(struct parser *p, const cJSON *obj, const char *path, const char *const *known)
{
        const cJSON *item;

        cJSON_ArrayForEach(item, obj)
        {
                const char *key = item->string ? item->string : "";
                size_t i;
                for (i = 0; known[i]; i++)
                        if (strcmp(key, known[i]) == 0)
                                break;
                if (known[i])
                        continue;

                char q[96], list[256] = "";
                for (size_t j = 0; known[j]; j++)
                        (void) snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
                                        j ? ", " : "", known[j]);
                return fail(p, path, "unknown key '%s' (expected %s)", sandbox_escape(key, q, sizeof(q)),
                            list);
        }
        return 0;
}

/* ---- scalars ----------------------------------------------------------------- */

/* A non-negative integer that a double represents exactly, no larger than @max. */
static bool number_as_u64(const cJSON *item, double max, uint64_t *ret)
{
        if (!cJSON_IsNumber(item))
                return false;
        double d = item->valuedouble;
        /* In range first: converting an out-of-range double to an integer is undefined. */
        if (!isfinite(d) || d < 0 || d > max || (double) (uint64_t) d != d)
                return false;
        *ret = (uint64_t) d;
        return true;
}

/* ---- syscall names ------------------------------------------------------------ */

/*
 * Resolve @s to libseccomp's number. A trailing '?' marks a name that may be
 * unknown to this libseccomp (newer than its tables, or another
 * architecture's): such a name is skipped (returns 0). Names this
 * architecture lacks but libseccomp knows ("socketcall" on x86_64) resolve
 * to a negative pseudo number, which libseccomp leaves out of the filter.
 * Returns 1 when resolved.
 */
static int resolve_syscall(struct parser *p, const char *path, const char *s, int *ret_nr)
{
        char name[SYSCALL_NAME_MAX + 1], q[96];
        size_t len = strlen(s);
        bool optional = len > 0 && s[len - 1] == '?';

        if (optional)
                len--;
        if (len == 0 || len > SYSCALL_NAME_MAX || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") != len)
                return fail(p, path, "invalid syscall name '%s'", sandbox_escape(s, q, sizeof(q)));
        memcpy(name, s, len);
        name[len] = '\0';

        int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR) {
                if (optional)
                        return 0;
                return fail(p, path, "unknown syscall '%s'", name);
        }
        *ret_nr = nr;
        return 1;
}

static struct ao_sandbox_rule *find_rule(struct parser *p, int nr)
{
        for (size_t i = 0; i < p->policy.n_rules; i++)
                if (p->policy.rules[i].nr == nr)
                        return &p->policy.rules[i];
        return NULL;
}

static int push_rule(struct parser *p, const char *path, const char *name, int nr,
                     enum ao_sandbox_rule_action action, int errno_value, struct ao_sandbox_rule **ret)
{
        char q[96];

        if (find_rule(p, nr))
                return fail(p, path, "syscall '%s' already has a rule", sandbox_escape(name, q, sizeof(q)));
        if (p->policy.n_rules >= RULES_MAX)
                return fail(p, path, "more than %d syscalls", RULES_MAX);
        if (p->policy.n_rules == p->rules_cap) {
                p->rules_cap = p->rules_cap ? 2 * p->rules_cap : 64;
                p->policy.rules = ao_xreallocarray(p->policy.rules, p->rules_cap, sizeof(*p->policy.rules));
        }
        struct ao_sandbox_rule *rule = &p->policy.rules[p->policy.n_rules++];
        *rule =
            (struct ao_sandbox_rule){.name = name, .nr = nr, .action = action, .errno_value = errno_value};
        if (ret)
                *ret = rule;
        return 0;
}

/* `allow:` or `deny:`, a list of names that all get @action. */
static int parse_name_list(struct parser *p, const cJSON *list, const char *path,
                           enum ao_sandbox_rule_action action)
{
        char item_path[64];
        const cJSON *item;
        int i = 0, r;

        if (!cJSON_IsArray(list))
                return fail(p, path, "expected a list of syscall names");
        cJSON_ArrayForEach(item, list)
        {
                int nr = 0;
                (void) snprintf(item_path, sizeof(item_path), "%s[%d]", path, i++);
                if (!cJSON_IsString(item))
                        return fail(p, item_path, "expected a syscall name");
                r = resolve_syscall(p, item_path, item->valuestring, &nr);
                if (r <= 0) {
                        if (r < 0)
                                return r;
                        continue;
                }
                r = push_rule(p, item_path, item->valuestring, nr, action, 0, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- errno: {syscall: ERRNO} -------------------------------------------------- */

#define NAMED(x)      \
        {             \
#x, x \
        }

static const struct {
        const char *name;
        int value;
} errno_names[] = {
    NAMED(EPERM),        NAMED(ENOENT),   NAMED(EIO),         NAMED(ENXIO),        NAMED(EBADF),
    NAMED(EAGAIN),       NAMED(ENOMEM),   NAMED(EACCES),      NAMED(EFAULT),       NAMED(EBUSY),
    NAMED(EEXIST),       NAMED(ENODEV),   NAMED(EINVAL),      NAMED(ENOTTY),       NAMED(ENOSPC),
    NAMED(EROFS),        NAMED(ENOSYS),   NAMED(ENOTSUP),     NAMED(EOPNOTSUPP),   NAMED(EPROTONOSUPPORT),
    NAMED(EAFNOSUPPORT), NAMED(ENETDOWN), NAMED(ENETUNREACH), NAMED(ECONNREFUSED),
};

static int parse_errno_value(struct parser *p, const char *path, const cJSON *v, int *ret)
{
        uint64_t n;

        if (cJSON_IsString(v))
                for (size_t i = 0; i < AO_ARRAY_SIZE(errno_names); i++)
                        if (strcmp(v->valuestring, errno_names[i].name) == 0) {
                                *ret = errno_names[i].value;
                                return 0;
                        }
        /* SECCOMP_RET_DATA holds 16 bits, but only 1-4095 read as an error return in userspace. */
        if (number_as_u64(v, 4095, &n) && n > 0) {
                *ret = (int) n;
                return 0;
        }
        return fail(p, path, "expected an errno name (EPERM, ENOSYS, ...) or a number from 1 to 4095");
}

static int parse_errno_map(struct parser *p, const cJSON *map)
{
        char path[96], q[64];
        const cJSON *item;

        if (!cJSON_IsObject(map))
                return fail(p, "seccomp.errno", "expected a mapping of syscall names to errno names");
        cJSON_ArrayForEach(item, map)
        {
                int nr = 0, e = 0, r;
                (void) snprintf(path, sizeof(path), "seccomp.errno.%s",
                                sandbox_escape(item->string, q, sizeof(q)));
                r = resolve_syscall(p, path, item->string, &nr);
                if (r <= 0) {
                        if (r < 0)
                                return r;
                        continue;
                }
                r = parse_errno_value(p, path, item, &e);
                if (r < 0)
                        return r;
                r = push_rule(p, path, item->string, nr, AO_SANDBOX_RULE_ERRNO, e, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- deny-flags: [{syscall, arg, any-of}] -------------------------------------- */

static const struct {
        const char *name;
        uint64_t value;
} flag_names[] = {
    NAMED(CLONE_VM),       NAMED(CLONE_FS),        NAMED(CLONE_FILES),   NAMED(CLONE_SIGHAND),
    NAMED(CLONE_PIDFD),    NAMED(CLONE_PTRACE),    NAMED(CLONE_VFORK),   NAMED(CLONE_PARENT),
    NAMED(CLONE_THREAD),   NAMED(CLONE_NEWNS),     NAMED(CLONE_SYSVSEM), NAMED(CLONE_SETTLS),
    NAMED(CLONE_UNTRACED), NAMED(CLONE_NEWCGROUP), NAMED(CLONE_NEWUTS),  NAMED(CLONE_NEWIPC),
    NAMED(CLONE_NEWUSER),  NAMED(CLONE_NEWPID),    NAMED(CLONE_NEWNET),  NAMED(CLONE_IO),
    NAMED(CLONE_NEWTIME),
};

static int parse_flag(struct parser *p, const char *path, const cJSON *v, uint64_t *ret)
{
        uint64_t n;

        if (cJSON_IsString(v)) {
                for (size_t i = 0; i < AO_ARRAY_SIZE(flag_names); i++)
                        if (strcmp(v->valuestring, flag_names[i].name) == 0) {
                                *ret = flag_names[i].value;
                                return 0;
                        }
                char q[96];
                return fail(p, path, "unknown flag '%s'", sandbox_escape(v->valuestring, q, sizeof(q)));
        }
        if (number_as_u64(v, EXACT_INT_MAX, &n) && n > 0) {
                *ret = n;
                return 0;
        }
        return fail(p, path, "expected a flag name (CLONE_NEWUSER, ...) or a positive number");
}

static int parse_flag_mask(struct parser *p, const char *path, const cJSON *list, uint64_t *ret)
{
        char item_path[192];
        const cJSON *item;
        uint64_t mask = 0;
        int i = 0;

        if (!cJSON_IsArray(list) || !list->child)
                return fail(p, path, "expected a non-empty list of flags");
        cJSON_ArrayForEach(item, list)
        {
                uint64_t flag = 0;
                (void) snprintf(item_path, sizeof(item_path), "%s[%d]", path, i++);
                int r = parse_flag(p, item_path, item, &flag);
                if (r < 0)
                        return r;
                mask |= flag;
        }
        *ret = mask;
        return 0;
}

/*
 * Attach "denied when (arg & mask) != 0" to the syscall's rule. In a
 * deny-list that is a rule of its own; in an allow-list it narrows the
 * syscall's `allow:` entry, which must therefore exist.
 */
static int add_flag_condition(struct parser *p, const char *path, const char *name, int nr, unsigned arg,
                              uint64_t mask)
{
        struct ao_sandbox_rule *rule = find_rule(p, nr);
        char q[96];

        if (!rule && p->policy.default_allow) {
                int r = push_rule(p, path, name, nr, AO_SANDBOX_RULE_ALLOW, 0, &rule);
                if (r < 0)
                        return r;
        } else if (!rule)
                return fail(p, path, "'%s' is not in seccomp.allow, so it is denied already",
                            sandbox_escape(name, q, sizeof(q)));
        else if (rule->action != AO_SANDBOX_RULE_ALLOW || (p->policy.default_allow && !rule->has_conds))
                return fail(p, path, "'%s' is denied in full already", sandbox_escape(name, q, sizeof(q)));
        rule->has_conds = true;
        rule->args[arg].deny_mask |= mask;
        return 0;
}

static int parse_deny_flags_entry(struct parser *p, const char *path, const cJSON *entry)
{
        static const char *const keys[] = {"syscall", "arg", "any-of", NULL};
        char sub[128];
        uint64_t arg = 0, mask = 0;
        int nr = 0, r;

        if (!cJSON_IsObject(entry))
                return fail(p, path, "expected a mapping with syscall, arg and any-of");
        r = check_keys(p, entry, path, keys);
        if (r < 0)
                return r;

        const cJSON *sys = cJSON_GetObjectItemCaseSensitive(entry, "syscall");
        (void) snprintf(sub, sizeof(sub), "%s.syscall", path);
        if (!cJSON_IsString(sys))
                return fail(p, sub, "expected a syscall name");
        int resolved = resolve_syscall(p, sub, sys->valuestring, &nr);
        if (resolved < 0)
                return resolved;

        (void) snprintf(sub, sizeof(sub), "%s.arg", path);
        if (!number_as_u64(cJSON_GetObjectItemCaseSensitive(entry, "arg"), AO_SANDBOX_SYSCALL_ARGS - 1, &arg))
                return fail(p, sub, "expected an argument index from 0 to %d", AO_SANDBOX_SYSCALL_ARGS - 1);

        (void) snprintf(sub, sizeof(sub), "%s.any-of", path);
        r = parse_flag_mask(p, sub, cJSON_GetObjectItemCaseSensitive(entry, "any-of"), &mask);
        if (r < 0)
                return r;
        return resolved ? add_flag_condition(p, path, sys->valuestring, nr, (unsigned) arg, mask) : 0;
}

static int parse_deny_flags(struct parser *p, const cJSON *list)
{
        char path[64];
        const cJSON *entry;
        int i = 0;

        if (!cJSON_IsArray(list))
                return fail(p, "seccomp.deny-flags", "expected a list of {syscall, arg, any-of} rules");
        cJSON_ArrayForEach(entry, list)
        {
                (void) snprintf(path, sizeof(path), "seccomp.deny-flags[%d]", i++);
                int r = parse_deny_flags_entry(p, path, entry);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * The launcher (sandbox/launch.c) runs on after installing the filter: it
 * sends the listener to the operator (sendmsg), closes it, and execs, or
 * exits when that fails. Were one of these refused, the child would wait
 * forever on a notification that only it could answer. So they are always
 * allowed: added to an allow-list that lacks them, an error when denied.
 */
static int keep_launcher_calls(struct parser *p)
{
        static const char *const names[] = {"sendmsg", "close", "execve", "exit", "exit_group"};

        for (size_t i = 0; i < AO_ARRAY_SIZE(names); i++) {
                int nr = seccomp_syscall_resolve_name(names[i]);
                struct ao_sandbox_rule *rule = find_rule(p, nr);
                if (rule && (rule->action != AO_SANDBOX_RULE_ALLOW || rule->has_conds))
                        return fail(p, "seccomp",
                                    "'%s' must stay allowed: the launcher calls it after installing "
                                    "the filter",
                                    names[i]);
                if (!rule && !p->policy.default_allow) {
                        int r = push_rule(p, "seccomp", names[i], nr, AO_SANDBOX_RULE_ALLOW, 0, NULL);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* ---- seccomp ----------------------------------------------------------------- */

static int parse_default(struct parser *p, const cJSON *v)
{
        if (cJSON_IsString(v) && strcmp(v->valuestring, "allow") == 0)
                p->policy.default_allow = true;
        else if (cJSON_IsString(v) && strcmp(v->valuestring, "deny") == 0)
                p->policy.default_allow = false;
        else
                return fail(p, "seccomp.default", "expected 'allow' or 'deny'");
        return 0;
}

static int parse_seccomp(struct parser *p, const cJSON *sec)
{
        static const char *const keys[] = {"default", "allow", "deny", "errno", "deny-flags", NULL};
        int r = check_keys(p, sec, "seccomp", keys);
        if (r < 0)
                return r;

        const cJSON *def = cJSON_GetObjectItemCaseSensitive(sec, "default");
        if (!def)
                return fail(p, "seccomp", "missing key 'default' (allow or deny)");
        r = parse_default(p, def);
        if (r < 0)
                return r;

        const cJSON *allow = cJSON_GetObjectItemCaseSensitive(sec, "allow");
        const cJSON *deny = cJSON_GetObjectItemCaseSensitive(sec, "deny");
        /* Listing what the default does already is either a mistake or noise: say which. */
        if (allow && p->policy.default_allow)
                return fail(p, "seccomp.allow", "only valid with 'default: deny'");
        if (deny && !p->policy.default_allow)
                return fail(p, "seccomp.deny", "only valid with 'default: allow'");
        if (allow && (r = parse_name_list(p, allow, "seccomp.allow", AO_SANDBOX_RULE_ALLOW)) < 0)
                return r;
        if (deny && (r = parse_name_list(p, deny, "seccomp.deny", AO_SANDBOX_RULE_NOTIFY)) < 0)
                return r;

        const cJSON *errnos = cJSON_GetObjectItemCaseSensitive(sec, "errno");
        if (errnos && (r = parse_errno_map(p, errnos)) < 0)
                return r;
        const cJSON *flags = cJSON_GetObjectItemCaseSensitive(sec, "deny-flags");
        if (flags && (r = parse_deny_flags(p, flags)) < 0)
                return r;
        return keep_launcher_calls(p);
}

/*
 * network: false. socket(2) is limited to AF_UNIX; io_uring, which can open
 * sockets without socket(2) (IORING_OP_SOCKET), must be refused as well.
 */
static int apply_no_network(struct parser *p)
{
        int nr_socket = seccomp_syscall_resolve_name("socket");
        int nr_uring = seccomp_syscall_resolve_name("io_uring_setup");
        struct ao_sandbox_rule *rule = find_rule(p, nr_socket);
        int r;

        if (!rule && p->policy.default_allow) {
                r = push_rule(p, "network", "socket", nr_socket, AO_SANDBOX_RULE_ALLOW, 0, &rule);
                if (r < 0)
                        return r;
        }
        if (rule && rule->action == AO_SANDBOX_RULE_ALLOW) {
                rule->has_conds = true;
                rule->args[0].only_value_set = true;
                rule->args[0].only_value = AF_UNIX;
        }

        rule = find_rule(p, nr_uring);
        if (rule && rule->action == AO_SANDBOX_RULE_ALLOW)
                return fail(p, "network", "'false' cannot be enforced while seccomp allows io_uring_setup");
        if (!rule && p->policy.default_allow)
                return push_rule(p, "network", "io_uring_setup", nr_uring, AO_SANDBOX_RULE_ERRNO, ENOSYS,
                                 NULL);
        return 0;
}

/* ---- rlimits ------------------------------------------------------------------ */

static const struct {
        const char *name;
        int resource;
} rlimit_names[] = {
    {"as", RLIMIT_AS},           {"core", RLIMIT_CORE},         {"cpu", RLIMIT_CPU},
    {"data", RLIMIT_DATA},       {"fsize", RLIMIT_FSIZE},       {"locks", RLIMIT_LOCKS},
    {"memlock", RLIMIT_MEMLOCK}, {"msgqueue", RLIMIT_MSGQUEUE}, {"nice", RLIMIT_NICE},
    {"nofile", RLIMIT_NOFILE},   {"nproc", RLIMIT_NPROC},       {"rss", RLIMIT_RSS},
    {"rtprio", RLIMIT_RTPRIO},   {"rttime", RLIMIT_RTTIME},     {"sigpending", RLIMIT_SIGPENDING},
    {"stack", RLIMIT_STACK},
};

/* "512Mi": Kubernetes' binary suffixes, for the byte-sized limits. */
static bool parse_size_string(const char *s, rlim_t *ret)
{
        static const struct {
                const char *suffix;
                unsigned shift;
        } units[] = {{"", 0}, {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}};
        size_t digits = strspn(s, "0123456789");

        if (digits == 0 || digits > 15)
                return false;
        for (size_t i = 0; i < AO_ARRAY_SIZE(units); i++)
                if (strcmp(s + digits, units[i].suffix) == 0) {
                        /* 15 digits are below 2^50; at most 2^(63 - shift), the result fits in rlim_t. */
                        unsigned long long n = strtoull(s, NULL, 10);
                        if (n > (UINT64_C(1) << (63 - units[i].shift)))
                                return false;
                        *ret = (rlim_t) (n << units[i].shift);
                        return true;
                }
        return false;
}

static int parse_rlimit_value(struct parser *p, const char *path, const cJSON *v, rlim_t *ret)
{
        uint64_t n;

        if (number_as_u64(v, EXACT_INT_MAX, &n)) {
                *ret = (rlim_t) n;
                return 0;
        }
        if (cJSON_IsString(v) && strcmp(v->valuestring, "unlimited") == 0) {
                *ret = RLIM_INFINITY;
                return 0;
        }
        if (cJSON_IsString(v) && parse_size_string(v->valuestring, ret))
                return 0;
        return fail(p, path, "expected a number or 'unlimited'");
}

static int parse_rlimit(struct parser *p, const char *path, const cJSON *v, struct rlimit *ret)
{
        static const char *const keys[] = {"soft", "hard", NULL};
        char sub[128];
        int r;

        if (!cJSON_IsObject(v)) {
                r = parse_rlimit_value(p, path, v, &ret->rlim_cur);
                ret->rlim_max = ret->rlim_cur;
                return r;
        }
        r = check_keys(p, v, path, keys);
        if (r < 0)
                return r;
        for (size_t i = 0; keys[i]; i++) {
                const cJSON *item = cJSON_GetObjectItemCaseSensitive(v, keys[i]);
                (void) snprintf(sub, sizeof(sub), "%s.%s", path, keys[i]);
                if (!item)
                        return fail(p, path, "missing key '%s' (give both soft and hard, or one value)",
                                    keys[i]);
                r = parse_rlimit_value(p, sub, item, i == 0 ? &ret->rlim_cur : &ret->rlim_max);
                if (r < 0)
                        return r;
        }
        if (ret->rlim_cur > ret->rlim_max)
                return fail(p, path, "the soft limit is above the hard limit");
        return 0;
}

static int parse_rlimits(struct parser *p, const cJSON *map, struct ao_sandbox_profile *prof)
{
        char path[96], q[64];
        const cJSON *item;

        if (!cJSON_IsObject(map))
                return fail(p, "rlimits", "expected a mapping of limit names to values");
        cJSON_ArrayForEach(item, map)
        {
                size_t i;
                for (i = 0; i < AO_ARRAY_SIZE(rlimit_names); i++)
                        if (strcmp(item->string, rlimit_names[i].name) == 0)
                                break;
                if (i == AO_ARRAY_SIZE(rlimit_names))
                        return fail(p, "rlimits",
                                    "unknown limit '%s' (as, core, cpu, data, fsize, locks, memlock, "
                                    "msgqueue, nice, nofile, nproc, rss, rtprio, rttime, sigpending, "
                                    "stack)",
                                    sandbox_escape(item->string, q, sizeof(q)));
                /* One entry per distinct name, and there are AO_SANDBOX_RLIMITS_MAX names at most. */
                if (prof->n_rlimits >= AO_SANDBOX_RLIMITS_MAX)
                        return fail(p, "rlimits", "too many limits");
                struct ao_sandbox_rlimit *l = &prof->rlimits[prof->n_rlimits];
                (void) snprintf(path, sizeof(path), "rlimits.%s", rlimit_names[i].name);
                int r = parse_rlimit(p, path, item, &l->limit);
                if (r < 0)
                        return r;
                l->resource = rlimit_names[i].resource;
                prof->n_rlimits++;
        }
        return 0;
}

/* ---- user, on-violation, network ------------------------------------------------- */

static int parse_user(struct parser *p, const cJSON *v, struct ao_sandbox_profile *prof)
{
        static const char *const keys[] = {"uid", "gid", NULL};
        uint64_t n;
        int r;

        if (cJSON_IsNull(v))
                return 0;
        if (!cJSON_IsObject(v))
                return fail(p, "user", "expected a mapping with uid and/or gid");
        r = check_keys(p, v, "user", keys);
        if (r < 0)
                return r;

        /* (uid_t) -1 means "unchanged" to setresuid(), so it cannot name a user. */
        const cJSON *uid = cJSON_GetObjectItemCaseSensitive(v, "uid");
        if (uid && !cJSON_IsNull(uid)) {
                if (!number_as_u64(uid, 4294967294.0, &n))
                        return fail(p, "user.uid", "expected a numeric id from 0 to 4294967294");
                prof->set_uid = true;
                prof->uid = (uid_t) n;
        }
        const cJSON *gid = cJSON_GetObjectItemCaseSensitive(v, "gid");
        if (gid && !cJSON_IsNull(gid)) {
                if (!number_as_u64(gid, 4294967294.0, &n))
                        return fail(p, "user.gid", "expected a numeric id from 0 to 4294967294");
                prof->set_gid = true;
                prof->gid = (gid_t) n;
        }
        return 0;
}

static int parse_on_violation(struct parser *p, const cJSON *v, struct ao_sandbox_profile *prof)
{
        if (cJSON_IsString(v) && strcmp(v->valuestring, "eperm") == 0)
                prof->on_violation = AO_SANDBOX_DENY_EPERM;
        else if (cJSON_IsString(v) && strcmp(v->valuestring, "kill") == 0)
                prof->on_violation = AO_SANDBOX_DENY_KILL;
        else
                return fail(p, "on-violation", "expected 'eperm' or 'kill'");
        return 0;
}

/* ---- the document ---------------------------------------------------------------- */

/* `seccomp: none` or a mapping; the key is required so that no filter is always a choice. */
static int parse_seccomp_key(struct parser *p, const cJSON *sec, struct ao_sandbox_profile *prof)
{
        if (!sec)
                return fail(p, "", "missing key 'seccomp' (a mapping, or 'none' for no filter)");
        if (cJSON_IsString(sec) && strcmp(sec->valuestring, "none") == 0) {
                prof->has_filter = false;
                return 0;
        }
        if (!cJSON_IsObject(sec))
                return fail(p, "seccomp", "expected a mapping or 'none'");
        prof->has_filter = true;
        return parse_seccomp(p, sec);
}

static int parse_document(struct parser *p, const cJSON *doc, struct ao_sandbox_profile *prof)
{
        static const char *const keys[] = {"description", "seccomp", "on-violation", "rlimits", "user",
                                           "network",     NULL};
        const cJSON *v;
        int r;

        if (!cJSON_IsObject(doc))
                return fail(p, "", "expected a mapping with at least the key 'seccomp'");
        r = check_keys(p, doc, "", keys);
        if (r < 0)
                return r;

        v = cJSON_GetObjectItemCaseSensitive(doc, "description");
        if (v && !cJSON_IsString(v))
                return fail(p, "description", "expected a string");
        r = parse_seccomp_key(p, cJSON_GetObjectItemCaseSensitive(doc, "seccomp"), prof);
        if (r < 0)
                return r;
        if ((v = cJSON_GetObjectItemCaseSensitive(doc, "on-violation")) &&
            (r = parse_on_violation(p, v, prof)) < 0)
                return r;
        if ((v = cJSON_GetObjectItemCaseSensitive(doc, "rlimits")) && (r = parse_rlimits(p, v, prof)) < 0)
                return r;
        if ((v = cJSON_GetObjectItemCaseSensitive(doc, "user")) && (r = parse_user(p, v, prof)) < 0)
                return r;

        v = cJSON_GetObjectItemCaseSensitive(doc, "network");
        if (v && !cJSON_IsBool(v))
                return fail(p, "network", "expected true or false");
        prof->allow_network = !v || cJSON_IsTrue(v);
        if (!prof->allow_network && !prof->has_filter)
                return fail(p, "network", "'false' needs a seccomp filter to enforce it");
        if (!prof->allow_network)
                return apply_no_network(p);
        return 0;
}

static int compile(struct parser *p, struct ao_sandbox_profile *prof)
{
        if (!prof->has_filter)
                return 0;
        int r = sandbox_bpf_compile(&p->policy, &prof->bpf, &prof->bpf_len, p->reterr);
        if (r < 0)
                return ao_error_prefix(p->reterr, "%s", p->filename);
        return 0;
}

int ao_sandbox_profile_parse(const char *name, const char *text, size_t len, const char *filename,
                             struct ao_sandbox_profile **ret, struct ao_error *reterr)
{
        char fallback[PROFILE_NAME_MAX + 16], q[96];

        if (!sandbox_name_valid(name))
                return ao_error_set(
                    reterr, -EINVAL,
                    "invalid sandbox profile name '%s': expected 1-%d characters of [a-z0-9-_.]",
                    sandbox_escape(name, q, sizeof(q)), PROFILE_NAME_MAX);
        if (!filename) {
                (void) snprintf(fallback, sizeof(fallback), "%s.policy", name);
                filename = fallback;
        }
        if (len > PROFILE_TEXT_MAX)
                return ao_error_set(reterr, -EFBIG, "%s: larger than %u KiB", filename,
                                    PROFILE_TEXT_MAX / 1024);

        _cleanup_(cjson_deletep) cJSON *doc = NULL;
        int r = ao_yaml_load(text, len, filename, &doc, reterr);
        if (r < 0)
                return r;

        struct ao_sandbox_profile *prof = ao_xcalloc(1, sizeof(*prof));
        struct parser p = {.filename = filename, .reterr = reterr};
        prof->on_violation = AO_SANDBOX_DENY_EPERM;
        r = parse_document(&p, doc, prof);
        if (r >= 0)
                r = compile(&p, prof);
        free(p.policy.rules);
        if (r < 0) {
                ao_sandbox_profile_free(prof);
                return r;
        }
        prof->name = ao_xstrdup(name);
        *ret = prof;
        return 0;
}

struct ao_sandbox_profile *ao_sandbox_profile_free(struct ao_sandbox_profile *p)
{
        if (!p)
                return NULL;
        free(p->name);
        free(p->bpf);
        free(p);
        return NULL;
}

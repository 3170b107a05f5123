/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private declarations shared by the files of sandbox/ (profile.c,
 * profiles.c, seccomp-bpf.c, select.c): the parsed seccomp policy handed
 * from profile.c to seccomp-bpf.c, the profile texts built into the binary
 * (the generated builtin-profiles.c, read by profiles.c), and two small
 * helpers. launch.c, fdpass.c and syscall-names.c need none of it. Never
 * included outside sandbox/.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"

struct sock_filter;

/* One .policy file compiled into the binary by embed-profiles.py (the generated builtin-profiles.c). */
struct ao_sandbox_builtin {
        const char *name;     /* "default": the file name without .policy */
        const char *filename; /* "sandbox/profiles/default.policy", for messages */
        const char *text;     /* the file's bytes, NUL-terminated */
        size_t len;
};

extern const struct ao_sandbox_builtin sandbox_builtin_profiles[];
extern const size_t sandbox_n_builtin_profiles;

#define AO_SANDBOX_SYSCALL_ARGS 6

/* What the filter does with one syscall. */
enum ao_sandbox_rule_action {
        AO_SANDBOX_RULE_ALLOW,  /* allowed, unless one of the rule's argument conditions holds */
        AO_SANDBOX_RULE_NOTIFY, /* reported to the supervisor (SECCOMP_RET_USER_NOTIF) */
        AO_SANDBOX_RULE_ERRNO,  /* fails at once with errno_value, without a report */
        _AO_SANDBOX_RULE_ACTION_MAX,
        _AO_SANDBOX_RULE_ACTION_INVALID = -EINVAL,
};

/*
 * Argument conditions of an ALLOW rule. The call is denied (reported) when
 * any of them holds: (arg & deny_mask) != 0, or arg != only_value when
 * only_value_set. Both on the same argument cannot be compiled into an
 * allow-list, because libseccomp 2.5 takes one comparison per argument.
 */
struct ao_sandbox_arg_cond {
        uint64_t deny_mask;
        bool only_value_set;
        uint64_t only_value;
};

struct ao_sandbox_rule {
        const char *name; /* borrowed from the parsed document, for messages */
        int nr;           /* libseccomp's number; negative (a pseudo number) for a call this arch lacks */
        enum ao_sandbox_rule_action action;
        int errno_value; /* AO_SANDBOX_RULE_ERRNO only */
        bool has_conds;
        struct ao_sandbox_arg_cond args[AO_SANDBOX_SYSCALL_ARGS];
};

/* The `seccomp:` section of a profile, resolved to numbers; input of the compiler. */
struct ao_sandbox_policy {
        bool default_allow;            /* default: allow (deny-list) or default: deny (allow-list) */
        struct ao_sandbox_rule *rules; /* owned; one per syscall */
        size_t n_rules;
};

/**
 * Compile @policy to a classic BPF program for the native architecture.
 * Calls not named by a rule get the default action: allow, or a user
 * notification. Other architectures (i386, x32) kill the process. On
 * success @ret_bpf is a malloc'd array of @ret_len instructions. Errors
 * start with "seccomp: " and name the syscall; the caller adds the file.
 */
int sandbox_bpf_compile(const struct ao_sandbox_policy *policy, struct sock_filter **ret_bpf,
                        unsigned short *ret_len, struct ao_error *reterr);

/** Whether @name may name a profile: 1-128 bytes of [a-z0-9-_.]. */
bool sandbox_name_valid(const char *name);

/**
 * Copy @s into @buf (@size >= 8) with control bytes, quotes and backslashes
 * escaped, cut with "..." when too long, so a message quoting user input
 * stays one line. Returns @buf.
 */
const char *sandbox_escape(const char *s, char *buf, size_t size);

/**
 * Read the whole file at @path, at most @max bytes, into a malloc'd
 * NUL-terminated buffer. Returns -ENOENT (without touching @reterr) when it
 * does not exist, so callers can treat absence as "not configured"; other
 * failures, and a larger file (-EFBIG), set @reterr naming @path.
 */
int sandbox_read_file(const char *path, size_t max, char **ret_text, size_t *ret_len,
                      struct ao_error *reterr);

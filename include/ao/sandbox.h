/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Sandbox profiles for hook, enabled-script and helm processes.
 *
 * A profile is a YAML data file (sandbox/profiles/<name>.policy, built into
 * the binary, and optionally more from ADDON_OPERATOR_SANDBOX_PROFILES_DIR)
 * naming a seccomp policy, resource limits and an optional uid/gid. Profiles
 * are parsed and their seccomp filters compiled to BPF once, at start-up, in
 * the operator (libseccomp); the child applies the ready BPF with a raw
 * seccomp(2) call and never allocates.
 *
 * Violations: every syscall a profile denies returns to the seccomp user
 * notification listener (SECCOMP_RET_USER_NOTIF) that the child installs
 * with the filter and hands to the operator, so the operator can log the
 * syscall by name before answering EPERM (or killing the process group,
 * per the profile). Main thread only, except where noted.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "ao/error.h"

struct sock_filter;

/* What happens to a denied syscall once the operator saw it. */
enum ao_sandbox_violation_action {
        AO_SANDBOX_DENY_EPERM, /* the call fails with EPERM and the hook goes on */
        AO_SANDBOX_DENY_KILL,  /* the hook's process group is killed */
        _AO_SANDBOX_VIOLATION_ACTION_MAX,
        _AO_SANDBOX_VIOLATION_ACTION_INVALID = -EINVAL,
};

struct ao_sandbox_rlimit {
        int resource; /* RLIMIT_* */
        struct rlimit limit;
};

#define AO_SANDBOX_RLIMITS_MAX 16

/** A compiled profile. Owned by its ao_sandbox_profiles set; immutable after loading. */
struct ao_sandbox_profile {
        char *name;              /* "default", "strict", "none", "helm", ... */
        bool has_filter;         /* false for "none": no seccomp at all */
        struct sock_filter *bpf; /* owned; NULL when !has_filter */
        unsigned short bpf_len;  /* instructions */
        enum ao_sandbox_violation_action on_violation;
        struct ao_sandbox_rlimit rlimits[AO_SANDBOX_RLIMITS_MAX];
        size_t n_rlimits;
        bool set_uid, set_gid;
        uid_t uid;
        gid_t gid;
        bool allow_network; /* documentation of intent; enforced by the filter itself */
};

struct ao_sandbox_profiles;

/**
 * Load the built-in profiles, then every *.policy file in @extra_dir (may be
 * NULL or ""), which may add profiles or replace built-in ones by name.
 * Errors name the file and key: "sandbox/profiles/strict.policy: rlimits.nofile: ...".
 */
int ao_sandbox_profiles_load(const char *extra_dir, struct ao_sandbox_profiles **ret,
                             struct ao_error *reterr);
struct ao_sandbox_profiles *ao_sandbox_profiles_free(struct ao_sandbox_profiles *set);

/** The profile named @name, or NULL. */
const struct ao_sandbox_profile *ao_sandbox_profiles_find(const struct ao_sandbox_profiles *set,
                                                          const char *name);

/** Parse one profile document (YAML text) named @name; used by the loader and the fuzz target. */
int ao_sandbox_profile_parse(const char *name, const char *text, size_t len, const char *filename,
                             struct ao_sandbox_profile **ret, struct ao_error *reterr);
struct ao_sandbox_profile *ao_sandbox_profile_free(struct ao_sandbox_profile *p);

/** The syscall name for @nr on this architecture ("ptrace"), or NULL. Thread-safe. */
const char *ao_sandbox_syscall_name(int nr);

/**
 * Which profile applies to a hook: the hook's own `<hook>.sandbox.yaml`
 * (key `profile`), else the module's `sandbox.yaml`, else @fallback. Either
 * file may be absent; a present but invalid file is an error naming it.
 * @module_dir may be NULL for global hooks. Returns a malloc'd name.
 */
int ao_sandbox_select(const char *module_dir, const char *hook_path, const char *fallback, char **ret_name,
                      struct ao_error *reterr);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compile a parsed seccomp policy to classic BPF with libseccomp, once, in
 * the operator. The child only hands the finished program to seccomp(2):
 * libseccomp allocates while generating, which a vfork-style child of a
 * threaded process must not do (see STYLE.md, pitfall 3).
 */
#include <errno.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ao/macro.h"
#include "internal.h"

static void seccomp_releasep(scmp_filter_ctx *ctx)
{
        if (*ctx)
                seccomp_release(*ctx);
}

static int add_failed(const struct ao_sandbox_rule *rule, int r, struct ao_error *reterr)
{
        char q[96];
        return ao_error_set(reterr, r < 0 ? r : -EINVAL, "seccomp: '%s': cannot add the rule: %s",
                            sandbox_escape(rule->name, q, sizeof(q)), strerror(r < 0 ? -r : EINVAL));
}

/*
 * An ALLOW rule with conditions inside a deny-list: each condition that
 * holds must reach the supervisor, so each becomes its own NOTIFY rule.
 * Rules on one syscall are alternatives in libseccomp; the comparisons of
 * one rule all have to hold. "Any bit of the mask set" is therefore one
 * rule per bit.
 */
static int add_conditional_denials(scmp_filter_ctx ctx, const struct ao_sandbox_rule *rule,
                                   struct ao_error *reterr)
{
        for (unsigned arg = 0; arg < AO_SANDBOX_SYSCALL_ARGS; arg++) {
                const struct ao_sandbox_arg_cond *c = &rule->args[arg];
                for (unsigned bit = 0; bit < 64; bit++) {
                        uint64_t flag = UINT64_C(1) << bit;
                        if (!(c->deny_mask & flag))
                                continue;
                        struct scmp_arg_cmp cmp = SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, flag, flag);
                        int r = seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, rule->nr, 1, &cmp);
                        if (r < 0)
                                return add_failed(rule, r, reterr);
                }
                if (c->only_value_set) {
                        struct scmp_arg_cmp cmp = SCMP_CMP(arg, SCMP_CMP_NE, c->only_value);
                        int r = seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, rule->nr, 1, &cmp);
                        if (r < 0)
                                return add_failed(rule, r, reterr);
                }
        }
        return 0;
}

/*
 * An ALLOW rule with conditions inside an allow-list: allowed only when no
 * condition holds, which is one rule whose comparisons must all hold.
 * Everything else falls through to the default (notify).
 */
static int add_conditional_allow(scmp_filter_ctx ctx, const struct ao_sandbox_rule *rule,
                                 struct ao_error *reterr)
{
        struct scmp_arg_cmp cmps[AO_SANDBOX_SYSCALL_ARGS];
        unsigned n = 0;
        char q[96];

        for (unsigned arg = 0; arg < AO_SANDBOX_SYSCALL_ARGS; arg++) {
                const struct ao_sandbox_arg_cond *c = &rule->args[arg];
                if (c->deny_mask && c->only_value_set)
                        return ao_error_set(reterr, -EINVAL,
                                            "seccomp: '%s': a flag mask and a required value on argument %u "
                                            "cannot be combined in an allow-list",
                                            sandbox_escape(rule->name, q, sizeof(q)), arg);
                if (c->deny_mask)
                        cmps[n++] = SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, c->deny_mask, 0);
                else if (c->only_value_set)
                        cmps[n++] = SCMP_CMP(arg, SCMP_CMP_EQ, c->only_value);
        }
        int r = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, rule->nr, n, cmps);
        return r < 0 ? add_failed(rule, r, reterr) : 0;
}

static int add_rule(scmp_filter_ctx ctx, bool default_allow, const struct ao_sandbox_rule *rule,
                    struct ao_error *reterr)
{
        int r;

        switch (rule->action) {
        case AO_SANDBOX_RULE_NOTIFY:
                r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, rule->nr, 0);
                break;
        case AO_SANDBOX_RULE_ERRNO:
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t) rule->errno_value), rule->nr, 0);
                break;
        case AO_SANDBOX_RULE_ALLOW:
                if (rule->has_conds)
                        return default_allow ? add_conditional_denials(ctx, rule, reterr)
                                             : add_conditional_allow(ctx, rule, reterr);
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, rule->nr, 0);
                break;
        default:
                r = -EINVAL;
        }
        return r < 0 ? add_failed(rule, r, reterr) : 0;
}

static int set_attributes(scmp_filter_ctx ctx, struct ao_error *reterr)
{
        /*
         * An i386 (int 0x80) or x32 syscall would be checked against the
         * numbers of another table: nothing a hook needs, and the classic
         * way around a filter. libseccomp's default for a foreign
         * architecture kills only the calling thread; take the whole process.
         */
        int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                return ao_error_set(reterr, r, "seccomp: cannot kill on foreign architectures: %s",
                                    strerror(-r));
        /* Only matters for seccomp_load(), which we never call: the child sets no_new_privs itself. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
        if (r < 0)
                return ao_error_set(reterr, r, "seccomp: cannot clear the no_new_privs attribute: %s",
                                    strerror(-r));
        /*
         * Lay the syscall checks out as a binary tree instead of a chain. The
         * kernel converts and JITs the program at every install, so length
         * and depth cost every hook start. Measured here (Linux 6.18, median
         * seccomp(2) time in a fresh child): strict (231 rules) 141 us as a
         * tree against 241 us as a chain; default (50 rules) 63 against 87 us.
         */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        if (r < 0)
                return ao_error_set(reterr, r, "seccomp: cannot select the binary-tree layout: %s",
                                    strerror(-r));
        return 0;
}

/* libseccomp 2.5.4 exports only to an fd (no seccomp_export_bpf_mem): go through a memfd. */
static int export_bpf(scmp_filter_ctx ctx, struct sock_filter **ret_bpf, unsigned short *ret_len,
                      struct ao_error *reterr)
{
        _cleanup_close_ int fd = memfd_create("ao-seccomp-bpf", MFD_CLOEXEC);
        if (fd < 0)
                return ao_error_set(reterr, ao_negative_errno(), "seccomp: memfd_create: %m");

        int r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return ao_error_set(reterr, r, "seccomp: exporting the filter: %s", strerror(-r));

        struct stat st;
        if (fstat(fd, &st) < 0)
                return ao_error_set(reterr, ao_negative_errno(), "seccomp: fstat of the exported filter: %m");
        size_t size = (size_t) st.st_size;
        /* BPF_MAXINSNS is what the kernel accepts for one filter. */
        if (size == 0 || size % sizeof(struct sock_filter) != 0 ||
            size / sizeof(struct sock_filter) > BPF_MAXINSNS)
                return ao_error_set(reterr, -E2BIG,
                                    "seccomp: the filter has %zu bytes, not 1 to %d instructions", size,
                                    BPF_MAXINSNS);

        _cleanup_free_ struct sock_filter *bpf = malloc(size);
        if (!bpf)
                return ao_error_set(reterr, -ENOMEM, "seccomp: out of memory for the filter");
        for (size_t done = 0; done < size;) {
                ssize_t n = pread(fd, (char *) bpf + done, size - done, (off_t) done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return ao_error_set(reterr, n < 0 ? ao_negative_errno() : -EIO,
                                            "seccomp: reading the exported filter back: %s",
                                            n < 0 ? strerror(errno) : "short read");
                done += (size_t) n;
        }
        *ret_len = (unsigned short) (size / sizeof(struct sock_filter));
        *ret_bpf = TAKE_PTR(bpf);
        return 0;
}

int sandbox_bpf_compile(const struct ao_sandbox_policy *policy, struct sock_filter **ret_bpf,
                        unsigned short *ret_len, struct ao_error *reterr)
{
        /*
         * A deny-list notifies on what it names; an allow-list notifies on
         * everything else. Either way the supervisor sees the call and
         * decides (EPERM or kill), so the log names every refused syscall.
         */
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx =
            seccomp_init(policy->default_allow ? SCMP_ACT_ALLOW : SCMP_ACT_NOTIFY);
        if (!ctx)
                return ao_error_set(reterr, -EOPNOTSUPP,
                                    "seccomp: cannot create a filter; this kernel or libseccomp lacks user "
                                    "notification (SECCOMP_RET_USER_NOTIF, Linux 5.0)");

        int r = set_attributes(ctx, reterr);
        if (r < 0)
                return r;
        for (size_t i = 0; i < policy->n_rules; i++) {
                r = add_rule(ctx, policy->default_allow, &policy->rules[i], reterr);
                if (r < 0)
                        return r;
        }
        return export_bpf(ctx, ret_bpf, ret_len, reterr);
}

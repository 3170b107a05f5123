/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Minimal TAP producer for the unit tests (meson runs them with
 * protocol: 'tap'). Each check prints "ok N - name" or "not ok N - name" with
 * a diagnostic; tap_done() prints the plan and returns the exit code.
 * A test that needs a kernel feature the machine lacks calls tap_skip_all(),
 * which exits 77 (meson's "skipped").
 */

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_count_;
static int tap_failed_;

__attribute__((format(printf, 2, 3))) static inline bool tap_ok(bool cond, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        printf("%s %d - ", cond ? "ok" : "not ok", ++tap_count_);
        vprintf(fmt, ap);
        printf("\n");
        va_end(ap);
        if (!cond)
                tap_failed_++;
        fflush(stdout);
        return cond;
}

#define tap_is_int(got, want, ...)                                                                    \
        do {                                                                                          \
                long long got_ = (long long) (got), want_ = (long long) (want);                       \
                if (!tap_ok(got_ == want_, __VA_ARGS__))                                              \
                        printf("#   got %lld, want %lld (%s:%d)\n", got_, want_, __FILE__, __LINE__); \
        } while (0)

#define tap_is_str(got, want, ...)                                                               \
        do {                                                                                     \
                const char *got_ = (got), *want_ = (want);                                       \
                bool same_ = got_ && want_ ? strcmp(got_, want_) == 0 : got_ == want_;           \
                if (!tap_ok(same_, __VA_ARGS__))                                                 \
                        printf("#   got  '%s'\n#   want '%s' (%s:%d)\n", got_ ? got_ : "(null)", \
                               want_ ? want_ : "(null)", __FILE__, __LINE__);                    \
        } while (0)

/* Print a diagnostic line (ignored by TAP consumers). */
#define tap_diag(...)                \
        do {                         \
                printf("# ");        \
                printf(__VA_ARGS__); \
                printf("\n");        \
        } while (0)

__attribute__((noreturn)) static inline void tap_skip_all(const char *reason)
{
        printf("1..0 # SKIP %s\n", reason);
        fflush(stdout);
        exit(77);
}

/* Abort the whole test file when a precondition fails (TAP "Bail out!"). */
__attribute__((noreturn)) static inline void tap_bail(const char *reason)
{
        printf("Bail out! %s\n", reason);
        fflush(stdout);
        exit(1);
}

static inline int tap_done(void)
{
        printf("1..%d\n", tap_count_);
        return tap_failed_ ? 1 : 0;
}

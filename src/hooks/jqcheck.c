/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether a jqFilter compiles, with libjq 1.6, so that a bad filter is
 * reported with the hook's configuration instead of on the first event.
 * Nothing is kept: the program is compiled and thrown away (running filters
 * is src/hooks/jqcache.c's business).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jq.h>

#include "internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_LSAN 1
#endif
#endif
#ifdef HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

struct capture {
        char *reason; /* AO_HOOK_CONFIG_JQ_REASON_MAX bytes */
        bool got;
};

/*
 * libjq reports "jq: error: <what> at <top-level>, line 1:\n<the program>..."
 * and then "jq: 1 compile error". Keep the first line of the first message,
 * without the "jq: error: " prefix and the colon that introduces the
 * program text.
 */
static void on_error(void *userdata, jv msg)
{
        struct capture *c = userdata;

        if (!c->got) {
                c->got = true;
                if (jv_get_kind(msg) == JV_KIND_STRING) {
                        const char *s = jv_string_value(msg);
                        size_t len;
                        if (strncmp(s, "jq: error: ", strlen("jq: error: ")) == 0)
                                s += strlen("jq: error: ");
                        len = strcspn(s, "\n");
                        while (len > 0 && (s[len - 1] == ':' || s[len - 1] == ' '))
                                len--;
                        if (len >= AO_HOOK_CONFIG_JQ_REASON_MAX)
                                len = AO_HOOK_CONFIG_JQ_REASON_MAX - 1;
                        memcpy(c->reason, s, len);
                        c->reason[len] = '\0';
                } else {
                        (void) snprintf(c->reason, AO_HOOK_CONFIG_JQ_REASON_MAX, "invalid program");
                }
        }
        jv_free(msg);
}

int ao_hook_config_jq_check(const char *filter, char reason[static AO_HOOK_CONFIG_JQ_REASON_MAX])
{
        struct capture c = {.reason = reason};
        jq_state *jq;
        int ok;

        jq = jq_init();
        if (!jq)
                return -ENOMEM;
        jq_set_error_cb(jq, on_error, &c);
        /*
         * COMPAT(libjq 1.6): without JQ_LIBRARY_PATH, an `import` or `include`
         * directive aborts the process (assertion in jv_array_concat). An
         * empty list leaves only paths relative to the working directory,
         * and keeps ~/.jq out of it.
         */
        jq_set_attr(jq, jv_string("JQ_LIBRARY_PATH"), jv_array());
#ifdef HAVE_LSAN
        /*
         * COMPAT(libjq 1.6): the lexer leaks the text of an unterminated
         * string literal ("\"abc"). Bounded by the filter's size, and not ours
         * to fix; hidden from LeakSanitizer so that our own leaks still show.
         */
        __lsan_disable();
#endif
        ok = jq_compile(jq, filter);
#ifdef HAVE_LSAN
        __lsan_enable();
#endif
        jq_teardown(&jq);
        if (ok)
                return 0;
        if (!c.got)
                (void) snprintf(reason, AO_HOOK_CONFIG_JQ_REASON_MAX, "invalid program");
        return -EINVAL;
}

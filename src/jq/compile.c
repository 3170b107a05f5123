/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compiling a jqFilter with libjq 1.6, shared by the configuration check
 * (ao_jq_check(), at the end) and the filter cache (cache.c), so that a
 * filter that passed the check is exactly the program that runs.
 *
 * Besides the program itself, a one-line prelude may be compiled in front of
 * it to keep known libjq 1.6 defects away from the operator:
 *
 *   - ltrimstr / rtrimstr leak about 80 bytes per call when the input or the
 *     argument is not a string;
 *   - global regex matching (match/test/capture/sub with "g", scan, split/2,
 *     splits, gsub) with a regex that matches an empty string crashes the
 *     process on non-ASCII input (match, scan, split) or never returns (gsub).
 *
 * The prelude shadows those builtins with definitions that give the same
 * results, except that an empty match in global mode is an error naming the
 * regex instead of a crash or a hang. It is all on the first line, so line
 * numbers in jq's messages stay right, and it is only added when the filter
 * mentions a name it redefines.
 */
#include "ao/jq.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jq.h>

#include "ao/alloc.h"
#include "ao/macro.h"

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
        char *msg;
        size_t size;
        bool got;
};

/*
 * libjq reports "jq: error: <what> at <top-level>, line 1:\n<the program>"
 * and then "jq: 1 compile error". Keep the first line of the first message,
 * without the "jq: error: " prefix and the colon that introduces the
 * program text.
 */
static void on_error(void *userdata, jv msg)
{
        struct capture *c = userdata;
        const char *s;
        size_t len;

        if (c->got || jv_get_kind(msg) != JV_KIND_STRING) {
                jv_free(msg);
                return;
        }
        c->got = true;
        s = jv_string_value(msg);
        if (strncmp(s, "jq: error: ", strlen("jq: error: ")) == 0)
                s += strlen("jq: error: ");
        len = strcspn(s, "\n");
        while (len > 0 && (s[len - 1] == ':' || s[len - 1] == ' '))
                len--;
        len = AO_MIN(len, c->size - 1);
        memcpy(c->msg, s, len);
        c->msg[len] = '\0';
        jv_free(msg);
}

static void discard_error(void *userdata, jv msg)
{
        (void) userdata;
        jv_free(msg);
}

/* COMPAT(libjq 1.6): `debug` without a callback and `input` without one crash (NULL calls). */
static void discard_debug(void *userdata, jv msg)
{
        (void) userdata;
        jv_free(msg);
}

static jv no_input(jq_state *jq, void *userdata)
{
        (void) jq;
        (void) userdata;
        return jv_invalid_with_msg(jv_string("No more inputs"));
}

/* COMPAT(libjq 1.6): the leak-free trimstr pair (same values: the input unless both are strings). */
static const char trimstr_prelude[] =
    "def ltrimstr($p): if type == \"string\" and ($p | type) == \"string\" and startswith($p) "
    "then .[($p | length):] else . end; "
    "def rtrimstr($p): if type == \"string\" and ($p | type) == \"string\" and endswith($p) "
    "then .[:length - ($p | length)] else . end; ";

/*
 * COMPAT(libjq 1.6): the regex builtins, behind a guard. The _ao_* aliases
 * are defined first, so they still reach the builtins the later definitions
 * shadow. The guard looks for the first match without "g": when it is empty,
 * global matching would meet jq's defect, so it stops with an error instead.
 */
static const char regex_prelude[] =
    "def _ao_m($r; $f): match($r; $f); def _ao_t($r; $f): test($r; $f); "
    "def _ao_c($r; $f): capture($r; $f); def _ao_sc($r): scan($r); "
    "def _ao_sp($r; $f): split($r; $f); def _ao_sps($r; $f): splits($r; $f); "
    "def _ao_sub($r; s; $f): sub($r; s; $f); "
    "def _ao_g($f): $f != null and ($f | tostring | contains(\"g\")); "
    "def _ao_safe($r; $f; $global): if $global and type == \"string\" and ($r | type) == \"string\" "
    "and ([_ao_m($r; $f | if . == null then null else tostring | split(\"g\") | join(\"\") end)] "
    "| length > 0 and .[0].length == 0) "
    "then error(\"regex \" + ($r | tojson) + \" matches an empty string: global matching with it is refused "
    "(it crashes or hangs jq 1.6)\") else . end; "
    "def match($r; $f): _ao_safe($r; $f; _ao_g($f)) | _ao_m($r; $f); "
    "def match($v): if ($v | type) == \"array\" then match($v[0]; $v[1]) else match($v; null) end; "
    "def test($r; $f): _ao_safe($r; $f; _ao_g($f)) | _ao_t($r; $f); "
    "def test($v): if ($v | type) == \"array\" then test($v[0]; $v[1]) else test($v; null) end; "
    "def capture($r; $f): _ao_safe($r; $f; _ao_g($f)) | _ao_c($r; $f); "
    "def capture($v): if ($v | type) == \"array\" then capture($v[0]; $v[1]) else capture($v; null) end; "
    "def scan($r): _ao_safe($r; null; true) | _ao_sc($r); "
    "def split($r; $f): _ao_safe($r; $f; true) | _ao_sp($r; $f); "
    "def splits($r; $f): _ao_safe($r; $f; true) | _ao_sps($r; $f); def splits($r): splits($r; null); "
    "def sub($r; s; $f): _ao_safe($r; $f; _ao_g($f)) | _ao_sub($r; s; $f); def sub($r; s): sub($r; s; null); "
    "def gsub($r; s; $f): sub($r; s; ($f // \"\") + \"g\"); def gsub($r; s): sub($r; s; \"g\"); ";

static const char *const regex_names[] = {"match", "test", "capture", "scan", "split", "sub", NULL};

/* Module directives must come first: nothing may be put before a program that starts with one. */
static bool starts_with_directive(const char *s)
{
        for (;;) {
                s += strspn(s, " \t\r\n");
                if (*s != '#')
                        break;
                s += strcspn(s, "\n");
        }
        return strncmp(s, "import", 6) == 0 || strncmp(s, "include", 7) == 0;
}

static bool mentions_regex(const char *filter)
{
        for (size_t i = 0; regex_names[i]; i++)
                if (strstr(filter, regex_names[i]))
                        return true;
        return false;
}

/* The text to compile: @filter behind the preludes it needs. */
static char *program_text(const char *filter)
{
        if (starts_with_directive(filter))
                return ao_xstrdup(filter);
        return ao_xasprintf("%s%s%s", strstr(filter, "trimstr") ? trimstr_prelude : "",
                            mentions_regex(filter) ? regex_prelude : "", filter);
}

jq_state *compile_program(const char *filter, char *reason, size_t reason_size)
{
        _cleanup_free_ char *text = program_text(filter);
        struct capture cap = {.msg = reason, .size = reason_size};
        jq_state *jq = jq_init();
        if (!jq) {
                (void) snprintf(reason, reason_size, "out of memory");
                return NULL;
        }
        jq_set_error_cb(jq, on_error, &cap);
        jq_set_debug_cb(jq, discard_debug, NULL);
        jq_set_input_cb(jq, no_input, NULL);
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
        int ok = jq_compile(jq, text);
#ifdef HAVE_LSAN
        __lsan_enable();
#endif
        /*
         * The capture lives on this stack. Runtime errors come back from
         * jq_next(); NULL would restore libjq's default, which prints to stderr.
         */
        jq_set_error_cb(jq, discard_error, NULL);
        if (ok)
                return jq;
        jq_teardown(&jq);
        if (!cap.got)
                (void) snprintf(reason, reason_size, "invalid program");
        return NULL;
}

int ao_jq_check(const char *filter, char *reason, size_t reason_size)
{
        jq_state *jq = compile_program(filter, reason, reason_size);
        if (!jq)
                return -EINVAL;
        jq_teardown(&jq);
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Differential fuzzing of ao_json_parse() against cJSON_ParseWithLengthOpts(), the parser it
 * replaces. The input is the text. Besides crashes, leaks and undefined behaviour, it aborts
 * when the two disagree where they must agree:
 *
 *  - ao_json_parse() accepts only what cJSON accepts, ending at the same byte, with the same
 *    tree except for numbers: same type, keys and strings byte for byte, same order; numbers
 *    with the same double bit for bit, and, where the exact text is kept, exactly the literal of
 *    the input (and kept exactly where ao/json-number.h says it must be);
 *  - where cJSON accepts and ao_json_parse() refuses, or where both refuse at different offsets,
 *    the text (up to where cJSON stopped) must use one of cJSON's extensions to JSON that
 *    ao/json-parse.h lists; lenient() below finds them without parsing, from bytes alone;
 *  - a top-level number may end earlier than cJSON's ("01": 0, then "1" for the caller) only
 *    when the text goes on with a byte cJSON reads as part of a number;
 *  - ao_json_parse_all() agrees with ao_json_parse() plus "only JSON white space after it";
 *  - error offsets are within the text and every error has a reason.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/json-number.h"
#include "ao/json-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_INPUT_MAX (64 * 1024)
#define MAX_NUMBERS    (FUZZ_INPUT_MAX / 2 + 1)

/* The number literals of the value, in order (offset and length), as collect_numbers() found them. */
struct literals {
        size_t n;
        size_t at[MAX_NUMBERS], len[MAX_NUMBERS];
};

static struct literals literals;

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

/* Whether the run @s (@n bytes) is exactly one number of JSON's grammar (RFC 8259 §6). */
static bool is_json_number(const char *s, size_t n)
{
        size_t i = 0;
        if (i < n && s[i] == '-')
                i++;
        if (i < n && s[i] == '0')
                i++;
        else if (i < n && s[i] >= '1' && s[i] <= '9')
                while (i < n && is_digit(s[i]))
                        i++;
        else
                return false;
        if (i < n && s[i] == '.') {
                size_t from = ++i;
                while (i < n && is_digit(s[i]))
                        i++;
                if (i == from)
                        return false;
        }
        if (i < n && (s[i] == 'e' || s[i] == 'E')) {
                i++;
                if (i < n && (s[i] == '+' || s[i] == '-'))
                        i++;
                size_t from = i;
                while (i < n && is_digit(s[i]))
                        i++;
                if (i == from)
                        return false;
        }
        return i == n;
}

static bool is_number_byte(char c)
{
        return is_digit(c) || c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E';
}

static bool is_hex(char c)
{
        return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Where the value starts for both parsers: past a byte order mark (cJSON's rule) and bytes <= 0x20. */
static size_t value_start(const char *t, size_t len)
{
        size_t i = len > 4 && memcmp(t, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
        while (i < len && (unsigned char) t[i] <= 0x20)
                i++;
        return i;
}

/*
 * Whether the bytes [0, @upto] of @t (a run reaching past it is read whole) use one of cJSON's
 * extensions: a control character other than JSON's and yajl's white space between tokens, a
 * control character or "\u" without four hex digits in a string, a number cJSON reads (the run
 * of bytes strtod() is given) that is not exactly one JSON number.
 */
static bool lenient(const char *t, size_t len, size_t upto)
{
        for (size_t i = value_start(t, len); i < len && i <= upto;) {
                unsigned char c = (unsigned char) t[i];
                if (c == '"') {
                        for (i++; i < len && t[i] != '"'; i++) {
                                if ((unsigned char) t[i] < 0x20)
                                        return true;
                                if (t[i] == '\\' && i + 1 < len && t[i + 1] == 'u' &&
                                    (len - i < 6 || !is_hex(t[i + 2]) || !is_hex(t[i + 3]) ||
                                     !is_hex(t[i + 4]) || !is_hex(t[i + 5])))
                                        return true;
                                if (t[i] == '\\')
                                        i++;
                        }
                        i++;
                } else if (c == '-' || is_digit((char) c)) {
                        size_t from = i;
                        while (i < len && is_number_byte(t[i]))
                                i++;
                        if (!is_json_number(t + from, i - from))
                                return true;
                } else if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\v' && c != '\f') {
                        return true;
                } else {
                        i++;
                }
        }
        return false;
}

/* The number literals of the value @t[0, @end) that ao_json_parse() read: each must be JSON's. */
static void collect_numbers(const char *t, size_t end)
{
        literals.n = 0;
        for (size_t i = value_start(t, end); i < end;) {
                if (t[i] == '"') {
                        for (i++; i < end && t[i] != '"'; i++)
                                if (t[i] == '\\')
                                        i++;
                        i++;
                } else if (t[i] == '-' || is_digit(t[i])) {
                        size_t from = i;
                        while (i < end && is_number_byte(t[i]))
                                i++;
                        if (!is_json_number(t + from, i - from) || literals.n == MAX_NUMBERS)
                                abort();
                        literals.at[literals.n] = from;
                        literals.len[literals.n++] = i - from;
                } else {
                        i++;
                }
        }
}

static bool same_double(double a, double b)
{
        return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(a)) == 0;
}

/* The number node @n, the @k-th number of the text @t: its double and its kept text. */
static void check_number(const char *t, const cJSON *ours, const cJSON *theirs, size_t k)
{
        if (!same_double(ours->valuedouble, theirs->valuedouble))
                abort();
        if (k >= literals.n)
                abort();
        const char *lit = t + literals.at[k];
        size_t len = literals.len[k];
        const char *kept = ao_json_number_text(ours);
        double d = ours->valuedouble;
        bool integer = !memchr(lit, '.', len) && !memchr(lit, 'e', len) && !memchr(lit, 'E', len);
        bool must_keep = !isfinite(d) || (integer && fabs(d) >= AO_JSON_EXACT_INTEGER_LIMIT);
        if (must_keep != (kept != NULL))
                abort();
        if (kept && (strlen(kept) != len || memcmp(kept, lit, len) != 0))
                abort();
}

static bool same_string(const char *a, const char *b)
{
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* @ours and @theirs equal as the header says; @k counts the numbers met in document order. */
static void compare(const char *t, const cJSON *ours, const cJSON *theirs, size_t *k)
{
        if ((ours->type & 0xFF) != (theirs->type & 0xFF) || !same_string(ours->string, theirs->string))
                abort();
        if (cJSON_IsNumber(ours)) {
                check_number(t, ours, theirs, (*k)++);
                return;
        }
        if (cJSON_IsString(ours) && strcmp(ours->valuestring, theirs->valuestring) != 0)
                abort();
        if (ours->valueint != theirs->valueint)
                abort();
        const cJSON *a = ours->child, *b = theirs->child;
        if (a && (!b || a->prev == NULL || b->prev == NULL))
                abort();
        const cJSON *last = NULL;
        for (; a && b; a = a->next, b = b->next) {
                compare(t, a, b, k);
                last = a;
        }
        if (a || b || (last && ours->child->prev != last))
                abort();
}

static bool is_json_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void check_all(const char *t, size_t size, const cJSON *ours, const char *ours_end)
{
        struct ao_json_parse_error err = {0};
        cJSON *all = ao_json_parse_all(t, size, &err);
        bool rest_blank = ours != NULL;
        for (const char *p = ours_end; ours && p < t + size; p++)
                rest_blank = rest_blank && is_json_space(*p);
        if (!!all != rest_blank)
                abort();
        if (!all && (!err.reason || err.offset > size))
                abort();
        cJSON_Delete(all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > FUZZ_INPUT_MAX)
                return 0;
        const char *t = (const char *) data;
        const char *their_end = NULL, *our_end = NULL;
        struct ao_json_parse_error err = {0};
        cJSON *theirs = cJSON_ParseWithLengthOpts(t, size, &their_end, 0);
        cJSON *ours = ao_json_parse(t, size, &our_end, &err);
        size_t theirs_at = their_end ? (size_t) (their_end - t) : 0;

        if (!ours && (!err.reason || err.offset > size))
                abort();
        bool extended = lenient(t, size, theirs ? (theirs_at > 0 ? theirs_at - 1 : 0) : theirs_at);
        if (ours && !theirs)
                abort(); /* accepted what cJSON refuses */
        if (ours) {
                size_t ours_at = (size_t) (our_end - t);
                if (ours_at != theirs_at) {
                        /* Only a top-level number that cJSON's strtod() read further. */
                        if (!cJSON_IsNumber(ours) || ours_at > theirs_at || !is_number_byte(t[ours_at]) ||
                            !extended)
                                abort();
                } else {
                        size_t k = 0;
                        collect_numbers(t, ours_at);
                        compare(t, ours, theirs, &k);
                        if (k != literals.n)
                                abort();
                }
        } else if (!extended && theirs) {
                abort(); /* refused JSON that cJSON reads */
        } else if (!extended && ao_json_parse_error_byte(&err, size) != theirs_at) {
                abort(); /* both refuse, at different bytes */
        }
        check_all(t, size, ours, our_end);
        cJSON_Delete(ours);
        cJSON_Delete(theirs);
        return 0;
}

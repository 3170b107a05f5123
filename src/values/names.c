/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Module names <-> values keys. Words are split at '-', '_', '.' and ' ',
 * and where a lower-case letter or a digit is followed by an upper-case
 * one ("aB", "2M"), or an upper-case run ends ("HTTPServer" -> "HTTP",
 * "Server"). Digits stay with the letters before them ("l2", "one01").
 * Camel case lower-cases the first word and capitalises the others; kebab
 * case lower-cases every word and joins them with '-'. These are the rules
 * existing modules' keys were made with, so their keys stay the same.
 */
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/strbuf.h"
#include "ao/values.h"

#define ORDER_MAX 2147483647u /* orders are parsed into 31 bits */

static bool is_delimiter(char c)
{
        return c == '-' || c == '_' || c == '.' || c == ' ';
}

static bool is_upper(char c)
{
        return c >= 'A' && c <= 'Z';
}

static bool is_lower(char c)
{
        return c >= 'a' && c <= 'z';
}

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

static char to_lower(char c)
{
        return is_upper(c) ? (char) (c - 'A' + 'a') : c;
}

static char to_upper(char c)
{
        return is_lower(c) ? (char) (c - 'a' + 'A') : c;
}

/* Does a new word start at s[i] (s[i] is not a delimiter, and the word so far is non-empty)? */
static bool word_starts_at(const char *s, size_t i)
{
        char prev = s[i - 1], c = s[i], next = s[i + 1];
        if (is_delimiter(prev))
                return false; /* the delimiter already ended the word */
        if (is_upper(c) && (is_lower(prev) || is_digit(prev)))
                return true;
        /* The last capital of a run starts the next word when a lower-case letter follows. */
        return is_upper(c) && is_upper(prev) && is_lower(next);
}

/* Call @emit(word, len, index, userdata) for each word of @s. */
static void for_each_word(const char *s, void (*emit)(const char *, size_t, size_t, void *), void *userdata)
{
        size_t index = 0, start = 0, len = strlen(s);
        bool in_word = false;
        for (size_t i = 0; i <= len; i++) {
                bool ends = i == len || is_delimiter(s[i]) || (in_word && word_starts_at(s, i));
                if (ends && in_word) {
                        emit(s + start, i - start, index++, userdata);
                        in_word = false;
                }
                if (i < len && !is_delimiter(s[i]) && !in_word) {
                        start = i;
                        in_word = true;
                }
        }
}

static void emit_camel(const char *w, size_t n, size_t index, void *userdata)
{
        struct ao_strbuf *sb = userdata;
        for (size_t i = 0; i < n; i++)
                ao_strbuf_append_c(sb, i == 0 && index > 0 ? to_upper(w[i]) : to_lower(w[i]));
}

static void emit_kebab(const char *w, size_t n, size_t index, void *userdata)
{
        struct ao_strbuf *sb = userdata;
        if (index > 0)
                ao_strbuf_append_c(sb, '-');
        for (size_t i = 0; i < n; i++)
                ao_strbuf_append_c(sb, to_lower(w[i]));
}

char *ao_name_to_camel(const char *s)
{
        struct ao_strbuf sb = {0};
        for_each_word(s, emit_camel, &sb);
        return ao_strbuf_steal(&sb);
}

char *ao_name_to_kebab(const char *s)
{
        struct ao_strbuf sb = {0};
        for_each_word(s, emit_kebab, &sb);
        return ao_strbuf_steal(&sb);
}

int ao_module_name_check(const char *name, struct ao_error *reterr)
{
        if (!*name)
                return ao_error_set(reterr, -EINVAL, "module name is empty");
        _cleanup_free_ char *camel = ao_name_to_camel(name);
        _cleanup_free_ char *back = ao_name_to_kebab(camel);
        if (strcmp(back, name) != 0)
                return ao_error_set(
                    reterr, -EINVAL,
                    "module name '%s' is not valid: its values key '%s' converts back to '%s' (use "
                    "lower-case words separated by single '-')",
                    name, camel, back);
        return 0;
}

/* Split "NNN-rest" into an order and the rest; without a numeric prefix the whole name is the rest. */
static const char *split_order(const char *dir_name, uint32_t unnumbered_order, uint32_t *ret_order,
                               bool *ret_numbered)
{
        size_t digits = strspn(dir_name, "0123456789");
        *ret_order = unnumbered_order;
        *ret_numbered = false;
        if (digits == 0 || dir_name[digits] != '-' || dir_name[digits + 1] == '\0')
                return dir_name;
        uint64_t order = 0;
        bool overflow = false;
        for (size_t i = 0; i < digits; i++) {
                order = order * 10 + (uint64_t) (dir_name[i] - '0');
                if (order > ORDER_MAX) {
                        overflow = true;
                        break;
                }
        }
        /* An order that does not fit counts as no order, but the prefix is still not part of the name. */
        if (!overflow) {
                *ret_order = (uint32_t) order;
                *ret_numbered = true;
        }
        return dir_name + digits + 1;
}

int ao_module_name_parse(const char *dir_name, uint32_t unnumbered_order, struct ao_module_name *ret,
                         struct ao_error *reterr)
{
        uint32_t order;
        bool numbered;
        const char *name = split_order(dir_name, unnumbered_order, &order, &numbered);
        int k = ao_module_name_check(name, reterr);
        if (k < 0)
                return ao_error_prefix(reterr, "module directory '%s'", dir_name);

        struct ao_strbuf enabled = {0};
        char *key = ao_name_to_camel(name);
        ao_strbuf_appendf(&enabled, "%sEnabled", key);
        *ret = (struct ao_module_name){
            .name = ao_xstrdup(name),
            .values_key = key,
            .enabled_key = ao_strbuf_steal(&enabled),
            .order = order,
            .numbered = numbered,
        };
        return 0;
}

void ao_module_name_done(struct ao_module_name *n)
{
        free(n->name);
        free(n->values_key);
        free(n->enabled_key);
        *n = (struct ao_module_name){0};
}

static bool has_suffix(const char *s, const char *suffix, size_t *ret_stem)
{
        size_t n = strlen(s), m = strlen(suffix);
        if (n <= m || strcmp(s + n - m, suffix) != 0)
                return false;
        *ret_stem = n - m;
        return true;
}

enum ao_values_key_kind ao_values_key_classify(const char *key, char **ret_module, struct ao_error *reterr)
{
        if (strcmp(key, "global") == 0)
                return AO_VALUES_KEY_GLOBAL;

        enum ao_values_key_kind kind = AO_VALUES_KEY_MODULE;
        size_t stem = strlen(key);
        if (has_suffix(key, "Enabled", &stem))
                kind = AO_VALUES_KEY_ENABLED;
        else if (has_suffix(key, "Maintenance", &stem))
                kind = AO_VALUES_KEY_MAINTENANCE;

        _cleanup_free_ char *camel = ao_xstrndup(key, stem);
        _cleanup_free_ char *name = ao_name_to_kebab(camel);
        _cleanup_free_ char *again = ao_name_to_camel(name);
        if (!*name || strcmp(again, camel) != 0 || ao_module_name_check(name, NULL) < 0) {
                ao_error_set(reterr, -EINVAL,
                             "key '%s' does not name a module (its module name would be '%s')", key, name);
                return _AO_VALUES_KEY_KIND_INVALID;
        }
        if (ret_module)
                *ret_module = TAKE_PTR(name);
        return kind;
}

void ao_values_merge(cJSON *dst, const cJSON *src)
{
        for (const cJSON *item = src ? src->child : NULL; item; item = item->next) {
                cJSON *existing = cJSON_GetObjectItemCaseSensitive(dst, item->string);
                if (existing && cJSON_IsObject(existing) && cJSON_IsObject(item)) {
                        ao_values_merge(existing, item);
                        continue;
                }
                cJSON *copy = cJSON_Duplicate(item, true);
                if (!copy)
                        abort(); /* as ao_xmalloc: small internal copies only */
                if (existing)
                        cJSON_ReplaceItemViaPointer(dst, existing, copy);
                else
                        cJSON_AddItemToObject(dst, item->string, copy);
        }
}

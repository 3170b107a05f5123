/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz label and field selectors: a hook binding's labelSelector,
 * namespace.labelSelector or fieldSelector, parsed from the hook's
 * configuration and written as the API server's query text.
 *
 * Input: the first byte chooses where the selector goes (0: labelSelector,
 * 1: namespace.labelSelector, 2: fieldSelector), the rest is the selector
 * as YAML or JSON. It is placed in a minimal v1 binding and parsed as the
 * operator parses hook configurations.
 *
 * Besides crashes, leaks and undefined behaviour, it aborts when:
 *   - the query text, read back by this file's own reading of the API
 *     server's grammar (k8s.io/apimachinery labels.Parse and fields.Parse),
 *     does not give exactly the parsed requirements: a key or value that
 *     injects query syntax would show up here;
 *   - a key or value that was accepted fails the syntax checks, or a
 *     failure is not one printable line naming the hook.
 * The raw input is also fed to the key, value and field checks directly: an
 * accepted string never holds query syntax.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/hook-config.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HOOK "fuzz.sh"
/* Selectors are a few hundred bytes; a cap keeps runs fast. */
#define FUZZ_INPUT_MAX (16 * 1024)

static void check(bool ok)
{
        if (!ok)
                abort();
}

static void check_message(const struct ao_error *err)
{
        check(err->code < 0 && strncmp(err->msg, HOOK ": ", strlen(HOOK ": ")) == 0);
        for (const unsigned char *p = (const unsigned char *) err->msg; *p; p++)
                check(*p >= 0x20 && *p != 0x7F);
}

/* --- reading the query text back ------------------------------------------- */

/* The next ','-separated term of @s from *@pos, with parentheses kept whole. */
static char *next_term(const char *s, size_t *pos)
{
        size_t start = *pos, depth = 0, i = start;
        for (; s[i] && (s[i] != ',' || depth > 0); i++) {
                if (s[i] == '(')
                        depth++;
                else if (s[i] == ')' && depth > 0)
                        depth--;
        }
        *pos = s[i] ? i + 1 : i;
        return strndup(s + start, i - start);
}

static bool same_values(const struct ao_strv *v, const char *list)
{
        size_t i = 0, pos = 0, len = strlen(list);
        while (pos <= len && i < v->n) {
                const char *comma = strchr(list + pos, ',');
                size_t n = comma ? (size_t) (comma - (list + pos)) : len - pos;
                if (strlen(v->items[i]) != n || strncmp(v->items[i], list + pos, n) != 0)
                        return false;
                i++;
                pos += n + 1;
                if (!comma)
                        break;
        }
        return i == v->n && pos > len;
}

/* One requirement of a labelSelector query equals @req. */
static bool label_term_matches(const char *term, const struct ao_label_requirement *req)
{
        size_t klen = strlen(req->key);
        switch (req->op) {
        case AO_SELECTOR_EXISTS:
                return strcmp(term, req->key) == 0;
        case AO_SELECTOR_DOES_NOT_EXIST:
                return term[0] == '!' && strcmp(term + 1, req->key) == 0;
        case AO_SELECTOR_IN:
                if (req->values.n == 1 && strncmp(term, req->key, klen) == 0 && term[klen] == '=')
                        return strcmp(term + klen + 1, req->values.items[0]) == 0;
                if (strncmp(term, req->key, klen) != 0 || strncmp(term + klen, " in (", 5) != 0)
                        return false;
                term += klen + 5;
                break;
        case AO_SELECTOR_NOT_IN:
                if (strncmp(term, req->key, klen) != 0 || strncmp(term + klen, " notin (", 8) != 0)
                        return false;
                term += klen + 8;
                break;
        default:
                return false;
        }
        size_t len = strlen(term);
        if (len == 0 || term[len - 1] != ')')
                return false;
        char *list = strndup(term, len - 1);
        bool ok = same_values(&req->values, list);
        free(list);
        return ok;
}

static void check_label_selector(const struct ao_label_selector *sel)
{
        char *text = ao_label_selector_format(sel);
        size_t pos = 0;

        check(text != NULL);
        for (size_t i = 0; i < sel->n_requirements; i++) {
                const struct ao_label_requirement *req = &sel->requirements[i];
                check(ao_label_key_problem(req->key) == NULL);
                for (size_t k = 0; k < req->values.n; k++)
                        check(ao_label_value_problem(req->values.items[k]) == NULL);
                check(text[pos] != '\0');
                char *term = next_term(text, &pos);
                check(label_term_matches(term, req));
                free(term);
        }
        check(text[pos] == '\0');
        free(text);
}

/* fields.UnescapeValue of one "field=value" / "field!=value" term. */
static bool field_term_matches(const char *term, const struct ao_field_requirement *req)
{
        size_t flen = strlen(req->field);
        const char *op = req->negated ? "!=" : "=";
        if (strncmp(term, req->field, flen) != 0 || strncmp(term + flen, op, strlen(op)) != 0)
                return false;
        struct ao_strbuf value = {0};
        bool ok = true;
        for (const char *p = term + flen + strlen(op); *p && ok; p++) {
                if (*p == '\\') {
                        p++;
                        ok = *p == '\\' || *p == ',' || *p == '=';
                        if (!ok)
                                break;
                } else if (*p == ',' || *p == '=') {
                        ok = false; /* unescaped syntax inside a value */
                        break;
                }
                ao_strbuf_append_c(&value, *p);
        }
        char *got = ao_strbuf_steal(&value);
        ok = ok && strcmp(got ? got : "", req->value) == 0;
        free(got);
        return ok;
}

/* Terms of a fieldSelector query end at a ',' that is not escaped. */
static char *next_field_term(const char *s, size_t *pos)
{
        size_t start = *pos, i = start;
        for (; s[i] && s[i] != ','; i++)
                if (s[i] == '\\' && s[i + 1])
                        i++;
        *pos = s[i] ? i + 1 : i;
        return strndup(s + start, i - start);
}

static void check_field_selector(const struct ao_kubernetes_binding *b)
{
        char *text = ao_field_selector_format(b->field_selector, b->n_field_selector);
        size_t pos = 0;

        check(text != NULL);
        for (size_t i = 0; i < b->n_field_selector; i++) {
                check(ao_field_name_problem(b->field_selector[i].field) == NULL);
                check(text[pos] != '\0');
                char *term = next_field_term(text, &pos);
                check(field_term_matches(term, &b->field_selector[i]));
                free(term);
        }
        check(text[pos] == '\0');
        free(text);
}

/* --- the selector in a binding --------------------------------------------- */

static cJSON *binding_with(cJSON *selector, unsigned where)
{
        cJSON *doc = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(doc, "kubernetes");
        cJSON *b = cJSON_CreateObject();

        cJSON_AddStringToObject(doc, "configVersion", "v1");
        cJSON_AddStringToObject(b, "kind", "Pod");
        if (where == 1) {
                cJSON *ns = cJSON_AddObjectToObject(b, "namespace");
                cJSON_AddItemToObject(ns, "labelSelector", selector);
        } else {
                cJSON_AddItemToObject(b, where == 2 ? "fieldSelector" : "labelSelector", selector);
        }
        cJSON_AddItemToArray(list, b);
        return doc;
}

static void fuzz_binding(const char *text, size_t len, unsigned where)
{
        struct ao_error err = {0};
        struct ao_hook_config cfg = {0};
        cJSON *selector = NULL;

        if (ao_yaml_load(text, len, "selector", &selector, &err) < 0)
                return;
        cJSON *doc = binding_with(selector, where);
        if (ao_hook_config_from_json(doc, HOOK, AO_HOOK_GLOBAL, &cfg, &err) < 0) {
                check_message(&err);
                cJSON_Delete(doc);
                return;
        }
        check(cfg.n_kubernetes == 1);
        check_label_selector(&cfg.kubernetes[0].label_selector);
        check_label_selector(&cfg.kubernetes[0].namespace_labels);
        check_field_selector(&cfg.kubernetes[0]);
        ao_hook_config_done(&cfg);
        cJSON_Delete(doc);
}

/* An accepted key, value or field never holds what the query grammar gives meaning to. */
static void fuzz_checks(const char *s)
{
        bool key_ok = ao_label_key_problem(s) == NULL, value_ok = ao_label_value_problem(s) == NULL;
        bool field_ok = ao_field_name_problem(s) == NULL;
        if (key_ok || value_ok || field_ok)
                check(strpbrk(s, ",=!()\\ \t\n") == NULL);
        check(!key_ok || (s[0] != '\0' && strlen(s) <= 253 + 1 + 63));
        check(!value_ok || strlen(s) <= 63);
        check(!value_ok || strchr(s, '/') == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1 || size > FUZZ_INPUT_MAX)
                return 0;
        char *text = strndup((const char *) data + 1, size - 1);
        fuzz_checks(text);
        fuzz_binding((const char *) data + 1, size - 1, data[0] % 3);
        free(text);
        return 0;
}

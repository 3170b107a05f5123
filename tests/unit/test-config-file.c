/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for the local config file and what it is made of:
 *   - src/values/yaml-emit.c: exact output for tricky scalars, and the round
 *     trip ao_yaml_load(ao_yaml_emit(x)) == x (canonical JSON) on them, on
 *     deep and long documents and on every loadable file of fuzz/corpus/yaml
 *     (AO_YAML_CORPUS, set by meson);
 *   - src/values/config-data.c: parsing ConfigMap data, its errors, and
 *     formatting it back;
 *   - src/operator/config-file.c: real files in a temporary directory,
 *     watched through the reactor. Waits are loops over ao_reactor_run_once()
 *     bounded by a deadline, never sleeps.
 * meson runs this file once per backend with AO_REACTOR=epoll|io_uring; an
 * unavailable io_uring skips (exit 77).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../tap.h"
#include "reactor-backend.h"
#include "ao/alloc.h"
#include "ao/config-data.h"
#include "ao/config-file.h"
#include "ao/reactor.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

#define USEC 1000000ULL
#define MSEC 1000ULL
/* Generous: inotify is immediate, but sanitizers and loaded CI machines are slow. */
#define WAIT_USEC (10 * USEC)

static struct ao_reactor *reactor;
static char tmpdir[] = "/tmp/test-config-file.XXXXXX";

/* ---- helpers ------------------------------------------------------------------------------------ */

static cJSON *parse_json(const char *json)
{
        cJSON *j = cJSON_Parse(json);
        if (!j)
                tap_bail("bad JSON literal in test");
        return j;
}

/* Canonical JSON of @yaml loaded, or NULL (error in *err). */
static char *load_canonical(const char *yaml, struct ao_error *err)
{
        cJSON *json = NULL;
        if (ao_yaml_load(yaml, strlen(yaml), "test", &json, err) < 0)
                return NULL;
        char *text = ao_json_canonical(json);
        cJSON_Delete(json);
        return text;
}

/* ao_yaml_emit(@json) loads back to the same canonical JSON; diagnoses the text when not. */
static bool emit_round_trips(const cJSON *json, char **ret_text)
{
        struct ao_error err = {0};
        char *text = ao_yaml_emit(json);
        char *want = ao_json_canonical(json);
        char *got = load_canonical(text, &err);
        bool ok = got && strcmp(got, want) == 0;
        if (!ok)
                tap_diag("emitted:\n%s# want %s\n# got  %s %s", text, want, got ? got : "(error)",
                         got ? "" : err.msg);
        free(want);
        free(got);
        if (ret_text)
                *ret_text = text;
        else
                free(text);
        return ok;
}

static char *path_in_tmp(const char *name)
{
        return ao_xasprintf("%s/%s", tmpdir, name);
}

static void write_file(const char *path, const char *content)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, content, strlen(content)) != (ssize_t) strlen(content) || close(fd) < 0)
                tap_bail("cannot write a test file");
}

/* As editors save: a new file next to it, renamed over it. */
static void replace_file(const char *path, const char *content)
{
        _cleanup_free_ char *tmp = ao_xasprintf("%s.new", path);
        write_file(tmp, content);
        if (rename(tmp, path) < 0)
                tap_bail("cannot rename a test file");
}

static char *read_file(const char *path)
{
        struct ao_strbuf sb = {0};
        char buf[4096];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                ao_strbuf_append_n(&sb, buf, (size_t) n);
        close(fd);
        return ao_strbuf_steal(&sb);
}

static size_t count_dir_entries(void)
{
        size_t n = 0;
        DIR *d = opendir(tmpdir);
        struct dirent *e;
        while (d && (e = readdir(d)))
                n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
        if (d)
                closedir(d);
        return n;
}

/* ---- ao_yaml_emit ------------------------------------------------------------------------------- */

struct emit_case {
        const char *json;
        const char *yaml; /* exact output */
};

static const struct emit_case emit_cases[] = {
    {"null", "null\n"},
    {"{}", "{}\n"},
    {"[]", "[]\n"},
    {"{\"a\":{},\"b\":[]}", "a: {}\nb: []\n"},
    {"{\"a\":1,\"b\":{\"c\":[1,\"x\",{\"d\":null}]}}", "a: 1\nb:\n  c:\n  - 1\n  - x\n  - d: null\n"},
    {"{\"z\":1,\"a\":2}", "z: 1\na: 2\n"}, /* keys in their order */
    {"[[1,2],[]]", "- - 1\n  - 2\n- []\n"},
    /* strings the loader would read as something else */
    {"{\"a\":\"true\",\"b\":\"yes\",\"c\":\"on\",\"d\":\"N\",\"e\":\"~\",\"f\":\"null\",\"g\":\"\"}",
     "a: \"true\"\nb: \"yes\"\nc: \"on\"\nd: \"N\"\ne: \"~\"\nf: \"null\"\ng: \"\"\n"},
    {"[\"123\",\"0x1F\",\"0o17\",\"1_000\",\"1e3\",\".5\",\"+1\",\"-2\",\".inf\",\"-.Inf\",\".NaN\",\"08\"]",
     "- \"123\"\n- \"0x1F\"\n- \"0o17\"\n- \"1_000\"\n- \"1e3\"\n- \".5\"\n- \"+1\"\n- \"-2\"\n- \".inf\"\n"
     "- \"-.Inf\"\n- \".NaN\"\n- \"08\"\n"},
    /* strings that stay strings plain */
    {"[\"1:20\",\"2001-12-14\",\"0.5.1\",\"1e400\",\"._5\",\"nULL\",\"yes please\",\"-a\",\"100m\",\"x=y\"]",
     "- 1:20\n- 2001-12-14\n- 0.5.1\n- 1e400\n- ._5\n- nULL\n- yes please\n- -a\n- 100m\n- x=y\n"},
    /* syntax: libyaml quotes what cannot be plain */
    {"[\" lead\",\"trail \",\"a: b\",\"#c\",\"a #b\",\"- "
     "x\",\"---\",\"[x]\",\"&a\",\"*a\",\"!t\",\"'q'\",\"\\\"\"]",
     "- ' lead'\n- 'trail '\n- 'a: b'\n- '#c'\n- 'a #b'\n- '- x'\n- '---'\n- '[x]'\n- '&a'\n- '*a'\n- '!t'\n"
     "- '''q'''\n- '\"'\n"},
    /* keys */
    {"{\"true\":1,\"1\":2,\"<<\":3,\"\":4,\"a b\":5,\"null\":6}",
     "\"true\": 1\n\"1\": 2\n\"<<\": 3\n\"\": 4\na b: 5\n\"null\": 6\n"},
    {"{\"a\\nb\":1}", "? \"a\\nb\"\n: 1\n"}, /* libyaml makes multi-line keys explicit */
    /* multi-line strings */
    {"{\"a\":\"x\\ny\"}", "a: |-\n  x\n  y\n"},
    {"{\"a\":\"x\\ny\\n\"}", "a: |\n  x\n  y\n"},
    {"{\"a\":\" x\\ny\\n\"}", "a: |2\n   x\n  y\n"},
    {"{\"a\":\"x \\ny\"}", "a: \"x \\ny\"\n"},
    {"{\"a\":\"x\\r\\ny\"}", "a: \"x\\r\\ny\"\n"},
    {"{\"a\":\"tab\\there\",\"b\":\"\\u0001\"}", "a: \"tab\\there\"\nb: \"\\x01\"\n"},
    {"{\"a\":\"\\u2028\",\"b\":\"\\u0085\"}", "a: \"\\L\"\nb: \"\\N\"\n"},
    {"{\"a\":\"caf\\u00e9\"}", "a: café\n"},
    /* numbers as in canonical JSON */
    {"[0,-0,1.5,-2500,1e21,1e20,0.1,1e-7,18446744073709551616,123456789012345678]",
     "- 0\n- 0\n- 1.5\n- -2500\n- 1e+21\n- 100000000000000000000\n- 0.1\n- 1e-07\n"
     "- 18446744073709552000\n- 123456789012345680\n"},
    {"[true,false,null]", "- true\n- false\n- null\n"},
};

/* Strings whose round trip matters most, as values, as keys and as documents. */
static const char *const tricky_strings[] = {
    "",
    " ",
    "  ",
    "true",
    "True",
    "TRUE",
    "yes",
    "Yes",
    "YES",
    "no",
    "NO",
    "on",
    "off",
    "y",
    "Y",
    "n",
    "N",
    "null",
    "Null",
    "NULL",
    "~",
    "0",
    "-0",
    "+0",
    "0x1F",
    "0o17",
    "0b101",
    "017",
    "08",
    "1_000",
    "1e3",
    "1E3",
    "-1e-3",
    ".5",
    "+.5",
    "1.",
    ".inf",
    "+.inf",
    "-.inf",
    ".NaN",
    ".nan",
    "._5",
    ".5_5",
    "9223372036854775808",
    "18446744073709551616",
    "1e400",
    "1:20",
    "<<",
    "=",
    "-",
    "--",
    "---",
    "...",
    "- a",
    "? a",
    "?",
    ":",
    "a:",
    "a: b",
    "a:b",
    "#",
    "a #b",
    "a#b",
    "'",
    "\"",
    "''",
    "\\",
    "@x",
    "`x",
    "%x",
    "!x",
    "&x",
    "*x",
    "|",
    ">",
    "[",
    "]",
    "{",
    "}",
    ",",
    "a,b",
    " lead",
    "trail ",
    "multi\nline",
    "trailing\n",
    "two\n\n",
    "\n",
    "\n\n",
    " \nx",
    "x \ny",
    "x\n y",
    "\n x",
    "x\n\n\ny\n\n",
    "\t",
    "a\tb",
    "\ta",
    "a\t",
    "\r",
    "a\r\nb",
    "a\rb",
    "\xc2\x85",
    "a\xe2\x80\xa8"
    "b",
    "\xe2\x80\xa9",
    "\xef\xbb\xbf"
    "bom",
    "\xc2\xa0nbsp",
    "caf\xc3\xa9",
    "\xf0\x9f\x98\x80",
    "\x01",
    "\x1b[0m",
    "\x7f",
    "\xc2\x80",
    "\xef\xbf\xbe",
    "\xef\xbf\xbf",
    "line1\nline2\n  indented\n",
    "# not a comment\nx",
    "key: value\nother: 1\n",
};

static void test_emit_cases(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(emit_cases); i++) {
                cJSON *json = parse_json(emit_cases[i].json);
                char *text = NULL;
                bool ok = emit_round_trips(json, &text);
                tap_is_str(text, emit_cases[i].yaml, "emit %zu: %s", i, emit_cases[i].json);
                tap_ok(ok, "emit %zu: loads back", i);
                free(text);
                cJSON_Delete(json);
        }
}

static void test_emit_tricky(void)
{
        size_t failed = 0;
        for (size_t i = 0; i < AO_ARRAY_SIZE(tricky_strings); i++) {
                const char *s = tricky_strings[i];
                cJSON *doc = cJSON_CreateObject();
                cJSON_AddStringToObject(doc, s, s);
                cJSON *list = cJSON_AddArrayToObject(doc, "list");
                cJSON_AddItemToArray(list, cJSON_CreateString(s));
                cJSON *nested = cJSON_CreateObject();
                cJSON_AddStringToObject(nested, "k", s);
                cJSON_AddStringToObject(nested, s, "v");
                cJSON_AddItemToArray(list, nested);
                cJSON *root = cJSON_CreateString(s);
                if (!emit_round_trips(doc, NULL) || !emit_round_trips(root, NULL)) {
                        failed++;
                        tap_diag("tricky string %zu failed", i);
                }
                cJSON_Delete(doc);
                cJSON_Delete(root);
        }
        tap_is_int(failed, 0, "emit: %zu tricky strings round-trip as values, keys and documents",
                   AO_ARRAY_SIZE(tricky_strings));

        /* Every pair too: what one string starts, the next may end. */
        failed = 0;
        for (size_t i = 0; i < AO_ARRAY_SIZE(tricky_strings); i++) {
                for (size_t j = 0; j < AO_ARRAY_SIZE(tricky_strings); j++) {
                        char *s = ao_xasprintf("%s%s", tricky_strings[i], tricky_strings[j]);
                        cJSON *doc = cJSON_CreateObject();
                        cJSON_AddStringToObject(doc, s, s);
                        if (!emit_round_trips(doc, NULL))
                                failed++;
                        cJSON_Delete(doc);
                        free(s);
                }
        }
        tap_is_int(failed, 0, "emit: every concatenation of two tricky strings round-trips");
}

static void test_emit_special_numbers(void)
{
        cJSON *list = cJSON_CreateArray();
        cJSON *n = cJSON_CreateNumber(0);
        n->valuedouble = NAN;
        cJSON_AddItemToArray(list, n);
        cJSON_AddItemToArray(list, cJSON_CreateNumber(INFINITY));
        cJSON_AddItemToArray(list, cJSON_CreateNumber(-INFINITY));
        char *text = ao_yaml_emit(list);
        tap_is_str(text, "- .nan\n- .inf\n- -.inf\n", "emit: NaN and infinities as YAML writes them");
        cJSON *back = NULL;
        struct ao_error err = {0};
        tap_ok(ao_yaml_load(text, strlen(text), "t", &back, &err) == 0 && isnan(back->child->valuedouble) &&
                   back->child->next->valuedouble == INFINITY,
               "emit: they load back as numbers");
        cJSON_Delete(back);
        free(text);
        cJSON_Delete(list);
}

static void test_emit_invalid_utf8(void)
{
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "k\xff", "a\xc3(b\xed\xa0\x80");
        char *text = ao_yaml_emit(doc);
        tap_is_str(text, "k\xef\xbf\xbd: a\xef\xbf\xbd(b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\n",
                   "emit: invalid UTF-8 becomes U+FFFD");
        struct ao_error err = {0};
        char *back = load_canonical(text, &err);
        tap_ok(back != NULL, "emit: and loads");
        free(back);
        free(text);
        cJSON_Delete(doc);
}

static void test_emit_big(void)
{
        /* Nesting at the loader's limit round-trips; far deeper is emitted without recursion. */
        cJSON *root = cJSON_CreateObject(), *node = root;
        for (int i = 1; i < AO_YAML_MAX_DEPTH; i++) {
                cJSON *child = i % 2 ? cJSON_CreateArray() : cJSON_CreateObject();
                if (cJSON_IsArray(node))
                        cJSON_AddItemToArray(node, child);
                else
                        cJSON_AddItemToObject(node, "k", child);
                node = child;
        }
        cJSON_AddItemToArray(node, cJSON_CreateString("leaf"));
        tap_ok(emit_round_trips(root, NULL), "emit: %d levels of nesting round-trip", AO_YAML_MAX_DEPTH);
        for (int i = 0; i < 100000; i++) {
                cJSON *child = cJSON_CreateArray();
                cJSON_AddItemToArray(node, child);
                node = child;
        }
        char *text = ao_yaml_emit(root);
        tap_ok(strncmp(text, "k:\n- k:\n  - k:\n", 15) == 0, "emit: 100000 more levels (no recursion)");
        free(text);
        /* cJSON_Delete recurses: take the deep part apart iteratively. */
        while (root) {
                cJSON *c = root->child;
                while (c && c->next)
                        c = c->next;
                if (c)
                        cJSON_DetachItemViaPointer(root, c);
                cJSON_Delete(root);
                root = c;
        }

        /* Long strings and keys are never folded or broken; keys past 128 characters become explicit. */
        struct ao_strbuf sb = {0};
        for (int i = 0; i < 20000; i++)
                ao_strbuf_append(&sb, i % 7 ? "word " : "x: #y ");
        char *key = ao_xstrndup(ao_strbuf_str(&sb), 1000);
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, key, ao_strbuf_str(&sb));
        cJSON_AddStringToObject(doc, "plain",
                                "word word word word word word word word word word word word word "
                                "word word word word word word word word word word word word word");
        text = NULL;
        tap_ok(emit_round_trips(doc, &text), "emit: a 100 KB string and a 1000-character key round-trip");
        tap_ok(text && strstr(text, "\nplain: word word") && !strstr(strstr(text, "\nplain: ") + 1, "\n "),
               "emit: long plain strings stay on one line");
        free(text);
        free(key);
        cJSON_Delete(doc);
        ao_strbuf_done(&sb);
}

/* Every file of fuzz/corpus/yaml that loads must round-trip. */
static void test_emit_corpus(void)
{
        const char *dir = getenv("AO_YAML_CORPUS");
        if (!dir) {
                tap_ok(true, "emit: corpus # SKIP AO_YAML_CORPUS not set");
                return;
        }
        DIR *d = opendir(dir);
        if (!tap_ok(d != NULL, "emit: open corpus %s", dir))
                return;
        size_t loaded = 0, failed = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                _cleanup_free_ char *path = ao_xasprintf("%s/%s", dir, e->d_name);
                struct ao_error err = {0};
                cJSON *json = NULL;
                if (ao_yaml_load_file(path, &json, &err) < 0)
                        continue;
                loaded++;
                if (!emit_round_trips(json, NULL)) {
                        failed++;
                        tap_diag("corpus file %s", e->d_name);
                }
                cJSON_Delete(json);
        }
        closedir(d);
        tap_ok(loaded >= 5, "emit: %zu corpus files load", loaded);
        tap_is_int(failed, 0, "emit: every loadable corpus file round-trips");
}

/* ---- ao_config_data ----------------------------------------------------------------------------- */

struct data_case {
        const char *raw;  /* JSON of the data */
        const char *want; /* canonical JSON of the parsed form; NULL: an error */
        const char *msg;  /* the error message */
};

static const struct data_case data_cases[] = {
    {"{}", "{}", NULL},
    {"{\"global\":\"a: 1\\nb: [x]\\n\",\"simpleModule\":\"x: true\",\"simpleModuleEnabled\":\"false\","
     "\"otherModuleEnabled\":\"true\",\"simpleModuleMaintenance\":\"NoResourceReconciliation\"}",
     "{\"global\":{\"a\":1,\"b\":[\"x\"]},\"otherModuleEnabled\":true,\"simpleModule\":{\"x\":true},"
     "\"simpleModuleEnabled\":false,\"simpleModuleMaintenance\":\"NoResourceReconciliation\"}",
     NULL},
    /* empty and null documents are empty sections */
    {"{\"global\":\"\",\"a\":\"# nothing\\n\",\"b\":\"~\",\"c\":\"null\",\"d\":\"---\\n\"}",
     "{\"a\":{},\"b\":{},\"c\":{},\"d\":{},\"global\":{}}", NULL},
    /* the local file's forms */
    {"{\"global\":{\"a\":1},\"simpleModule\":null,\"simpleModuleEnabled\":true,\"xEnabled\":false}",
     "{\"global\":{\"a\":1},\"simpleModule\":{},\"simpleModuleEnabled\":true,\"xEnabled\":false}", NULL},
    {"{\"simpleModule\":\"a: 1\\nb: 2\\n  c: 3\\n\"}", NULL,
     "config.yaml: key 'simpleModule': 3:4: mapping values are not allowed in this context"},
    {"{\"global\":\"a: [\"}", NULL,
     "config.yaml: key 'global': 2:1: did not find expected node content (while parsing a flow node that "
     "starts at 2:1)"},
    {"{\"simpleModule\":\"a: 1\\na: 2\\n\"}", NULL,
     "config.yaml: key 'simpleModule': 2:1: duplicate key 'a'"},
    {"{\"simpleModule\":\"- a\\n- b\\n\"}", NULL,
     "config.yaml: key 'simpleModule': must be a mapping, not a list"},
    {"{\"simpleModule\":\"5\"}", NULL, "config.yaml: key 'simpleModule': must be a mapping, not a number"},
    {"{\"global\":\"text\"}", NULL, "config.yaml: key 'global': must be a mapping, not a string"},
    {"{\"global\":[1]}", NULL, "config.yaml: key 'global': must be a mapping, not a list"},
    {"{\"global\":true}", NULL, "config.yaml: key 'global': must be a mapping, not a boolean"},
    {"{\"simpleModuleEnabled\":\"yes\"}", NULL,
     "config.yaml: key 'simpleModuleEnabled': must be \"true\" or \"false\", not 'yes'"},
    {"{\"simpleModuleEnabled\":\"True\"}", NULL,
     "config.yaml: key 'simpleModuleEnabled': must be \"true\" or \"false\", not 'True'"},
    {"{\"simpleModuleEnabled\":1}", NULL,
     "config.yaml: key 'simpleModuleEnabled': must be \"true\" or \"false\", not a number"},
    {"{\"simpleModuleEnabled\":null}", NULL,
     "config.yaml: key 'simpleModuleEnabled': must be \"true\" or \"false\", not null"},
    {"{\"simpleModuleMaintenance\":{}}", NULL,
     "config.yaml: key 'simpleModuleMaintenance': must be a string, not a mapping"},
    {"{\"global\":{},\"simple-module\":\"a: 1\"}", NULL,
     "config.yaml: key 'simple-module' does not name a module (its module name would be 'simple-module')"},
    {"{\"Enabled\":\"true\"}", NULL,
     "config.yaml: key 'Enabled' does not name a module (its module name would be 'enabled')"},
    {"{\"x_\\ny\":\"x\"}", NULL,
     "config.yaml: key 'x_\\ny' does not name a module (its module name would be 'x-\\ny')"},
};

static void test_data_parse(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(data_cases); i++) {
                const struct data_case *c = &data_cases[i];
                cJSON *raw = parse_json(c->raw), *data = NULL;
                struct ao_error err = {0};
                int r = ao_config_data_parse(raw, "config.yaml", &data, &err);
                if (c->want) {
                        char *got = r < 0 ? NULL : ao_json_canonical(data);
                        tap_is_str(got, c->want, "data %zu: parses %s", i, c->raw);
                        if (r < 0)
                                tap_diag("error: %s", err.msg);
                        free(got);
                } else {
                        tap_is_int(r, -EINVAL, "data %zu: %s is refused", i, c->raw);
                        tap_is_str(err.msg, c->msg, "data %zu: message", i);
                }
                cJSON_Delete(data);
                cJSON_Delete(raw);
        }

        cJSON *data = NULL;
        struct ao_error err = {0};
        cJSON *list = parse_json("[\"global\"]");
        tap_is_int(ao_config_data_parse(list, "cm", &data, &err), -EINVAL, "data: a list is refused");
        tap_is_str(err.msg, "cm: the data must be a mapping, not a list", "data: message");
        cJSON_Delete(list);
}

static void test_data_format(void)
{
        cJSON *data =
            parse_json("{\"global\":{\"a\":1,\"s\":\"yes\"},\"simpleModule\":{},\"simpleModuleEnabled\":"
                       "false,\"xEnabled\":true,\"xMaintenance\":\"NoResourceReconciliation\","
                       "\"x\":{\"multi\":\"l1\\nl2\\n\",\"list\":[1,{\"b\":null}]}}");
        cJSON *cm = ao_config_data_format(data);
        char *got = ao_json_canonical(cm);
        tap_is_str(
            got,
            "{\"global\":\"a: 1\\ns: \\\"yes\\\"\\n\",\"simpleModule\":\"{}\\n\",\"simpleModuleEnabled\":"
            "\"false\",\"x\":\"multi: |\\n  l1\\n  l2\\nlist:\\n- 1\\n- b: null\\n\",\"xEnabled\":\"true\","
            "\"xMaintenance\":\"NoResourceReconciliation\"}",
            "format: sections as YAML text, flags as strings");
        free(got);

        cJSON *again = NULL;
        struct ao_error err = {0};
        tap_is_int(ao_config_data_parse(cm, "cm", &again, &err), 0, "format: parses back");
        char *a = ao_json_canonical(data), *b = again ? ao_json_canonical(again) : NULL;
        tap_is_str(b, a, "format: to the same data");
        free(a);
        free(b);
        cJSON_Delete(again);
        cJSON_Delete(cm);
        cJSON_Delete(data);
}

/* ---- ao_config_file ----------------------------------------------------------------------------- */

struct rec {
        size_t changes;
        size_t invalids;
        char *data; /* canonical JSON of the last on_change data */
        char error[AO_ERROR_MSG_MAX];
        struct ao_config_file **free_in_handler; /* free the file from on_change */
};

static void on_change(const cJSON *data, void *userdata)
{
        struct rec *rec = userdata;
        rec->changes++;
        free(rec->data);
        rec->data = ao_json_canonical(data);
        if (rec->free_in_handler)
                *rec->free_in_handler = ao_config_file_free(*rec->free_in_handler);
}

static void on_invalid(const struct ao_error *error, void *userdata)
{
        struct rec *rec = userdata;
        rec->invalids++;
        (void) snprintf(rec->error, sizeof(rec->error), "%s", error->msg);
}

static void rec_done(struct rec *rec)
{
        free(rec->data);
        *rec = (struct rec){0};
}

/* Run the loop until @rec saw @changes changes and @invalids invalid reports; false at the deadline. */
static bool wait_for(const struct rec *rec, size_t changes, size_t invalids)
{
        uint64_t deadline = ao_clock_now_usec() + WAIT_USEC;
        while (rec->changes < changes || rec->invalids < invalids) {
                uint64_t now = ao_clock_now_usec();
                if (now >= deadline)
                        return false;
                if (ao_reactor_run_once(reactor, deadline - now) < 0)
                        return false;
        }
        return rec->changes == changes && rec->invalids == invalids;
}

/* Run the loop until nothing happens for a while (the events of our own writes are queued at once). */
static void run_until_quiet(void)
{
        uint64_t deadline = ao_clock_now_usec() + WAIT_USEC;
        while (ao_clock_now_usec() < deadline && ao_reactor_run_once(reactor, 300 * MSEC) > 0)
                ;
}

static char *data_json(const struct ao_config_file *f)
{
        return ao_json_canonical(ao_config_file_data(f));
}

static struct ao_config_file *open_file(const char *path, struct rec *rec, struct ao_error *err)
{
        struct ao_config_file_options options = {
            .path = path,
            .on_change = on_change,
            .on_invalid = on_invalid,
            .userdata = rec,
        };
        struct ao_config_file *f = NULL;
        if (ao_config_file_open(reactor, &options, &f, err) < 0)
                return NULL;
        return f;
}

#define YAML_STRINGS                                                                        \
        "global: |\n  a: 1\nsimpleModule: \"x: true\\n\"\nsimpleModuleEnabled: \"false\"\n" \
        "otherModuleMaintenance: NoResourceReconciliation\n"
#define YAML_STRINGS_JSON                                                                                 \
        "{\"global\":{\"a\":1},\"otherModuleMaintenance\":\"NoResourceReconciliation\",\"simpleModule\":" \
        "{\"x\":true},\"simpleModuleEnabled\":false}"

static void test_file_open(void)
{
        struct ao_error err = {0};
        struct rec rec = {0};
        _cleanup_free_ char *path = path_in_tmp("config.yaml");
        static const struct {
                const char *name;
                const char *content; /* NULL: no file */
                const char *json;
        } ok[] = {
            {"missing file", NULL, "{}"},
            {"empty file", "", "{}"},
            {"comment only", "# nothing yet\n", "{}"},
            {"YAML-string sections", YAML_STRINGS, YAML_STRINGS_JSON},
            {"mapping sections",
             "global:\n  a: 1\nsimpleModule:\n  x: [1, 2]\n  z: {}\nsimpleModuleEnabled: true\nfooEnabled: "
             "no\n",
             "{\"fooEnabled\":false,\"global\":{\"a\":1},\"simpleModule\":{\"x\":[1,2],\"z\":{}},"
             "\"simpleModuleEnabled\":true}"},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(ok); i++) {
                (void) unlink(path);
                if (ok[i].content)
                        write_file(path, ok[i].content);
                struct ao_config_file *f = open_file(path, &rec, &err);
                if (!tap_ok(f != NULL, "open: %s", ok[i].name)) {
                        tap_diag("%s", err.msg);
                        continue;
                }
                _cleanup_free_ char *got = data_json(f);
                tap_is_str(got, ok[i].json, "open: %s: data", ok[i].name);
                tap_is_str(ao_config_file_path(f), path, "open: %s: path", ok[i].name);
                ao_config_file_free(f);
        }

        static const struct {
                const char *name;
                const char *content;
                const char *msg; /* after "<path>" */
        } bad[] = {
            {"bad section", "simpleModule: |\n  a: b: c\n",
             ": key 'simpleModule': 1:5: mapping values are not allowed in this context"},
            {"unknown key", "global: {}\nfoo_bar: 1\n",
             ": key 'foo_bar' does not name a module (its module name would be 'foo-bar')"},
            {"bad flag", "simpleModuleEnabled: maybe\n",
             ": key 'simpleModuleEnabled': must be \"true\" or \"false\", not 'maybe'"},
            {"YAML error", "global: [\n",
             ":2:1: did not find expected node content (while parsing a flow node "
             "that starts at 2:1)"},
            {"a list", "- global\n", ": the top level must be a mapping of keys"},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(bad); i++) {
                write_file(path, bad[i].content);
                err = (struct ao_error){0};
                struct ao_config_file *f = open_file(path, &rec, &err);
                tap_ok(f == NULL, "open: %s fails", bad[i].name);
                _cleanup_free_ char *want = ao_xasprintf("%s%s", path, bad[i].msg);
                tap_is_str(err.msg, want, "open: %s: message", bad[i].name);
                ao_config_file_free(f);
        }

        _cleanup_free_ char *nodir = path_in_tmp("no-such-dir/config.yaml");
        err = (struct ao_error){0};
        tap_ok(open_file(nodir, &rec, &err) == NULL && strstr(err.msg, "no-such-dir"),
               "open: a missing directory fails: %s", err.msg);
        tap_is_int(rec.changes + rec.invalids, 0, "open: no handler called");
        (void) unlink(path);
        rec_done(&rec);
}

static void test_file_watch(void)
{
        struct ao_error err = {0};
        struct rec rec = {0};
        _cleanup_free_ char *path = path_in_tmp("config.yaml");
        write_file(path, YAML_STRINGS);
        struct ao_config_file *f = open_file(path, &rec, &err);
        if (!f)
                tap_bail(err.msg);

        /* An editor's save: write elsewhere, rename over. */
        replace_file(path, "global:\n  b: 2\nsimpleModuleEnabled: true\n");
        tap_ok(wait_for(&rec, 1, 0), "watch: rename over the file is a change");
        tap_is_str(rec.data, "{\"global\":{\"b\":2},\"simpleModuleEnabled\":true}",
                   "watch: with the new data");
        _cleanup_free_ char *now = data_json(f);
        tap_is_str(now, rec.data, "watch: ao_config_file_data() has it");

        /* In place (O_TRUNC + write). */
        write_file(path, "global:\n  b: 3\n");
        tap_ok(wait_for(&rec, 2, 0), "watch: writing the file in place is a change");
        tap_is_str(rec.data, "{\"global\":{\"b\":3}}", "watch: with the new data");

        /* The same data in another form is no change. */
        write_file(path, "global: \"b: 3\"\n# comment\n");
        replace_file(path, "global: {b: 3}\n");
        run_until_quiet();
        tap_is_int(rec.changes, 2, "watch: the same data written differently is no change");

        /* Invalid: reported once, the data stays. */
        write_file(path, "global:\n  b: 4\nsimpleModuleEnabled: maybe\n");
        tap_ok(wait_for(&rec, 2, 1), "watch: an invalid edit is reported");
        _cleanup_free_ char *want =
            ao_xasprintf("%s: key 'simpleModuleEnabled': must be \"true\" or \"false\", "
                         "not 'maybe'",
                         path);
        tap_is_str(rec.error, want, "watch: the error names the file and the key");
        free(now);
        now = data_json(f);
        tap_is_str(now, "{\"global\":{\"b\":3}}", "watch: the data is unchanged");
        write_file(path, "global:\n  b: 4\nsimpleModuleEnabled: maybe\n");
        run_until_quiet();
        tap_is_int(rec.invalids, 1, "watch: the same bad content again is not reported again");

        /* Fixed. */
        replace_file(path, "global:\n  b: 4\n");
        tap_ok(wait_for(&rec, 3, 1), "watch: the fix is a change");
        tap_is_str(rec.data, "{\"global\":{\"b\":4}}", "watch: with the fixed data");

        /* Other files in the directory do not matter. */
        _cleanup_free_ char *other = path_in_tmp("other.yaml");
        write_file(other, "not: [valid\n");
        (void) unlink(other);
        run_until_quiet();
        tap_is_int(rec.changes + rec.invalids, 4, "watch: other files are ignored");

        /* Deleted: empty data, once it stays deleted. */
        tap_ok(unlink(path) == 0, "watch: delete the file");
        tap_ok(wait_for(&rec, 4, 1), "watch: deleting the file is a change");
        tap_is_str(rec.data, "{}", "watch: to empty data");

        /* Created again by open(O_CREAT) + write: one change, with the whole content. */
        write_file(path, "global:\n  c: 5\nsimpleModuleEnabled: false\n");
        tap_ok(wait_for(&rec, 5, 1), "watch: creating the file is a change");
        tap_is_str(rec.data, "{\"global\":{\"c\":5},\"simpleModuleEnabled\":false}", "watch: with all of it");
        run_until_quiet();
        tap_is_int(rec.changes, 5, "watch: and only one");

        /* vim's save: the file is renamed away, then written anew. No empty data in between. */
        _cleanup_free_ char *backup = path_in_tmp("config.yaml~");
        tap_ok(rename(path, backup) == 0, "watch: rename the file away");
        tap_is_int(ao_reactor_run_once(reactor, WAIT_USEC), 1, "watch: its events are handled");
        write_file(path, "global:\n  c: 6\n");
        (void) unlink(backup);
        tap_ok(wait_for(&rec, 6, 1), "watch: the file written anew is a change");
        tap_is_str(rec.data, "{\"global\":{\"c\":6}}", "watch: straight to the new data");

        ao_config_file_free(f);
        (void) unlink(path);
        rec_done(&rec);
}

static void test_file_set(void)
{
        struct ao_error err = {0};
        struct rec rec = {0};
        struct stat st;
        _cleanup_free_ char *path = path_in_tmp("config.yaml");
        write_file(path, YAML_STRINGS);
        (void) chmod(path, 0640);
        struct ao_config_file *f = open_file(path, &rec, &err);
        if (!f)
                tap_bail(err.msg);

        /* Setting what the file has already writes nothing. */
        cJSON *same = cJSON_CreateFalse();
        tap_is_int(ao_config_file_set(f, "simpleModuleEnabled", same, &err), 0,
                   "set: the value the file has");
        _cleanup_free_ char *unchanged = read_file(path);
        tap_is_str(unchanged, YAML_STRINGS, "set: leaves the file alone");
        cJSON_Delete(same);

        /* Set one key: the file is rewritten whole, sections as mappings, flags as booleans. */
        cJSON *section = parse_json("{\"replicas\":2,\"name\":\"yes\",\"text\":\"l1\\nl2\\n\"}");
        tap_is_int(ao_config_file_set(f, "simpleModule", section, &err), 0, "set: a section");
        _cleanup_free_ char *content = read_file(path);
        tap_is_str(
            content,
            "global:\n  a: 1\nsimpleModule:\n  replicas: 2\n  name: \"yes\"\n  text: |\n    l1\n    l2\n"
            "simpleModuleEnabled: false\notherModuleMaintenance: NoResourceReconciliation\n",
            "set: file content, other keys kept in their place");
        tap_ok(stat(path, &st) == 0 && (st.st_mode & 07777) == 0640, "set: the mode is kept");
        tap_is_int(count_dir_entries(), 1, "set: no temporary file left");
        _cleanup_free_ char *now = data_json(f);
        tap_is_str(
            now,
            "{\"global\":{\"a\":1},\"otherModuleMaintenance\":\"NoResourceReconciliation\",\"simpleModule\":"
            "{\"name\":\"yes\",\"replicas\":2,\"text\":\"l1\\nl2\\n\"},\"simpleModuleEnabled\":false}",
            "set: the data has it");

        /* Our own write is no change; an edit after it is exactly one. */
        run_until_quiet();
        tap_is_int(rec.changes + rec.invalids, 0, "set: our own write is not reported");
        replace_file(path, "global:\n  a: 2\n");
        tap_ok(wait_for(&rec, 1, 0), "set: the watch still works");
        tap_is_str(rec.data, "{\"global\":{\"a\":2}}", "set: and reports the edit");
        run_until_quiet();
        tap_is_int(rec.changes, 1, "set: only that one change");

        /* Another key edited just before the set (not seen by the loop yet) is kept, and reported. */
        replace_file(path, "global:\n  a: 3\nfooEnabled: true\n");
        cJSON *flag = cJSON_CreateFalse();
        tap_is_int(ao_config_file_set(f, "simpleModuleEnabled", flag, &err), 0, "set: a flag");
        free(content);
        content = read_file(path);
        tap_is_str(content, "global:\n  a: 3\nfooEnabled: true\nsimpleModuleEnabled: false\n",
                   "set: the concurrent edit is kept in the file");
        tap_ok(wait_for(&rec, 2, 0), "set: the concurrent edit is reported");
        tap_is_str(rec.data, "{\"fooEnabled\":true,\"global\":{\"a\":3},\"simpleModuleEnabled\":false}",
                   "set: with our key too");
        run_until_quiet();
        tap_is_int(rec.changes, 2, "set: once");

        /* Remove a key; set a maintenance string that needs quoting. */
        tap_is_int(ao_config_file_set(f, "fooEnabled", NULL, &err), 0, "set: remove a key");
        cJSON *m = cJSON_CreateString("true");
        tap_is_int(ao_config_file_set(f, "fooMaintenance", m, &err), 0, "set: a maintenance string");
        free(content);
        content = read_file(path);
        tap_is_str(content, "global:\n  a: 3\nsimpleModuleEnabled: false\nfooMaintenance: \"true\"\n",
                   "set: file content");
        free(now);
        now = data_json(f);
        tap_is_str(now, "{\"fooMaintenance\":\"true\",\"global\":{\"a\":3},\"simpleModuleEnabled\":false}",
                   "set: data");
        run_until_quiet();
        tap_is_int(rec.changes + rec.invalids, 2, "set: our writes are not reported");

        /* Refused: a value of the wrong kind, a bad key, an invalid file (nothing written). */
        err = (struct ao_error){0};
        tap_is_int(ao_config_file_set(f, "simpleModuleEnabled", section, &err), -EINVAL, "set: wrong kind");
        _cleanup_free_ char *want =
            ao_xasprintf("cannot write '%s': key 'simpleModuleEnabled' must be a boolean", path);
        tap_is_str(err.msg, want, "set: message");
        err = (struct ao_error){0};
        tap_is_int(ao_config_file_set(f, "foo_bar", section, &err), -EINVAL, "set: bad key");
        tap_ok(strstr(err.msg, path) && strstr(err.msg, "'foo_bar'"), "set: message: %s", err.msg);
        write_file(path, "global: [\n");
        err = (struct ao_error){0};
        tap_is_int(ao_config_file_set(f, "global", section, &err), -EINVAL, "set: invalid file");
        free(want);
        want = ao_xasprintf(
            "cannot write '%s': %s:2:1: did not find expected node content (while parsing a flow "
            "node that starts at 2:1)",
            path, path);
        tap_is_str(err.msg, want, "set: message");
        free(content);
        content = read_file(path);
        tap_is_str(content, "global: [\n", "set: nothing written");
        tap_ok(wait_for(&rec, 2, 1), "set: the invalid file is reported by the watch");

        /* A missing file is created, 0644. */
        (void) unlink(path);
        tap_ok(wait_for(&rec, 3, 1), "set: the deletion is reported");
        tap_is_int(ao_config_file_set(f, "global", section, &err), 0, "set: creates a missing file");
        tap_ok(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644, "set: as 0644");
        free(content);
        content = read_file(path);
        tap_is_str(content, "global:\n  replicas: 2\n  name: \"yes\"\n  text: |\n    l1\n    l2\n",
                   "set: file content");
        run_until_quiet();
        tap_is_int(rec.changes + rec.invalids, 4, "set: not reported");

        cJSON_Delete(section);
        cJSON_Delete(flag);
        cJSON_Delete(m);
        ao_config_file_free(f);
        (void) unlink(path);
        rec_done(&rec);
}

static void test_file_free_in_handler(void)
{
        struct ao_error err = {0};
        struct rec rec = {0};
        _cleanup_free_ char *path = path_in_tmp("config.yaml");
        struct ao_config_file *f = open_file(path, &rec, &err);
        if (!f)
                tap_bail(err.msg);
        rec.free_in_handler = &f;
        write_file(path, "global: {a: 1}\n");
        tap_ok(wait_for(&rec, 1, 0), "free: a change");
        tap_ok(f == NULL, "free: freed from on_change");
        tap_is_int(ao_reactor_count_sources(reactor), 0, "free: its sources are gone");
        (void) unlink(path);
        rec_done(&rec);
}

int main(void)
{
        reactor = test_reactor_new();
        if (!mkdtemp(tmpdir))
                tap_bail("mkdtemp failed");

        test_emit_cases();
        test_emit_tricky();
        test_emit_special_numbers();
        test_emit_invalid_utf8();
        test_emit_big();
        test_emit_corpus();
        test_data_parse();
        test_data_format();
        test_file_open();
        test_file_watch();
        test_file_set();
        test_file_free_in_handler();

        tap_is_int(ao_reactor_count_sources(reactor), 0, "no sources left behind");
        tap_is_int(count_dir_entries(), 0, "no files left behind");
        (void) rmdir(tmpdir);
        ao_reactor_free(reactor);
        return tap_done();
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/values/yaml.c and canonical.c: scalar resolution, anchors and
 * merge keys, limits, error messages, files and canonical JSON, also as written to a file in
 * chunks (the JSON writer: the same bytes at every chunk size, write errors). yaml.c is
 * included (STYLE §12) to run the loader with small limits: the real node
 * cap would need millions of nodes.
 */
#include <fcntl.h>
#include <math.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../tap.h"
#include "../../src/values/yaml.c"
#include "ao/json-writer.h"

struct ok_case {
        const char *yaml;
        const char *json; /* ao_json_canonical() of the result */
};

struct error_case {
        const char *yaml;
        int code;
        const char *msg;
};

/* Every plain scalar form of go-yaml v2, and what quoting, tags and block scalars change. */
static const struct ok_case scalars[] = {
    {"", "null"},
    {"# only a comment\n", "null"},
    {"---\n", "null"},
    {"null", "null"},
    {"Null", "null"},
    {"NULL", "null"},
    {"~", "null"},
    {"nULL", "\"nULL\""},
    {"true", "true"},
    {"True", "true"},
    {"TRUE", "true"},
    {"false", "false"},
    {"False", "false"},
    {"FALSE", "false"},
    {"tRUE", "\"tRUE\""},
    {"yes", "true"},
    {"Yes", "true"},
    {"YES", "true"},
    {"no", "false"},
    {"No", "false"},
    {"NO", "false"},
    {"on", "true"},
    {"On", "true"},
    {"ON", "true"},
    {"off", "false"},
    {"Off", "false"},
    {"OFF", "false"},
    {"y", "true"},
    {"N", "false"},
    {"oN", "\"oN\""},
    {"yes please", "\"yes please\""},
    {"0", "0"},
    {"42", "42"},
    {"-7", "-7"},
    {"+12", "12"},
    {"-0", "0"},
    {"0x1F", "31"},
    {"0X1f", "31"},
    {"-0x10", "-16"},
    {"0o17", "15"},
    {"017", "15"},
    {"08", "8"},
    {"0b101", "5"},
    {"1_000", "1000"},
    {"1_000.5", "1000.5"},
    {"0x", "\"0x\""},
    {"0xg", "\"0xg\""},
    {"9007199254740993", "9007199254740992"},
    {"9223372036854775807", "9223372036854776000"},
    {"-9223372036854775808", "-9223372036854776000"},
    {"18446744073709551615", "18446744073709552000"},
    {"18446744073709551616", "18446744073709552000"},
    {"0x1FFFFFFFFFFFFFFFF", "\"0x1FFFFFFFFFFFFFFFF\""},
    {"10000000000", "10000000000"},
    {"1.5", "1.5"},
    {"-2e3", "-2000"},
    {"1e3", "1000"},
    {"1E+3", "1000"},
    {"1.", "1"},
    {".5", "0.5"},
    {"+.5", "0.5"},
    {"-.5", "-0.5"},
    {".5_5", "0.55"},
    {"._5", "\"._5\""},
    {"0.1", "0.1"},
    {"-0.0", "0"},
    {"1e21", "1e+21"},
    {"1e20", "100000000000000000000"},
    {"1e-7", "1e-07"},
    {"3.141592653589793", "3.141592653589793"},
    {"1e400", "\"1e400\""},
    {"1e-400", "0"},
    {"1.5e", "\"1.5e\""},
    {".", "\".\""},
    {".inf", "null"},
    {"-.Inf", "null"},
    {"+.INF", "null"},
    {".NaN", "null"},
    {".iNf", "\".iNf\""},
    {"inf", "\"inf\""},
    {"2001-12-14", "\"2001-12-14\""},
    {"1:20", "\"1:20\""},
    {"1,000", "\"1,000\""},
    {"\"123\"", "\"123\""},
    {"'true'", "\"true\""},
    {"\"\"", "\"\""},
    {"'null'", "\"null\""},
    {"!!str 12", "\"12\""},
    {"!!str yes", "\"yes\""},
    {"!!int \"12\"", "12"},
    {"!!int 0x10", "16"},
    {"!!float 1", "1"},
    {"!!float '.5'", "0.5"},
    {"!!bool 'on'", "true"},
    {"!!null ''", "null"},
    {"! 12", "\"12\""},
    {"!custom 12", "12"},
    {"!<tag:yaml.org,2002:str> 7", "\"7\""},
    {"a: |\n  line1\n  line2\n", "{\"a\":\"line1\\nline2\\n\"}"},
    {"a: |-\n  12\n", "{\"a\":\"12\"}"},
    {"a: |+\n  keep\n\nb: 1\n", "{\"a\":\"keep\\n\\n\",\"b\":1}"},
    {"a: >\n  folded\n  text\n", "{\"a\":\"folded text\\n\"}"},
    {"a: >-\n  true\n", "{\"a\":\"true\"}"},
    {"a: \"x\\ty\\u00e9\\\"\"", "{\"a\":\"x\\ty\xc3\xa9\\\"\"}"},
    {"a: 'it''s'", "{\"a\":\"it's\"}"},
    {"a: \"\\N\\_\\L\"", "{\"a\":\"\\u0085\xc2\xa0\\u2028\"}"},
};

/* Collections, keys, anchors, merge keys, JSON input and whitespace. */
static const struct ok_case documents[] = {
    {"a: 1\nb: [1, two, {c: null}]\n", "{\"a\":1,\"b\":[1,\"two\",{\"c\":null}]}"},
    {"{\"a\": 1}", "{\"a\":1}"},
    {"{\"b\":[true,false,null],\"a\":{\"x\":-1.5e-3}}", "{\"a\":{\"x\":-0.0015},\"b\":[true,false,null]}"},
    {"[]", "[]"},
    {"{}", "{}"},
    {"a:\r\n  b: 1\r\n  c: [x]\r\n", "{\"a\":{\"b\":1,\"c\":[\"x\"]}}"},
    {"a:\t1\nb: \"tab\there\"\n", "{\"a\":1,\"b\":\"tab\\there\"}"},
    {"\xef\xbb\xbf"
     "a: 1\n",
     "{\"a\":1}"},
    {"- a\n- - b\n  - c\n", "[\"a\",[\"b\",\"c\"]]"},
    {"1: a\n0x10: b\ntrue: c\nnull: d\n1.50: e\n.inf: f\n-.inf: g\n.nan: h\n~x: i\n",
     "{\"-.inf\":\"g\",\".inf\":\"f\",\".nan\":\"h\",\"1\":\"a\",\"1.5\":\"e\",\"16\":\"b\",\"null\":\"d\","
     "\"true\":\"c\",\"~x\":\"i\"}"},
    {"on: push\n", "{\"true\":\"push\"}"},
    /* go-yaml v2 reads y and n as booleans, keys included: sigs.k8s.io/yaml gives the same. */
    {"x: 1\ny: 2\nn: 3\n", "{\"false\":3,\"true\":2,\"x\":1}"},
    {"? \n: empty key\n", "{\"null\":\"empty key\"}"},
    {"9007199254740993: exact\n", "{\"9007199254740993\":\"exact\"}"},
    {"a: &x {k: 1}\nb: *x\n", "{\"a\":{\"k\":1},\"b\":{\"k\":1}}"},
    {"- &s str\n- *s\n- &n 5\n- *n\n", "[\"str\",\"str\",5,5]"},
    {"&k key: 1\nv: *k\n", "{\"key\":1,\"v\":\"key\"}"},
    {"k: &k 12\n*k : v\n", "{\"12\":\"v\",\"k\":12}"},
    {"a: &x 1\nb: &x 2\nc: *x\n", "{\"a\":1,\"b\":2,\"c\":2}"},
    {"base: &b {x: 1, z: 2}\nm:\n  <<: *b\n  z: 3\n", "{\"base\":{\"x\":1,\"z\":2},\"m\":{\"x\":1,\"z\":3}}"},
    {"base: &b {x: 1, z: 2}\nm:\n  z: 3\n  <<: *b\n", "{\"base\":{\"x\":1,\"z\":2},\"m\":{\"x\":1,\"z\":3}}"},
    {"m:\n  <<: [{a: 1, b: 1}, {b: 2, c: 2}]\n  c: 3\n", "{\"m\":{\"a\":1,\"b\":1,\"c\":3}}"},
    {"a: &a {x: 1}\nb: &b {w: 2}\nm: {<<: [*a, *b], z: 3}\n",
     "{\"a\":{\"x\":1},\"b\":{\"w\":2},\"m\":{\"w\":2,\"x\":1,\"z\":3}}"},
    {"m:\n  <<: &inline {k: v}\nl: *inline\n", "{\"l\":{\"k\":\"v\"},\"m\":{\"k\":\"v\"}}"},
    {"\"<<\": 1\n", "{\"<<\":1}"},
    {"!!merge <<: {a: 1}\n", "{\"a\":1}"},
    {"a: &a [1, {b: [2]}]\nc: [*a, *a]\n", "{\"a\":[1,{\"b\":[2]}],\"c\":[[1,{\"b\":[2]}],[1,{\"b\":[2]}]]}"},
    {"---\na: 1\n...\n", "{\"a\":1}"},
    {"%YAML 1.1\n---\n!!map {a: !!seq [1]}\n", "{\"a\":[1]}"},
    {"s: caf\xc3\xa9 \xf0\x9f\x99\x82\n", "{\"s\":\"caf\xc3\xa9 \xf0\x9f\x99\x82\"}"},
};

static const struct error_case errors[] = {
    {"a: 1\n b: 2\n", -EINVAL, "values.yaml:2:3: mapping values are not allowed in this context"},
    {"a: 1\nb: 2\na: 3\n", -EINVAL, "values.yaml:3:1: duplicate key 'a'"},
    {"x:\n  k: 1\n  \"k\": 2\n", -EINVAL, "values.yaml:3:3: duplicate key 'k'"},
    {"1: a\n\"1\": b\n", -EINVAL, "values.yaml:2:1: duplicate key '1'"},
    {"yes: a\ntrue: b\n", -EINVAL, "values.yaml:2:1: duplicate key 'true'"},
    {"{~: a, null: b}", -EINVAL, "values.yaml:1:8: duplicate key 'null'"},
    {"k: &k a\na: 1\n*k : 2\n", -EINVAL, "values.yaml:3:1: duplicate key 'a'"},
    {"\"a\\nb\": 1\n\"a\\nb\": 2\n", -EINVAL, "values.yaml:2:1: duplicate key 'a\\nb'"},
    {"[a]: 1\n", -EINVAL, "values.yaml:1:1: a mapping or sequence cannot be a mapping key"},
    {"? {a: 1}\n: 2\n", -EINVAL, "values.yaml:1:3: a mapping or sequence cannot be a mapping key"},
    {"s: &s [1]\n*s : 2\n", -EINVAL, "values.yaml:2:1: a mapping or sequence cannot be a mapping key"},
    {"a: 1\n---\nb: 2\n", -EINVAL, "values.yaml:2:1: only one document is allowed, a second one starts here"},
    {"a: 1\n...\n---\nb: 2\n", -EINVAL,
     "values.yaml:3:1: only one document is allowed, a second one starts here"},
    {"a: 1\n...\nb: 2\n", -EINVAL, "values.yaml:3:1: did not find expected <document start>"},
    {"a: [1, 2\n", -EINVAL,
     "values.yaml:2:1: did not find expected ',' or ']' (while parsing a flow sequence that starts at 1:4)"},
    {"key: \"open\n", -EINVAL,
     "values.yaml:2:1: found unexpected end of stream (while scanning a quoted scalar that starts at 1:6)"},
    {"a:\n  b: 1\n c: 2\n", -EINVAL,
     "values.yaml:3:2: did not find expected key (while parsing a block mapping that starts at 1:1)"},
    {"a: 1\n\xff\n", -EINVAL, "values.yaml:2:1: invalid leading UTF-8 octet (0xff)"},
    {"a: \x01\n", -EINVAL, "values.yaml:1:4: control characters are not allowed (0x1)"},
    {"a: \"x\\0y\"\n", -EINVAL, "values.yaml:1:4: NUL characters in strings are not supported"},
    {"*nope\n", -EINVAL, "values.yaml:1:1: unknown anchor 'nope'"},
    {"&a [1, *a]\n", -EINVAL, "values.yaml:1:8: anchor 'a' is used inside its own node"},
    {"<<: 1\n", -EINVAL,
     "values.yaml:1:5: merge key '<<' needs a mapping or a sequence of mappings as its value"},
    {"<<: [{a: 1}, 2]\n", -EINVAL,
     "values.yaml:1:5: merge key '<<' needs a mapping or a sequence of mappings as its value"},
    {"s: &s [1]\nm: {<<: *s}\n", -EINVAL,
     "values.yaml:2:9: merge key '<<' needs a mapping or a sequence of mappings as its value"},
    {"!!int 1.5\n", -EINVAL, "values.yaml:1:1: '1.5' is not a valid !!int"},
    {"a: !!bool 1\n", -EINVAL, "values.yaml:1:4: '1' is not a valid !!bool"},
    {"!!null x\n", -EINVAL, "values.yaml:1:1: 'x' is not a valid !!null"},
    {"!!map [1]\n", -EINVAL, "values.yaml:1:1: !!map cannot tag a sequence"},
    {"!!str {a: 1}\n", -EINVAL, "values.yaml:1:1: !!str cannot tag a mapping"},
    {"a: !!seq x\n", -EINVAL, "values.yaml:1:4: !!seq cannot tag a scalar"},
};

/* A case's YAML as one line for its TAP name. */
static const char *one_line(struct ao_strbuf *sb, const char *yaml)
{
        ao_strbuf_reset(sb);
        ao_strbuf_append_sanitized(sb, yaml);
        return ao_strbuf_str(sb);
}

static void test_table(const struct ok_case *cases, size_t n, const char *what)
{
        struct ao_strbuf name = {0};
        for (size_t i = 0; i < n; i++) {
                struct ao_error err = {0};
                cJSON *json = NULL;
                one_line(&name, cases[i].yaml);
                int r = ao_yaml_load(cases[i].yaml, strlen(cases[i].yaml), "values.yaml", &json, &err);
                if (r < 0) {
                        tap_ok(false, "%s %zu: '%s' loads", what, i, name.buf);
                        tap_diag("%s", err.msg);
                        continue;
                }
                char *text = ao_json_canonical(json);
                tap_is_str(text, cases[i].json, "%s %zu: '%s'", what, i, name.buf);

                /* The fuzz invariant on every case: canonical text loads back to itself. */
                cJSON *again = NULL;
                r = ao_yaml_load(text, strlen(text), "canonical", &again, &err);
                char *text2 = r < 0 ? NULL : ao_json_canonical(again);
                if (!text2 || strcmp(text, text2) != 0) {
                        tap_ok(false, "%s %zu: canonical text reloads", what, i);
                        tap_diag("%s", r < 0 ? err.msg : text2);
                }
                free(text2);
                cJSON_Delete(again);
                free(text);
                cJSON_Delete(json);
        }
        ao_strbuf_done(&name);
}

static void test_errors(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(errors); i++) {
                struct ao_error err = {0};
                cJSON *json = (cJSON *) 0x1; /* must stay untouched on failure */
                int r = ao_yaml_load(errors[i].yaml, strlen(errors[i].yaml), "values.yaml", &json, &err);
                tap_ok(r == errors[i].code && err.code == r && json == (cJSON *) 0x1 &&
                           strcmp(err.msg, errors[i].msg) == 0,
                       "error %zu: %s", i, errors[i].msg);
                if (strcmp(err.msg, errors[i].msg) != 0 || r != errors[i].code)
                        tap_diag("got %d '%s'", r, err.msg);
        }

        struct ao_error err = {0};
        cJSON *json = NULL;
        tap_is_int(ao_yaml_load("a: [", 4, NULL, &json, &err), -EINVAL, "error: NULL filename");
        tap_ok(strncmp(err.msg, "<input>:2:1: ", 13) == 0, "error: NULL filename reads <input> (%s)",
               err.msg);
        tap_is_int(ao_yaml_load("a", AO_YAML_MAX_INPUT + 1, "big.yaml", &json, &err), -EFBIG,
                   "error: input over AO_YAML_MAX_INPUT refused before reading it");
        tap_is_str(err.msg, "big.yaml: input is larger than 67108864 bytes", "error: input size message");
        /* Length is honoured: no NUL terminator needed, trailing bytes ignored. */
        tap_is_int(ao_yaml_load("a: 1garbage: [", 4, "n.yaml", &json, &err), 0,
                   "load: only @len bytes are read");
        char *text = ao_json_canonical(json);
        tap_is_str(text, "{\"a\":1}", "load: value from the first @len bytes");
        free(text);
        cJSON_Delete(json);
}

static double now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void test_billion_laughs(void)
{
        struct ao_strbuf sb = {0};
        ao_strbuf_append(&sb,
                         "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
        for (char c = 'b'; c <= 'i'; c++) {
                ao_strbuf_appendf(&sb, "%c: &%c [", c, c);
                for (int i = 0; i < 9; i++)
                        ao_strbuf_appendf(&sb, "%s*%c", i ? "," : "", c - 1);
                ao_strbuf_append(&sb, "]\n");
        }
        struct ao_error err = {0};
        cJSON *json = NULL;
        double start = now();
        int r = ao_yaml_load(sb.buf, sb.len, "lol.yaml", &json, &err);
        double elapsed = now() - start;
        tap_is_int(r, -E2BIG, "billion laughs: refused");
        tap_is_str(err.msg, "lol.yaml:4:11: document contains excessive aliasing",
                   "billion laughs: stopped by the alias ratio at the 4th level (~7000 nodes)");
        tap_ok(elapsed < 1.0, "billion laughs: fails fast (%.3f s)", elapsed);

        /* The same expansion where the text itself is large enough for the ratio: the node cap stops it. */
        struct limits small = {.max_nodes = 500, .max_alias_bytes = 1 << 20, .max_depth = 64};
        r = load(sb.buf, sb.len, "lol.yaml", &small, &json, &err);
        tap_is_int(r, -E2BIG, "node cap: refused");
        tap_is_str(err.msg, "lol.yaml:3:20: more than 500 nodes after alias expansion",
                   "node cap: names the alias that crosses it");
        ao_strbuf_done(&sb);

        /* Right at the cap is fine: 1 sequence + 3 scalars. */
        small.max_nodes = 4;
        tap_is_int(load("[1, 2, 3]", 9, "f", &small, &json, &err), 0, "node cap: exactly max_nodes loads");
        cJSON_Delete(json);
        tap_is_int(load("[1, 2, 3, 4]", 12, "f", &small, &json, &err), -E2BIG, "node cap: one more fails");
        tap_is_str(err.msg, "f:1:11: more than 4 nodes after alias expansion", "node cap: message");

        /* Strings: a long anchored string aliased again and again. */
        small = (struct limits){.max_nodes = 1000, .max_alias_bytes = 100, .max_depth = 64};
        const char *strings = "a: &a \"0123456789012345678901234567890123456789\"\nb: [*a, *a, *a]\n";
        r = load(strings, strlen(strings), "s.yaml", &small, &json, &err);
        tap_is_int(r, -E2BIG, "alias bytes: refused");
        tap_is_str(err.msg, "s.yaml:2:13: aliases copy more than 100 bytes of strings",
                   "alias bytes: message");
        small.max_alias_bytes = 120;
        tap_is_int(load(strings, strlen(strings), "s.yaml", &small, &json, &err), 0,
                   "alias bytes: 120 is enough");
        cJSON_Delete(json);
}

static void test_depth(void)
{
        struct ao_strbuf sb = {0};
        struct ao_error err = {0};
        cJSON *json = NULL;
        for (int i = 0; i < AO_YAML_MAX_DEPTH; i++)
                ao_strbuf_append_c(&sb, '[');
        for (int i = 0; i < AO_YAML_MAX_DEPTH; i++)
                ao_strbuf_append_c(&sb, ']');
        tap_is_int(ao_yaml_load(sb.buf, sb.len, "deep.yaml", &json, &err), 0,
                   "depth: AO_YAML_MAX_DEPTH loads");
        cJSON_Delete(json);

        ao_strbuf_reset(&sb);
        for (int i = 0; i < 100000; i++)
                ao_strbuf_append(&sb, "{a: ");
        tap_is_int(ao_yaml_load(sb.buf, sb.len, "deep.yaml", &json, &err), -E2BIG,
                   "depth: 100000 levels refused");
        tap_is_str(err.msg, "deep.yaml:1:1025: nesting deeper than 256 levels",
                   "depth: message names the level");

        /* Aliases count their own height: 200 levels of anchor placed 100 levels down. */
        ao_strbuf_reset(&sb);
        ao_strbuf_append(&sb, "- &a ");
        for (int i = 0; i < 200; i++)
                ao_strbuf_append_c(&sb, '[');
        for (int i = 0; i < 200; i++)
                ao_strbuf_append_c(&sb, ']');
        ao_strbuf_append(&sb, "\n- ");
        for (int i = 0; i < 100; i++)
                ao_strbuf_append_c(&sb, '[');
        ao_strbuf_append(&sb, "*a");
        for (int i = 0; i < 100; i++)
                ao_strbuf_append_c(&sb, ']');
        tap_is_int(ao_yaml_load(sb.buf, sb.len, "deep.yaml", &json, &err), -E2BIG, "depth: through an alias");
        tap_is_str(err.msg, "deep.yaml:2:103: nesting deeper than 256 levels", "depth: alias message");
        ao_strbuf_done(&sb);
}

static void test_long_keys(void)
{
        struct ao_strbuf sb = {0};
        struct ao_error err = {0};
        cJSON *json = NULL;
        ao_strbuf_append(&sb, "? ");
        for (int i = 0; i < AO_YAML_MAX_KEY_CHARS; i++)
                ao_strbuf_append_c(&sb, 'k');
        ao_strbuf_append(&sb, "\n: 1\n");
        tap_is_int(ao_yaml_load(sb.buf, sb.len, "k.yaml", &json, &err), 0, "keys: 1022 characters load");
        char *text = ao_json_canonical(json);
        cJSON *again = NULL;
        tap_is_int(ao_yaml_load(text, strlen(text), "k.json", &again, &err), 0,
                   "keys: and load back from JSON");
        free(text);
        cJSON_Delete(again);
        cJSON_Delete(json);

        /* 200 control characters are 1200 characters as JSON. */
        ao_strbuf_reset(&sb);
        ao_strbuf_append(&sb, "? \"");
        for (int i = 0; i < 200; i++)
                ao_strbuf_append(&sb, "\\x01");
        ao_strbuf_append(&sb, "\"\n: 1\n");
        tap_is_int(ao_yaml_load(sb.buf, sb.len, "k.yaml", &json, &err), -E2BIG,
                   "keys: escaped length counts");
        tap_ok(strstr(err.msg, "k.yaml:1:3: mapping key '\\x01\\x01") == err.msg &&
                   strstr(err.msg, "...' is longer than 1022 characters"),
               "keys: message (%s)", err.msg);
        ao_strbuf_done(&sb);
}

static void test_files(void)
{
        struct ao_error err = {0};
        cJSON *json = NULL;
        tap_is_int(ao_yaml_load_file("/nonexistent/values.yaml", &json, &err), -ENOENT, "file: missing");
        tap_is_str(err.msg, "cannot read '/nonexistent/values.yaml': No such file or directory",
                   "file: missing names path and errno");
        tap_is_int(ao_yaml_load_file("/", &json, &err), -EISDIR, "file: directory");
        tap_is_str(err.msg, "cannot read '/': Is a directory", "file: directory message");

        char path[] = "/tmp/test-yaml-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0)
                tap_bail("mkstemp");
        const char *text = "a:\n  - 1\n  - b: x\n c\n";
        tap_ok(write(fd, text, strlen(text)) == (ssize_t) strlen(text), "file: written");
        tap_is_int(ao_yaml_load_file(path, &json, &err), -EINVAL, "file: syntax error");
        char want[256];
        snprintf(want, sizeof(want),
                 "%s:4:2: did not find expected key (while parsing a block mapping that starts at 1:1)",
                 path);
        tap_is_str(err.msg, want, "file: errors carry the path as file name");

        tap_ok(ftruncate(fd, 0) == 0 && pwrite(fd, "k: v\n", 5, 0) == 5, "file: rewritten");
        tap_is_int(ao_yaml_load_file(path, &json, &err), 0, "file: loads");
        char *canon = ao_json_canonical(json);
        tap_is_str(canon, "{\"k\":\"v\"}", "file: content");
        free(canon);
        cJSON_Delete(json);

        /* A sparse file just over the cap is refused from fstat, without reading it. */
        tap_ok(ftruncate(fd, (off_t) AO_YAML_MAX_INPUT + 1) == 0, "file: grown past the cap");
        tap_is_int(ao_yaml_load_file(path, &json, &err), -EFBIG, "file: too large");
        snprintf(want, sizeof(want), "cannot read '%s': larger than 67108864 bytes", path);
        tap_is_str(err.msg, want, "file: too large message");
        close(fd);
        unlink(path);
}

static void test_canonical(void)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "b", 42);
        cJSON_AddNumberToObject(o, "a", -7);
        cJSON_AddNumberToObject(o, "B", 1e10);
        cJSON_AddNumberToObject(o, "\xc3\xa9", 0.1);
        cJSON_AddNumberToObject(o, "aa", 1.0 / 3);
        cJSON_AddNumberToObject(o, "c", 1e300);
        cJSON_AddNumberToObject(o, "d", 5e-324);
        cJSON_AddNumberToObject(o, "e", 9007199254740993.0);
        cJSON_AddNumberToObject(o, "f", 123456789012345678901234.0);
        cJSON_AddNumberToObject(o, "g", -0.0);
        cJSON_AddNumberToObject(o, "h", 2.5e-5);
        cJSON_AddNumberToObject(o, "i", 9007199254740991.0);
        cJSON_AddNumberToObject(o, "j", -9007199254740991.0);
        cJSON_AddNumberToObject(o, "k", 1e17);
        cJSON *nested = cJSON_AddObjectToObject(o, "n");
        cJSON_AddStringToObject(nested, "z", "q\"\\\n\t\x01\x7f/");
        cJSON_AddStringToObject(nested, "y", "\xe2\x80\xa8\xc2\x85\xc2\x9f\xef\xbf\xbe \xe2\x82\xac");
        cJSON_AddStringToObject(nested, "x", "bad \xff utf8");
        cJSON_AddItemToObject(nested, "w", cJSON_CreateRaw("{\"raw\":1}"));
        cJSON *arr = cJSON_AddArrayToObject(o, "arr");
        cJSON_AddItemToArray(arr, cJSON_CreateTrue());
        cJSON_AddItemToArray(arr, cJSON_CreateNull());
        cJSON_AddItemToArray(arr, cJSON_CreateObject());
        cJSON_AddItemToArray(arr, cJSON_CreateArray());

        char *before = cJSON_PrintUnformatted(o);
        char *text = ao_json_canonical(o);
        tap_is_str(
            text,
            "{\"B\":10000000000,\"a\":-7,\"aa\":0.3333333333333333,\"arr\":[true,null,{},[]],\"b\":42,"
            "\"c\":1e+300,\"d\":4.94065645841247e-324,\"e\":9007199254740992,\"f\":1.2345678901234569e+23,"
            "\"g\":0,\"h\":2.5e-05,\"i\":9007199254740991,\"j\":-9007199254740991,\"k\":100000000000000000,"
            "\"n\":{\"w\":{\"raw\":1},\"x\":\"bad \xef\xbf\xbd utf8\","
            "\"y\":\"\\u2028\\u0085\\u009f\\ufffe \xe2\x82\xac\",\"z\":\"q\\\"\\\\\\n\\t\\u0001\\u007f/\"},"
            "\"\xc3\xa9\":0.1}",
            "canonical: sorted keys, numbers, escapes");
        char *after = cJSON_PrintUnformatted(o);
        tap_is_str(after, before, "canonical: input tree untouched");
        free(after);
        free(before);
        free(text);
        cJSON_Delete(o);

        /* Equal keys (possible in trees from cJSON_Parse) keep their order. */
        cJSON *dup = cJSON_Parse("{\"k\":2,\"a\":0,\"k\":1}");
        text = ao_json_canonical(dup);
        tap_is_str(text, "{\"a\":0,\"k\":2,\"k\":1}", "canonical: stable for equal keys");
        free(text);
        cJSON_Delete(dup);

        double nums[] = {NAN, INFINITY, -INFINITY, 1e21, 999999999999999999999.0, -1e-7, 1e16, 0.3};
        const char *want[] = {"null", "null", "null", "1e+21", "1e+21", "-1e-07", "10000000000000000", "0.3"};
        for (size_t i = 0; i < AO_ARRAY_SIZE(nums); i++) {
                cJSON n = {.type = cJSON_Number, .valuedouble = nums[i]};
                text = ao_json_canonical(&n);
                tap_is_str(text, want[i], "canonical: number %zu", i);
                free(text);
        }
        text = ao_json_canonical(NULL);
        tap_is_str(text, "null", "canonical: NULL tree is null");
        free(text);

        /* No recursion: 100000 levels built by code. */
        cJSON *deep = cJSON_CreateArray(), *cur = deep;
        for (int i = 0; i < 100000; i++) {
                cJSON *next = cJSON_CreateArray();
                cJSON_AddItemToArray(cur, next);
                cur = next;
        }
        text = ao_json_canonical(deep);
        tap_ok(strlen(text) == 200002 && text[0] == '[' && text[200001] == ']', "canonical: 100000 levels");
        free(text);
        /* cJSON_Delete recurses: unlink level by level. */
        while (deep) {
                cJSON *child = deep->child;
                deep->child = NULL;
                cJSON_Delete(deep);
                deep = child;
        }
}

/* The file @fd holds, whole. */
static char *file_text(int fd)
{
        struct stat st;
        if (fstat(fd, &st) < 0)
                tap_bail("fstat");
        char *text = ao_xmalloc((size_t) st.st_size + 1);
        if (pread(fd, text, (size_t) st.st_size, 0) != st.st_size)
                tap_bail("pread");
        text[st.st_size] = '\0';
        return text;
}

/* @json written to a new file with flushes every @chunk bytes; the file's text. */
static char *written_in_chunks(const cJSON *json, size_t chunk)
{
        int fd = memfd_create("writer", MFD_CLOEXEC);
        if (fd < 0)
                tap_bail("memfd_create");
        struct ao_json_writer w;
        ao_json_writer_init(&w, fd);
        w.chunk = chunk;
        ao_json_write(&w, json);
        size_t len = 0;
        int r = ao_json_writer_finish(&w, &len);
        ao_json_writer_done(&w);
        char *text = file_text(fd);
        close(fd);
        if (r < 0 || len != strlen(text)) {
                free(text);
                return ao_xasprintf("error %d, %zu bytes", r, len);
        }
        return text;
}

/* What goes to a file is ao_json_canonical()'s text, whatever the chunk size. */
static bool same_in_chunks(const cJSON *json)
{
        char *want = ao_json_canonical(json);
        const size_t chunks[] = {1, 3, 64, 4096, AO_JSON_WRITER_CHUNK};
        bool same = true;
        for (size_t i = 0; i < AO_ARRAY_SIZE(chunks); i++) {
                char *got = written_in_chunks(json, chunks[i]);
                if (strcmp(got, want) != 0) {
                        tap_diag("chunk %zu: %.200s, not %.200s", chunks[i], got, want);
                        same = false;
                }
                free(got);
        }
        free(want);
        return same;
}

/* A node of a tree the substitute writes itself: the array under "items". */
static int substitute_items(const cJSON *node, struct ao_json_writer *w, void *userdata)
{
        (void) userdata;
        if (!node->string || strcmp(node->string, "items") != 0)
                return 0;
        if (cJSON_IsString(node))
                return -EPROTO;
        ao_json_write_raw(w, "[\"from\",\"elsewhere\"]");
        return 1;
}

static void test_writer(void)
{
        bool same = true;
        for (size_t i = 0; i < AO_ARRAY_SIZE(documents); i++) {
                cJSON *json = NULL;
                if (ao_yaml_load(documents[i].yaml, strlen(documents[i].yaml), "doc", &json, NULL) < 0)
                        continue;
                same = same_in_chunks(json) && same;
                cJSON_Delete(json);
        }
        tap_ok(same, "writer: every document of the table as canonical text, at every chunk size");

        /* Bigger than a few chunks, with every kind of value. */
        cJSON *big = cJSON_CreateArray();
        for (int i = 0; i < 20000; i++) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddNumberToObject(o, "n", i * 1e15 + 0.5);
                cJSON_AddNumberToObject(o, "big", 12345678901234567890.0 * i);
                cJSON_AddStringToObject(
                    o, "s", i % 2 ? "\xe2\x80\xa8 \"q\" \xc2\x85 \x01 \xf0\x9f\x98\x80" : "plain");
                cJSON_AddItemToObject(o, "z", cJSON_CreateBool(i % 3));
                cJSON_AddItemToObject(o, "a", i % 5 ? cJSON_CreateNull() : cJSON_CreateArray());
                cJSON_AddItemToArray(big, o);
        }
        tap_ok(same_in_chunks(big), "writer: 20000 objects, every kind of value, at every chunk size");

        /* Written from offset 0 over what the file held; what lies beyond stays for the caller to cut. */
        int fd = memfd_create("over", MFD_CLOEXEC);
        char old[300];
        memset(old, 'x', sizeof(old));
        if (fd < 0 || write(fd, old, sizeof(old)) != (ssize_t) sizeof(old))
                tap_bail("memfd");
        cJSON *small = cJSON_Parse("{\"b\":1,\"a\":[true]}");
        struct ao_json_writer w;
        ao_json_writer_init(&w, fd);
        ao_json_write(&w, small);
        size_t len = 0;
        tap_is_int(ao_json_writer_finish(&w, &len), 0, "writer: over old contents");
        ao_json_writer_done(&w);
        char *text = file_text(fd);
        tap_ok(len == 18 && strncmp(text, "{\"a\":[true],\"b\":1}", 18) == 0 && text[18] == 'x' &&
                   strlen(text) == sizeof(old),
               "writer: from offset 0, the rest untouched (%zu: %.30s)", len, text);
        free(text);
        close(fd);

        /* A substitute writes a value itself, or stops the walk with an error. */
        cJSON *tree = cJSON_Parse("{\"x\":{\"items\":[1,2,3],\"k\":true},\"items\":{\"deep\":1}}");
        ao_json_writer_init(&w, -1);
        ao_json_write_with(&w, tree, substitute_items, NULL);
        tap_is_int(ao_json_writer_finish(&w, NULL), 0, "writer: substitute");
        text = ao_json_writer_steal(&w);
        tap_is_str(
            text,
            "{\"items\":[\"from\",\"elsewhere\"],\"x\":{\"items\":[\"from\",\"elsewhere\"],\"k\":true}}",
            "writer: the substitute's values in place of the tree's");
        free(text);
        ao_json_writer_done(&w);
        cJSON_AddStringToObject(cJSON_GetObjectItem(tree, "x"), "items", "refused");
        ao_json_writer_init(&w, -1);
        ao_json_write_with(&w, tree, substitute_items, NULL);
        tap_is_int(ao_json_writer_finish(&w, NULL), -EPROTO, "writer: a substitute's error stops the walk");
        ao_json_writer_done(&w);
        cJSON_Delete(tree);

        /* Write errors: reported by finish, and what follows is dropped, not kept in memory. */
        fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                tap_bail("/dev/full");
        ao_json_writer_init(&w, fd);
        w.chunk = 1024;
        for (int i = 0; i < 10 && ao_json_writer_error(&w) == 0; i++)
                ao_json_write(&w, big);
        tap_is_int(ao_json_writer_error(&w), -ENOSPC,
                   "writer: a full device fails the writer at the first flush");
        for (int i = 0; i < 3; i++)
                ao_json_write(&w, big);
        tap_ok(w._buf.cap < 64 * 1024, "writer: after the error nothing piles up (%zu bytes held)",
               w._buf.cap);
        tap_is_int(ao_json_writer_finish(&w, &len), -ENOSPC, "writer: finish reports the full device");
        ao_json_writer_done(&w);
        close(fd);

        fd = memfd_create("closed", MFD_CLOEXEC);
        close(fd);
        ao_json_writer_init(&w, fd);
        ao_json_write(&w, small);
        tap_is_int(ao_json_writer_finish(&w, &len), -EBADF, "writer: a closed fd is reported");
        ao_json_writer_done(&w);
        cJSON_Delete(small);
        cJSON_Delete(big);
}

/* ao_yaml_load_stream() and ao_json_load_stream(): one array element per document or value. */
static void test_streams(void)
{
        static const struct ok_case yaml_ok[] = {
            {"", "[]"},
            {"# comment only\n", "[]"},
            {"---\n---\n...\n", "[]"},
            {"a: 1\n", "[{\"a\":1}]"},
            {"a: 1\n---\nb: yes\n", "[{\"a\":1},{\"b\":true}]"},
            {"---\na: 1\n---\n~\n---\n---\n- x\n...\n---\n\"s\"\n", "[{\"a\":1},[\"x\"],\"s\"]"},
            {"a: &x [1]\nb: *x\n---\nc: &x 2\nd: *x\n", "[{\"a\":[1],\"b\":[1]},{\"c\":2,\"d\":2}]"},
            {"{\"a\": 1}\n---\n[1, 2]\n", "[{\"a\":1},[1,2]]"},
        };
        static const struct error_case yaml_errors[] = {
            {"a: &x 1\n---\nb: *x\n", -EINVAL, "s.yaml:3:4: unknown anchor 'x'"},
            {"a: 1\n---\nb: [\n", -EINVAL,
             "s.yaml:4:1: did not find expected node content (while parsing a flow node that starts at 4:1)"},
            {"a: 1\na: 2\n", -EINVAL, "s.yaml:2:1: duplicate key 'a'"},
        };
        static const struct ok_case json_ok[] = {
            {"", "[]"},
            {" \n\t\r\n", "[]"},
            {"\xEF\xBB\xBF{}", "[{}]"},
            {"{\"a\":1}{\"b\":[2]}", "[{\"a\":1},{\"b\":[2]}]"},
            {"{\"a\":1}\n[true, null]\r\n\"s\" 1.5 -2e3 null",
             "[{\"a\":1},[true,null],\"s\",1.5,-2000,null]"},
            {"{\"s\":\"a\\\"b}\"}{}", "[{\"s\":\"a\\\"b}\"},{}]"},
        };
        static const struct error_case json_errors[] = {
            {"{\"a\":1}\n{\"a\":", -EINVAL, "s.json:2:6: unexpected end of input"},
            {"{\"a\":1}\n{\"a\" 1}", -EINVAL, "s.json:2:6: invalid JSON"},
            {"{\"a\":\"x", -EINVAL, "s.json:1:6: unterminated string"},
            {"{\"a\":01}", -EINVAL, "s.json:1:6: invalid number"},
            {"[1.]", -EINVAL, "s.json:1:2: invalid number"},
            {"{\"a\":\"x\ty\"}", -EINVAL, "s.json:1:8: control character 0x09 in a string"},
            {"{\"a\":\x01}", -EINVAL, "s.json:1:6: control character 0x01 outside a string"},
            {"{\"a\":\"\\u0000\"}", -EINVAL, "s.json:1:7: \\u0000 in a string is not supported"},
            {"{\"a\":{\"b\":1,\"b\":2}}", -EINVAL, "s.json:1:1: duplicate key 'b'"},
            {"a: 1", -EINVAL, "s.json:1:1: invalid JSON"},
            {"}", -EINVAL, "s.json:1:1: invalid JSON"},
        };
        cJSON *json = NULL;
        struct ao_error err = {0};
        int r;

        for (size_t i = 0; i < AO_ARRAY_SIZE(yaml_ok); i++) {
                json = NULL;
                r = ao_yaml_load_stream(yaml_ok[i].yaml, strlen(yaml_ok[i].yaml), "s.yaml", &json, &err);
                tap_is_int(r, 0, "yaml stream %zu: loads", i);
                char *text = r == 0 ? ao_json_canonical(json) : NULL;
                tap_is_str(text, yaml_ok[i].json, "yaml stream %zu: documents", i);
                free(text);
                cJSON_Delete(json);
        }
        for (size_t i = 0; i < AO_ARRAY_SIZE(yaml_errors); i++) {
                json = NULL;
                r = ao_yaml_load_stream(yaml_errors[i].yaml, strlen(yaml_errors[i].yaml), "s.yaml", &json,
                                        &err);
                tap_is_int(r, yaml_errors[i].code, "yaml stream error %zu: code", i);
                tap_is_str(err.msg, yaml_errors[i].msg, "yaml stream error %zu: message", i);
                tap_ok(json == NULL, "yaml stream error %zu: nothing returned", i);
        }
        for (size_t i = 0; i < AO_ARRAY_SIZE(json_ok); i++) {
                json = NULL;
                r = ao_json_load_stream(json_ok[i].yaml, strlen(json_ok[i].yaml), "s.json", &json, &err);
                tap_is_int(r, 0, "json stream %zu: loads", i);
                char *text = r == 0 ? ao_json_canonical(json) : NULL;
                tap_is_str(text, json_ok[i].json, "json stream %zu: values", i);
                free(text);
                cJSON_Delete(json);
        }
        for (size_t i = 0; i < AO_ARRAY_SIZE(json_errors); i++) {
                json = NULL;
                r = ao_json_load_stream(json_errors[i].yaml, strlen(json_errors[i].yaml), "s.json", &json,
                                        &err);
                tap_is_int(r, json_errors[i].code, "json stream error %zu: code", i);
                tap_is_str(err.msg, json_errors[i].msg, "json stream error %zu: message", i);
                tap_ok(json == NULL, "json stream error %zu: nothing returned", i);
        }

        /* The limits count the whole stream: depth per value, nodes over all documents. */
        struct ao_strbuf sb = {0};
        for (int i = 0; i < AO_YAML_MAX_DEPTH + 1; i++)
                ao_strbuf_append_c(&sb, '[');
        for (int i = 0; i < AO_YAML_MAX_DEPTH + 1; i++)
                ao_strbuf_append_c(&sb, ']');
        tap_is_int(ao_json_load_stream(sb.buf, sb.len, "d.json", &json, &err), -E2BIG,
                   "json stream: depth limit");
        tap_is_int(ao_json_load_stream(sb.buf + 1, sb.len - 2, "d.json", &json, &err), 0,
                   "json stream: depth limit exactly");
        cJSON_Delete(json);
        tap_is_int(ao_yaml_load_stream(sb.buf, sb.len, "d.yaml", &json, &err), -E2BIG,
                   "yaml stream: depth limit");
        ao_strbuf_reset(&sb);
        for (unsigned i = 0; i < AO_YAML_MAX_NODES + 1; i++)
                ao_strbuf_append(&sb, "[]");
        tap_is_int(ao_json_load_stream(sb.buf, sb.len, "n.json", &json, &err), -E2BIG,
                   "json stream: node limit");
        tap_is_str(err.msg, "n.json:1:8388609: more than 4194304 nodes", "json stream: node limit message");
        ao_strbuf_done(&sb);
        tap_is_int(ao_json_load_stream("{}", AO_YAML_MAX_INPUT + 1, "big.json", &json, &err), -EFBIG,
                   "json stream: input limit");
        tap_is_int(ao_yaml_load_stream("{}", AO_YAML_MAX_INPUT + 1, "big.yaml", &json, &err), -EFBIG,
                   "yaml stream: input limit");
        /* ao_yaml_load() still refuses a second document. */
        tap_is_int(ao_yaml_load("a: 1\n---\nb: 2\n", 14, "one.yaml", &json, &err), -EINVAL,
                   "ao_yaml_load: one document only");
}

int main(void)
{
        test_table(scalars, AO_ARRAY_SIZE(scalars), "scalar");
        test_table(documents, AO_ARRAY_SIZE(documents), "document");
        test_errors();
        test_billion_laughs();
        test_depth();
        test_long_keys();
        test_files();
        test_canonical();
        test_writer();
        test_streams();
        return tap_done();
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/helm/post-render.c: the labels every rendered object gets.
 * Exact output for helm's manifests (sources, existing labels, null and
 * missing metadata, scalars of every style, Lists, anchors shared with a
 * selector, JSON documents, empty and comment-only documents), the label
 * list syntax, every error message, and that the output means what the
 * input meant plus the labels (both loaded with ao_yaml_load_stream()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../tap.h"
#include "ao/helm-output.h"
#include "ao/helm-post-render.h"
#include "ao/yaml.h"

static struct ao_helm_labels labels_of(const char *text)
{
        struct ao_helm_labels l = {0};
        struct ao_error err = {0};
        if (ao_helm_labels_parse(text, &l, &err) < 0)
                tap_bail(err.msg);
        return l;
}

static void is_rendered(const char *labels_text, const char *in, const char *want, const char *what)
{
        struct ao_helm_labels labels = labels_of(labels_text);
        struct ao_error err = {0};
        char *out = NULL;
        size_t len = 0;
        int r = ao_helm_post_render(in, strlen(in), &labels, &out, &len, &err);
        tap_is_int(r, 0, "%s: renders", what);
        if (r < 0)
                tap_diag("%s", err.msg);
        tap_is_str(out, want, "%s: output", what);
        tap_is_int(len, out ? strlen(out) : 0, "%s: length", what);
        free(out);
        ao_helm_labels_clear(&labels);
}

static void is_error(const char *in, int code, const char *msg, const char *what)
{
        struct ao_helm_labels labels = labels_of("heritage=addon-operator");
        struct ao_error err = {0};
        char *out = (char *) "untouched";
        size_t len = 7;
        int r = ao_helm_post_render(in, strlen(in), &labels, &out, &len, &err);
        tap_is_int(r, code, "%s: fails", what);
        tap_is_int(err.code, code, "%s: error code", what);
        tap_is_str(err.msg, msg, "%s: message", what);
        tap_ok(strcmp(out, "untouched") == 0 && len == 7, "%s: out-parameters untouched", what);
        ao_helm_labels_clear(&labels);
}

/* ---- the label list -------------------------------------------------------------------------------- */

static void is_labels(const char *text, const char *want, const char *what)
{
        struct ao_helm_labels l = {0};
        struct ao_error err = {0};
        int r = ao_helm_labels_parse(text, &l, &err);
        tap_is_int(r, 0, "labels: %s: parses", what);
        char *got = ao_helm_labels_format(&l);
        tap_is_str(got, want, "labels: %s", what);
        free(got);
        ao_helm_labels_clear(&l);
}

static void test_labels(void)
{
        is_labels("heritage=addon-operator", "heritage=addon-operator", "one");
        is_labels(" a = 1 ,b=2,, c= ", "a=1,b=2,c=", "blanks trimmed, empty items skipped, empty value");
        is_labels("heritage=addon-operator,tier=core,heritage=mine", "heritage=mine,tier=core",
                  "a key again replaces its value in its place");
        is_labels("", "", "none");
        is_labels("example.com/team=a=b", "example.com/team=a=b", "the value is all after the first '='");

        static const struct {
                const char *text, *msg;
        } bad[] = {
            {"a=1,nope", "labels: 'nope' is not key=value"},
            {"=v", "labels: '=v' is not key=value"},
            {" = v", "labels: ' = v' is not key=value"},
            {"a=\xF7\x92\x9A\x8B",
             "labels: 'a=\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD' is not printable ASCII"},
            {"a=b\tc", "labels: 'a=b\\tc' is not printable ASCII"},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct ao_helm_labels l = {.n = 99};
                struct ao_error err = {0};
                tap_is_int(ao_helm_labels_parse(bad[i].text, &l, &err), -EINVAL, "labels: bad %zu fails", i);
                tap_is_str(err.msg, bad[i].msg, "labels: bad %zu: message", i);
                tap_is_int(l.n, 99, "labels: bad %zu: result untouched", i);
        }
}

/* ---- rendering ------------------------------------------------------------------------------------- */

static void test_helm_manifest(void)
{
        /*
         * What helm 3.17 renders: "---", the source, the document; a fake's comment after it. A plain
         * scalar tagged as a string is quoted (the dumper would drop the tag), a null in a flow
         * mapping is written "~" (it would write '').
         */
        is_rendered("heritage=addon-operator,owner=ao,tier=core",
                    "---\n"
                    "# Source: web/templates/cm.yaml\n"
                    "apiVersion: v1\n"
                    "kind: ConfigMap\n"
                    "metadata:\n"
                    "  name: web-cm\n"
                    "  labels:\n"
                    "    app: web # inline comments go\n"
                    "    heritage: Helm\n"
                    "data:\n"
                    "  big: 12345678901234567890\n"
                    "  octal: 0755\n"
                    "  quoted: \"yes\"\n"
                    "  single: 'it''s'\n"
                    "  bool: yes\n"
                    "  empty:\n"
                    "  tagged: !!str 12\n"
                    "  bang: ! true\n"
                    "  int: !!int \"7\"\n"
                    "  script: |\n"
                    "    echo one\n"
                    "    echo two\n"
                    "  folded: >-\n"
                    "    a b\n"
                    "  list: [1, \"two\", {three: 3}, ]\n"
                    "  nulls: {a: , b: ~}\n"
                    "# values-sha256: 0123\n"
                    "---\n"
                    "# Source: web/templates/svc.yaml\n"
                    "apiVersion: v1\n"
                    "kind: Service\n"
                    "metadata:\n"
                    "  name: web\n"
                    "spec:\n"
                    "  ports:\n"
                    "  - port: 80\n",
                    "---\n"
                    "# Source: web/templates/cm.yaml\n"
                    "apiVersion: v1\n"
                    "kind: ConfigMap\n"
                    "metadata:\n"
                    "  name: web-cm\n"
                    "  labels:\n"
                    "    app: web\n"
                    "    heritage: addon-operator\n"
                    "    owner: ao\n"
                    "    tier: core\n"
                    "data:\n"
                    "  big: 12345678901234567890\n"
                    "  octal: 0755\n"
                    "  quoted: \"yes\"\n"
                    "  single: 'it''s'\n"
                    "  bool: yes\n"
                    "  empty:\n"
                    "  tagged: \"12\"\n"
                    "  bang: \"true\"\n"
                    "  int: !!int \"7\"\n"
                    "  script: |\n"
                    "    echo one\n"
                    "    echo two\n"
                    "  folded: >-\n"
                    "    a b\n"
                    "  list: [1, \"two\", {three: 3}]\n"
                    "  nulls: {a: ~, b: ~}\n"
                    "# values-sha256: 0123\n"
                    "---\n"
                    "# Source: web/templates/svc.yaml\n"
                    "apiVersion: v1\n"
                    "kind: Service\n"
                    "metadata:\n"
                    "  name: web\n"
                    "  labels:\n"
                    "    heritage: addon-operator\n"
                    "    owner: ao\n"
                    "    tier: core\n"
                    "spec:\n"
                    "  ports:\n"
                    "  - port: 80\n",
                    "helm's manifest");

        is_rendered("heritage=addon-operator",
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n",
                    "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    heritage: "
                    "addon-operator\n",
                    "null labels, no \"---\" before the first document");
        is_rendered(
            "heritage=addon-operator", "kind: A\nempty:\n! word: 12\n",
            "---\nkind: A\nempty:\n\"word\": 12\nmetadata:\n  labels:\n    heritage: addon-operator\n",
            "an empty value, then a key tagged as a string: only the key is quoted");
        is_rendered("heritage=addon-operator", "kind: Namespace\nmetadata: ~\n",
                    "---\nkind: Namespace\nmetadata:\n  labels:\n    heritage: addon-operator\n",
                    "null metadata");
        is_rendered("heritage=addon-operator", "kind: Namespace\n",
                    "---\nkind: Namespace\nmetadata:\n  labels:\n    heritage: addon-operator\n",
                    "no metadata");
        is_rendered("heritage=addon-operator,on=true,empty=,num=1.5,dotted=v1.2",
                    "kind: X\nmetadata: {name: x, labels: {}}\n",
                    "---\nkind: X\nmetadata: {name: x, labels: {heritage: addon-operator, \"on\": \"true\", "
                    "empty: \"\", "
                    "num: \"1.5\", dotted: v1.2}}\n",
                    "flow mappings stay flow; what YAML would read as something else is quoted");
        is_rendered(
            "heritage=addon-operator",
            "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"}}\n",
            "---\n{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"s\", labels: "
            "{heritage: addon-operator}}}\n",
            "a JSON document");
}

static void test_lists(void)
{
        is_rendered("heritage=addon-operator",
                    "---\n"
                    "# Source: web/templates/list.yaml\n"
                    "apiVersion: v1\n"
                    "kind: List\n"
                    "items:\n"
                    "- apiVersion: v1\n"
                    "  kind: ConfigMap\n"
                    "  metadata: {name: a}\n"
                    "- apiVersion: v1\n"
                    "  kind: ConfigMap\n"
                    "  metadata:\n"
                    "    name: b\n"
                    "    labels:\n"
                    "      heritage: other\n",
                    "---\n"
                    "# Source: web/templates/list.yaml\n"
                    "apiVersion: v1\n"
                    "kind: List\n"
                    "items:\n"
                    "- apiVersion: v1\n"
                    "  kind: ConfigMap\n"
                    "  metadata: {name: a, labels: {heritage: addon-operator}}\n"
                    "- apiVersion: v1\n"
                    "  kind: ConfigMap\n"
                    "  metadata:\n"
                    "    name: b\n"
                    "    labels:\n"
                    "      heritage: addon-operator\n",
                    "a List: each item, not the List");
        is_rendered("heritage=addon-operator", "kind: ConfigMapList\nitems: []\n",
                    "---\nkind: ConfigMapList\nitems: []\n", "an empty ConfigMapList");
        is_rendered("heritage=addon-operator", "kind: List\nitems: none\n",
                    "---\nkind: List\nitems: none\nmetadata:\n  labels:\n    heritage: addon-operator\n",
                    "a List without an items sequence is an object");
}

static void test_anchors(void)
{
        /* The selector and the pod template alias what the object's metadata holds: they stay as they were. */
        is_rendered("heritage=addon-operator",
                    "apiVersion: apps/v1\n"
                    "kind: Deployment\n"
                    "metadata: &m\n"
                    "  name: d\n"
                    "  labels: &l\n"
                    "    app: d\n"
                    "spec:\n"
                    "  selector:\n"
                    "    matchLabels: *l\n"
                    "  template:\n"
                    "    metadata: *m\n",
                    "---\n"
                    "apiVersion: apps/v1\n"
                    "kind: Deployment\n"
                    "metadata:\n"
                    "  name: d\n"
                    "  labels:\n"
                    "    app: d\n"
                    "    heritage: addon-operator\n"
                    "spec:\n"
                    "  selector:\n"
                    "    matchLabels: &id001\n"
                    "      app: d\n"
                    "  template:\n"
                    "    metadata:\n"
                    "      name: d\n"
                    "      labels: *id001\n",
                    "labels shared by an alias are copied, the selector keeps its own");
        is_rendered("heritage=addon-operator",
                    "kind: X\nmetadata:\n  name: x\n  labels:\n    <<: {heritage: Helm, app: x}\n",
                    "---\nkind: X\nmetadata:\n  name: x\n  labels:\n    <<: {heritage: Helm, app: x}\n    "
                    "heritage: addon-operator\n",
                    "a merge key in the labels: the label goes beside it, which wins over what is merged");
}

static void test_documents(void)
{
        is_rendered("heritage=addon-operator", "", "", "nothing");
        is_rendered("heritage=addon-operator", "---\n# Source: web/templates/none.yaml\n# only a comment\n",
                    "# Source: web/templates/none.yaml\n# only a comment\n", "comments only");
        is_rendered(
            "heritage=addon-operator",
            "---\n# Source: a.yaml\n---\n~\n---\nnull\n--- \n# Source: b.yaml\nkind: A\n# trailing\n...\n",
            "---\n# Source: a.yaml\n# Source: b.yaml\nkind: A\nmetadata:\n  labels:\n    heritage: "
            "addon-operator\n# trailing\n",
            "empty and null documents are dropped, their comments kept");
        is_rendered("heritage=addon-operator", "\xEF\xBB\xBF---\n# Source: bom.yaml\nkind: A\n",
                    "---\n# Source: bom.yaml\nkind: A\nmetadata:\n  labels:\n    heritage: addon-operator\n",
                    "a byte order mark");
        is_rendered(
            "heritage=addon-operator",
            "kind: ConfigMap\ndata:\n  text: \"\xC3\xA9t\xC3\xA9 \\u2603 --- # Source: x\"\n# after\n",
            "---\nkind: ConfigMap\ndata:\n  text: \"\xC3\xA9t\xC3\xA9 \xE2\x98\x83 --- # Source: x\"\n"
            "metadata:\n  labels:\n    heritage: addon-operator\n# after\n",
            "UTF-8 text, and what looks like a comment inside a string");
}

static void test_errors(void)
{
        is_error("---\n# Source: web/templates/cm.yaml\nkind: A\nmetadata:\n  labels: [a]\n", -EBADMSG,
                 "web/templates/cm.yaml: metadata.labels is a sequence, not a mapping", "labels a sequence");
        is_error("kind: A\nmetadata: x\n", -EBADMSG, "document 1: metadata is a scalar, not a mapping",
                 "metadata a scalar");
        is_error("kind: A\n---\n- a\n", -EBADMSG, "document 2: the document is a sequence, not a mapping",
                 "a sequence document");
        is_error("---\n# Source: s.yaml\nplain text\n", -EBADMSG,
                 "s.yaml: the document is a scalar, not a mapping", "a scalar document");
        is_error("kind: List\nitems:\n- kind: A\n- 7\n", -EBADMSG,
                 "document 1: items[1] is a scalar, not a mapping", "a List item that is no mapping");
        is_error("kind: List\nitems:\n- metadata: [x]\n", -EBADMSG,
                 "document 1: items[0].metadata is a sequence, not a mapping", "a List item's metadata");
        is_error("kind: A\nmetadata: {}\nmetadata: {}\n", -EBADMSG, "document 1: metadata appears twice",
                 "metadata twice");
        is_error("kind: A\nmetadata:\n  labels: {heritage: a, heritage: b}\n", -EBADMSG,
                 "document 1: metadata.labels key 'heritage' appears twice", "a label twice");
        is_error("base: &b {metadata: {name: x}}\nkind: A\n<<: *b\n", -EBADMSG,
                 "document 1: metadata comes from a merge key (<<): labels cannot be added",
                 "metadata from a merge key");
        is_error("kind: A\nmetadata:\n  <<: {labels: {a: b}}\n", -EBADMSG,
                 "document 1: metadata.labels comes from a merge key (<<): labels cannot be added",
                 "labels from a merge key");
        is_error("kind: A\nmetadata: {name: x\n", -EBADMSG,
                 "rendered manifest:3:1: did not find expected ',' or '}' (while parsing a flow mapping that "
                 "starts "
                 "at 2:11)",
                 "malformed YAML");
        is_error("\xFF\xFE"
                 "k\0",
                 -EBADMSG, "rendered manifest: UTF-16 is not supported", "UTF-16");

        char deep[2 * (AO_YAML_MAX_DEPTH + 1) + 1];
        memset(deep, '[', AO_YAML_MAX_DEPTH + 1);
        memset(deep + AO_YAML_MAX_DEPTH + 1, ']', AO_YAML_MAX_DEPTH + 1);
        deep[sizeof(deep) - 1] = '\0';
        is_error(deep, -E2BIG, "rendered manifest:1:257: nesting deeper than 256 levels", "nesting");

        /* Over the cap: refused before a byte is read (the pages are never touched). */
        size_t big = AO_HELM_POST_RENDER_MAX_INPUT + 1;
        char *huge = malloc(big);
        struct ao_helm_labels labels = labels_of("heritage=addon-operator");
        struct ao_error err = {0};
        char *out = NULL;
        size_t len = 0;
        tap_is_int(ao_helm_post_render(huge, big, &labels, &out, &len, &err), -EFBIG, "too large: fails");
        tap_is_str(err.msg, "rendered manifest: larger than 64 MiB", "too large: message");
        ao_helm_labels_clear(&labels);
        free(huge);
}

/* The output loads to the input's documents, each object with the labels in its metadata. */
static void test_meaning(void)
{
        const char *in =
            "---\n# Source: m/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {x: "
            "y}}\ndata: {n: 010, t: on, f: 1e3, s: '1', big: 9007199254740993}\n---\napiVersion: v1\n"
            "kind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n";
        struct ao_helm_labels labels = labels_of("heritage=addon-operator,tier=core");
        struct ao_error err = {0};
        char *out = NULL;
        size_t len = 0;
        if (ao_helm_post_render(in, strlen(in), &labels, &out, &len, &err) < 0)
                tap_bail(err.msg);
        cJSON *before = NULL, *after = NULL;
        if (ao_yaml_load_stream(in, strlen(in), "in", &before, &err) < 0 ||
            ao_yaml_load_stream(out, len, "out", &after, &err) < 0)
                tap_bail(err.msg);
        cJSON *cm = cJSON_GetArrayItem(before, 0),
              *secret = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(before, 1), "items"), 0);
        cJSON_AddStringToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(cm, "metadata"), "labels"),
                                "heritage", "addon-operator");
        cJSON_AddStringToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(cm, "metadata"), "labels"), "tier",
                                "core");
        cJSON *l = cJSON_AddObjectToObject(cJSON_GetObjectItem(secret, "metadata"), "labels");
        cJSON_AddStringToObject(l, "heritage", "addon-operator");
        cJSON_AddStringToObject(l, "tier", "core");
        char *want = ao_json_canonical(before), *got = ao_json_canonical(after);
        tap_is_str(got, want, "the output means the input with the labels");
        struct ao_helm_manifest m = {0};
        tap_is_int(ao_helm_manifest_parse(out, len, &m, &err), 0, "the manifest parser reads the output");
        tap_is_int(m.n, 2, "its two objects");
        ao_helm_manifest_clear(&m);
        free(want);
        free(got);
        cJSON_Delete(before);
        cJSON_Delete(after);
        free(out);
        ao_helm_labels_clear(&labels);
}

int main(void)
{
        test_labels();
        test_helm_manifest();
        test_lists();
        test_anchors();
        test_documents();
        test_errors();
        test_meaning();
        return tap_done();
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/values/jsonpatch.c and jsonpointer.c: every example of
 * RFC 6902 Appendix A, the patch stream forms hooks write, parse errors with
 * their positions, AO_JSONPATCH_IGNORE_MISSING, atomicity, root replacement,
 * the limits, and JSON Pointer resolution. Documents are compared through
 * ao_json_canonical().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../tap.h"
#include "ao/jsonpatch.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

struct apply_case {
        const char *name;
        const char *doc;   /* JSON */
        const char *patch; /* patch text, must parse */
        unsigned flags;
        const char *want; /* JSON of the result; NULL: applying must fail */
        int code;         /* when failing: the code and message */
        const char *msg;
};

struct parse_case {
        const char *name;
        const char *text;
        int code;
        const char *msg;
};

#define OK(json)        json, 0, NULL
#define FAIL(code, msg) NULL, code, msg

/* RFC 6902 Appendix A, in order (A.13 is a parse error: see parse_errors). */
static const struct apply_case rfc_cases[] = {
    {"A.1 adding an object member", "{\"foo\":\"bar\"}",
     "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]", 0, OK("{\"baz\":\"qux\",\"foo\":\"bar\"}")},
    {"A.2 adding an array element", "{\"foo\":[\"bar\",\"baz\"]}",
     "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]", 0,
     OK("{\"foo\":[\"bar\",\"qux\",\"baz\"]}")},
    {"A.3 removing an object member", "{\"baz\":\"qux\",\"foo\":\"bar\"}",
     "[{\"op\":\"remove\",\"path\":\"/baz\"}]", 0, OK("{\"foo\":\"bar\"}")},
    {"A.4 removing an array element", "{\"foo\":[\"bar\",\"qux\",\"baz\"]}",
     "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]", 0, OK("{\"foo\":[\"bar\",\"baz\"]}")},
    {"A.5 replacing a value", "{\"baz\":\"qux\",\"foo\":\"bar\"}",
     "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]", 0,
     OK("{\"baz\":\"boo\",\"foo\":\"bar\"}")},
    {"A.6 moving a value", "{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":\"grault\"}}",
     "[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]", 0,
     OK("{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":\"fred\"}}")},
    {"A.7 moving an array element", "{\"foo\":[\"all\",\"grass\",\"cows\",\"eat\"]}",
     "[{\"op\":\"move\",\"from\":\"/foo/1\",\"path\":\"/foo/3\"}]", 0,
     OK("{\"foo\":[\"all\",\"cows\",\"eat\",\"grass\"]}")},
    {"A.8 testing a value: success", "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}",
     "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"qux\"},{\"op\":\"test\",\"path\":\"/foo/"
     "1\",\"value\":2}]",
     0, OK("{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}")},
    {"A.9 testing a value: error", "{\"baz\":\"qux\"}",
     "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"bar\"}]", 0,
     FAIL(-EINVAL, "operation 0 (test /baz): test failed: value differs")},
    {"A.10 adding a nested member object", "{\"foo\":\"bar\"}",
     "[{\"op\":\"add\",\"path\":\"/child\",\"value\":{\"grandchild\":{}}}]", 0,
     OK("{\"foo\":\"bar\",\"child\":{\"grandchild\":{}}}")},
    {"A.11 ignoring unrecognized elements", "{\"foo\":\"bar\"}",
     "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\",\"xyz\":123}]", 0,
     OK("{\"foo\":\"bar\",\"baz\":\"qux\"}")},
    {"A.12 adding to a nonexistent target", "{\"foo\":\"bar\"}",
     "[{\"op\":\"add\",\"path\":\"/baz/bat\",\"value\":\"qux\"}]", 0,
     FAIL(-ENOENT, "operation 0 (add /baz/bat): path not found")},
    {"A.14 ~ escape ordering", "{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":10}]", 0,
     OK("{\"/\":9,\"~1\":10}")},
    {"A.15 comparing strings and numbers", "{\"/\":9,\"~1\":10}",
     "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":\"10\"}]", 0,
     FAIL(-EINVAL, "operation 0 (test /~01): test failed: value differs")},
    {"A.16 adding an array value", "{\"foo\":[\"bar\"]}",
     "[{\"op\":\"add\",\"path\":\"/foo/-\",\"value\":[\"abc\",\"def\"]}]", 0,
     OK("{\"foo\":[\"bar\",[\"abc\",\"def\"]]}")},
};

static const struct apply_case add_cases[] = {
    {"add replaces an existing member", "{\"a\":1,\"b\":2}", "{\"op\":\"add\",\"path\":\"/a\",\"value\":[3]}",
     0, OK("{\"a\":[3],\"b\":2}")},
    {"add at array start", "{\"a\":[1,2]}", "{\"op\":\"add\",\"path\":\"/a/0\",\"value\":0}", 0,
     OK("{\"a\":[0,1,2]}")},
    {"add at array length appends", "{\"a\":[1]}", "{\"op\":\"add\",\"path\":\"/a/1\",\"value\":2}", 0,
     OK("{\"a\":[1,2]}")},
    {"add - to an empty array", "{\"a\":[]}", "{\"op\":\"add\",\"path\":\"/a/-\",\"value\":null}", 0,
     OK("{\"a\":[null]}")},
    {"add twice at the end keeps order", "[]",
     "{\"op\":\"add\",\"path\":\"/-\",\"value\":1}\n{\"op\":\"add\",\"path\":\"/1\",\"value\":2}\n"
     "{\"op\":\"add\",\"path\":\"/0\",\"value\":0}\n{\"op\":\"add\",\"path\":\"/-\",\"value\":3}",
     0, OK("[0,1,2,3]")},
    {"add replaces the whole document", "{\"a\":1}", "{\"op\":\"add\",\"path\":\"\",\"value\":[1,{\"b\":2}]}",
     0, OK("[1,{\"b\":2}]")},
    {"add the empty key", "{}", "{\"op\":\"add\",\"path\":\"/\",\"value\":1}", 0, OK("{\"\":1}")},
    {"add with escapes", "{}",
     "[{\"op\":\"add\",\"path\":\"/a~1b\",\"value\":1},{\"op\":\"add\",\"path\":\"/m~0n\",\"value\":2},"
     "{\"op\":\"add\",\"path\":\"/~01\",\"value\":3}]",
     0, OK("{\"a/b\":1,\"m~n\":2,\"~1\":3}")},
    {"add null value", "{}", "{\"op\":\"add\",\"path\":\"/n\",\"value\":null}", 0, OK("{\"n\":null}")},
    {"add past the array end", "{\"a\":[1]}", "{\"op\":\"add\",\"path\":\"/a/3\",\"value\":2}", 0,
     FAIL(-ENOENT, "operation 0 (add /a/3): array index 3 out of range (length 1)")},
    {"add with a leading zero", "{\"a\":[1,2]}", "{\"op\":\"add\",\"path\":\"/a/01\",\"value\":2}", 0,
     FAIL(-EINVAL, "operation 0 (add /a/01): invalid array index '01'")},
    {"add with a non-numeric index", "{\"a\":[1,2]}", "{\"op\":\"add\",\"path\":\"/a/x\",\"value\":2}", 0,
     FAIL(-EINVAL, "operation 0 (add /a/x): invalid array index 'x'")},
    {"add with a negative index", "{\"a\":[1,2]}", "{\"op\":\"add\",\"path\":\"/a/-1\",\"value\":2}", 0,
     FAIL(-EINVAL, "operation 0 (add /a/-1): invalid array index '-1'")},
    {"add with a huge index", "{\"a\":[1,2]}",
     "{\"op\":\"add\",\"path\":\"/a/99999999999999999999999\",\"value\":2}", 0,
     FAIL(-ENOENT, "operation 0 (add /a/99999999999999999999999): array index 99999999999999999999999 out of "
                   "range (length 2)")},
    {"add below a scalar", "{\"a\":1}", "{\"op\":\"add\",\"path\":\"/a/b\",\"value\":2}", 0,
     FAIL(-ENOENT, "operation 0 (add /a/b): '/a' is a number, not an object or array")},
    {"add below a scalar root", "\"s\"", "{\"op\":\"add\",\"path\":\"/a\",\"value\":2}", 0,
     FAIL(-ENOENT, "operation 0 (add /a): '' is a string, not an object or array")},
    {"add through a missing member", "{\"a\":{}}", "{\"op\":\"add\",\"path\":\"/a/b/c\",\"value\":2}", 0,
     FAIL(-ENOENT, "operation 0 (add /a/b/c): path not found")},
    {"add through -", "{\"a\":[{}]}", "{\"op\":\"add\",\"path\":\"/a/-/b\",\"value\":2}", 0,
     FAIL(-ENOENT, "operation 0 (add /a/-/b): array index '-' is past the end (length 1)")},
    {"add missing parent is not skipped", "{}", "{\"op\":\"add\",\"path\":\"/a/b\",\"value\":2}",
     AO_JSONPATCH_IGNORE_MISSING, FAIL(-ENOENT, "operation 0 (add /a/b): path not found")},
};

static const struct apply_case remove_replace_cases[] = {
    {"remove the last element, then append", "[1,2,3]",
     "[{\"op\":\"remove\",\"path\":\"/2\"},{\"op\":\"add\",\"path\":\"/-\",\"value\":4}]", 0, OK("[1,2,4]")},
    {"remove the first element, then append", "[1,2,3]",
     "[{\"op\":\"remove\",\"path\":\"/0\"},{\"op\":\"add\",\"path\":\"/-\",\"value\":4}]", 0, OK("[2,3,4]")},
    {"remove the only element, then append", "[1]",
     "[{\"op\":\"remove\",\"path\":\"/0\"},{\"op\":\"add\",\"path\":\"/-\",\"value\":4}]", 0, OK("[4]")},
    {"remove with escapes", "{\"a/b\":1,\"m~n\":2,\"c\":3}",
     "[{\"op\":\"remove\",\"path\":\"/a~1b\"},{\"op\":\"remove\",\"path\":\"/m~0n\"}]", 0, OK("{\"c\":3}")},
    {"remove a missing member", "{\"a\":{}}", "{\"op\":\"remove\",\"path\":\"/a/b\"}", 0,
     FAIL(-ENOENT, "operation 0 (remove /a/b): path not found")},
    {"remove -", "{\"a\":[1,2]}", "{\"op\":\"remove\",\"path\":\"/a/-\"}", 0,
     FAIL(-ENOENT, "operation 0 (remove /a/-): array index '-' is past the end (length 2)")},
    {"remove out of range", "{\"a\":[1,2,3]}", "{\"op\":\"remove\",\"path\":\"/a/7\"}", 0,
     FAIL(-ENOENT, "operation 0 (remove /a/7): array index 7 out of range (length 3)")},
    {"remove the whole document", "{\"a\":1}", "{\"op\":\"remove\",\"path\":\"\"}", 0,
     FAIL(-EINVAL, "operation 0 (remove \"\"): cannot remove the whole document")},
    {"remove missing, ignored", "{\"a\":{\"x\":1}}",
     "{\"op\":\"remove\",\"path\":\"/a/b\"}{\"op\":\"remove\",\"path\":\"/b/c/"
     "d\"}{\"op\":\"remove\",\"path\":\"/a/x/"
     "y\"}{\"op\":\"add\",\"path\":\"/z\",\"value\":1}",
     AO_JSONPATCH_IGNORE_MISSING, OK("{\"a\":{\"x\":1},\"z\":1}")},
    {"remove out of range, ignored", "{\"a\":[1]}",
     "{\"op\":\"remove\",\"path\":\"/a/1\"}{\"op\":\"remove\",\"path\":\"/a/-\"}",
     AO_JSONPATCH_IGNORE_MISSING, OK("{\"a\":[1]}")},
    {"remove with a bad index is not ignored", "{\"a\":[1]}", "{\"op\":\"remove\",\"path\":\"/a/00\"}",
     AO_JSONPATCH_IGNORE_MISSING, FAIL(-EINVAL, "operation 0 (remove /a/00): invalid array index '00'")},
    {"replace an array element", "[1,2,3]", "{\"op\":\"replace\",\"path\":\"/1\",\"value\":{\"x\":[]}}", 0,
     OK("[1,{\"x\":[]},3]")},
    {"replace the last element, then append", "[1,2]",
     "{\"op\":\"replace\",\"path\":\"/1\",\"value\":5}{\"op\":\"add\",\"path\":\"/-\",\"value\":6}", 0,
     OK("[1,5,6]")},
    {"replace the only element, then append", "[1]",
     "{\"op\":\"replace\",\"path\":\"/0\",\"value\":5}{\"op\":\"add\",\"path\":\"/-\",\"value\":6}", 0,
     OK("[5,6]")},
    {"replace the only member, then add", "{\"a\":1}",
     "{\"op\":\"replace\",\"path\":\"/a\",\"value\":5}{\"op\":\"add\",\"path\":\"/b\",\"value\":6}", 0,
     OK("{\"a\":5,\"b\":6}")},
    {"replace the whole document with a scalar", "{\"a\":1}",
     "{\"op\":\"replace\",\"path\":\"\",\"value\":42}", 0, OK("42")},
    {"replace a missing member", "{\"a\":1}", "{\"op\":\"replace\",\"path\":\"/b\",\"value\":5}", 0,
     FAIL(-ENOENT, "operation 0 (replace /b): path not found")},
    {"replace missing, ignored", "{\"a\":1}",
     "{\"op\":\"replace\",\"path\":\"/b\",\"value\":5}{\"op\":\"replace\",\"path\":\"/a\",\"value\":2}",
     AO_JSONPATCH_IGNORE_MISSING, OK("{\"a\":2}")},
    {"replace -", "[1]", "{\"op\":\"replace\",\"path\":\"/-\",\"value\":5}", 0,
     FAIL(-ENOENT, "operation 0 (replace /-): array index '-' is past the end (length 1)")},
};

static const struct apply_case move_copy_cases[] = {
    {"move into its own child", "{\"a\":{\"b\":{}}}", "{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/b\"}",
     0, FAIL(-EINVAL, "operation 0 (move /a/b): cannot move '/a' into its own child '/a/b'")},
    {"move the whole document into a child", "{\"a\":{}}", "{\"op\":\"move\",\"from\":\"\",\"path\":\"/a\"}",
     0, FAIL(-EINVAL, "operation 0 (move /a): cannot move '' into its own child '/a'")},
    {"move to a sibling with a common prefix", "{\"a\":1}",
     "{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/ab\"}", 0, OK("{\"ab\":1}")},
    {"move onto itself", "{\"a\":[1]}", "{\"op\":\"move\",\"from\":\"/a/0\",\"path\":\"/a/0\"}", 0,
     OK("{\"a\":[1]}")},
    {"move a member up to the root", "{\"a\":{\"b\":1}}", "{\"op\":\"move\",\"from\":\"/a\",\"path\":\"\"}",
     0, OK("{\"b\":1}")},
    {"move a child over its parent", "{\"a\":{\"b\":[1]}}",
     "{\"op\":\"move\",\"from\":\"/a/b\",\"path\":\"/a\"}", 0, OK("{\"a\":[1]}")},
    {"move to the array end", "[1,2,3]", "{\"op\":\"move\",\"from\":\"/0\",\"path\":\"/-\"}", 0,
     OK("[2,3,1]")},
    {"move an element to the front", "[1,2,3]", "{\"op\":\"move\",\"from\":\"/2\",\"path\":\"/0\"}", 0,
     OK("[3,1,2]")},
    {"move past the end after the remove", "[1,2,3]", "{\"op\":\"move\",\"from\":\"/0\",\"path\":\"/3\"}", 0,
     FAIL(-ENOENT, "operation 0 (move /3): array index 3 out of range (length 2)")},
    {"move a missing member", "{}", "{\"op\":\"move\",\"from\":\"/x\",\"path\":\"/y\"}", 0,
     FAIL(-ENOENT, "operation 0 (move /y): from '/x': path not found")},
    {"move from -", "[1]", "{\"op\":\"move\",\"from\":\"/-\",\"path\":\"/0\"}", 0,
     FAIL(-ENOENT, "operation 0 (move /0): from '/-': array index '-' is past the end (length 1)")},
    {"move missing is not ignored", "{}", "{\"op\":\"move\",\"from\":\"/x\",\"path\":\"/y\"}",
     AO_JSONPATCH_IGNORE_MISSING, FAIL(-ENOENT, "operation 0 (move /y): from '/x': path not found")},
    {"move between objects with escapes", "{\"a~b\":{\"c/d\":1},\"e\":{}}",
     "{\"op\":\"move\",\"from\":\"/a~0b/c~1d\",\"path\":\"/e/f~1g\"}", 0,
     OK("{\"a~b\":{},\"e\":{\"f/g\":1}}")},
    {"copy is deep", "{\"a\":{\"x\":[1]}}",
     "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/b\"},{\"op\":\"add\",\"path\":\"/b/x/-\",\"value\":2},"
     "{\"op\":\"add\",\"path\":\"/b/y\",\"value\":3}]",
     0, OK("{\"a\":{\"x\":[1]},\"b\":{\"x\":[1,2],\"y\":3}}")},
    {"copy the whole document into a child", "{\"x\":1}", "{\"op\":\"copy\",\"from\":\"\",\"path\":\"/a\"}",
     0, OK("{\"x\":1,\"a\":{\"x\":1}}")},
    {"copy into its own child", "{\"a\":{\"b\":1}}", "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/c\"}", 0,
     OK("{\"a\":{\"b\":1,\"c\":{\"b\":1}}}")},
    {"copy an element into an array", "[1,[2]]", "{\"op\":\"copy\",\"from\":\"/1\",\"path\":\"/0\"}", 0,
     OK("[[2],1,[2]]")},
    {"copy a member into an array", "{\"a\":{\"k\":1},\"l\":[]}",
     "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/l/-\"}", 0, OK("{\"a\":{\"k\":1},\"l\":[{\"k\":1}]}")},
    {"copy over the whole document", "{\"a\":[1]}", "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"\"}", 0,
     OK("[1]")},
    {"copy a missing member", "{}", "{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/y\"}", 0,
     FAIL(-ENOENT, "operation 0 (copy /y): from '/x': path not found")},
    {"copy to a missing parent", "{\"x\":1}", "{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/y/z\"}", 0,
     FAIL(-ENOENT, "operation 0 (copy /y/z): path not found")},
};

static const struct apply_case test_cases[] = {
    {"test 1 equals 1.0", "{\"a\":1}", "{\"op\":\"test\",\"path\":\"/a\",\"value\":1.0}", 0, OK("{\"a\":1}")},
    {"test 100 equals 1e2", "{\"a\":100}", "{\"op\":\"test\",\"path\":\"/a\",\"value\":1e2}", 0,
     OK("{\"a\":100}")},
    {"test key order is irrelevant", "{\"a\":{\"x\":1,\"y\":[true,null]}}",
     "{\"op\":\"test\",\"path\":\"/a\",\"value\":{\"y\":[true,null],\"x\":1}}", 0,
     OK("{\"a\":{\"x\":1,\"y\":[true,null]}}")},
    {"test array order matters", "{\"a\":[1,2]}", "{\"op\":\"test\",\"path\":\"/a\",\"value\":[2,1]}", 0,
     FAIL(-EINVAL, "operation 0 (test /a): test failed: value differs")},
    {"test array length matters", "{\"a\":[1,2]}", "{\"op\":\"test\",\"path\":\"/a\",\"value\":[1,2,3]}", 0,
     FAIL(-EINVAL, "operation 0 (test /a): test failed: value differs")},
    {"test extra member", "{\"a\":{\"x\":1}}",
     "{\"op\":\"test\",\"path\":\"/a\",\"value\":{\"x\":1,\"y\":1}}", 0,
     FAIL(-EINVAL, "operation 0 (test /a): test failed: value differs")},
    {"test missing member", "{\"a\":{\"x\":1,\"y\":1}}",
     "{\"op\":\"test\",\"path\":\"/a\",\"value\":{\"x\":1}}", 0,
     FAIL(-EINVAL, "operation 0 (test /a): test failed: value differs")},
    {"test nested difference", "{\"a\":{\"x\":{\"y\":[1,{\"z\":false}]}}}",
     "{\"op\":\"test\",\"path\":\"/a\",\"value\":{\"x\":{\"y\":[1,{\"z\":true}]}}}", 0,
     FAIL(-EINVAL, "operation 0 (test /a): test failed: value differs")},
    {"test true is not 1", "{\"a\":true}", "{\"op\":\"test\",\"path\":\"/a\",\"value\":1}", 0,
     FAIL(-EINVAL, "operation 0 (test /a): test failed: value differs")},
    {"test null", "{\"a\":null}", "{\"op\":\"test\",\"path\":\"/a\",\"value\":null}", 0, OK("{\"a\":null}")},
    {"test the whole document", "{\"b\":[1],\"a\":\"s\"}",
     "{\"op\":\"test\",\"path\":\"\",\"value\":{\"a\":\"s\",\"b\":[1.0]}}", 0, OK("{\"a\":\"s\",\"b\":[1]}")},
    {"test the empty key", "{\"\":{\"\":2}}", "{\"op\":\"test\",\"path\":\"//\",\"value\":2}", 0,
     OK("{\"\":{\"\":2}}")},
    {"test a missing path", "{}", "{\"op\":\"test\",\"path\":\"/a\",\"value\":null}", 0,
     FAIL(-ENOENT, "operation 0 (test /a): path not found")},
    {"test a missing path is not ignored", "{}", "{\"op\":\"test\",\"path\":\"/a\",\"value\":null}",
     AO_JSONPATCH_IGNORE_MISSING, FAIL(-ENOENT, "operation 0 (test /a): path not found")},
};

static const struct apply_case atomic_cases[] = {
    {"a failing third operation changes nothing", "{\"a\":{\"b\":[1,2]},\"c\":\"d\"}",
     "[{\"op\":\"add\",\"path\":\"/a/b/0\",\"value\":0},{\"op\":\"remove\",\"path\":\"/c\"},"
     "{\"op\":\"test\",\"path\":\"/a/b/0\",\"value\":1}]",
     0, FAIL(-EINVAL, "operation 2 (test /a/b/0): test failed: value differs")},
    {"a failure after a root replacement changes nothing", "{\"a\":1}",
     "{\"op\":\"replace\",\"path\":\"\",\"value\":[]}\n{\"op\":\"move\",\"from\":\"/0\",\"path\":\"/1\"}", 0,
     FAIL(-ENOENT, "operation 1 (move /1): from '/0': array index 0 out of range (length 0)")},
    {"operations count across the stream", "{}",
     "[{\"op\":\"add\",\"path\":\"/a\",\"value\":1}]\n{\"op\":\"add\",\"path\":\"/b\",\"value\":1}\n[]\n"
     "[{\"op\":\"test\",\"path\":\"/a\",\"value\":1},{\"op\":\"copy\",\"from\":\"/b\",\"path\":\"/c/d\"}]",
     0, FAIL(-ENOENT, "operation 3 (copy /c/d): path not found")},
    {"control characters in paths are escaped", "{}", "{\"op\":\"remove\",\"path\":\"/a\\nb\"}", 0,
     FAIL(-ENOENT, "operation 0 (remove /a\\x0ab): path not found")},
};

static const struct parse_case parse_ok[] = {
    {"empty", "", 0, NULL},
    {"whitespace", " \n\t\r\n ", 0, NULL},
    {"empty array", "[]", 0, NULL},
    {"byte order mark", "\xEF\xBB\xBF[]", 0, NULL},
    {"array", "[{\"op\":\"remove\",\"path\":\"/a\"},{\"op\":\"remove\",\"path\":\"/b\"}]", 2, NULL},
    {"one object per line",
     "{\"op\":\"remove\",\"path\":\"/a\"}\n{\"op\":\"remove\",\"path\":\"/"
     "b\"}\n{\"op\":\"remove\",\"path\":\"/c\"}\n",
     3, NULL},
    {"mixed",
     "[{\"op\":\"remove\",\"path\":\"/a\"}]\n\n{\"op\":\"remove\",\"path\":\"/b\"}[]\r\n[{\"op\":\"test\","
     "\"path\":\"\",\"value\":null}]",
     3, NULL},
    {"adjacent values", "{\"op\":\"remove\",\"path\":\"/a\"}{\"op\":\"remove\",\"path\":\"/b\"}", 2, NULL},
    {"unknown members and other ops' members",
     "{\"op\":\"remove\",\"path\":\"/a\",\"value\":1,\"from\":7,\"x\":{}}", 1, NULL},
    {"duplicate keys in separate objects", "[{\"op\":\"add\",\"path\":\"/a\",\"value\":{\"k\":{\"k\":1}}}]",
     1, NULL},
};

static const struct parse_case parse_errors[] = {
    {"A.13 invalid JSON Patch document",
     "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\",\"op\":\"remove\"}]", -EINVAL,
     "values.json-patch:1:1: operation 0: duplicate key 'op'"},
    {"number", "\n\n42", -EINVAL, "values.json-patch:3:1: expected an operation object or an array of them"},
    {"string after a patch", "[]\n  \"add\"", -EINVAL,
     "values.json-patch:2:3: expected an operation object or an array of them"},
    {"null", "null", -EINVAL, "values.json-patch:1:1: expected an operation object or an array of them"},
    {"garbage", "[] ]", -EINVAL, "values.json-patch:1:4: expected an operation object or an array of them"},
    {"byte order mark in the middle", "[]\xEF\xBB\xBF[]", -EINVAL,
     "values.json-patch:1:3: expected an operation object or an array of them"},
    {"NUL byte", "[]\n\0[]", -EINVAL,
     "values.json-patch:2:1: expected an operation object or an array of them"},
    {"unterminated array", "[{\"op\":\"remove\",\"path\":\"/a\"}", -EINVAL,
     "values.json-patch:1:28: invalid JSON"},
    {"trailing comma", "[{\"op\":\"remove\",\"path\":\"/a\"},]", -EINVAL,
     "values.json-patch:1:30: invalid JSON"},
    {"unquoted key", "{op:\"remove\"}", -EINVAL, "values.json-patch:1:3: invalid JSON"},
    {"array of numbers", "[1]", -EINVAL, "values.json-patch:1:1: operation 0: expected an operation object"},
    {"nested array", "[[{\"op\":\"remove\",\"path\":\"/a\"}]]", -EINVAL,
     "values.json-patch:1:1: operation 0: expected an operation object"},
    {"second value's operation",
     "{\"op\":\"remove\",\"path\":\"/a\"}\n[{\"op\":\"remove\",\"path\":\"/b\"},{}]", -EINVAL,
     "values.json-patch:2:1: operation 2: missing 'op'"},
    {"op not a string", "{\"op\":1,\"path\":\"/a\"}", -EINVAL,
     "values.json-patch:1:1: operation 0: 'op' is not a string"},
    {"unknown op", "{\"op\":\"update\",\"path\":\"/a\"}", -EINVAL,
     "values.json-patch:1:1: operation 0: unknown op 'update'"},
    {"op case matters", "{\"op\":\"Add\",\"path\":\"/a\",\"value\":1}", -EINVAL,
     "values.json-patch:1:1: operation 0: unknown op 'Add'"},
    {"member case matters", "{\"Op\":\"add\",\"path\":\"/a\",\"value\":1}", -EINVAL,
     "values.json-patch:1:1: operation 0: missing 'op'"},
    {"missing path", "{\"op\":\"remove\"}", -EINVAL, "values.json-patch:1:1: operation 0: missing 'path'"},
    {"path not a string", "{\"op\":\"remove\",\"path\":[\"a\"]}", -EINVAL,
     "values.json-patch:1:1: operation 0: 'path' is not a string"},
    {"path without a slash", "{\"op\":\"remove\",\"path\":\"a/b\"}", -EINVAL,
     "values.json-patch:1:1: operation 0: 'path' is not a JSON Pointer: 'a/b'"},
    {"path with a bad escape", "{\"op\":\"remove\",\"path\":\"/a~2\"}", -EINVAL,
     "values.json-patch:1:1: operation 0: 'path' is not a JSON Pointer: '/a~2'"},
    {"path with a trailing tilde", "{\"op\":\"remove\",\"path\":\"/a~\"}", -EINVAL,
     "values.json-patch:1:1: operation 0: 'path' is not a JSON Pointer: '/a~'"},
    {"move without from", "{\"op\":\"move\",\"path\":\"/a\"}", -EINVAL,
     "values.json-patch:1:1: operation 0: missing 'from'"},
    {"copy with a bad from", "{\"op\":\"copy\",\"path\":\"/a\",\"from\":\"x\"}", -EINVAL,
     "values.json-patch:1:1: operation 0: 'from' is not a JSON Pointer: 'x'"},
    {"add without value", "{\"op\":\"add\",\"path\":\"/a\"}", -EINVAL,
     "values.json-patch:1:1: operation 0: missing 'value'"},
    {"replace without value", "{\"op\":\"replace\",\"path\":\"/a\"}", -EINVAL,
     "values.json-patch:1:1: operation 0: missing 'value'"},
    {"test without value", "{\"op\":\"test\",\"path\":\"/a\"}", -EINVAL,
     "values.json-patch:1:1: operation 0: missing 'value'"},
    {"duplicate key in a value",
     "\n [{\"op\":\"add\",\"path\":\"/a\",\"value\":{\"x\":{\"k\":1,\"j\":2,\"k\":3}}}]", -EINVAL,
     "values.json-patch:2:2: operation 0: duplicate key 'k'"},
    {"raw control character in a string", "{\"op\":\"remove\",\"path\":\"/a\tb\"}", -EINVAL,
     "values.json-patch:1:26: control character 0x09 in a string"},
    {"control character between tokens", "{\"op\":\"remove\",\x01\"path\":\"/a\"}", -EINVAL,
     "values.json-patch:1:16: control character 0x01 outside a string"},
    {"NUL escape", "{\"op\":\"remove\",\"path\":\"/a\\u0000b\"}", -EINVAL,
     "values.json-patch:1:26: \\u0000 in a string is not supported"},
    {"escaped backslash before u0000", "{\"op\":\"remove\",\"path\":\"/a\\\\u0000b\"}", 1, NULL},
    {"position in characters", "{\"op\":\"remove\",\"path\":\"/\xC3\xA9\"} 7", -EINVAL,
     "values.json-patch:1:29: expected an operation object or an array of them"},
};

static cJSON *load(const char *json)
{
        struct ao_error err = {0};
        cJSON *doc = NULL;
        if (ao_yaml_load(json, strlen(json), "doc", &doc, &err) < 0)
                tap_bail(err.msg);
        return doc;
}

static char *canonical_of(const char *json)
{
        cJSON *doc = load(json);
        char *text = ao_json_canonical(doc);
        cJSON_Delete(doc);
        return text;
}

static void run_apply(const struct apply_case *c)
{
        struct ao_error err = {0};
        cJSON *doc = load(c->doc), *ops = NULL;
        int r = ao_jsonpatch_parse(c->patch, strlen(c->patch), "p", &ops, &err);

        if (!tap_ok(r == 0, "%s: parses", c->name)) {
                tap_diag("%s", err.msg);
                cJSON_Delete(doc);
                return;
        }
        char *before = ao_json_canonical(doc);
        r = ao_jsonpatch_apply(doc, ops, c->flags, &err);
        char *after = ao_json_canonical(doc);
        if (c->want) {
                char *want = canonical_of(c->want);
                if (!tap_ok(r == 0, "%s: applies", c->name))
                        tap_diag("%d %s", r, err.msg);
                tap_is_str(after, want, "%s: result", c->name);
                free(want);
        } else {
                tap_is_int(r, c->code, "%s: fails", c->name);
                tap_is_str(err.msg, c->msg, "%s: message", c->name);
                tap_is_str(after, before, "%s: document unchanged", c->name);
        }
        free(before);
        free(after);
        cJSON_Delete(ops);
        cJSON_Delete(doc);
}

static void run_apply_table(const struct apply_case *cases, size_t n)
{
        for (size_t i = 0; i < n; i++)
                run_apply(&cases[i]);
}

static int parse(const char *text, size_t len, cJSON **ret, struct ao_error *err)
{
        return ao_jsonpatch_parse(text, len, "values.json-patch", ret, err);
}

static void test_parse_ok(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(parse_ok); i++) {
                const struct parse_case *c = &parse_ok[i];
                struct ao_error err = {0};
                cJSON *ops = NULL;
                int r = parse(c->text, strlen(c->text), &ops, &err);
                if (!tap_ok(r == 0 && cJSON_IsArray(ops), "parse %s", c->name))
                        tap_diag("%s", err.msg);
                tap_is_int(cJSON_GetArraySize(ops), c->code, "parse %s: operation count", c->name);
                cJSON_Delete(ops);
        }
}

static void test_parse_errors(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(parse_errors); i++) {
                const struct parse_case *c = &parse_errors[i];
                struct ao_error err = {0};
                cJSON *ops = NULL;
                /* Lengths by sizeof would include the NUL test's NUL: count it in explicitly there. */
                size_t len = strlen(c->text) + (strcmp(c->name, "NUL byte") == 0 ? 3 : 0);
                int r = parse(c->text, len, &ops, &err);
                if (c->code > 0) {
                        tap_ok(r == 0 && cJSON_GetArraySize(ops) == c->code, "parse %s", c->name);
                        cJSON_Delete(ops);
                        continue;
                }
                tap_is_int(r, c->code, "parse %s: fails", c->name);
                tap_is_str(err.msg, c->msg, "parse %s: message", c->name);
                tap_ok(ops == NULL, "parse %s: no result", c->name);
                cJSON_Delete(ops);
        }
}

static void test_parse_limits(void)
{
        struct ao_error err = {0};
        struct ao_strbuf sb = {0};
        cJSON *ops = NULL;
        int r;

        r = ao_jsonpatch_parse("[]", (size_t) AO_JSONPATCH_MAX_INPUT + 1, NULL, &ops, &err);
        tap_is_int(r, -EFBIG, "input over the cap");
        tap_is_str(err.msg, "<input>: patch is larger than 16777216 bytes", "input over the cap: message");

        /* A stream of one operation per line: cut before the last for exactly the maximum. */
        static const char line[] = "{\"op\":\"test\",\"path\":\"\",\"value\":0}\n";
        for (int i = 0; i <= AO_JSONPATCH_MAX_OPS; i++)
                ao_strbuf_append(&sb, line);
        r = ao_jsonpatch_parse(sb.buf, sb.len - (sizeof(line) - 1), NULL, &ops, &err);
        tap_ok(r == 0 && cJSON_GetArraySize(ops) == AO_JSONPATCH_MAX_OPS,
               "exactly the maximum of operations");
        cJSON_Delete(ops);
        ops = NULL;
        r = ao_jsonpatch_parse(sb.buf, sb.len, NULL, &ops, &err);
        tap_is_int(r, -E2BIG, "one operation too many");
        tap_is_str(err.msg, "<input>:100001:1: more than 100000 operations",
                   "one operation too many: message");
        ao_strbuf_done(&sb);
}

/* Parse and apply @patch to the document @json; the canonical result or NULL with @err set. */
static char *patch_json(const char *json, const char *patch, unsigned flags, struct ao_error *err, int *ret)
{
        cJSON *doc = load(json), *ops = NULL;
        char *text = NULL;
        *ret = ao_jsonpatch_parse(patch, strlen(patch), NULL, &ops, err);
        if (*ret >= 0)
                *ret = ao_jsonpatch_apply(doc, ops, flags, err);
        if (*ret >= 0)
                text = ao_json_canonical(doc);
        cJSON_Delete(ops);
        cJSON_Delete(doc);
        return text;
}

static void nested(struct ao_strbuf *sb, int depth, const char *inner)
{
        for (int i = 0; i < depth; i++)
                ao_strbuf_append_c(sb, '[');
        ao_strbuf_append(sb, inner);
        for (int i = 0; i < depth; i++)
                ao_strbuf_append_c(sb, ']');
}

static void test_depth_limit(void)
{
        struct ao_strbuf sb = {0};
        struct ao_error err = {0};
        char *text;
        int r;

        /* The value lands 1 deep, so it may nest 255 more. */
        ao_strbuf_append(&sb, "{\"op\":\"add\",\"path\":\"/a\",\"value\":");
        nested(&sb, AO_JSONPATCH_MAX_DEPTH - 1, "");
        ao_strbuf_append(&sb, "}");
        text = patch_json("{}", ao_strbuf_str(&sb), 0, &err, &r);
        tap_ok(r == 0 && text, "a value reaching the depth limit is added");
        free(text);

        ao_strbuf_reset(&sb);
        ao_strbuf_append(&sb, "{\"op\":\"add\",\"path\":\"/a\",\"value\":");
        nested(&sb, AO_JSONPATCH_MAX_DEPTH, "");
        ao_strbuf_append(&sb, "}");
        text = patch_json("{}", ao_strbuf_str(&sb), 0, &err, &r);
        tap_is_int(r, -E2BIG, "a value past the depth limit is refused");
        tap_is_str(err.msg, "operation 0 (add /a): the value would nest deeper than 256 levels",
                   "depth limit: message");
        free(text);

        /* Build a chain 200 deep, then move it 100 further down: the limit holds for moves too. */
        ao_strbuf_reset(&sb);
        ao_strbuf_append(&sb, "{\"op\":\"add\",\"path\":\"/a\",\"value\":");
        nested(&sb, 200, "");
        ao_strbuf_append(&sb, "}{\"op\":\"add\",\"path\":\"/b\",\"value\":");
        nested(&sb, 100, "");
        ao_strbuf_append(&sb, "}{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/b");
        for (int i = 0; i < 99; i++)
                ao_strbuf_append(&sb, "/0");
        ao_strbuf_append(&sb, "/-\"}");
        text = patch_json("{}", ao_strbuf_str(&sb), 0, &err, &r);
        tap_is_int(r, -E2BIG, "a move past the depth limit is refused");
        free(text);

        ao_strbuf_reset(&sb);
        ao_strbuf_append(&sb, "{\"op\":\"add\",\"path\":\"/a\",\"value\":");
        nested(&sb, 200, "");
        ao_strbuf_append(&sb, "}{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a");
        for (int i = 0; i < 199; i++)
                ao_strbuf_append(&sb, "/0");
        ao_strbuf_append(&sb, "/-\"}");
        text = patch_json("{}", ao_strbuf_str(&sb), 0, &err, &r);
        tap_is_int(r, -E2BIG, "a copy past the depth limit is refused");
        free(text);
        ao_strbuf_done(&sb);
}

static void test_copy_budget(void)
{
        struct ao_strbuf doc = {0}, patch = {0};
        struct ao_error err = {0};
        char *text;
        int r;

        /* 1002 nodes, doubled by every copy of the whole document: operation 12 passes 4 Mi nodes. */
        ao_strbuf_append(&doc, "{\"a\":[0");
        for (int i = 1; i < 1000; i++)
                ao_strbuf_append(&doc, ",0");
        ao_strbuf_append(&doc, "]}");
        for (int i = 0; i < 20; i++)
                ao_strbuf_appendf(&patch, "{\"op\":\"copy\",\"from\":\"\",\"path\":\"/c%d\"}\n", i);
        text = patch_json(ao_strbuf_str(&doc), ao_strbuf_str(&patch), 0, &err, &r);
        tap_is_int(r, -E2BIG, "copies are capped");
        tap_is_str(err.msg, "operation 12 (copy /c12): copies would create more than 4194304 nodes",
                   "copies are capped: message");
        free(text);
        ao_strbuf_done(&doc);
        ao_strbuf_done(&patch);
}

/* The caller's root keeps its address, name and place when the whole document is replaced. */
static void test_root_in_place(void)
{
        struct ao_error err = {0};
        cJSON *outer = load("{\"before\":1,\"k\":{\"x\":1},\"after\":2}"), *ops = NULL;
        cJSON *doc = cJSON_GetObjectItemCaseSensitive(outer, "k");
        const char *patch = "{\"op\":\"replace\",\"path\":\"\",\"value\":[\"s\",{\"y\":null}]}";
        int r = ao_jsonpatch_parse(patch, strlen(patch), NULL, &ops, &err);

        if (r == 0)
                r = ao_jsonpatch_apply(doc, ops, 0, &err);
        tap_is_int(r, 0, "root replaced in place");
        tap_ok(cJSON_GetObjectItemCaseSensitive(outer, "k") == doc, "root keeps its address and name");
        char *text = ao_json_canonical(outer);
        tap_is_str(text, "{\"after\":2,\"before\":1,\"k\":[\"s\",{\"y\":null}]}", "root keeps its place");
        free(text);
        cJSON_Delete(ops);

        patch = "{\"op\":\"add\",\"path\":\"\",\"value\":\"str\"}";
        r = ao_jsonpatch_parse(patch, strlen(patch), NULL, &ops, &err);
        if (r == 0)
                r = ao_jsonpatch_apply(doc, ops, 0, &err);
        tap_ok(r == 0 && cJSON_IsString(doc) && strcmp(doc->valuestring, "str") == 0 && !doc->child,
               "root replaced by a scalar");
        tap_is_str(doc->string, "k", "root keeps its name");
        cJSON_Delete(ops);
        cJSON_Delete(outer);
}

static void test_apply_malformed(void)
{
        struct ao_error err = {0};
        cJSON *doc = load("{}"), *ops = cJSON_CreateArray(), *op = cJSON_CreateObject();

        cJSON_AddItemToArray(ops, op);
        cJSON_AddStringToObject(op, "op", "add");
        tap_is_int(ao_jsonpatch_apply(doc, ops, 0, &err), -EINVAL, "operations built without a path");
        tap_is_str(err.msg, "operation 0: missing 'path'", "operations built without a path: message");
        tap_is_int(ao_jsonpatch_apply(doc, doc, 0, &err), -EINVAL, "operations not an array");
        tap_is_int(ao_jsonpatch_apply(doc, cJSON_GetArrayItem(ops, 5), 0, NULL), -EINVAL, "no operations");
        cJSON_Delete(ops);
        ops = cJSON_CreateArray();
        tap_is_int(ao_jsonpatch_apply(doc, ops, 0, &err), 0, "an empty patch applies");
        cJSON_Delete(ops);
        cJSON_Delete(doc);
}

static void test_pointer(void)
{
        cJSON *doc = load("{\"a\":[10,{\"b\":\"c\"}],\"m~n\":1,\"x/y\":2,\"\":{\" \":3},\"01\":4}");
        size_t index = 42;

        tap_ok(ao_json_pointer_get(doc, "") == doc, "pointer '' is the document");
        tap_is_int(ao_json_pointer_get(doc, "/a/0")->valuedouble, 10, "pointer /a/0");
        tap_is_str(ao_json_pointer_get(doc, "/a/1/b")->valuestring, "c", "pointer /a/1/b");
        tap_is_int(ao_json_pointer_get(doc, "/m~0n")->valuedouble, 1, "pointer ~0");
        tap_is_int(ao_json_pointer_get(doc, "/x~1y")->valuedouble, 2, "pointer ~1");
        tap_is_int(ao_json_pointer_get(doc, "// ")->valuedouble, 3, "pointer with empty and blank keys");
        tap_is_int(ao_json_pointer_get(doc, "/01")->valuedouble, 4, "leading zeros are fine as object keys");
        tap_ok(ao_json_pointer_get(doc, "/a/2") == NULL, "pointer past the end");
        tap_ok(ao_json_pointer_get(doc, "/a/-") == NULL, "pointer -");
        tap_ok(ao_json_pointer_get(doc, "/a/01") == NULL, "pointer with a leading zero");
        tap_ok(ao_json_pointer_get(doc, "/a/0/x") == NULL, "pointer below a scalar");
        tap_ok(ao_json_pointer_get(doc, "a") == NULL, "pointer without a slash");
        tap_ok(ao_json_pointer_get(doc, "/m~2n") == NULL, "pointer with a bad escape");
        tap_ok(ao_json_pointer_get(doc, "/mn") == NULL, "pointer to a missing member");
        tap_ok(ao_json_pointer_valid("") && ao_json_pointer_valid("/") && ao_json_pointer_valid("/~0~1/x"),
               "valid pointers");
        tap_ok(!ao_json_pointer_valid("x") && !ao_json_pointer_valid("/~") && !ao_json_pointer_valid("/~a"),
               "invalid pointers");
        tap_ok(ao_json_pointer_index("0", 1, &index) == 0 && index == 0, "index 0");
        tap_ok(ao_json_pointer_index("123", 3, &index) == 0 && index == 123, "index 123");
        tap_ok(ao_json_pointer_index("99999999999999999999999", 23, &index) == 0 && index == SIZE_MAX,
               "huge index saturates");
        tap_is_int(ao_json_pointer_index("-", 1, &index), 1, "index -");
        tap_is_int(ao_json_pointer_index("00", 2, &index), -EINVAL, "index 00");
        tap_is_int(ao_json_pointer_index("", 0, &index), -EINVAL, "empty index");
        tap_is_int(ao_json_pointer_index("1a", 2, &index), -EINVAL, "index 1a");
        tap_is_int(ao_json_pointer_index("+1", 2, &index), -EINVAL, "index +1");
        char *name = ao_json_pointer_unescape("a~0~1b~01", 9);
        tap_is_str(name, "a~/b~1", "unescape");
        free(name);
        cJSON_Delete(doc);
}

int main(void)
{
        run_apply_table(rfc_cases, AO_ARRAY_SIZE(rfc_cases));
        run_apply_table(add_cases, AO_ARRAY_SIZE(add_cases));
        run_apply_table(remove_replace_cases, AO_ARRAY_SIZE(remove_replace_cases));
        run_apply_table(move_copy_cases, AO_ARRAY_SIZE(move_copy_cases));
        run_apply_table(test_cases, AO_ARRAY_SIZE(test_cases));
        run_apply_table(atomic_cases, AO_ARRAY_SIZE(atomic_cases));
        test_parse_ok();
        test_parse_errors();
        test_parse_limits();
        test_depth_limit();
        test_copy_budget();
        test_root_in_place();
        test_apply_malformed();
        test_pointer();
        return tap_done();
}

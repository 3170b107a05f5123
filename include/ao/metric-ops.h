/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Metric operations that hooks write to METRICS_PATH.
 *
 * The file is a JSON stream of operation objects (one per line is usual;
 * any whitespace between them works, and an empty file has no operations):
 *   {"name":"m","action":"add","value":1,"labels":{"k":"v"}}     counter
 *   {"name":"m","action":"set","value":33}                         gauge
 *   {"name":"m","action":"observe","value":42,"buckets":[1,2,5]}   histogram
 *   {"group":"g","action":"expire"}                                drop a group
 *   {"name":"m","add":1} / {"name":"m","set":2}                    shortcuts
 * With a group only add, set and expire are allowed; without one only add,
 * set and observe. A grouped operation replaces everything its group held
 * before (the registry does that; this module only parses). Ungrouped
 * metrics persist across runs, as the documentation describes.
 *
 * Names follow Prometheus: metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label
 * names [a-zA-Z_][a-zA-Z0-9_]* not starting with "__"; label values any
 * UTF-8 string. Values and buckets are finite numbers; buckets strictly
 * increasing, the +Inf bucket implicit (the registry adds it). Errors read
 * "<file>:<line>:<column>: operation <i>: <reason>".
 *
 * As with Go's encoding/json: unknown members are skipped, null counts as
 * absent, and a member the action does not use (buckets outside observe;
 * name, value and labels of expire) is type-checked, then ignored. Stricter
 * than Go: a key twice in one object, a shortcut next to 'action' or 'value',
 * an empty group, and names or label values that are not valid UTF-8 are
 * errors; member names are case-sensitive.
 *
 * Non-logging module; thread-safe except for cJSON's parse-error global.
 */

#include <stddef.h>

#include "ao/error.h"

#define AO_METRIC_OPS_MAX_INPUT   (16u * 1024 * 1024) /* bytes */
#define AO_METRIC_OPS_MAX_OPS     100000
#define AO_METRIC_OPS_MAX_LABELS  64
#define AO_METRIC_OPS_MAX_BUCKETS 256
/*
 * JSON values (member names included) in one operation object: bounds the
 * cJSON tree built for it, whatever unknown members hold, so a 16 MiB file
 * of "[0,0,0,..." cannot take half a gigabyte. Objects and arrays nest at
 * most CJSON_NESTING_LIMIT (1000) deep.
 */
#define AO_METRIC_OPS_MAX_OP_VALUES 4096

struct cJSON;

enum ao_metric_action {
        AO_METRIC_ADD,     /* counter += value */
        AO_METRIC_SET,     /* gauge = value */
        AO_METRIC_OBSERVE, /* histogram observation */
        AO_METRIC_EXPIRE,  /* drop every series of the group */
        _AO_METRIC_ACTION_MAX,
        _AO_METRIC_ACTION_INVALID = -EINVAL,
};

/** "add", "set", "observe" or "expire"; NULL for anything else. */
const char *ao_metric_action_to_string(enum ao_metric_action a);

struct ao_metric_label {
        char *name;  /* owned */
        char *value; /* owned */
};

struct ao_metric_op {
        enum ao_metric_action action;
        char *name;  /* owned; NULL for expire */
        char *group; /* owned; NULL when not grouped */
        double value;
        double *buckets; /* owned, strictly increasing; observe only */
        size_t n_buckets;
        struct ao_metric_label *labels; /* owned, sorted by name, names unique */
        size_t n_labels;
};

struct ao_metric_ops {
        struct ao_metric_op *ops; /* owned, in file order */
        size_t n;
};

/**
 * Parse METRICS_PATH text (@len bytes, need not be NUL-terminated). @filename
 * names the input in errors (NULL: "<input>"). On success @ret (caller-owned,
 * release with ao_metric_ops_done()) holds every operation; on failure it is
 * untouched: one bad operation rejects the file, as a bad values patch does.
 * The position in an error is that of the byte at fault for a syntax error,
 * else of the '{' that opens the operation; the index counts from 0 over the
 * whole stream: "metrics.json:3:1: operation 2: unknown action 'inc'".
 * Returns 0, -EINVAL, -EFBIG (over AO_METRIC_OPS_MAX_INPUT), -E2BIG (over
 * AO_METRIC_OPS_MAX_OPS, _MAX_LABELS, _MAX_BUCKETS or _MAX_OP_VALUES) or
 * -ENOMEM.
 */
int ao_metric_ops_parse(const char *text, size_t len, const char *filename, struct ao_metric_ops *ret,
                        struct ao_error *reterr);

/** Free everything @ops holds and leave it empty; NULL is accepted. */
void ao_metric_ops_done(struct ao_metric_ops *ops);

/**
 * The operations as a JSON array in the long form (action and value spelled out), for tests and logs:
 * [{"action":"observe","name":"m","group":"g","value":1,"buckets":[1,2],"labels":{"k":"v"}}, ...], group
 * and labels only when present, name and value not for expire, buckets for observe only. Owned by the
 * caller (cJSON_Delete()); NULL when out of memory.
 */
struct cJSON *ao_metric_ops_to_json(const struct ao_metric_ops *ops);

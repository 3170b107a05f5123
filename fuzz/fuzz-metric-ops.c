/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the METRICS_PATH parser. Input: the file's text. Besides crashes,
 * leaks and undefined behaviour, it aborts when an invariant breaks: an
 * error must carry a known code and a single printable line naming the
 * file; every operation parsed must obey the rules of ao/metric-ops.h
 * (names, groups, finite numbers, buckets increasing, labels sorted and
 * unique); the long form from ao_metric_ops_to_json(), written back as
 * a stream, must parse to the same operations; and applied to a registry
 * in two batches, the operations must scrape the same whether or not the
 * registry was scraped between the batches (a scrape keeps each family's
 * text until it changes: a change that does not drop the kept text shows).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/metric-ops.h"
#include "ao/metrics.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Metrics files are small; the cap keeps runs fast while every limit but the operation count is reachable. */
#define FUZZ_INPUT_MAX (64 * 1024)

#define FILENAME "fuzz.json"

static void check(bool cond)
{
        if (!cond)
                abort();
}

static void check_message(const struct ao_error *err, int r)
{
        check(r == -EINVAL || r == -E2BIG);
        check(err->code == r);
        check(strncmp(err->msg, FILENAME ":", strlen(FILENAME ":")) == 0);
        for (const unsigned char *p = (const unsigned char *) err->msg; *p; p++)
                check(*p >= 0x20 && *p != 0x7F);
}

static bool utf8_valid(const char *s)
{
        size_t n = strlen(s);
        while (n > 0) {
                size_t k = ao_utf8_sequence_length((const unsigned char *) s, n);
                if (k == 0)
                        return false;
                s += k;
                n -= k;
        }
        return true;
}

static bool name_valid(const char *s, const char *first, const char *rest)
{
        if (!s[0] || !strchr(first, s[0]))
                return false;
        return strspn(s + 1, rest) == strlen(s + 1);
}

#define LOWER  "abcdefghijklmnopqrstuvwxyz"
#define UPPER  "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define DIGITS "0123456789"

static void check_op(const struct ao_metric_op *op)
{
        check(op->action >= 0 && op->action < _AO_METRIC_ACTION_MAX);
        check(!op->group || (op->group[0] && utf8_valid(op->group)));
        if (op->action == AO_METRIC_EXPIRE) {
                check(op->group && !op->name && op->n_buckets == 0 && op->n_labels == 0);
                return;
        }
        check(op->name && name_valid(op->name, LOWER UPPER "_:", LOWER UPPER DIGITS "_:"));
        check(isfinite(op->value));
        if (op->action == AO_METRIC_OBSERVE) {
                check(!op->group);
                check(op->n_buckets >= 1 && op->n_buckets <= AO_METRIC_OPS_MAX_BUCKETS);
                for (size_t i = 0; i < op->n_buckets; i++)
                        check(isfinite(op->buckets[i]) && (i == 0 || op->buckets[i] > op->buckets[i - 1]));
        } else {
                check(op->n_buckets == 0 && !op->buckets);
        }
        check(op->n_labels <= AO_METRIC_OPS_MAX_LABELS && (op->n_labels > 0) == (op->labels != NULL));
        for (size_t i = 0; i < op->n_labels; i++) {
                const struct ao_metric_label *l = &op->labels[i];
                check(name_valid(l->name, LOWER UPPER "_", LOWER UPPER DIGITS "_"));
                check(strncmp(l->name, "__", 2) != 0);
                check(utf8_valid(l->value));
                check(i == 0 || strcmp(op->labels[i - 1].name, l->name) < 0);
        }
}

/*
 * Printed with the project's exact printer: cJSON's own prints 15 significant digits whenever they
 * come within an epsilon of the value, so 100 and the next double up would both read "100".
 */
static char *to_text(const struct ao_metric_ops *ops)
{
        cJSON *json = ao_metric_ops_to_json(ops);
        check(json != NULL);
        char *s = ao_json_canonical(json);
        cJSON_Delete(json);
        return s;
}

/* The long form, one operation per line, parses back to the same operations. */
static void check_round_trip(const struct ao_metric_ops *ops)
{
        cJSON *json = ao_metric_ops_to_json(ops);
        struct ao_strbuf sb = {0};
        struct ao_metric_ops again = {0};
        struct ao_error err = {0};

        check(json != NULL);
        for (const cJSON *c = json->child; c; c = c->next) {
                char *one = ao_json_canonical(c);
                ao_strbuf_append(&sb, one);
                ao_strbuf_append_c(&sb, '\n');
                free(one);
        }
        cJSON_Delete(json);
        check(ao_metric_ops_parse(ao_strbuf_str(&sb), sb.len, FILENAME, &again, &err) == 0);
        check(again.n == ops->n);
        char *want = to_text(ops), *got = to_text(&again);
        check(strcmp(want, got) == 0);
        free(want);
        free(got);
        ao_metric_ops_done(&again);
        ao_strbuf_done(&sb);
}

/* Apply @ops as two batches of one hook; with @scrape_between, format the registry in between. */
static char *apply_in_two(const struct ao_metric_ops *ops, bool scrape_between)
{
        struct ao_metrics *m = ao_metrics_new("fuzz_");
        size_t half = ops->n / 2;
        const struct ao_metric_ops first = {.ops = ops->ops, .n = half};
        const struct ao_metric_ops second = {.ops = ops->ops + half, .n = ops->n - half};
        struct ao_error err = {0};

        (void) ao_metrics_apply_hook_ops(m, &first, "hook.sh", "module", &err);
        if (scrape_between)
                free(ao_metrics_format(m));
        (void) ao_metrics_apply_hook_ops(m, &second, "hook.sh", "module", &err);
        char *text = ao_metrics_format(m);
        if (scrape_between) {
                char *again = ao_metrics_format(m);
                check(strcmp(text, again) == 0);
                free(again);
        }
        ao_metrics_free(m);
        return text;
}

static void check_kept_text(const struct ao_metric_ops *ops)
{
        char *fresh = apply_in_two(ops, false), *kept = apply_in_two(ops, true);
        check(strcmp(fresh, kept) == 0);
        free(fresh);
        free(kept);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct ao_metric_ops ops = {0};
        struct ao_error err = {0};

        if (size > FUZZ_INPUT_MAX)
                return 0;
        int r = ao_metric_ops_parse((const char *) data, size, FILENAME, &ops, &err);
        if (r < 0) {
                check_message(&err, r);
                check(ops.n == 0 && !ops.ops);
                return 0;
        }
        check(ops.n <= AO_METRIC_OPS_MAX_OPS && (ops.n > 0) == (ops.ops != NULL));
        for (size_t i = 0; i < ops.n; i++)
                check_op(&ops.ops[i]);
        check_round_trip(&ops);
        if (ops.n > 0)
                check_kept_text(&ops);
        ao_metric_ops_done(&ops);
        return 0;
}

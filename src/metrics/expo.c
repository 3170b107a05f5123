/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/metrics.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ao/strbuf.h"

#include "internal.h"

/*
 * Prometheus text format 0.0.4, written the way the Go client's expfmt
 * (text_create.go) writes it, so scrapes of the C operator read like those
 * of the Go one: no blank lines, labels in the series' order, `le` last,
 * every number through writeFloat() = strconv.FormatFloat(v, 'g', -1, 64)
 * (bucket counts and _count included).
 */

#define NUMBER_MAX 32 /* "-1.7976931348623157e+308" and a NUL fit */

/*
 * Go's 'g' formatting of shortest digits (strconv/ftoa.go): @digits (no
 * trailing zeros, at least one) make the value 0.digits * 10^dp. With the
 * shortest precision Go switches to the exponent form when the exponent is
 * below -4 or at least 6 ("1e+06", "1.23456789e+08", "1e-07"), writing at
 * least two exponent digits.
 */
static size_t format_digits(char *buf, bool neg, const char *digits, int nd, int dp)
{
        int exp = dp - 1;
        size_t n = 0;

        if (neg)
                buf[n++] = '-';
        if (exp < -4 || exp >= 6) {
                buf[n++] = digits[0];
                if (nd > 1) {
                        buf[n++] = '.';
                        for (int i = 1; i < nd; i++)
                                buf[n++] = digits[i];
                }
                buf[n++] = 'e';
                buf[n++] = exp < 0 ? '-' : '+';
                if (exp < 0)
                        exp = -exp;
                if (exp >= 100)
                        buf[n++] = (char) ('0' + exp / 100);
                buf[n++] = (char) ('0' + exp / 10 % 10);
                buf[n++] = (char) ('0' + exp % 10);
        } else {
                if (dp > 0) {
                        for (int i = 0; i < dp; i++)
                                buf[n++] = i < nd ? digits[i] : '0';
                } else {
                        buf[n++] = '0';
                }
                if (nd > dp) {
                        buf[n++] = '.';
                        for (int i = dp < 0 ? dp : 0; i < 0; i++)
                                buf[n++] = '0';
                        for (int i = dp > 0 ? dp : 0; i < nd; i++)
                                buf[n++] = digits[i];
                }
        }
        buf[n] = '\0';
        return n;
}

/* Split "d.ddde±x" (from %.*e) into digits without trailing zeros and the decimal point position. */
static void split_exponent_form(const char *s, char *digits, int *ret_nd, int *ret_dp)
{
        int nd = 0;

        for (; *s != 'e'; s++)
                if (*s != '.')
                        digits[nd++] = *s;
        while (nd > 1 && digits[nd - 1] == '0')
                nd--;
        digits[nd] = '\0';
        *ret_nd = nd;
        *ret_dp = atoi(s + 1) + 1;
}

static bool round_trips(const char *s, double v)
{
        return strtod(s, NULL) == v;
}

/*
 * The shortest decimal that reads back as @v (> 0, finite): the correctly rounded one at the smallest
 * precision that round-trips. At a power of two the interval of values reading back as @v is lopsided,
 * so a neighbour in the last digit may round-trip where the rounded value does not: try those too, as
 * Go's shortest algorithm would find them.
 */
static void shortest_digits(double v, char *digits, int *ret_nd, int *ret_dp)
{
        char tmp[NUMBER_MAX];

        for (int prec = 1; prec <= 17; prec++) {
                (void) snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
                if (round_trips(tmp, v)) {
                        split_exponent_form(tmp, digits, ret_nd, ret_dp);
                        return;
                }
                if (prec == 17)
                        break;
                /* The neighbours: mantissa ± 1 in the last place, same exponent. */
                int nd, dp;
                char d[NUMBER_MAX];
                split_exponent_form(tmp, d, &nd, &dp);
                uint64_t mant = 0;
                for (int i = 0; i < prec; i++)
                        mant = mant * 10 + (uint64_t) (i < nd ? d[i] - '0' : 0);
                for (int delta = -1; delta <= 1; delta += 2) {
                        uint64_t nm = mant + (uint64_t) (int64_t) delta;
                        char cand[NUMBER_MAX];
                        (void) snprintf(cand, sizeof(cand), "%" PRIu64 "e%d", nm, dp - prec);
                        if (nm == 0 || !round_trips(cand, v))
                                continue;
                        int len = snprintf(d, sizeof(d), "%" PRIu64, nm);
                        *ret_dp = dp + (len - prec); /* 999 + 1 = 1000 gains a digit */
                        while (len > 1 && d[len - 1] == '0')
                                len--;
                        d[len] = '\0';
                        memcpy(digits, d, (size_t) len + 1);
                        *ret_nd = len;
                        return;
                }
        }
        /* 17 significant digits always round-trip. */
        (void) snprintf(tmp, sizeof(tmp), "%.16e", v);
        split_exponent_form(tmp, digits, ret_nd, ret_dp);
}

/* @v as Go's strconv.FormatFloat(v, 'g', -1, 64), with Prometheus' spellings of the specials. */
static size_t format_number(char buf[static NUMBER_MAX], double v)
{
        char digits[NUMBER_MAX];
        int nd, dp;
        double a = fabs(v);

        if (isnan(v))
                return (size_t) snprintf(buf, NUMBER_MAX, "NaN");
        if (isinf(v))
                return (size_t) snprintf(buf, NUMBER_MAX, "%s", v > 0 ? "+Inf" : "-Inf");
        if (v == 0) /* -0 too, as Go's writeFloat() */
                return (size_t) snprintf(buf, NUMBER_MAX, "0");
        if (a < 9007199254740992.0 && a == trunc(a)) {
                /* Integers below 2^53: exact digits without a round trip. */
                nd = snprintf(digits, sizeof(digits), "%" PRIu64, (uint64_t) a);
                dp = nd;
                while (nd > 1 && digits[nd - 1] == '0')
                        nd--;
                digits[nd] = '\0';
        } else {
                shortest_digits(a, digits, &nd, &dp);
        }
        return format_digits(buf, v < 0, digits, nd, dp);
}

static void append_number(struct ao_strbuf *sb, double v)
{
        char buf[NUMBER_MAX];
        size_t n = format_number(buf, v);

        ao_strbuf_append_n(sb, buf, n);
}

/* HELP text: \\ and \n escaped. */
static void append_help(struct ao_strbuf *sb, const char *help)
{
        for (const char *p = help; *p;) {
                size_t n = strcspn(p, "\\\n");
                ao_strbuf_append_n(sb, p, n);
                p += n;
                if (!*p)
                        break;
                ao_strbuf_append(sb, *p == '\n' ? "\\n" : "\\\\");
                p++;
        }
}

static const char *const type_names[_AO_METRIC_TYPE_MAX] = {
    [AO_METRIC_COUNTER] = "counter",
    [AO_METRIC_GAUGE] = "gauge",
    [AO_METRIC_HISTOGRAM] = "histogram",
};

/* `name{labels} value` or, without labels, `name value`. */
static void append_sample(struct ao_strbuf *sb, const char *name, const char *suffix, const char *labels,
                          double value)
{
        ao_strbuf_append(sb, name);
        ao_strbuf_append(sb, suffix);
        if (labels[0]) {
                ao_strbuf_append_c(sb, '{');
                ao_strbuf_append(sb, labels);
                ao_strbuf_append_c(sb, '}');
        }
        ao_strbuf_append_c(sb, ' ');
        append_number(sb, value);
        ao_strbuf_append_c(sb, '\n');
}

static void append_bucket(struct ao_strbuf *sb, const char *name, const char *labels, double le, double value)
{
        ao_strbuf_append(sb, name);
        ao_strbuf_append(sb, "_bucket{");
        if (labels[0]) {
                ao_strbuf_append(sb, labels);
                ao_strbuf_append_c(sb, ',');
        }
        ao_strbuf_append(sb, "le=\"");
        append_number(sb, le);
        ao_strbuf_append(sb, "\"} ");
        append_number(sb, value);
        ao_strbuf_append_c(sb, '\n');
}

/*
 * One family; the caller holds f->lock. Families without series are left out, as the Go client
 * does, unless the registry shows them (their HELP and TYPE say the metric exists, no data yet).
 */
static void append_family(struct ao_strbuf *sb, struct ao_metric_family *f, bool show_empty)
{
        struct ao_metric_series *const *series;

        if (f->n_series == 0 && !show_empty)
                return;
        series = metric_family_sorted(f);
        ao_strbuf_appendf(sb, "# HELP %s ", f->name);
        append_help(sb, f->help);
        ao_strbuf_appendf(sb, "\n# TYPE %s %s\n", f->name, type_names[f->type]);
        for (size_t i = 0; i < f->n_series; i++) {
                const struct ao_metric_series *s = series[i];
                if (f->type != AO_METRIC_HISTOGRAM) {
                        append_sample(sb, f->name, "", s->text, s->value);
                        continue;
                }
                uint64_t cumulative = 0;
                for (size_t b = 0; b < f->n_buckets; b++) {
                        cumulative += s->bucket_counts[b];
                        append_bucket(sb, f->name, s->text, f->buckets[b], (double) cumulative);
                }
                append_bucket(sb, f->name, s->text, INFINITY, (double) s->count);
                append_sample(sb, f->name, "_sum", s->text, s->sum);
                append_sample(sb, f->name, "_count", s->text, (double) s->count);
        }
}

/* One family from its kept text, formatted again only when it changed since; the caller holds f->lock. */
static void append_family_text(struct ao_strbuf *sb, struct ao_metric_family *f, bool show_empty)
{
        if (!f->text_valid || f->text_show_empty != show_empty) {
                ao_strbuf_reset(&f->text);
                append_family(&f->text, f, show_empty);
                f->text_valid = true;
                f->text_show_empty = show_empty;
        }
        ao_strbuf_append_n(sb, ao_strbuf_str(&f->text), f->text.len);
}

char *ao_metrics_format(struct ao_metrics *m)
{
        struct ao_strbuf sb = {0};
        struct ao_metric_family **families;
        size_t n_families;

        /* The registry lock only for the list: formatting holds one family's lock at a time. */
        families = metrics_families_snapshot(m, &n_families);
        for (size_t i = 0; i < n_families; i++) {
                pthread_mutex_lock(&families[i]->lock);
                append_family_text(&sb, families[i], __atomic_load_n(&m->show_empty, __ATOMIC_RELAXED));
                pthread_mutex_unlock(&families[i]->lock);
        }
        free(families);
        return ao_strbuf_steal(&sb);
}

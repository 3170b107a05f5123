/* SPDX-License-Identifier: Apache-2.0 */
/* Quoting what the server sent in error messages, safely. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ao/strbuf.h"

#include "internal.h"

/* Control characters and invalid UTF-8 as \xNN, cut with "...": one printable line of at most @size - 1. */
const char *kube_excerpt(char *buf, size_t size, const char *s, size_t len)
{
        const unsigned char *u = (const unsigned char *) s;
        size_t n = 0;

        for (size_t i = 0; i < len;) {
                size_t seq = ao_utf8_sequence_length(u + i, len - i);
                bool escape = seq == 0 || u[i] < 0x20 || u[i] == 0x7F;
                if (n + (escape ? 4 : seq) > size - 4) {
                        memcpy(buf + n, "...", 3);
                        n += 3;
                        break;
                }
                if (escape) {
                        n += (size_t) snprintf(buf + n, size - n, "\\x%02x", u[i]);
                        i++;
                } else {
                        memcpy(buf + n, s + i, seq);
                        n += seq;
                        i += seq;
                }
        }
        buf[n] = '\0';
        return buf;
}

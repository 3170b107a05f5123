/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/base64.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "ao/alloc.h"
#include "ao/macro.h"

/*
 * A hand-written decoder rather than OpenSSL's EVP_DecodeBlock(): that one wants whole groups
 * without white space inside, counts padding as zero bytes the caller must take off again, and
 * would pull libcrypto into every user of src/util for thirty lines.
 */

static int digit(unsigned char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

/* One group of four symbols into @out (3 bytes written); returns the bytes that count (1 to 3), or -EINVAL. */
static int quantum(const unsigned char q[static 4], char *out)
{
        int a = digit(q[0]), b = digit(q[1]);
        int c = q[2] == '=' ? 0 : digit(q[2]), d = q[3] == '=' ? 0 : digit(q[3]);

        if (a < 0 || b < 0 || c < 0 || d < 0 || (q[2] == '=' && q[3] != '='))
                return -EINVAL;
        uint32_t v = (uint32_t) a << 18 | (uint32_t) b << 12 | (uint32_t) c << 6 | (uint32_t) d;
        out[0] = (char) (v >> 16);
        out[1] = (char) (v >> 8);
        out[2] = (char) v;
        return q[2] == '=' ? 1 : q[3] == '=' ? 2 : 3;
}

int ao_base64_decode(const char *text, size_t len, char *out, size_t *ret_len)
{
        const unsigned char *p = (const unsigned char *) text, *end = p + len;
        size_t n = 0, nq = 0;
        unsigned char q[4];
        bool padded = false;

        /* In place is safe: a group is copied to q before its 3 bytes are written at out + n,
           and n <= 3/4 of the input read so far. */
        for (; p < end; p++) {
                if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
                        continue;
                if (padded)
                        return -EINVAL;
                q[nq++] = *p;
                if (nq < 4)
                        continue;
                nq = 0;
                int k = quantum(q, out + n);
                if (k < 0)
                        return k;
                n += (size_t) k;
                padded = k < 3;
        }
        if (nq != 0)
                return -EINVAL;
        *ret_len = n;
        return 0;
}

int ao_base64_decode_dup(const char *text, size_t len, char **ret, size_t *ret_len)
{
        _cleanup_free_ char *out = ao_xmalloc(AO_BASE64_DECODED_MAX(len) + 1);
        size_t n;
        int r = ao_base64_decode(text, len, out, &n);

        if (r < 0)
                return r;
        out[n] = '\0';
        *ret = TAKE_PTR(out);
        *ret_len = n;
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The identity a replica writes into the Lease as its holder, and the address a follower reads
 * back out of it to ask the leader's /readyz.
 *
 * The identity is the Go operator's: "<pod>.<listen address, dots as dashes>.<namespace>.pod".
 * The Go follower looks it up as a host name in the cluster DNS, whose pod records carry the
 * address in that dashed label ("10-1-2-3.<namespace>.pod"). Reading the label directly gives
 * the same address without a lookup, also where the DNS serves no pod records, and reads a Go
 * leader's identity the same way (a mixed Go/C pair).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "internal.h"

char *leader_identity(const char *pod, const char *listen_address, const char *namespace_)
{
        /* ':' too: an IPv6 address, dashed the way the cluster DNS writes it ("fd00--5"). */
        char *address = ao_xstrdup(listen_address);
        for (char *p = address; *p; p++)
                if (*p == '.' || *p == ':')
                        *p = '-';
        char *id = ao_xasprintf("%s.%s.%s.pod", pod, address, namespace_);
        free(address);
        return id;
}

/* The dashed label back as an address: dashes as dots for IPv4, else as colons for IPv6. */
static bool undash(const char *label, size_t len, char out[INET6_ADDRSTRLEN])
{
        if (len == 0 || len >= INET6_ADDRSTRLEN)
                return false;
        unsigned char buf[sizeof(struct in6_addr)];
        for (int family = 0; family < 2; family++) {
                for (size_t i = 0; i < len; i++)
                        out[i] = label[i] == '-' ? (family == 0 ? '.' : ':') : label[i];
                out[len] = '\0';
                if (inet_pton(family == 0 ? AF_INET : AF_INET6, out, buf) == 1)
                        return true;
        }
        return false;
}

bool leader_identity_address(const char *identity, char out[INET6_ADDRSTRLEN])
{
        /* "<pod>.<address>.<namespace>.pod": pod names may hold dots, so count from the right. */
        size_t len = strlen(identity);
        static const char suffix[] = ".pod";
        size_t n = sizeof(suffix) - 1;
        if (len <= n || strcmp(identity + len - n, suffix) != 0)
                return false;
        const char *end = identity + len - n; /* after the namespace */
        const char *ns_dot = end;
        while (ns_dot > identity && ns_dot[-1] != '.')
                ns_dot--;
        if (ns_dot <= identity + 1 || ns_dot == end)
                return false;
        const char *address_end = ns_dot - 1;
        const char *address = address_end;
        while (address > identity && address[-1] != '.')
                address--;
        if (address == identity) /* no pod name in front */
                return false;
        return undash(address, (size_t) (address_end - address), out);
}

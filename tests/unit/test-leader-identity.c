/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Lease holder identity: what a replica writes, and the address a follower reads back out
 * of its own kind of identity and of a Go operator's.
 */
#include <stdlib.h>

#include "../tap.h"
#include "../../src/operator/internal.h"

static void expect_address(const char *identity, const char *want)
{
        char got[INET6_ADDRSTRLEN] = "";
        bool found = leader_identity_address(identity, got);
        if (want) {
                tap_ok(found, "'%s' names an address", identity);
                tap_is_str(got, want, "'%s': %s", identity, want);
        } else {
                tap_ok(!found, "'%s' names no address", identity);
        }
}

int main(void)
{
        char *id = leader_identity("addon-operator-5d8f7-x2x9q", "10.244.1.17", "d8-system");
        tap_is_str(id, "addon-operator-5d8f7-x2x9q.10-244-1-17.d8-system.pod",
                   "IPv4: the Go operator's identity");
        expect_address(id, "10.244.1.17");
        free(id);

        id = leader_identity("ao-0", "fd00:10:244::5", "ns");
        tap_is_str(id, "ao-0.fd00-10-244--5.ns.pod", "IPv6: colons as dashes, as in the DNS's pod records");
        expect_address(id, "fd00:10:244::5");
        free(id);

        /* Pod names may hold dots: the address is the third label from the right. */
        expect_address("my.pod.name.10-0-0-9.ns.pod", "10.0.0.9");
        expect_address("a.0-0-0-0.ns.pod", "0.0.0.0"); /* the caller refuses the wildcard */

        /* Identities naming no address. */
        expect_address("", NULL);
        expect_address("a.my-host-example.ns.pod", NULL); /* a host name as the listen address */
        expect_address("10-0-0-9.ns.pod", NULL);          /* no pod name in front */
        expect_address("a.10-0-0-9.ns", NULL);            /* not the ".pod" form */
        expect_address("a.10-0-0-9..pod", NULL);          /* no namespace */
        expect_address("a.10-0-0-256.ns.pod", NULL);
        expect_address("a..ns.pod", NULL);
        expect_address(".pod", NULL);
        expect_address("some-other-elector-id", NULL);
        return tap_done();
}

# Helpers of the HA tests (test-kube-ha.sh, test-ha-real.sh), sourced after tap.sh. Each operator
# ("pod" a, b or c) listens on its own loopback address, all on one port ($port): a follower asks
# the leader's address, read from its Lease identity, on its own port, as the Go operator does.

address_of() { case "$1" in a) echo 127.0.0.1 ;; b) echo 127.0.0.2 ;; c) echo 127.0.0.3 ;; esac; }

readyz() { # readyz POD: "<status> <body>" of POD's /readyz, its newlines written as \n
        local code body
        rm -f "$work/readyz.body"
        code=$(curl -s -m 20 -o "$work/readyz.body" -w '%{http_code}' "http://$(address_of "$1"):$port/readyz")
        body=$(cat "$work/readyz.body" 2>/dev/null; echo .)
        body=${body%.}
        printf '%s %s' "$code" "${body//$'\n'/\\n}"
}

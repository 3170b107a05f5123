#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# /metrics under load: the operator in local mode with SERIES hook metric series (one onStartup
# global hook writes them to METRICS_PATH; they are served on /metrics/hooks by the same h2o
# thread and formatter as /metrics) and HOOKS schedule hooks running every second on 4 queues.
# The reference is bench-serve: a bare epoll HTTP/1.1 server answering with the same bytes the
# operator served, measured in the same run, rounds alternating:
#   scrape   curl time_total of one GET (median of 5 rounds x 10 GETs each side)
#   wrk      requests/s, wrk -t1 -c4 -d3s, 3 rounds each side, while the hooks run
# Ratios are operator / reference for rates and reference / operator for times (1.0 = the bare limit).
#   bench/bench-metrics.sh [BINARY] [SERIES] [HOOKS]     (defaults: build-release/addon-operator, 10000, 100)
set -euo pipefail
binary=$(realpath "${1:-build-release/addon-operator}")
series=${2:-10000}
hooks=${3:-100}
serve=$(dirname "$binary")/bench/bench-serve
[ -x "$serve" ] || { echo "bench-metrics: $serve is missing (ninja -C $(dirname "$binary"))" >&2; exit 1; }
command -v wrk >/dev/null || { echo "bench-metrics: wrk is not installed" >&2; exit 77; }
work=$(mktemp -d /tmp/bench-metrics.XXXXXX)
op_pid=
serve_pid=
trap 'kill -9 ${op_pid:-} ${serve_pid:-} 2>/dev/null || true; rm -rf "$work"' EXIT

mkdir -p "$work/global/hooks" "$work/modules"
: >"$work/modules/values.yaml"
cat >"$work/global/hooks/series.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then echo '{"configVersion":"v1","onStartup":1}'; exit 0; fi
awk 'BEGIN { for (i = 0; i < $series; i++)
        printf "{\"name\":\"bench_series\",\"action\":\"set\",\"value\":%d,\"labels\":{\"object\":\"object-%06d\",\"kind\":\"ConfigMap\"}}\n", i, i }' \
        >"\$METRICS_PATH"
EOF
for i in $(seq -w 1 "$hooks"); do
        printf '#!/bin/sh\n[ "$1" = --config ] && echo '"'"'{"configVersion":"v1","schedule":[{"name":"tick","crontab":"* * * * * *","queue":"q%d"}]}'"'"'\nexit 0\n' \
                $((10#$i % 4)) >"$work/global/hooks/busy-$i.sh"
done
chmod +x "$work/global/hooks/"*.sh

MODULES_DIR=$work/modules GLOBAL_HOOKS_DIR=$work/global ADDON_OPERATOR_STATE_DIR=$work/state \
        ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1 ADDON_OPERATOR_LISTEN_PORT=0 DEBUG_UNIX_SOCKET=$work/debug.socket \
        LOG_TYPE=json "$binary" start >"$work/log" 2>&1 &
op_pid=$!
port=
for _ in $(seq 300); do
        port=$(sed -n 's/.*"msg":"http: listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/log" | head -1)
        [ -n "$port" ] && break
        kill -0 "$op_pid" || { cat "$work/log" >&2; exit 1; }
        sleep 0.1
done
[ -n "$port" ] || { echo "bench-metrics: the operator did not listen" >&2; exit 1; }
url=http://127.0.0.1:$port
for _ in $(seq 600); do
        n=$(curl -s "$url/metrics/hooks" | grep -c '^bench_series{' || true)
        [ "$n" -ge "$series" ] && break
        sleep 0.1
done
[ "$n" -ge "$series" ] || { echo "bench-metrics: only $n of $series series appeared" >&2; exit 1; }

curl -s "$url/metrics/hooks" >"$work/body"
size=$(stat -c %s "$work/body")
lines=$(grep -vc '^#' "$work/body")
own_size=$(curl -s "$url/metrics" | wc -c)
"$serve" "$work/body" "$work/serve.port" &
serve_pid=$!
for _ in $(seq 100); do [ -s "$work/serve.port" ] && break; sleep 0.05; done
ref=http://127.0.0.1:$(cat "$work/serve.port")

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
hook_runs() { # hook runs so far, from the operator's own counters
        curl -s "$url/metrics" | awk '/^addon_operator_global_hook_run_seconds_count/ { s += $2 } END { printf "%d\n", s }'
}
scrape() { # scrape URL N: N timed GETs, one time_total (seconds) per line
        for _ in $(seq "$2"); do curl -s -o /dev/null -w '%{time_total}\n' "$1"; done
}
rate() { # rate URL: wrk requests/s
        wrk -t1 -c4 -d3s "$1" | awk '/^Requests\/sec:/ { print $2 }'
}

: >"$work/scrape.op" && : >"$work/scrape.ref"
for _ in 1 2 3 4 5; do
        scrape "$url/metrics/hooks" 10 >>"$work/scrape.op"
        scrape "$ref/" 10 >>"$work/scrape.ref"
done
: >"$work/wrk.op" && : >"$work/wrk.ref"
runs0=$(hook_runs) t0=$(date +%s%N)
for _ in 1 2 3; do
        rate "$url/metrics/hooks" >>"$work/wrk.op"
        rate "$ref/" >>"$work/wrk.ref"
done
runs1=$(hook_runs) t1=$(date +%s%N)
kill -0 "$op_pid" || { cat "$work/log" >&2; exit 1; }

s_op=$(median <"$work/scrape.op") s_ref=$(median <"$work/scrape.ref")
w_op=$(median <"$work/wrk.op") w_ref=$(median <"$work/wrk.ref")
hz=$(awk -v r=$((runs1 - runs0)) -v t=$((t1 - t0)) 'BEGIN { printf "%.0f", r / (t / 1e9) }')
echo "# bench-metrics: $lines series ($series from a hook), /metrics/hooks $size bytes, /metrics $own_size bytes"
echo "# $hooks schedule hooks every second on 4 queues: $hz hook runs/s during wrk"
awk -v o="$s_op" -v r="$s_ref" -v sz="$size" -v n="$lines" 'BEGIN {
        printf "scrape  operator %7.2f ms   bench-serve %7.2f ms   (median of 50 GETs each)\n", o * 1e3, r * 1e3
        printf "row: /metrics scrape, %d series, %.0f KB|%.2f ms|%.2f ms (bare server, same bytes)|%.2f|report|-\n",
                n, sz / 1024, o * 1e3, r * 1e3, r / o }'
awk -v o="$w_op" -v r="$w_ref" -v hz="$hz" -v n="$lines" 'BEGIN {
        printf "wrk     operator %7.0f req/s  bench-serve %7.0f req/s  (median of 3 x 3 s, -t1 -c4)\n", o, r
        printf "row: /metrics wrk, %d series, %s hook runs/s|%.0f req/s|%.0f req/s (bare server, same bytes)|%.2f|report|-\n",
                n, hz, o, r, o / r }'
kill -TERM "$op_pid" "$serve_pid"
wait "$op_pid" || true
op_pid=

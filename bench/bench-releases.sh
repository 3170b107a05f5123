#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Module convergence and release healing on the real control plane: tests/cluster's kube-apiserver
# 1.20 + etcd + kube-controller-manager, the real helm 3.17.2 (tests/helpers/get-helm.sh).
#
#   bench/bench-releases.sh [--quick] NEW_BINARY BASE_BINARY
#
# NEW and BASE are addon-operator binaries (BASE: the design to compare against, built from an
# older commit; both may be the same file). One cluster for the whole run; MODULES modules (full:
# 8 orders x 4, quick: 3 x 4), each a chart with a ConfigMap, a Secret, a ServiceAccount and a
# Deployment with 0 replicas (no kubelet: nothing runs). Every helm process the operator starts goes
# through a wrapper in HELM_BIN_PATH that appends its arguments to a file, then execs the real helm.
# Measured, alternating round by round (ROUNDS each, full: 3, quick: 1; medians):
#   1. first converge, NEW: ADDON_OPERATOR_PARALLEL_MODULE_RUNS=1 against the default (parallel);
#      an empty namespace each time (the objects and helm's release Secrets deleted between rounds);
#   2. restart converge with nothing changed, NEW against BASE: time, and helm processes per
#      subcommand (`version` not counted);
#   3. the last round of 2 goes on idle: API requests (kubernetes_client_request_result_total, all
#      components, from /metrics; a watch counts once, when it starts) and helm processes in an
#      IDLE-second window (full: 60, quick: 15) right after the converge;
#   4. then deletion -> restoration of release objects, a ConfigMap and a Deployment in turn, one
#      release after another (bench/releases-api.py heal): from the DELETE's response to the watch's
#      ADDED event. NEW: up to 20 samples (quick: 4), stopping after 2 (quick: 1) slower than 5 s,
#      after 60 s (quick: 15), or at the first not restored within 45 s (quick: 25). BASE: 1 sample.
# Times are from the operator's exec (wall) and from its own "first converge done in N ms" (the
# converge alone: a start also spends ~5 s on the API discovery through the client's rate limiter).
# Steps 2-4 run BASE with HELM_MONITOR_INTERVAL=$MONITOR (full: 30s, quick: 15s;
# BENCH_RELEASES_MONITOR_INTERVAL overrides) and NEW with HELM_MONITOR_INTERVAL=0, its default
# (it heals by watch; BENCH_RELEASES_NEW_MONITOR_INTERVAL overrides): longer than a restart converge, so that no monitor
# check lands in one (the script warns if one does), and short enough for a periodic monitor to
# show in the idle window and to heal within a sample's timeout. At the default 4m30s neither
# would (the output derives what the idle window's rate means at the default interval).
# Prints human-readable results and "row:" lines for bench/run. Exit 77 (skipped) when the real
# control plane or helm cannot run here (AO_SKIP_REAL_CLUSTER=1 skips too). BENCH_RELEASES_KEEP=DIR
# copies the work directory (operator logs, helm calls) there at exit; otherwise it is removed.
# Full: about 8.5 minutes on 2 cores; --quick: about 2.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
command_line="bench/bench-releases.sh $*"
quick=false
[ "${1:-}" = --quick ] && { quick=true; shift; }
[ $# -eq 2 ] || { echo "usage: bench/bench-releases.sh [--quick] NEW_BINARY BASE_BINARY" >&2; exit 2; }
new=$(realpath "$1")
base=$(realpath "$2")
for b in "$new" "$base"; do [ -x "$b" ] || { echo "bench-releases: '$b' is not executable" >&2; exit 2; }; done

if $quick; then
        orders=3 per_order=4 rounds=1 idle=15 monitor=15s heal_n=4 heal_timeout=25 heal_budget=15 heal_slow=1
else
        orders=8 per_order=4 rounds=3 idle=60 monitor=30s heal_n=20 heal_timeout=45 heal_budget=60 heal_slow=2
fi
monitor=${BENCH_RELEASES_MONITOR_INTERVAL:-$monitor}
modules=$((orders * per_order))
ns=ao

work=$(mktemp -d /tmp/bench-releases.XXXXXX)
pid=
bench_name=bench-releases
keep_dir=${BENCH_RELEASES_KEEP:-}
# shellcheck source=bench/real-cluster.sh
. "$here/bench/real-cluster.sh"
trap cleanup EXIT

[ -z "${AO_SKIP_REAL_CLUSTER:-}" ] || skip "AO_SKIP_REAL_CLUSTER is set"
helm=$(bash "$here/tests/helpers/get-helm.sh" 2>"$work/get-helm.log") ||
        skip "no real helm ($(tail -1 "$work/get-helm.log"))"
command -v python3 >/dev/null || skip "no python3"
t_start=$SECONDS
start_real_cluster
api() { python3 "$here/bench/releases-api.py" "$env_file" "$@"; }
api rbac system:serviceaccount:ao:addon-operator

# ---- the modules: ORDERS orders x PER_ORDER small charts ----------------------------------------
mkdir -p "$work/modules" "$work/global" "$work/home"
: >"$work/modules/values.yaml"
letters=(a b c d e f g h i j k l m n o p)
names=()
for o in $(seq "$orders"); do
        for x in $(seq 0 $((per_order - 1))); do
                name=bench$o${letters[$x]}
                names+=("$name")
                d=$work/modules/$(printf '%03d' $((o * 10)))-$name
                mkdir -p "$d/templates"
                printf 'apiVersion: v2\nname: %s\nversion: 0.1.0\n' "$name" >"$d/Chart.yaml"
                printf '%s:\n  greeting: hello from %s\n' "$name" "$name" >"$d/values.yaml"
                cp "$here/bench/charts/small/templates/objects.yaml" "$d/templates/"
                echo "${name}Enabled: true" >>"$work/modules/values.yaml"
        done
done

calls=$work/helm-calls
cat >"$work/helm" <<EOF
#!/bin/sh
# One line per helm process the operator starts, then the real helm.
printf '%s\n' "\$*" >>'$calls'
exec '$helm' "\$@"
EOF
chmod +x "$work/helm"
: >"$calls"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
# helm processes since line $1 of the calls file, without `version`: a count; by subcommand: "get 32, history 32"
helm_count() { tail -n +$(($1 + 1)) "$calls" | awk '$1 != "version"' | wc -l; }
helm_by_sub() {
        tail -n +$(($1 + 1)) "$calls" | awk '$1 != "version" { n[$1]++ } END { for (s in n) printf "%s %d\n", s, n[s] }' |
                sort | paste -sd, - | sed 's/,/, /g'
}
calls_now() { wc -l <"$calls"; }

# start_op BINARY TAG [VAR=VALUE...]: start an operator, wait for its first converge. Sets pid, log,
# wall_ms (exec to the log line) and conv_ms (the operator's own figure), port, socket.
start_op() {
        local binary=$1 tag=$2 t0
        shift 2
        log=$work/op-$tag.log
        socket=$work/debug-$tag.socket
        rm -rf "$work/tmp"
        mkdir -p "$work/tmp"
        : >"$log"
        t0=$(now_ms)
        env KUBE_CONFIG="$KUBECONFIG_OPERATOR" ADDON_OPERATOR_NAMESPACE=$ns HELM_BIN_PATH="$work/helm" \
                HOME="$work/home" MODULES_DIR="$work/modules" GLOBAL_HOOKS_DIR="$work/global" \
                ADDON_OPERATOR_TMP_DIR="$work/tmp" ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1 \
                ADDON_OPERATOR_LISTEN_PORT=0 DEBUG_UNIX_SOCKET="$socket" LOG_TYPE=json "$@" \
                "$binary" start >"$log" 2>&1 &
        pid=$!
        # Woken by the log line itself (tail -f), not by polling.
        if ! timeout 600 grep -q -m1 '"msg":"first converge done' < <(tail -n +1 -f "$log"); then
                tail -30 "$log" >&2
                fail "$tag: no 'first converge done' within 600 s (log above)"
        fi
        wall_ms=$(($(now_ms) - t0))
        conv_ms=$(grep -m1 -o '"msg":"first converge done in [0-9]*' "$log" | grep -o '[0-9]*$')
        port=$(grep -m1 -o '"msg":"http: listening on [0-9.]*:[0-9]*' "$log" | grep -o '[0-9]*$')
        requests=$(api_requests)
}
stop_op() {
        kill -TERM "$pid"
        wait "$pid" || fail "the operator exited with status $? ($log)"
        pid=
}
# The sum of every kubernetes_client_request_result_total series on the operator's /metrics.
api_requests() {
        curl -sf "http://127.0.0.1:$port/metrics" |
                awk '/^[a-z_]*kubernetes_client_request_result_total\{/ { s += $NF } END { printf "%d\n", s }'
}
# The same by component: "main 12, helm_monitor 40"
api_requests_by_component() {
        curl -sf "http://127.0.0.1:$port/metrics" | awk '/^[a-z_]*kubernetes_client_request_result_total\{/ {
                match($0, /component="[^"]*"/); c = substr($0, RSTART + 11, RLENGTH - 12); s[c] += $NF }
                END { for (c in s) printf "%s %d\n", c, s[c] }' | sort | paste -sd, - | sed 's/,/, /g'
}
monitor_checks() {
        # The monitors' detail (an operator without ?detail answers it anyway).
        curl -sf --unix-socket "$socket" 'http://x/module/resource-monitor.json?detail=true' |
                python3 -c 'import json, sys; print(sum(m.get("checks", 0) for m in json.load(sys.stdin)["monitors"]))'
}

echo "command: $command_line"
echo "bench-releases: $modules modules ($orders orders x $per_order), $rounds round(s) each, $(nproc) CPUs"
echo "NEW  = $new"
echo "BASE = $base$([ "$new" = "$base" ] && echo ' (the same file)')"
echo "helm = $helm ($("$helm" version --short)); $("$(cat "$work/c/apiserver.bin")" --version | sed 's/^Kubernetes/kube-apiserver/')"
echo "cluster started in $((SECONDS - t_start)) s"
echo

# ---- 1. first converge: serial against parallel, NEW -------------------------------------------------
printf '%-9s %-8s %9s %9s %8s  %s\n' round mode wall_ms conv_ms api_req "helm processes"
: >"$work/first-serial" && : >"$work/first-parallel"
for r in $(seq "$rounds"); do
        for mode in serial parallel; do
                c0=$(calls_now)
                if [ $mode = serial ]; then
                        start_op "$new" "first-$mode-$r" ADDON_OPERATOR_PARALLEL_MODULE_RUNS=1
                else
                        start_op "$new" "first-$mode-$r"
                fi
                stop_op
                echo "$wall_ms $conv_ms" >>"$work/first-$mode"
                printf '%-9s %-8s %9d %9d %8d  %s: %s\n' "first $r" $mode "$wall_ms" "$conv_ms" "$requests" \
                        "$(helm_count "$c0")" \
                        "$(helm_by_sub "$c0")"
                # The last round's releases stay for the restarts.
                if [ $mode = serial ] || [ "$r" -lt "$rounds" ]; then
                        api clean $ns
                fi
        done
done
fs_wall=$(awk '{print $1}' "$work/first-serial" | median)
fs_conv=$(awk '{print $2}' "$work/first-serial" | median)
fp_wall=$(awk '{print $1}' "$work/first-parallel" | median)
fp_conv=$(awk '{print $2}' "$work/first-parallel" | median)
echo

# ---- 2.-4. restarts with nothing changed, NEW against BASE; the last round goes on idle, then heals --
objects=()
for i in "${!names[@]}"; do
        if [ $((i % 2)) -eq 0 ]; then objects+=("ConfigMap/${names[$i]}-cm"); else objects+=("Deployment/${names[$i]}"); fi
done
: >"$work/restart-new" && : >"$work/restart-base"
echo "restarts: BASE with HELM_MONITOR_INTERVAL=$monitor, NEW with HELM_MONITOR_INTERVAL=${BENCH_RELEASES_NEW_MONITOR_INTERVAL:-0}"
printf '%-11s %-5s %9s %9s %8s  %s\n' round which wall_ms conv_ms api_req "helm processes"
for r in $(seq "$rounds"); do
        for which in new base; do
                binary=$new
                [ $which = base ] && binary=$base
                c0=$(calls_now)
                # NEW heals by watch (its default HELM_MONITOR_INTERVAL=0: no periodic check at all);
                # BASE only by its periodic check, shortened so that it shows within the windows.
                interval=$monitor
                [ $which = new ] && interval=${BENCH_RELEASES_NEW_MONITOR_INTERVAL:-0}
                start_op "$binary" "restart-$which-$r" HELM_MONITOR_INTERVAL="$interval"
                checks=0
                [ $which = base ] && checks=$(monitor_checks "$binary")
                n=$(helm_count "$c0")
                echo "$wall_ms $conv_ms $n" >>"$work/restart-$which"
                printf '%-11s %-5s %9d %9d %8d  %d: %s\n' "restart $r" $which "$wall_ms" "$conv_ms" "$requests" "$n" \
                        "$(helm_by_sub "$c0")"
                [ "$checks" -eq 0 ] || echo "  warning: $checks release monitor check(s) ran during this converge" \
                        "(HELM_MONITOR_INTERVAL=$monitor is too short): their helm calls are counted above"
                helm_by_sub "$c0" >"$work/restart-$which-subs"
                if [ "$r" -eq "$rounds" ]; then
                        # 3. idle: requests and helm processes in the window after the converge.
                        api_requests_by_component >"$work/idle-$which-before"
                        m0=$(api_requests) && k0=$(monitor_checks "$binary") && c1=$(calls_now) && w0=$(now_ms)
                        sleep "$idle" # the measurement window itself
                        m1=$(api_requests) && k1=$(monitor_checks "$binary") && w1=$(now_ms)
                        api_requests_by_component >"$work/idle-$which-after"
                        echo "$((m1 - m0)) $(helm_count "$c1") $((k1 - k0)) $((w1 - w0))" >"$work/idle-$which"
                        helm_by_sub "$c1" >"$work/idle-$which-subs"
                        # 4. deletion -> restoration
                        n_samples=$heal_n
                        [ $which = base ] && n_samples=1
                        # BASE deletes from the other end of the list: other releases than NEW's.
                        list=("${objects[@]}")
                        [ $which = base ] && mapfile -t list < <(printf '%s\n' "${objects[@]}" | tac)
                        api heal $ns "$n_samples" "$heal_timeout" "$heal_budget" "$heal_slow" \
                                "DEBUG_UNIX_SOCKET='$socket' '$binary' queue main -o json" "${list[@]}" \
                                >"$work/heal-$which"
                fi
                stop_op
        done
done
echo

# ---- results -------------------------------------------------------------------------------------
col() { awk -v c="$1" '{ print $c }' "$2" | median; }
rn_wall=$(col 1 "$work/restart-new") rn_conv=$(col 2 "$work/restart-new") rn_helm=$(col 3 "$work/restart-new")
rb_wall=$(col 1 "$work/restart-base") rb_conv=$(col 2 "$work/restart-base") rb_helm=$(col 3 "$work/restart-base")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
pct() { # pct P FILE: the P-th percentile (nearest rank) of the restored samples' ms
        awk '$1 == "sample" && $4 ~ /^[0-9.]+$/ { print $4 }' "$2" | sort -g |
                awk -v p="$1" '{ v[NR] = $1 } END { if (!NR) { print "-"; exit } r = int(p / 100 * NR + 0.999999); if (r < 1) r = 1; print v[r] }'
}
samples() { awk '$1 == "sample" && $4 ~ /^[0-9.]+$/ { n++ } END { print n + 0 }' "$1"; }
timeouts() { awk '$1 == "sample" && $4 == "timeout" { n++ } END { print n + 0 }' "$1"; }
idle_per_min() { awk '{ printf "%.1f", $'"$1"' * 60000 / $4 }' "$2"; }

echo "1. first converge, NEW, $modules modules, empty namespace (medians of $rounds)"
echo "   ADDON_OPERATOR_PARALLEL_MODULE_RUNS=1: converge $fs_conv ms, exec to done $fs_wall ms"
echo "   default (parallel):                    converge $fp_conv ms, exec to done $fp_wall ms" \
        "(ratio parallel/serial $(ratio "$fp_conv" "$fs_conv"))"
echo "2. restart converge, nothing changed (medians of $rounds)"
echo "   NEW:  converge $rn_conv ms, exec to done $rn_wall ms, helm processes $rn_helm ($(cat "$work/restart-new-subs"))"
echo "   BASE: converge $rb_conv ms, exec to done $rb_wall ms, helm processes $rb_helm ($(cat "$work/restart-base-subs"))"
for which in new base; do
        read -r req hp chk ms <"$work/idle-$which"
        echo "3. idle ${which^^}, ${ms} ms window after the converge, HELM_MONITOR_INTERVAL=$([ $which = base ] && echo "$monitor" || echo "${BENCH_RELEASES_NEW_MONITOR_INTERVAL:-0}"):" \
                "$req API requests ($(idle_per_min 1 "$work/idle-$which")/min), $hp helm processes" \
                "($(idle_per_min 2 "$work/idle-$which")/min: $(cat "$work/idle-$which-subs")), $chk monitor checks"
        echo "   requests so far by component: $(cat "$work/idle-$which-before") at the start of the window;" \
                "$(cat "$work/idle-$which-after") at its end"
        if [ "$chk" -gt 0 ]; then
                # What that costs at the default interval (4m30s + up to 1 min of jitter: 300 s mean).
                awk -v r="$req" -v h="$hp" -v c="$chk" -v m="$modules" 'BEGIN {
                        printf "   per check %.1f requests + %.1f helm; at the default interval that is %.1f requests and %.1f helm processes per minute (derived)\n",
                                r / c, h / c, r / c * m * 60 / 300, h / c * m * 60 / 300 }'
        fi
done
for which in new base; do
        echo "4. deletion -> restoration, ${which^^} (HELM_MONITOR_INTERVAL=$([ $which = base ] && echo "$monitor" || echo "${BENCH_RELEASES_NEW_MONITOR_INTERVAL:-0}")):"
        sed 's/^/   /' "$work/heal-$which"
done

# ---- rows ----------------------------------------------------------------------------------------
heal_row() { # heal_row P: NEW's and BASE's P-th percentile, as the row's cells
        local n b nn bn
        n=$(pct "$1" "$work/heal-new") b=$(pct "$1" "$work/heal-base")
        nn=$(samples "$work/heal-new") bn=$(samples "$work/heal-base")
        [ "$(timeouts "$work/heal-new")" -eq 0 ] || n=">${heal_timeout}000"
        [ "$(timeouts "$work/heal-base")" -eq 0 ] || b=">${heal_timeout}000"
        local goal=2000
        [ "$1" = 99 ] && goal=5000
        awk -v p="$1" -v n="$n" -v b="$b" -v nn="$nn" -v bn="$bn" -v g="$goal" -v mon="$monitor" 'BEGIN {
                met = (n ~ /^[0-9.]+$/ && n + 0 < g) ? "yes" : "no"
                r = (n ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) ? sprintf("%.2f", n / b) : "-"
                printf "row: release object deleted -> restored p%d, BASE HELM_MONITOR_INTERVAL=%s|%s ms (%d samples)|%s ms (BASE, %d samples)|%s|< %d ms|%s\n",
                        p, mon, n, nn, b, bn, r, g, met }'
}
read -r nreq nhp _ nms <"$work/idle-new"
read -r breq bhp _ bms <"$work/idle-base"
awk -v m="$modules" -v fs="$fs_conv" -v fp="$fp_conv" -v fsw="$fs_wall" -v fpw="$fp_wall" \
        -v rn="$rn_conv" -v rb="$rb_conv" -v rnw="$rn_wall" -v rbw="$rb_wall" -v hn="$rn_helm" -v hb="$rb_helm" \
        -v nreq="$nreq" -v breq="$breq" -v nhp="$nhp" -v bhp="$bhp" -v nms="$nms" -v bms="$bms" -v mon="$monitor" 'BEGIN {
        printf "row: first converge, %d modules, parallel (default) vs ADDON_OPERATOR_PARALLEL_MODULE_RUNS=1|%d ms|%d ms (serial)|%.2f|report|-\n", m, fp, fs, fp / fs
        printf "row: first converge, exec to done, parallel vs serial|%d ms|%d ms (serial)|%.2f|report|-\n", fpw, fsw, fpw / fsw
        printf "row: restart converge, %d releases, nothing changed, NEW vs BASE|%d ms|%d ms (BASE)|%.2f|report|-\n", m, rn, rb, rn / rb
        printf "row: restart converge, exec to done, NEW vs BASE|%d ms|%d ms (BASE)|%.2f|report|-\n", rnw, rbw, rnw / rbw
        printf "row: helm processes in a restart converge, nothing changed|%d|%d (BASE)|%s|0|%s\n", hn, hb, (hb > 0 ? sprintf("%.2f", hn / hb) : "-"), (hn == 0 ? "yes" : "no")
        nr = nreq * 60000 / nms; br = breq * 60000 / bms
        printf "row: idle API requests/min, %d releases, BASE HELM_MONITOR_INTERVAL=%s|%.1f|%.1f (BASE)|%s|0 (no polling)|%s\n", m, mon, nr, br, (br > 0 ? sprintf("%.2f", nr / br) : "-"), (nreq == 0 ? "yes" : "no")
        nh = nhp * 60000 / nms; bh = bhp * 60000 / bms
        printf "row: idle helm processes/min, %d releases, BASE HELM_MONITOR_INTERVAL=%s|%.1f|%.1f (BASE)|%s|0|%s\n", m, mon, nh, bh, (bh > 0 ? sprintf("%.2f", nh / bh) : "-"), (nhp == 0 ? "yes" : "no")
}'
heal_row 50
heal_row 99
echo
echo "bench-releases: done in $((SECONDS - t_start)) s"

#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The first Synchronization of a binding on many objects, on the real control plane (tests/cluster's
# kube-apiserver 1.20 + etcd + kube-controller-manager): its time against the bare limit, and the
# operator's memory peak while it lists, against its steady memory afterwards.
#
#   bench/bench-first-sync.sh NEW_BINARY OLD_BINARY [COUNT...]      (counts: default 10000 100000)
#
# NEW and OLD are addon-operator binaries (OLD: the design to compare against; both may be the same
# file). One cluster for the whole run. For each COUNT, in increasing order:
#   1. ConfigMaps cm-000000... in namespace "bench" up to COUNT, created through the API
#      (bench/first-sync-api.py: 16 threads, each with one persistent HTTPS connection, admin token;
#      those of a smaller COUNT stay). Two labels and one data key each: about 460 bytes as the
#      server returns one, compact, of which ~200 are its managedFields (printed).
#   2. The bare limit: bench/list-bare (build-release/bench/list-bare, or $LIST_BARE), a paginated
#      LIST (limit=500, the operator's page size) with the operator's transfer options (HTTP/2,
#      gzip accepted), libjq's parse of each page and the compiled program .metadata.name run on
#      each item. 3 runs, the median; then 3 more with Accept-Encoding: identity, for reference.
#   3. The operator, with no modules, tests/fakehelm as helm and one global hook bound to the
#      ConfigMaps of "bench" (jqFilter .metadata.name, keepFullObjectsInMemory: false, no runs on
#      events), started with env -i as the operator user (kubeconfig-operator, bound to
#      cluster-admin) and the client settings a new user has (KUBE_CLIENT_QPS and KUBE_CLIENT_BURST
#      unset: 5 and 10). Its Synchronization run writes the time it started and checks that its
#      binding context holds COUNT objects (any other count fails the bench).
#      OLD, NEW, OLD, NEW, OLD, NEW ($ROUNDS rounds each, default 3; medians):
#        sync ms: from the exec to the hook's start; peak: VmHWM right after the run (the operator
#        logged it as done); steady: VmRSS once it is stable (3 s within 1 % or 256 KiB, at least
#        3 s after the run). Bytes per object: (steady - steady of the same binary bound to the empty
#        namespace "nothing") / COUNT; the empty run is done once per binary and COUNT, and its
#        sync time is the fixed start-up cost (the API discovery, through the same rate limiter).
#      A run with no Synchronization within BENCH_FIRST_SYNC_TIMEOUT seconds (default 600) counts
#      as ">LIMIT" (it sorts above every time) and adds no memory figures. Requests the operator
#      gave up on after its 60 s request timeout ("timed out" in its log) are counted per run.
#   4. Re-list, once per binary and COUNT, in the last round with the operator still running: its
#      peak is reset (echo 5 > /proc/PID/clear_refs), two writes move etcd's revision on (a Secret in
#      "ao": no ConfigMap watch sees them), then `cluster.sh restart-apiserver`; the restarted
#      server's watch cache starts past the informer's resourceVersion, so its watch gets 410 Gone
#      and it lists again. Re-list ms: from the restart command's return to the increment of
#      kube_informer_relists_total{namespace="bench"} on /metrics; re-list peak: VmHWM once RSS is
#      stable again. The HTTP 403s on the way (the restarted server refuses requests until its
#      RBAC informers have synced, /readyz notwithstanding) and timed-out requests are counted.
#   5. Extra (FAST=0 leaves it out): one more run per binary with KUBE_CLIENT_QPS=1000
#      KUBE_CLIENT_BURST=1000, to separate the client's rate limiter from the processing.
# Prints a table per COUNT, the command to reproduce, and "row:" lines for bench/run. Exit 77
# (skipped) when the real control plane cannot run here (AO_SKIP_REAL_CLUSTER=1 skips too).
# BENCH_FIRST_SYNC_KEEP=DIR copies the work directory (operator logs, hook outputs) there at exit.
# AO_APISERVER_FLAGS=--feature-gates=ServerSideApply=false makes the server store no managedFields
# (about 230 bytes an object instead of 460). A warning is printed when only one binary has addon-operator-spawner next to
# it (the other starts hooks from its own process). Duration on 2 cores, at the default 5 requests
# per second and with no request timing out: about 5 minutes for 10000, about 12 for 100000
# (creating the objects 2.5, the operator's 200 pages 40 s a run); every timed-out request adds 60 s.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: bench/bench-first-sync.sh NEW_BINARY OLD_BINARY [COUNT...]" >&2; exit 2; }
new=$(realpath "$1")
old=$(realpath "$2")
shift 2
counts=("$@")
[ $# -gt 0 ] || counts=(10000 100000)
for b in "$new" "$old"; do [ -x "$b" ] || { echo "bench-first-sync: '$b' is not executable" >&2; exit 2; }; done
for n in "${counts[@]}"; do
        [[ "$n" =~ ^[0-9]+$ ]] || { echo "bench-first-sync: '$n' is not a count" >&2; exit 2; }
done
mapfile -t counts < <(printf '%s\n' "${counts[@]}" | sort -n -u)
rounds=${ROUNDS:-3}
limit_s=${BENCH_FIRST_SYNC_TIMEOUT:-600}
fast=${FAST:-1}
list_bare=${LIST_BARE:-$here/build-release/bench/list-bare}
command_line="bench/bench-first-sync.sh $new $old ${counts[*]}"
[ "$rounds" = 3 ] || command_line="ROUNDS=$rounds $command_line"
[ "$fast" = 1 ] || command_line="FAST=$fast $command_line"

work=$(mktemp -d /tmp/bench-first-sync.XXXXXX)
pid=
bench_name=bench-first-sync
keep_dir=${BENCH_FIRST_SYNC_KEEP:-}
# shellcheck source=bench/real-cluster.sh
. "$here/bench/real-cluster.sh"
trap cleanup EXIT

[ -z "${AO_SKIP_REAL_CLUSTER:-}" ] || skip "AO_SKIP_REAL_CLUSTER is set"
command -v python3 >/dev/null || skip "no python3"
[ -x "$list_bare" ] || fail "no '$list_bare' (ninja -C build-release bench/list-bare, or LIST_BARE=PATH)"
[ -w /proc/self/clear_refs ] || skip "/proc/PID/clear_refs is not writable here (the re-list peak needs it)"
t_start=$SECONDS
start_real_cluster
api() { python3 "$here/bench/first-sync-api.py" "$env_file" "$@"; }
# The operator's own user (kubeconfig-operator), bound to cluster-admin.
python3 "$here/bench/releases-api.py" "$env_file" rbac system:serviceaccount:ao:addon-operator
api namespace bench
api namespace nothing

now_ns() { date +%s%N; }
# median, lowest: of numbers one a line; ">N" (a run that hit the limit) sorts above every number,
# "-" (nothing measured) is left out.
by_value() { awk '$1 != "-" { k = $1; if (k ~ /^>/) k = substr(k, 2) + 1e15; print k "\t" $1 }' | sort -g | cut -f2; }
median() { by_value | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
lowest() { by_value | awk 'NR == 1 { print; f = 1 } END { if (!f) print "-" }'; }
status_kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$2/status"; }

# A global hook bound to the ConfigMaps of NAMESPACE; its Synchronization run writes its start time
# (ns) to DIR/sync-at, checks the binding context, then creates DIR/done as its very last step.
write_hook() { # write_hook DIR NAMESPACE EXPECTED
        local dir=$1 ns=$2 expected=$3 count_cmd
        if command -v jq >/dev/null; then
                count_cmd="jq -r '[.[0].type, (.[0].objects | length)] | @tsv' \"\$BINDING_CONTEXT_PATH\""
        else
                count_cmd="python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))[0]; print(\"%s\\t%d\" % (c[\"type\"], len(c.get(\"objects\", []))))' \"\$BINDING_CONTEXT_PATH\""
        fi
        mkdir -p "$dir/global/hooks" "$dir/modules"
        cat >"$dir/global/hooks/watch.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then
  echo '{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["$ns"]}},"jqFilter":".metadata.name","keepFullObjectsInMemory":false,"executeHookOnEvent":[]}]}'
  exit 0
fi
date +%s%N >'$dir/sync-at'
got=\$($count_cmd)
printf '%s\n' "\$got" >'$dir/got'
if [ "\$got" != "\$(printf 'Synchronization\t%s' $expected)" ]; then
  echo "expected a Synchronization with $expected objects, got '\$got'" >&2
  echo "\$got" >'$dir/bad'
fi
touch '$dir/done'
[ ! -e '$dir/bad' ]
EOF
        chmod +x "$dir/global/hooks/watch.sh"
}

# op_run BINARY TAG NAMESPACE EXPECTED [VAR=VALUE...]: start the operator, wait for its
# Synchronization run to be over. Sets pid, log, dir, port, sync_ms, peak_kb, stalls, timed_out.
# A run with no Synchronization within BENCH_FIRST_SYNC_TIMEOUT seconds (default 600) is a result,
# not a failure: timed_out=1, sync_ms=">LIMIT", the operator left running for op_stop.
op_run() {
        local binary=$1 tag=$2 ns=$3 expected=$4 t0
        shift 4
        dir=$work/run-$tag
        log=$dir/operator.log
        rm -rf "$dir"
        mkdir -p "$dir/tmp" "$dir/home"
        write_hook "$dir" "$ns" "$expected"
        t0=$(now_ns)
        env -i PATH="$PATH" HOME="$dir/home" KUBE_CONFIG="$KUBECONFIG_OPERATOR" ADDON_OPERATOR_NAMESPACE=ao \
                GLOBAL_HOOKS_DIR="$dir/global" MODULES_DIR="$dir/modules" ADDON_OPERATOR_TMP_DIR="$dir/tmp" \
                HELM_BIN_PATH="$here/tests/fakehelm/fake-helm" FAKE_HELM_DIR="$dir/fakehelm" \
                ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1 ADDON_OPERATOR_LISTEN_PORT=0 \
                DEBUG_UNIX_SOCKET="$dir/debug.socket" LOG_TYPE=json "$@" \
                "$binary" start >"$log" 2>&1 &
        pid=$!
        local deadline=$((SECONDS + limit_s))
        timed_out=0
        port=
        until [ -e "$dir/done" ]; do
                kill -0 "$pid" 2>/dev/null || { tail -30 "$log" >&2; fail "$tag: the operator exited before its Synchronization run (log above)"; }
                if [ "$SECONDS" -ge "$deadline" ]; then
                        timed_out=1
                        sync_ms=">$((limit_s * 1000))"
                        peak_kb=$(status_kb VmHWM "$pid")
                        stalls=$(stall_count "$log")
                        return 0
                fi
                sleep 0.05 # a poll: the hook's file has no other completion event here
        done
        [ ! -e "$dir/bad" ] || fail "$tag: the Synchronization run's binding context: expected $expected objects, got '$(cat "$dir/bad")'"
        sync_ms=$((($(cat "$dir/sync-at") - t0) / 1000000))
        # The run is over once the operator logged it (its outputs read, the binding context freed).
        until grep -q '"msg":"hook [^"]* succeeded in' "$log"; do
                kill -0 "$pid" 2>/dev/null || { tail -30 "$log" >&2; fail "$tag: the operator exited after the hook ran"; }
                ! grep -q '"level":"error"' "$log" || { tail -30 "$log" >&2; fail "$tag: an error after the hook ran (log above)"; }
                [ "$SECONDS" -lt "$((deadline + 60))" ] || fail "$tag: the run was not logged as done within 60 s"
                sleep 0.05
        done
        peak_kb=$(status_kb VmHWM "$pid")
        stalls=$(stall_count "$log")
        port=$(grep -m1 -o '"msg":"http: listening on [0-9.]*:[0-9]*' "$log" | grep -o '[0-9]*$')
}
# stall_count LOG: requests the operator gave up on after its request timeout ("Operation timed out
# after 60000 milliseconds with N bytes received", curl's message): each costs a full minute.
stall_count() {
        grep -c 'timed out' "$1" || true
}
op_stop() {
        kill -TERM "$pid"
        wait "$pid" || fail "the operator exited with status $? ($log)"
        pid=
}

# steady_kb: VmRSS once stable: 13 samples 0.25 s apart (3 s) within 1 % or 256 KiB; at most 60 s.
steady_kb() {
        local samples=() deadline=$((SECONDS + 60)) lo hi
        while :; do
                samples+=("$(status_kb VmRSS "$pid")")
                if [ ${#samples[@]} -ge 13 ]; then
                        samples=("${samples[@]: -13}")
                        read -r lo hi < <(printf '%s\n' "${samples[@]}" | sort -n | sed -n '1p;$p' | paste -sd' ')
                        if [ $((hi - lo)) -le 256 ] || [ $((hi - lo)) -le $((hi / 100)) ] ||
                                [ "$SECONDS" -ge "$deadline" ]; then
                                echo "${samples[-1]}"
                                return 0
                        fi
                fi
                sleep 0.25 # the sampling interval itself
        done
}

# relists: kube_informer_relists_total of the informers on "bench" (any prefix, any resource label).
relists() {
        curl -sf "http://127.0.0.1:$port/metrics" |
                awk '/^[a-z_]*kube_informer_relists_total\{/ && /namespace="bench"/ { s += $NF } END { printf "%d\n", s }'
}

# relist TAG: with the operator of the last op_run still running; sets relist_ms, relist_peak_kb, restart_ms.
relist() {
        local r0 t0 t1 deadline
        local lines
        r0=$(relists)
        lines=$(wc -l <"$log")
        echo 5 >"/proc/$pid/clear_refs"
        api bump ao
        t0=$(now_ns)
        bash "$here/tests/cluster/cluster.sh" restart-apiserver "$work/c" >>"$work/restart.log" 2>&1 ||
                { tail -20 "$work/restart.log" >&2; fail "$1: cluster.sh restart-apiserver failed"; }
        t1=$(now_ns)
        restart_ms=$(((t1 - t0) / 1000000))
        deadline=$((SECONDS + limit_s))
        relist_ms=
        until [ "$(relists)" -gt "$r0" ]; do
                kill -0 "$pid" 2>/dev/null || { tail -30 "$log" >&2; fail "$1: the operator exited during the re-list"; }
                [ "$SECONDS" -lt "$deadline" ] || { relist_ms=">$((limit_s * 1000))" && break; }
                sleep 0.1 # a poll of /metrics
        done
        [ -n "$relist_ms" ] || relist_ms=$((($(now_ns) - t1) / 1000000))
        # What the operator met on the way: the restarted server answers 403 until its RBAC
        # informers have synced, though /readyz is already ok.
        relist_403=$(tail -n +$((lines + 1)) "$log" | grep -c 'HTTP 403' || true)
        relist_stalls=$(tail -n +$((lines + 1)) "$log" | grep -c 'timed out' || true)
        steady_kb >/dev/null
        relist_peak_kb=$(status_kb VmHWM "$pid")
}

row() { printf '%-58s %12s %12s\n' "$@"; }
mb() { awk -v k="$1" 'BEGIN { if (k ~ /^[0-9]+$/) printf "%.1f", k / 1024; else print "-" }'; }
# ratio A B, minus A B: ">A" (a lower bound) gives ">result"; anything else not a number gives "-".
ratio() {
        awk -v a="$1" -v b="$2" 'BEGIN { p = ""; if (a ~ /^>/) { p = ">"; a = substr(a, 2) }
                if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%s%.2f\n", p, a / b; else print "-" }'
}
minus() {
        awk -v a="$1" -v b="$2" 'BEGIN { p = ""; if (a ~ /^>/) { p = ">"; a = substr(a, 2) }
                if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/) printf "%s%d\n", p, a - b; else print "-" }'
}

echo "command: $command_line"
echo "bench-first-sync: counts ${counts[*]}, $rounds round(s) per binary, $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo)"
echo "NEW = $new"
echo "OLD = $old$([ "$new" = "$old" ] && echo ' (the same file)')"
echo "$("$(cat "$work/c/apiserver.bin")" --version | sed 's/^Kubernetes/kube-apiserver/'); cluster started in $((SECONDS - t_start)) s"
echo

have=0
: >"$work/rows"
for n in "${counts[@]}"; do
        # ---- 1. the objects ----------------------------------------------------------------------
        if [ "$n" -gt "$have" ]; then
                t=$SECONDS
                api create bench "$have" "$n"
                echo "created ConfigMaps $have..$((n - 1)) in $((SECONDS - t)) s"
                have=$n
        fi
        obj_bytes=$(api size bench)
        pages=$(((n + 499) / 500))
        echo "== $n objects ($obj_bytes bytes each as the server returns them, compact; $pages pages of 500) =="

        # ---- 2. the bare limit ---------------------------------------------------------------------
        : >"$work/bare-$n"
        for i in 1 2 3; do
                out=$(TOKEN=$ADMIN_TOKEN "$list_bare" "$API" "$CA" /api/v1/namespaces/bench/configmaps 500)
                echo "bare $i: $out"
                read -r _ items _ _ _ _ _ _ _ ms _ maxrss <<<"$out"
                [ "$items" -eq "$n" ] || fail "list-bare listed $items objects, expected $n"
                echo "$ms $maxrss" >>"$work/bare-$n"
        done
        bare_ms=$(awk '{ print $1 }' "$work/bare-$n" | median)
        bare_rss=$(awk '{ print $2 }' "$work/bare-$n" | median)
        # The same without compression: on loopback, the server's gzip can cost more than it saves.
        : >"$work/bare-identity-$n"
        for i in 1 2 3; do
                out=$(ACCEPT_ENCODING=identity TOKEN=$ADMIN_TOKEN "$list_bare" "$API" "$CA" \
                        /api/v1/namespaces/bench/configmaps 500)
                echo "bare, Accept-Encoding: identity, $i: $out"
                read -r _ items _ _ _ _ _ _ _ ms _ _ <<<"$out"
                [ "$items" -eq "$n" ] || fail "list-bare listed $items objects, expected $n"
                echo "$ms" >>"$work/bare-identity-$n"
        done
        bare_id_ms=$(median <"$work/bare-identity-$n")

        # ---- 3. empty namespace, then the rounds --------------------------------------------------
        for which in old new; do
                binary=$old
                [ $which = new ] && binary=$new
                op_run "$binary" "empty-$which-$n" nothing 0
                [ "$timed_out" -eq 0 ] || fail "empty-$which-$n: no Synchronization within $limit_s s on an empty namespace"
                e_steady=$(steady_kb)
                launcher=$(grep -m1 -o '"launcher":"[^"]*"' "$log" | cut -d'"' -f4)
                echo "${launcher:-?}" >"$work/launcher-$which"
                [ "$stalls" -eq 0 ] || echo "empty $which: $stalls request(s) timed out"
                echo "empty $which: sync ${sync_ms} ms, peak $(mb "$peak_kb") MB, steady $(mb "$e_steady") MB; hooks started by: ${launcher:-?}"
                echo "$sync_ms $e_steady" >"$work/empty-$which-$n"
                op_stop
        done
        [ "$(cat "$work/launcher-old")" = "$(cat "$work/launcher-new")" ] ||
                echo "warning: OLD starts hooks $(cat "$work/launcher-old"), NEW $(cat "$work/launcher-new")" \
                        "(addon-operator-spawner next to one binary only): the hook's start differs"
        : >"$work/runs-old-$n" && : >"$work/runs-new-$n"
        for r in $(seq "$rounds"); do
                for which in old new; do
                        binary=$old
                        [ $which = new ] && binary=$new
                        op_run "$binary" "$which-$n-$r" bench "$n"
                        if [ "$timed_out" -eq 1 ]; then
                                # Its peak is no first-sync peak (no sync happened): not counted.
                                echo "$sync_ms - - $stalls" >>"$work/runs-$which-$n"
                                line="round $r $which: NO Synchronization within $limit_s s ($stalls request(s) timed out)"
                        else
                                steady=$(steady_kb)
                                echo "$sync_ms $peak_kb $steady $stalls" >>"$work/runs-$which-$n"
                                line="round $r $which: sync $sync_ms ms, peak $(mb "$peak_kb") MB, steady $(mb "$steady") MB"
                                [ "$stalls" -eq 0 ] || line+=" ($stalls request(s) timed out)"
                        fi
                        if [ "$r" -eq "$rounds" ] && [ "$timed_out" -eq 1 ]; then
                                echo "- - - - -" >"$work/relist-$which-$n"
                                line+="; no re-list measured (no first sync)"
                        elif [ "$r" -eq "$rounds" ]; then
                                relist "$which-$n"
                                echo "$relist_ms $relist_peak_kb $restart_ms $relist_403 $relist_stalls" >"$work/relist-$which-$n"
                                line+="; re-list $relist_ms ms after the restart ($restart_ms ms), peak $(mb "$relist_peak_kb") MB"
                                line+=", $relist_403 HTTP 403 and $relist_stalls timed-out request(s) on the way"
                        fi
                        echo "$line"
                        op_stop
                done
        done
        if [ "$fast" = 1 ]; then
                for which in old new; do
                        binary=$old
                        [ $which = new ] && binary=$new
                        op_run "$binary" "fast-$which-$n" bench "$n" KUBE_CLIENT_QPS=1000 KUBE_CLIENT_BURST=1000
                        [ "$timed_out" -eq 0 ] || peak_kb=-
                        echo "$sync_ms $peak_kb $stalls" >"$work/fast-$which-$n"
                        echo "QPS=1000 $which: sync $sync_ms ms, peak $(mb "$peak_kb") MB$([ "$stalls" -eq 0 ] || echo " ($stalls request(s) timed out)")"
                        op_stop
                done
        fi

        # ---- 5. the table --------------------------------------------------------------------------
        for which in old new; do
                f=$work/runs-$which-$n
                s_ms=$(awk '{ print $1 }' "$f" | median)
                s_peak=$(awk '{ print $2 }' "$f" | median)
                s_steady=$(awk '{ print $3 }' "$f" | median)
                read -r e_ms e_steady <"$work/empty-$which-$n"
                s_stalls=$(awk '{ s += $4 } END { print s + 0 }' "$f")
                s_min=$(awk '{ print $1 }' "$f" | lowest)
                read -r rl_ms rl_peak _ rl_403 rl_stalls <"$work/relist-$which-$n"
                f_ms=- f_peak=-
                [ "$fast" = 1 ] && read -r f_ms f_peak _ <"$work/fast-$which-$n"
                printf '%s %s %s %s %s %s %s %s %s %s %s %s %s %s\n' "$s_ms" "$s_peak" "$s_steady" "$e_ms" "$e_steady" \
                        "$rl_ms" "$rl_peak" "$f_ms" "$f_peak" "$(awk -v s="$s_steady" -v e="$e_steady" -v n="$n" \
                                'BEGIN { if (s ~ /^[0-9]+$/) printf "%d", (s - e) * 1024 / n; else print "-" }')" "$s_stalls" \
                        "$s_min" "$rl_403" "$rl_stalls" >"$work/sum-$which-$n"
        done
        read -r o_ms o_peak o_steady o_ems o_esteady o_rl o_rlpeak o_fms o_fpeak o_bpo o_stalls o_min o_rl403 o_rlstalls <"$work/sum-old-$n"
        read -r n_ms n_peak n_steady n_ems n_esteady n_rl n_rlpeak n_fms n_fpeak n_bpo n_stalls n_min n_rl403 n_rlstalls <"$work/sum-new-$n"
        echo
        row "$n objects, $obj_bytes B each (medians of $rounds)" OLD NEW
        row "bare paginated LIST + libjq on each, ms (median of 3)" "$bare_ms" "$bare_ms"
        row "  the same, Accept-Encoding: identity (no gzip), ms" "$bare_id_ms" "$bare_id_ms"
        row "first sync, exec -> Synchronization hook start, ms" "$o_ms" "$n_ms"
        row "  ratio operator / bare" "$(ratio "$o_ms" "$bare_ms")" "$(ratio "$n_ms" "$bare_ms")"
        row "  fastest of the $rounds runs, ms" "$o_min" "$n_min"
        row "  start-up with 0 objects (namespace 'nothing'), ms" "$o_ems" "$n_ems"
        row "  first sync minus that start-up, ms" "$(minus "$o_ms" "$o_ems")" "$(minus "$n_ms" "$n_ems")"
        row "  requests timed out in the $rounds runs (60 s each)" "$o_stalls" "$n_stalls"
        row "peak RSS during the first sync (VmHWM), MB" "$(mb "$o_peak")" "$(mb "$n_peak")"
        row "steady RSS after it, MB" "$(mb "$o_steady")" "$(mb "$n_steady")"
        row "  peak / steady" "$(ratio "$o_peak" "$o_steady")" "$(ratio "$n_peak" "$n_steady")"
        row "  steady RSS with 0 objects, MB" "$(mb "$o_esteady")" "$(mb "$n_esteady")"
        row "bytes per object ((steady - 0 objects) / N)" "$o_bpo" "$n_bpo"
        row "re-list peak RSS (VmHWM reset before), MB" "$(mb "$o_rlpeak")" "$(mb "$n_rlpeak")"
        row "re-list, restart's return -> relists_total + 1, ms" "$o_rl" "$n_rl"
        row "  HTTP 403 / requests timed out on the way" "$o_rl403 / $o_rlstalls" "$n_rl403 / $n_rlstalls"
        if [ "$fast" = 1 ]; then
                row "extra, KUBE_CLIENT_QPS=BURST=1000: first sync, ms (1 run)" "$o_fms" "$n_fms"
                row "extra, KUBE_CLIENT_QPS=BURST=1000: ratio / bare" "$(ratio "$o_fms" "$bare_ms")" "$(ratio "$n_fms" "$bare_ms")"
                row "extra, KUBE_CLIENT_QPS=BURST=1000: peak RSS, MB" "$(mb "$o_fpeak")" "$(mb "$n_fpeak")"
        fi
        row "bare client's own peak RSS (list-bare), MB" "$(mb "$bare_rss")" "$(mb "$bare_rss")"
        echo
        {
                echo "row: first Synchronization, $n objects, exec -> hook, NEW vs bare LIST+jq|$n_ms ms|$bare_ms ms (bare)|$(ratio "$n_ms" "$bare_ms")|report|-"
                echo "row: first Synchronization, $n objects, NEW vs OLD|$n_ms ms|$o_ms ms (OLD)|$(ratio "$n_ms" "$o_ms")|report|-"
                echo "row: peak RSS of the first Synchronization, $n objects, NEW vs OLD|$(mb "$n_peak") MB|$(mb "$o_peak") MB (OLD)|$(ratio "$n_peak" "$o_peak")|report|-"
                echo "row: peak / steady RSS, $n objects, NEW|$(mb "$n_peak") MB|$(mb "$n_steady") MB (steady)|$(ratio "$n_peak" "$n_steady")|report|-"
                echo "row: bytes per watched object (real API server), $n objects, NEW vs OLD|$n_bpo B|$o_bpo B (OLD)|$(ratio "$n_bpo" "$o_bpo")|report|-"
                echo "row: re-list after a 410, $n objects, NEW vs OLD|$n_rl ms, peak $(mb "$n_rlpeak") MB|$o_rl ms, peak $(mb "$o_rlpeak") MB (OLD)|$(ratio "$n_rl" "$o_rl")|report|-"
        } >>"$work/rows"
done
cat "$work/rows"
echo
echo "reproduce: $command_line"
echo "bench-first-sync: done in $((SECONDS - t_start)) s"

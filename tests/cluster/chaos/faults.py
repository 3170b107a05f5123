# SPDX-License-Identifier: Apache-2.0
"""Fault schedules: each injects one fault, makes changes while it lasts, and heals it.

A fault takes the run's context (cluster, workload, operator) and a seeded random generator, and
returns a line saying what it did. The cluster may take its time to settle afterwards: the checks
wait for that, the faults do not.
"""
import time


def changes_for(ctx, rng, seconds, api=None, pause=(0.05, 0.3)):
    """Random changes for about @seconds, through @api or whichever API server answers."""
    end = time.monotonic() + seconds
    made = 0
    while time.monotonic() < end:
        ctx.workload.change(api or ctx.cluster.any_api())
        made += 1
        time.sleep(rng.uniform(*pause))  # spacing between a user's changes, not a wait for a result
    return made


def bump_revision(ctx, n=2):
    """Writes that no informer of the operator sees, so a compaction removes the revision its watches
    would resume from (a watch from N starts at N+1)."""
    api = ctx.cluster.any_api()
    for i in range(n):
        api.call("POST", "/api/v1/namespaces/default/secrets",
                 {"metadata": {"name": f"bump-{time.monotonic_ns()}-{i}"}}, ok=(201,))


def apiserver_restart(ctx, rng):
    c = ctx.cluster
    c.sh("stop-apiserver")
    n = changes_for(ctx, rng, rng.uniform(1, 4), c.b)
    c.sh("start-apiserver")
    return f"API server restarted, {n} changes while it was down"


def outage_compaction(ctx, rng):
    """The operator's server is down while changes go through the second one and etcd is compacted:
    the restarted server's watch cache starts past what the operator saw, so its watches get 410."""
    c = ctx.cluster
    c.sh("stop-apiserver")
    n = changes_for(ctx, rng, rng.uniform(2, 5), c.b)
    bump_revision(ctx)
    rev = c.compact()
    c.sh("start-apiserver")
    return f"outage with {n} changes through the second API server, etcd compacted at {rev} " \
           f"(watch cache {'on' if c.watch_cache else 'off'})"


def compaction_watch_cache_off(ctx, rng):
    """Without the watch cache, watches read etcd: a compaction while the operator's streams are
    stalled, then cut, makes every resumed watch get 410 from etcd itself."""
    c = ctx.cluster
    c.set_watch_cache(False)
    c.proxy.set_mode("stall")
    n = changes_for(ctx, rng, rng.uniform(1, 3), c.a)
    bump_revision(ctx)
    rev = c.compact()
    c.cut_operator_connections()
    c.proxy.set_mode("pass")
    return f"watch cache off: {n} changes while stalled, compacted at {rev}, connections cut"


def continue_token_expired(ctx, rng):
    """A paginated re-list whose continue token is compacted away between two pages (410 on the
    list). The operator's bytes are slowed so the list of the bulk namespace takes seconds, while
    writes and compactions go on."""
    c = ctx.cluster
    c.set_watch_cache(False)
    before = ctx.operator.count(r"list expired \(410\)")
    bump_revision(ctx)
    c.compact()
    # Pages go uncompressed (the operator asks for no gzip): 500 bulk objects are about 250 KB, so
    # at these rates a page takes a few hundred milliseconds, and compactions land between pages.
    c.proxy.set_mode("slow", rate=rng.choice([600_000, 1_000_000]))
    c.cut_operator_connections()  # the resumed watches get 410 and list again, slowly
    n = 0
    end = time.monotonic() + 8
    while time.monotonic() < end:
        ctx.workload.change(c.a)
        bump_revision(ctx, 1)
        c.compact()
        n += 1
        time.sleep(0.2)  # a compaction every few hundred milliseconds, not a wait for a result
    c.proxy.set_mode("pass")
    # A page under way when the window closed may still meet its expired token: its log line can
    # come a moment after the window, so look for a little while (a poll with a deadline).
    deadline = time.monotonic() + 5
    while ctx.operator.count(r"list expired \(410\)") == before and time.monotonic() < deadline:
        time.sleep(0.1)
    expired = ctx.operator.count(r"list expired \(410\)") - before
    ctx.notes.append(("continue-410", expired))
    return f"slowed re-list with {n} changes and compactions: {expired} list(s) expired (410 on continue)"


def connections_cut(ctx, rng):
    c = ctx.cluster
    n = 0
    end = time.monotonic() + rng.uniform(2, 5)
    while time.monotonic() < end:
        ctx.workload.change(c.any_api())
        if rng.random() < 0.5:
            c.cut_operator_connections()
        n += 1
        time.sleep(rng.uniform(0.05, 0.4))
    return f"connections cut mid-stream (ss -K) among {n} changes"


def stalled_streams(ctx, rng):
    c = ctx.cluster
    c.proxy.set_mode("stall")
    n = changes_for(ctx, rng, rng.uniform(2, 6), c.a)
    c.proxy.set_mode("pass")
    return f"streams stalled without being closed for {n} changes"


def paused_apiserver(ctx, rng):
    """The operator's API server freezes (SIGSTOP): open streams go silent, nothing is closed."""
    c = ctx.cluster
    c.sh("pause-apiserver")
    try:
        n = changes_for(ctx, rng, rng.uniform(1, 4), c.b)
    finally:
        c.sh("resume-apiserver")
    return f"API server paused for {n} changes through the second one"


def etcd_restart(ctx, rng):
    c = ctx.cluster
    n = changes_for(ctx, rng, rng.uniform(0.5, 2))
    c.sh("restart-etcd")
    n += changes_for(ctx, rng, rng.uniform(0.5, 2))
    return f"etcd restarted among {n} changes"


def rbac_forbidden(ctx, rng):
    """The operator's rights are withdrawn for a while: its watches, restarted, get 403."""
    c = ctx.cluster
    c.revoke_rbac()
    c.cut_operator_connections()
    n = changes_for(ctx, rng, rng.uniform(2, 4))
    c.grant_rbac()
    return f"RBAC answered 403 during {n} changes"


def watch_cache_toggle(ctx, rng):
    c = ctx.cluster
    c.set_watch_cache(not c.watch_cache)
    n = changes_for(ctx, rng, rng.uniform(0.5, 2))
    return f"watch cache turned {'on' if c.watch_cache else 'off'} (a restart), {n} changes"


# name → (function, weight in the randomized mode)
FAULTS = {
    "apiserver-restart": (apiserver_restart, 3),
    "outage-compaction": (outage_compaction, 3),
    "compaction-watch-cache-off": (compaction_watch_cache_off, 3),
    "continue-token-expired": (continue_token_expired, 1),
    "connections-cut": (connections_cut, 3),
    "stalled-streams": (stalled_streams, 2),
    "paused-apiserver": (paused_apiserver, 2),
    "etcd-restart": (etcd_restart, 2),
    "rbac-forbidden": (rbac_forbidden, 2),
    "watch-cache-toggle": (watch_cache_toggle, 1),
}


def pick(rng):
    names = sorted(FAULTS)
    return rng.choices(names, weights=[FAULTS[n][1] for n in names])[0]

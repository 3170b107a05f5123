/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Messages between the operator and its spawner process, over a
 * SOCK_SEQPACKET socket pair (one message per datagram, fds as SCM_RIGHTS).
 * Both ends are built from the same source, so the layout is plain structs.
 *
 *   operator -> spawner   PROFILE  the sandbox profile of this spawner (BPF follows the header);
 *                                  sent once, first, or never for an unsandboxed spawner
 *   operator -> spawner   SPAWN    start a child; strings follow; fds: stdout, stderr
 *   spawner  -> operator  REPLY    pid + launch failure (no fd: the operator, the child's parent,
 *                                  reaps by pid, which stays the child's until it is reaped)
 *
 * One spawner serves one profile. It drops to the profile's uid/gid, sets
 * no_new_privs and installs the profile's seccomp filter on itself, once,
 * and sends the filter's listener (tagged SPAWNER_LISTENER_TAG | serial) to
 * the operator; every child inherits filter and listener, so a launch pays
 * no per-child BPF load. Only the rlimits are applied per child (RLIMIT_CPU
 * on the long-lived spawner would be spent by it).
 *
 * The spawner inherits fd 3 (this socket), fd 4 (the socket listeners are
 * sent to) and fd 5, a memfd of SPAWNER_STATUS_SLOTS launch failures that
 * it maps shared with the operator, and has /dev/null for the children's
 * stdin.
 *
 * A request names one of those slots (status_slot, cleared by the operator):
 * the spawner then replies as soon as the child is cloned, without waiting
 * for its exec, and a child whose launch fails writes why into the slot
 * before it exits; the operator reads it once it has reaped the child. With
 * no slot (-1), or while all of the spawner's own child slots are busy, it
 * waits for the exec and the reply carries the failure itself.
 */

#include <fcntl.h>
#include <stdint.h>

#include "ao/launch.h"

#define SPAWNER_CONTROL_FD  3
#define SPAWNER_LISTENER_FD 4
#define SPAWNER_STATUS_FD   5

/* Launch failures the status memfd holds (struct ao_launch_failure each): runs starting at once, at most. */
#define SPAWNER_STATUS_SLOTS 4096
/* The memfd's seals: it keeps its size; the spawner maps its fd 5 only when it carries exactly these. */
#define SPAWNER_STATUS_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

#define SPAWNER_LIMITS_MAX 16
/* Listener tags with this bit come from a spawner (the rest is its serial), without it from one run. */
#define SPAWNER_LISTENER_TAG (UINT64_C(1) << 63)
/* A request larger than this (argv + environment) is refused before it is sent. */
#define SPAWNER_MESSAGE_MAX (256 * 1024)

enum spawner_message_type {
        SPAWNER_MSG_PROFILE = 1,
        SPAWNER_MSG_SPAWN = 2,
        SPAWNER_MSG_REPLY = 3,
};

struct spawner_profile_msg {
        uint32_t type;    /* SPAWNER_MSG_PROFILE */
        uint32_t index;   /* the spawner's serial number, sent back as the listener's tag */
        uint32_t bpf_len; /* instructions following this header */
        uint32_t n_limits;
        uint8_t set_uid, set_gid, notifies, _pad;
        uint32_t uid, gid;
        struct ao_launch_limit limits[SPAWNER_LIMITS_MAX];
};

struct spawner_spawn_msg {
        uint32_t type;       /* SPAWNER_MSG_SPAWN */
        int32_t status_slot; /* where a failed launch is reported (reply at once); -1: in the reply */
        uint64_t id;         /* chosen by the operator; echoed in the reply and sent with the listener */
        uint32_t argc, envc;
        uint32_t strings_len; /* path\0 cwd\0 argv[0..argc)\0 envp[0..envc)\0 follow; cwd "" = inherit */
};

struct spawner_reply_msg {
        uint32_t type; /* SPAWNER_MSG_REPLY */
        int32_t pid;   /* > 0: a child exists (even if its exec failed); < 0: -errno, nothing started */
        uint64_t id;
        struct ao_launch_failure failure;
};

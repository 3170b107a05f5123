/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Messages between the operator and its spawner process, over a
 * SOCK_SEQPACKET socket pair (one message per datagram, fds as SCM_RIGHTS).
 * Both ends are built from the same source, so the layout is plain structs.
 *
 *   operator -> spawner   PROFILE  register sandbox profile #index (BPF follows the header)
 *   operator -> spawner   SPAWN    start a child; strings follow; fds: stdout, stderr
 *   spawner  -> operator  REPLY    pid + launch failure; fd: the child's pidfd
 *
 * The spawner inherits fd 3 (this socket) and fd 4 (the socket the child
 * sends its seccomp listener to) and has /dev/null for the children's stdin.
 */

#include <stdint.h>

#include "ao/launch.h"

#define SPAWNER_CONTROL_FD  3
#define SPAWNER_LISTENER_FD 4

#define SPAWNER_PROFILES_MAX 64
#define SPAWNER_LIMITS_MAX   16
/* A request larger than this (argv + environment) is refused before it is sent. */
#define SPAWNER_MESSAGE_MAX (256 * 1024)

enum spawner_message_type {
        SPAWNER_MSG_PROFILE = 1,
        SPAWNER_MSG_SPAWN = 2,
        SPAWNER_MSG_REPLY = 3,
};

struct spawner_profile_msg {
        uint32_t type; /* SPAWNER_MSG_PROFILE */
        uint32_t index;
        uint32_t bpf_len; /* instructions following this header */
        uint32_t n_limits;
        uint8_t set_uid, set_gid, notifies, _pad;
        uint32_t uid, gid;
        struct ao_launch_limit limits[SPAWNER_LIMITS_MAX];
};

struct spawner_spawn_msg {
        uint32_t type;   /* SPAWNER_MSG_SPAWN */
        int32_t profile; /* index, -1 for none */
        uint64_t id;     /* chosen by the operator; echoed in the reply and sent with the listener */
        uint32_t argc, envc;
        uint32_t strings_len; /* path\0 cwd\0 argv[0..argc)\0 envp[0..envc)\0 follow; cwd "" = inherit */
};

struct spawner_reply_msg {
        uint32_t type; /* SPAWNER_MSG_REPLY */
        int32_t pid;   /* > 0: a child exists (even if its exec failed); < 0: -errno, nothing started */
        uint64_t id;
        struct ao_launch_failure failure;
};

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The `start` command: configure logging, build the reactor, wire signals
 * and graceful shutdown, and run until told to stop. Later subsystems
 * (hooks, queues, kube, http) attach here.
 */

#include "ao/settings.h"

/**
 * Run the operator with @cli's settings until a shutdown completes. Returns
 * the process exit code: 0 after a graceful shutdown, 128 + signal after a
 * second signal, 1 when start-up failed (the reason is logged).
 */
int ao_operator_run(const struct ao_cli *cli);

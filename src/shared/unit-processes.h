/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <systemd/sd-bus.h>

#include "usage-read.h"

/* Reads the systemd manager's answer to GetUnitProcesses, a(sus): per process its cgroup path,
 * PID and command line. reply is a method return (the caller tells an error apart, with its own
 * words for it). ret: UnitProcess, in the manager's order, their strings freed with the array.
 * An answer of another shape, or a PID no process can have, is -EBADMSG or sd-bus' error. */
int unit_processes_read(sd_bus_message *reply, GArray **ret);

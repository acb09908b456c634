/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* The service status for systemd: STATUS= when it changes, READY=1 after the first apply that
 * knows the units. */
extern const ManagerListener manager_status_listener;

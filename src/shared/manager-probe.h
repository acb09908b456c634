/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* What the generator asks of the platform before it picks how to isolate a service. */

/* Whether the service manager knows MemoryTHP= (systemd 260 and later): 1 or 0, negative errno
 * when it cannot tell. Asked of the manager's own list of unit settings, not of its version. */
int manager_has_memory_thp(void);

/* Whether the kernel accepts PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18). */
bool kernel_has_thp_except_advised(void);

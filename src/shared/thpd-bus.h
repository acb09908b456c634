/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The names of thpd's D-Bus API (data/org.thpd1.Manager.xml), for the daemon, thpd-ctl and the
 * tests alike. */

#define THPD_BUS_NAME "org.thpd1"
#define THPD_BUS_PATH "/org/thpd1"
#define THPD_BUS_INTERFACE "org.thpd1.Manager"

/* Errors of org.thpd1.Manager, as data/org.thpd1.Manager.xml describes them. */
#define THPD_ERROR_UNKNOWN_KNOB "org.thpd1.Error.UnknownKnob"
#define THPD_ERROR_NOT_SUPPORTED "org.thpd1.Error.NotSupported"
#define THPD_ERROR_INVALID_VALUE "org.thpd1.Error.InvalidValue"
#define THPD_ERROR_INVALID_DURATION "org.thpd1.Error.InvalidDuration"
#define THPD_ERROR_FAILED "org.thpd1.Error.Failed"
#define THPD_ERROR_TIMEOUT "org.thpd1.Error.Timeout"

/* The polkit action of Reload, SetOverride and ClearOverride (data/org.thpd1.policy). */
#define THPD_POLKIT_ACTION "org.thpd1.manage"

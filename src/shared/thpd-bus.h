/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The names of thpd's D-Bus API (data/org.thpd1.Manager.xml), for the daemon, thpd-ctl and the
 * tests alike, and those of the systemd manager's that they call. */

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

/* The systemd manager (org.freedesktop.systemd1(5)). */
#define SYSTEMD_SERVICE "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_UNIT_PATH_PREFIX "/org/freedesktop/systemd1/unit"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"
#define SYSTEMD_UNIT "org.freedesktop.systemd1.Unit"
#define SYSTEMD_JOB "org.freedesktop.systemd1.Job"
#define SYSTEMD_ERROR_ALREADY_SUBSCRIBED "org.freedesktop.systemd1.AlreadySubscribed"
#define SYSTEMD_ERROR_NO_SUCH_UNIT "org.freedesktop.systemd1.NoSuchUnit"
#define SYSTEMD_ERROR_UNIT_MASKED "org.freedesktop.systemd1.UnitMasked"

/* The polkit action of Reload, SetOverride and ClearOverride (data/org.thpd1.policy). */
#define THPD_POLKIT_ACTION "org.thpd1.manage"

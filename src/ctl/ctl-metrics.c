/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "ctl-bus.h"
#include "log.h"
#include "util.h"

/* thpd formats the text itself (GetMetrics), so that this prints exactly what it writes to the
 * metrics file node_exporter reads ([Metrics] TextfilePath=). */
int verb_metrics(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *text;
        int r;

        r = ctl_bus_open(o, &bus);
        if (r != CTL_EXIT_OK)
                return r;
        r = ctl_call(o, bus, "GetMetrics", 0, "read thpd's metrics", &reply, NULL);
        if (r != CTL_EXIT_OK)
                return r;
        r = sd_bus_message_read(reply, "s", &text);
        if (r < 0) {
                log_error_errno(r, "Cannot read thpd's metrics from its reply: %m");
                return CTL_EXIT_FAILURE;
        }
        ctl_puts(out, text);
        if (ctl_output_flush(out) < 0) {
                log_error("Cannot write the metrics.");
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}

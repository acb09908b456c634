/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <inttypes.h>

#include "log.h"
#include "polkit.h"
#include "util.h"

#define POLKIT_SERVICE "org.freedesktop.PolicyKit1"
#define POLKIT_PATH "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_INTERFACE "org.freedesktop.PolicyKit1.Authority"
#define POLKIT_CHECK_ALLOW_USER_INTERACTION UINT32_C(1)

/* An agent may keep the administrator typing a password for a while. */
#define POLKIT_INTERACTIVE_TIMEOUT_USEC (300 * UINT64_C(1000000))

typedef enum Verdict {
        VERDICT_PENDING,
        VERDICT_ALLOWED,
        VERDICT_DENIED,
} Verdict;

typedef struct Query {
        PolkitRegistry *reg;
        sd_bus_message *call;
        sd_bus_slot *slot;        /* the call in flight */
        sd_bus *polkit_bus;
        char *action;
        uid_t trusted_uid;
        uid_t uid;
        Verdict verdict;
        sd_bus_error denial;
} Query;

struct PolkitRegistry {
        GHashTable *queries; /* sd_bus_message* -> Query* */
};

static void query_free(gpointer p) {
        Query *q = p;

        if (!q)
                return;
        sd_bus_slot_unref(q->slot);
        sd_bus_message_unref(q->call);
        sd_bus_unref(q->polkit_bus);
        sd_bus_error_free(&q->denial);
        g_free(q->action);
        g_free(q);
}

PolkitRegistry *polkit_registry_new(void) {
        PolkitRegistry *reg = g_new0(PolkitRegistry, 1);

        reg->queries = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, query_free);
        return reg;
}

PolkitRegistry *polkit_registry_free(PolkitRegistry *reg) {
        if (!reg)
                return NULL;
        g_hash_table_destroy(reg->queries);
        g_free(reg);
        return NULL;
}

/* Hands the call back to its handler, which now finds the verdict. */
static void finish(Query *q, Verdict verdict) {
        int r;

        q->verdict = verdict;
        q->slot = sd_bus_slot_unref(q->slot);
        /* The handler read the arguments the first time round. */
        r = sd_bus_message_rewind(q->call, true);
        if (r >= 0)
                r = sd_bus_enqueue_for_read(sd_bus_message_get_bus(q->call), q->call);
        if (r >= 0)
                return;

        log_error_errno(r, "Cannot resume %s after the authorization check: %m", sd_bus_message_get_member(q->call));
        (void) sd_bus_reply_method_errorf(q->call, SD_BUS_ERROR_FAILED, "Cannot resume the call after the authorization check: %s",
                                          strerror(-r));
        g_hash_table_remove(q->reg->queries, q->call);
}

_printf_(3, 4)
static void deny(Query *q, const char *name, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        (void) sd_bus_error_setfv(&q->denial, name, format, ap);
        va_end(ap);
        finish(q, VERDICT_DENIED);
}

static int on_polkit_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Query *q = userdata;
        const char *method = sd_bus_message_get_member(q->call);
        const sd_bus_error *e;
        int authorized, challenge, r;

        if (sd_bus_message_is_method_error(reply, NULL)) {
                e = sd_bus_message_get_error(reply);
                if (sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                        deny(q, SD_BUS_ERROR_ACCESS_DENIED,
                             "%s needs root: polkit is not running, so uid %" PRIu32 " cannot be authorized for %s.",
                             method, (uint32_t) q->uid, q->action);
                else
                        deny(q, SD_BUS_ERROR_ACCESS_DENIED, "%s needs root or the polkit action %s, and polkit failed: %s",
                             method, q->action, e->message);
                return 0;
        }

        r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
        if (r >= 0)
                r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
        if (r < 0) {
                deny(q, SD_BUS_ERROR_ACCESS_DENIED, "%s needs root or the polkit action %s, and polkit's answer cannot be read: %s",
                     method, q->action, strerror(-r));
                return 0;
        }

        if (authorized)
                finish(q, VERDICT_ALLOWED);
        else if (challenge)
                deny(q, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
                     "%s needs authentication for the polkit action %s; run it from a session with a polkit agent, or as root.",
                     method, q->action);
        else
                deny(q, SD_BUS_ERROR_ACCESS_DENIED, "%s needs root or the polkit action %s, which uid %" PRIu32 " does not have.",
                     method, q->action, (uint32_t) q->uid);
        return 0;
}

static int ask_polkit(Query *q) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *req = NULL;
        bool interactive = sd_bus_message_get_allow_interactive_authorization(q->call) > 0;
        int r;

        r = sd_bus_message_new_method_call(q->polkit_bus, &req, POLKIT_SERVICE, POLKIT_PATH, POLKIT_INTERFACE,
                                           "CheckAuthorization");
        if (r >= 0)
                r = sd_bus_message_append(req, "(sa{sv})sa{ss}us", "system-bus-name", 1, "name", "s",
                                          sd_bus_message_get_sender(q->call), q->action, 0,
                                          interactive ? POLKIT_CHECK_ALLOW_USER_INTERACTION : 0, "");
        if (r >= 0)
                r = sd_bus_call_async(q->polkit_bus, &q->slot, req, on_polkit_reply, q,
                                      interactive ? POLKIT_INTERACTIVE_TIMEOUT_USEC : 0);
        return r;
}

static int on_uid_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Query *q = userdata;
        const char *method = sd_bus_message_get_member(q->call);
        uint32_t uid;
        int r;

        if (sd_bus_message_is_method_error(reply, NULL)) {
                deny(q, SD_BUS_ERROR_ACCESS_DENIED, "%s: cannot identify the caller: %s", method,
                     sd_bus_message_get_error(reply)->message);
                return 0;
        }
        r = sd_bus_message_read(reply, "u", &uid);
        if (r < 0) {
                deny(q, SD_BUS_ERROR_ACCESS_DENIED, "%s: cannot identify the caller: %s", method, strerror(-r));
                return 0;
        }

        q->uid = (uid_t) uid;
        if (q->uid == 0 || q->uid == q->trusted_uid) {
                finish(q, VERDICT_ALLOWED);
                return 0;
        }
        if (!q->polkit_bus) {
                deny(q, SD_BUS_ERROR_ACCESS_DENIED, "%s needs root or uid %" PRIu32 ", the user thpd runs as; uid %" PRIu32 " may only read.",
                     method, (uint32_t) q->trusted_uid, uid);
                return 0;
        }

        q->slot = sd_bus_slot_unref(q->slot);
        r = ask_polkit(q);
        if (r < 0)
                deny(q, SD_BUS_ERROR_ACCESS_DENIED, "%s needs root or the polkit action %s, and polkit cannot be asked: %s",
                     method, q->action, strerror(-r));
        return 0;
}

int polkit_verify_async(PolkitRegistry *reg, const PolkitPolicy *policy, sd_bus_message *call, uid_t *ret_uid,
                        sd_bus_error *error) {
        Query *q = g_hash_table_lookup(reg->queries, call);
        int r;

        if (q) {
                if (q->verdict == VERDICT_PENDING)
                        return 0;
                if (q->verdict == VERDICT_ALLOWED) {
                        if (ret_uid)
                                *ret_uid = q->uid;
                        r = 1;
                } else
                        r = sd_bus_error_set(error, q->denial.name, q->denial.message);
                g_hash_table_remove(reg->queries, call);
                return r;
        }

        if (!sd_bus_message_get_sender(call))
                return sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED, "The caller has no bus name to check.");
        if (g_hash_table_size(reg->queries) >= POLKIT_MAX_PENDING)
                return sd_bus_error_set(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                        "Too many authorization checks are pending; try again later.");

        q = g_new0(Query, 1);
        *q = (Query) {
                .reg = reg,
                .call = sd_bus_message_ref(call),
                .polkit_bus = policy->polkit_bus ? sd_bus_ref(policy->polkit_bus) : NULL,
                .action = g_strdup(policy->action),
                .trusted_uid = policy->trusted_uid,
                .uid = (uid_t) -1,
                .denial = SD_BUS_ERROR_NULL,
        };

        /* Asking the bus daemon rather than sd_bus_query_sender_creds(): that one waits for the
         * answer, and the loop must not. */
        r = sd_bus_call_method_async(sd_bus_message_get_bus(call), &q->slot, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                     "org.freedesktop.DBus", "GetConnectionUnixUser", on_uid_reply, q, "s",
                                     sd_bus_message_get_sender(call));
        if (r < 0) {
                query_free(q);
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "Cannot identify the caller: %s", strerror(-r));
        }
        g_hash_table_insert(reg->queries, call, q);
        return 0;
}

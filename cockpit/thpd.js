/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * thpd's Cockpit page. Everything comes from org.thpd1 on the system bus through cockpit.dbus
 * (data/org.thpd1.Manager.xml is the contract): the properties through a proxy that follows
 * PropertiesChanged, the Applied, StormDetected, StormCleared and Drift signals as they come, and the
 * reads that are methods (ListPolicies, Explain) or not announced (Storms) again when a change
 * event says they are stale. Nothing polls.
 *
 * Changes (SetOverride, ClearOverride, Reload) go through the same methods as thpd-ctl. The
 * client asks for superuser "try": with Cockpit's administrative access the bridge calls as
 * root, otherwise as the logged-in user, whom thpd authorizes with polkit (org.thpd1.manage)
 * and refuses with org.freedesktop.DBus.Error.AccessDenied, or InteractiveAuthorizationRequired
 * when polkit would let the user authenticate (the page has no polkit agent to do that). With
 * limited access the change controls are disabled with a hint; a refusal is shown as one.
 */
(function () {
    "use strict";

    const BUS_NAME = "org.thpd1";
    const PATH = "/org/thpd1";
    const IFACE = "org.thpd1.Manager";
    const MAX_EVENTS = 30;

    /* The accepted values of the knobs that take words, strictest first (design.md). Numeric
       knobs (khugepaged/max_ptes_*, pages_to_scan, *_sleep_millisecs) take a number. */
    const WORDS = {
        "enabled": ["never", "madvise", "always"],
        "defrag": ["never", "defer", "madvise", "defer+madvise", "always"],
        "shmem_enabled": ["deny", "never", "advise", "within_size", "always", "force"],
        "khugepaged/defrag": ["0", "1"],
        "shrink_underused": ["1", "0"],
        "use_zero_page": ["1", "0"],
    };
    const PER_SIZE_WORDS = ["never", "madvise", "inherit", "always"];
    const PER_SIZE_SHMEM_WORDS = ["never", "advise", "within_size", "inherit", "always"];

    function knobWords(knob) {
        if (WORDS[knob])
            return WORDS[knob];
        if (/^hugepages-\d+kB\/enabled$/.test(knob))
            return PER_SIZE_WORDS;
        if (/^hugepages-\d+kB\/shmem_enabled$/.test(knob))
            return PER_SIZE_SHMEM_WORDS;
        return null;
    }

    const $ = id => document.getElementById(id);

    function el(tag, attrs, ...children) {
        const node = document.createElement(tag);
        for (const [key, value] of Object.entries(attrs || {})) {
            if (value === null || value === undefined || value === false)
                continue;
            if (key === "class")
                node.className = value;
            else if (key === "text")
                node.textContent = value;
            else if (key.startsWith("on"))
                node.addEventListener(key.slice(2), value);
            else
                node.setAttribute(key, value === true ? "" : value);
        }
        for (const child of children.flat()) {
            if (child !== null && child !== undefined && child !== false)
                node.append(child instanceof Node ? child : document.createTextNode(String(child)));
        }
        return node;
    }

    /* A table cell (PatternFly 6 puts a class on every row and cell); its content is one
       element, so that the narrow layout (a grid of label and content) keeps it together. */
    function cell(label, ...children) {
        return el("td", { class: "pf-v6-c-table__td", "data-label": label || null }, el("span", {}, ...children));
    }

    function row(attrs, ...cells) {
        return el("tr", Object.assign({}, attrs, { class: ["pf-v6-c-table__tr", attrs.class].filter(Boolean).join(" ") }), ...cells);
    }

    /* The row's header cell. */
    function rowHeader(attrs, ...children) {
        return el("th", Object.assign({ scope: "row" }, attrs, {
            class: ["pf-v6-c-table__th", attrs.class].filter(Boolean).join(" "),
        }), ...children);
    }

    /* PatternFly 6's form control: the wrapper span draws the border, the focus line and the
       disabled look; a select also gets the toggle icon, as index.html has it. */
    function formControl(control) {
        const wrapper = el("span", { class: "pf-v6-c-form-control" }, control);
        if (control.tagName === "SELECT") {
            const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
            for (const [key, value] of Object.entries({ class: "pf-v6-svg", viewBox: "0 0 10 6", fill: "currentColor", "aria-hidden": "true", width: "1em", height: "1em" }))
                svg.setAttribute(key, value);
            const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
            path.setAttribute("d", "M0 0h10L5 6z");
            svg.append(path);
            wrapper.append(el("span", { class: "pf-v6-c-form-control__utilities" },
                              el("span", { class: "pf-v6-c-form-control__toggle-icon" }, svg)));
        }
        return wrapper;
    }

    function button(attrs, text) {
        return el("button", attrs, el("span", { class: "pf-v6-c-button__text", text }));
    }

    /* --- the theme: Cockpit's convention (pkg/lib/cockpit-dark-theme, which every Cockpit page
       includes; the same from 287 to 370): the shell's choice in localStorage "shell:style"
       ("auto", "light", "dark"), sent again as a "cockpit-style" event when the user changes
       it; "auto" follows the browser's prefers-color-scheme. The shell sets no class in a
       page's frame: the page sets the dark class of the PatternFly it ships, pf-v6-theme-dark
       on <html>, whatever PatternFly the shell itself has. */

    const darkQuery = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

    function applyTheme(style) {
        if (!style) {
            try {
                style = window.localStorage.getItem("shell:style");
            } catch (e) {
                style = null;
            }
        }
        style = style || "auto";
        const dark = style === "dark" || (style === "auto" && darkQuery !== null && darkQuery.matches);
        document.documentElement.classList.toggle("pf-v6-theme-dark", dark);
    }

    applyTheme();
    window.addEventListener("storage", event => {
        if (event.key === "shell:style")
            applyTheme();
    });
    window.addEventListener("cockpit-style", event => applyTheme(event.detail && event.detail.style));
    if (darkQuery && darkQuery.addEventListener)
        darkQuery.addEventListener("change", () => applyTheme());

    /* --- formatting */

    function formatTime(usec) {
        return new Date(usec / 1000).toLocaleString();
    }

    function formatDuration(usec) {
        let s = Math.round(usec / 1e6);
        if (s < 60)
            return s + " s";
        const parts = [];
        for (const [unit, size] of [["d", 86400], ["h", 3600], ["min", 60]]) {
            if (s >= size) {
                parts.push(Math.floor(s / size) + " " + unit);
                s %= size;
            }
        }
        if (s)
            parts.push(s + " s");
        return parts.join(" ");
    }

    /* systemd-like durations: "30s", "10min", "1h30min", "2d"; a bare number is seconds; "0"
       means until cleared. Returns microseconds, or null when the text is not a duration. */
    function parseDuration(text) {
        let rest = text.replace(/\s+/g, "");
        if (rest === "")
            return null;
        const units = { us: 1, ms: 1e3, s: 1e6, sec: 1e6, m: 60e6, min: 60e6, h: 3600e6, hr: 3600e6, d: 86400e6 };
        const re = /^(\d+(?:\.\d+)?)(us|ms|sec|s|min|m|hr|h|d)?/;
        let total = 0;
        while (rest) {
            const m = re.exec(rest);
            if (!m)
                return null;
            total += parseFloat(m[1]) * units[m[2] || "s"];
            rest = rest.slice(m[0].length);
        }
        return Math.round(total);
    }

    function sourceText(source, policy, unit) {
        if (source === "policy" || (policy && source !== "override"))
            return unit ? `${policy} for ${unit}` : policy;
        if (source === "override")
            return "set by an administrator";
        if (source === "mitigation")
            return "storm mitigation";
        return "the machine's own value";
    }

    function sourceBadge(source) {
        return el("span", { class: "thpd-source thpd-source-" + source, text: source });
    }

    /* --- the bus */

    const client = cockpit.dbus(BUS_NAME, { bus: "system", superuser: "try" });
    const manager = client.proxy(IFACE, PATH);
    const permission = cockpit.permission({ admin: true });

    let policies = [];          /* ListPolicies, refreshed when ActivePolicies or the diagnostics change */
    let storms = [];            /* Storms: not announced, read again on storm signals */
    const explained = new Map(); /* knob -> votes, for the rows whose explanation is open */
    let busy = false;

    function getProperty(name) {
        return client.call(PATH, "org.freedesktop.DBus.Properties", "Get", [IFACE, name])
                .then(reply => reply[0].v);
    }

    /* --- rendering */

    function renderHeader() {
        $("version").textContent = manager.Version ? "thpd " + manager.Version : "";
        $("status").textContent = manager.Status || "";
    }

    function renderKnobs() {
        const body = $("knobs-body");
        const rows = [];
        for (const [name, applied, target, baseline, source, policy, unit] of manager.Knobs || []) {
            const open = explained.has(name);
            const moved = applied !== baseline;
            const appliedCell = cell("Applied", el("span", { class: "thpd-value" + (moved ? " thpd-moved" : ""), text: applied }),
                                     applied !== target ? el("span", { class: "thpd-pending", text: ` (target ${target} not applied)` }) : null);
            rows.push(row({ "data-knob": name },
                          rowHeader({ "data-label": "Knob", class: "thpd-mono", text: name }),
                         appliedCell,
                         cell("Target", el("span", { class: "thpd-value", text: target })),
                         cell("Baseline", el("span", { class: "thpd-value", text: baseline })),
                         cell("Source", sourceBadge(source), sourceText(source, policy, unit)),
                          el("td", { class: "pf-v6-c-table__td" },
                             button({
                                 type: "button",
                                 class: "pf-v6-c-button pf-m-link pf-m-inline",
                                 "aria-expanded": open ? "true" : "false",
                                 "aria-label": `Explain ${name}`,
                                 onclick: () => toggleExplain(name),
                             }, open ? "Hide votes" : "Explain"))));
            if (open) {
                const votes = explained.get(name) || [];
                rows.push(row({ class: "thpd-explain-row" },
                              el("td", { class: "pf-v6-c-table__td", colspan: "6" },
                                el("ul", { class: "thpd-votes", "aria-label": `Votes on ${name}` },
                                   votes.map(([, value, vsource, vpolicy, vunit, wins]) =>
                                       el("li", { class: wins ? "thpd-wins" : "" },
                                          wins ? "→ " : "", el("span", { class: "thpd-value", text: value }), "  ",
                                          sourceBadge(vsource), sourceText(vsource, vpolicy, vunit),
                                          wins ? " (decides)" : ""))))));
            }
        }
        body.replaceChildren(...rows);
        renderOverrideKnobs();
    }

    function toggleExplain(knob) {
        if (explained.has(knob)) {
            explained.delete(knob);
            renderKnobs();
            return;
        }
        explained.set(knob, null);
        refreshExplained([knob]);
    }

    function refreshExplained(knobs) {
        for (const knob of knobs || explained.keys()) {
            client.call(PATH, IFACE, "Explain", [knob])
                    .then(reply => {
                        if (explained.has(knob)) {
                            explained.set(knob, reply[0]);
                            renderKnobs();
                        }
                    }, error => showError(`Could not explain ${knob}`, error));
        }
        renderKnobs();
    }

    function renderOverride() {
        const values = manager.Override || {};
        const names = Object.keys(values).sort();
        const now = $("override-now");
        if (names.length === 0) {
            now.textContent = "No override: policies, storm mitigation and the baseline decide.";
        } else {
            const expires = manager.OverrideExpiresAt || 0;
            now.replaceChildren("In force: ",
                                el("span", { class: "thpd-value", text: names.map(k => `${k}=${values[k]}`).join(" ") }),
                                expires ? ` until ${formatTime(expires)}` : " until cleared");
        }
        $("override-clear").dataset.empty = names.length === 0 ? "1" : "";
        updateControls();
    }

    function renderOverrideKnobs() {
        const select = $("override-knob");
        const wanted = select.value;
        const names = (manager.Knobs || []).map(row => row[0]);
        if (select.options.length !== names.length || names.some((n, i) => select.options[i].value !== n)) {
            select.replaceChildren(...names.map(n => el("option", { value: n, text: n })));
            if (names.includes(wanted))
                select.value = wanted;
            renderOverrideValues();
        }
    }

    /* The value control: a list of the knob's words, or a number field for numeric knobs. */
    function renderOverrideValues() {
        const knob = $("override-knob").value;
        const words = knobWords(knob);
        const old = $("override-value").closest(".pf-v6-c-form-control");
        let control;
        if (words) {
            control = el("select", { id: "override-value" }, words.map(w => el("option", { value: w, text: w })));
        } else {
            control = el("input", { id: "override-value", type: "number", min: "0", step: "1" });
            const row = (manager.Knobs || []).find(r => r[0] === knob);
            if (row)
                control.value = row[1];
        }
        old.replaceWith(formControl(control));
        updateControls();
    }

    function renderPolicies() {
        const active = new Map((manager.ActivePolicies || []).map(([name, units]) => [name, units]));
        const broken = new Set((manager.PolicyDiagnostics || [])
                .filter(d => d[3] === "error" && d[0]).map(d => d[0]));
        const rows = [];
        const seen = new Set();
        for (const [name, path, maskedBy, description, , patterns] of policies) {
            seen.add(name);
            let state = "inactive";
            if (active.has(name))
                state = "active";
            else if (maskedBy)
                state = "masked";
            else if (broken.has(name))
                state = "not loaded";
            const units = active.has(name)
                ? el("span", { class: "thpd-mono", text: active.get(name).join(" ") })
                : el("span", { class: "thpd-muted thpd-mono", text: (patterns || []).join(" ") });
            rows.push(row({ "data-policy": name, "data-state": state },
                          rowHeader({ "data-label": "Policy", title: description || null, text: name }),
                          cell("State", state === "active" ? el("strong", { text: state }) : state),
                          cell("Units", units),
                          cell("File", el("span", { class: "thpd-mono", text: maskedBy ? `masked by ${maskedBy}` : path }))));
        }
        /* ListPolicies may lag behind a change event; the property is the truth for what is active. */
        for (const [name, units] of active) {
            if (!seen.has(name)) {
                rows.push(row({ "data-policy": name, "data-state": "active" },
                              rowHeader({ "data-label": "Policy", text: name }),
                              cell("State", el("strong", { text: "active" })),
                              cell("Units", el("span", { class: "thpd-mono", text: units.join(" ") })),
                              cell("File", "")));
            }
        }
        if (rows.length === 0)
            rows.push(row({}, el("td", { colspan: "4", class: "pf-v6-c-table__td thpd-muted", text: "No policy files found." })));
        $("policies-body").replaceChildren(...rows);
    }

    function renderPools() {
        const pools = manager.HugeTLBPools || [];
        $("pools-none").hidden = pools.length > 0;
        $("pools-table").hidden = pools.length === 0;
        $("pools-body").replaceChildren(...pools.map(([kb, node, target, allocated, free, shortfall]) =>
            row({},
                rowHeader({ "data-label": "Page size", text: kb >= 1048576 ? `${kb / 1048576} GiB` : `${kb / 1024} MiB` }),
                cell("Node", node < 0 ? "all" : String(node)),
                cell("Requested", String(target)),
                cell("Allocated", el("span", { class: allocated < target ? "thpd-pending" : "", text: String(allocated) })),
                cell("Free", String(free)),
                cell("Shortfall", shortfall ? el("span", { class: "thpd-pending", text: shortfall }) : "none"))));
    }

    function renderStorms() {
        const state = manager.StormState || "unknown";
        const action = manager.StormAction || "unknown";
        const explainAction = action === "mitigate"
            ? "thpd votes for softer settings while a storm lasts"
            : "thpd reports storms and changes nothing";
        $("storm-state").replaceChildren(el("strong", { id: "storm-phase", "data-state": state, text: state }),
                                         ` (action: ${action}: ${explainAction})`);
        $("storms-table").hidden = storms.length === 0;
        $("storms-body").replaceChildren(...storms.map(([kind, phase, figures]) =>
            row({ "data-kind": kind },
                rowHeader({ "data-label": "Kind", text: kind }),
                cell("Phase", phase),
                cell("Figures", el("span", {
                    class: "thpd-mono",
                    text: Object.entries(figures || {}).map(([k, v]) => `${k}=${Math.round(v * 100) / 100}`).join(" ") || "—",
                })))));
    }

    function refreshStorms() {
        getProperty("Storms").then(value => {
            storms = value || [];
            renderStorms();
        }, () => { /* an older daemon or a transient error: the phase from StormState stays */ });
    }

    function renderRestart() {
        const rows = manager.NeedsRestart || [];
        $("restart-alert").hidden = rows.length === 0;
        $("restart-list").replaceChildren(...rows.map(([unit, policy]) =>
            el("li", {}, el("strong", { class: "thpd-mono", text: unit }), ` (${policy} applied after it started)`)));
    }

    /* DriftConflicts: (knob, writer, value, since µs, message). */
    function renderDrift() {
        const rows = manager.DriftConflicts || [];
        $("drift-alert").hidden = rows.length === 0;
        $("drift-list").replaceChildren(...rows.map(([knob, writer, value, since, message]) =>
            el("li", { "data-knob": knob, "data-writer": writer },
               el("strong", { class: "thpd-mono", text: message }),
               ` (since ${new Date(Number(since) / 1000).toLocaleString()})`)));
    }

    /* RecentDrift: (knob, expected, found, writer, action, found at µs, written at µs, wrong µs,
     * writer text), oldest first. */
    function renderRecentDrift() {
        const rows = manager.RecentDrift || [];
        $("recent-drift-card").hidden = rows.length === 0;
        $("recent-drift-list").replaceChildren(...rows.slice().reverse().map(
            ([knob, expected, found, writer, action, when, written, wrong, who]) => {
                const at = new Date(Number(Number(written) || Number(when)) / 1000).toLocaleString();
                const done = Number(wrong) > 0 ? `${action} after ${(Number(wrong) / 1000).toFixed(1)} ms` : action;
                return el("li", { "data-knob": knob, "data-writer": writer },
                          el("span", { class: "thpd-mono", text: `${knob}=${found} instead of ${expected}` }),
                          `, ${who}; ${done} (${at})`);
            }));
    }

    function renderDiagnostics() {
        const rows = manager.PolicyDiagnostics || [];
        $("diagnostics-alert").hidden = rows.length === 0;
        const errors = rows.filter(r => r[3] === "error").length;
        $("diagnostics-alert").classList.toggle("pf-m-danger", errors > 0);
        $("diagnostics-alert").classList.toggle("pf-m-warning", errors === 0);
        $("diagnostics-title").textContent = errors > 0
            ? `Policy files with problems: ${errors} error${errors === 1 ? "" : "s"}, ${rows.length - errors} warning${rows.length - errors === 1 ? "" : "s"}`
            : `Policy files with warnings: ${rows.length}`;
        $("diagnostics-list").replaceChildren(...rows.map(([, file, line, severity, message]) =>
            el("li", { text: `${file}${line ? ":" + line : ""}: ${severity}: ${message}` })));
    }

    function refreshPolicies() {
        client.call(PATH, IFACE, "ListPolicies", [])
                .then(reply => {
                    policies = reply[0] || [];
                    renderPolicies();
                }, error => showError("Could not list the policies", error));
    }

    function renderAll() {
        renderHeader();
        renderKnobs();
        renderOverride();
        renderPolicies();
        renderPools();
        renderStorms();
        renderRestart();
        renderDrift();
        renderRecentDrift();
        renderDiagnostics();
        renderIsolated();
    }

    /* --- live events */

    function addEvent(...parts) {
        $("events-none").hidden = true;
        const list = $("events-list");
        list.prepend(el("li", {}, el("span", { class: "thpd-time", text: new Date().toLocaleTimeString() }), ...parts));
        while (list.children.length > MAX_EVENTS)
            list.lastChild.remove();
    }

    manager.addEventListener("signal", (event, name, args) => {
        if (name === "Applied") {
            for (const [knob, from, to, reason] of args[0] || [])
                addEvent(el("span", { class: "thpd-mono", text: `${knob}: ${from} → ${to}` }), ` (${reason})`);
            refreshExplained();
        } else if (name === "StormDetected") {
            const figures = Object.entries(args[1] || {}).map(([k, v]) => `${k}=${Math.round(v * 100) / 100}`).join(" ");
            addEvent(el("strong", { text: `${args[0]} storm detected` }), figures ? `: ${figures}` : "");
            refreshStorms();
        } else if (name === "StormCleared") {
            addEvent(`${args[0]} storm cleared after ${formatDuration(args[1])}`);
            refreshStorms();
        } else if (name === "Drift") {
            for (const [knob, expected, found, , action, who] of args[0] || [])
                addEvent(el("span", { class: "thpd-mono", text: `${knob}: ${found} instead of ${expected}` }),
                         `, ${who}; ${action}`);
        }
    });

    manager.addEventListener("changed", (event, changed) => {
        changed = changed || {};
        renderAll();
        if ("ActivePolicies" in changed || "PolicyDiagnostics" in changed)
            refreshPolicies();
        if ("StormState" in changed)
            refreshStorms();
    });

    /* The daemon went away (or came back: D-Bus activation, systemctl restart thpd). */
    client.addEventListener("owner", (event, owner) => {
        showDaemon(owner !== null && owner !== undefined);
        if (owner) {
            refreshPolicies();
            refreshStorms();
        }
    });

    function showDaemon(running, why) {
        $("daemon-alert").hidden = running;
        if (!running)
            $("daemon-alert-text").textContent = why || "thpd is not running: nothing answers as org.thpd1 on the system bus (systemctl start thpd).";
        updateControls();
    }

    /* --- changes */

    function updateControls() {
        const allowed = permission.allowed === true;
        const up = manager.valid;
        const disabled = !allowed || !up || busy;
        for (const id of ["override-knob", "override-value", "override-duration", "override-set", "reload"])
            $(id).disabled = disabled;
        /* PatternFly 6 draws a disabled field on its wrapper. */
        for (const id of ["override-knob", "override-value", "override-duration"])
            $(id).closest(".pf-v6-c-form-control").classList.toggle("pf-m-disabled", disabled);
        $("override-clear").disabled = disabled || $("override-clear").dataset.empty === "1";
        $("limited-alert").hidden = permission.allowed !== false;
        const hint = allowed ? "" : "Needs administrative access";
        for (const id of ["override-set", "override-clear", "reload"])
            $(id).title = hint;
    }

    permission.addEventListener("changed", updateControls);

    function showError(title, error) {
        const denied = error && (error.name === "org.freedesktop.DBus.Error.AccessDenied" ||
                                 error.name === "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired" ||
                                 error.problem === "access-denied" ||
                                 error.name === "org.freedesktop.PolicyKit1.Error.NotAuthorized");
        const alert = $("action-alert");
        alert.dataset.kind = denied ? "denied" : "error";
        $("action-alert-title").textContent = denied ? `Not permitted: ${title}` : title;
        let text = cockpit.message(error);
        if (error && error.name && !denied)
            text = `${error.name}: ${text}`;
        if (denied)
            text += " Changes need root or the polkit action org.thpd1.manage: turn on administrative access in Cockpit, or ask an administrator.";
        $("action-alert-text").textContent = text;
        alert.hidden = false;
    }

    function clearError() {
        $("action-alert").hidden = true;
        delete $("action-alert").dataset.kind;
    }

    function privileged(title, method, args, signature) {
        clearError();
        busy = true;
        updateControls();
        const done = () => {
            busy = false;
            updateControls();
        };
        return client.call(PATH, IFACE, method, args, { type: signature, timeout: 120000 })
                .then(() => {
                    done();
                    return true;
                }, error => {
                    done();
                    showError(title, error);
                    return false;
                });
    }

    function setOverride(values, usec) {
        return privileged("set the override", "SetOverride", [values, usec], "a{ss}t");
    }

    function clearOverride() {
        return privileged("clear the override", "ClearOverride", [], "");
    }

    function reload() {
        return privileged("reload the policies", "Reload", [], "")
                .then(ok => {
                    if (ok)
                        addEvent("Policies reloaded");
                    return ok;
                });
    }

    $("override-knob").addEventListener("change", renderOverrideValues);

    $("override-form").addEventListener("submit", event => {
        event.preventDefault();
        const knob = $("override-knob").value;
        const value = String($("override-value").value).trim();
        const usec = parseDuration($("override-duration").value);
        if (!knob || value === "") {
            showError("Choose a knob and a value", { message: "The override needs a knob and its value." });
            return;
        }
        if (usec === null) {
            showError("Not a duration", { message: `"${$("override-duration").value}" is not a duration: use 30s, 10min, 2h, 1d, or 0 for until cleared.` });
            $("override-duration").focus();
            return;
        }
        const values = Object.assign({}, manager.Override || {});
        values[knob] = value;
        setOverride(values, usec);
    });
    $("override-clear").addEventListener("click", clearOverride);
    $("reload").addEventListener("click", reload);

    /* --- what each unit holds (GetUnitUsage, read on demand: after a change thpd reported,
       never on a timer) and the Scope=service and Scope=auto units (IsolatedServices) */

    /* D-Bus "t" arrives as a JS number; UINT64_MAX (unknown) rounds to 2^64. */
    function formatBytes(n) {
        if (typeof n !== "number" || n >= 2 ** 63)
            return "unknown";
        const units = ["B", "KiB", "MiB", "GiB", "TiB"];
        let i = 0;
        while (n >= 1024 && i < units.length - 1) {
            n /= 1024;
            i++;
        }
        return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
    }

    function renderUsage(rows) {
        $("usage-none").hidden = rows.length > 0;
        $("usage-table").hidden = rows.length === 0;
        $("usage-body").replaceChildren(...rows.map(([unit, policy, anon, shmem, source]) =>
            row({},
                rowHeader({ "data-label": "Unit" }, el("span", { class: "thpd-mono", text: unit })),
                cell("Policy", policy),
                cell("Anonymous THP", formatBytes(anon)),
                cell("Shmem THP", formatBytes(shmem)),
                cell("Read from", source || "nowhere (unknown)"))));
    }

    let usagePending = false;
    function refreshUsage() {
        if (usagePending)
            return;
        usagePending = true;
        client.call(PATH, IFACE, "GetUnitUsage", [])
                .then(reply => renderUsage(reply[0] || []),
                      () => { /* an older daemon: the card keeps what it showed */ })
                .finally(() => { usagePending = false });
    }

    function renderIsolated() {
        const rows = manager.IsolatedServices || [];
        $("isolated").hidden = rows.length === 0;
        $("isolated-body").replaceChildren(...rows.map(([unit, policy, mode, state, note, scope, via, machineWide]) =>
            row({},
                rowHeader({ "data-label": "Unit" }, el("span", { class: "thpd-mono", text: unit })),
                cell("Policy", scope === "auto"
                    ? `${policy} (Scope=auto, ${machineWide ? "also machine-wide" : "met per service"})`
                    : policy),
                cell("Its processes get", `THP ${mode}, via ${via}`),
                cell("State", state),
                cell("Note", note || "—"))));
    }

    /* --- start */

    manager.wait(() => {
        if (!manager.valid) {
            showDaemon(false);
            return;
        }
        showDaemon(true);
        renderAll();
        refreshPolicies();
        refreshStorms();
        refreshUsage();
        manager.addEventListener("changed", refreshUsage);
        document.body.dataset.ready = "1";
    });
    updateControls();

    /* For the browser test and the console: the actions without the form (and without its
       disabled state, so that a refusal by thpd can be seen). */
    window.thpdPage = { setOverride, clearOverride, reload, parseDuration, manager, permission };
})();

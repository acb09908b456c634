/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <langinfo.h>
#include <locale.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ctl-terminal.h"

/* 1 or 0 for what SYSTEMD_COLORS says, -1 when it says nothing we know. */
static int systemd_colors(void) {
        static const char *const on[] = { "1", "yes", "y", "true", "t", "on", "16", "256", "24bit" };
        static const char *const off[] = { "0", "no", "n", "false", "f", "off" };
        const char *e = getenv("SYSTEMD_COLORS");

        if (!e)
                return -1;
        for (size_t i = 0; i < ELEMENTSOF(on); i++)
                if (streq(e, on[i]))
                        return 1;
        for (size_t i = 0; i < ELEMENTSOF(off); i++)
                if (streq(e, off[i]))
                        return 0;
        return -1;
}

bool ctl_use_color(void) {
        static int cached = -1;
        const char *term;

        if (cached < 0) {
                term = getenv("TERM");
                cached = systemd_colors();
                if (cached < 0)
                        cached = isatty(STDOUT_FILENO) && !getenv("NO_COLOR") && !(term && streq(term, "dumb"));
        }
        return cached;
}

static bool locale_is_utf8(void) {
        /* Where the character set comes from, in the order libc looks. */
        static const char *const variables[] = { "LC_ALL", "LC_CTYPE", "LANG" };
        const char *set = NULL;

        for (size_t i = 0; i < ELEMENTSOF(variables) && !(set && set[0]); i++)
                set = getenv(variables[i]);
        locale_t locale;
        bool utf8;

        /* No locale at all: a service's environment, shown on terminals that speak UTF-8, as
         * systemctl assumes. A locale asked for by name is taken at its word, so LC_ALL=C gets
         * ASCII; a UTF-8 locale that is not installed still names the terminal's. */
        if (!set || !set[0] || strcasestr(set, "UTF-8") || strcasestr(set, "utf8"))
                return true;
        /* Any other name is looked up, for this question only: the process stays in the C locale
         * (parsing a policy the way thpd does, whatever the caller's locale), and loading the
         * locale is paid only here, not by every run of thpd-ctl. */
        locale = newlocale(LC_CTYPE_MASK, "", (locale_t) 0);
        if (locale == (locale_t) 0)
                return false;
        utf8 = streq(nl_langinfo_l(CODESET, locale), "UTF-8");
        freelocale(locale);
        return utf8;
}

const char *ctl_glyph(CtlGlyph g) {
        /* Each glyph beside what a terminal without UTF-8 gets instead. */
        static const char *const glyphs[_CTL_GLYPH_MAX][2] = {
                [CTL_GLYPH_BULLET]   = { "●", "*" },
                [CTL_GLYPH_DASH]     = { "—", "-" },
                [CTL_GLYPH_ARROW]    = { "→", "->" },
                [CTL_GLYPH_ELLIPSIS] = { "…", "..." },
        };
        static int cached = -1;

        if (cached < 0)
                cached = locale_is_utf8();
        return glyphs[g][cached ? 0 : 1];
}

const char *ctl_color(CtlColor c) {
        static const char *const sequences[_CTL_COLOR_MAX] = {
                [CTL_COLOR_NORMAL] = "\x1b[0m",
                [CTL_COLOR_BOLD] = "\x1b[1m",
                [CTL_COLOR_GREEN] = "\x1b[0;32m",
                [CTL_COLOR_YELLOW] = "\x1b[0;33m",
                [CTL_COLOR_RED] = "\x1b[0;31m",
                [CTL_COLOR_GREY] = "\x1b[0;38;5;245m",
        };

        return ctl_use_color() ? sequences[c] : "";
}

/* Length of the escape sequence ("\x1b[0;31m") at s, or 0. */
static size_t escape_length(const char *s) {
        size_t n = 2;

        if (s[0] != '\x1b' || s[1] != '[')
                return 0;
        while (s[n] && !(s[n] >= 0x40 && s[n] <= 0x7e))
                n++;
        return s[n] ? n + 1 : n;
}

/* Columns of the character at s (a wide one takes two); sets *ret_len to its bytes. */
static size_t char_width(const char *s, size_t *ret_len) {
        gunichar c = g_utf8_get_char_validated(s, -1);

        if (c == (gunichar) -1 || c == (gunichar) -2) {
                *ret_len = 1;
                return 1;
        }
        *ret_len = (size_t) (g_utf8_next_char(s) - s);
        return g_unichar_iswide(c) ? 2 : g_unichar_iszerowidth(c) ? 0 : 1;
}

size_t ctl_visible_width(const char *s) {
        size_t width = 0, len;

        while (*s) {
                size_t esc = escape_length(s);

                if (esc > 0) {
                        s += esc;
                        continue;
                }
                width += char_width(s, &len);
                s += len;
        }
        return width;
}

char *ctl_cut_line(const char *line, size_t columns) {
        const char *ellipsis = ctl_glyph(CTL_GLYPH_ELLIPSIS);
        size_t room, width = 0, len;
        bool escaped = false;
        GString *out;

        if (ctl_visible_width(line) <= columns)
                return g_strdup(line);
        room = columns > ctl_visible_width(ellipsis) ? columns - ctl_visible_width(ellipsis) : 0;
        out = g_string_new(NULL);
        for (const char *s = line; *s;) {
                size_t esc = escape_length(s), w;

                if (esc > 0) {
                        /* Escape sequences are kept, so the colours after the cut stay balanced. */
                        g_string_append_len(out, s, (gssize) esc);
                        escaped = true;
                        s += esc;
                        continue;
                }
                w = char_width(s, &len);
                if (width + w > room)
                        break;
                g_string_append_len(out, s, (gssize) len);
                width += w;
                s += len;
        }
        g_string_append(out, ellipsis);
        if (escaped)
                g_string_append(out, "\x1b[0m");
        return g_string_free(out, FALSE);
}

void ctl_output_init(CtlOutput *out, FILE *f, size_t columns) {
        *out = (CtlOutput) { .f = f, .columns = columns, .line = columns > 0 ? g_string_new(NULL) : NULL };
}

size_t ctl_output_columns(FILE *f) {
        const char *e = getenv("COLUMNS");
        struct winsize ws = {};
        uint64_t n;
        int fd = fileno(f);

        if (fd < 0 || !isatty(fd))
                return 0;
        if (e && parse_u64(e, &n) >= 0 && n > 0 && n < SIZE_MAX)
                return (size_t) n;
        if (ioctl(fd, TIOCGWINSZ, &ws) >= 0 && ws.ws_col > 0)
                return ws.ws_col;
        return 0;
}

static void emit_cut(CtlOutput *out, const char *line, bool newline) {
        g_autofree char *cut = ctl_cut_line(line, out->columns);

        if (fputs(cut, out->f) < 0 || (newline && fputc('\n', out->f) < 0))
                out->failed = true;
}

/* Writes the finished lines of out->line, cut; the rest stays. */
static void emit_lines(CtlOutput *out) {
        char *start = out->line->str, *nl;

        while ((nl = strchr(start, '\n'))) {
                *nl = '\0';
                emit_cut(out, start, true);
                start = nl + 1;
        }
        g_string_erase(out->line, 0, start - out->line->str);
}

void ctl_vprintf(CtlOutput *out, const char *format, va_list ap) {
        if (out->columns == 0) {
                if (vfprintf(out->f, format, ap) < 0)
                        out->failed = true;
                return;
        }
        g_string_append_vprintf(out->line, format, ap);
        emit_lines(out);
}

void ctl_printf(CtlOutput *out, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        ctl_vprintf(out, format, ap);
        va_end(ap);
}

void ctl_puts(CtlOutput *out, const char *s) {
        if (out->columns == 0) {
                if (fputs(s, out->f) < 0)
                        out->failed = true;
                return;
        }
        g_string_append(out->line, s);
        emit_lines(out);
}

int ctl_output_flush(CtlOutput *out) {
        if (fflush(out->f) != 0)
                out->failed = true;
        return out->failed ? -EIO : 0;
}

int ctl_output_done(CtlOutput *out) {
        int r;

        if (out->columns == 0)
                return 0;
        if (out->line->len > 0)
                emit_cut(out, out->line->str, false);
        g_string_free(g_steal_pointer(&out->line), TRUE);
        r = ctl_output_flush(out);
        *out = (CtlOutput) {};
        return r;
}

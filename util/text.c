/* util/text.c — UTF-8 validation and escaping (see text.h). */
#include "util/text.h"

#include <stdio.h>
#include <string.h>

int utf8_seq_len(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    if (!n) return 0;
    if (p[0] < 0x80) return 1;
    int len;
    unsigned lo = 0x80, hi = 0xBF; /* the allowed range of the second byte (RFC 3629's table) */
    if (p[0] >= 0xC2 && p[0] <= 0xDF)
        len = 2;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        len = 3;
        if (p[0] == 0xE0) lo = 0xA0; /* no overlong forms */
        if (p[0] == 0xED) hi = 0x9F; /* no UTF-16 surrogates */
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        len = 4;
        if (p[0] == 0xF0) lo = 0x90; /* no overlong forms */
        if (p[0] == 0xF4) hi = 0x8F; /* nothing past U+10FFFF */
    } else {
        return 0; /* a continuation byte, C0/C1 (overlong) or F5-FF */
    }
    if ((size_t)len > n || p[1] < lo || p[1] > hi) return 0;
    for (int i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return len;
}

size_t utf8_bom_len(const char *text, size_t len) { return len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0; }

size_t text_width(const char *s)
{
    size_t n = 0, len = strlen(s);
    for (size_t i = 0; i < len; n++) {
        int k = utf8_seq_len(s + i, len - i);
        i += k ? (size_t)k : 1;
    }
    return n;
}

static int is_control(unsigned char c) { return c < 0x20 || c == 0x7F; }

size_t text_bad_byte(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        int k = utf8_seq_len(s + i, n - i);
        if (!k || (k == 1 && is_control((unsigned char)s[i]))) return i;
        i += (size_t)k;
    }
    return n;
}

char *text_escape(const char *s, char *out, size_t n, int escape_backslash)
{
    return text_escape_n(s, strlen(s), out, n, escape_backslash);
}

char *text_escape_n(const char *s, size_t len, char *out, size_t n, int escape_backslash)
{
    size_t o = 0;
    if (!n) return out;
    for (size_t i = 0; i < len;) {
        int k = utf8_seq_len(s + i, len - i);
        char esc[8];
        const char *piece = s + i;
        size_t m = (size_t)k;
        if (!k || (k == 1 && is_control((unsigned char)s[i]))) {
            snprintf(esc, sizeof esc, "\\x%02X", (unsigned char)s[i]);
            piece = esc, m = 4, k = 1;
        } else if (escape_backslash && s[i] == '\\') {
            piece = "\\\\", m = 2;
        }
        if (o + m >= n) break; /* cut before a character that does not fit */
        memcpy(out + o, piece, m);
        o += m;
        i += (size_t)k;
    }
    out[o] = '\0';
    return out;
}

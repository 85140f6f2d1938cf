/* util/text.h — bytes that came from outside (a catalog cell, a flag, a file name) made safe to judge
 * and to show: UTF-8 validation, and escaping for diagnostics so that a control character in the
 * input cannot move the cursor or recolour a terminal. */
#ifndef FP8PLAN_UTIL_TEXT_H
#define FP8PLAN_UTIL_TEXT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Length (1-4) of the well-formed UTF-8 sequence at s (n bytes available), 0 when the bytes there are
 * not one (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short). */
int utf8_seq_len(const char *s, size_t n);

/* Length of a UTF-8 byte-order mark at the start of text[0..len): 3, or 0 when there is none (every
 * reader of text from outside skips it). */
size_t utf8_bom_len(const char *text, size_t len);

/* Columns s takes on a terminal: its UTF-8 code points (an invalid byte counts one). */
size_t text_width(const char *s);

/* Offset of the first byte of s[0..n) that is not printable text: a control byte (0x00-0x1F, 0x7F)
 * or the start of invalid UTF-8; n when there is none. */
size_t text_bad_byte(const char *s, size_t n);

/* s with every control byte and every byte of invalid UTF-8 written as \xHH (a backslash as \\ when
 * escape_backslash), into out (size n, always NUL-terminated, cut at a character boundary).
 * Returns out. */
char *text_escape(const char *s, char *out, size_t n, int escape_backslash);

/* The same for len bytes of s, which may hold NULs (shown as \x00). */
char *text_escape_n(const char *s, size_t len, char *out, size_t n, int escape_backslash);

#ifdef __cplusplus
}
#endif
#endif

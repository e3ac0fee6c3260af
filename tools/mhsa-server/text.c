// text.c — UTF-8 holdback, stop strings and SSE framing (text.h).
#include "text.h"

#include <stdlib.h>
#include <string.h>

// The number of bytes of the character that starts with byte c (2..4), 1
// for ASCII, 0 for a byte that cannot start a character.
static size_t utf8_lead_len(unsigned char c)
{
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return 2;
    if (c >= 0xE0 && c <= 0xEF)
        return 3;
    if (c >= 0xF0 && c <= 0xF4)
        return 4;
    return 0;
}

// 1 when s[0..n) (n >= 2) is a valid start of the character s[0] begins,
// with the second byte's narrower ranges (no overlongs, no surrogates, no
// code point above U+10FFFF).
static int utf8_valid_cont(const unsigned char *s, size_t n)
{
    unsigned char c = s[0], d = s[1];
    unsigned char lo = 0x80, hi = 0xBF;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    if (d < lo || d > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return 1;
}

size_t text_utf8_complete(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    // The last lead byte within 3 bytes of the end decides.
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char c = u[n - back];
        if (c >= 0x80 && c < 0xC0)
            continue;   // a continuation byte: look further back
        size_t need = utf8_lead_len(c);
        if (need > back && (back == 1 || utf8_valid_cont(u + n - back, back)))
            return n - back;   // a valid start, bytes still to come
        return n;
    }
    return n;
}

// Makes room for extra more bytes and the NUL.
static int grow(char **out, size_t *len, size_t *cap, size_t extra)
{
    if (*len + extra + 1 <= *cap)
        return 0;
    size_t want = *cap ? *cap : 64;
    while (want < *len + extra + 1)
        want *= 2;
    char *p = realloc(*out, want);
    if (!p)
        return -1;
    *out = p;
    *cap = want;
    return 0;
}

int text_append_valid(char **out, size_t *len, size_t *cap, const char *s,
                      size_t n)
{
    // At most 3 bytes of U+FFFD per input byte.
    if (n > ((size_t)-1) / 4 || grow(out, len, cap, 3 * n))
        return -1;
    const unsigned char *u = (const unsigned char *)s;
    char *o = *out + *len;
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_lead_len(u[i]);
        if (k == 1 || (k > 1 && i + k <= n && utf8_valid_cont(u + i, k))) {
            memcpy(o, u + i, k);
            o += k;
            i += k;
        } else {
            memcpy(o, "\xEF\xBF\xBD", 3);   // U+FFFD for this byte
            o += 3;
            i++;
        }
    }
    *len = (size_t)(o - *out);
    (*out)[*len] = '\0';
    return 0;
}

size_t text_find_stop(const char *s, size_t n, size_t from,
                      const char *const *stops, size_t n_stops)
{
    size_t best = (size_t)-1;
    for (size_t k = 0; k < n_stops; k++) {
        size_t m = strlen(stops[k]);
        if (m == 0 || m > n)
            continue;
        for (size_t i = from; i + m <= n && i < best; i++)
            if (memcmp(s + i, stops[k], m) == 0) {
                best = i;
                break;
            }
    }
    return best;
}

size_t text_safe_end(const char *s, size_t n, size_t from,
                     const char *const *stops, size_t n_stops)
{
    size_t end = n;
    for (size_t k = 0; k < n_stops; k++) {
        size_t m = strlen(stops[k]);
        // The longest proper prefix of the stop that s ends with.
        size_t most = m ? m - 1 : 0;
        if (most > n - from)
            most = n - from;
        for (size_t p = most; p > 0; p--)
            if (memcmp(s + n - p, stops[k], p) == 0) {
                if (n - p < end)
                    end = n - p;
                break;
            }
    }
    end = from + text_utf8_complete(s + from, end - from);
    return end;
}

// "<prefix><body>\n\n": one SSE line and the blank line that ends it.
static int sse_line(char **out, size_t *len, size_t *cap, const char *prefix,
                    const char *body)
{
    size_t p = strlen(prefix), m = strlen(body);
    if (grow(out, len, cap, p + m + 2))
        return -1;
    memcpy(*out + *len, prefix, p);
    memcpy(*out + *len + p, body, m);
    memcpy(*out + *len + p + m, "\n\n", 2);
    *len += p + m + 2;
    (*out)[*len] = '\0';
    return 0;
}

int text_sse_event(char **out, size_t *len, size_t *cap, const char *payload)
{
    return sse_line(out, len, cap, "data: ", payload);
}

int text_sse_comment(char **out, size_t *len, size_t *cap, const char *text)
{
    return sse_line(out, len, cap, ": ", text);
}

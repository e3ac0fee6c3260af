// unicode.c — strict UTF-8 decoding, the pre-tokenizer's character
// classes and GPT-2's byte alphabet (unicode.h).
#include "unicode.h"

size_t mhsa__utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char b = s[0];
    size_t len = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2
               : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4
               : 0;
    *cp = MHSA_CP_INVALID;
    if (len == 0 || len > n)
        return 1;
    uint32_t c = len == 1 ? b : b & (0x7fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 1;
        c = c << 6 | (s[i] & 0x3fu);
    }
    // Overlong forms (C0/C1 were refused above), surrogates, > U+10FFFF.
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min[len] || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
        return 1;
    *cp = c;
    return len;
}

size_t mhsa__utf8_put(uint32_t cp, unsigned char *out)
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xc0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xe0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

static int in_ranges(uint32_t cp, const mhsa_cp_range *r, size_t n)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid].lo)
            hi = mid;
        else if (cp > r[mid].hi)
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

mhsa_cp_class mhsa__cp_class(uint32_t cp)
{
    // Unicode's White_Space property (PropList.txt), all 25 of it.
    if ((cp >= 0x9 && cp <= 0xd) || cp == 0x20 || cp == 0x85 ||
        cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) ||
        cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
        cp == 0x3000)
        return MHSA_CP_SPACE;
    if (cp == MHSA_CP_INVALID)
        return MHSA_CP_OTHER;
    if (in_ranges(cp, mhsa__unicode_letters, mhsa__unicode_letters_count))
        return MHSA_CP_LETTER;
    if (in_ranges(cp, mhsa__unicode_numbers, mhsa__unicode_numbers_count))
        return MHSA_CP_NUMBER;
    return MHSA_CP_OTHER;
}

// Bytes GPT-2 keeps as themselves: '!'..'~', 0xa1..0xac, 0xae..0xff.
static int printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) ||
           b >= 0xae;
}

// The 68 others, in byte order: 0x00..0x20 (33), 0x7f..0xa0 (34), 0xad.
uint32_t mhsa__byte_to_cp(unsigned char b)
{
    if (printable(b))
        return b;
    if (b <= 0x20)
        return 256u + b;
    if (b <= 0xa0)
        return 256u + 33 + (b - 0x7fu);
    return 256u + 67;   // 0xad
}

int mhsa__cp_to_byte(uint32_t cp)
{
    if (cp < 256)
        return printable(cp) ? (int)cp : -1;
    if (cp < 256 + 33)
        return (int)(cp - 256);
    if (cp < 256 + 67)
        return (int)(cp - 256 - 33 + 0x7f);
    return cp == 256 + 67 ? 0xad : -1;
}

// unicode.h — what the byte-level BPE tokenizer needs to know about
// Unicode: decoding one UTF-8 sequence (strictly: an invalid byte stays a
// byte of its own), the character classes the GPT-2 pre-tokenizer splits
// on, and GPT-2's byte <-> code point mapping.
#ifndef MHSA_LLAMA_UNICODE_H
#define MHSA_LLAMA_UNICODE_H

#include <stddef.h>
#include <stdint.h>

typedef struct mhsa_cp_range { uint32_t lo, hi; } mhsa_cp_range;

// Generated tables (unicode_tables.c): letters L*, numbers N*.
extern const mhsa_cp_range mhsa__unicode_letters[];
extern const size_t mhsa__unicode_letters_count;
extern const mhsa_cp_range mhsa__unicode_numbers[];
extern const size_t mhsa__unicode_numbers_count;

// Code point of an invalid byte (any byte that does not start a well-formed
// sequence: a stray continuation byte, an overlong form, a surrogate, a
// value past U+10FFFF or a truncated sequence).
enum { MHSA_CP_INVALID = 0xffffffffu };

// The length (1 to 4) of the UTF-8 sequence at s[0..n), n >= 1, and its
// code point in *cp; an invalid byte is length 1, *cp MHSA_CP_INVALID.
size_t mhsa__utf8_next(const unsigned char *s, size_t n, uint32_t *cp);

// Writes cp (< 0x110000) as UTF-8 into out (room for 4); returns the
// length.
size_t mhsa__utf8_put(uint32_t cp, unsigned char *out);

typedef enum mhsa_cp_class {
    MHSA_CP_LETTER, MHSA_CP_NUMBER, MHSA_CP_SPACE, MHSA_CP_OTHER
} mhsa_cp_class;

// \p{L}, \p{N}, \s (Unicode's White_Space) or anything else, invalid
// bytes included.
mhsa_cp_class mhsa__cp_class(uint32_t cp);

// GPT-2's byte-level alphabet: byte b is the code point
// mhsa__byte_to_cp(b) (printable Latin-1 bytes stand for themselves, the
// other 68 for 256, 257, ... in byte order); mhsa__cp_to_byte is the
// inverse, -1 for a code point that stands for no byte.
uint32_t mhsa__byte_to_cp(unsigned char b);
int      mhsa__cp_to_byte(uint32_t cp);

#endif

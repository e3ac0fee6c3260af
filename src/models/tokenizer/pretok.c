// pretok.c — the pre-tokenizer splits of pretok.h: GPT-2's, SmolLM's,
// Llama 3's and Qwen2's.
#include "pretok.h"

#include "unicode.h"

enum { CLS_NONE = 255 };   // past the end of the piece

typedef struct span {
    const mhsa_pretok_scratch *s;
    size_t end;            // units of the piece: [start, end)
    size_t prev;           // where the next token starts
    size_t *ends;
    size_t k;
} span;

static unsigned cls(const span *p, size_t i)
{
    return i < p->end ? p->s->unit_cls[i] : CLS_NONE;
}

static uint32_t cp(const span *p, size_t i)
{
    return i < p->end ? p->s->unit_cp[i] : MHSA_CP_INVALID;
}

// A token of units [prev, upto), if not empty.
static void emit(span *p, size_t upto)
{
    if (upto > p->prev)
        p->ends[p->k++] = p->s->unit_off[upto];
    p->prev = upto;
}

// ASCII lower case (the regex's [sS] pairs are ASCII only).
static uint32_t lower(uint32_t c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

// The units of an English contraction at pos ('s 't 'm 'd: 2; 're 've
// 'll: 3), or 0: the first alternative of both regexes below, GPT-2's in
// lower case only, Llama 3's with fold, in either case of ASCII.
static size_t contraction(const span *p, size_t pos, int fold)
{
    if (cp(p, pos) != '\'' || pos + 1 >= p->end)
        return 0;
    uint32_t n1 = cp(p, pos + 1), n2 = cp(p, pos + 2);
    if (fold)
        n1 = lower(n1), n2 = lower(n2);
    if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd')
        return 2;
    if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') ||
        (n1 == 'l' && n2 == 'l'))
        return 3;
    return 0;
}

// GPT-2's regex over units [start, end) (see pretok.h), alternative by
// alternative in its order.
// \s+(?!\S)|\s+ over the run of ws spaces at pos, emitted; returns where
// the next piece starts. A run followed by more of the piece leaves its
// last space to start the next token; else it is taken whole. (ws 0, one
// unit: not reached, every unit has a class before this.)
static size_t emit_spaces(span *p, size_t pos, size_t ws)
{
    if (ws > 1 && pos + ws < p->end)
        pos += ws - 1;
    else
        pos += ws > 0 ? ws : 1;
    emit(p, pos);
    return pos;
}

static void split_gpt2(span *p, size_t start)
{
    p->prev = start;
    for (size_t pos = start; pos < p->end;) {
        uint32_t c = cp(p, pos);
        // 's|'t|'re|'ve|'m|'ll|'d (lower case only, as the regex says)
        size_t ct = contraction(p, pos, 0);
        if (ct) {
            emit(p, pos += ct);
            continue;
        }
        //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+
        unsigned k = c == ' ' ? cls(p, pos + 1) : cls(p, pos);
        if (k == MHSA_CP_LETTER || k == MHSA_CP_NUMBER ||
            k == MHSA_CP_OTHER) {
            pos += c == ' ';
            while (cls(p, pos) == k)
                pos++;
            emit(p, pos);
            continue;
        }
        size_t ws = 0;
        while (cls(p, pos + ws) == MHSA_CP_SPACE)
            ws++;
        pos = emit_spaces(p, pos, ws);
    }
}

static int is_cr_lf(uint32_t c) { return c == '\r' || c == '\n'; }

// Llama 3's regex over units [start, end) (see pretok.h), alternative by
// alternative in its order; max_digits: 3, or 1 for Qwen2's \p{N}.
static void split_llama3(span *p, size_t start, size_t max_digits)
{
    p->prev = start;
    for (size_t pos = start; pos < p->end;) {
        uint32_t c = cp(p, pos);
        unsigned k = cls(p, pos);
        // (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])
        size_t ct = contraction(p, pos, 1);
        if (ct) {
            emit(p, pos += ct);
            continue;
        }
        // [^\r\n\p{L}\p{N}]?\p{L}+: one unit of anything else may lead
        if (!is_cr_lf(c) && k != MHSA_CP_NUMBER &&
            (k == MHSA_CP_LETTER || cls(p, pos + 1) == MHSA_CP_LETTER)) {
            pos++;
            while (cls(p, pos) == MHSA_CP_LETTER)
                pos++;
            emit(p, pos);
            continue;
        }
        // \p{N}{1,3} (Qwen2: \p{N}): runs cut every max_digits
        if (k == MHSA_CP_NUMBER) {
            size_t n = 0;
            while (n < max_digits && cls(p, pos) == MHSA_CP_NUMBER) {
                pos++;
                n++;
            }
            emit(p, pos);
            continue;
        }
        //  ?[^\s\p{L}\p{N}]+[\r\n]*
        unsigned k2 = c == ' ' ? cls(p, pos + 1) : k;
        if (k2 == MHSA_CP_OTHER) {
            pos += c == ' ';
            while (cls(p, pos) == MHSA_CP_OTHER)
                pos++;
            while (is_cr_lf(cp(p, pos)))
                pos++;
            emit(p, pos);
            continue;
        }
        // \s*[\r\n]+: a run of spaces up to its last CR or LF; else
        // \s+(?!\S) and \s+ as in GPT-2's.
        size_t ws = 0, last_cr_lf = 0;
        while (cls(p, pos + ws) == MHSA_CP_SPACE) {
            if (is_cr_lf(cp(p, pos + ws)))
                last_cr_lf = pos + ws + 1;
            ws++;
        }
        if (last_cr_lf) {
            emit(p, pos = last_cr_lf);
            continue;
        }
        pos = emit_spaces(p, pos, ws);
    }
}

size_t mhsa__pretok_split(mhsa_pretok kind, const unsigned char *text,
                          size_t n, const mhsa_pretok_scratch *s,
                          size_t *ends)
{
    size_t units = 0;
    for (size_t off = 0; off < n; units++) {
        s->unit_off[units] = off;
        off += mhsa__utf8_next(text + off, n - off, &s->unit_cp[units]);
        s->unit_cls[units] = (unsigned char)mhsa__cp_class(s->unit_cp[units]);
    }
    s->unit_off[units] = n;
    span p = {.s = s, .ends = ends};
    if (kind == MHSA_PRETOK_LLAMA3 || kind == MHSA_PRETOK_QWEN2) {
        p.end = units;
        split_llama3(&p, 0, kind == MHSA_PRETOK_LLAMA3 ? 3 : 1);
        return p.k;
    }
    if (kind == MHSA_PRETOK_GPT2) {
        p.end = units;
        split_gpt2(&p, 0);
        return p.k;
    }
    // SmolLM: each number alone; the runs between them split as GPT-2.
    size_t start = 0;
    for (size_t i = 0; i <= units; i++) {
        if (i < units && s->unit_cls[i] != MHSA_CP_NUMBER)
            continue;
        p.end = i;
        split_gpt2(&p, start);
        if (i < units) {
            p.end = i + 1;
            p.prev = i;
            emit(&p, i + 1);
        }
        start = i + 1;
    }
    return p.k;
}

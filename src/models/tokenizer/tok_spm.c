// tok_spm.c — SentencePiece-style encoding of a run of plain text, as
// llama.cpp's llm_tokenizer_spm does it (written from its description):
// spaces become U+2581 ("▁"), the text is cut into UTF-8 characters (by
// each lead byte's length, so an invalid byte is a character of its own or
// takes its followers with it, as there), and the adjacent pair whose
// concatenation is the token of highest score is merged, leftmost among
// equals, until no pair forms a token. A final symbol that is no token
// goes out byte by byte (byte_token: "<0xXX>", else the byte's own token,
// else unk).
#include <stddef.h>

#include "tok_internal.h"

struct mhsa_spm_sym {
    size_t off, n;            // bytes in esc; n 0 once merged away
    ptrdiff_t prev, next;     // neighbours, -1 at the ends
};

struct mhsa_spm_bigram {
    ptrdiff_t left, right;
    float score;
    size_t size;              // bytes of the pair when it was found
};

static size_t up(size_t x, size_t a) { return (x + a - 1) / a * a; }

size_t mhsa__spm_scratch_bytes(size_t n)
{
    size_t u = n + 1;
    return up(3 * u, sizeof(size_t)) + 3 * u * sizeof(mhsa_spm_sym) +
           9 * u * sizeof(mhsa_spm_bigram);
}

void mhsa__spm_scratch_init(mhsa_spm_scratch *b, void *mem, size_t n)
{
    size_t u = n + 1;
    b->esc = mem;
    b->sym = (mhsa_spm_sym *)((char *)mem + up(3 * u, sizeof(size_t)));
    b->heap = (mhsa_spm_bigram *)(b->sym + 3 * u);
}

// Whether a is merged after b: lower score, or equal score further right.
static int after(const mhsa_spm_bigram *a, const mhsa_spm_bigram *b)
{
    return a->score < b->score || (a->score == b->score && a->left > b->left);
}

static void push(mhsa_spm_bigram *h, size_t *n, mhsa_spm_bigram v)
{
    size_t i = (*n)++;
    while (i > 0 && after(&h[(i - 1) / 2], &v)) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static mhsa_spm_bigram pop(mhsa_spm_bigram *h, size_t *n)
{
    mhsa_spm_bigram top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && after(&h[c], &h[c + 1]))
            c++;
        if (!after(&last, &h[c]))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = last;
    return top;
}

// A candidate merge of symbols l and r if together they are a token.
static void try_pair(const mhsa_tokenizer *t, const mhsa_spm_scratch *b,
                     size_t *nh, ptrdiff_t l, ptrdiff_t r)
{
    if (l < 0 || r < 0)
        return;
    size_t size = b->sym[l].n + b->sym[r].n;
    int32_t id = mhsa__tok_find(t, b->esc + b->sym[l].off, size);
    if (id >= 0)
        push(b->heap, nh, (mhsa_spm_bigram){l, r, t->score[id], size});
}

// Bytes of the UTF-8 character a lead byte starts, as llama.cpp counts
// them (a continuation or invalid byte: 1).
static size_t char_len(unsigned char c)
{
    static const unsigned char len[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                          1, 1, 1, 1, 2, 2, 3, 4};
    return len[c >> 4];
}

void mhsa__spm_encode(const mhsa_tokenizer *t, const unsigned char *p,
                      size_t n, int prefix, const mhsa_spm_scratch *b,
                      int32_t *ids, size_t *k)
{
    size_t e = 0;
    for (size_t i = 0; i < n + (prefix != 0); i++) {
        unsigned char c = prefix ? (i ? p[i - 1] : ' ') : p[i];
        if (c == ' ') {
            b->esc[e++] = '\xe2';
            b->esc[e++] = '\x96';
            b->esc[e++] = '\x81';
        } else {
            b->esc[e++] = (char)c;
        }
    }
    ptrdiff_t m = 0;
    for (size_t off = 0; off < e; m++) {
        size_t len = char_len((unsigned char)b->esc[off]);
        b->sym[m].off = off;
        b->sym[m].n = len < e - off ? len : e - off;
        off += b->sym[m].n;
        b->sym[m].prev = m - 1;
        b->sym[m].next = off == e ? -1 : m + 1;
    }
    if (m == 0)
        return;
    size_t nh = 0;
    for (ptrdiff_t i = 1; i < m; i++)
        try_pair(t, b, &nh, i - 1, i);
    while (nh) {
        mhsa_spm_bigram g = pop(b->heap, &nh);
        mhsa_spm_sym *l = &b->sym[g.left], *r = &b->sym[g.right];
        // Stale: one side was merged into something else since.
        if (l->n == 0 || r->n == 0 || l->n + r->n != g.size)
            continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            b->sym[r->next].prev = g.left;
        try_pair(t, b, &nh, l->prev, g.left);
        try_pair(t, b, &nh, g.left, l->next);
    }
    for (ptrdiff_t i = 0; i != -1; i = b->sym[i].next) {
        const char *s = b->esc + b->sym[i].off;
        int32_t id = mhsa__tok_find(t, s, b->sym[i].n);
        if (id >= 0) {
            ids[(*k)++] = id;
            continue;
        }
        for (size_t j = 0; j < b->sym[i].n; j++)
            if (t->byte_token[(unsigned char)s[j]] >= 0)
                ids[(*k)++] = t->byte_token[(unsigned char)s[j]];
    }
}

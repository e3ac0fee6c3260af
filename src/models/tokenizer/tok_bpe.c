// tok_bpe.c — byte-level BPE of a run of plain text (see tokenizer.h): the
// pre-tokenizer's pieces, each in GPT-2's byte alphabet, merged pairwise
// lowest rank first, leftmost among equals, as llama.cpp's
// llm_tokenizer_bpe does (with ignore_merges, Llama 3's, a piece that is
// a token as a whole is taken as it is first).
#include <string.h>

#include "tok_internal.h"
#include "unicode.h"

int32_t mhsa__tok_find_merge(const mhsa_tokenizer *t, const char *a,
                             size_t an, const char *b, size_t bn)
{
    uint64_t h = mhsa__fnv(mhsa__fnv(mhsa__fnv(MHSA_FNV_BASIS, a, an), " ",
                                     1), b, bn);
    for (size_t i = h & t->merge_mask;; i = (i + 1) & t->merge_mask) {
        int32_t r = t->merge_slot[i];
        if (r < 0)
            return -1;
        const char *m = t->merge[r];
        if (t->merge_len[r] == an + 1 + bn && !memcmp(m, a, an) &&
            m[an] == ' ' && !memcmp(m + an + 1, b, bn))
            return r;
    }
}

// size_t arrays first, then the 4-byte ones, then bytes: every part
// aligned.
size_t mhsa__bpe_scratch_bytes(size_t n)
{
    size_t u = n + 1;
    return 4 * u * sizeof(size_t) + u * sizeof(uint32_t) +
           u * sizeof(int32_t) + u + 2 * u;
}

void mhsa__bpe_scratch_init(mhsa_bpe_scratch *b, void *mem, size_t n)
{
    size_t u = n + 1;
    size_t *z = mem;
    b->pre.unit_off = z;
    b->ends = z + u;
    b->off = z + 2 * u;
    b->len = z + 3 * u;
    b->pre.unit_cp = (uint32_t *)(z + 4 * u);
    b->rank = (int32_t *)(b->pre.unit_cp + u);
    b->pre.unit_cls = (unsigned char *)(b->rank + u);
    b->enc = (char *)b->pre.unit_cls + u;
}

static int32_t pair_rank(const mhsa_tokenizer *t, const mhsa_bpe_scratch *b,
                         size_t i)
{
    return mhsa__tok_find_merge(t, b->enc + b->off[i], b->len[i],
                                b->enc + b->off[i + 1], b->len[i + 1]);
}

// BPE of one piece p[0..n) (n >= 1), its tokens appended at ids + *k.
static void encode_piece(const mhsa_tokenizer *t, const unsigned char *p,
                         size_t n, const mhsa_bpe_scratch *b, int32_t *ids,
                         size_t *k)
{
    size_t m = 0, e = 0;
    for (size_t i = 0; i < n; i++, m++) {   // one symbol per byte
        b->off[m] = e;
        b->len[m] = mhsa__utf8_put(mhsa__byte_to_cp(p[i]),
                                   (unsigned char *)b->enc + e);
        e += b->len[m];
    }
    if (t->ignore_merges) {
        int32_t id = mhsa__tok_find(t, b->enc, e);
        if (id >= 0) {
            ids[(*k)++] = id;
            return;
        }
    }
    for (size_t i = 0; i + 1 < m; i++)
        b->rank[i] = pair_rank(t, b, i);
    // Merge the pair of lowest rank, leftmost among equals, until none is
    // left; symbols are contiguous in enc, so a merge only adds lengths.
    for (;;) {
        size_t best = m;
        for (size_t i = 0; i + 1 < m; i++)
            if (b->rank[i] >= 0 &&
                (best == m || b->rank[i] < b->rank[best]))
                best = i;
        if (best == m)
            break;
        b->len[best] += b->len[best + 1];
        for (size_t i = best + 1; i + 1 < m; i++) {
            b->off[i] = b->off[i + 1];
            b->len[i] = b->len[i + 1];
            b->rank[i] = b->rank[i + 1];
        }
        m--;
        if (best + 1 < m)
            b->rank[best] = pair_rank(t, b, best);
        if (best > 0)
            b->rank[best - 1] = pair_rank(t, b, best - 1);
    }
    size_t byte = 0;   // which input byte each symbol starts at
    for (size_t i = 0; i < m; i++) {
        int32_t id = mhsa__tok_find(t, b->enc + b->off[i], b->len[i]);
        // A symbol counts one byte per code point of the byte alphabet.
        size_t nb = 0;
        for (size_t j = 0; j < b->len[i]; nb++) {
            uint32_t cp;
            j += mhsa__utf8_next((const unsigned char *)b->enc + b->off[i] + j,
                                 b->len[i] - j, &cp);
        }
        if (id >= 0) {
            ids[(*k)++] = id;
        } else {   // not in the vocabulary: its bytes one by one
            for (size_t j = 0; j < nb; j++)
                if (t->byte_token[p[byte + j]] >= 0)
                    ids[(*k)++] = t->byte_token[p[byte + j]];
        }
        byte += nb;
    }
}

void mhsa__bpe_encode(const mhsa_tokenizer *t, const unsigned char *p,
                      size_t n, const mhsa_bpe_scratch *b, int32_t *ids,
                      size_t *k)
{
    if (n == 0)
        return;
    size_t pieces = mhsa__pretok_split(t->pre, p, n, &b->pre, b->ends);
    for (size_t i = 0, start = 0; i < pieces; start = b->ends[i++])
        encode_piece(t, p + start, b->ends[i] - start, b, ids, k);
}

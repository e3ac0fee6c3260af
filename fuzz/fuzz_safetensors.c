// fuzz_safetensors.c — libFuzzer target: arbitrary bytes as a .safetensors
// file, through the validating reader (every tensor's shape and data read
// back) and the block loader (any of the three sets of weight names, into
// blocks of several shapes). A failed load must leave the block's weights
// unchanged; a successful one must survive saving under every set of names
// and loading again, bit for bit; nothing may crash, leak or read outside
// the file's bytes.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mhsa.h"
#include "io/safetensors.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static char path[256], path2[256];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/mhsa_fuzz_st_%ld.safetensors",
             dir && *dir ? dir : "/tmp", (long)getpid());
    snprintf(path2, sizeof path2, "%s.saved", path);
    return 0;
}

// The blocks every input is loaded into: D = 4, H heads, Hkv kv heads
// (0: H), biases or not, a prefix. Which name set a file holds decides
// which tensors are read and split into the fused w_qkv.
static const struct { int H, Hkv, bias; const char *prefix; } blocks[] = {
    {2, 0, 1, ""}, {2, 0, 0, "attn."}, {2, 1, 1, ""}, {4, 2, 0, "attn."},
};
enum { D = 4, MAX_W = 3 * D * D + 3 * D + D * D + D };

// A block's weights, flat; qkv = the rows of w_qkv.
typedef struct wts { float w[MAX_W]; int qkv, bias; } wts;

static void get(const mhsa_block *blk, wts *w)
{
    memset(w->w, 0, sizeof w->w);
    float *bq = w->w + w->qkv * D, *wo = bq + w->qkv, *bo = wo + D * D;
    CHECK(mhsa_block_get_weights(blk, w->w, w->bias ? bq : NULL, wo,
                                 w->bias ? bo : NULL) == MHSA_OK);
}

static mhsa_block *make(int k)
{
    mhsa_config cfg = {.d_model = D, .n_heads = blocks[k].H,
                       .max_seq_len = 8, .causal = 1,
                       .bias = blocks[k].bias, .n_kv_heads = blocks[k].Hkv};
    mhsa_block *blk = NULL;
    CHECK(mhsa_block_create(&cfg, &blk) == MHSA_OK);
    CHECK(mhsa_block_init_random(blk, 1) == MHSA_OK);
    return blk;
}

// Loads into block k; on failure the weights stay as they were. A file
// that loads is saved again under each set of names and must load back to
// the same bits.
static void load(int k)
{
    int hkv = blocks[k].Hkv ? blocks[k].Hkv : blocks[k].H;
    wts before = {.qkv = D + 2 * hkv * (D / blocks[k].H),
                  .bias = blocks[k].bias};
    wts after = before, again = before;
    mhsa_block *blk = make(k);
    get(blk, &before);
    mhsa_status st = mhsa_block_load_safetensors(blk, path,
                                                 blocks[k].prefix);
    CHECK(st == MHSA_OK || st == MHSA_ERR_FORMAT || st == MHSA_ERR_IO);
    get(blk, &after);
    if (st != MHSA_OK)
        CHECK(!memcmp(before.w, after.w, sizeof before.w));
    for (int names = 0; st == MHSA_OK && names < 3; names++) {
        CHECK(mhsa_block_save_safetensors_ex(blk, path2, blocks[k].prefix,
                                             (mhsa_names)names) == MHSA_OK);
        mhsa_block *b2 = make(k);
        CHECK(mhsa_block_load_safetensors(b2, path2, blocks[k].prefix)
              == MHSA_OK);
        get(b2, &again);
        CHECK(!memcmp(after.w, again.w, sizeof after.w));
        mhsa_block_destroy(b2);
        unlink(path2);
    }
    mhsa_block_destroy(blk);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    CHECK(f);
    CHECK(fwrite(data, 1, size, f) == size);
    CHECK(fclose(f) == 0);

    mhsa_st_file *st = NULL;
    if (mhsa__st_open(path, &st) == MHSA_OK) {
        size_t n = mhsa__st_count(st);
        for (size_t i = 0; i < n; i++) {
            const char *name = mhsa__st_name(st, i);
            int ndim;
            size_t dims[MHSA_ST_MAX_DIMS], numel = 1;
            CHECK(name && mhsa__st_shape(st, name, &ndim, dims));
            CHECK(ndim >= 0 && ndim <= MHSA_ST_MAX_DIMS);
            for (int k = 0; k < ndim; k++)
                numel *= dims[k];
            // A valid file holds its tensors' bytes: numel <= size.
            if (numel > size)
                abort();
            float *dst = malloc((numel ? numel : 1) * sizeof(float));
            mhsa_status rs = mhsa__st_read_f32(st, name, ndim, dims, dst);
            CHECK(rs == MHSA_OK || rs == MHSA_ERR_FORMAT);
            free(dst);
        }
        mhsa__st_close(st);
    }
    for (int k = 0; k < (int)(sizeof blocks / sizeof blocks[0]); k++)
        load(k);
    unlink(path);
    return 0;
}

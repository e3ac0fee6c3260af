// fuzz_safetensors.c — libFuzzer target: arbitrary bytes as a .safetensors
// file, through the validating reader (every tensor's shape and data read
// back) and the block loader. A failed load must leave the block's weights
// unchanged; nothing may crash, leak or read outside the file's bytes.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mhsa.h"
#include "safetensors.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static char path[256];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/mhsa_fuzz_st_%ld.safetensors",
             dir && *dir ? dir : "/tmp", (long)getpid());
    return 0;
}

// Loads into a D = 4, H = 2 block; on failure the weights stay as they were.
static void load(const char *prefix, int bias)
{
    mhsa_config cfg = { 4, 2, 8, 1, bias };
    mhsa_block *blk = NULL;
    CHECK(mhsa_block_create(&cfg, &blk) == MHSA_OK);
    CHECK(mhsa_block_init_random(blk, 1) == MHSA_OK);
    float before[48 + 12 + 16 + 4], after[48 + 12 + 16 + 4];
    CHECK(mhsa_block_get_weights(blk, before, bias ? before + 48 : NULL,
                                 before + 60, bias ? before + 76 : NULL)
          == MHSA_OK);
    mhsa_status st = mhsa_block_load_safetensors(blk, path, prefix);
    CHECK(st == MHSA_OK || st == MHSA_ERR_FORMAT || st == MHSA_ERR_IO);
    memcpy(after, before, sizeof after);
    CHECK(mhsa_block_get_weights(blk, after, bias ? after + 48 : NULL,
                                 after + 60, bias ? after + 76 : NULL)
          == MHSA_OK);
    if (st != MHSA_OK)
        CHECK(!memcmp(before, after, sizeof before));
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
    load("", 1);
    load("attn.", 0);
    unlink(path);
    return 0;
}

// main.c — a program outside the mhsa tree, built against mhsa the three
// ways .ci/test-consumers.sh checks (pkg-config, CMake find_package, meson
// subproject): one causal forward, and a safetensors save/load round trip
// giving the same bits when the library has safetensors support. Exits
// non-zero on any failure.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <mhsa.h>

#define CHECK(call)                                                         \
    do {                                                                    \
        mhsa_status s_ = (call);                                            \
        if (s_ != MHSA_OK) {                                                \
            fprintf(stderr, "%s: %s: %s\n", #call, mhsa_status_str(s_),     \
                    mhsa_last_error());                                     \
            return 1;                                                       \
        }                                                                   \
    } while (0)

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "consumer.safetensors";
    enum { B = 1, T = 4, D = 16 };
    mhsa_config cfg = {.d_model = D, .n_heads = 4, .max_seq_len = T,
                       .causal = 1, .bias = 1};
    mhsa_block *blk = NULL, *back = NULL;
    mhsa_workspace *ws = NULL;
    CHECK(mhsa_block_create(&cfg, &blk));
    CHECK(mhsa_block_init_random(blk, 3));
    CHECK(mhsa_workspace_create(blk, B, &ws));
    float x[B * T * D], y[B * T * D], y2[B * T * D];
    for (int i = 0; i < B * T * D; i++)
        x[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    CHECK(mhsa_forward(blk, ws, x, B, T, NULL, y, NULL));
    for (int i = 0; i < B * T * D; i++)
        if (!isfinite(y[i]))
            return 1;

    mhsa_status s = mhsa_block_save_safetensors(blk, path, "attn.");
    if (s == MHSA_ERR_UNSUPPORTED) {
        printf("mhsa %s (%s): forward ok; built without safetensors\n",
               mhsa_version(), mhsa_isa_name(mhsa_active_isa()));
    } else {
        CHECK(s);
        CHECK(mhsa_block_create(&cfg, &back));
        CHECK(mhsa_block_load_safetensors(back, path, "attn."));
        mhsa_workspace_destroy(ws);
        ws = NULL;
        CHECK(mhsa_workspace_create(back, B, &ws));
        CHECK(mhsa_forward(back, ws, x, B, T, NULL, y2, NULL));
        if (memcmp(y, y2, sizeof y) != 0) {
            fprintf(stderr, "reloaded block gives other outputs\n");
            return 1;
        }
        printf("mhsa %s (%s): forward and safetensors round trip ok\n",
               mhsa_version(), mhsa_isa_name(mhsa_active_isa()));
    }
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(back);
    mhsa_block_destroy(blk);
    return 0;
}

// cli.h — the pieces of the mhsa-train command: arguments, terminal output,
// the PNG heatmap, and the command itself (cli.c), which tests call
// in-process so that they need no exec (and so also run under qemu-user).
#ifndef MHSA_TRAIN_CLI_H
#define MHSA_TRAIN_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "args_util.h"
#include "dp_cli.h"
#include "mhsa_train.h"

typedef struct train_args {
    mhsa_task task;
    int heads, d_model, seq_len, vocab;
    int epochs, steps, batch, threads;
    float lr, weight_decay, clip;
    mhsa_optim_kind optim;
    uint64_t seed;
    mhsa_isa isa;
    const char *heatmap_png, *loss_csv, *save, *load;
    int help;
    int kv_heads, rope_dim, rope_interleaved, window;  // 0: off / default
    int compute;                 // --compute: MHSA_F32 or MHSA_BF16
    float rope_theta;
    dp_args dp;   // data-parallel options (dp_args.c)
} train_args;

// Parses argv into *a (defaults first). Returns CLI_OK, or CLI_USAGE after
// writing one line naming the bad flag or value to err. "--help" sets
// a->help and returns CLI_OK.
int  parse_args(int argc, char **argv, train_args *a, FILE *err);
void print_help(FILE *f);
// ---- terminal output (term.c) ----------------------------------------------

// 1 when the locale says UTF-8 (LC_ALL, LC_CTYPE, LANG): shaded blocks,
// else an ASCII ramp.
int  term_utf8(void);
// The loss curve as a text plot, `width` columns by `height` rows: each
// column is the mean of its share of the n losses.
void plot_losses(FILE *f, const float *loss, int n, int width, int height,
                 int utf8);
// One T x T grid per head of attn (H, T, T) side by side, wrapped to `cols`
// characters; cells above the diagonal (masked) stay blank.
void print_heatmaps(FILE *f, const float *attn, int H, int T, int cols,
                    int utf8);

// ---- PNG (png.c) -----------------------------------------------------------

// Where things are in the heatmap image, so tests can find them.
typedef struct png_layout {
    int width, height;        // whole image, pixels
    int cell;                 // side of one attention cell, pixels
    int cols, rows;           // panels across and down
    int panel_x0, panel_y0;   // top-left pixel of panel 0
    int step_x, step_y;       // from one panel to the next
} png_layout;

png_layout heatmap_layout(int H, int T);
// Colour of attention weight w in [0, 1] (a viridis-like ramp) and of a
// masked cell.
void heatmap_colour(float w, unsigned char rgb[3]);
extern const unsigned char heatmap_masked_rgb[3];
// Writes attn (H, T, T) as an RGB PNG with one labelled panel per head and
// `title` on top (lowercase letters, digits, " .,:=-()/" are drawn).
// Returns 0, or -1 if the image could not be written (or this build has no
// PNG writer: png_available() == 0).
int write_heatmap_png(const char *path, const float *attn, int H, int T,
                      const char *title);
int png_available(void);
// --heatmap-png for both commands: writes the heatmaps and says so on
// stdout, or says on stderr why not. CLI_OK or CLI_FAIL.
int save_heatmap_png(const char *path, const float *attn, int H, int T,
                     const char *title);

// ---- the command (cli.c) ---------------------------------------------------

int mhsa_train_cli(int argc, char **argv);
// The command as one rank of a data-parallel job over comm (mpirun); rank 0
// alone prints. mhsa_train_cli is this with the single-process transport.
int mhsa_train_cli_comm(int argc, char **argv, dp_comm *comm);

#endif

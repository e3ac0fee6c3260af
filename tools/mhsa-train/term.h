// term.h — mhsa-train's text output (term.c): the loss curve as a text
// plot and the heads' attention as shaded grids.
#ifndef MHSA_TRAIN_TERM_H
#define MHSA_TRAIN_TERM_H

#include <stdio.h>

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

#endif

// term.c — text output of mhsa-train: the loss curve as a small plot and the
// attention of each head as a grid of shaded cells.
//
// With a UTF-8 locale the plot uses the eighth blocks U+2581..U+2588 (eight
// levels per text row) and the heatmaps the shades U+2591..U+2593 and the
// full block; otherwise plain ASCII, so a log file or an old terminal still
// shows something readable.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "term.h"

static int has_utf8(const char *s)
{
    if (!s)
        return 0;
    for (; *s; s++)
        if ((s[0] == 'U' || s[0] == 'u') && (s[1] == 'T' || s[1] == 't') &&
            (s[2] == 'F' || s[2] == 'f'))
            return 1;
    return 0;
}

int term_utf8(void)
{
    // The first of these that is set and non-empty decides, as in setlocale.
    const char *vars[] = { "LC_ALL", "LC_CTYPE", "LANG" };
    for (size_t i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return has_utf8(v);
    }
    return 0;
}

void plot_losses(FILE *f, const float *loss, int n, int width, int height,
                 int utf8)
{
    static const char *const eighths[9] = {
        " ", "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586",
        "\u2587", "\u2588",
    };
    if (n < 1 || width < 1 || height < 1)
        return;
    if (width > n)
        width = n;
    enum { MAX_W = 200 };
    if (width > MAX_W)
        width = MAX_W;
    double col[MAX_W];
    double top = 0.0;
    for (int c = 0; c < width; c++) {
        // Column c covers steps [c*n/width, (c+1)*n/width).
        int s0 = (int)((long long)c * n / width);
        int s1 = (int)((long long)(c + 1) * n / width);
        double s = 0.0;
        for (int i = s0; i < s1; i++)
            s += loss[i];
        col[c] = s / (s1 - s0);
        if (col[c] > top)
            top = col[c];
    }
    // A round top for the axis: the next multiple of 0.5 above the maximum.
    top = ceil(top * 2.0) / 2.0;
    if (top <= 0.0)
        top = 1.0;
    fprintf(f, "loss per step (%d steps, each column the mean of about %d)\n",
            n, (n + width - 1) / width);
    for (int r = height - 1; r >= 0; r--) {
        double lo = top * r / height, hi = top * (r + 1) / height;
        if (r == height - 1 || r == 0 || r == height / 2)
            fprintf(f, "%6.2f |", r == 0 ? 0.0 : hi);
        else
            fprintf(f, "       |");
        for (int c = 0; c < width; c++) {
            double v = col[c];
            if (utf8) {
                // Filled area: full cells below the value, a partial one at
                // the value's row.
                int e = v >= hi ? 8 : v <= lo ? 0
                        : (int)floor((v - lo) / (hi - lo) * 8.0 + 0.5);
                if (e == 0 && r == 0 && v > 0.0)
                    e = 1;   // keep tiny final losses visible on the axis
                fputs(eighths[e], f);
            } else {
                fputc(v > lo && v <= hi ? '*' : (r == 0 && v <= lo) ? '_'
                      : ' ', f);
            }
        }
        fputc('\n', f);
    }
    fprintf(f, "       +");
    for (int c = 0; c < width; c++)
        fputc('-', f);
    fprintf(f, "\n        step 1%*d\n", width - 6, n);
}

// Glyph of one cell: weight w in [0, 1], or masked.
static const char *cell(float w, int masked, int utf8)
{
    static const char *const u[5] = { "\u00b7 ", "\u2591\u2591",
                                      "\u2592\u2592", "\u2593\u2593",
                                      "\u2588\u2588" };
    static const char *const a[5] = { ". ", "--", "++", "##", "@@" };
    if (masked)
        return "  ";
    // Level 0 only for weights that round to nothing, so any real attention
    // shows as a shade.
    int lvl = w < 0.05f ? 0 : w < 0.25f ? 1 : w < 0.5f ? 2 : w < 0.75f ? 3 : 4;
    return utf8 ? u[lvl] : a[lvl];
}

void print_heatmaps(FILE *f, const float *attn, int H, int T, int cols,
                    int utf8)
{
    int pw = 2 * T + 3;   // panel width: 2 chars per cell + gap
    int per_row = (cols + 1) / pw;   // the last panel needs no gap
    if (per_row < 1)
        per_row = 1;
    for (int h0 = 0; h0 < H; h0 += per_row) {
        int h1 = h0 + per_row < H ? h0 + per_row : H;
        for (int h = h0; h < h1; h++)
            fprintf(f, "head %-*d", pw - 5, h);
        fputc('\n', f);
        for (int i = 0; i < T; i++) {
            for (int h = h0; h < h1; h++) {
                const float *row = attn + ((size_t)h * T + i) * T;   // (T)
                fputc('|', f);
                for (int j = 0; j < T; j++)
                    fputs(cell(row[j], j > i, utf8), f);
                fputs("| ", f);
            }
            fputc('\n', f);
        }
        fputc('\n', f);
    }
    fprintf(f, "rows: query position, columns: key position; %s\n",
            utf8 ? "\u00b7 <5%, \u2591 <25%, \u2592 <50%, \u2593 <75%, "
                   "\u2588 >=75%"
                 : ". <5%, - <25%, + <50%, # <75%, @ >=75%");
}

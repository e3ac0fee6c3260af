// png.c — the per-head attention heatmaps as a PNG image.
//
// Layout: a title line, then the heads in a grid of up to 4 panels across;
// each panel has a "head N" label above a T x T grid of square cells (row =
// query, column = key). Weights map to a viridis-like ramp (dark purple 0 ->
// yellow 1); masked cells (above the diagonal) are light grey. Labels use a
// small 5x7 bitmap font drawn at 2x. The PNG itself is written by
// stb_image_write (Debian libstb-dev), not by hand.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args_util.h"
#include "png.h"

#if MHSA_HAVE_STB
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop
#endif

enum {
    FONT_W = 5, FONT_H = 7, SCALE = 2,      // glyphs drawn 10 x 14 pixels
    CHAR_ADV = (FONT_W + 1) * SCALE,
    TEXT_H = FONT_H * SCALE,
    MARGIN = 16, GAP = 16, LABEL_GAP = 6,
    MAX_COLS = 4, PANEL_TARGET = 192,        // aim for ~192 px panels
};

// Rows top to bottom, bit 4 = leftmost pixel (HD44780-style 5x7 glyphs).
static const struct { char c; unsigned char rows[FONT_H]; } font[] = {
    { '0', { 0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E } },
    { '1', { 0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E } },
    { '2', { 0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F } },
    { '3', { 0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E } },
    { '4', { 0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02 } },
    { '5', { 0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E } },
    { '6', { 0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E } },
    { '7', { 0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08 } },
    { '8', { 0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E } },
    { '9', { 0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C } },
    { 'a', { 0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F } },
    { 'b', { 0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E } },
    { 'c', { 0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E } },
    { 'd', { 0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F } },
    { 'e', { 0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E } },
    { 'f', { 0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08 } },
    { 'g', { 0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x0E } },
    { 'h', { 0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11 } },
    { 'i', { 0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E } },
    { 'j', { 0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0C } },
    { 'k', { 0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12 } },
    { 'l', { 0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E } },
    { 'm', { 0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11 } },
    { 'n', { 0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11 } },
    { 'o', { 0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E } },
    { 'p', { 0x00, 0x00, 0x1E, 0x11, 0x1E, 0x10, 0x10 } },
    { 'q', { 0x00, 0x00, 0x0D, 0x13, 0x0F, 0x01, 0x01 } },
    { 'r', { 0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10 } },
    { 's', { 0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E } },
    { 't', { 0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06 } },
    { 'u', { 0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D } },
    { 'v', { 0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04 } },
    { 'w', { 0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A } },
    { 'x', { 0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11 } },
    { 'y', { 0x00, 0x00, 0x11, 0x11, 0x0F, 0x01, 0x0E } },
    { 'z', { 0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F } },
    { ':', { 0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00 } },
    { '=', { 0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00 } },
    { '-', { 0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00 } },
    { '.', { 0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C } },
    { ',', { 0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08 } },
    { '(', { 0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02 } },
    { ')', { 0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08 } },
    { '/', { 0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00 } },
};

const unsigned char heatmap_masked_rgb[3] = { 225, 225, 225 };

int png_available(void) { return MHSA_HAVE_STB; }

png_layout heatmap_layout(int H, int T)
{
    png_layout L;
    L.cell = PANEL_TARGET / T;
    if (L.cell < 2)
        L.cell = 2;
    if (L.cell > 24)
        L.cell = 24;
    L.cols = H < MAX_COLS ? H : MAX_COLS;
    L.rows = (H + L.cols - 1) / L.cols;
    int panel = T * L.cell;
    int label_w = CHAR_ADV * 8;   // "head 255" fits above every panel
    int pw = panel > label_w ? panel : label_w;
    L.step_x = pw + GAP;
    L.step_y = TEXT_H + LABEL_GAP + panel + GAP;
    L.panel_x0 = MARGIN;
    L.panel_y0 = MARGIN + TEXT_H + GAP + TEXT_H + LABEL_GAP;
    L.width = 2 * MARGIN + L.cols * pw + (L.cols - 1) * GAP;
    L.height = L.panel_y0 + (L.rows - 1) * L.step_y + panel + MARGIN;
    // The title line needs room too.
    if (L.width < 2 * MARGIN + 40 * CHAR_ADV)
        L.width = 2 * MARGIN + 40 * CHAR_ADV;
    return L;
}

void heatmap_colour(float w, unsigned char rgb[3])
{
    // Five stops of matplotlib's viridis, linearly interpolated.
    static const unsigned char stops[5][3] = {
        { 68, 1, 84 }, { 59, 82, 139 }, { 33, 145, 140 }, { 94, 201, 98 },
        { 253, 231, 37 },
    };
    if (!(w > 0.0f))
        w = 0.0f;   // also maps NaN to the low end
    if (w > 1.0f)
        w = 1.0f;
    float x = w * 4.0f;
    int i = (int)x;
    if (i > 3)
        i = 3;
    float f = x - (float)i;
    for (int c = 0; c < 3; c++)
        rgb[c] = (unsigned char)((float)stops[i][c] +
                                 f * ((float)stops[i + 1][c] -
                                      (float)stops[i][c]) + 0.5f);
}

static void fill_rect(unsigned char *img, int W, int x0, int y0, int w, int h,
                      const unsigned char rgb[3])
{
    for (int y = y0; y < y0 + h; y++)
        for (int x = x0; x < x0 + w; x++)
            memcpy(img + ((size_t)y * W + x) * 3, rgb, 3);
}

static void draw_text(unsigned char *img, int W, int H, int x, int y,
                      const char *s)
{
    static const unsigned char ink[3] = { 20, 20, 20 };
    for (; *s; s++, x += CHAR_ADV) {
        char c = *s;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        const unsigned char *rows = NULL;
        for (size_t g = 0; g < sizeof font / sizeof font[0]; g++)
            if (font[g].c == c)
                rows = font[g].rows;
        if (!rows)
            continue;   // space and anything the font lacks: a blank
        for (int r = 0; r < FONT_H; r++)
            for (int b = 0; b < FONT_W; b++)
                if (rows[r] & (0x10 >> b) && x + (b + 1) * SCALE <= W &&
                    y + (r + 1) * SCALE <= H)
                    fill_rect(img, W, x + b * SCALE, y + r * SCALE, SCALE,
                              SCALE, ink);
    }
}

int write_heatmap_png(const char *path, const float *attn, int H, int T,
                      const char *title)
{
    if (!MHSA_HAVE_STB)
        return -1;
    png_layout L = heatmap_layout(H, T);
    unsigned char *img = malloc((size_t)L.width * (size_t)L.height * 3);
    if (!img)
        return -1;
    memset(img, 255, (size_t)L.width * (size_t)L.height * 3);
    draw_text(img, L.width, L.height, MARGIN, MARGIN, title);
    for (int h = 0; h < H; h++) {
        int x0 = L.panel_x0 + (h % L.cols) * L.step_x;
        int y0 = L.panel_y0 + (h / L.cols) * L.step_y;
        char label[32];
        snprintf(label, sizeof label, "head %d", h);
        draw_text(img, L.width, L.height, x0, y0 - LABEL_GAP - TEXT_H, label);
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) {
                unsigned char rgb[3];
                if (j > i)
                    memcpy(rgb, heatmap_masked_rgb, 3);
                else
                    heatmap_colour(attn[((size_t)h * T + i) * T + j], rgb);
                fill_rect(img, L.width, x0 + j * L.cell, y0 + i * L.cell,
                          L.cell, L.cell, rgb);
            }
    }
    int ok = 0;
#if MHSA_HAVE_STB
    ok = stbi_write_png(path, L.width, L.height, 3, img, L.width * 3);
#else
    (void)path;
#endif
    free(img);
    return ok ? 0 : -1;
}

int save_heatmap_png(const char *path, const float *attn, int H, int T,
                     const char *title)
{
    if (!png_available()) {
        fprintf(stderr, "mhsa-train: --heatmap-png: this build has no PNG "
                "writer (libstb-dev was not found)\n");
        return CLI_FAIL;
    }
    if (write_heatmap_png(path, attn, H, T, title) != 0) {
        fprintf(stderr, "mhsa-train: --heatmap-png: cannot write '%s'\n",
                path);
        return CLI_FAIL;
    }
    printf("heatmaps written to %s\n", path);
    return CLI_OK;
}

// png.h — the heads' attention as a PNG heatmap (png.c), for both of
// mhsa-train's commands.
#ifndef MHSA_TRAIN_PNG_H
#define MHSA_TRAIN_PNG_H

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

#endif

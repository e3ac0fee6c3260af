// layers.h — the layers around the attention block that inference and
// training share (the Llama runner, the GPT), in llm.c's shape:
// each layer's forward and backward side by side in one file, a shape
// comment beside every pointer, N = B*T rows.
//
// Rules shared by every layer:
//  - no allocation: every buffer (and the GEMM scratch) comes from the
//    caller, carved once when the model is made;
//  - backward ADDS into the gradients it is given (parameters and inputs),
//    so the model zeroes its gradients once per backward and a tied or
//    residual gradient simply accumulates;
//  - the bits never depend on the number of OpenMP threads: rows are split
//    over threads only where each row is computed on its own, and every sum
//    over rows (a parameter gradient) runs in row order on one thread, or
//    through the GEMM driver, which never splits K (gemm.h).
#ifndef MHSA_NN_LAYERS_H
#define MHSA_NN_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "gemm/gemm.h"
#include "kernels/kernels.h"

// The layers' loops are plain C that the compiler vectorises. On x86-64
// it builds each marked function twice, for the SSE2 baseline and for AVX2,
// and the loader picks one by CPUID (target_clones: an ifunc; a CPU
// without AVX2, e.g. qemu -cpu Nehalem, gets the baseline). Both versions
// do the same IEEE operations on each element in the same order (no FMA:
// contraction is off project-wide), so the bits are the same either way;
// only the vector width differs (GELU: 2x faster). GCC only: clang 14
// gives each clone's resolver a global name.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(MHSA_NO_CLONES)
#define MHSA_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MHSA_CLONES
#endif

// Threads for a loop over `rows` rows of `width` floats each: 1 for small
// work (a parallel region costs more than it saves), else OpenMP's count
// (through mhsa__pool_threads, the library's fork guard). Every caller
// runs its loop directly, with no OpenMP region, when it gets 1 (an
// `if (nt > 1)` clause alone still enters libgomp for a team of one).
int mhsa__layer_threads(size_t rows, size_t width);

// ---- embedding: x = wte[token] + wpe[t] -----------------------------------
// tokens (N) in [0, V); wte (V, D) and wpe (T.., D) stored as dt (F32
// rows copied, F16 / BF16 rows widened exactly, so the bits are those of
// fp32 tables holding the same values), wpe NULL for rotary positions (no
// position table); x (N, D). Row n's position is pos0 + n % T (a full
// forward: pos0 0 and N = B*T; a cached step: pos0 the cache's length).
void mhsa__embed_forward(const mhsa_kernels *k, float *x,
                         const int32_t *tokens, const void *wte,
                         const void *wpe, mhsa_dtype dt, size_t N, size_t T,
                         size_t pos0, size_t D);
// dwte (V, D) += scatter of dx by token; dwpe (T.., D) += dx summed over
// the batch (skipped when NULL). Row order: the bits of a token that
// repeats do not depend on threads.
void mhsa__embed_backward(float *dwte, float *dwpe, const float *dx,
                          const int32_t *tokens, size_t B, size_t T,
                          size_t D);

// ---- LayerNorm: y = (x - mean) * rstd * w + b, eps 1e-5 --------------------
// y (N, D); mean, rstd (N) saved for the backward; x (N, D); w, b (D).
void mhsa__layernorm_forward(float *y, float *mean, float *rstd,
                             const float *x, const float *w, const float *b,
                             size_t N, size_t D);
// dx (N, D) += ...; dw, db (D) += ...; dy (N, D); x, mean, rstd as saved.
void mhsa__layernorm_backward(float *dx, float *dw, float *db,
                              const float *dy, const float *x,
                              const float *w, const float *mean,
                              const float *rstd, size_t N, size_t D);

// ---- RMSNorm: y = x / sqrt(mean(x^2) + eps) * w (Llama) --------------------
// y (N, D); x (N, D); w (D). Forward only.
void mhsa__rmsnorm_forward(float *y, const float *x, const float *w,
                           size_t N, size_t D, float eps);

// ---- linear: y = x W^T + b (PyTorch's nn.Linear, W (OC, C)) ----------------
// y (N, OC); x (N, C); w (OC, C); b (OC) or NULL. With add != NULL the
// result is add + b + x W^T (a residual fused into the GEMM); add may be y.
// cdt: the products' compute dtype (mhsa_sgemm_cd); with MHSA_BF16 a single
// row goes through the GEMM too (its packers round, gemv would not).
void mhsa__linear_forward(const mhsa_kernels *k, const mhsa_gemm_scratch *gs,
                          mhsa_dtype cdt, float *y, const float *add,
                          const float *x, const float *w, const float *b,
                          size_t N, size_t C, size_t OC);
// The same with w stored as wdt (fp32, F16 or BF16: 16-bit weights), through
// the GEMM and matrix-vector kernels of the block's projections: one row
// (cdt MHSA_F32) streams the 16-bit rows with mhsa_gemv_rows_dt, more rows
// go through mhsa_sgemm_cd, which widens W one packed block at a time (so
// its bits are those of an fp32 W holding the same values). MHSA_F32 is
// mhsa__linear_forward.
void mhsa__linear_forward_dt(const mhsa_kernels *k,
                             const mhsa_gemm_scratch *gs, mhsa_dtype cdt,
                             float *y, const float *add, const float *x,
                             const void *w, mhsa_dtype wdt, const float *b,
                             size_t N, size_t C, size_t OC);
// dx (N, C) = or += dy W (accumulate_dx), skipped when NULL; dw (OC, C) +=
// dy^T x; db (OC) += column sums of dy (skipped when NULL).
void mhsa__linear_backward(const mhsa_kernels *k,
                           const mhsa_gemm_scratch *gs, mhsa_dtype cdt,
                           float *dx, float *dw,
                           float *db, const float *dy, const float *x,
                           const float *w, size_t N, size_t C, size_t OC,
                           int accumulate_dx);

// ---- GELU, tanh form (GPT-2; PyTorch's approximate='tanh') -----------------
// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), n elements; with
// dydx != NULL also dydx = gelu'(x), for the backward (dydx may be x: the
// input is not needed after that, so training keeps the derivative in its
// place instead of recomputing tanh in the backward).
void mhsa__gelu_forward(float *y, float *dydx, const float *x, size_t n);
// Elements [i0, i1) of y only (no derivative): a thread's share of a row
// in a region of its caller's; elementwise, so the same bits.
void mhsa__gelu_forward_range(float *y, const float *x, size_t i0,
                              size_t i1);
// dx (n) = dy * dydx, dydx as the forward saved it. The one layer that
// writes instead of adding: it runs in place (dx == dy) on the MLP's hidden
// gradient, which nothing else adds to.
void mhsa__gelu_backward(float *dx, const float *dydx, const float *dy,
                         size_t n);
// ---- SwiGLU gate (Llama's MLP): h = silu(g) * u, n elements ---------------
// h may be g or u. Forward only.
void mhsa__swiglu_forward(float *h, const float *g, const float *u, size_t n);
// Elements [i0, i1) only, as mhsa__gelu_forward_range.
void mhsa__swiglu_forward_range(float *h, const float *g, const float *u,
                                size_t i0, size_t i1);

// ---- GeGLU gate (Gemma's MLP): h = gelu_tanh(g) * u, n elements -----------
// GELU in the tanh form above; h may be g or u. Forward only.
void mhsa__geglu_forward(float *h, const float *g, const float *u, size_t n);
// Elements [i0, i1) only, as mhsa__gelu_forward_range.
void mhsa__geglu_forward_range(float *h, const float *g, const float *u,
                               size_t i0, size_t i1);

// The tanh used by the GELU (exposed for its accuracy test).
float mhsa__tanh_approx(float x);

#endif

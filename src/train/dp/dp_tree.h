// dp_tree.h — the one fixed summation tree of data-parallel training.
//
// A batch's gradient is the sum of its G groups' gradients. Floating-point
// addition is not associative, so the bits of that sum depend on how it is
// bracketed; here the bracketing depends on G alone, never on how many
// ranks computed the groups. The tree over leaves [0, G) splits a node
// [lo, hi) at lo + the largest power of two below hi - lo:
//
//   G = 4:  ((g0 + g1) + (g2 + g3))
//   G = 6:  (((g0 + g1) + (g2 + g3)) + (g4 + g5))
//   G = 3:  ((g0 + g1) + g2)
//
// With this split every aligned block [k 2^j, (k+1) 2^j) inside [0, G) is a
// node of the tree, so a rank holding groups [a, b) can add up the whole
// nodes inside its range by itself (mhsa__dp_tree_cover) and send those partial
// sums instead of each group's gradient: the receiver finishes the same
// tree, and the result is the same bits whatever the number of ranks.
// (When P divides G and both are powers of two, each rank's range is one
// node: one vector per rank.)
#ifndef MHSA_DP_TREE_H
#define MHSA_DP_TREE_H

#include <stddef.h>

// Where node [lo, hi) (hi - lo >= 2) splits: lo + the largest power of two
// strictly below hi - lo.
int mhsa__dp_tree_split(int lo, int hi);

// Scratch vectors mhsa__dp_tree_sum needs for a node of n leaves: the height of
// its tree, ceil(log2 n).
int mhsa__dp_tree_height(int n);

// The nodes of the tree over [0, G) that exactly cover [a, b)
// (0 <= a < b <= G), left to right: node i is [lo[i], hi[i]). At most cap
// are written; returns how many there are (which may exceed cap: then the
// caller's arrays were too small). 2 * height + 2 always suffices.
int mhsa__dp_tree_cover(int G, int a, int b, int *lo, int *hi, int cap);

// Where a node's vector comes from. Returns 1 and sets *v when [lo, hi) is
// a node this source has whole (a leaf it computed into out, or a partial
// sum it received: then *v points to it and out is untouched); 0 when the
// node must be split and summed; -1 on error (mhsa_last_error set).
typedef int (*dp_tree_source)(void *ctx, int lo, int hi, float *out,
                              const float **v);

// The sum of leaves [lo, hi) of len floats each by the fixed tree, with the
// vectors of whole nodes taken from src. *res is out (or a vector of src, when
// [lo, hi) itself is one). scratch holds mhsa__dp_tree_height(hi - lo) vectors
// of len floats; out and scratch must not overlap src's vectors. Each sum is
// elementwise (left + right), so threads cannot change a bit. Returns 0, or -1
// when src failed.
int mhsa__dp_tree_sum(int lo, int hi, size_t len, dp_tree_source src, void *ctx,
                      float *out, float *const *scratch, const float **res);

#endif

// dp_ckpt.c — checkpoints of the data-parallel trainer (mhsa_dp_save,
// mhsa_dp_load).
//
// A checkpoint is one .safetensors file written by rank 0 alone: the
// parameters under the model's names (so --load can read it as plain
// weights too), the AdamW moments as two flat tensors "optim.m" and
// "optim.v" (n_params each, in parameter order: the layout of the GPT's own
// checkpoints, mhsa_gpt_save), and in __metadata__ the step, the optimiser
// and the number of groups, then the caller's entries (data position,
// schedule, ...). Nothing in it depends on the number of ranks, so a run
// can resume on any other number.
//
// Collectives stay in lock step on every path: whatever fails on one rank
// (memory, the file on rank 0) is first agreed on by all, and then every
// rank returns an error together instead of some waiting forever.
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"
#include "core/status.h"
#include "core/alloc.h"
#include "io/safetensors.h"

static const char *const optim_names[] = { "adamw", "sgd" };
static const char *const mom_names[2] = { "optim.m", "optim.v" };

// 1 when every rank passed ok != 0 (collective: one 8-byte slot per rank,
// in the hash buffer).
static int all_ok(mhsa_dp_trainer *dp, int ok, int *comm_failed)
{
    mhsa_dp_comm *c = dp->comm;
    for (int q = 0; q < c->size; q++)
        dp->hashes[q] = 0;
    dp->hashes[c->rank] = ok ? 1 : 0;
    if (c->ops->allgatherv(c, dp->hashes, dp->hcount, dp->hdispl)) {
        *comm_failed = 1;
        return 0;
    }
    for (int q = 0; q < c->size; q++)
        if (!dp->hashes[q])
            return 0;
    return 1;
}

// The arguments of mhsa_dp_save and mhsa_dp_load (checked on each rank
// before any collective): dp, path and, when n > 0, the array `what`.
// 1 on rank 0, 0 on the others; -1 after MHSA_ERR_INVALID_ARG naming the
// NULL one.
static int root_of(const char *who, const mhsa_dp_trainer *dp,
                   const char *path, const void *arr, size_t n,
                   const char *what)
{
    if (dp && path && (!n || arr))
        return dp->comm->rank == 0;
    mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", who,
               !dp ? "dp" : !path ? "path" : what);
    return -1;
}

// Rank 0: the file itself, from the parameters and the gathered moments.
static mhsa_status write_file(mhsa_dp_trainer *dp, const char *path,
                              const float *mom, const mhsa_meta *meta,
                              size_t n_meta)
{
    int nt = dp->m.n_tensors, adam = dp->kind == MHSA_OPTIM_ADAMW;
    size_t nten = (size_t)nt + (adam ? 2 : 0), n = dp->m.n_params;
    mhsa_st_tensor *t = mhsa__alloc(nten * sizeof *t);
    mhsa_st_meta *all = mhsa__alloc((n_meta + 3) * sizeof *all);
    mhsa_status st = MHSA_OK;
    if (!t || !all) {
        st = mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", path);
        goto out;
    }
    for (int i = 0; i < nt; i++) {
        const mhsa_dp_tensor *x = &dp->m.tensors[i];
        t[i].name = x->name;
        t[i].ndim = x->ndim;
        t[i].dims[0] = x->dims[0];
        t[i].dims[1] = x->dims[1];
        t[i].data = dp->m.param + x->offset;
    }
    for (int k = 0; adam && k < 2; k++) {
        t[nt + k].name = mom_names[k];
        t[nt + k].ndim = 1;
        t[nt + k].dims[0] = n;
        t[nt + k].data = mom + (size_t)k * n;
    }
    char step[32], groups[16];
    snprintf(step, sizeof step, "%" PRId64, dp->step);
    snprintf(groups, sizeof groups, "%d", dp->G);
    all[0] = (mhsa_st_meta){ "mhsa.step", step };
    all[1] = (mhsa_st_meta){ "mhsa.optim", optim_names[dp->kind] };
    all[2] = (mhsa_st_meta){ "mhsa.grad_groups", groups };
    for (size_t i = 0; i < n_meta; i++)
        all[3 + i] = (mhsa_st_meta){ meta[i].key, meta[i].value };
    st = mhsa__st_write(path, t, nten, all, n_meta + 3);
out:
    mhsa__free(all);
    mhsa__free(t);
    return st;
}

// ---- the state as one process holds it ---------------------------------

mhsa_status mhsa_dp_export_state(mhsa_dp_trainer *dp, float *m, float *v,
                                 int64_t *step)
{
    if (!dp)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_export_state: dp is "
                          "NULL");
    mhsa_dp_comm *c = dp->comm;
    int root = c->rank == 0;
    if (root && (!m || !v || !step))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_export_state: %s is "
                          "NULL on rank 0", !m ? "m" : !v ? "v" : "step");
    size_t s0 = dp->off[c->rank], shard = dp->off[c->rank + 1] - s0;
    // Rank 0's own shard is in place before the gather (its contract).
    if (root) {
        memcpy(m, dp->mom_m, shard * sizeof(float));
        memcpy(v, dp->mom_v, shard * sizeof(float));
        *step = dp->step;
    }
    if (c->ops->gatherv(c, dp->mom_m, m, dp->gcount, dp->gdispl, 0) ||
        c->ops->gatherv(c, dp->mom_v, v, dp->gcount, dp->gdispl, 0))
        return mhsa__dp_comm_fail("mhsa_dp_export_state");
    return MHSA_OK;
}

mhsa_status mhsa_dp_import_state(mhsa_dp_trainer *dp, const float *m,
                                 const float *v, int64_t step)
{
    if (!dp)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_import_state: dp is "
                          "NULL");
    mhsa_dp_comm *c = dp->comm;
    int root = c->rank == 0;
    size_t n = dp->m.n_params;
    // The others receive the whole moments into a temporary and keep
    // their shard (there is no scatter in mhsa_dp_comm: bcast does it).
    float *tmp = root ? NULL : mhsa__alloc(n * sizeof(float));
    int cf = 0;
    if (!all_ok(dp, root ? m && v : tmp != NULL, &cf)) {
        mhsa__free(tmp);
        return cf ? mhsa__dp_comm_fail("mhsa_dp_import_state")
                  : mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_dp_import_state: no "
                               "moments on rank 0 or no memory on a rank");
    }
    size_t s0 = dp->off[c->rank], shard = dp->off[c->rank + 1] - s0;
    int bad = c->ops->bcast(c, dp->m.param, n * sizeof(float), 0) ||
              c->ops->bcast(c, &step, sizeof step, 0);
    for (int k = 0; k < 2 && !bad; k++) {
        const float *src = k ? v : m;
        float *dst = k ? dp->mom_v : dp->mom_m;
        // bcast only reads the root's buffer.
        bad = c->ops->bcast(c, root ? (void *)(uintptr_t)src : tmp,
                            n * sizeof(float), 0);
        if (!bad)
            memcpy(dst, (root ? src : tmp) + s0, shard * sizeof(float));
    }
    mhsa__free(tmp);
    if (bad)
        return mhsa__dp_comm_fail("mhsa_dp_import_state");
    dp->step = step;
    return MHSA_OK;
}

// ---- checkpoints -----------------------------------------------------------

mhsa_status mhsa_dp_save(mhsa_dp_trainer *dp, const char *path,
                         const mhsa_meta *meta, size_t n_meta)
{
    int root = root_of("mhsa_dp_save", dp, path, meta, n_meta, "meta");
    if (root < 0)
        return MHSA_ERR_INVALID_ARG;
    // Rank 0 gathers both moments into (2, n); the others send theirs.
    size_t n = dp->m.n_params;
    float *mom = root ? mhsa__alloc(2 * n * sizeof(float)) : NULL;
    int cf = 0;
    if (!all_ok(dp, !root || mom, &cf)) {
        mhsa__free(mom);
        return cf ? mhsa__dp_comm_fail("mhsa_dp_save")
                  : mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_dp_save: rank 0 has "
                               "no memory for the optimiser state");
    }
    int64_t step = 0;
    mhsa_status st = mhsa_dp_export_state(dp, mom, mom ? mom + n : NULL, &step);
    if (st != MHSA_OK) {
        mhsa__free(mom);
        return st;
    }
    if (root)
        st = write_file(dp, path, mom, meta, n_meta);
    mhsa__free(mom);
    // Every rank learns how rank 0 fared.
    mhsa_dp_comm *c = dp->comm;
    int32_t code = (int32_t)st;
    char msg[256];
    snprintf(msg, sizeof msg, "%s", root ? mhsa_last_error() : "");
    if (c->ops->bcast(c, &code, sizeof code, 0) ||
        c->ops->bcast(c, msg, sizeof msg, 0))
        return mhsa__dp_comm_fail("mhsa_dp_save");
    if (code != MHSA_OK && !root)
        return mhsa__fail((mhsa_status)code, "%s", msg);
    return (mhsa_status)code;
}

// ---- resuming --------------------------------------------------------------

// What rank 0 sends besides the tensors.
typedef struct load_header {
    int64_t step;
    int32_t status;
    char msg[256];
} load_header;

// Rank 0: reads and checks everything into tmp (3, n): parameters, then
// the two moments.
static mhsa_status read_file(mhsa_dp_trainer *dp, const char *path, float *tmp,
                             int64_t *step, mhsa_meta_value *want,
                             size_t n_want)
{
    mhsa_st_file *f = NULL;
    mhsa_status st = mhsa__st_open(path, &f);
    if (st != MHSA_OK)
        return st;
    int adam = dp->kind == MHSA_OPTIM_ADAMW;
    const char *opt = mhsa__st_meta(f, "mhsa.optim");
    const char *ss = mhsa__st_meta(f, "mhsa.step");
    char *end = NULL;
    errno = 0;
    long long sv = ss ? strtoll(ss, &end, 10) : -1;
    if (!opt || !ss) {
        st = mhsa__fail(MHSA_ERR_FORMAT, "%s: not a training checkpoint (no "
                        "mhsa.%s in its metadata)", path,
                        !opt ? "optim" : "step");
        goto out;
    }
    if (strcmp(opt, optim_names[dp->kind]) != 0) {
        st = mhsa__fail(MHSA_ERR_FORMAT, "%s: saved with optimiser %s, this "
                        "run uses %s", path, opt, optim_names[dp->kind]);
        goto out;
    }
    if (errno || *end || sv < 0 || !*ss) {
        st = mhsa__fail(MHSA_ERR_FORMAT, "%s: mhsa.step = '%s' is not a "
                        "step count", path, ss);
        goto out;
    }
    *step = sv;
    size_t n = dp->m.n_params;
    for (int i = 0; i < dp->m.n_tensors && st == MHSA_OK; i++) {
        const mhsa_dp_tensor *x = &dp->m.tensors[i];
        st = mhsa__st_read_f32(f, x->name, x->ndim, x->dims, tmp + x->offset);
    }
    for (int k = 0; adam && k < 2 && st == MHSA_OK; k++)
        st = mhsa__st_read_f32(f, mom_names[k], 1, &n, tmp + (k + 1) * n);
    if (st != MHSA_OK) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s", mhsa_last_error());
        mhsa__fail(st, "%s: %s", path, msg);
    }
    for (size_t i = 0; i < n_want && st == MHSA_OK; i++) {
        const char *v = mhsa__st_meta(f, want[i].key);
        want[i].present = v != NULL;
        snprintf(want[i].value, sizeof want[i].value, "%s", v ? v : "");
        if (v && strlen(v) >= sizeof want[i].value)
            st = mhsa__fail(MHSA_ERR_FORMAT, "%s: metadata %s is too long",
                            path, want[i].key);
    }
out:
    mhsa__st_close(f);
    return st;
}

mhsa_status mhsa_dp_load(mhsa_dp_trainer *dp, const char *path,
                         mhsa_meta_value *want, size_t n_want)
{
    int root = root_of("mhsa_dp_load", dp, path, want, n_want, "want");
    if (root < 0)
        return MHSA_ERR_INVALID_ARG;
    // Rank 0 reads everything into (3, n) first: a bad file changes nothing.
    size_t n = dp->m.n_params;
    float *tmp = root ? mhsa__alloc(3 * n * sizeof(float)) : NULL;
    load_header h;
    memset(&h, 0, sizeof h);
    if (root) {
        h.status = tmp ? (int32_t)read_file(dp, path, tmp, &h.step, want,
                                            n_want)
                       : (int32_t)mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no "
                                             "memory to read it", path);
        snprintf(h.msg, sizeof h.msg, "%s", mhsa_last_error());
    }
    mhsa_dp_comm *c = dp->comm;
    if (c->ops->bcast(c, &h, sizeof h, 0)) {
        mhsa__free(tmp);
        return mhsa__dp_comm_fail("mhsa_dp_load");
    }
    if (h.status != MHSA_OK) {
        mhsa__free(tmp);
        return root ? (mhsa_status)h.status
                    : mhsa__fail((mhsa_status)h.status, "%s", h.msg);
    }
    int bad = 0;
    for (size_t i = 0; i < n_want && !bad; i++)
        bad = c->ops->bcast(c, want[i].value, sizeof want[i].value, 0) ||
              c->ops->bcast(c, &want[i].present, sizeof want[i].present, 0);
    if (bad) {
        mhsa__free(tmp);
        return mhsa__dp_comm_fail("mhsa_dp_load");
    }
    // Rank 0's parameters become the model's, then everyone's.
    if (root)
        memcpy(dp->m.param, tmp, n * sizeof(float));
    mhsa_status st = mhsa_dp_import_state(dp, tmp ? tmp + n : NULL,
                                          tmp ? tmp + 2 * n : NULL, h.step);
    mhsa__free(tmp);
    return st;
}

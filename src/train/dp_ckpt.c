// dp_ckpt.c — checkpoints of the data-parallel trainer (dp_save, dp_load).
//
// A checkpoint is one .safetensors file written by rank 0 alone: the
// parameters under the model's names (so --load can read it as plain
// weights too), the AdamW moments under "optimizer.exp_avg.<name>" and
// "optimizer.exp_avg_sq.<name>" (PyTorch's names for them), and in
// __metadata__ the step, the optimiser and the number of groups, then the
// caller's entries (data position, schedule, ...). Nothing in it depends
// on the number of ranks, so a run can resume on any other number.
//
// Collectives stay in lock step on every path: whatever fails on one rank
// (memory, the file on rank 0) is first agreed on by all, and then every
// rank returns an error together instead of some waiting forever.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"
#include "mhsa_internal.h"

static const char *const optim_names[] = { "adamw", "sgd" };
static const char *const mom_prefix[2] = { "optimizer.exp_avg.",
                                           "optimizer.exp_avg_sq." };

// 1 when every rank passed ok != 0 (collective: one 8-byte slot per rank,
// in the hash buffer).
static int all_ok(dp_trainer *dp, int ok, int *comm_failed)
{
    dp_comm *c = dp->comm;
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

// "<prefix><name>" for every tensor and both prefixes, in one allocation.
static char *moment_names(const dp_trainer *dp, const char **names)
{
    size_t cap = 0;
    for (int t = 0; t < dp->m.n_tensors; t++)
        cap += 2 * strlen(dp->m.tensors[t].name) + 64;
    char *store = mhsa__alloc(cap), *p = store;
    if (!store)
        return NULL;
    for (int k = 0; k < 2; k++)
        for (int t = 0; t < dp->m.n_tensors; t++) {
            names[k * dp->m.n_tensors + t] = p;
            p += sprintf(p, "%s%s", mom_prefix[k], dp->m.tensors[t].name) + 1;
        }
    return store;
}

// Rank 0: the file itself, from the parameters and the gathered moments.
static mhsa_status write_file(dp_trainer *dp, const char *path,
                              const float *mom, const mhsa_st_meta *meta,
                              size_t n_meta)
{
    int nt = dp->m.n_tensors, adam = dp->kind == MHSA_OPTIM_ADAMW;
    size_t nten = (size_t)nt * (adam ? 3 : 1);
    mhsa_st_tensor *t = mhsa__alloc(nten * sizeof *t);
    const char **mnames = mhsa__alloc(2 * (size_t)nt * sizeof *mnames);
    mhsa_st_meta *all = mhsa__alloc((n_meta + 3) * sizeof *all);
    char *store = mnames ? moment_names(dp, mnames) : NULL;
    mhsa_status st = MHSA_OK;
    if (!t || !mnames || !all || !store) {
        st = mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", path);
        goto out;
    }
    size_t n = dp->m.n_params;
    for (int i = 0; i < nt; i++) {
        const dp_tensor *x = &dp->m.tensors[i];
        for (int k = 0; k < (adam ? 3 : 1); k++) {
            mhsa_st_tensor *y = &t[(size_t)k * (size_t)nt + (size_t)i];
            y->name = k ? mnames[(k - 1) * nt + i] : x->name;
            y->ndim = x->ndim;
            y->dims[0] = x->dims[0];
            y->dims[1] = x->dims[1];
            y->data = k ? mom + (size_t)(k - 1) * n + x->offset
                        : dp->m.param + x->offset;
        }
    }
    char step[32], groups[16];
    snprintf(step, sizeof step, "%" PRId64, dp->step);
    snprintf(groups, sizeof groups, "%d", dp->G);
    all[0] = (mhsa_st_meta){ "mhsa.step", step };
    all[1] = (mhsa_st_meta){ "mhsa.optim", optim_names[dp->kind] };
    all[2] = (mhsa_st_meta){ "mhsa.grad_groups", groups };
    if (n_meta)
        memcpy(all + 3, meta, n_meta * sizeof *meta);
    st = mhsa__st_write(path, t, nten, all, n_meta + 3);
out:
    mhsa__free(store);
    mhsa__free(all);
    mhsa__free(mnames);
    mhsa__free(t);
    return st;
}

mhsa_status dp_save(dp_trainer *dp, const char *path,
                    const mhsa_st_meta *meta, size_t n_meta)
{
    if (!dp || !path || (n_meta && !meta))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "dp_save: %s is NULL",
                          !dp ? "dp" : !path ? "path" : "meta");
    dp_comm *c = dp->comm;
    int root = c->rank == 0, adam = dp->kind == MHSA_OPTIM_ADAMW;
    size_t n = dp->m.n_params;
    // Rank 0 gathers both moments into (2, n); the others send theirs.
    float *mom = root && adam ? mhsa__alloc(2 * n * sizeof(float)) : NULL;
    int cf = 0;
    if (!all_ok(dp, !(root && adam) || mom, &cf)) {
        mhsa__free(mom);
        return cf ? dp__comm_fail("dp_save")
                  : mhsa__fail(MHSA_ERR_NO_MEMORY, "dp_save: rank 0 has no "
                               "memory for the optimiser state");
    }
    mhsa_status st = MHSA_OK;
    if (adam) {
        size_t s0 = dp->off[c->rank], shard = dp->off[c->rank + 1] - s0;
        if (root) {
            memcpy(mom, dp->mom_m, shard * sizeof(float));
            memcpy(mom + n, dp->mom_v, shard * sizeof(float));
        }
        if (c->ops->gatherv(c, dp->mom_m, mom, dp->gcount, dp->gdispl, 0) ||
            c->ops->gatherv(c, dp->mom_v, mom ? mom + n : NULL, dp->gcount,
                            dp->gdispl, 0)) {
            mhsa__free(mom);
            return dp__comm_fail("dp_save");
        }
    }
    if (root)
        st = write_file(dp, path, mom, meta, n_meta);
    mhsa__free(mom);
    // Every rank learns how rank 0 fared.
    int32_t code = (int32_t)st;
    char msg[256];
    snprintf(msg, sizeof msg, "%s", root ? mhsa_last_error() : "");
    if (c->ops->bcast(c, &code, sizeof code, 0) ||
        c->ops->bcast(c, msg, sizeof msg, 0))
        return dp__comm_fail("dp_save");
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
static mhsa_status read_file(dp_trainer *dp, const char *path, float *tmp,
                             int64_t *step, dp_meta_value *want,
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
    const char **mnames = mhsa__alloc(2 * (size_t)dp->m.n_tensors *
                                      sizeof *mnames);
    char *store = mnames ? moment_names(dp, mnames) : NULL;
    if (!store) {
        mhsa__free(mnames);
        st = mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", path);
        goto out;
    }
    for (int k = 0; k < (adam ? 3 : 1) && st == MHSA_OK; k++)
        for (int i = 0; i < dp->m.n_tensors && st == MHSA_OK; i++) {
            const dp_tensor *x = &dp->m.tensors[i];
            const char *name = k ? mnames[(k - 1) * dp->m.n_tensors + i]
                                 : x->name;
            st = mhsa__st_read_f32(f, name, x->ndim, x->dims,
                                   tmp + (size_t)k * n + x->offset);
            if (st != MHSA_OK) {
                char msg[200];
                snprintf(msg, sizeof msg, "%s", mhsa_last_error());
                mhsa__fail(st, "%s: %s", path, msg);
            }
        }
    mhsa__free(store);
    mhsa__free(mnames);
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

mhsa_status dp_load(dp_trainer *dp, const char *path, dp_meta_value *want,
                    size_t n_want)
{
    if (!dp || !path || (n_want && !want))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "dp_load: %s is NULL",
                          !dp ? "dp" : !path ? "path" : "want");
    dp_comm *c = dp->comm;
    int root = c->rank == 0;
    size_t n = dp->m.n_params;
    float *tmp = mhsa__alloc(3 * n * sizeof(float));
    int cf = 0;
    if (!all_ok(dp, tmp != NULL, &cf)) {
        mhsa__free(tmp);
        return cf ? dp__comm_fail("dp_load")
                  : mhsa__fail(MHSA_ERR_NO_MEMORY, "dp_load: no memory for "
                               "the checkpoint on some rank");
    }
    load_header h;
    memset(&h, 0, sizeof h);
    if (root) {
        h.status = (int32_t)read_file(dp, path, tmp, &h.step, want, n_want);
        snprintf(h.msg, sizeof h.msg, "%s", mhsa_last_error());
    }
    if (c->ops->bcast(c, &h, sizeof h, 0)) {
        mhsa__free(tmp);
        return dp__comm_fail("dp_load");
    }
    if (h.status != MHSA_OK) {
        mhsa__free(tmp);
        return root ? (mhsa_status)h.status
                    : mhsa__fail((mhsa_status)h.status, "%s", h.msg);
    }
    // From here on only the transport can fail (fatal with MPI anyway).
    int bad = 0;
    for (size_t i = 0; i < n_want && !bad; i++)
        bad = c->ops->bcast(c, want[i].value, sizeof want[i].value, 0) ||
              c->ops->bcast(c, &want[i].present, sizeof want[i].present, 0);
    if (bad || c->ops->bcast(c, tmp, 3 * n * sizeof(float), 0)) {
        mhsa__free(tmp);
        return dp__comm_fail("dp_load");
    }
    size_t s0 = dp->off[c->rank], shard = dp->off[c->rank + 1] - s0;
    memcpy(dp->m.param, tmp, n * sizeof(float));
    memcpy(dp->mom_m, tmp + n + s0, shard * sizeof(float));
    memcpy(dp->mom_v, tmp + 2 * n + s0, shard * sizeof(float));
    dp->step = h.step;
    mhsa__free(tmp);
    return MHSA_OK;
}

// text_cli.c — `mhsa-train --task text`: load the corpus, build (or resume)
// the GPT, train it with a warm-up + cosine schedule while reporting
// train/validation loss, tokens/s and the time left, then show the loss
// curve and the heads of layer 0 and save a checkpoint.
//
// Reproducibility: the weights come from stream(seed, 1) and the batches
// from stream(seed, 2); a checkpoint holds the sampler's state, the step
// and every setting of the schedule, so --resume continues bit for bit.
// Everything is allocated before the first step (the model never
// allocates in forward, backward or step).
//
// Data parallel (mpirun -np P, or --grad-groups G > 1): rank 0 sets up as one
// process would (data, checks, the checkpoint it resumes) and sends the
// settings to the others, which load the same data (its hash must match) and
// build the same model; then dp_run_open broadcasts rank 0's weights and every
// step goes through the data-parallel trainer (mhsa_train.h) on the GPT
// (mhsa_dp_gpt_bind): every rank draws the whole batch from the same stream and
// computes its groups. Checkpoints are the GPT's own files: the optimiser's
// shards are gathered into rank 0's model, which writes them as one process
// would, so a file does not depend on P, resumes on any P (or in one process)
// and loads in mhsa-generate. Rank 0 alone evaluates and prints. With G = 1 in
// one process nothing of this runs: the plain loop, as before.
//
// Exit status: 0 done, 1 a failure while running (e.g. the checkpoint
// cannot be written), 2 bad flags, data or checkpoint — checked before the
// first step, so nothing is written then.
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args_util.h"
#include "dp_run.h"
#include "png.h"
#include "term.h"
#include "text.h"

typedef struct text_run {
    text_args a;
    const char *data;         // the corpus path in use
    mhsa_text *text;
    mhsa_gpt *g;
    int32_t *tok, *tgt;       // (batch, block)
    float *losses, *vals;     // (steps) of this process; vals NAN if none
    float *attn;              // (heads, block, block)
    int64_t step0;            // the step this process started at
    int64_t step_end;         // and the one it stops at
    int warmup;
    uint64_t rng;             // the batch sampler's state
    uint64_t data_hash;
    int tty;
    // Data parallel (dp != NULL) over comm; rank 0 (root) prints.
    mhsa_dp_comm *comm;
    int root;
    mhsa_dp_trainer *dp;
    mhsa_dp_binding *ad;
    mhsa_dp_model dm;
} text_run;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// One line naming the failing step and the library's message.
static int fail(int code, const char *what)
{
    fprintf(stderr, "mhsa-train: %s: %s\n", what, mhsa_last_error());
    return code;
}

// Streams of random numbers, one per purpose (as in cli.c).
static uint64_t stream(uint64_t seed, uint64_t purpose)
{
    return seed * 0x9e3779b97f4a7c15ull + purpose * 0xd1b54a32d192ed03ull;
}

// FNV-1a of the corpus: a resumed run must see the same bytes.
static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

// ---- checkpoint metadata ----------------------------------------------------

// The run's settings and position as text, for __metadata__ ("train.*").
typedef struct run_meta {
    mhsa_meta m[16];
    char v[16][40];
    size_t n;
} run_meta;

static void put(run_meta *rm, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put(run_meta *rm, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rm->v[rm->n], sizeof rm->v[0], fmt, ap);
    va_end(ap);
    rm->m[rm->n].key = key;
    rm->m[rm->n].value = rm->v[rm->n];
    rm->n++;
}

static void make_meta(const text_run *r, run_meta *rm)
{
    const text_args *a = &r->a;
    rm->n = 0;
    put(rm, "train.rng", "%" PRIu64, r->rng);
    put(rm, "train.seed", "%" PRIu64, a->seed);
    put(rm, "train.steps", "%d", a->steps);
    put(rm, "train.batch", "%d", a->batch);
    put(rm, "train.warmup", "%d", r->warmup);
    put(rm, "train.lr", "%.9g", (double)a->lr);
    put(rm, "train.min_lr", "%.9g", (double)a->min_lr);
    put(rm, "train.weight_decay", "%.9g", (double)a->weight_decay);
    put(rm, "train.beta2", "%.9g", (double)a->beta2);
    put(rm, "train.clip", "%.9g", (double)a->clip);
    put(rm, "train.val_fraction", "%.9g", (double)a->val_fraction);
    put(rm, "train.data_bytes", "%zu", mhsa_text_len(r->text, 0) +
        mhsa_text_len(r->text, 1));
    put(rm, "train.data_hash", "%016" PRIx64, r->data_hash);
    // Only when there are groups: a plain run's file stays as it was.
    if (a->grad_groups > 1)
        put(rm, "train.grad_groups", "%d", a->grad_groups);
}

static int save(text_run *r, const char *path)
{
    run_meta rm;
    make_meta(r, &rm);
    if (!r->dp) {
        if (mhsa_gpt_save(r->g, path, 1, rm.m, rm.n) != MHSA_OK)
            return fail(CLI_FAIL, "--save");
        return CLI_OK;
    }
    // Collective: the moments' shards into rank 0's model, whose
    // parameters are every rank's; it writes what one process would.
    int64_t step = 0;
    if (mhsa_dp_export_state(r->dp, r->root ? mhsa_gpt_moment1(r->g) : NULL,
                             r->root ? mhsa_gpt_moment2(r->g) : NULL,
                             &step) != MHSA_OK)
        return dp_run_fail(r->comm, "--save", 0, CLI_FAIL);
    int32_t code = MHSA_OK;
    if (r->root) {
        mhsa_gpt_set_step(r->g, step);
        code = (int32_t)mhsa_gpt_save(r->g, path, 1, rm.m, rm.n);
        if (code != MHSA_OK)
            fail(CLI_FAIL, "--save");
    }
    // Every rank learns how rank 0 fared and returns alike.
    if (r->comm->ops->bcast(r->comm, &code, sizeof code, 0))
        return dp_run_fail(r->comm, "--save", 0, CLI_FAIL);
    return code == MHSA_OK ? CLI_OK : CLI_FAIL;
}

// Reads the "train.*" settings of a checkpoint back into the arguments.
static int read_meta(const char *path, text_run *r, uint64_t *bytes,
                     uint64_t *hash)
{
    text_args *a = &r->a;
    struct { const char *key; char type; void *dst; } keys[] = {
        { "train.rng", 'u', &r->rng }, { "train.seed", 'u', &a->seed },
        { "train.steps", 'i', &a->steps }, { "train.batch", 'i', &a->batch },
        { "train.warmup", 'i', &r->warmup }, { "train.lr", 'f', &a->lr },
        { "train.min_lr", 'f', &a->min_lr },
        { "train.weight_decay", 'f', &a->weight_decay },
        { "train.beta2", 'f', &a->beta2 }, { "train.clip", 'f', &a->clip },
        { "train.val_fraction", 'f', &a->val_fraction },
        { "train.data_bytes", 'u', bytes }, { "train.data_hash", 'x', hash },
    };
    enum { N_KEYS = sizeof keys / sizeof keys[0] };
    mhsa_meta_value want[N_KEYS + 1];
    for (size_t i = 0; i < N_KEYS; i++)
        want[i].key = keys[i].key;
    want[N_KEYS].key = "train.grad_groups";
    if (mhsa_gpt_read_meta(path, want, N_KEYS + 1) != MHSA_OK)
        return fail(CLI_USAGE, "--resume");
    for (size_t i = 0; i < N_KEYS; i++) {
        const char *v = want[i].present ? want[i].value : NULL;
        char *end = NULL;
        errno = 0;
        if (v && keys[i].type == 'u')
            *(uint64_t *)keys[i].dst = strtoull(v, &end, 10);
        else if (v && keys[i].type == 'x')
            *(uint64_t *)keys[i].dst = strtoull(v, &end, 16);
        else if (v && keys[i].type == 'i')
            *(int *)keys[i].dst = (int)strtol(v, &end, 10);
        else if (v)
            *(float *)keys[i].dst = strtof(v, &end);
        if (!v || !*v || *end || errno) {
            fprintf(stderr, "mhsa-train: --resume %s: not a training "
                    "checkpoint (metadata '%s' missing or invalid)\n", path,
                    keys[i].key);
            return CLI_USAGE;
        }
    }
    // The groups fix how a step's gradient is summed: the checkpoint's,
    // unless the command line says otherwise (then the rest of the run
    // rounds differently from an uninterrupted one). Absent: 1.
    const char *v = want[N_KEYS].present ? want[N_KEYS].value : NULL;
    char *end = NULL;
    long G = v ? strtol(v, &end, 10) : 1;
    if (v && (!*v || *end || G < 1 || G > 4096)) {
        fprintf(stderr, "mhsa-train: --resume %s: metadata "
                "'train.grad_groups' = '%s' is invalid\n", path, v);
        return CLI_USAGE;
    }
    if (!a->grad_groups)
        a->grad_groups = (int)G;
    else if (a->grad_groups != G)
        fprintf(stderr, "mhsa-train: note: --grad-groups %d, the checkpoint "
                "was trained with %ld: the rest of the run will not be the "
                "uninterrupted run's bits\n", a->grad_groups, G);
    return CLI_OK;
}

// ---- setting up ------------------------------------------------------------

static int load_data(text_run *r)
{
    const text_args *a = &r->a;
    r->data = a->data ? a->data : default_corpus();
    if (!r->data) {
        fprintf(stderr, "mhsa-train: no text to train on: the fortune files "
                "of Debian's 'fortunes' package are not installed "
                "(/usr/share/games/fortunes; apt-get install fortunes), "
                "and no --data FILE was given\n");
        return CLI_USAGE;
    }
    if (mhsa_text_load(r->data, a->val_fraction, &r->text) != MHSA_OK) {
        fprintf(stderr, "mhsa-train: --data %s\n", mhsa_last_error());
        return CLI_USAGE;
    }
    size_t nt = mhsa_text_len(r->text, 0), nv = mhsa_text_len(r->text, 1);
    if (nt < (size_t)a->block + 1 || nv < (size_t)a->block + 1) {
        fprintf(stderr, "mhsa-train: --data %s: %zu bytes, too short for "
                "one block of %d + 1 bytes to train on and one to validate "
                "on (%zu and %zu bytes with --val-fraction %g)\n", r->data,
                nt + nv, a->block, nt, nv, (double)a->val_fraction);
        return CLI_USAGE;
    }
    r->data_hash = fnv1a(mhsa_text_bytes(r->text), nt + nv);
    return CLI_OK;
}

static int make_model(text_run *r, const mhsa_gpt_config *c)
{
    if (mhsa_gpt_create(c, &r->g) != MHSA_OK)
        return fail(CLI_USAGE, "creating the model");
    return CLI_OK;
}

static mhsa_gpt_config config_of(const text_args *a)
{
    mhsa_gpt_config c = { 0 };
    c.vocab = 256;
    c.n_layer = a->layers;
    c.n_embd = a->embd;
    c.n_head = a->heads;
    c.block_size = a->block;
    c.max_batch = a->batch;
    c.rope_dim = a->rope;
    c.tie_embeddings = a->tie;
    c.no_proj = a->no_proj;
    c.compute_dtype = a->compute;
    return c;
}

// The arguments of the model a checkpoint holds, from its configuration;
// the compute dtype goes the other way (a run's choice, never stored).
static void args_of(text_args *a, mhsa_gpt_config *c)
{
    a->layers = c->n_layer;
    a->embd = c->n_embd;
    a->heads = c->n_head;
    a->block = c->block_size;
    a->rope = c->rope_dim;
    a->tie = c->tie_embeddings;
    a->no_proj = c->no_proj;
    c->compute_dtype = a->compute;
}

// --resume: everything but the data comes from the checkpoint.
static int setup_resume(text_run *r)
{
    text_args *a = &r->a;
    mhsa_gpt_config c;
    if (mhsa_gpt_read_config(a->resume, &c) != MHSA_OK)
        return fail(CLI_USAGE, "--resume");
    uint64_t bytes = 0, hash = 0;
    int rc = read_meta(a->resume, r, &bytes, &hash);
    if (rc != CLI_OK)
        return rc;
    args_of(a, &c);
    if (a->batch < 1 || a->steps < 1 || c.vocab != 256) {
        fprintf(stderr, "mhsa-train: --resume %s: not a checkpoint of "
                "--task text\n", a->resume);
        return CLI_USAGE;
    }
    if (a->batch % a->grad_groups) {
        fprintf(stderr, "mhsa-train: --grad-groups %d does not divide the "
                "checkpoint's --batch %d\n", a->grad_groups, a->batch);
        return CLI_USAGE;
    }
    c.max_batch = a->batch;
    if ((rc = load_data(r)) != CLI_OK || (rc = make_model(r, &c)) != CLI_OK)
        return rc;
    if (hash != r->data_hash ||
        bytes != mhsa_text_len(r->text, 0) + mhsa_text_len(r->text, 1)) {
        fprintf(stderr, "mhsa-train: --resume %s: the checkpoint was "
                "trained on other data than %s (%" PRIu64 " bytes, hash "
                "%016" PRIx64 ")\n", a->resume, r->data, bytes, hash);
        return CLI_USAGE;
    }
    if (mhsa_gpt_load(r->g, a->resume, 1) != MHSA_OK)
        return fail(CLI_USAGE, "--resume");
    r->step0 = mhsa_gpt_get_step(r->g);
    return CLI_OK;
}

static int setup_fresh(text_run *r)
{
    text_args *a = &r->a;
    int rc = load_data(r);
    if (rc != CLI_OK)
        return rc;
    if (!a->grad_groups)
        a->grad_groups = 1;
    if (a->given & TF_EPOCHS) {
        double tokens = (double)mhsa_text_len(r->text, 0) * a->epochs;
        double per = (double)a->batch * a->block;
        double s = ceil(tokens / per);
        a->steps = s > 1e8 ? 100000000 : (int)s;
    }
    r->warmup = a->warmup >= 0 ? a->warmup
                               : (a->steps / 20 < 100 ? a->steps / 20 : 100);
    mhsa_gpt_config c = config_of(a);
    if ((rc = make_model(r, &c)) != CLI_OK)
        return rc;
    if (mhsa_gpt_init_random(r->g, stream(a->seed, 1)) != MHSA_OK)
        return fail(CLI_FAIL, "initialising the model");
    r->rng = stream(a->seed, 2);
    return CLI_OK;
}

// A file we will write at the end must be writable now: finding out after
// the training would lose it.
static int check_writable(const char *flag, const char *path)
{
    if (!path)
        return CLI_OK;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "mhsa-train: %s %s: is a directory\n", flag, path);
        return CLI_USAGE;
    }
    char dir[4096] = ".";
    const char *slash = strrchr(path, '/');
    if (slash == path) {
        strcpy(dir, "/");
    } else if (slash) {
        size_t len = (size_t)(slash - path);
        len = len < sizeof dir ? len : sizeof dir - 1;
        memcpy(dir, path, len);
        dir[len] = '\0';
    }
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "mhsa-train: %s %s: cannot write in '%s': %s\n", flag,
                path, dir, strerror(errno));
        return CLI_USAGE;
    }
    return CLI_OK;
}

// --threads and --isa, before any model exists.
static int runtime(const text_args *a)
{
    if (a->threads > 0)
        omp_set_num_threads(a->threads);
    if (a->isa != MHSA_ISA_AUTO && mhsa_select_isa(a->isa) != MHSA_OK) {
        fprintf(stderr, "mhsa-train: --isa %s: not available on this "
                "machine or build\n", mhsa_isa_name(a->isa));
        return CLI_USAGE;
    }
    return CLI_OK;
}

static int alloc_run(text_run *r);

static int setup(text_run *r)
{
    text_args *a = &r->a;
    int rc = runtime(a);
    if (rc != CLI_OK)
        return rc;
    if ((rc = check_writable("--save", a->save)) != CLI_OK ||
        (rc = check_writable("--loss-csv", a->loss_csv)) != CLI_OK ||
        (rc = check_writable("--heatmap-png", a->heatmap_png)) != CLI_OK ||
        (rc = check_writable("--save-init", a->save_init)) != CLI_OK)
        return rc;
    rc = a->resume ? setup_resume(r) : setup_fresh(r);
    if (rc != CLI_OK)
        return rc;
    if (a->eval_every < 1)
        a->eval_every = a->steps / 10 > 0 ? a->steps / 10 : 1;
    if ((rc = alloc_run(r)) != CLI_OK)
        return rc;
    r->tty = isatty(fileno(stderr));
    if (a->save_init && save(r, a->save_init) != CLI_OK)
        return CLI_FAIL;
    return CLI_OK;
}

// The buffers of a run (batch, losses, attention of the report).
static int alloc_run(text_run *r)
{
    const text_args *a = &r->a;
    size_t bt = (size_t)a->batch * (size_t)a->block;
    size_t n = (size_t)a->steps;
    r->tok = malloc(2 * bt * sizeof(int32_t));
    r->losses = malloc(2 * n * sizeof(float));
    r->attn = malloc((size_t)a->heads * a->block * a->block * sizeof(float));
    if (!r->tok || !r->losses || !r->attn) {
        fprintf(stderr, "mhsa-train: out of memory\n");
        return CLI_FAIL;
    }
    r->tgt = r->tok + bt;
    r->vals = r->losses + n;
    return CLI_OK;
}

// ---- data parallel: the ranks' set-up ---------------------------------------

// What rank 0's set-up decided (from the command line or the checkpoint it
// resumes), sent to the others as bytes. Every rank parsed the same command
// line, so everything else (file names, --val-tokens, --save-every, ...)
// is already the same.
typedef struct shared_setup {
    int32_t rc;
    int32_t layers, embd, heads, block, batch, steps, rope, no_proj, tie;
    int32_t warmup, eval_every, grad_groups;
    float lr, min_lr, weight_decay, clip, beta2, val_fraction;
    uint64_t seed, rng, data_hash, data_bytes;
    int64_t step0;
} shared_setup;

static void share(const text_run *r, shared_setup *h)
{
    const text_args *a = &r->a;
    h->layers = a->layers;
    h->embd = a->embd;
    h->heads = a->heads;
    h->block = a->block;
    h->batch = a->batch;
    h->steps = a->steps;
    h->rope = a->rope;
    h->no_proj = a->no_proj;
    h->tie = a->tie;
    h->warmup = r->warmup;
    h->eval_every = a->eval_every;
    h->grad_groups = a->grad_groups;
    h->lr = a->lr;
    h->min_lr = a->min_lr;
    h->weight_decay = a->weight_decay;
    h->clip = a->clip;
    h->beta2 = a->beta2;
    h->val_fraction = a->val_fraction;
    h->seed = a->seed;
    h->rng = r->rng;
    h->data_hash = r->data_hash;
    h->data_bytes = mhsa_text_len(r->text, 0) + mhsa_text_len(r->text, 1);
    h->step0 = r->step0;
}

static void adopt(text_run *r, const shared_setup *h)
{
    text_args *a = &r->a;
    a->layers = h->layers;
    a->embd = h->embd;
    a->heads = h->heads;
    a->block = h->block;
    a->batch = h->batch;
    a->steps = h->steps;
    a->rope = h->rope;
    a->no_proj = h->no_proj;
    a->tie = h->tie;
    r->warmup = h->warmup;
    a->eval_every = h->eval_every;
    a->grad_groups = h->grad_groups;
    a->lr = h->lr;
    a->min_lr = h->min_lr;
    a->weight_decay = h->weight_decay;
    a->clip = h->clip;
    a->beta2 = h->beta2;
    a->val_fraction = h->val_fraction;
    a->seed = h->seed;
    r->rng = h->rng;
    r->step0 = h->step0;
}

// A rank other than 0: rank 0's settings, the same data, the same model
// (its weights, moments and step arrive in start_dp).
static int setup_other(text_run *r, const shared_setup *h)
{
    adopt(r, h);
    int rc = runtime(&r->a);
    if (rc == CLI_OK)
        rc = load_data(r);
    if (rc != CLI_OK)
        return rc;
    uint64_t bytes = mhsa_text_len(r->text, 0) + mhsa_text_len(r->text, 1);
    if (r->data_hash != h->data_hash || bytes != h->data_bytes) {
        fprintf(stderr, "mhsa-train: rank %d: --data %s: %" PRIu64 " bytes "
                "(hash %016" PRIx64 "), rank 0 has %" PRIu64 " (hash %016"
                PRIx64 "): every rank must train on the same text\n",
                r->comm->rank, r->data, bytes, r->data_hash, h->data_bytes,
                h->data_hash);
        return CLI_USAGE;
    }
    mhsa_gpt_config c = config_of(&r->a);
    if ((rc = make_model(r, &c)) != CLI_OK)
        return rc;
    return alloc_run(r);
}

// Every rank's set-up (collective); all return the same status.
static int setup_ranks(text_run *r)
{
    shared_setup h;
    memset(&h, 0, sizeof h);
    if (r->root) {
        h.rc = setup(r);
        if (h.rc == CLI_OK)
            share(r, &h);
    }
    if (r->comm->ops->bcast(r->comm, &h, sizeof h, 0))
        return dp_run_fail(r->comm, "sharing the set-up", 0, CLI_FAIL);
    if (h.rc != CLI_OK)
        return h.rc;   // rank 0 said why
    int rc = r->root ? CLI_OK : setup_other(r, &h);
    return dp_run_agree(r->comm, rc);
}

// The trainer over the ranks (collective): rank 0's weights to every rank,
// and on --resume the moments and step rank 0 loaded.
static int start_dp(text_run *r)
{
    mhsa_dp_comm *c = r->comm;
    int rc = mhsa_dp_gpt_bind(r->g, &r->dm, &r->ad) == MHSA_OK ? CLI_OK
                                                               : CLI_FAIL;
    if (rc != CLI_OK)
        fprintf(stderr, "mhsa-train: rank %d: %s\n", c->rank,
                mhsa_last_error());
    if ((rc = dp_run_agree(c, rc)) != CLI_OK)
        return rc;
    rc = dp_run_open(c, &r->dm, r->a.grad_groups, MHSA_OPTIM_ADAMW, &r->dp);
    if (rc != CLI_OK || !r->a.resume)
        return rc;
    if (mhsa_dp_import_state(r->dp, r->root ? mhsa_gpt_moment1(r->g) : NULL,
                             r->root ? mhsa_gpt_moment2(r->g) : NULL,
                             r->root ? mhsa_gpt_get_step(r->g) : 0) != MHSA_OK)
        return dp_run_fail(c, "--resume", 0, CLI_FAIL);
    return CLI_OK;
}

// ---- evaluation -------------------------------------------------------------

// Mean loss over the first max_windows validation windows (all when 0).
static int val_loss(text_run *r, size_t max_windows, double *out)
{
    int B = r->a.batch, T = r->a.block;
    size_t nw = mhsa_text_val_windows(r->text, T);
    if (max_windows && max_windows < nw)
        nw = max_windows;
    double sum = 0.0;
    size_t tokens = 0;
    for (size_t w = 0; w < nw;) {
        int rows;
        float l;
        if (mhsa_text_val_batch(r->text, w, B, T, r->tok, r->tgt, &rows) !=
            MHSA_OK)
            return fail(CLI_FAIL, "validation batch");
        if ((size_t)rows > nw - w)
            rows = (int)(nw - w);
        // norm 1: the batch's sum, so that the mean is over all windows.
        if (mhsa_gpt_forward(r->g, r->tok, r->tgt, rows, T, 1.0, &l) !=
            MHSA_OK)
            return fail(CLI_FAIL, "validation forward");
        sum += l;
        tokens += (size_t)rows * (size_t)T;
        w += (size_t)rows;
    }
    *out = tokens ? sum / (double)tokens : 0.0;
    return CLI_OK;
}

static void fmt_eta(char *buf, size_t n, double s)
{
    if (s >= 3600)
        snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else if (s >= 60)
        snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, n, "%ds", (int)s);
}

// ---- training ---------------------------------------------------------------

// One training step on the next batch: the plain loop, or the trainer over
// the ranks (which sees the batch through the GPT's mhsa_dp_model).
static mhsa_status one_step(text_run *r, const mhsa_optim_config *oc,
                            float *loss)
{
    int B = r->a.batch, T = r->a.block;
    mhsa_status st = mhsa_text_batch(r->text, &r->rng, B, T, r->tok, r->tgt);
    if (st != MHSA_OK)
        return st;
    if (r->dp) {
        mhsa_dp_set_batch(r->ad, r->tok, r->tgt, B, T);
        return mhsa_dp_step(r->dp, oc, loss, NULL);
    }
    if ((st = mhsa_gpt_forward(r->g, r->tok, r->tgt, B, T, 0.0, loss)) !=
            MHSA_OK ||
        (st = mhsa_gpt_backward(r->g)) != MHSA_OK)
        return st;
    return mhsa_gpt_step(r->g, oc, NULL);
}

// A failure of this rank alone: with other ranks, the whole job ends.
static int rank_fail(text_run *r, const char *what)
{
    if (r->dp)
        return dp_run_fail(r->comm, what, 0, CLI_FAIL);
    return fail(CLI_FAIL, what);
}

static int train(text_run *r)
{
    text_args *a = &r->a;
    int B = a->batch, T = a->block;
    mhsa_optim_config oc = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    oc.weight_decay = a->weight_decay;
    oc.clip_norm = a->clip;
    oc.beta2 = a->beta2;
    char rope[24] = "", ranks[96] = "";
    if (a->rope)
        snprintf(rope, sizeof rope, " rope %d", a->rope);
    if (r->dp)
        snprintf(ranks, sizeof ranks, ", %d groups on %d rank%s (%s)",
                 a->grad_groups, r->comm->size, r->comm->size == 1 ? "" : "s",
                 r->comm->ops->name);
    if (r->root)
        fprintf(stderr, "mhsa-train: text %s (%zu bytes, %zu held out), GPT "
                "L=%d D=%d H=%d T=%d%s%s%s, %zu parameters, batch %d, %d "
                "steps (warm-up %d), lr %g, isa %s%s, %d thread%s%s%s%s\n",
                r->data, mhsa_text_len(r->text, 0) +
                mhsa_text_len(r->text, 1), mhsa_text_len(r->text, 1),
                a->layers, a->embd, a->heads, T, rope,
                a->no_proj ? " no-proj" : "", a->tie ? " tied" : "",
                mhsa_gpt_n_params(r->g), B, a->steps, r->warmup,
                (double)a->lr, mhsa_isa_name(mhsa_active_isa()),
                a->compute == MHSA_BF16 ? ", compute bf16" : "",
                omp_get_max_threads(), omp_get_max_threads() == 1 ? "" : "s",
                r->dp ? " per rank" : "", ranks,
                r->step0 ? " (resumed)" : "");
    double train_time = 0.0, last_draw = 0.0, sum = 0.0;
    int64_t since = 0, done = 0;
    int64_t end = a->steps;
    if (a->stop_after && a->stop_after < end)
        end = a->stop_after;
    if (end < r->step0)
        end = r->step0;
    r->step_end = end;
    for (int64_t s = r->step0; s < end; s++) {
        double t0 = now_s();
        float loss;
        oc.lr = mhsa_lr_cosine(s, r->warmup, a->steps, a->lr, a->min_lr);
        if (one_step(r, &oc, &loss) != MHSA_OK)
            return rank_fail(r, "training");
        train_time += now_s() - t0;
        if (!isfinite(loss)) {   // the same loss on every rank
            if (r->root)
                fprintf(stderr, "%smhsa-train: loss is %g at step %" PRId64
                        "; try a smaller --lr\n", r->tty ? "\n" : "",
                        (double)loss, s + 1);
            return CLI_FAIL;
        }
        size_t i = (size_t)(s - r->step0);
        r->losses[i] = loss;
        r->vals[i] = NAN;
        sum += loss;
        since++;
        done++;
        int last = s + 1 == end;
        int eval = (s + 1) % a->eval_every == 0 || last;
        double val = NAN;
        if (eval && r->root) {   // every rank has rank 0's weights
            size_t w = (size_t)a->val_tokens / (size_t)T;
            if (val_loss(r, w ? w : 1, &val) != CLI_OK)
                return r->dp ? rank_fail(r, "validation") : CLI_FAIL;
            r->vals[i] = (float)val;
        }
        double now = now_s();
        if (r->root && (eval || (r->tty && now - last_draw > 0.2))) {
            last_draw = now;
            double tps = (double)done * B * T / (train_time + 1e-9);
            char eta[32];
            fmt_eta(eta, sizeof eta, (double)(end - s - 1) * B * T /
                    (tps + 1e-9));
            char vbuf[32] = "";
            if (eval)
                snprintf(vbuf, sizeof vbuf, "  val %.4f", val);
            if (r->tty || eval)
                fprintf(stderr, "%sstep %6" PRId64 "/%d  loss %.4f%s  %.0f "
                        "tok/s  ETA %s%s", r->tty ? "\r" : "", s + 1,
                        a->steps, sum / (double)since, vbuf, tps, eta,
                        r->tty && !eval ? "   " : "\n");
            fflush(stderr);
            if (eval) {
                sum = 0.0;
                since = 0;
            }
        }
        if (r->dp && (s + 1) % a->verify_every == 0 &&
            mhsa_dp_verify(r->dp) != MHSA_OK)
            return dp_run_fail(r->comm, "weight check", 1, CLI_FAIL);
        if (a->save && a->save_every && (s + 1) % a->save_every == 0 &&
            !last && save(r, a->save) != CLI_OK)
            return CLI_FAIL;
    }
    if (r->dp) {
        if (mhsa_dp_verify(r->dp) != MHSA_OK)
            return dp_run_fail(r->comm, "weight check", 1, CLI_FAIL);
        if (done > 0)   // the same test on every rank
            dp_run_print_stats(r->dp, train_time, done, (double)B * T);
    }
    return CLI_OK;
}

// ---- the report -------------------------------------------------------------

static int write_csv(const text_run *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "mhsa-train: --loss-csv: cannot open '%s'\n", path);
        return CLI_FAIL;
    }
    fprintf(f, "step,loss,val_loss\n");
    for (int64_t s = r->step0; s < r->step_end; s++) {
        size_t i = (size_t)(s - r->step0);
        fprintf(f, "%" PRId64 ",%.9g,", s + 1, (double)r->losses[i]);
        if (!isnan(r->vals[i]))
            fprintf(f, "%.9g", (double)r->vals[i]);
        fputc('\n', f);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "mhsa-train: --loss-csv: cannot write '%s'\n", path);
        return CLI_FAIL;
    }
    return CLI_OK;
}

// The sample's bytes, printable (others as '.').
static void print_sample(const int32_t *tok, int T)
{
    printf("\"");
    for (int t = 0; t < T; t++)
        putchar(tok[t] >= 32 && tok[t] < 127 ? tok[t] : '.');
    printf("\"\n");
}

// Rank 0's report; the final checkpoint was written before it (saved: its
// status, which report adds to its own).
static int report(text_run *r, int saved)
{
    text_args *a = &r->a;
    int T = a->block, rc = CLI_OK;
    int n = (int)(r->step_end - r->step0);
    if (n > 0) {
        printf("\n");
        plot_losses(stdout, r->losses, n, 60, 8, term_utf8());
    }
    // The heads of layer 0 on the first T held-out bytes.
    int rows;
    if (mhsa_text_val_batch(r->text, 0, 1, T, r->tok, r->tgt, &rows) !=
            MHSA_OK ||
        mhsa_gpt_attention(r->g, 0, r->tok, T, r->attn) != MHSA_OK)
        return fail(CLI_FAIL, "attention of the sample");
    if (a->heatmap_png) {
        char title[96];
        snprintf(title, sizeof title, "mhsa-train text: layer 0, l=%d d=%d "
                 "h=%d t=%d", a->layers, a->embd, a->heads, T);
        if (save_heatmap_png(a->heatmap_png, r->attn, a->heads, T,
                             title) != CLI_OK)
            rc = CLI_FAIL;
    }
    // A query sees only the keys before it, so the first Ts positions'
    // weights are a whole attention pattern of their own: that is what
    // the terminal shows when the block is too long for it.
    int Ts = T <= 40 ? T : 32;
    printf("\nattention of layer 0 per head on held-out text: ");
    print_sample(r->tok, Ts);
    if (Ts < T)
        printf("(its first %d of %d positions; --heatmap-png shows all)\n",
               Ts, T);
    for (int h = 0; h < a->heads; h++)
        for (int i = 0; i < Ts; i++)
            memmove(r->attn + ((size_t)h * Ts + i) * Ts,
                    r->attn + ((size_t)h * T + i) * T, Ts * sizeof(float));
    print_heatmaps(stdout, r->attn, a->heads, Ts, 80, term_utf8());
    if (a->loss_csv && write_csv(r, a->loss_csv) != CLI_OK)
        rc = CLI_FAIL;
    if (a->save) {
        if (saved != CLI_OK)
            rc = CLI_FAIL;
        else
            printf("checkpoint written to %s (step %" PRId64 ")\n", a->save,
                   mhsa_gpt_get_step(r->g));
    }
    double val;
    if (val_loss(r, 0, &val) != CLI_OK)
        return CLI_FAIL;
    printf("val loss: %.6f (%zu held-out windows of %d bytes)\n", val,
           mhsa_text_val_windows(r->text, T), T);
    fflush(stdout);
    return rc;
}

// --eval FILE: the validation loss of a checkpoint, nothing else.
static int eval_only(text_run *r)
{
    text_args *a = &r->a;
    int rc = runtime(a);
    if (rc != CLI_OK)
        return rc;
    mhsa_gpt_config c;
    if (mhsa_gpt_read_config(a->eval, &c) != MHSA_OK)
        return fail(CLI_USAGE, "--eval");
    args_of(a, &c);
    c.max_batch = a->batch;
    rc = load_data(r);
    if (rc == CLI_OK)
        rc = make_model(r, &c);
    if (rc != CLI_OK)
        return rc;
    if (mhsa_gpt_load(r->g, a->eval, 0) != MHSA_OK)
        return fail(CLI_USAGE, "--eval");
    r->tok = malloc(2 * (size_t)a->batch * (size_t)a->block *
                    sizeof(int32_t));
    if (!r->tok) {
        fprintf(stderr, "mhsa-train: out of memory\n");
        return CLI_FAIL;
    }
    r->tgt = r->tok + (size_t)a->batch * (size_t)a->block;
    double val;
    if (val_loss(r, 0, &val) != CLI_OK)
        return CLI_FAIL;
    printf("val loss: %.6f (%zu held-out windows of %d bytes)\n", val,
           mhsa_text_val_windows(r->text, a->block), a->block);
    return CLI_OK;
}

int text_train_cli(int argc, char **argv)
{
    return text_train_cli_comm(argc, argv, mhsa_dp_comm_self());
}

int text_train_cli_comm(int argc, char **argv, mhsa_dp_comm *c)
{
    text_run r;
    memset(&r, 0, sizeof r);
    r.comm = c;
    r.root = c->rank == 0;
    // Every rank parses the same command line; one message is enough.
    FILE *quiet = r.root ? NULL : fopen("/dev/null", "w");
    int rc = parse_text_args(argc, argv, &r.a, quiet ? quiet : stderr);
    if (quiet)
        fclose(quiet);
    if (rc == CLI_OK && r.a.help) {
        if (r.root)
            print_text_help(stdout);
        return CLI_OK;
    }
    if (rc == CLI_OK && r.a.eval && c->size > 1) {
        if (r.root)
            fprintf(stderr, "mhsa-train: --eval runs in one process (start "
                    "it without mpirun)\n");
        rc = CLI_USAGE;
    }
    if (rc == CLI_OK && r.a.eval) {
        rc = eval_only(&r);
    } else if (rc == CLI_OK) {
        rc = c->size > 1 ? setup_ranks(&r) : setup(&r);
        if (rc == CLI_OK && (c->size > 1 || r.a.grad_groups > 1))
            rc = start_dp(&r);
        if (rc == CLI_OK)
            rc = train(&r);
        // The final checkpoint (collective), then rank 0's report.
        int saved = rc == CLI_OK && r.a.save ? save(&r, r.a.save) : CLI_OK;
        if (rc == CLI_OK && r.root)
            rc = report(&r, saved);
        else if (rc == CLI_OK)
            rc = saved;
    }
    mhsa_dp_destroy(r.dp);
    mhsa_dp_unbind(r.ad);
    mhsa_gpt_destroy(r.g);
    mhsa_text_destroy(r.text);
    free(r.tok);
    free(r.losses);
    free(r.attn);
    return rc;
}

// cli.c — the mhsa-train command: set up the model, train it on a toy task
// with progress on stderr, then print the loss curve, the per-head attention
// of one fixed sample and "final loss: X" on stdout.
//
// Everything is allocated before the first step; the loop itself only calls
// the model (which does not allocate either). The data, the weights and the
// held-out batches all come from --seed, so a run is reproducible bit for
// bit, whatever --threads says.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "text.h"

enum { EVAL_BATCHES = 8 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *what)
{
    fprintf(stderr, "mhsa-train: %s: %s\n", what, mhsa_last_error());
    return CLI_FAIL;
}

// Streams of random numbers, one per purpose, so that changing e.g. the
// number of steps does not change the held-out data or the sample.
static uint64_t stream(uint64_t seed, uint64_t purpose)
{
    return seed * 0x9e3779b97f4a7c15ull + purpose * 0xd1b54a32d192ed03ull;
}

static int save_model(const mhsa_lm *lm, const char *path)
{
    return mhsa_lm_save(lm, path) == MHSA_OK ? CLI_OK : fail("--save");
}

static int load_model(mhsa_lm *lm, const char *path)
{
    return mhsa_lm_load(lm, path) == MHSA_OK ? CLI_OK : fail("--load");
}

// first: the step before loss[0] (0, or where a resumed run started).
static int write_csv(const char *path, const float *loss, int n, int first)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "mhsa-train: --loss-csv: cannot open '%s'\n", path);
        return CLI_FAIL;
    }
    fprintf(f, "step,loss\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "%d,%.9g\n", first + i + 1, (double)loss[i]);
    if (fclose(f) != 0) {
        fprintf(stderr, "mhsa-train: --loss-csv: cannot write '%s'\n", path);
        return CLI_FAIL;
    }
    return CLI_OK;
}

typedef struct run {
    train_args a;
    mhsa_lm *lm;
    int32_t *tok, *tgt;       // (batch, T)
    float *losses;            // (epochs * steps)
    float *attn;              // (H, T, T)
    int32_t *sample;          // (T)
    mhsa_dp_comm *comm;       // the ranks of the job (one: mhsa_dp_comm_self)
    int n_losses, first_step; // steps run here, after first_step (resume)
} run;

static void run_free(run *r)
{
    mhsa_lm_destroy(r->lm);
    free(r->tok);
    free(r->losses);
    free(r->attn);
    free(r->sample);
}

static int setup(run *r)
{
    train_args *a = &r->a;
    if (a->threads > 0)
        omp_set_num_threads(a->threads);
    if (a->isa != MHSA_ISA_AUTO && mhsa_select_isa(a->isa) != MHSA_OK) {
        fprintf(stderr, "mhsa-train: --isa %s: not available on this "
                "machine or build\n", mhsa_isa_name(a->isa));
        return CLI_USAGE;
    }
    mhsa_lm_config c = { 0 };
    c.vocab = a->vocab;
    c.d_model = a->d_model;
    c.n_heads = a->heads;
    c.max_seq_len = a->seq_len;
    c.max_batch = a->batch;
    c.n_kv_heads = a->kv_heads;
    c.rope_dim = a->rope_dim;
    c.rope_theta = a->rope_theta;
    c.rope_interleaved = a->rope_interleaved;
    c.window = a->window;
    c.compute_dtype = a->compute;
    if (mhsa_lm_create(&c, &r->lm) != MHSA_OK)
        return fail("creating the model");
    if (mhsa_lm_init_random(r->lm, stream(a->seed, 1)) != MHSA_OK)
        return fail("initialising the model");
    // With several ranks only rank 0 reads the file (it may exist on its
    // machine alone); the trainer broadcasts rank 0's weights.
    if (a->load && r->comm->rank == 0 && load_model(r->lm, a->load) != CLI_OK)
        return CLI_FAIL;
    size_t bt = (size_t)a->batch * (size_t)a->seq_len;
    size_t T = (size_t)a->seq_len;
    size_t nsteps = (size_t)a->epochs * (size_t)a->steps;
    r->tok = malloc(2 * bt * sizeof(int32_t));
    r->losses = malloc(nsteps * sizeof(float));
    r->attn = malloc((size_t)a->heads * T * T * sizeof(float));
    r->sample = malloc(2 * T * sizeof(int32_t));
    if (!r->tok || !r->losses || !r->attn || !r->sample) {
        fprintf(stderr, "mhsa-train: out of memory\n");
        return CLI_FAIL;
    }
    r->tgt = r->tok + bt;
    return CLI_OK;
}

// Mean loss over EVAL_BATCHES batches that training never sees.
static int evaluate(run *r, float *out)
{
    train_args *a = &r->a;
    uint64_t s = stream(a->seed, 3);
    double sum = 0.0;
    for (int i = 0; i < EVAL_BATCHES; i++) {
        float l;
        if (mhsa_task_batch(a->task, &s, a->batch, a->seq_len, a->vocab,
                            r->tok, r->tgt) != MHSA_OK ||
            mhsa_lm_forward(r->lm, r->tok, r->tgt, a->batch, a->seq_len, &l,
                            NULL) != MHSA_OK)
            return fail("evaluating");
        sum += l;
    }
    *out = (float)(sum / EVAL_BATCHES);
    return CLI_OK;
}

static int train(run *r)
{
    train_args *a = &r->a;
    if (dp_cli_wanted(a, r->comm)) {
        dp_cli_result res;
        int rc = dp_cli_train(a, r->comm, r->lm, r->tok, r->tgt,
                              stream(a->seed, 2), r->losses, &res);
        r->n_losses = res.n_losses;
        r->first_step = res.first_step;
        return rc;
    }
    mhsa_optim_config oc = mhsa_optim_defaults(a->optim);
    oc.lr = a->lr;
    oc.weight_decay = a->weight_decay;
    oc.clip_norm = a->clip;
    uint64_t data = stream(a->seed, 2);
    int tty = isatty(fileno(stderr));
    double tokens = (double)a->batch * a->seq_len;
    int step = 0;
    fprintf(stderr, "mhsa-train: task %s, H=%d D=%d T=%d V=%d, %zu "
            "parameters, batch %d, %s lr %g, isa %s, %d thread%s\n",
            mhsa_task_name(a->task), a->heads, a->d_model, a->seq_len,
            a->vocab, mhsa_lm_n_params(r->lm), a->batch,
            a->optim == MHSA_OPTIM_SGD ? "sgd" : "adamw", (double)a->lr,
            mhsa_isa_name(mhsa_active_isa()), omp_get_max_threads(),
            omp_get_max_threads() == 1 ? "" : "s");
    for (int e = 0; e < a->epochs; e++) {
        double t0 = now_s(), last = t0, sum = 0.0;
        for (int s = 0; s < a->steps; s++) {
            float loss;
            if (mhsa_task_batch(a->task, &data, a->batch, a->seq_len,
                                a->vocab, r->tok, r->tgt) != MHSA_OK ||
                mhsa_lm_forward(r->lm, r->tok, r->tgt, a->batch, a->seq_len,
                                &loss, NULL) != MHSA_OK ||
                mhsa_lm_backward(r->lm) != MHSA_OK ||
                mhsa_lm_step(r->lm, &oc, NULL) != MHSA_OK) {
                if (tty)
                    fputc('\n', stderr);
                return fail("training");
            }
            if (!isfinite(loss)) {
                fprintf(stderr, "%smhsa-train: loss is %g at step %d; try a "
                        "smaller --lr or --clip 1\n", tty ? "\n" : "",
                        (double)loss, step + 1);
                return CLI_FAIL;
            }
            r->losses[step++] = loss;
            r->n_losses = step;
            sum += loss;
            double t = now_s();
            // On a terminal, redraw the epoch's line a few times a second.
            if (tty && (t - last > 0.1 || s + 1 == a->steps)) {
                last = t;
                fprintf(stderr, "\repoch %d/%d  step %6d  loss %.4f  "
                        "%.0f tokens/s ", e + 1, a->epochs, step,
                        sum / (s + 1), tokens * (s + 1) / (t - t0 + 1e-9));
                fflush(stderr);
            }
        }
        double dt = now_s() - t0;
        if (tty)
            fputc('\n', stderr);
        else
            fprintf(stderr, "epoch %d/%d  step %6d  loss %.4f  %.0f "
                    "tokens/s\n", e + 1, a->epochs, step, sum / a->steps,
                    tokens * a->steps / (dt + 1e-9));
    }
    return CLI_OK;
}

static int report(run *r)
{
    train_args *a = &r->a;
    int utf8 = term_utf8();
    int T = a->seq_len;
    int nsteps = r->n_losses;
    printf("\n");
    plot_losses(stdout, r->losses, nsteps, 60, 8, utf8);

    // One fixed sample, the same for every run with this seed.
    uint64_t s = stream(a->seed, 4);
    if (mhsa_task_batch(a->task, &s, 1, T, a->vocab, r->sample,
                        r->sample + T) != MHSA_OK ||
        mhsa_lm_attention(r->lm, r->sample, T, r->attn) != MHSA_OK)
        return fail("attention of the sample");
    printf("\nattention per head on one sample, tokens:");
    for (int t = 0; t < T && t < 32; t++)
        printf(" %d", (int)r->sample[t]);
    printf("%s\n", T > 32 ? " ..." : "");
    if (T <= 40)
        print_heatmaps(stdout, r->attn, a->heads, T, 80, utf8);
    else
        printf("(T = %d is too long for the terminal; see --heatmap-png)\n",
               T);

    int rc = CLI_OK;
    if (a->heatmap_png) {
        char title[96];
        snprintf(title, sizeof title, "mhsa-train %s: h=%d d=%d t=%d",
                 mhsa_task_name(a->task), a->heads, a->d_model, T);
        if (save_heatmap_png(a->heatmap_png, r->attn, a->heads, T,
                             title) != CLI_OK)
            rc = CLI_FAIL;
    }
    if (a->loss_csv && write_csv(a->loss_csv, r->losses, nsteps,
                                 r->first_step) != CLI_OK)
        rc = CLI_FAIL;
    if (a->save && save_model(r->lm, a->save) != CLI_OK)
        rc = CLI_FAIL;

    float final;
    if (evaluate(r, &final) != CLI_OK)
        return CLI_FAIL;
    if (a->task == MHSA_TASK_INDUCTION)
        printf("(induction: the loss counts the second half only; chance "
               "is ln(%d) = %.4f)\n", a->vocab, log((double)a->vocab));
    printf("final loss: %.4f\n", (double)final);
    fflush(stdout);
    return rc;
}

int mhsa_train_cli(int argc, char **argv)
{
    return mhsa_train_cli_comm(argc, argv, mhsa_dp_comm_self());
}

int mhsa_train_cli_comm(int argc, char **argv, mhsa_dp_comm *comm)
{
    // The GPT on text has its own flags and run (text_cli.c).
    if (wants_text_task(argc, argv))
        return text_train_cli_comm(argc, argv, comm);
    run r;
    memset(&r, 0, sizeof r);
    r.comm = comm;
    int root = comm->rank == 0;
    // Every rank parses the same command line; one message is enough.
    FILE *quiet = root ? NULL : fopen("/dev/null", "w");
    int rc = parse_args(argc, argv, &r.a, quiet ? quiet : stderr);
    if (quiet)
        fclose(quiet);
    if (rc != CLI_OK)
        return rc;
    if (r.a.help) {
        if (root)
            print_help(stdout);
        return CLI_OK;
    }
    rc = setup(&r);
    if (rc == CLI_OK)
        rc = train(&r);
    // The other ranks hold the same weights: rank 0 alone reports.
    if (rc == CLI_OK && root)
        rc = report(&r);
    run_free(&r);
    return rc;
}

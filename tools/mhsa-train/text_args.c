// text_args.c — the flags of `mhsa-train --task text`, parsed as strictly as
// args.c parses the toy tasks' (the same value parsers): every problem is
// one line naming the flag and value, exit status 2.
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include "args_util.h"
#include "text.h"

// The default model: trains in under two minutes on two cores (docs/training.md,
// "A tiny GPT on real text").
#define DEF_LAYERS 4
#define DEF_EMBD 128
#define DEF_HEADS 4
#define DEF_BLOCK 64
#define DEF_BATCH 16
#define DEF_STEPS 1000
#define DEF_LR 2e-3f

void print_text_help(FILE *f)
{
    fprintf(f,
"usage: mhsa-train --task text [options]\n"
"Trains a GPT (token + position embedding, pre-norm transformer blocks of\n"
"causal multi-head attention and a GELU MLP, final LayerNorm, linear head)\n"
"on the bytes of a text, shows the loss curve and the attention heads, and\n"
"saves a checkpoint that mhsa-generate can sample from.\n"
"\n"
"data:\n"
"  --data FILE|DIR          text to learn; a folder: its files without '.'\n"
"                           in the name, in name order (default: the\n"
"                           fortune files of Debian's 'fortunes' package)\n"
"  --val-fraction X         held-out tail for validation, 0 < X < 0.5 (0.1)\n"
"model:\n"
"  --preset tiny            the lesson's GPTConfig::tiny: --layers 2\n"
"                           --embd 64 --heads 4 --block 32 --batch 8\n"
"  --layers N               transformer blocks (%d)\n"
"  --embd D                 model width (%d)\n"
"  --heads H                attention heads, must divide --embd (%d)\n"
"  --block T                context length in bytes (%d)\n"
"  --rope [DIM]             rotary position embedding of the first DIM\n"
"                           features of each head (default: all of them)\n"
"                           instead of learned positions (no wpe)\n"
"  --no-proj                no output projection (c_proj) in the attention\n"
"  --tie                    the head shares the token embedding's weights\n"
"training:\n"
"  --batch B                sequences per step (%d)\n"
"  --steps N                optimiser steps (%d)\n"
"  --epochs E               steps for E passes over the training bytes\n"
"  --lr X                   peak learning rate of AdamW (%g)\n"
"  --min-lr X               final learning rate of the cosine (lr / 10)\n"
"  --warmup N               linear warm-up steps (5%% of --steps, <= 100)\n"
"  --weight-decay X         decoupled weight decay on matrices (0.1)\n"
"  --beta2 X                AdamW's second-moment decay (0.99)\n"
"  --clip X                 clip gradients to global L2 norm X; 0 = off (1)\n"
"  --seed S                 seed of weights and batches (1)\n"
"evaluation and checkpoints:\n"
"  --eval-every N           validation loss every N steps (--steps / 10)\n"
"  --val-tokens N           tokens of that periodic validation (32768);\n"
"                           the final one uses the whole held-out tail\n"
"  --save FILE              save the model and optimiser (.safetensors)\n"
"  --save-every N           also save every N steps\n"
"  --save-init FILE         save the initial model (and the run's settings)\n"
"                           before the first step, e.g. for tools/gpt_peer.py\n"
"  --resume FILE            continue a run saved with --save, bit for bit\n"
"                           (model, schedule, seed and data position come\n"
"                           from FILE)\n"
"  --stop-after N           stop after step N (the schedule still ends at\n"
"                           --steps): a later --resume goes on from there\n"
"  --eval FILE              only print the validation loss of a checkpoint\n"
"data parallel (mpirun -np P mhsa-train --task text ...; the same bits for\n"
"any P):\n"
"  --grad-groups G          cut each batch into G equal groups whose\n"
"                           gradients are summed by one fixed tree; P ranks\n"
"                           (P divides G) share them; must divide --batch\n"
"                           (1: the plain loop's bits; with --resume: the\n"
"                           checkpoint's)\n"
"  --verify-every N         compare a hash of the weights across ranks every\n"
"                           N steps (100) and at the end\n"
"runtime and output:\n"
"  --threads N, --isa auto|scalar|avx2|avx512|neon   as for the toy tasks\n"
"  --compute f32|bf16       the matrix products' operands (f32); bf16:\n"
"                           rounded to bfloat16, fp32 accumulation, fp32\n"
"                           weights and AdamW state (also with --resume)\n"
"  --loss-csv FILE          write step,loss,val_loss for every step\n"
"  --heatmap-png FILE       per-head attention of layer 0 on held-out text\n"
"  --help                   this text\n"
"\n"
"Progress goes to stderr; the loss curve, the heatmaps and the last line\n"
"'val loss: X' to stdout. Exit status: 0 done, 1 runtime failure, 2 bad\n"
"option, data or checkpoint.\n",
            DEF_LAYERS, DEF_EMBD, DEF_HEADS, DEF_BLOCK, DEF_BATCH, DEF_STEPS,
            (double)DEF_LR);
}

const char *default_corpus(void)
{
    // Debian puts them under games/; other distributions under share/.
    static const char *const dirs[] = { "/usr/share/games/fortunes",
                                        "/usr/share/fortunes" };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        struct stat st;
        if (stat(dirs[i], &st) == 0 && S_ISDIR(st.st_mode))
            return dirs[i];
    }
    return NULL;
}

int wants_text_task(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--task=text"))
            return 1;
        if (!strcmp(argv[i], "--task") && i + 1 < argc)
            return !strcmp(argv[i + 1], "text");
    }
    return 0;
}

#define usage args_usage   // one-line messages worded as args.c's

static void set_defaults(text_args *a)
{
    memset(a, 0, sizeof *a);
    a->layers = DEF_LAYERS;
    a->embd = DEF_EMBD;
    a->heads = DEF_HEADS;
    a->block = DEF_BLOCK;
    a->batch = DEF_BATCH;
    a->steps = DEF_STEPS;
    a->lr = DEF_LR;
    a->min_lr = -1.0f;          // lr / 10
    a->weight_decay = 0.1f;
    a->clip = 1.0f;
    a->beta2 = 0.99f;
    a->val_fraction = 0.1f;
    a->warmup = -1;
    a->val_tokens = 32768;
    a->seed = 1;
    a->verify_every = 100;
    a->isa = MHSA_ISA_AUTO;
}

typedef enum kind { K_INT, K_FLOAT, K_FLOAT0, K_U64, K_FILE, K_SWITCH,
                    K_OPT_INT, K_OTHER } kind;

typedef struct flag_def {
    const char *name;
    kind k;
    unsigned bit;              // TF_* or 0
    long lo, hi;               // K_INT range
} flag_def;

static const flag_def defs[] = {
    { "--task", K_OTHER, 0, 0, 0 },
    { "--data", K_FILE, 0, 0, 0 },
    { "--val-fraction", K_FLOAT, TF_VAL_FRACTION, 0, 0 },
    { "--preset", K_OTHER, TF_PRESET, 0, 0 },
    { "--layers", K_INT, TF_LAYERS, 1, 256 },
    { "--embd", K_INT, TF_EMBD, 1, 8192 },
    { "--heads", K_INT, TF_HEADS, 1, 256 },
    { "--block", K_INT, TF_BLOCK, 1, 8192 },
    { "--rope", K_OPT_INT, TF_ROPE, 2, 8192 },
    { "--no-proj", K_SWITCH, TF_NO_PROJ, 0, 0 },
    { "--tie", K_SWITCH, TF_TIE, 0, 0 },
    { "--batch", K_INT, TF_BATCH, 1, 4096 },
    { "--steps", K_INT, TF_STEPS, 1, 100000000 },
    { "--epochs", K_INT, TF_EPOCHS, 1, 100000 },
    { "--lr", K_FLOAT, TF_LR, 0, 0 },
    { "--min-lr", K_FLOAT0, TF_MIN_LR, 0, 0 },
    { "--warmup", K_INT, TF_WARMUP, 0, 100000000 },
    { "--weight-decay", K_FLOAT0, TF_WD, 0, 0 },
    { "--beta2", K_FLOAT0, TF_BETA2, 0, 0 },
    { "--clip", K_FLOAT0, TF_CLIP, 0, 0 },
    { "--seed", K_U64, TF_SEED, 0, 0 },
    { "--eval-every", K_INT, 0, 1, 100000000 },
    { "--val-tokens", K_INT, 0, 1, 1 << 30 },
    { "--save", K_FILE, 0, 0, 0 },
    { "--save-every", K_INT, 0, 1, 100000000 },
    { "--save-init", K_FILE, 0, 0, 0 },
    { "--stop-after", K_INT, 0, 1, 100000000 },
    { "--grad-groups", K_INT, 0, 1, 4096 },
    { "--verify-every", K_INT, 0, 1, 100000000 },
    { "--resume", K_FILE, 0, 0, 0 },
    { "--eval", K_FILE, 0, 0, 0 },
    { "--threads", K_INT, 0, 1, 1024 },
    { "--isa", K_OTHER, 0, 0, 0 },
    { "--compute", K_OTHER, 0, 0, 0 },
    { "--loss-csv", K_FILE, 0, 0, 0 },
    { "--heatmap-png", K_FILE, 0, 0, 0 },
};

// Where flag `name` stores its value.
static void *slot(text_args *a, const char *name)
{
    static const struct { const char *name; size_t off; } map[] = {
        { "--data", offsetof(text_args, data) },
        { "--val-fraction", offsetof(text_args, val_fraction) },
        { "--layers", offsetof(text_args, layers) },
        { "--embd", offsetof(text_args, embd) },
        { "--heads", offsetof(text_args, heads) },
        { "--block", offsetof(text_args, block) },
        { "--rope", offsetof(text_args, rope) },
        { "--no-proj", offsetof(text_args, no_proj) },
        { "--tie", offsetof(text_args, tie) },
        { "--batch", offsetof(text_args, batch) },
        { "--steps", offsetof(text_args, steps) },
        { "--epochs", offsetof(text_args, epochs) },
        { "--lr", offsetof(text_args, lr) },
        { "--min-lr", offsetof(text_args, min_lr) },
        { "--warmup", offsetof(text_args, warmup) },
        { "--weight-decay", offsetof(text_args, weight_decay) },
        { "--beta2", offsetof(text_args, beta2) },
        { "--clip", offsetof(text_args, clip) },
        { "--seed", offsetof(text_args, seed) },
        { "--eval-every", offsetof(text_args, eval_every) },
        { "--val-tokens", offsetof(text_args, val_tokens) },
        { "--save", offsetof(text_args, save) },
        { "--save-every", offsetof(text_args, save_every) },
        { "--save-init", offsetof(text_args, save_init) },
        { "--stop-after", offsetof(text_args, stop_after) },
        { "--grad-groups", offsetof(text_args, grad_groups) },
        { "--verify-every", offsetof(text_args, verify_every) },
        { "--resume", offsetof(text_args, resume) },
        { "--eval", offsetof(text_args, eval) },
        { "--threads", offsetof(text_args, threads) },
        { "--loss-csv", offsetof(text_args, loss_csv) },
        { "--heatmap-png", offsetof(text_args, heatmap_png) },
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i].name, name))
            return (char *)a + map[i].off;
    return NULL;
}

// One flag with its value (NULL for a switch).
static int set_flag(text_args *a, const flag_def *d, const char *val,
                    FILE *err, int *preset_tiny)
{
    void *p = slot(a, d->name);
    a->given |= d->bit;
    switch (d->k) {
    case K_INT:
        return args_int(err, d->name, val, d->lo, d->hi, p);
    case K_FLOAT:
    case K_FLOAT0:
        return args_float(err, d->name, val, d->k == K_FLOAT0, p);
    case K_U64:
        return args_u64(err, d->name, val, p);
    case K_SWITCH:
        *(int *)p = 1;
        return CLI_OK;
    case K_OPT_INT:   // alone: -1, "all of each head" (resolved later)
        if (!val) {
            *(int *)p = -1;
            return CLI_OK;
        }
        return args_int(err, d->name, val, d->lo, d->hi, p);
    case K_FILE:
        if (!*val)
            return usage(err, "%s needs a file name", d->name);
        *(const char **)p = val;
        return CLI_OK;
    case K_OTHER:
        break;
    }
    if (!strcmp(d->name, "--task"))
        return CLI_OK;   // "text": how we got here
    if (!strcmp(d->name, "--isa"))
        return args_isa(err, d->name, val, &a->isa);
    if (!strcmp(d->name, "--compute")) {
        if (strcmp(val, "f32") && strcmp(val, "bf16"))
            return usage(err, "--compute: unknown '%s' (f32 or bf16)", val);
        a->compute = strcmp(val, "bf16") ? MHSA_F32 : MHSA_BF16;
        return CLI_OK;
    }
    if (strcmp(val, "tiny"))
        return usage(err, "--preset: unknown preset '%s' (tiny)", val);
    *preset_tiny = 1;
    return CLI_OK;
}

// What no flag may break, checked after parsing.
static int check(text_args *a, FILE *err)
{
    if (a->embd % a->heads)
        return usage(err, "--heads %d does not divide --embd %d", a->heads,
                     a->embd);
    if (a->val_fraction >= 0.5f)
        return usage(err, "--val-fraction %g must be below 0.5",
                     (double)a->val_fraction);
    if (a->beta2 >= 1.0f)
        return usage(err, "--beta2 %g must be below 1", (double)a->beta2);
    if ((a->given & TF_STEPS) && (a->given & TF_EPOCHS))
        return usage(err, "--steps and --epochs: give one of them");
    if (a->min_lr > a->lr)
        return usage(err, "--min-lr %g is above --lr %g", (double)a->min_lr,
                     (double)a->lr);
    int dh = a->embd / a->heads;
    if (a->rope < 0 && dh % 2)
        return usage(err, "--rope needs an even head size, not --embd %d / "
                     "--heads %d = %d", a->embd, a->heads, dh);
    if (a->rope < 0)
        a->rope = dh;
    if (a->rope % 2)
        return usage(err, "--rope %d must be even (features rotate in "
                     "pairs)", a->rope);
    if (a->rope > dh)
        return usage(err, "--rope %d is larger than the head size %d "
                     "(--embd %d / --heads %d)", a->rope, dh, a->embd,
                     a->heads);
    // With --resume the batch comes from the checkpoint (checked there).
    if (a->grad_groups && !a->resume && a->batch % a->grad_groups)
        return usage(err, "--grad-groups %d does not divide --batch %d",
                     a->grad_groups, a->batch);
    const char *fixed = a->resume ? "--resume" : a->eval ? "--eval" : NULL;
    if (a->resume && a->eval)
        return usage(err, "--resume and --eval: give one of them");
    if (fixed && (a->given & ~(unsigned)(a->eval ? TF_BATCH |
                                         TF_VAL_FRACTION : 0))) {
        for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
            if (defs[i].bit & a->given)
                return usage(err, "%s cannot be combined with %s (the "
                             "checkpoint fixes it)", defs[i].name, fixed);
    }
    return CLI_OK;
}

int parse_text_args(int argc, char **argv, text_args *a, FILE *err)
{
    set_defaults(a);
    int tiny = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            a->help = 1;
            return CLI_OK;
        }
        if (strncmp(arg, "--", 2))
            return usage(err, "%s: unexpected argument (see --help)", arg);
        char flag[64];
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof flag)
            return usage(err, "%s: unknown option (see --task text --help)",
                         arg);
        memcpy(flag, arg, len);
        flag[len] = '\0';
        const flag_def *d = NULL;
        for (size_t k = 0; k < sizeof defs / sizeof defs[0]; k++)
            if (!strcmp(flag, defs[k].name))
                d = &defs[k];
        if (!d)
            return usage(err, "%s: unknown option (see --task text --help)",
                         flag);
        const char *val = NULL;
        if (d->k == K_SWITCH) {
            if (eq)
                return usage(err, "%s takes no value", flag);
        } else if (d->k == K_OPT_INT) {
            // A value is optional: "--rope 16", "--rope=16" or "--rope".
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2))
                val = argv[++i];
        } else if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            return usage(err, "%s needs a value", flag);
        }
        int rc = set_flag(a, d, val, err, &tiny);
        if (rc != CLI_OK)
            return rc;
    }
    // The preset fills what the command line did not say.
    if (tiny) {
        if (!(a->given & TF_LAYERS))
            a->layers = 2;
        if (!(a->given & TF_EMBD))
            a->embd = 64;
        if (!(a->given & TF_HEADS))
            a->heads = 4;
        if (!(a->given & TF_BLOCK))
            a->block = 32;
        if (!(a->given & TF_BATCH))
            a->batch = 8;
    }
    if (a->min_lr < 0.0f)
        a->min_lr = a->lr / 10.0f;
    return check(a, err);
}

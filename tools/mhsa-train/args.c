// args.c — command-line parsing for mhsa-train.
//
// Every flag takes "--flag VALUE" or "--flag=VALUE". Values are parsed
// strictly (the whole string must be a number in range), and every problem
// is reported as exactly one line naming the flag and the value, with exit
// code 2, so scripts and tests can rely on it.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train_args.h"

#define DEFAULT_STEPS 50
#define DEFAULT_BATCH 32
#define DEFAULT_LR 3e-3f

void print_help(FILE *f)
{
    fprintf(f,
"usage: mhsa-train [options]\n"
"Trains a tiny attention language model (token + position embedding ->\n"
"causal multi-head self-attention -> linear head) on a toy task, then shows\n"
"the loss curve and the attention of each head on one sample.\n"
"With --task text it trains a GPT on real text instead: see\n"
"'mhsa-train --task text --help'.\n"
"\n"
"model and task:\n"
"  --task repeat|induction  repeat: the next token equals the current one;\n"
"                           induction: T/2 random tokens then the same again,\n"
"                           loss on the second half (default repeat)\n"
"  --heads H                attention heads, must divide --d-model (4)\n"
"  --d-model D              model width (32)\n"
"  --seq-len T              tokens per sequence, 1..1024; >= 2 for induction\n"
"                           (12)\n"
"  --vocab V                vocabulary size, 2..65536 (64)\n"
"training:\n"
"  --epochs N               epochs (3)\n"
"  --steps-per-epoch N      optimiser steps per epoch (%d)\n"
"  --batch N                sequences per step (%d)\n"
"  --optim adamw|sgd        optimiser (adamw: beta1 0.9, beta2 0.999,\n"
"                           eps 1e-8)\n"
"  --lr X                   learning rate (%g)\n"
"  --weight-decay X         decoupled weight decay on matrices (0)\n"
"  --clip X                 clip gradients to global L2 norm X; 0 = off (0)\n"
"  --seed S                 seed of weights and data; same seed, same bits (1)\n"
"attention variant (default: plain multi-head attention):\n"
"  --kv-heads N             key/value heads, grouped-query attention (1:\n"
"                           multi-query); must divide --heads (= --heads)\n"
"  --rope DIM               rotary position embedding of the first DIM\n"
"                           features of each head; even, <= head size (off)\n"
"  --rope-theta X           RoPE base (10000)\n"
"  --rope-interleaved       RoPE pairs (2i, 2i+1) as GPT-J and Meta's Llama\n"
"                           (default: (i, i + DIM/2), as Hugging Face)\n"
"  --window W               sliding window: each token sees itself and the\n"
"                           W-1 before it (off)\n"
"runtime:\n"
"  --threads N              OpenMP threads (default: OMP_NUM_THREADS or all)\n"
"  --isa NAME               kernels: auto, scalar, avx2, avx512 or neon (auto)\n"
"  --compute f32|bf16       the matrix products' operands (f32); bf16:\n"
"                           rounded to bfloat16, fp32 accumulation\n"
"output:\n"
"  --heatmap-png FILE       write the per-head attention heatmaps as PNG\n"
"  --loss-csv FILE          write step,loss for every step\n"
"  --save FILE              save the trained model (.safetensors)\n"
"  --load FILE              start from a model saved with --save\n"
"  --help                   this text\n",
            DEFAULT_STEPS, DEFAULT_BATCH, (double)DEFAULT_LR);
    dp_args_help(f);
    fputs(
"\n"
"Progress goes to stderr (one line per epoch); the loss curve, heatmaps and\n"
"the last line 'final loss: X' (mean loss on held-out batches) to stdout.\n"
"Exit status: 0 done, 1 runtime failure, 2 bad option.\n", f);
}

static void set_defaults(train_args *a)
{
    memset(a, 0, sizeof *a);
    a->task = MHSA_TASK_REPEAT;
    a->heads = 4;
    a->d_model = 32;
    a->seq_len = 12;
    a->vocab = 64;
    a->epochs = 3;
    a->steps = DEFAULT_STEPS;
    a->batch = DEFAULT_BATCH;
    a->threads = 0;   // 0: leave OpenMP's own choice
    a->lr = DEFAULT_LR;
    a->optim = MHSA_OPTIM_ADAMW;
    a->seed = 1;
    a->isa = MHSA_ISA_AUTO;
    dp_args_defaults(&a->dp);
}

// The short name this file's many messages use.
#define bad args_usage

// ---- the attention-variant flags (mhsa_config's n_kv_heads, rope_*,
// window), kept together here; --rope-interleaved takes no value.

static int is_attention_flag(const char *flag)
{
    static const char *const flags[] = {
        "--kv-heads", "--rope", "--rope-theta", "--window",
    };
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
        if (strcmp(flag, flags[k]) == 0)
            return 1;
    return 0;
}

static int parse_attention_flag(FILE *err, const char *flag, const char *val,
                                train_args *a)
{
    if (strcmp(flag, "--kv-heads") == 0)
        return args_int(err, flag, val, 1, 256, &a->kv_heads);
    if (strcmp(flag, "--rope") == 0)
        return args_int(err, flag, val, 2, 4096, &a->rope_dim);
    if (strcmp(flag, "--rope-theta") == 0)
        return args_float(err, flag, val, 0, &a->rope_theta);
    return args_int(err, flag, val, 1, 1 << 20, &a->window);
}

// The rules between flags, once all are read (values as the user typed
// them: they were range-checked as integers already).
static int check_attention_flags(FILE *err, const train_args *a)
{
    if (a->kv_heads && a->heads % a->kv_heads != 0)
        return bad(err, "--kv-heads %d does not divide --heads %d",
                   a->kv_heads, a->heads);
    if (a->rope_dim % 2 != 0)
        return bad(err, "--rope %d must be even (features rotate in pairs)",
                   a->rope_dim);
    if (a->rope_dim > a->d_model / a->heads)
        return bad(err, "--rope %d is larger than the head size %d "
                   "(--d-model %d / --heads %d)", a->rope_dim,
                   a->d_model / a->heads, a->d_model, a->heads);
    if (a->rope_theta != 0.0f && !a->rope_dim)
        return bad(err, "--rope-theta %g needs --rope", (double)a->rope_theta);
    if (a->rope_interleaved && !a->rope_dim)
        return bad(err, "--rope-interleaved needs --rope");
    return CLI_OK;
}

int parse_args(int argc, char **argv, train_args *a, FILE *err)
{
    set_defaults(a);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            a->help = 1;
            return CLI_OK;
        }
        if (strncmp(arg, "--", 2) != 0)
            return bad(err, "%s: unexpected argument (see --help)", arg);
        // --flag=value or --flag value
        char flag[64];
        const char *val = NULL;
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof flag)
            return bad(err, "%s: unknown option (see --help)", arg);
        memcpy(flag, arg, len);
        flag[len] = '\0';
        if (strcmp(flag, "--rope-interleaved") == 0) {
            if (eq)
                return bad(err, "--rope-interleaved takes no value (got "
                           "'%s')", eq + 1);
            a->rope_interleaved = 1;
            continue;
        }
        static const char *const known[] = {
            "--task", "--heads", "--d-model", "--seq-len", "--vocab",
            "--epochs", "--steps-per-epoch", "--batch", "--optim", "--lr",
            "--weight-decay", "--clip", "--seed", "--threads", "--isa",
            "--compute",
            "--heatmap-png", "--loss-csv", "--save", "--load",
        };
        int found = 0;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            found |= strcmp(flag, known[k]) == 0;
        found |= is_attention_flag(flag);
        found |= dp_args_known(flag);
        if (!found)
            return bad(err, "%s: unknown option (see --help)", flag);
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else
            return bad(err, "%s needs a value", flag);

        int rc = CLI_OK;
        if (strcmp(flag, "--task") == 0) {
            if (strcmp(val, "repeat") == 0)
                a->task = MHSA_TASK_REPEAT;
            else if (strcmp(val, "induction") == 0)
                a->task = MHSA_TASK_INDUCTION;
            else
                rc = bad(err, "%s: unknown task '%s' (repeat, induction "
                         "or text)", flag, val);
        } else if (strcmp(flag, "--heads") == 0) {
            rc = args_int(err, flag, val, 1, 256, &a->heads);
        } else if (strcmp(flag, "--d-model") == 0) {
            rc = args_int(err, flag, val, 1, 4096, &a->d_model);
        } else if (strcmp(flag, "--seq-len") == 0) {
            rc = args_int(err, flag, val, 1, 1024, &a->seq_len);
        } else if (strcmp(flag, "--vocab") == 0) {
            rc = args_int(err, flag, val, 2, 65536, &a->vocab);
        } else if (strcmp(flag, "--epochs") == 0) {
            rc = args_int(err, flag, val, 1, 100000, &a->epochs);
        } else if (strcmp(flag, "--steps-per-epoch") == 0) {
            rc = args_int(err, flag, val, 1, 1000000, &a->steps);
        } else if (strcmp(flag, "--batch") == 0) {
            rc = args_int(err, flag, val, 1, 4096, &a->batch);
        } else if (strcmp(flag, "--threads") == 0) {
            rc = args_int(err, flag, val, 1, 1024, &a->threads);
        } else if (strcmp(flag, "--optim") == 0) {
            if (strcmp(val, "adamw") == 0)
                a->optim = MHSA_OPTIM_ADAMW;
            else if (strcmp(val, "sgd") == 0)
                a->optim = MHSA_OPTIM_SGD;
            else
                rc = bad(err, "%s: unknown optimiser '%s' (adamw or sgd)",
                         flag, val);
        } else if (strcmp(flag, "--lr") == 0) {
            rc = args_float(err, flag, val, 0, &a->lr);
        } else if (strcmp(flag, "--weight-decay") == 0) {
            rc = args_float(err, flag, val, 1, &a->weight_decay);
        } else if (strcmp(flag, "--clip") == 0) {
            rc = args_float(err, flag, val, 1, &a->clip);
        } else if (strcmp(flag, "--seed") == 0) {
            rc = args_u64(err, flag, val, &a->seed);
        } else if (is_attention_flag(flag)) {
            rc = parse_attention_flag(err, flag, val, a);
        } else if (strcmp(flag, "--isa") == 0) {
            rc = args_isa(err, flag, val, &a->isa);
        } else if (strcmp(flag, "--compute") == 0) {
            if (strcmp(val, "f32") && strcmp(val, "bf16"))
                rc = bad(err, "%s: unknown '%s' (f32 or bf16)", flag, val);
            else
                a->compute = strcmp(val, "bf16") ? MHSA_F32 : MHSA_BF16;
        } else if (dp_args_known(flag)) {
            rc = dp_args_parse(flag, val, &a->dp, err);
        } else {
            if (*val == '\0')
                rc = bad(err, "%s needs a file name", flag);
            else if (strcmp(flag, "--heatmap-png") == 0)
                a->heatmap_png = val;
            else if (strcmp(flag, "--loss-csv") == 0)
                a->loss_csv = val;
            else if (strcmp(flag, "--save") == 0)
                a->save = val;
            else
                a->load = val;
        }
        if (rc != CLI_OK)
            return rc;
    }
    if (a->d_model % a->heads != 0)
        return bad(err, "--heads %d does not divide --d-model %d", a->heads,
                   a->d_model);
    if (a->task == MHSA_TASK_INDUCTION && a->seq_len < 2)
        return bad(err, "--seq-len %d is too short for --task induction "
                   "(need >= 2)", a->seq_len);
    int rc = check_attention_flags(err, a);
    return rc != CLI_OK ? rc : dp_args_check(&a->dp, a->batch, err);
}

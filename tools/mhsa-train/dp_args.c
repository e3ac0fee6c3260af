// dp_args.c — the data-parallel options of mhsa-train (dp_cli.h), parsed
// with the same rules as args.c: one line naming the flag and value, exit 2.
#include <string.h>

#include "args_util.h"
#include "dp_args.h"

void dp_args_defaults(dp_args *d)
{
    memset(d, 0, sizeof *d);
    d->grad_groups = 1;
    d->verify_every = 100;
}

static const char *const flags[] = {
    "--grad-groups", "--checkpoint", "--checkpoint-every", "--resume",
    "--verify-every",
};

int dp_args_known(const char *flag)
{
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (strcmp(flag, flags[i]) == 0)
            return 1;
    return 0;
}

#define bad args_usage   // one-line messages worded as args.c's

int dp_args_parse(const char *flag, const char *val, dp_args *d, FILE *err)
{
    if (strcmp(flag, "--grad-groups") == 0)
        return args_int(err, flag, val, 1, 4096, &d->grad_groups);
    if (strcmp(flag, "--checkpoint-every") == 0)
        return args_int(err, flag, val, 0, 100000000, &d->checkpoint_every);
    if (strcmp(flag, "--verify-every") == 0)
        return args_int(err, flag, val, 1, 100000000, &d->verify_every);
    if (*val == '\0')
        return bad(err, "%s needs a file name", flag);
    if (strcmp(flag, "--checkpoint") == 0)
        d->checkpoint = val;
    else
        d->resume = val;
    return CLI_OK;
}

int dp_args_check(const dp_args *d, int batch, FILE *err)
{
    if (batch % d->grad_groups != 0)
        return bad(err, "--grad-groups %d does not divide --batch %d",
                   d->grad_groups, batch);
    if (d->checkpoint_every > 0 && !d->checkpoint)
        return bad(err, "--checkpoint-every %d needs --checkpoint FILE",
                   d->checkpoint_every);
    return CLI_OK;
}

void dp_args_help(FILE *f)
{
    fputs(
"data parallel (mpirun -np P mhsa-train ...; the same bits for any P):\n"
"  --grad-groups G          cut each batch into G equal groups whose\n"
"                           gradients are summed by one fixed tree; G fixes\n"
"                           the bits, P ranks (P divides G) share the work;\n"
"                           must divide --batch (1: the plain loop's bits)\n"
"  --checkpoint FILE        save model, optimiser and data position (at the\n"
"                           end, and every --checkpoint-every steps)\n"
"  --checkpoint-every N     steps between checkpoints (0: at the end only)\n"
"  --resume FILE            continue a run from its checkpoint, on any\n"
"                           number of ranks, to the same bits\n"
"  --verify-every N         compare a hash of the weights across ranks every\n"
"                           N steps (100) and at the end\n", f);
}

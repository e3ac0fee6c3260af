// main.c — mhsa-train: trains a tiny attention language model on a toy task
// and shows its loss curve and per-head attention. See cli.c. Built with
// MPI (meson -Dmpi), a process started by mpirun / srun becomes one rank
// of a data-parallel job (dp_cli.c); started alone it runs as one process.
#include "cli.h"

#if MHSA_HAVE_MPI
#include "train/dp/dp_mpi.h"
#endif

int main(int argc, char **argv)
{
#if MHSA_HAVE_MPI
    if (dp_mpi_launched()) {
        dp_comm *c = NULL;
        if (dp_mpi_init(&argc, &argv, &c) != MHSA_OK) {
            fprintf(stderr, "mhsa-train: %s\n", mhsa_last_error());
            return CLI_FAIL;
        }
        int rc = mhsa_train_cli_comm(argc, argv, c);
        dp_mpi_finalize(c);
        return rc;
    }
#endif
    return mhsa_train_cli(argc, argv);
}

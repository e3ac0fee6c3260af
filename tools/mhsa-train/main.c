// main.c — mhsa-train: trains a tiny attention language model on a toy task
// and shows its loss curve and per-head attention. See cli.c. Built with
// MPI (meson -Dmpi), a process started by mpirun / srun becomes one rank
// of a data-parallel job (dp_cli.c); started alone it runs as one process.
#include "cli.h"

#if MHSA_HAVE_MPI
#include "mpi_comm.h"
#endif

int main(int argc, char **argv)
{
#if MHSA_HAVE_MPI
    if (mpi_comm_launched()) {
        mhsa_dp_comm *c = NULL;
        if (mpi_comm_init(&argc, &argv, &c) != MHSA_OK) {
            fprintf(stderr, "mhsa-train: %s\n", mhsa_last_error());
            return CLI_FAIL;
        }
        int rc = mhsa_train_cli_comm(argc, argv, c);
        mpi_comm_finalize(c);
        return rc;
    }
#endif
    return mhsa_train_cli(argc, argv);
}

// mpi_comm.h — the MPI transport of the data-parallel trainer (an
// mhsa_dp_comm, mhsa_train.h), built only with meson -Dmpi=enabled (or auto
// when Open MPI is found) and linked only into mhsa-train: the library
// itself never needs MPI.
#ifndef MHSA_TRAIN_MPI_COMM_H
#define MHSA_TRAIN_MPI_COMM_H

#include "mhsa_train.h"

// 1 when this process was started by an MPI launcher (mpirun, mpiexec,
// srun with PMI/PMIx): then mhsa-train initialises MPI; started on its own
// it runs as one process without touching MPI at all.
int mpi_comm_launched(void);

// MPI_Init_thread with MPI_THREAD_FUNNELED (OpenMP threads run inside each
// rank; only the thread that called this calls MPI) and a transport over a
// duplicate of MPI_COMM_WORLD. MHSA_ERR_UNSUPPORTED when the library cannot
// give FUNNELED.
mhsa_status mpi_comm_init(int *argc, char ***argv, mhsa_dp_comm **out);

// MPI_Finalize and the transport's memory.
void mpi_comm_finalize(mhsa_dp_comm *c);

#endif

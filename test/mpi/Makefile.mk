# test/mpi

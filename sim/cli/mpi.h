#pragma once
// MPI for `kvfleet sweep` under mpirun, when kvfleet is built with MPI; otherwise one rank.
#include <string>
#include <vector>

namespace kvfleet::sim {

class Mpi {
 public:
  Mpi(int* argc, char*** argv);  // MPI_Init when built with MPI
  ~Mpi();                        // MPI_Finalize
  Mpi(const Mpi&) = delete;
  Mpi& operator=(const Mpi&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank 0 receives every rank's bytes (its own first); other ranks get an empty list.
  std::vector<std::string> gather(const std::string& mine);

 private:
  int rank_ = 0;
  int size_ = 1;
  bool initialised_ = false;
};

}  // namespace kvfleet::sim

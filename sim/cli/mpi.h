#pragma once
// MPI for `kvfleet sweep` under mpirun, when kvfleet is built with MPI; otherwise one rank.
#include <cstdint>
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

  // Progress over all ranks, for rank 0's display. Every other rank sends its counts as it goes
  // (non-blocking: a report is skipped while the previous one is still in flight) and a final
  // one when its points are done; rank 0 adds the latest of each to its own.
  struct Progress {
    std::int64_t done = 0, to_do = 0, failed = 0;
  };
  void send_progress(const Progress& mine, bool final);  // ranks > 0
  Progress total_progress(const Progress& mine);         // rank 0: its own plus the others'
  // Rank 0: waits for every rank's final report (so that none is left unreceived); other ranks:
  // waits until theirs is sent.
  void finish_progress();

 private:
  int rank_ = 0;
  int size_ = 1;
  bool initialised_ = false;
  std::vector<Progress> others_;  // rank 0: the latest report of each rank
  int finals_ = 0;                // rank 0: final reports received
  std::int64_t out_[4] = {};      // a rank's report in flight
  void* request_ = nullptr;       // its MPI_Request (MPI not in this header)
  void receive(bool wait);
};

}  // namespace kvfleet::sim

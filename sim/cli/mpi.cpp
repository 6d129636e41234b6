#include "sim/cli/mpi.h"

#include <cstdlib>

#ifdef KVFLEET_HAVE_MPI
#include <mpi.h>
#endif

namespace kvfleet::sim {

#ifdef KVFLEET_HAVE_MPI
namespace {
// Started by mpirun/mpiexec (OpenMPI, MPICH, PMIx)? A plain `kvfleet sweep` never initialises MPI.
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}
}  // namespace

Mpi::Mpi(int* argc, char*** argv) {
  if (!launched_by_mpi()) return;
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    MPI_Init(argc, argv);
    initialised_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}
Mpi::~Mpi() {
  if (initialised_) MPI_Finalize();
}
std::vector<std::string> Mpi::gather(const std::string& mine) {
  if (size_ == 1) return {mine};
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(size_), offsets(size_);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (rank_ == 0) {
    int total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[r] = total;
      total += lens[r];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank_ == 0) {
    for (int r = 0; r < size_; ++r) out.push_back(all.substr(offsets[r], lens[r]));
  }
  return out;
}
#else
Mpi::Mpi(int*, char***) {}
Mpi::~Mpi() = default;
std::vector<std::string> Mpi::gather(const std::string& mine) { return {mine}; }
#endif

}  // namespace kvfleet::sim

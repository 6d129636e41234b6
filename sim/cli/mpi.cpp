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
  delete static_cast<MPI_Request*>(request_);
  if (initialised_) MPI_Finalize();
}

namespace {
constexpr int kProgressTag = 7117;
}

void Mpi::send_progress(const Progress& mine, bool final) {
  if (size_ == 1 || rank_ == 0) return;
  if (!request_) request_ = new MPI_Request(MPI_REQUEST_NULL);
  auto* req = static_cast<MPI_Request*>(request_);
  if (*req != MPI_REQUEST_NULL) {
    int sent = 0;
    if (final) {
      MPI_Wait(req, MPI_STATUS_IGNORE);
    } else {
      MPI_Test(req, &sent, MPI_STATUS_IGNORE);
      if (!sent) return;  // the previous report is still on its way
    }
  }
  out_[0] = mine.done, out_[1] = mine.to_do, out_[2] = mine.failed, out_[3] = final ? 1 : 0;
  MPI_Isend(out_, 4, MPI_INT64_T, 0, kProgressTag, MPI_COMM_WORLD, req);
}

void Mpi::receive(bool wait) {
  for (;;) {
    int ready = 0;
    MPI_Status st;
    if (wait) {
      MPI_Probe(MPI_ANY_SOURCE, kProgressTag, MPI_COMM_WORLD, &st);
      ready = 1;
    } else {
      MPI_Iprobe(MPI_ANY_SOURCE, kProgressTag, MPI_COMM_WORLD, &ready, &st);
    }
    if (!ready) return;
    std::int64_t in[4];
    MPI_Recv(in, 4, MPI_INT64_T, st.MPI_SOURCE, kProgressTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    others_.resize(static_cast<std::size_t>(size_));
    others_[static_cast<std::size_t>(st.MPI_SOURCE)] = {in[0], in[1], in[2]};
    if (in[3] != 0) ++finals_;
    if (wait) return;
  }
}

Mpi::Progress Mpi::total_progress(const Progress& mine) {
  if (size_ == 1 || rank_ != 0) return mine;
  receive(false);
  Progress t = mine;
  for (const auto& o : others_) t.done += o.done, t.to_do += o.to_do, t.failed += o.failed;
  return t;
}

void Mpi::finish_progress() {
  if (size_ == 1) return;
  if (rank_ != 0) {
    if (request_) MPI_Wait(static_cast<MPI_Request*>(request_), MPI_STATUS_IGNORE);
    return;
  }
  while (finals_ < size_ - 1) receive(true);
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
void Mpi::send_progress(const Progress&, bool) {}
Mpi::Progress Mpi::total_progress(const Progress& mine) { return mine; }
void Mpi::finish_progress() {}
void Mpi::receive(bool) {}
#endif

}  // namespace kvfleet::sim

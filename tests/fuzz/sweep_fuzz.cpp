// Fuzz harness: sweep files and sweep results files (what `kvfleet sweep`, `--resume`, `merge`
// and `plot` read). Input: one byte choosing what is fuzzed, then its content:
//   0: a sweep file's YAML text (load_sweep_text; then prepare_sweep for a small one);
//   1: a results file (HDF5) the harness writes from the input: /sweep and /scenario texts (a
//      valid sweep's or fuzz text, stored as text or as numbers), /points and /curves with columns
//      of input-chosen types and values; read_sweep_h5 must accept it or name the problem, and
//      what it accepts must resume (prepare_sweep) and merge (merge_sweeps) or be refused by name.
#include "fuzz_support.h"
#include "sim/io/h5.h"
#include "sim/sweep/sweep.h"

namespace {

using namespace kvfleet;

const char* kSweep =
    "set: [workload.num_requests=20]\n"
    "axes:\n  - {key: workload.arrival.rate_per_s, values: [10, 20]}\n"
    "replicates: 2\nmetrics: [time_to_first_token_p99_s, requests_per_s]\n";

void text_dataset(fuzz::Bytes& in, hid_t f, const char* name, const std::string& valid) {
  const std::uint8_t k = in.byte();
  if (k % 8 == 7) return;  // absent
  if (k % 8 == 6) {        // numbers, as a crafted file once held
    sim::Table t;
    t.i64("x").push_back(in.u32());
    sim::h5::write_table(f, name, t);
    return;
  }
  sim::h5::write_string_dataset(f, name, k < 200 ? valid : in.text(200));
}

void column(fuzz::Bytes& in, sim::Table& t, const std::string& name, std::size_t rows, bool text) {
  const std::uint8_t kind = in.byte() % 16;
  if (kind == 15) return;
  if (kind == 12) {  // an HDF5 enum, codes in and out of its names' range
    auto& v = t.cat(name, {"ok", "failed"});
    for (std::size_t r = 0; r < rows; ++r)
      v.push_back(static_cast<std::int32_t>(in.byte() % 5) - 1);
    return;
  }
  if (kind == 14 || (text && kind < 12)) {
    auto& v = t.str(name);
    for (std::size_t r = 0; r < rows; ++r) v.push_back(in.pick({"ok", "failed", ""}));
  } else if (kind == 13 || (!text && kind < 6)) {
    auto& v = t.i64(name);
    for (std::size_t r = 0; r < rows; ++r)
      v.push_back(static_cast<std::int64_t>(in.byte() % 6) - 1);
  } else {
    auto& v = t.f64(name);
    for (std::size_t r = 0; r < rows; ++r) v.push_back(in.number());
  }
}

void fuzz_results_file(fuzz::Bytes& in) {
  const std::string path = fuzz::scratch() + "/r.h5";
  const std::size_t rows = in.byte() % 10, curve_rows = in.byte() % 40;
  // A table the input leaves without columns cannot be written (HDF5 has no empty compound):
  // such inputs test nothing of kvfleet's readers.
  bool written = true;
  try {
    sim::h5::write_file_atomically(path, [&](hid_t f) {
      text_dataset(in, f, "sweep", kSweep);
      text_dataset(in, f, "scenario", "name: x\n");
      if (in.byte() % 8 != 7) {
        sim::Table t;
        for (const char* n : {"point", "replicate", "seed"}) column(in, t, n, rows, false);
        column(in, t, "workload.arrival.rate_per_s", rows, false);
        column(in, t, "status", rows, true);
        column(in, t, "error", rows, true);
        for (const char* n : {"wall_s", "time_to_first_token_p99_s", "requests_per_s"})
          column(in, t, n, rows, false);
        sim::h5::write_table(f, "points", t);
      }
      if (in.byte() % 8 != 7) {
        sim::Table c;
        column(in, c, "point", curve_rows, false);
        column(in, c, "metric", curve_rows, true);
        column(in, c, "percentile", curve_rows, false);
        column(in, c, "value_s", curve_rows, false);
        sim::h5::write_table(f, "curves", c);
      }
    });
  } catch (const std::runtime_error&) {
    written = false;
  }
  if (!written) return;
  try {
    const sim::SweepResults r = sim::read_sweep_h5(path);
    FUZZ_CHECK(r.points.size() == r.axis_values.size());
    const sim::SweepResults merged = sim::merge_sweeps({r});
    FUZZ_CHECK(merged.points.size() == merged.axis_values.size());
    const sim::SweepSpec spec = sim::load_sweep_text(r.sweep_text, "stored", ".", false);
    if (spec.num_points() <= 16) {
      const sim::SweepResults resumed = sim::prepare_sweep(spec, &r);
      FUZZ_CHECK(resumed.points.size() == spec.num_points());
    }
  } catch (const sim::InputError&) {
  }
}

void fuzz_sweep_text(fuzz::Bytes& in) {
  try {
    const sim::SweepSpec s = sim::load_sweep_text(in.rest(), "<fuzz>", fuzz::scratch(), false);
    FUZZ_CHECK(s.num_points() >= 1);
    FUZZ_CHECK(s.num_points() <= sim::kMaxSweepPoints);
    for (const auto& a : s.axes) FUZZ_CHECK(!a.values.empty());
    if (s.num_points() <= 4) {
      sim::validate_sweep(s);
      sim::prepare_sweep(s);
    }
  } catch (const sim::InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Bytes in(data, size);
  fuzz::clear_scratch();
  if (in.byte() % 2 == 0)
    fuzz_sweep_text(in);
  else
    fuzz_results_file(in);
  fuzz::check_memory();
  return 0;
}

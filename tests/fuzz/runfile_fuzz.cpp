// Fuzz harness: run result files as `kvfleet plot run.h5` reads them (sim/output/run_file.h) and
// the dashboard pages it builds from them (gui/charts/run_pages.cpp, no Qt). The input describes
// a file, which the harness writes with kvfleet's own HDF5 writer: /scenario (a valid one with
// fuzzed name, sampling interval and alert thresholds, fuzz text, numbers, or absent), /replicas,
// /requests with columns of input-chosen types and values (or absent), /timeseries with members
// named or not after the replicas, their "replica" attribute, and /points (a sweep file). What
// HDF5's own parser makes of damaged bytes is libhdf5's to harden, not kvfleet's: the bytes of
// the file are not fuzzed here.
// read_run_file must accept the file or name the problem (InputError); what it accepts has every
// time series as long as its times, and every page's series have as many x as y values.
#include "fuzz_support.h"
#include "gui/charts/run_dashboard.h"
#include "sim/io/h5.h"
#include "sim/output/run_file.h"

namespace {

using namespace kvfleet;

void text_dataset(fuzz::Bytes& in, hid_t f, const char* name) {
  const std::uint8_t k = in.byte();
  if (k % 8 == 7) return;  // absent
  if (k % 8 == 6) {        // numbers, as a crafted file could hold
    sim::Table t;
    t.i64("x").push_back(in.u32());
    sim::h5::write_table(f, name, t);
    return;
  }
  if (k >= 200) {
    sim::h5::write_string_dataset(f, name, in.text(200));
    return;
  }
  // A scenario as kvfleet writes it, with fuzzed values where the reader looks.
  auto number = [&] {
    char b[40];
    std::snprintf(b, sizeof b, "%.17g", in.number());
    return std::string(b);
  };
  std::string s = "name: " + in.pick({"fleet", "x: y", "\"\"", "[1, 2]"}) + "\n";
  s += "simulation:\n  timeseries_interval_s: " + in.pick({number(), "abc", "[]"}) + "\n";
  s += "alerts:\n  slo_ttft_p99_s: " + in.pick({number(), "2", "0", "-1", "x"}) + "\n";
  s += "  slo_tpot_p99_s: " + in.pick({number(), "0.1", ".inf", "{}"}) + "\n";
  sim::h5::write_string_dataset(f, name, s);
}

// A column of `rows` values: numbers, integers, text, a categorical, or absent.
void column(fuzz::Bytes& in, sim::Table& t, const std::string& name, std::size_t rows, bool text,
            const std::vector<std::string>& words) {
  const std::uint8_t kind = in.byte() % 16;
  if (kind == 15) return;
  if (kind == 12) {  // an HDF5 enum, codes in and out of its names' range
    auto& v = t.cat(name, words);
    for (std::size_t r = 0; r < rows; ++r)
      v.push_back(static_cast<std::int32_t>(in.byte() % (words.size() + 2)) - 1);
    return;
  }
  if (kind == 14 || (text && kind < 10)) {
    auto& v = t.str(name);
    for (std::size_t r = 0; r < rows; ++r) v.push_back(in.pick(words));
  } else if (kind == 13 || (text && kind < 12)) {
    auto& v = t.i64(name);
    for (std::size_t r = 0; r < rows; ++r)
      v.push_back(static_cast<std::int64_t>(in.byte() % 6) - 2);
  } else {
    auto& v = t.f64(name);
    for (std::size_t r = 0; r < rows; ++r) v.push_back(in.number());
  }
}

void write_run(fuzz::Bytes& in, hid_t f) {
  const std::vector<std::string> replicas = {"h100/0", "h100/1", "l40s/0", "h100_0", ""};
  const std::vector<std::string> pools = {"h100", "l40s", ""};
  text_dataset(in, f, "scenario");
  const std::size_t num_replicas = in.byte() % 6, num_requests = in.byte() % 24;
  if (in.byte() % 8 != 7 && num_replicas > 0) {
    sim::Table t;
    column(in, t, "replica", num_replicas, true, replicas);
    column(in, t, "pool", num_replicas, true, pools);
    if (t.columns.empty()) t.f64("other").push_back(0);
    sim::h5::write_table(f, "replicas", t);
  }
  if (in.byte() % 8 != 7 && num_requests > 0) {
    sim::Table t;
    for (const char* n : {"arrival_s", "ttft_s", "tpot_s", "e2e_s", "input_tokens", "cached_tokens",
                          "first_scheduled_s"})
      column(in, t, n, num_requests, false, {"1"});
    column(in, t, "outcome", num_requests, true, {"ok", "timeout", "rejected"});
    column(in, t, "pool", num_requests, true, pools);
    if (t.columns.empty()) t.f64("other").push_back(0);
    sim::h5::write_table(f, "requests", t);
  }
  if (const std::uint8_t members = in.byte() % 8; members > 0 && members < 6) {
    const sim::h5::H5 g = sim::h5::create_group(f, "timeseries");
    for (std::uint8_t m = 0; m < members; ++m) {
      const std::string name = in.pick({"h100_0", "h100_1", "l40s_0", "other", "h100_10"});
      if (sim::h5::has_link(g.id, name.c_str())) continue;
      const std::size_t samples = in.byte() % 40;
      sim::Table t;
      for (const char* n :
           {"t_s", "kv_cache_usage_perc", "num_requests_running", "num_requests_waiting",
            "generation_tokens_total", "compute_utilization", "memory_bandwidth_utilization"})
        column(in, t, n, std::max<std::size_t>(1, samples), false, {"1"});
      if (t.columns.empty()) t.f64("other").push_back(0);
      sim::h5::write_table(g.id, name.c_str(), t);
      if (in.byte() % 2) {
        const sim::h5::H5 d{sim::h5::check_id(H5Dopen2(g.id, name.c_str(), H5P_DEFAULT), "ts"),
                            H5Dclose};
        sim::h5::set_text_attribute(d.id, "replica", in.pick(replicas));
      }
    }
  }
  if (in.byte() % 16 == 0) {
    sim::Table t;
    t.f64("x").push_back(1);
    sim::h5::write_table(f, "points", t);
  }
}

void check_pages(const sim::RunData& run, fuzz::Bytes& in) {
  charts::DashboardOptions o;
  o.max_lines = in.byte() % 10;
  if (in.byte() % 4 == 0) {
    try {
      o.slo = sim::parse_slo(in.pick({"ttft_p99=2s", "tpot_p50=50ms,e2e_p90=10s", "ttft_p1=1ms"}));
    } catch (const sim::InputError&) {
    }
  }
  const auto pages = charts::run_dashboard(run, o);
  FUZZ_CHECK(pages.size() == std::size(charts::kDashboardPages));
  for (const auto& page : pages)
    for (const auto& chart : page.charts)
      for (const auto& s : chart.series) {
        FUZZ_CHECK(s.x.size() == s.y.size());
        FUZZ_CHECK(s.band_lo.size() == s.band_hi.size());
      }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Bytes in(data, size);
  fuzz::clear_scratch();
  const std::string path = fuzz::scratch() + "/run.h5";
  try {
    sim::h5::write_file_atomically(path, [&](hid_t f) { write_run(in, f); });
  } catch (const std::runtime_error&) {
    return 0;  // a file HDF5 would not write tests nothing of kvfleet's reader
  }
  try {
    const sim::RunData run = sim::read_run_file(path);
    for (const auto& r : run.replicas) {
      FUZZ_CHECK(r.kv_usage.size() == r.t_s.size() && r.running.size() == r.t_s.size());
      FUZZ_CHECK(r.waiting.size() == r.t_s.size() && r.compute.size() == r.t_s.size());
      FUZZ_CHECK(r.generation_tokens.size() == r.t_s.size() && r.bandwidth.size() == r.t_s.size());
    }
    check_pages(run, in);
  } catch (const sim::InputError&) {
  }
  fuzz::check_memory();
  return 0;
}

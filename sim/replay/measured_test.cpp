// A run folder's score window (--score-requests): the measured rows and the simulated requests
// it takes are the same requests, counted in arrival order.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/core/error.h"
#include "sim/replay/replay.h"
#include "sim/results/run_result.h"

namespace kvfleet::sim {
namespace {

RequestRecord attempt(std::uint64_t id, double arrival_s, std::int16_t n, std::uint64_t origin) {
  RequestRecord q;
  q.id = id;
  q.arrival = from_seconds(arrival_s);
  q.attempt = n;
  q.origin = origin;
  return q;
}

TEST(ScoreWindow, CountsRequestsByFirstAttemptAndTakesTheirRetries) {
  // Request 1 was retried (record 4): a window is of requests, as the measured rows are.
  RunResult r;
  for (std::uint64_t i = 0; i < 4; ++i) r.requests.push_back(attempt(i, double(i), 0, i));
  r.requests.push_back(attempt(4, 1.5, 1, 1));
  const RunResult w = window_of(r, {1, 3});
  ASSERT_EQ(w.requests.size(), 3u);
  EXPECT_EQ(w.requests[0].id, 1u);
  EXPECT_EQ(w.requests[1].id, 2u);
  EXPECT_EQ(w.requests[2].id, 4u);
  EXPECT_EQ(w.requests[2].origin, 0u);  // its first attempt, renumbered
  EXPECT_EQ(w.requests[1].origin, 1u);
}

TEST(ScoreWindow, AnAbortedRowTakesItsPlaceByItsQueueTime) {
  const auto path = std::filesystem::temp_directory_path() / "kvfleet_measured_test.jsonl";
  std::ofstream(path)
      << R"({"queued_ts": 0, "first_token_ts": 0.1, "last_token_ts": 0.5, "output_toks": 5})"
      << "\n"
      << R"({"queued_ts": 1, "first_token_ts": null, "last_token_ts": null, "output_toks": 0})"
      << "\n"
      << R"({"queued_ts": 2, "first_token_ts": 2.1, "last_token_ts": 2.5, "output_toks": 5})"
      << "\n"
      << R"({"queued_ts": 3, "first_token_ts": 3.1, "last_token_ts": 3.5, "output_toks": 5})"
      << "\n";
  const MeasuredLatencies first = read_measured(path.string(), {0, 2});
  EXPECT_EQ(first.ttft.size(), 1u);
  EXPECT_EQ(first.aborted, 1);
  const MeasuredLatencies rest = read_measured(path.string(), {2, -1});
  EXPECT_EQ(rest.ttft.size(), 2u);
  EXPECT_EQ(rest.aborted, 0);
  // A queue time that is no number places it nowhere: refused, named.
  std::ofstream(path)
      << R"({"queued_ts": "soon", "first_token_ts": null, "last_token_ts": null, "output_toks": 0})"
      << "\n";
  try {
    read_measured(path.string(), {0, 1});
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("line 1: queued_ts"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kvfleet::sim

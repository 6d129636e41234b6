#include "sim/workload/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/core/error.h"

namespace kvfleet::sim {
namespace {

using ::testing::HasSubstr;

std::string write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / ("kvfleet_trace_test_" + name);
  std::ofstream(p) << text;
  return p.string();
}

TEST(Trace, Azure) {
  const auto p = write_temp("azure.csv",
                            "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                            "2023-11-16 18:15:46.6805900,374,44\n"
                            "2023-11-16 18:15:50.9951690,396,109\n"
                            "2023-11-17 00:00:00.0000000,1,1\n");
  const auto rows = read_trace("azure", p);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_DOUBLE_EQ(rows[0].arrival_s, 0.0);
  EXPECT_NEAR(rows[1].arrival_s, 4.314579, 1e-6);
  EXPECT_NEAR(rows[2].arrival_s, 5 * 3600 + 44 * 60 + 13.31941, 1e-4);  // 18:15:46.68059 to 00:00
  EXPECT_EQ(rows[1].input_tokens, 396);
  EXPECT_EQ(rows[1].output_tokens, 109);
}

TEST(Trace, Vidur) {
  const auto p = write_temp("vidur.csv",
                            "arrived_at,num_prefill_tokens,num_decode_tokens\n"
                            "0.5,4808,10\n0.552,3180,8\n");
  const auto rows = read_trace("vidur", p);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0].arrival_s, 0.0);
  EXPECT_NEAR(rows[1].arrival_s, 0.052, 1e-12);
  EXPECT_EQ(rows[0].input_tokens, 4808);
}

TEST(Trace, VllmJsonlIsSortedByArrival) {
  const auto p = write_temp("vllm.jsonl",
                            R"({"input_toks": 10, "output_toks": 5, "arrival_time": 101.5}
{"input_toks": 20, "output_toks": 6, "arrival_time": 100.0}
)");
  const auto rows = read_trace("vllm_jsonl", p);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].input_tokens, 20);
  EXPECT_DOUBLE_EQ(rows[1].arrival_s, 1.5);
}

TEST(Trace, MooncakeKeepsHashIdsAndUsesMilliseconds) {
  const auto p =
      write_temp("mc.jsonl",
                 R"({"timestamp": 0, "input_length": 1024, "output_length": 3, "hash_ids": [0, 1]}
{"timestamp": 2500, "input_length": 600, "output_length": 7, "hash_ids": [0, 2]}
)");
  const auto rows = read_trace("mooncake", p);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[1].arrival_s, 2.5);
  EXPECT_EQ(rows[1].hash_ids, (std::vector<std::uint32_t>{0, 2}));
}

TEST(Trace, BadRowNamesFileRowAndColumn) {
  const auto p = write_temp("bad.csv",
                            "arrived_at,num_prefill_tokens,num_decode_tokens\n"
                            "0.0,10,10\n0.1,ten,10\n");
  try {
    read_trace("vidur", p);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), p + ": row 3");
    EXPECT_EQ(e.key(), "num_prefill_tokens");
    EXPECT_THAT(e.problem(), HasSubstr("'ten'"));
  }
}

TEST(Trace, BadJsonRow) {
  const auto p = write_temp(
      "bad.jsonl", "{\"input_toks\": 1, \"output_toks\": 1, \"arrival_time\": 0}\n{oops\n");
  try {
    read_trace("vllm_jsonl", p);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), p + ": row 2");
    EXPECT_THAT(e.problem(), HasSubstr("not valid JSON"));
  }
}

TEST(Trace, MissingFileAndMissingColumn) {
  EXPECT_THROW(read_trace("vidur", "/nonexistent/trace.csv"), InputError);
  const auto p = write_temp("nocol.csv", "a,b\n1,2\n");
  try {
    read_trace("vidur", p);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "num_prefill_tokens");
    EXPECT_THAT(e.problem(), HasSubstr("column missing"));
  }
}

}  // namespace
}  // namespace kvfleet::sim

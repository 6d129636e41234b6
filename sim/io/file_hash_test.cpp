#include "sim/io/file_hash.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/core/error.h"

namespace kvfleet::sim {
namespace {

TEST(FileHash, Sha256OfKnownTexts) {
  // FIPS 180-2's examples.
  EXPECT_EQ(sha256_text("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_text(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(FileHash, AFileHashesLikeItsBytesAndAMissingOneIsNamed) {
  const auto p = std::filesystem::path(::testing::TempDir()) / "hash_me.txt";
  std::string big(200000, 'x');  // more than one read buffer
  std::ofstream(p, std::ios::binary) << big;
  const FileDigest d = sha256_file(p.string());
  EXPECT_EQ(d.bytes, big.size());
  EXPECT_EQ(d.sha256, sha256_text(big));
  std::filesystem::remove(p);
  try {
    sha256_file(p.string());
    FAIL() << "accepted a missing file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("hash_me.txt"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvfleet::sim

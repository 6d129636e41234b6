#pragma once
// SHA-256 of a file's bytes (OpenSSL's libcrypto), for the provenance of the inputs a result came
// from.
#include <cstdint>
#include <string>

namespace kvfleet::sim {

struct FileDigest {
  std::string sha256;  // 64 lowercase hex digits
  std::uint64_t bytes = 0;
};

// Throws InputError naming `path` when it cannot be read.
FileDigest sha256_file(const std::string& path);
std::string sha256_text(const std::string& text);

}  // namespace kvfleet::sim

#include "sim/io/file_hash.h"

#include <openssl/evp.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>

#include "sim/core/error.h"

namespace kvfleet::sim {

namespace {

struct Digest {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), EVP_MD_CTX_free};
  Digest() {
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
      throw std::runtime_error("SHA-256: OpenSSL could not start a digest");
  }
  void add(const char* p, std::size_t n) {
    if (EVP_DigestUpdate(ctx.get(), p, n) != 1) throw std::runtime_error("SHA-256: update failed");
  }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1)
      throw std::runtime_error("SHA-256: final failed");
    std::string s;
    char b[3];
    for (unsigned int i = 0; i < len; ++i) {
      std::snprintf(b, sizeof b, "%02x", md[i]);
      s += b;
    }
    return s;
  }
};

}  // namespace

FileDigest sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot be read to record its SHA-256");
  Digest d;
  FileDigest out;
  std::array<char, 1 << 16> buf;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n == 0) break;
    d.add(buf.data(), n);
    out.bytes += n;
  }
  if (in.bad()) throw InputError(path, "", "could not be read to the end for its SHA-256");
  out.sha256 = d.hex();
  return out;
}

std::string sha256_text(const std::string& text) {
  Digest d;
  d.add(text.data(), text.size());
  return d.hex();
}

}  // namespace kvfleet::sim

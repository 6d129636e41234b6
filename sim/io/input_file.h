#pragma once
// Opening a file the user hands in (scenario, sweep, trace, profile table): one place that
// refuses what is not a readable regular file and caps its size, so that every reader gives the
// same clear InputError ("is a directory", "larger than the limit of ...") instead of a C++
// exception text. A UTF-8 byte-order mark at the start is skipped (spreadsheets write one).
#include <cstdint>
#include <fstream>
#include <string>

namespace kvfleet::sim {

// Size limits by kind of file (bytes). A scenario or sweep file is written by hand; traces and
// profile tables are data.
inline constexpr std::uintmax_t kMaxYamlFileBytes = 16u << 20;   // 16 MiB
inline constexpr std::uintmax_t kMaxDataFileBytes = 4ull << 30;  // 4 GiB

// Throws InputError naming `path` unless it names an existing regular file (or a symbolic link
// to one) of at most `max_bytes`. `kind` words the message ("scenario", "trace").
void check_input_file(const std::string& path, const std::string& kind, std::uintmax_t max_bytes);

// The whole file as text (checked as above, byte-order mark removed).
std::string read_input_file(const std::string& path, const std::string& kind,
                            std::uintmax_t max_bytes);

// An input stream positioned after any byte-order mark (checked as above), for line readers.
std::ifstream open_input_file(const std::string& path, const std::string& kind,
                              std::uintmax_t max_bytes = kMaxDataFileBytes);

// Removes a UTF-8 byte-order mark at the start of `text`, if any.
void strip_bom(std::string& text);

}  // namespace kvfleet::sim

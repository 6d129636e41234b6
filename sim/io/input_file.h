#pragma once
// Opening a file the user hands in (scenario, sweep, trace, profile table): one place that
// refuses what is not a readable regular file and caps its size, so that every reader gives the
// same clear InputError ("is a directory", "larger than the limit of ...") instead of a C++
// exception text. A UTF-8 byte-order mark at the start is skipped (spreadsheets write one).
#include <cstddef>
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

// The longest line a line reader takes (a trace row, a CSV row, a requests.jsonl record): 16 MiB,
// far above any real row (a Mooncake row of 10,000 block hashes is about 80 KB).
inline constexpr std::size_t kMaxLineBytes = 16u << 20;

// std::getline with a limit: reads the next line of `in` (without its newline) into `line`;
// false at the end of the input. A line longer than kMaxLineBytes throws InputError naming
// "`path`: line `lineno`" before more of it is held in memory.
bool read_line(std::istream& in, std::string& line, const std::string& path, std::size_t lineno);

// Removes a UTF-8 byte-order mark at the start of `text`, if any.
void strip_bom(std::string& text);

}  // namespace kvfleet::sim

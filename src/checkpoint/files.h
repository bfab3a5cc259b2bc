// files.h — the POSIX file steps that make checkpoint writes atomic and
// durable: fsync of a file and of its directory, rename, listing, removal.
// Every failure is an IoError naming the path and the system's reason.
// Internal.
#pragma once

#include <string>
#include <vector>

namespace mtf::checkpoint {

void fsync_path(const std::string& path);  // a file or a directory
// rename(from, to), then fsync of to's directory.
void durable_rename(const std::string& from, const std::string& to);
void make_directories(const std::string& dir);
// Names (not paths) of the entries of `dir`; IoError when it cannot be read.
std::vector<std::string> list_directory(const std::string& dir);
bool file_exists(const std::string& path);
// IoError naming what `path` is when it exists but is not a regular file (a
// FIFO or device would block the first read forever); missing is fine.
void require_regular_file(const std::string& path);
void remove_file(const std::string& path);  // missing is fine
std::string directory_of(const std::string& path);
std::string base_name(const std::string& path);
// Writes `text` to `path` atomically (temporary file, fsync, rename).
void write_file_atomically(const std::string& path, const std::string& text);
std::string read_small_file(const std::string& path);

}  // namespace mtf::checkpoint

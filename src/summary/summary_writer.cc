#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/json.h"
#include "mtf/errors.h"
#include "mtf/summary.h"
#include "summary/event_records.h"

namespace mtf {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::FILE* open_or_throw(const std::string& path, const char* mode, const char* what) {
  std::FILE* f = std::fopen(path.c_str(), mode);
  if (!f) {
    throw IoError(std::string("summaries: cannot open ") + what + " \"" + path +
                  "\": " + std::strerror(errno) + "; give a writable path");
  }
  return f;
}

void write_or_throw(std::FILE* f, const std::string& bytes, const std::string& path) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fflush(f) != 0) {
    throw IoError("summaries: writing \"" + path + "\" failed: " + std::strerror(errno) +
                  " (a full disk?); the run's checkpoints are unaffected");
  }
}

std::string event_file_name() {
  char host[256] = "localhost";
  ::gethostname(host, sizeof(host) - 1);
  return "events.out.tfevents." + std::to_string(static_cast<int64_t>(now_seconds())) + "." + host +
         "." + std::to_string(::getpid());
}

}  // namespace

struct SummaryWriter::Files {
  std::string event_path, jsonl_path;
  std::FILE* events = nullptr;
  std::FILE* jsonl = nullptr;
  ~Files() {
    if (events) std::fclose(events);
    if (jsonl) std::fclose(jsonl);
  }
};

SummaryWriter::SummaryWriter(const std::string& tensorboard_dir, const std::string& jsonl_path)
    : files_(std::make_unique<Files>()) {
  if (!tensorboard_dir.empty()) {
    std::error_code ec;  // the directory, with its parents
    std::filesystem::create_directories(tensorboard_dir, ec);
    if (ec) {
      throw IoError("summaries: cannot make the TensorBoard directory \"" + tensorboard_dir +
                    "\": " + ec.message() + "; give a writable path");
    }
    files_->event_path = (std::filesystem::path(tensorboard_dir) / event_file_name()).string();
    files_->events = open_or_throw(files_->event_path, "wb", "the event file");
    write_or_throw(files_->events, summary::tfrecord(summary::file_version_event(now_seconds())),
                   files_->event_path);
  }
  if (!jsonl_path.empty()) {
    files_->jsonl_path = jsonl_path;
    const std::filesystem::path parent = std::filesystem::path(jsonl_path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // else: fopen says why
    files_->jsonl = open_or_throw(jsonl_path, "a", "the metrics file");
  }
}

SummaryWriter::~SummaryWriter() = default;

const std::string& SummaryWriter::event_file() const { return files_->event_path; }

void SummaryWriter::write(int64_t step,
                          const std::vector<std::pair<std::string, double>>& scalars) {
  const double wall_time = now_seconds();
  if (files_->events) {
    write_or_throw(files_->events,
                   summary::tfrecord(summary::scalars_event(wall_time, step, scalars)),
                   files_->event_path);
  }
  if (files_->jsonl) {
    char number[64];
    std::snprintf(number, sizeof(number), "%.17g", wall_time);
    std::string line = "{\"step\": " + std::to_string(step) + ", \"wall_time\": " + number;
    for (const auto& [tag, value] : scalars) {
      if (std::isfinite(value)) {
        std::snprintf(number, sizeof(number), "%.17g", value);
      } else {
        std::snprintf(number, sizeof(number), "null");
      }
      line += ", " + json_string(tag) + ": " + number;
    }
    write_or_throw(files_->jsonl, line + "}\n", files_->jsonl_path);
  }
}

}  // namespace mtf

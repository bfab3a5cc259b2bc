#include "summary/event_records.h"

#include <cstring>

#include "core/crc32c.h"

namespace mtf::summary {
namespace {

// Protocol buffer wire format: a field's key is (number << 3) | wire type.
enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void key(std::string& out, uint32_t field, Wire wire) { varint(out, (field << 3) | wire); }

template <typename T>
void little_endian(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // x86-64 and aarch64 are little-endian
  out.append(bytes, sizeof(T));
}

void bytes_field(std::string& out, uint32_t field, const std::string& bytes) {
  key(out, field, kLengthDelimited);
  varint(out, bytes.size());
  out += bytes;
}

std::string event_head(double wall_time, int64_t step) {
  std::string e;
  key(e, 1, kFixed64);
  little_endian(e, wall_time);
  if (step != 0) {  // proto3 leaves zero fields out
    key(e, 2, kVarint);
    varint(e, static_cast<uint64_t>(step));
  }
  return e;
}

}  // namespace

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tfrecord(const std::string& data) {
  std::string r;
  const uint64_t length = data.size();
  little_endian(r, length);
  little_endian(r, masked_crc32c(r.data(), sizeof(length)));
  r += data;
  little_endian(r, masked_crc32c(data.data(), data.size()));
  return r;
}

std::string file_version_event(double wall_time) {
  std::string e = event_head(wall_time, 0);
  bytes_field(e, 3, "brain.Event:2");
  return e;
}

std::string scalars_event(double wall_time, int64_t step,
                          const std::vector<std::pair<std::string, double>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    bytes_field(v, 1, tag);
    key(v, 2, kFixed32);
    little_endian(v, static_cast<float>(value));
    bytes_field(summary, 1, v);
  }
  std::string e = event_head(wall_time, step);
  bytes_field(e, 5, summary);
  return e;
}

}  // namespace mtf::summary

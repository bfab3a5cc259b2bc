// event_records.h — the bytes of a TensorBoard event file, written by hand:
// TFRecord framing (length, masked CRC-32C of the length, data, masked
// CRC-32C of the data) around tensorflow.Event protocol buffers carrying a
// file version or a Summary of scalar values. Only the fields TensorBoard's
// scalar dashboard reads are written, with the field numbers of
// tensorflow/core/util/event.proto and tensorflow/core/framework/summary.proto:
//   Event   { double wall_time = 1; int64 step = 2;
//             string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
// Internal.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mtf::summary {

// TFRecord's checksum: CRC-32C rotated right by 15 bits plus 0xa282ead8.
uint32_t masked_crc32c(const void* data, size_t size);
// One TFRecord around `data`.
std::string tfrecord(const std::string& data);
// Event{wall_time, step, file_version = "brain.Event:2"}: an event file's first record.
std::string file_version_event(double wall_time);
// Event{wall_time, step, summary{value{tag, simple_value}...}}.
std::string scalars_event(double wall_time, int64_t step,
                          const std::vector<std::pair<std::string, double>>& scalars);

}  // namespace mtf::summary

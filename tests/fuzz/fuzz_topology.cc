// Fuzzes the simulator's machine descriptions: line 1 names a preset, line
// 2 is --topology_set's overrides, and the rest is a --topology_file. A
// description that validates must write itself out (to_file) as text that
// reads back to the same description.
#include "fuzz_input.h"
#include "mtf/sim.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtf;
  const std::string input = fuzz::text(data, size);
  const size_t first = input.find('\n');
  const size_t second = first == std::string::npos ? first : input.find('\n', first + 1);
  const std::string preset = input.substr(0, first);
  const std::string overrides =
      first == std::string::npos ? "" : input.substr(first + 1, second - first - 1);
  const std::string file = second == std::string::npos ? "" : input.substr(second + 1);
  static const std::string path = fuzz::scratch_path("topology");
  fuzz::expect_only_mtf_errors([&] {
    Topology t = Topology::preset(preset == "host" ? "tpu-v2-8" : preset);
    t.apply_overrides(overrides);
    fuzz::write_file(path, reinterpret_cast<const uint8_t*>(file.data()), file.size());
    t.load_file(path);
    t.validate();
    const std::string written = t.to_file();
    fuzz::write_file(path, reinterpret_cast<const uint8_t*>(written.data()), written.size());
    Topology back = Topology::preset("tpu-v2-8");
    back.load_file(path);
    if (back.to_file() != written) std::abort();
  });
  return 0;
}

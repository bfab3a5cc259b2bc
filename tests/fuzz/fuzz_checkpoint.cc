// Fuzzes the checkpoint reader, as a restore reads a file
// (read_checkpoint_info, then every variable). The input's first byte picks
// what is fuzzed:
//  - even: the rest is a whole checkpoint file, so the seal (header,
//    extents, checksums) is what the mutations meet first;
//  - odd: the rest is a list of edits of mtf's attributes (the header's
//    step, names and part list; each variable's dimension names, dtype and
//    block table) written with HDF5 into a valid checkpoint, which is then
//    sealed again: the fuzzer reaches mtf's reading of well-formed HDF5
//    holding any values. (Raw HDF5 metadata past a valid seal is HDF5's
//    parser, not mtf's: a file must be unchanged since mtf sealed it.)
// Every HDF5 object must be closed again after each input.
#include <hdf5.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "checkpoint/format.h"
#include "checkpoint/h5.h"
#include "checkpoint/integrity.h"
#include "fuzz_input.h"
#include "mtf/checkpoint.h"
#include "mtf/mtf.h"

namespace {

using namespace mtf;
namespace h5 = checkpoint::h5;

// A checkpoint of variables split over a 2x2 mesh (four blocks each): a
// float32 matrix, a bfloat16 vector, an int32 vector, and Adam's slots.
std::string make_template(const std::string& path) {
  Graph g;
  Mesh m(g, "m");
  Tensor w = get_variable(m, "w", Shape("a:4;b:6"));
  Tensor v = get_variable(m, "dense/v", Shape("b:6"), Initializer::glorot_uniform(), bfloat16);
  get_variable(m, "count", Shape("a:4"), Initializer::zeros(), int32, /*trainable=*/false);
  Tensor loss = reduce_sum(square(w)) + reduce_sum(cast(v, float32));
  AdamOptimizer opt(LearningRate(0.1));
  const std::vector<Operation*> train = opt.minimize(loss);
  MeshConfig config;
  config.mesh_shape = MeshShape("r:2;c:2");
  config.layout = LayoutRules("a:r;b:c");
  Session s(g, config);
  s.run({loss}, {}, train);
  save_checkpoint(s, path, 3, {{"note", "fuzz"}});
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Reads the edit list: per edit, the object (root or a variable's dataset),
// the attribute, and its new value (int64s of a shape, a string, strings),
// or its removal.
class Edits {
 public:
  Edits(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool more() const { return p_ < end_; }
  uint8_t byte() { return p_ < end_ ? *p_++ : 0; }
  std::string bytes(size_t n) {
    n = std::min<size_t>(n, end_ - p_);
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  int64_t int64() {
    int64_t v = 0;
    const std::string b = bytes(8);
    std::memcpy(&v, b.data(), b.size());
    return v;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

constexpr const char* kRootAttributes[] = {
    "mtf_format",    "mtf_format_version", "step",      "run_counter", "mesh_shape", "layout",
    "metadata_keys", "metadata_values",    "variables", "mtf_parts"};
constexpr const char* kVariableAttributes[] = {"dims", "dtype", "mtf_blocks", "mtf_name"};

void apply_edits(const std::string& path, const std::vector<std::string>& datasets, Edits e) {
  h5::Lock lock;
  h5::Handle file = h5::open_file(path, true);
  for (int count = 0; e.more() && count < 8; ++count) {
    const size_t object = e.byte() % (1 + datasets.size());
    h5::Handle ds;
    hid_t where = file;
    const char* name;
    if (object == 0) {
      name = kRootAttributes[e.byte() % std::size(kRootAttributes)];
    } else {
      ds = h5::Handle(H5Dopen2(file, datasets[object - 1].c_str(), H5P_DEFAULT), H5Dclose);
      where = ds;
      name = kVariableAttributes[e.byte() % std::size(kVariableAttributes)];
    }
    if (h5::has_attribute(where, name)) H5Adelete(where, name);
    switch (e.byte() % 4) {
      case 0: {  // int64s: a vector (0 rows), or a table
        const hsize_t rows = e.byte() % 8, cols = 1 + e.byte() % 8;
        std::vector<int64_t> v(std::max<hsize_t>(rows, 1) * cols);
        for (int64_t& x : v) x = e.int64();
        h5::write_int64s(where, name, v,
                         rows == 0 ? std::vector<hsize_t>{cols} : std::vector<hsize_t>{rows, cols},
                         path);
        break;
      }
      case 1:
        h5::write_string(where, name, e.bytes(e.byte()), path);
        break;
      case 2: {
        std::vector<std::string> v(e.byte() % 8);
        for (std::string& s : v) s = e.bytes(e.byte() % 32);
        h5::write_strings(where, name, v, path);
        break;
      }
      default:
        break;  // removed
    }
  }
  file.close(path);  // a file open for writing that is not closed is emptied
}

// Seals the edited file again (the datasets' raw data are where they were).
void reseal(const std::string& path, const std::vector<std::string>& datasets) {
  std::vector<checkpoint::Extent> extents;
  hsize_t user_block = 0;
  {
    h5::Lock lock;
    {
      h5::Handle file = h5::open_file(path, false);
      h5::Handle plist(H5Fget_create_plist(file), H5Pclose);
      H5Pget_userblock(plist, &user_block);
    }
    extents = checkpoint::data_extents(path, datasets);
  }
  checkpoint::seal(path, user_block, extents);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const std::string path = fuzz::scratch_path("ckpt.h5");
  static const std::string template_bytes = make_template(path);
  static const std::vector<std::string> datasets = [] {
    std::vector<std::string> names;
    for (const std::string& v : read_checkpoint_info(path).variables)
      names.push_back(checkpoint::dataset_name(v));
    return names;
  }();
  if (data[0] & 1) {
    fuzz::write_file(path, reinterpret_cast<const uint8_t*>(template_bytes.data()),
                     template_bytes.size());
    apply_edits(path, datasets, Edits(data + 1, size - 1));
    reseal(path, datasets);
  } else {
    fuzz::write_file(path, data + 1, size - 1);
  }
  fuzz::expect_only_mtf_errors([&] {
    const CheckpointInfo info = read_checkpoint_info(path);
    for (const std::string& name : info.variables)
      fuzz::expect_only_mtf_errors([&] { read_checkpoint_variable(path, name); });
  });
  if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) != 0) std::abort();  // a handle left open
  return 0;
}

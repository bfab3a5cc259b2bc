// bind_data.cc — mtf.data: the data helpers the C++ examples use, so a
// Python script reads the same files and draws the same batches (the
// examples' losses then match the C++ examples' exactly).
#include <cstring>

#include "array_convert.h"
#include "handles.h"
#include "models/idx_reader.h"
#include "models/mlp.h"

namespace mtf::python {

void bind_data(py::module_& m) {
  py::module_ d = m.def_submodule("data", "Data helpers shared with the C++ examples.");
  d.def(
      "load_mnist",
      [](const std::string& dir, const std::string& split) {
        models::Dataset ds = models::load_mnist_split(dir, split);
        py::array_t<uint8_t> images({ds.images.count, ds.images.rows, ds.images.cols});
        std::memcpy(images.mutable_data(), ds.images.pixels.data(), ds.images.pixels.size());
        py::array_t<int32_t> labels(ds.labels.count);
        int32_t* l = labels.mutable_data();
        for (int64_t i = 0; i < ds.labels.count; ++i) l[i] = ds.labels.labels[i];
        return py::make_tuple(images, labels);
      },
      py::arg("data_dir"), py::arg("split"),
      "(images uint8 [n, rows, cols], labels int32 [n]) of a (Fashion-)MNIST split, \"train\" "
      "or \"t10k\", from its IDX files (plain or gzip).");
  py::class_<models::BatchSampler>(
      d, "BatchSampler",
      "Epoch-wise shuffled batches of example indices, the same for a seed on every platform.")
      .def(py::init<int64_t, int64_t, uint64_t>(), py::arg("num_examples"), py::arg("batch_size"),
           py::arg("seed"))
      .def(
          "next",
          [](models::BatchSampler& s) {
            const std::vector<int64_t> idx = s.next();
            py::array_t<int64_t> out(static_cast<py::ssize_t>(idx.size()));
            std::memcpy(out.mutable_data(), idx.data(), idx.size() * sizeof(int64_t));
            return out;
          },
          "The next batch's indices (int64 array).")
      .def("state", &models::BatchSampler::state)
      .def("restore", &models::BatchSampler::restore, py::arg("state"));
}

}  // namespace mtf::python

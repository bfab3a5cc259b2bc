// bind_summary.cc — mtf.SummaryWriter: a run's scalars as TensorBoard event
// files and JSON lines (mtf/summary.h).
#include "handles.h"
#include "mtf/summary.h"

namespace mtf::python {

void bind_summary(py::module_& m) {
  py::class_<SummaryWriter>(m, "SummaryWriter",
                            "Scalars per step, as TensorBoard event files in tensorboard_dir "
                            "(\"\": none) and as JSON lines appended to metrics_jsonl (\"\": "
                            "none).")
      .def(py::init<const std::string&, const std::string&>(), py::arg("tensorboard_dir") = "",
           py::arg("metrics_jsonl") = "")
      .def(
          "write",
          [](SummaryWriter& w, int64_t step, const py::dict& scalars) {
            std::vector<std::pair<std::string, double>> values;
            for (const auto& [tag, value] : scalars)
              values.emplace_back(py::str(tag), value.cast<double>());
            w.write(step, values);
          },
          py::arg("step"), py::arg("scalars"),
          "One step's scalars, {tag: value}, as one TensorBoard event and one JSON line.")
      .def_property_readonly("event_file", &SummaryWriter::event_file);
}

}  // namespace mtf::python

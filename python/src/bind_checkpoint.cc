// bind_checkpoint.cc — HDF5 checkpoints (mtf/checkpoint.h): save, restore
// into any mesh and layout, headers as dicts, variables as NumPy arrays, and
// the CheckpointManager that keeps the newest few.
#include "array_convert.h"
#include "handles.h"
#include "interruptible.h"

namespace mtf::python {
namespace {

py::dict info_dict(const CheckpointInfo& i) {
  py::dict d;
  d["path"] = i.path;
  d["step"] = i.step;
  d["run_counter"] = i.run_counter;
  d["mesh_shape"] = i.mesh_shape;
  d["layout"] = i.layout;
  d["format_version"] = i.format_version;
  d["metadata"] = i.metadata;
  d["variables"] = i.variables;
  d["files"] = i.files;
  return d;
}

RestoreOptions restore_options(const std::map<std::string, std::string>& rename,
                               const std::vector<std::string>& only, bool allow_missing,
                               bool restore_run_counter) {
  RestoreOptions o;
  o.rename = rename;
  o.only = only;
  o.allow_missing = allow_missing;
  o.restore_run_counter = restore_run_counter;
  return o;
}

// SaveOptions from the `files` keyword: "per_rank" (the default) or "one_file".
SaveOptions save_options(const std::string& files) {
  SaveOptions o;
  if (files == "per_rank") {
    o.files = SaveOptions::Files::kPerRank;
  } else if (files == "one_file") {
    o.files = SaveOptions::Files::kOneFile;
  } else {
    throw ValueError("files=\"" + files +
                     "\": a multi-process job saves either \"per_rank\" (each rank its own "
                     "part file, at once) or \"one_file\" (one file, rank after rank)");
  }
  return o;
}

}  // namespace

void bind_checkpoint(py::module_& m) {
  using Metadata = std::map<std::string, std::string>;
  m.def(
      "save_checkpoint",
      [](const py::object& session, const std::string& path, int64_t step, const Metadata& meta,
         const std::string& files) {
        Session& s = session_of(session);
        const SaveOptions o = save_options(files);
        py::gil_scoped_release release;
        save_checkpoint(s, path, step, meta, o);
      },
      py::arg("session"), py::arg("path"), py::arg("step"), py::arg("metadata") = Metadata{},
      py::kw_only(), py::arg("files") = "per_rank",
      "Writes every variable to an HDF5 file, atomically; in a multi-process job each rank "
      "writes its blocks into its own part file beside it (files=\"one_file\": one file, "
      "rank after rank).");
  m.def(
      "restore_checkpoint",
      [](const py::object& session, const std::string& path, const Metadata& rename,
         const std::vector<std::string>& only, bool allow_missing, bool restore_run_counter) {
        Session& s = session_of(session);
        const RestoreOptions o = restore_options(rename, only, allow_missing, restore_run_counter);
        CheckpointInfo info;
        {
          py::gil_scoped_release release;
          info = restore_checkpoint(s, path, o);
        }
        return info_dict(info);
      },
      py::arg("session"), py::arg("path"), py::kw_only(), py::arg("rename") = Metadata{},
      py::arg("only") = std::vector<std::string>{}, py::arg("allow_missing") = false,
      py::arg("restore_run_counter") = true,
      "Restores variables into the session, whatever its mesh and layout; returns the header.");
  m.def(
      "read_checkpoint_info",
      [](const std::string& path) { return info_dict(read_checkpoint_info(path)); },
      py::arg("path"));
  m.def(
      "read_checkpoint_variable",
      [](const std::string& path, const std::string& name) {
        return host_to_array(read_checkpoint_variable(path, name));
      },
      py::arg("path"), py::arg("name"));

  py::class_<CheckpointManager>(m, "CheckpointManager",
                                "A directory of checkpoints ckpt-<step>.h5 keeping the newest "
                                "`keep`; saves are atomic.")
      .def(py::init([](const std::string& directory, int keep, const std::string& files) {
             return std::make_unique<CheckpointManager>(directory, keep, save_options(files));
           }),
           py::arg("directory"), py::arg("keep") = 3, py::kw_only(), py::arg("files") = "per_rank")
      .def(
          "save",
          [](CheckpointManager& c, const py::object& session, int64_t step, const Metadata& meta) {
            Session& s = session_of(session);
            py::gil_scoped_release release;
            return c.save(s, step, meta);
          },
          py::arg("session"), py::arg("step"), py::arg("metadata") = Metadata{})
      .def(
          "restore_latest",
          [](const CheckpointManager& c, const py::object& session, const Metadata& rename,
             const std::vector<std::string>& only, bool allow_missing,
             bool restore_run_counter) -> py::object {
            Session& s = session_of(session);
            const RestoreOptions o =
                restore_options(rename, only, allow_missing, restore_run_counter);
            std::optional<CheckpointInfo> info;
            {
              py::gil_scoped_release release;
              info = c.restore_latest(s, o);
            }
            return info ? py::object(info_dict(*info)) : py::none();
          },
          py::arg("session"), py::kw_only(), py::arg("rename") = Metadata{},
          py::arg("only") = std::vector<std::string>{}, py::arg("allow_missing") = false,
          py::arg("restore_run_counter") = true,
          "Restores the latest checkpoint; returns its header, or None when there is none.")
      .def("latest_path", &CheckpointManager::latest_path)
      .def("latest_valid_path", &CheckpointManager::latest_valid_path,
           "The newest checkpoint that passes its checks (older ones when the latest fails them).")
      .def("path_of_step", &CheckpointManager::path_of_step, py::arg("step"),
           "The checkpoint of `step`; IOError listing the steps present when there is none.")
      .def("set_keep_best", &CheckpointManager::set_keep_best, py::arg("metric"),
           py::arg("higher_is_better") = false,
           "Also keep the checkpoint whose metadata[metric] (a number) is best.")
      .def("best", &CheckpointManager::best,
           "(path, value) of the best checkpoint recorded, or None.")
      .def("steps", &CheckpointManager::steps)
      .def_property_readonly("directory", &CheckpointManager::directory);
}

}  // namespace mtf::python

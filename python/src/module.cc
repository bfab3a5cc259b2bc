// module.cc — the extension module mtf._mtf; the package mtf (python/mtf/)
// re-exports it under Mesh TensorFlow's names.
#include "handles.h"

PYBIND11_MODULE(_mtf, m) {
  namespace mp = mtf::python;
  m.doc() = "mtf: Mesh TensorFlow in C++ (the extension module; import mtf)";
  mp::bind_errors(m);
  mp::bind_graph(m);
  mp::bind_ops(m);
  mp::bind_slicewise(m);
  mp::bind_train(m);
  mp::bind_layers(m);
  mp::bind_session(m);
  mp::bind_simulation(m);
  mp::bind_checkpoint(m);
  mp::bind_summary(m);
  mp::bind_data(m);
  mp::bind_models(m);
  mp::bind_translation(m);
}

// Test helper: writes a checkpoint of known values from a 2x3 mesh, for
// tests/checkpoint_h5py_test.py to read with h5py. Usage: checkpoint_fixture FILE
#include <cstdio>

#include "mtf/mtf.h"

int main(int argc, char** argv) {
  using namespace mtf;
  if (argc != 2) {
    std::fprintf(stderr, "usage: checkpoint_fixture FILE\n");
    return 2;
  }
  try {
    Graph g;
    Mesh m(g, "m");
    const Shape ab({{"a", 4}, {"b", 6}});
    get_variable(m, "w1", ab);
    get_variable(m, "w1/adam_m", ab);
    get_variable(m, "count", Shape({{"b", 6}}), Initializer::zeros(), int32, false);
    get_variable(m, "s", Shape(), Initializer::constant(2.5f));
    MeshConfig c;
    c.mesh_shape = MeshShape("x:2;y:3");
    c.layout = LayoutRules("a:x;b:y");
    Session s(g, c);
    std::vector<float> w, am;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 6; ++j) {
        w.push_back(static_cast<float>(i * 10 + j) + 0.25f);
        am.push_back(-static_cast<float>(i * 10 + j));
      }
    s.set_variable_value("w1", HostTensor::from_floats(ab, w));
    s.set_variable_value("w1/adam_m", HostTensor::from_floats(ab, am));
    s.set_variable_value("count", HostTensor::from_ints(Shape({{"b", 6}}), {7, 8, 9, 10, 11, 12}));
    save_checkpoint(s, argv[1], 42, {{"purpose", "h5py"}});
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "checkpoint_fixture: %s\n", e.what());
    return 1;
  }
}

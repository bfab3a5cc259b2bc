// Test helper: writes a checkpoint of known values from a 2x3 mesh, for
// tests/checkpoint_h5py_test.py to read with h5py: from one process, or,
// with "parts", from a job of 6 ranks (threads of this process), each
// writing its own part file. Usage: checkpoint_fixture FILE [parts]
#include <cstdio>
#include <cstring>
#include <thread>

#include "mtf/in_process_transport.h"
#include "mtf/mtf.h"

namespace {

void save(const char* path, std::shared_ptr<mtf::Transport> job) {
  using namespace mtf;
  Graph g;
  Mesh m(g, "m");
  const Shape ab({{"a", 4}, {"b", 6}});
  get_variable(m, "w1", ab);
  get_variable(m, "w1/adam_m", ab);
  get_variable(m, "count", Shape({{"b", 6}}), Initializer::zeros(), int32, false);
  get_variable(m, "s", Shape(), Initializer::constant(2.5f));
  get_variable(m, "half", ab, Initializer::zeros(), bfloat16);
  MeshConfig c;
  c.mesh_shape = MeshShape("x:2;y:3");
  c.layout = LayoutRules("a:x;b:y");
  c.process_transport = std::move(job);
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
  s.set_variable_value("half", HostTensor::from_floats(ab, w, bfloat16));
  save_checkpoint(s, path, 42, {{"purpose", "h5py"}});
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mtf;
  const bool parts = argc == 3 && std::strcmp(argv[2], "parts") == 0;
  if (argc != 2 && !parts) {
    std::fprintf(stderr, "usage: checkpoint_fixture FILE [parts]\n");
    return 2;
  }
  try {
    if (!parts) {
      save(argv[1], nullptr);
      return 0;
    }
    std::shared_ptr<InProcessWorld> world = InProcessWorld::create(6);
    std::vector<std::thread> ranks;
    std::vector<std::string> errors(6);
    for (int r = 0; r < 6; ++r) {
      ranks.emplace_back([&, r] {
        try {
          save(argv[1], world->transport(r));
        } catch (const Error& e) {
          errors[r] = e.what();
        }
      });
    }
    for (std::thread& t : ranks) t.join();
    for (const std::string& e : errors)
      if (!e.empty()) throw Error(e);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "checkpoint_fixture: %s\n", e.what());
    return 1;
  }
}

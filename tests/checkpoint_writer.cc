// Test helper: saves checkpoints of a ~4 MiB model into a directory, one
// after another, changing the variables between saves, until killed. Each
// checkpoint's metadata records its step, and variable "w" is filled with
// the step number, so a reader can check a checkpoint is whole and
// consistent. Usage: checkpoint_writer DIR
#include <cstdio>

#include "mtf/mtf.h"

int main(int argc, char** argv) {
  using namespace mtf;
  if (argc != 2) {
    std::fprintf(stderr, "usage: checkpoint_writer DIR\n");
    return 2;
  }
  try {
    Graph g;
    Mesh m(g, "m");
    get_variable(m, "w", Shape({{"a", 1024}, {"b", 512}}), Initializer::zeros());
    get_variable(m, "v", Shape({{"b", 512}, {"c", 512}}), Initializer::zeros());
    MeshConfig c;
    c.mesh_shape = MeshShape("all:4");
    c.layout = LayoutRules("a:all;c:all");
    Session s(g, c);
    CheckpointManager manager(argv[1], 3);
    for (int64_t step = 1;; ++step) {
      HostTensor w(Shape({{"a", 1024}, {"b", 512}}), float32);
      for (int64_t i = 0; i < w.num_elements(); ++i) w.data<float>()[i] = static_cast<float>(step);
      s.set_variable_value("w", w);
      manager.save(s, step, {{"step", std::to_string(step)}});
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "checkpoint_writer: %s\n", e.what());
    return 1;
  }
}

// Test helper: saves checkpoints of a ~4 MiB model into a directory, one
// after another, changing the variables between saves, until killed. Each
// checkpoint's metadata records its step, and variable "w" is filled with
// the step number, so a reader can check a checkpoint is whole and
// consistent. With "parts", a job of 4 ranks (threads of this process)
// saves, each rank writing its own part file.
// Usage: checkpoint_writer DIR [parts]
#include <cstdio>
#include <cstring>
#include <thread>

#include "mtf/in_process_transport.h"
#include "mtf/mtf.h"

namespace {

void save_forever(const char* dir, std::shared_ptr<mtf::Transport> job) {
  using namespace mtf;
  Graph g;
  Mesh m(g, "m");
  get_variable(m, "w", Shape({{"a", 1024}, {"b", 512}}), Initializer::zeros());
  get_variable(m, "v", Shape({{"b", 512}, {"c", 512}}), Initializer::zeros());
  MeshConfig c;
  c.mesh_shape = MeshShape("all:4");
  c.layout = LayoutRules("a:all;c:all");
  c.process_transport = std::move(job);
  Session s(g, c);
  CheckpointManager manager(dir, 3);
  for (int64_t step = 1;; ++step) {
    HostTensor w(Shape({{"a", 1024}, {"b", 512}}), float32);
    for (int64_t i = 0; i < w.num_elements(); ++i) w.data<float>()[i] = static_cast<float>(step);
    s.set_variable_value("w", w);
    manager.save(s, step, {{"step", std::to_string(step)}});
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mtf;
  const bool parts = argc == 3 && std::strcmp(argv[2], "parts") == 0;
  if (argc != 2 && !parts) {
    std::fprintf(stderr, "usage: checkpoint_writer DIR [parts]\n");
    return 2;
  }
  try {
    if (!parts) save_forever(argv[1], nullptr);
    std::shared_ptr<InProcessWorld> world = InProcessWorld::create(4);
    std::vector<std::thread> ranks;
    for (int r = 0; r < 4; ++r) {
      ranks.emplace_back([&, r] {
        try {
          save_forever(argv[1], world->transport(r));
        } catch (const Error& e) {
          std::fprintf(stderr, "checkpoint_writer rank %d: %s\n", r, e.what());
          std::_Exit(1);
        }
      });
    }
    for (std::thread& t : ranks) t.join();
  } catch (const Error& e) {
    std::fprintf(stderr, "checkpoint_writer: %s\n", e.what());
    return 1;
  }
}

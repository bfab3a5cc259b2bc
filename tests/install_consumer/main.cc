// Builds a tiny graph with the installed library and checks one number.
#include <cstdio>

#include "mtf/mtf.h"

int main() {
  mtf::Graph graph;
  mtf::Mesh mesh(graph, "mesh");
  mtf::Tensor a = mtf::constant(mesh, 2.f, mtf::Shape("i:2;k:3"));
  mtf::Tensor b = mtf::constant(mesh, 0.5f, mtf::Shape("k:3;j:4"));
  mtf::Tensor c = mtf::reduce_sum(mtf::einsum({a, b}, mtf::Shape("i:2;j:4")));
  mtf::Session session(graph);
  const float v = session.run(c).data<float>()[0];
  std::printf("consumer: sum = %g\n", v);
  return v == 24.f ? 0 : 1;
}

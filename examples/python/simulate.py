#!/usr/bin/env python3
"""A model written in Python, laid out automatically on a 512-core TPU pod and simulated.

The model is a decoder-only Transformer language model built here from
mtf.layers (not one of mtf-sim's built-in models). auto_layout searches the
mesh shapes of the pod's cores and the layout rules for the least predicted
step time that fits each core's memory; the chosen layout is then simulated
step by step on the torus, next to plain data parallelism for comparison.

    PYTHONPATH=build/python python3 examples/python/simulate.py
    PYTHONPATH=build/python python3 examples/python/simulate.py --topology tpu-v3-512 \
        --trace /tmp/step.json   # a Chrome trace of the simulated step
"""

import argparse
import sys

import mtf


def transformer_lm(batch, length, d_model, heads, d_ff, vocab, layers):
    """The training step of a Transformer LM: (graph, loss, update ops)."""
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    batch_dim = mtf.Dimension("batch", batch)
    length_dim = mtf.Dimension("length", length)
    memory_dim = mtf.Dimension("memory_length", length)
    model_dim = mtf.Dimension("d_model", d_model)
    vocab_dim = mtf.Dimension("vocab", vocab)
    heads_dim = mtf.Dimension("heads", heads)
    kv_dim = mtf.Dimension("d_kv", d_model // heads)
    ff_dim = mtf.Dimension("d_ff", d_ff)

    inputs = mtf.placeholder(mesh, [batch_dim, length_dim], mtf.int32, "inputs")
    targets = mtf.placeholder(mesh, [batch_dim, length_dim], mtf.int32, "targets")
    x = mtf.layers.embedding(inputs, vocab_dim, model_dim, name="embedding")
    mask = mtf.layers.attention_mask_autoregressive(mesh, length_dim, memory_dim)
    for i in range(layers):
        norm = mtf.layers.layer_norm(x, model_dim, name=f"layer_{i}/att_norm")
        memory = mtf.rename_dimension(norm, "length", "memory_length")
        x = x + mtf.layers.multihead_attention(norm, memory, mask, kv_dim, heads_dim, memory_dim,
                                               name=f"layer_{i}/attention")
        norm = mtf.layers.layer_norm(x, model_dim, name=f"layer_{i}/ffn_norm")
        x = x + mtf.layers.dense_relu_dense(norm, ff_dim, name=f"layer_{i}/ffn")
    x = mtf.layers.layer_norm(x, model_dim, name="final_norm")
    logits = mtf.layers.dense(x, vocab_dim, use_bias=False, name="logits")
    loss = mtf.layers.softmax_cross_entropy_mean(logits, targets, vocab_dim)
    updates = mtf.optimize.AdafactorOptimizer().minimize(loss)
    return graph, loss, updates


def summary(report):
    gib = 1 << 30
    sent = ", ".join(f"{k} {v / (1 << 20):.1f} MiB" for k, v in report["sent_by_kind"].items())
    return (f"step {report['step_time'] * 1e3:.1f} ms, utilization "
            f"{report['utilization'] * 100:.1f}%, compute {report['compute'] * 1e3:.1f} ms, "
            f"communication {report['communication'] * 1e3:.1f} ms, peak memory per core "
            f"{report['peak_memory'] / gib:.2f} GiB; sent per core: {sent or 'nothing'}")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--topology", default="tpu-v2-512", help="machine preset")
    p.add_argument("--machine_file", default="", help="file of `key = value` overrides")
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--length", type=int, default=1024)
    p.add_argument("--d_model", type=int, default=2048)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--d_ff", type=int, default=8192)
    p.add_argument("--vocab", type=int, default=32768)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--max_dims", type=int, default=2, help="mesh dimensions to consider (1-3)")
    p.add_argument("--time_budget", type=float, default=60, help="seconds for the search")
    p.add_argument("--trace", default="", help="write a Chrome trace of the chosen step here")
    args = p.parse_args(argv)

    graph, loss, updates = transformer_lm(args.batch, args.length, args.d_model, args.heads,
                                          args.d_ff, args.vocab, args.layers)
    machine = mtf.Topology.preset(args.topology)
    if args.machine_file:
        machine.load_file(args.machine_file)
    print(f"model: {args.layers}-layer Transformer LM, batch {args.batch} x length "
          f"{args.length}, d_model {args.d_model}, d_ff {args.d_ff}, vocab {args.vocab}; "
          f"machine: {machine.name}, {machine.num_cores} cores")

    chosen = mtf.auto_layout(graph, [loss], updates, topology=machine,
                             time_budget=args.time_budget, max_dims=args.max_dims)
    print(f"\nauto_layout: {chosen['evaluations']} layouts costed in "
          f"{chosen['seconds']:.1f} s; the best:")
    for rank, c in enumerate(chosen["ranked"][:5], 1):
        print(f"  {rank}. mesh {c['mesh_shape']:<14} layout {c['layout']:<44} "
              f"{c['step_time'] * 1e3:8.1f} ms  {c['peak_memory'] / (1 << 30):5.2f} GiB/core"
              f"{'' if c['fits'] else '  (does not fit)'}")

    report = mtf.simulate(graph, [loss], updates, mesh_shape=chosen["mesh_shape"],
                          layout=chosen["layout"], topology=machine, trace_path=args.trace)
    print(f"\nsimulated, mesh {chosen['mesh_shape']}, layout \"{chosen['layout']}\":\n  "
          f"{summary(report)}")
    if args.trace:
        print(f"  trace: {args.trace} (open in chrome://tracing or Perfetto)")

    # Data parallelism alone, for comparison: the batch over every core.
    try:
        data_parallel = mtf.simulate(graph, [loss], updates, mesh_shape=f"all:{machine.num_cores}",
                                     layout="batch:all", topology=machine)
        print(f"data parallelism (batch:all) for comparison:\n  {summary(data_parallel)}")
    except (mtf.OutOfMemoryError, mtf.LayoutError) as e:
        print(f"data parallelism (batch:all) for comparison: {e}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except mtf.Error as e:
        print(f"simulate.py: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("simulate.py: interrupted", file=sys.stderr)
        sys.exit(130)

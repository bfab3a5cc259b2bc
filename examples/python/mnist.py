#!/usr/bin/env python3
"""Trains the MLP of Mesh TensorFlow's README on Fashion-MNIST from Python.

The model, flags and output are those of the C++ example (examples/mnist):
the same graph, initial values, batch order and reproducible kernels, so the
same flags print the same losses, to the bit. By default it runs on a 2x2
mesh with the batch split over rows and the hidden layer over columns.

    PYTHONPATH=build/python python3 examples/python/mnist.py
    build/tools/mtf-launch -n 4 -- python3 examples/python/mnist.py   # 4 processes
"""

import argparse
import sys
import time

import numpy as np

import mtf


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist",
                   help="directory of the IDX files")
    p.add_argument("--steps", type=int, default=3000, help="training steps")
    p.add_argument("--batch_size", type=int, default=100, help="examples per step")
    p.add_argument("--hidden", type=int, default=1024, help="size of the hidden dimension")
    p.add_argument("--lr", type=float, default=0.2, help="SGD learning rate")
    p.add_argument("--seed", type=int, default=1, help="seed for initialisation and data order")
    p.add_argument("--eval_every", type=int, default=500,
                   help="print the mean training loss every this many steps")
    p.add_argument("--mesh_shape", default="rows:2;cols:2", help="mesh of processors")
    p.add_argument("--layout", default="batch:rows;hidden:cols", help="layout rules")
    p.add_argument("--mesh_impl", default="simd", choices=["simd", "placement"])
    p.add_argument("--reproducible", default="true", choices=["true", "false"],
                   help="true: every layout gives the one-processor run's bits")
    p.add_argument("--transport", default="auto",
                   help="auto (tcp under mtf-launch, mpi under mpirun), tcp, mpi or none")
    p.add_argument("--loss_digits", type=int, default=6,
                   help="significant digits of printed losses (17: exact)")
    args = p.parse_args(argv)
    if args.steps < 0:
        p.error("--steps must be >= 0")
    return args


class Mlp:
    """images [batch, rows, cols] -> relu(einsum with w1) -> einsum with w2 -> cross-entropy."""

    def __init__(self, batch_size, hidden, lr, seed):
        self.graph = mtf.Graph()
        self.graph.seed = seed
        self.mesh = mtf.Mesh(self.graph, "mesh")
        self.batch = mtf.Dimension("batch", batch_size)
        self.rows, self.cols = mtf.Dimension("rows", 28), mtf.Dimension("cols", 28)
        self.hidden = mtf.Dimension("hidden", hidden)
        self.classes = mtf.Dimension("classes", 10)
        self.w1 = mtf.get_variable(self.mesh, "w1", [self.rows, self.cols, self.hidden])
        self.w2 = mtf.get_variable(self.mesh, "w2", [self.hidden, self.classes])
        self.images = mtf.placeholder(self.mesh, [self.batch, self.rows, self.cols],
                                      name="images")
        self.labels = mtf.placeholder(self.mesh, [self.batch], mtf.int32, name="labels")
        logits = self.logits(self.images, self.batch)
        self.loss = mtf.reduce_mean(mtf.softmax_cross_entropy_with_logits(
            logits, mtf.one_hot(self.labels, self.classes), self.classes))
        self.train_ops = mtf.optimize.SgdOptimizer(lr).minimize(self.loss)
        self.evals = {}

    def logits(self, images, batch):
        hidden = mtf.relu(mtf.einsum([images, self.w1], [batch, self.hidden]))
        return mtf.einsum([hidden, self.w2], [batch, self.classes])

    def predictions(self, n):
        """(images placeholder, predicted class) for an evaluation batch of n."""
        if n not in self.evals:
            batch = mtf.Dimension("batch", n)
            images = mtf.placeholder(self.mesh, [batch, self.rows, self.cols],
                                     name="eval_images")
            self.evals[n] = (images, mtf.argmax(self.logits(images, batch), self.classes))
        return self.evals[n]


def scaled(pixels):
    """uint8 pixels as float32 in [0, 1], rounded as the C++ example rounds them."""
    return pixels.astype(np.float32) * (np.float32(1) / np.float32(255))


def accuracy(session, model, images, labels, batch=1000):
    correct = 0
    for first in range(0, len(labels), batch):
        n = min(batch, len(labels) - first)
        x, predicted = model.predictions(n)
        p = session.run(predicted, {x: scaled(images[first:first + n])})
        correct += int(np.sum(p == labels[first:first + n]))
    return correct / len(labels) if len(labels) else 0.0


def main(argv):
    args = parse_args(argv)
    train_images, train_labels = mtf.data.load_mnist(args.data_dir, "train")
    test_images, test_labels = mtf.data.load_mnist(args.data_dir, "t10k")
    print(f"data: {len(train_labels)} training and {len(test_labels)} test images "
          f"from {args.data_dir}")

    model = Mlp(args.batch_size, args.hidden, args.lr, args.seed)
    session = mtf.Session(model.graph, mesh_shape=args.mesh_shape, layout=args.layout,
                          mesh_impl=args.mesh_impl, reproducible=args.reproducible == "true",
                          transport=args.transport)
    where = (f"rank {session.process_rank} of {session.process_count} processes"
             if session.process_count > 1 else args.mesh_impl)
    print(f'mesh: {args.mesh_shape}, layout: "{args.layout}", {where}')
    session.check([model.loss], model.train_ops)  # every layout checked before training

    # Sharded input: each process reads only the examples its processors
    # hold (the whole batch in one process, or where the pixels are split).
    (first, _, _), (rows, height, width) = session.local_feed_block(model.images)
    (label_first,), (label_rows,) = session.local_feed_block(model.labels)
    if (height, width) != (model.rows.size, model.cols.size) or \
            (label_first, label_rows) != (first, rows):
        first, rows = 0, args.batch_size
    sampler = mtf.data.BatchSampler(len(train_labels), args.batch_size, args.seed)
    eval_every = max(1, args.eval_every)
    interval_loss, interval_steps = 0.0, 0
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        idx = sampler.next()[first:first + rows]
        loss = session.run(model.loss, {model.images: scaled(train_images[idx]),
                                        model.labels: train_labels[idx]},
                           targets=model.train_ops)
        if step == 1 and session.process_count > 1:
            print(f"input: this process read {session.last_fed_bytes} of the batch's "
                  f"{args.batch_size * (model.rows.size * model.cols.size + 1) * 4} bytes per step")
        interval_loss += float(loss)
        interval_steps += 1
        if step == 1 or step % eval_every == 0 or step == args.steps:
            print("step %d loss %.*g" % (step, args.loss_digits, interval_loss / interval_steps),
                  flush=True)
            interval_loss, interval_steps = 0.0, 0
    secs = time.perf_counter() - start
    per_step = 1000 * secs / args.steps if args.steps else 0.0
    print(f"trained {args.steps} steps in {secs:.1f} s ({per_step:.2f} ms/step)")
    print("test accuracy: %.4f over %d images"
          % (accuracy(session, model, test_images, test_labels), len(test_labels)))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except mtf.Error as e:
        print(f"mnist.py: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("mnist.py: interrupted", file=sys.stderr)
        sys.exit(130)

#!/usr/bin/python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/):
well-formed inputs for each parser to start from. Checkpoints are made with
the Python module, so run it with the build's module on the path:

    PYTHONPATH=build/python /usr/bin/python3 tests/fuzz/make_seeds.py
"""

import os
import struct
import tempfile

import mtf

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    os.makedirs(os.path.join(HERE, target), exist_ok=True)
    with open(os.path.join(HERE, target, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def checkpoints():
    # Whole files (first byte 0): variables split over a 2x2 mesh (a block
    # table of four blocks each) and replicated; bfloat16 and int32 among them.
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    w = mtf.get_variable(m, "w", "a:4;b:6")
    v = mtf.get_variable(m, "dense/v", "b:6", dtype=mtf.bfloat16)
    mtf.get_variable(m, "count", "c:3", dtype=mtf.int32, trainable=False,
                     initializer=mtf.zeros_initializer())
    loss = mtf.reduce_sum(mtf.square(w)) + mtf.reduce_sum(mtf.cast(v, mtf.float32))
    ops = mtf.optimize.AdamOptimizer(0.1).minimize(loss)
    for name, mesh, layout in [("split", "r:2;c:2", "a:r;b:c"), ("one", "", "")]:
        s = mtf.Session(g, mesh_shape=mesh, layout=layout)
        s.run(ops)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "ckpt.h5")
            mtf.save_checkpoint(s, path, step=3, metadata={"note": "seed"})
            data = open(path, "rb").read()
        put("checkpoint", f"file-{name}", b"\0" + data)
    # Edit lists (first byte 1; fuzz_checkpoint.cc's Edits): none; the step;
    # a variable's block table (one row); its dimension names; the part list.
    put("checkpoint", "edits-none", b"\1")
    put("checkpoint", "edits-step", bytes([1, 0, 2, 0, 0, 0]) + struct.pack("<q", 7))
    put("checkpoint", "edits-blocks",
        bytes([1, 1, 2, 0, 1, 4]) + struct.pack("<5q", 0, 0, 4, 6, 12345))
    put("checkpoint", "edits-dims", bytes([1, 1, 0, 2, 2, 1]) + b"a" + bytes([1]) + b"b")
    # Regression: a block whose begin + size overflows int64 (for each
    # dataset; the two-dimensional ones take five columns).
    put("checkpoint", "regression-block-overflow",
        bytes([1, 1, 2, 0, 1, 4]) + struct.pack("<5q", 2**62, 0, 2**62, 6, 0))
    put("checkpoint", "edits-parts",
        bytes([1, 0, 9, 2, 1, 31]) + b"ckpt.h5.part0-of-2.0123456789abcdef"[:31])


def frames():
    fixed = b"MTFD" + struct.pack("<HHQQQq", 3, 2, 7, 4096, 12, 4096)
    names = b"allreduce".ljust(16, b"\0") + b"einsum/grad".ljust(32, b"\0")
    put("frames", "header-names", b"\0" + fixed + names)
    put("frames", "header-fixed", b"\0" + b"MTFD" + struct.pack("<HHQQQq", 3, 1, 1, 0, 0, 0))
    table = b"MTFT" + struct.pack("<I", 2)
    for a in [b"127.0.0.1:40000", b"[::1]:40001"]:
        table += struct.pack("<H", len(a)) + a
    put("frames", "address-table-2", bytes([1 | (1 << 1)]) + table)


def handshakes():
    nonce = bytes(range(16))
    address = b"127.0.0.1:5555"
    # To a server (mode odd): a client's hello and its proof (a wrong one).
    hello = b"MTFH" + struct.pack("<HHII", 3, len(address), 1, 2) + nonce + address
    put("handshake", "to-server", bytes([1]) + hello + b"MTFR" + bytes(32))
    put("handshake", "to-server-wrong-token", bytes([1]) + hello + b"MTFW")
    # To a client (mode even): a server's challenge, then its verdict.
    challenge = b"MTFC" + struct.pack("<HHII", 3, 0, 1, 2) + nonce + bytes(32)
    put("handshake", "to-client", bytes([0]) + challenge + b"MTFA")
    why = b"two processes claim rank 1"
    put("handshake", "to-client-conflict",
        bytes([0]) + challenge + b"MTFN" + struct.pack("<H", len(why)) + why)


def flags():
    put("flags", "mesh", "--mesh_shape\nrows:2;cols:2\n--layout\nbatch:rows;hidden:cols")
    put("flags", "equals", "--mesh_shape=all:4\n--layout=batch:all\n--reproducible=false\n"
        "--fuse=false\n--execution=threads\n--mesh_impl=placement")
    put("flags", "checkpoints", "--checkpoint_dir\nckpts\n--save_every\n10\n--keep\n2\n"
        "--restore_step\n20\n--keep_best\ntrue")
    put("flags", "dtypes", "--activation_dtype\nbfloat16\n--slice_dtype\nfloat32\n--steps\n100\n"
        "--lr\n0.25*warmup(30)*rsqrt(30)")
    put("flags", "unknown", "--mesh_shap\nall:2\n--transport\nnone")


def layouts():
    put("layout", "2x2", "rows:2;cols:2\nbatch:rows;hidden:cols\nbatch:4;hidden:6")
    put("layout", "commas", "x:4,y:2\nheads:x,d_ff:x,batch:y\nbatch:8;heads:4;d_ff:16")
    put("layout", "replicated", "all:8\n\nbatch:3")


def topologies():
    put("topology", "torus", "tpu-v2-8\nchips=4x4,link_bandwidth=50e9\n"
        "# a file\nnetwork = torus\ncores_per_chip = 2\n")
    put("topology", "dgx", "dgx-a100-4\ncore_flops.bfloat16=312e12;network=switched\n")
    put("topology", "file-only", "tpu-v3-32\n\nlink_latency = 1e-6\nmemory_per_core = 8e9\n")


if __name__ == "__main__":
    checkpoints()
    frames()
    handshakes()
    flags()
    layouts()
    topologies()
    print("seeds written to", HERE)

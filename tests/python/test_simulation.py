"""The simulator and automatic layouts from Python."""

import json
import os

import numpy as np
import pytest

import mtf


def model(batch=64, d_model=256, d_ff=1024):
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    b, d, f = mtf.Dimension("batch", batch), mtf.Dimension("d_model", d_model), mtf.Dimension("d_ff", d_ff)
    x = mtf.placeholder(m, [b, d], name="x")
    loss = mtf.reduce_mean(mtf.square(mtf.layers.dense_relu_dense(x, f, name="ffn")))
    return g, x, loss, mtf.optimize.SgdOptimizer(0.1).minimize(loss)


def test_simulate_returns_the_report_and_writes_a_trace(tmp_path):
    g, x, loss, ops = model()
    trace = str(tmp_path / "trace.json")
    r = mtf.simulate(g, [loss], ops, mesh_shape="b:4;m:8", layout="batch:b;d_ff:m",
                     topology="tpu-v2-32", trace_path=trace)
    assert r["cores"] == 32 and r["mode"] == "cost-only" and r["step_time"] > 0
    assert r["layout"] == "batch:b;d_ff:m" and "allreduce" in r["sent_by_kind"]
    assert any(row["op"].startswith("ffn") for row in r["ops"])
    assert r["trace_path"] == trace and "traceEvents" in json.load(open(trace))


def test_functional_simulation_computes_the_real_values():
    g, x, loss, ops = model(batch=8, d_model=16, d_ff=32)
    xv = np.random.default_rng(3).standard_normal((8, 16)).astype(np.float32)
    want = mtf.Session(g).run(loss, {x: xv})
    r = mtf.simulate(g, [loss], mesh_shape="b:8", layout="batch:b", topology="tpu-v2-8",
                     mode="functional", feed_dict={x: xv})
    assert r["mode"] == "functional"
    s = mtf.Session(g, mesh_shape="b:8", layout="batch:b", mesh_impl="simulated",
                    topology="tpu-v2-8")
    np.testing.assert_allclose(s.run(loss, {x: xv}), want, rtol=1e-5)
    assert s.simulation_report()["cores"] == 8 and "step" in s.simulation_table()
    cost = mtf.Session(g, mesh_shape="b:8", layout="batch:b", mesh_impl="simulated",
                       topology="tpu-v2-8", sim_mode="cost")
    assert cost.run(loss) is None and cost.simulation_report()["mode"] == "cost-only"


def test_topologies_presets_files_and_overrides(tmp_path):
    assert "tpu-v3-512" in mtf.Topology.preset_names()
    t = mtf.Topology.preset("tpu-v3-512")
    assert t.num_cores == 512 and t.num_chips == 256 and "tpu" in repr(t) and t.sources
    machine = tmp_path / "machine.txt"
    machine.write_text("# a slower network\nlink_bandwidth = 1e9\nchips = 4x4\n")
    custom = mtf.Topology()
    custom.load_file(str(machine))
    custom.set("cores_per_chip", "2")
    custom.apply_overrides("link_latency=2e-6")
    custom.validate()
    assert custom.chips == [4, 4] and custom.link_bandwidth == 1e9 and custom.num_cores == 32
    custom.name = "mine"
    assert custom.name == "mine" and custom.wraparound and custom.core_flops > 0
    g, x, loss, ops = model()
    slow = mtf.simulate(g, [loss], ops, mesh_shape="b:32", layout="batch:b", topology="tpu-v2-32",
                        machine_file=str(machine), topology_overrides="cores_per_chip=2")
    fast = mtf.simulate(g, [loss], ops, mesh_shape="b:32", layout="batch:b", topology="tpu-v2-32")
    assert slow["communication"] > fast["communication"]
    with pytest.raises(mtf.ValueError, match="tpu-v2-512"):
        mtf.Topology.preset("tpu-v9")
    with pytest.raises(mtf.IoError, match="cannot be opened"):
        mtf.simulate(g, [loss], mesh_shape="b:32", topology="tpu-v2-32", machine_file="/nonexistent")
    with pytest.raises(mtf.ValueError, match="mode"):
        mtf.simulate(g, [loss], mesh_shape="b:32", topology="tpu-v2-32", mode="fast")


def test_gpu_clusters_nodes_nics_and_dtype_peaks():
    t = mtf.Topology.preset("dgx-h100-4")
    assert t.network == "switched" and t.node_fabric == "switch"
    assert t.nodes == 4 and t.devices_per_node == 8 and t.num_cores == 32
    assert t.flops("bfloat16") > 10 * t.flops("float32") and "nccl-tests" in t.sources
    with pytest.raises(mtf.ValueError, match="bfloat16"):
        t.flops("float64")
    g, x, loss, ops = model()
    inside = mtf.simulate(g, [loss], ops, mesh_shape="b:4;m:8", layout="batch:b;d_ff:m",
                          topology="dgx-h100-4")
    # Slow NICs: the batch axis crosses nodes, the model axis stays in them.
    slow = mtf.simulate(g, [loss], ops, mesh_shape="b:4;m:8", layout="batch:b;d_ff:m",
                        topology="dgx-h100-4", topology_overrides="nic_bandwidth=1e9")
    assert slow["step_time"] > inside["step_time"] and inside["cores"] == 32
    with pytest.raises(mtf.ValueError, match="switch or ring"):
        mtf.Topology.preset("dgx-a100-1").set("node_fabric", "torus")


def test_a_host_machine_file_round_trips_and_simulates(tmp_path):
    t = mtf.Topology()
    t.apply_overrides("name=host,network=switched,host_cpus=2,devices_per_node=2,"
                      "gemm_flops=1e11,gemm_half_flops=1e5,core_flops=1e10,"
                      "chip_memory_bandwidth=2e10,host_ranks=processes")
    path = tmp_path / "host.machine"
    path.write_text(t.to_file())
    back = mtf.Topology()
    back.load_file(str(path))
    assert back.host_cpus == 2 and back.host_ranks == "processes"
    assert back.to_file() == t.to_file()
    g, x, loss, ops = model()
    r = mtf.simulate(g, [loss], ops, mesh_shape="b:2", layout="batch:b", topology=back)
    assert r["step_time"] > 0 and r["cores"] == 2
    with pytest.raises(mtf.ValueError, match="threads .*processes"):
        back.set("host_ranks", "fibers")


def test_a_model_too_big_for_the_cores_is_an_out_of_memory_error():
    g, x, loss, ops = model(batch=64, d_model=8192, d_ff=65536)
    with pytest.raises(mtf.OutOfMemoryError, match="GiB|MiB"):
        mtf.simulate(g, [loss], ops, mesh_shape="b:8", layout="batch:b", topology="tpu-v2-8",
                     topology_overrides="core_memory=1e9")


def test_auto_layout_ranks_layouts_as_dicts():
    g, x, loss, ops = model()
    r = mtf.auto_layout(g, [loss], ops, mesh_shape="b:4;m:8", topology="tpu-v2-32",
                        time_budget=20)
    assert r["mesh_shape"] == "b:4;m:8" and r["ranked"][0]["layout"] == r["layout"]
    assert r["ranked"][0]["fits"] and r["evaluations"] > 1 and "layout" in r["table"]
    times = [c["step_time"] for c in r["ranked"] if c["fits"]]
    assert times == sorted(times)
    searched = mtf.auto_layout(g, [loss], ops, topology="tpu-v2-32", max_dims=2, time_budget=20)
    assert searched["mesh_shape"].count(":") <= 2
    with pytest.raises(mtf.LayoutError, match="32|cores"):
        mtf.auto_layout(g, [loss], ops, mesh_shape="b:4", topology="tpu-v2-32")


def test_a_step_of_microbatches_is_simulated_and_searched_as_its_runs():
    # The model at a quarter of the batch, its gradients accumulated.
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    b, d, f = mtf.Dimension("batch", 16), mtf.Dimension("d_model", 256), mtf.Dimension("d_ff", 1024)
    x = mtf.placeholder(m, [b, d], name="x")
    loss = mtf.reduce_mean(mtf.square(mtf.layers.dense_relu_dense(x, f, name="ffn")))
    acc = mtf.optimize.GradientAccumulation(mtf.optimize.SgdOptimizer(0.1), loss, 4)
    kw = dict(mesh_shape="b:4;m:8", layout="batch:b;d_ff:m", topology="tpu-v2-32")
    part = mtf.simulate(g, [loss], acc.accumulate_ops, **kw)
    update = mtf.simulate(g, [], acc.apply_ops, **kw)
    step = mtf.simulate(g, [loss], acc.accumulate_ops, microbatches=4,
                        apply_targets=acc.apply_ops, **kw)
    assert part["runs"] == 1 and step["runs"] == 5
    assert step["step_time"] == pytest.approx(4 * part["step_time"] + update["step_time"])
    assert step["peak_memory"] == max(part["peak_memory"], update["peak_memory"])
    searched = mtf.auto_layout(g, [loss], acc.accumulate_ops, mesh_shape="b:4;m:8",
                               topology="tpu-v2-32", time_budget=20, microbatches=4,
                               apply_targets=acc.apply_ops)
    assert searched["runs"] == 4 and "update run" in searched["table"]
    one = mtf.auto_layout(g, [loss], acc.accumulate_ops, mesh_shape="b:4;m:8",
                          topology="tpu-v2-32", time_budget=20)
    assert searched["ranked"][0]["step_time"] > 4 * one["ranked"][0]["step_time"]
    with pytest.raises(mtf.ValueError, match="microbatches"):
        mtf.simulate(g, [loss], acc.accumulate_ops, microbatches=0, **kw)


def test_hierarchical_tiling_nests_its_tiles_and_feeds_the_simulator():
    T = mtf.simd_mesh_impl.HierarchicalTiling
    t = T([("dp", None), ("mp", [1, 1, 2])], [4, 4, 2])
    assert t.mesh_shape == mtf.Shape([mtf.Dimension("dp", 16), mtf.Dimension("mp", 2)])

    def coords(index, shape=(4, 4, 2)):
        return np.unravel_index(index, shape)

    # mp's two processors are one chip's two cores.
    for dp in range(16):
        a, b = (coords(t.logical_to_physical[dp * 2 + k]) for k in (0, 1))
        assert a[:2] == b[:2] and {a[2], b[2]} == {0, 1}
    # Along a tiled axis, consecutive coordinates are physical neighbours (a snake).
    t = T([("rest", None), ("ring", [2, 4, 1])], [4, 4, 2])
    for outer in range(4):
        path = [np.array(coords(t.logical_to_physical[outer * 8 + k])) for k in range(8)]
        assert all(np.abs(p - q).sum() == 1 for p, q in zip(path, path[1:]))
    # Its order is a simulate() physical_order: chips 4x4, 2 cores each.
    g, x, loss, ops = model(batch=32, d_model=64, d_ff=128)
    t = T([("b", None), ("m", [1, 1, 2])], [4, 4, 2])
    r = mtf.simulate(g, [loss], ops, mesh_shape="b:16;m:2", layout="batch:b;d_ff:m",
                     topology="tpu-v2-32", physical_order=t.logical_to_physical)
    assert r["cores"] == 32 and r["step_time"] > 0


@pytest.mark.parametrize("spec,shape,message", [
    ([("a", None), ("b", None)], [4, 2], "both have no tile"),
    ([("a", [2, 2]), ("b", [1, 2])], [4, 2], "cover"),
    ([("a", [3, 1])], [4, 2], "hold 3 processors"),
    ([("a", [2, 2, 1])], [4, 2], "one positive size per physical axis"),
    ([("a", None), ("a", [1, 2])], [4, 2], "named twice"),
])
def test_hierarchical_tiling_errors_name_what_to_fix(spec, shape, message):
    with pytest.raises(ValueError, match=message):
        mtf.simd_mesh_impl.HierarchicalTiling(spec, shape)

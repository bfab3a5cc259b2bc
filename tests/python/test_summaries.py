"""Summaries read back by an independent reader: the TFRecord framing with a
CRC-32C computed here, and the Event / Summary protocol buffers decoded by
python3-protobuf from the field numbers of TensorFlow's event.proto and
summary.proto; every value checked against what the run printed."""

import glob
import json
import math
import os
import re
import struct
import subprocess

import pytest

import mtf
from conftest import BUILD, run

pb = pytest.importorskip("google.protobuf", reason="python3-protobuf missing")
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

FORTUNES = "/usr/share/games/fortunes"


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def event_class():
    """tensorflow.Event with the fields TensorBoard's scalars use."""
    F = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(name="mtf_test_event.proto", package="tensorflow",
                                           syntax="proto3")
    summary = f.message_type.add(name="Summary")
    value = summary.nested_type.add(name="Value")
    value.field.add(name="tag", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    value.field.add(name="simple_value", number=2, type=F.TYPE_FLOAT, label=F.LABEL_OPTIONAL)
    summary.field.add(name="value", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                      type_name=".tensorflow.Summary.Value")
    event = f.message_type.add(name="Event")
    event.field.add(name="wall_time", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    event.field.add(name="step", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    event.field.add(name="file_version", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    event.field.add(name="summary", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                    type_name=".tensorflow.Summary")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    descriptor = pool.FindMessageTypeByName("tensorflow.Event")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


def read_events(path):
    Event = event_class()
    events = []
    with open(path, "rb") as f:
        data = f.read()
    at = 0
    while at < len(data):
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        assert length_crc == masked(crc32c(header)), f"record at {at}: bad length CRC"
        body = data[at + 12:at + 12 + length]
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        assert body_crc == masked(crc32c(body)), f"record at {at}: bad data CRC"
        event = Event()
        event.ParseFromString(body)
        events.append(event)
        at += 16 + length
    return events


def scalars_by_step(events):
    steps = {}
    for e in events[1:]:
        for v in e.summary.value:
            steps.setdefault(e.step, {})[v.tag] = v.simple_value
    return steps


@pytest.mark.skipif(not os.path.isdir(FORTUNES), reason="fortunes missing")
def test_lm_summaries_hold_the_printed_values(tmp_path):
    schedule = "0.1*warmup(4)"
    out = run([os.path.join(BUILD, "examples", "transformer_lm"), "--steps", "6",
               "--eval_every", "1", "--eval_batches", "1", "--loss_digits", "17",
               "--layers", "1", "--d_model", "32", "--d_ff", "64", "--heads", "2", "--d_kv",
               "16", "--batch", "4", "--length", "16", "--sample_bytes", "0",
               "--lr", schedule, "--clip_norm", "0.5",
               "--summary_dir", str(tmp_path / "tb"), "--metrics_jsonl",
               str(tmp_path / "m.jsonl"), "--mesh_shape", "all:2", "--layout", "batch:all"])
    printed = {int(m[0]): [float(x) for x in m[1:]] for m in re.findall(
        r"^step (\d+) loss (\S+) held-out loss (\S+) bits/byte \S+ gradient norm (\S+)$", out,
        re.M)}
    assert sorted(printed) == [1, 2, 3, 4, 5, 6], out
    files = glob.glob(str(tmp_path / "tb" / "events.out.tfevents.*"))
    assert len(files) == 1, files
    assert f"TensorBoard file {files[0]}" in out
    events = read_events(files[0])
    assert events[0].file_version == "brain.Event:2" and events[0].wall_time > 1.7e9
    steps = scalars_by_step(events)
    lr = mtf.optimize.LearningRate(schedule)
    lines = [json.loads(l) for l in open(tmp_path / "m.jsonl")]
    by_step = {}
    for line in lines:
        by_step.setdefault(line["step"], {}).update(line)
    for step, (loss, heldout, norm) in printed.items():
        s, j = steps[step], by_step[step]
        assert s["loss"] == pytest.approx(loss, rel=1e-7) and j["loss"] == loss
        assert s["gradient_norm"] == pytest.approx(norm, rel=1e-7) and j["gradient_norm"] == norm
        assert s["heldout_loss"] == pytest.approx(heldout, rel=1e-7)
        assert j["heldout_bits_per_byte"] == pytest.approx(heldout / math.log(2), rel=1e-12)
        assert s["learning_rate"] == pytest.approx(lr.at(step), rel=1e-6)
        assert j["learning_rate"] == pytest.approx(lr.at(step), rel=1e-12)
        assert s["step_time"] > 0
        assert j["tokens_per_second"] == pytest.approx(4 * 16 / j["step_time"], rel=1e-9)
        assert 0 < j["flop_utilization"] < 1
        assert j["wall_time"] > 1.7e9


def test_summary_writer_from_python(tmp_path):
    w = mtf.SummaryWriter(str(tmp_path / "tb"), str(tmp_path / "m.jsonl"))
    w.write(3, {"loss": 1.5, "accuracy": 0.25})
    w.write(4, {"loss": float("nan")})
    events = read_events(w.event_file)
    assert [e.step for e in events] == [0, 3, 4]
    assert scalars_by_step(events)[3] == {"loss": 1.5, "accuracy": 0.25}
    assert math.isnan(scalars_by_step(events)[4]["loss"])
    lines = [json.loads(l) for l in open(tmp_path / "m.jsonl")]
    assert lines[0]["loss"] == 1.5 and lines[1]["loss"] is None
    (tmp_path / "file").write_text("x")
    with pytest.raises(mtf.IoError, match="cannot open the metrics file"):
        mtf.SummaryWriter("", str(tmp_path / "file" / "m.jsonl"))
    deep = tmp_path / "runs" / "a" / "m.jsonl"  # directories made as needed
    mtf.SummaryWriter("", str(deep)).write(1, {"x": 2.0})
    assert json.loads(deep.read_text())["x"] == 2.0
    with pytest.raises(mtf.IoError, match="cannot make the TensorBoard directory"):
        mtf.SummaryWriter(str(tmp_path / "file" / "tb"), "")


@pytest.mark.skipif(not os.path.isdir(FORTUNES), reason="fortunes missing")
def test_only_rank_zero_writes(tmp_path):
    out = run([os.path.join(BUILD, "tools", "mtf-launch"), "-n", "2", "--output", "all", "--",
               os.path.join(BUILD, "examples", "transformer_lm"), "--steps", "3",
               "--eval_every", "3", "--eval_batches", "1", "--layers", "1", "--d_model", "32",
               "--d_ff", "64", "--heads", "2", "--d_kv", "16", "--batch", "4", "--length", "16",
               "--sample_bytes", "0", "--mesh_shape", "all:2", "--layout", "batch:all",
               "--summary_dir", str(tmp_path / "tb"), "--metrics_jsonl",
               str(tmp_path / "m.jsonl")])
    assert "rank 1 of 2 processes" in out
    assert len(glob.glob(str(tmp_path / "tb" / "events.out.tfevents.*"))) == 1, out
    steps = [json.loads(l)["step"] for l in open(tmp_path / "m.jsonl")]
    assert steps == [1, 1, 2, 3, 3], steps  # each step, and the evaluations at 1 and 3


@pytest.mark.skipif(not os.path.isdir(FORTUNES), reason="fortunes missing")
def test_lm_keeps_its_best_checkpoint(tmp_path):
    lm = os.path.join(BUILD, "examples", "transformer_lm")
    small = ["--layers", "1", "--d_model", "32", "--d_ff", "64", "--heads", "2", "--d_kv", "16",
             "--batch", "4", "--length", "16", "--sample_bytes", "0", "--eval_batches", "2",
             "--loss_digits", "17", "--checkpoint_dir", str(tmp_path / "ckpt"), "--keep", "1",
             "--keep_best", "true"]
    # A rate that blows the model up after step 4: the best is step 4's.
    out = run([lm, "--steps", "8", "--eval_every", "2", "--save_every", "2",
               "--lr", "0.05 until 4 then 5"] + small)
    held = {int(s): float(v) for s, v in re.findall(r"^step (\d+) loss \S+ held-out loss (\S+)",
                                                    out, re.M)}
    best_step = min((s for s in held if s % 2 == 0), key=held.get)
    assert best_step == 4 and held[8] > held[4], held
    m = re.search(r"^best checkpoint: (\S+) \(held-out loss (\S+)\)$", out, re.M)
    assert m and m.group(1).endswith("/ckpt-4.h5") and float(m.group(2)) == held[4], out
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["best", "ckpt-4.h5", "ckpt-8.h5", "latest"]
    gen = run([lm, "--generate", "true", "--sample_bytes", "8"] + small)
    assert "restored " + m.group(1) in gen, gen
    bad = subprocess.run([lm, "--steps", "3", "--eval_every", "2", "--save_every", "3"] + small,
                         capture_output=True, text=True)
    assert bad.returncode != 0
    assert "make --save_every (3) a multiple of --eval_every (2)" in bad.stderr, bad.stderr

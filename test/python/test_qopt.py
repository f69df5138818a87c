"""The qopt Python module against the command-line tools: the same explain
entries as `qopt --report`, bit-identical plan outputs to `qopt-run`, and
qopt's one-line errors as qopt.Error."""
import json
import os
import subprocess
import sys
import threading

import numpy as np
import onnx
import pytest

import qopt
from conftest import ROOT, shared_model

EXAMPLE = os.path.join(ROOT, "examples", "conv_qdq.onnx")
MODELS = ["resnet18_qat.onnx", "yolo_like_qat.onnx", "p7_conv_silu_add_qdq_everywhere.onnx"]


def cli_report(tools, path, pipeline, backend, tmp_path):
    out = tmp_path / "report.json"
    subprocess.run([tools["qopt"], path, "-passes=" + pipeline, "--explain=" + backend,
                    "--report=" + str(out), "-o", str(tmp_path / "out.onnx")],
                   check=True, capture_output=True)
    return json.loads(out.read_text())


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("backend,pipeline", [("trt", "default<trt>"), ("ort", "default<ort>")])
def test_explain_matches_cli_report(tools, tmp_path, name, backend, pipeline):
    path = shared_model(name)
    report = cli_report(tools, path, pipeline, backend, tmp_path)
    m = qopt.load(path)
    before = m.explain(backend)
    m.run_passes(pipeline)
    after = m.explain(backend)
    for mine, theirs in ((before, report["plans"][0]), (after, report["plans"][1])):
        assert mine.summary == theirs["summary"]
        assert [(l["kind"], l["nodes"], l["reason"], l["fix"]) for l in mine.leftovers] == \
               [(l["kind"], l["nodes"], l["reason"], l["fix_pipeline"]) for l in theirs["leftovers"]]
        assert len(mine.units) == len(theirs["units"])
    # The written model is the CLI's, byte for byte.
    assert m.to_bytes() == (tmp_path / "out.onnx").read_bytes()


def test_cost_report_is_data():
    m = qopt.load(shared_model("resnet18_qat.onnx"))
    cost = m.run_passes("default<trt>")
    assert cost, "default<trt> reports its lossy steps on this model"
    assert {"pass", "kind", "tensor", "max_error_lsb", "detail"} <= set(cost[0])
    assert all(e["kind"] in ("regrid", "note") for e in cost)
    assert qopt.load(shared_model("resnet18_qat.onnx")).run_passes("default<trt-exact>") == []


@pytest.mark.parametrize("name", ["resnet18_qat.onnx", "yolo_like_qat.onnx"])
def test_plan_outputs_bit_identical_to_qopt_run(tools, tmp_path, name):
    path = shared_model(name)
    plan = qopt.Plan(path, threads=2)
    rng = np.random.default_rng(7)
    feeds = {}
    for i, input_name in enumerate(plan.inputs):
        shape = [d.dim_value or 1 for d in
                 onnx.load(path).graph.input[i].type.tensor_type.shape.dim]
        feeds[input_name] = rng.random(shape, dtype=np.float32)
    args = []
    for input_name, x in feeds.items():
        np.save(tmp_path / (input_name + ".npy"), x)
        args.append("--input=%s=%s" % (input_name, tmp_path / (input_name + ".npy")))
    subprocess.run([tools["qopt-run"], path, "--plan", "--threads=2", "-o",
                    str(tmp_path / "cli.npz")] + args, check=True, capture_output=True)
    cli = np.load(tmp_path / "cli.npz")
    mine = plan.run(feeds)
    assert sorted(mine) == sorted(cli.files)
    for k in mine:
        assert mine[k].dtype == cli[k].dtype and mine[k].shape == cli[k].shape
        assert mine[k].tobytes() == cli[k].tobytes(), k
    # Saved and read back: the same bytes.
    plan.save(tmp_path / "m.qplan")
    again = qopt.Plan(str(tmp_path / "m.qplan"), threads=1).run(feeds)
    for k in mine:
        assert again[k].tobytes() == mine[k].tobytes()
    plan.save(tmp_path / "m.plan", text=True)
    text = qopt.Plan(str(tmp_path / "m.plan")).run(feeds)
    for k in mine:
        assert text[k].tobytes() == mine[k].tobytes()


def test_load_forms_and_round_trips(tmp_path):
    proto = onnx.load(EXAMPLE)
    from_bytes = qopt.load(proto.SerializeToString())
    from_path = qopt.load(EXAMPLE)
    assert from_bytes.qir() == from_path.qir()
    # .qir text in, the same model out.
    from_text = qopt.load(from_path.qir())
    assert from_text.to_bytes() == from_path.to_bytes()
    from_path.save(tmp_path / "m.qir")
    assert (tmp_path / "m.qir").read_text() == from_path.qir()
    from_path.save(tmp_path / "m.onnx")
    assert onnx.load(str(tmp_path / "m.onnx")).graph.node[0].op_type == \
        onnx.load_from_string(from_path.to_bytes()).graph.node[0].op_type
    onnx.checker.check_model(onnx.load_from_string(from_path.to_bytes()))


def test_a_plan_leaves_the_model_as_it_was():
    m = qopt.load(EXAMPLE)
    text = m.qir()
    plan = qopt.Plan(m)
    assert m.qir() == text
    x = np.zeros([1 if d.dim_value == 0 else d.dim_value for d in
                  onnx.load(EXAMPLE).graph.input[0].type.tensor_type.shape.dim], np.float32)
    assert plan.run({plan.inputs[0]: x})


def one_line(err):
    msg = str(err.value)
    assert msg and "\n" not in msg
    return msg


def test_errors_are_qopt_errors(tmp_path):
    with pytest.raises(qopt.Error) as e:
        qopt.load(b"\x08\x07garbage that is not a model")
    one_line(e)
    with pytest.raises(qopt.Error) as e:
        qopt.load(str(tmp_path / "missing.onnx"))
    assert "missing.onnx" in one_line(e)
    m = qopt.load(EXAMPLE)
    with pytest.raises(qopt.Error) as e:
        m.run_passes("no-such-pass")
    assert "no-such-pass" in one_line(e)
    with pytest.raises(qopt.Error) as e:
        m.explain("tensorflow")
    assert "tensorflow" in one_line(e)
    plan = qopt.Plan(m)
    name = plan.inputs[0]
    with pytest.raises(qopt.Error) as e:
        plan.run({name: np.zeros([1, 1], np.float32)})
    assert name in one_line(e)
    shape = [1 if d.dim_value == 0 else d.dim_value for d in
             onnx.load(EXAMPLE).graph.input[0].type.tensor_type.shape.dim]
    with pytest.raises(qopt.Error) as e:
        plan.run({name: np.zeros(shape, np.float64)})
    assert "float64" in one_line(e)
    # A dtype equal to float32 but another object is float32 (it was
    # refused: "input is float32[...]; the plan takes float32[...]").
    same = np.dtype("float32", copy=True)
    assert same is not np.dtype(np.float32)
    x = np.random.default_rng(0).random(shape).astype(np.float32)
    y = plan.run({name: x.astype(same)})
    assert all(np.array_equal(v, w) for v, w in
               zip(y.values(), plan.run({name: x}).values()))
    with pytest.raises(qopt.Error) as e:
        plan.run({name: np.zeros(shape, ">f4")})
    assert ">f4" in one_line(e)
    with pytest.raises(qopt.Error) as e:
        plan.run({})
    assert "missing" in one_line(e)
    with pytest.raises(qopt.Error) as e:
        plan.run({name: np.zeros(shape, np.float32), "other": np.zeros(1)})
    assert "other" in one_line(e)
    (tmp_path / "bad.qplan").write_bytes(b"QOPTPLAN" + b"\0" * 40)
    with pytest.raises(qopt.Error) as e:
        qopt.Plan(str(tmp_path / "bad.qplan"))
    one_line(e)
    with pytest.raises(TypeError):
        qopt.load(42)


def test_plans_run_from_threads_at_once():
    # The GIL is released while a plan runs: threads run plans side by side
    # and each gets the single-threaded result.
    plan = qopt.Plan(shared_model("resnet18_qat.onnx"), threads=1)
    x = np.random.default_rng(3).random([1, 3, 224, 224], dtype=np.float32)
    want = plan.run({"input": x})["output"].tobytes()
    results = []

    def worker():
        for _ in range(3):
            results.append(plan.run({"input": x})["output"].tobytes())

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [want] * 6


def test_plan_of_a_model_after_default_cpu():
    # A model holding q.* fused ops (no ONNX form) still makes a plan, with
    # the same outputs as one built from the file.
    path = shared_model("p7_conv_silu_add_qdq_everywhere.onnx")
    m = qopt.load(path)
    m.run_passes("default<cpu>")
    with pytest.raises(qopt.Error):
        m.to_bytes()
    fused = qopt.Plan(m, passes="", threads=1)
    direct = qopt.Plan(path, threads=1)
    shape = [d.dim_value or 1 for d in onnx.load(path).graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(5).random(shape, dtype=np.float32)
    a, b = fused.run({fused.inputs[0]: x}), direct.run({direct.inputs[0]: x})
    assert list(a) == list(b)
    for k in a:
        assert a[k].tobytes() == b[k].tobytes()


def test_plan_save_failing_is_an_error_and_keeps_the_old_file(tmp_path):
    # A full disk or a file-size limit: Plan.save raised nothing and aborted
    # the interpreter ("LLVM ERROR: IO failure on output stream"), leaving
    # the previous file truncated. Now qopt.Error, and the old file stays.
    # In a child process: the limit and SIGXFSZ are process-wide.
    old = tmp_path / "m.qplan"
    old.write_bytes(b"the previous plan")
    os.chmod(old, 0o600)
    script = (
        "import resource, signal, sys, qopt\n"
        "plan = qopt.Plan(qopt.load(sys.argv[1]))\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))\n"
        "try:\n"
        "    plan.save(sys.argv[2])\n"
        "except qopt.Error as e:\n"
        "    print('qopt.Error:', e)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", script, EXAMPLE, str(old)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "qopt.Error:" in done.stdout and "File too large" in done.stdout
    assert old.read_bytes() == b"the previous plan"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.qplan"]
    # Saved for real, it stays private.
    qopt.Plan(qopt.load(EXAMPLE)).save(old)
    assert oct(os.stat(old).st_mode & 0o777) == "0o600"
    assert qopt.Plan(str(old)).inputs


def test_one_model_from_threads_at_once():
    # One Model used from several threads: run_passes rewrites the graph with
    # the GIL released while explain, to_onnx and qir read it. They used to
    # race (a segfault, or explain's text from freed memory); each call now
    # holds the model's lock, so each sees the graph before or after a
    # whole pipeline, never during one.
    m = qopt.load(shared_model("yolo_like_qat_everywhere.onnx"))
    reference = qopt.load(shared_model("yolo_like_qat_everywhere.onnx"))
    reference.run_passes("default<trt>")
    after_once = reference.qir()
    errors, texts = [], []

    def rewrite():
        try:
            for _ in range(3):
                m.run_passes("default<trt>")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def read():
        try:
            for _ in range(6):
                texts.append(m.explain("trt"))
                onnx.checker.check_model(onnx.load_from_string(m.to_bytes()))
                assert m.qir().startswith("//") or "graph" in m.qir()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=f) for f in (rewrite, read, read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(texts) == 12 and all(texts)
    # default<trt> reaches its fixed point on the first run: the model ends
    # as one run leaves it, however the calls interleaved.
    assert m.qir() == after_once


def test_bytes_with_external_data_need_their_folder(tmp_path):
    """ONNX bytes have no folder: external data is refused unless base_dir
    names one (never the working directory)."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "inputs", "onnx", "good")
    data = open(os.path.join(here, "external_data.onnx"), "rb").read()
    cwd = os.getcwd()
    try:
        os.chdir(here)  # the .bin is right here, and still not taken
        with pytest.raises(qopt.Error, match="needs the model's folder"):
            qopt.load(data)
    finally:
        os.chdir(cwd)
    m = qopt.load(data, base_dir=here)
    assert "graph @external_data" in m.qir()


def test_plan_int4_activations(tmp_path):
    # An INT4 weight-only MLP (bench/gen_lowbit_models.py): int8 rows give
    # other bits than f32 rows, close to them; qopt-run's flag gives the
    # same bits; an unknown choice is a ValueError.
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_lowbit_models.py"),
                    str(tmp_path)], check=True, capture_output=True)
    path = str(tmp_path / "int4_mlp_block128_qdq.onnx")
    exact = qopt.Plan(path, threads=1)
    rounded = qopt.Plan(path, threads=1, int4_activations="int8")
    x = np.random.default_rng(3).uniform(-1, 1, (1, 256)).astype(np.float32)
    a, b = exact.run({"x": x})["y"], rounded.run({"x": x})["y"]
    assert a.tobytes() != b.tobytes()
    cosine = float(np.dot(a.ravel(), b.ravel()) / np.linalg.norm(a) / np.linalg.norm(b))
    assert cosine > 0.999
    with pytest.raises(ValueError):
        qopt.Plan(path, int4_activations="int4")

#!/usr/bin/python3
"""bench/compare_traces.py on made-up traces (per-step figures, ordering, refusals), and
`cohort-bench train --op-trace` writing a trace it reads: usage compare_traces_test.py BIN_DIR."""

import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import compare_traces  # noqa: E402

BIN_DIR = None


def write(path, events):
    with open(path, "w") as f:
        json.dump({"traceEvents": events}, f)


def kernel(name, dur):
    return {"name": name, "cat": "kernel", "ph": "X", "ts": 0, "dur": dur}


def op(name):
    return {"name": name, "cat": "cpu_op", "ph": "X", "ts": 0, "dur": 1}


class CompareTracesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def test_the_kernel_that_differs_most_comes_first_in_ms_per_step(self):
        # Two steps each: "gemm" costs the same, "conv" 3 ms more per step on B, "extra" is B's.
        write(self.path("a.json"), [kernel("gemm", 1000)] * 2 + [kernel("conv", 2000)] * 2 +
              [op("aten::conv2d")] * 2 + [op("cudaLaunchKernel")] * 4)
        write(self.path("b.json"), [kernel("gemm", 1000)] * 2 + [kernel("conv", 5000)] * 2 +
              [kernel("extra", 500)] * 2 + [op("aten::conv2d")] * 4 +
              [{"name": "ignored", "ph": "i"}])
        out = io.StringIO()
        compare_traces.compare("A", compare_traces.load(self.path("a.json")), "B",
                               compare_traces.load(self.path("b.json")), 2, 10, out)
        lines = out.getvalue().splitlines()
        self.assertIn("A 3.000 ms (2 launches), B 6.500 ms (3 launches)", lines[0])
        table = [line for line in lines if line.startswith(("conv", "extra", "gemm"))]
        self.assertEqual([line.split()[0] for line in table], ["conv", "extra", "gemm"])
        self.assertEqual(table[0].split()[1:], ["1.0", "1.0", "2.000", "5.000", "+3.000"])
        self.assertIn("host operators whose counts differ (per step): 1", out.getvalue())
        self.assertIn("aten::conv2d", lines[-1])  # cudaLaunchKernel is not an operator
        self.assertEqual(lines[-1].split()[1:], ["A", "1.0", "B", "2.0"])

    def test_a_missing_or_malformed_file_exits_1_naming_it(self):
        with open(self.path("bad.json"), "w") as f:
            f.write("{not json")
        script = os.path.join(HERE, "..", "..", "bench", "compare_traces.py")
        for args in (["missing.json", "bad.json"], ["bad.json", "bad.json"]):
            r = subprocess.run([sys.executable, script] + [self.path(a) for a in args],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("compare_traces:", r.stderr)

    def test_cohort_bench_writes_a_trace_of_the_cnns_operators(self):
        trace = self.path("cohort-cnn.json")
        r = subprocess.run([os.path.join(BIN_DIR, "cohort-bench"), "train", "--model", "cnn",
                            "--per-slot-batch", "4", "--steps", "1", "--warmup", "0",
                            "--op-trace", trace, "--profile-steps", "2"],
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        host = compare_traces.load(trace)["host"]
        self.assertEqual(host["aten::conv2d"], 4)  # two convolutions, two traced steps
        self.assertEqual(host["aten::convolution_backward"], 4)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: compare_traces_test.py BIN_DIR")
    BIN_DIR = sys.argv.pop(1)
    unittest.main()

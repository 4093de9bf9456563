"""The small benchmark scripts run and report what they say they measure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_pipe_throughput_reports_both_buffer_sizes():
    proc = subprocess.run([sys.executable, str(BENCH / "pipe_throughput.py"), "--mib", "64"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["mib"] == 64 and figures["default_gb_s"] > 0 and figures["widened_gb_s"] > 0


def test_child_start_times_each_part_and_the_spares(tmp_path):
    out = tmp_path / "start.json"
    proc = subprocess.run([sys.executable, str(BENCH / "child_start.py"), "--repeats", "1", "--watch", "30",
                           "--mode", "interpreter", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    measured = json.loads(out.read_text())
    (part,) = measured["parts"]
    assert part["ok"] and all(part[k] >= 0 for k in ("python", "torch", "triton", "child_modules", "monitor"))
    spares = measured["spares"]
    assert spares["slots"] >= 1 and set(spares["ready_s"]) <= set(spares["started_s"])
    assert spares["ready_s"], "no spare was ready within the watch"


def test_judge_host_moves_and_compares_every_run_and_measures_reads_into_fresh_room(tmp_path):
    out = tmp_path / "host.json"
    proc = subprocess.run([sys.executable, str(BENCH / "judge_host.py"), "--children", "1,2", "--frames", "2",
                           "--mib", "2", "--differ", "--rerun", "--torch-threads", "1", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(out.read_text())["results"]
    assert [(r["children"], r["torch_threads"]) for r in rows] == [(1, 1), (2, 1)]
    for row in rows:  # two runs of 2 MiB outputs and their reruns, per child
        assert row["gb"] == round(row["children"] * 2 * 2 * 2 / 1024, 2)
        assert row["transfer_s"] > 0 and row["compare_s_median"] > 0 and row["sent_s_median"] >= 0
    from geak_evaluator_triton.child_jobs import import_file

    judge_host = import_file("judge_host_bench", str(BENCH / "judge_host.py"))
    figures = judge_host.rooms(2, size=2 << 20, count=2)
    assert set(figures) == {"bytearray_gb_s", "mapping_gb_s", "reused_gb_s"}
    assert all(value > 0 for value in figures.values())


def test_the_sandbox_bench_reports_what_each_variant_could_touch(tmp_path):
    """bench/sandbox_gpu.py without a GPU: the CUDA part fails (said in the row), the
    confinement part is what it is anywhere: foreign writes refused, its own cache written."""
    from geak_core.kit.confinement import landlock_abi

    out = tmp_path / "sandbox.json"
    proc = subprocess.run([sys.executable, str(BENCH / "sandbox_gpu.py"), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(out.read_text())
    facts, variants = rows[0]["facts"], rows[1:]
    assert facts["landlock_abi"] == landlock_abi() and len(variants) == 4
    for row in variants:
        assert row["completed"], row
        writes = row["returned"]["writes"]
        if facts["landlock_abi"]:
            own = [path for path in writes if "geak-probe-cache-" in path]
            assert [writes[p] for p in own] == ["written"]
            assert all(outcome.startswith("refused") for path, outcome in writes.items() if path not in own)


def test_the_process_bench_finds_each_process_offset_from_the_pairs_it_timed():
    """bench/timing_processes.py: log speedup of (baseline b, other o) = a_b - a_o; the fit
    recovers offsets that hold across pairs and leaves the noise."""
    import math
    import random

    from geak_evaluator_triton.child_jobs import import_file

    fit_offsets = import_file("timing_processes_bench", str(BENCH / "timing_processes.py")).fit_offsets
    truth = [0.03, -0.01, -0.02]
    rng = random.Random(5)
    rows = [{"baseline": b, "other": o, "speedup": math.exp(truth[b] - truth[o] + rng.gauss(0, 0.002))}
            for _ in range(8) for b in range(3) for o in range(3) if b != o]
    offsets, total, left = fit_offsets(rows, 3)
    assert [round(a, 2) for a in offsets] == truth
    assert total > 0.03 and left < 0.003


def test_the_process_benchs_workers_can_be_made_alike_in_hash_seed_and_address_layout():
    """bench/timing_processes.py --hash-seed / --no-aslr: processes started after set_no_aslr
    with one PYTHONHASHSEED report the same string hash and, where the system lets
    personality(2) turn randomisation off, the same heap, C library and stack addresses
    (layout(), which each worker sends with its first answer)."""
    import json
    import os
    import subprocess
    import sys

    script = (
        "import json, os, subprocess, sys\n"
        f"sys.path.insert(0, {str(BENCH)!r})\n"
        "import timing_processes as bench\n"
        "off = bench.set_no_aslr()\n"
        "probe = 'import sys, json; sys.path.insert(0, %r); import timing_processes as b; print(json.dumps(b.layout()))' % sys.path[0]\n"
        "seen = [json.loads(subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True,"
        " check=True).stdout) for _ in range(2)]\n"
        "print(json.dumps({'off': off, 'seen': seen}))\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="7")
    found = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                                      check=True, timeout=120).stdout)
    first, second = found["seen"]
    assert first["hash"] == second["hash"] and first["glibc_tunables"] == second["glibc_tunables"]
    if found["off"]:
        assert first["personality"] == second["personality"] == "00040000"
        assert [first[k] for k in ("heap", "libc", "stack")] == [second[k] for k in ("heap", "libc", "stack")]
    else:  # refused here: the processes' addresses stay random, and the bench says so
        assert int(first["personality"], 16) & 0x40000 == 0


def test_the_process_bench_reports_a_bias_by_role_that_the_offsets_cannot_show():
    """A side read slower as the baseline than as the other, whichever process it is: the
    offsets (centred) stay zero, the bias (mean log speedup) is that slowdown, with its
    standard error; one row alone has no error."""
    import math
    import random

    from geak_evaluator_triton.child_jobs import import_file

    bench = import_file("timing_processes_bench", str(BENCH / "timing_processes.py"))
    rng = random.Random(7)
    rows = [{"baseline": b, "other": o, "speedup": math.exp(0.05 + rng.gauss(0, 0.01))}
            for _ in range(10) for b in range(3) for o in range(3) if b != o]
    offsets, _, _ = bench.fit_offsets(rows, 3)
    assert max(abs(a) for a in offsets) < 0.01
    mean, error = bench.bias(rows)
    assert 4.5 < mean < 5.5 and 0.05 < error < 0.3
    assert bench.bias(rows[:1])[1] == 0.0 and bench.bias([]) == (0.0, 0.0)


def test_the_process_benches_workers_answer_each_command_and_report_a_failing_one():
    """bench/timing_sides.py's serve_pipe, the loop of both process benches' workers."""
    from geak_evaluator_triton.child_jobs import import_file

    serve_pipe = import_file("timing_sides_bench", str(BENCH / "timing_sides.py")).serve_pipe

    class Conn:
        def __init__(self, commands):
            self.commands, self.sent = list(commands), []

        def recv(self):
            return self.commands.pop(0)

        def send(self, answer):
            self.sent.append(answer)

    conn = Conn([("double", {"n": 2}), ("double", {}), ("nonsense", {}), ("double", {"n": 5}), ("exit", {}),
                 ("double", {"n": 9})])
    serve_pipe(conn, {"double": lambda payload: {"n": 2 * payload["n"]}})
    assert conn.sent == [{"n": 4}, {"error": "KeyError: 'n'"}, {"error": "ValueError: nonsense"}, {"n": 10}]
    assert conn.commands == [("double", {"n": 9})]  # nothing read after exit


def test_input_dependence_reports_each_seeds_median_and_the_spread(tmp_path):
    out = tmp_path / "dependence.json"
    proc = subprocess.run([sys.executable, str(BENCH / "input_dependence.py"), "--op", "eig", "--sizes", "16,32",
                           "--seeds", "3", "--rounds", "4", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(out.read_text())
    assert sorted(found["sizes"]) == ["16", "32"]
    for size in found["sizes"].values():
        medians = size["medians_ms"]
        assert len(medians) == 3 and len(size["halves_ms"]) == 3 and all(m > 0 for m in medians)
        assert size["spread"] == max(medians) / min(medians) - 1
    assert "across seeds" in proc.stdout

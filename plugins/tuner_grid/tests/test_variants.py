"""Variants: the neighbourhood of a candidate's configuration, pruned by the cheap model,
ranked nearest first, each a minimal rewrite that still parses."""

from __future__ import annotations

import ast
import difflib
import textwrap

import pytest
from geak_hw_nvidia_hopper.profiles import PROFILES as HOPPER
from geak_hw_rocm_mi300.profiles import PROFILES as MI300
from geak_tuner_grid.diff import variant_diff
from geak_tuner_grid.knobs import find_knobs
from geak_tuner_grid.variants import Limits, domain, generate_variants, rewrite
from tuner_sources import ADD_KERNEL

ADD = ADD_KERNEL + textwrap.dedent('''\


    def add(x, y, out):
        n = out.numel()
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=256, num_warps=4)
        return out
''')

MATMUL = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def mm_kernel(a, b, c, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
        rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
            y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * N + rn[None, :], acc)


    def mm(a, b, c, M, N, K):
        grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
        mm_kernel[grid](a, b, c, M, N, K, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8,
                        num_stages=3, waves_per_eu=2)
''')


def _values(variant, knobs):
    changed = {k.span: v for k, v in variant.changes}
    return {k.name: changed.get(k.span, k.value) for k in knobs}


def test_the_vector_add_neighbourhood_is_pruned_by_idle_threads_only():
    """BLOCK_SIZE 32..2048 (current 256, three halvings and doublings) times num_warps
    1..32: 42 assignments, 41 besides the current one. A block smaller than its threads
    (32 * num_warps) is pruned: 0+1+2+3+4+5 = 15; none needs more than 255 registers."""
    result = generate_variants(ADD, Limits(), budget=100)
    assert result.considered == 41
    assert result.pruned == {"idle threads": 15}
    assert len(result.variants) == 26 and result.over_budget == 0
    for variant in result.variants:
        values = _values(variant, result.knobs)
        assert values["BLOCK_SIZE"] >= 32 * values["num_warps"]


def test_the_budget_keeps_the_nearest_variants_first():
    every = generate_variants(ADD, Limits(), budget=100).variants
    kept = generate_variants(ADD, Limits(), budget=5)
    assert kept.over_budget == 21
    assert [v.source for v in kept.variants] == [v.source for v in every[:5]]
    assert [v.distance for v in kept.variants] == [1, 1, 1, 1, 2]
    assert [v.distance for v in every] == sorted(v.distance for v in every)
    assert kept.variants[0].describe() == "add_kernel.BLOCK_SIZE 256->128"


def test_a_variant_changes_only_the_literals_and_still_parses():
    for variant in generate_variants(MATMUL, Limits(), budget=50).variants:
        ast.parse(variant.source)
        assert variant.source == rewrite(MATMUL, variant.changes)
        before, after = MATMUL.splitlines(), variant.source.splitlines()
        assert len(before) == len(after)
        changed = [i for i, (x, y) in enumerate(zip(before, after, strict=True)) if x != y]
        assert changed == sorted({k.span.line - 1 for k, _ in variant.changes})
        for i in changed:
            matcher = difflib.SequenceMatcher(a=before[i], b=after[i], autojunk=False)
            edits = [(op, before[i][a0:a1], after[i][b0:b1])
                     for op, a0, a1, b0, b1 in matcher.get_opcodes() if op != "equal"]
            assert all(old.isdigit() or not old for _, old, _ in edits)
            assert all(new.isdigit() or not new for _, _, new in edits)


def test_gemm_variants_fit_the_shared_memory_and_registers_of_an_mi300x():
    limits = Limits.from_profile(next(p for p in MI300 if p.name == "mi300x"))
    assert (limits.warp_size, limits.shared_memory_bytes, limits.hip) == (64, 64 * 1024, True)
    result = generate_variants(MATMUL, limits, budget=10_000)
    assert result.pruned["shared memory"] > 0 and result.variants
    for variant in result.variants:
        v = _values(variant, result.knobs)
        tiles = (v["BLOCK_M"] * v["BLOCK_K"] + v["BLOCK_K"] * v["BLOCK_N"]) * 2 * v["num_stages"]
        assert tiles <= 64 * 1024 and variant.shared_memory_bytes == tiles
        assert v["num_warps"] * 64 <= 1024
        assert v["BLOCK_M"] * v["BLOCK_N"] / (v["num_warps"] * 64) <= 512
        assert min(v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"]) >= 16


def test_the_current_gemm_tiles_need_96_kib_so_an_mi300x_keeps_none_of_that_size_at_3_stages():
    limits = Limits.from_profile(next(p for p in MI300 if p.name == "mi300x"))
    for variant in generate_variants(MATMUL, limits, budget=10_000).variants:
        v = _values(variant, find_knobs(MATMUL))
        assert not (v["BLOCK_M"] == v["BLOCK_N"] == 128 and v["BLOCK_K"] == 64 and v["num_stages"] >= 3)


def test_an_h100_keeps_the_larger_tiles_an_mi300x_prunes():
    h100 = Limits.from_profile(next(p for p in HOPPER if p.name == "h100"))
    assert (h100.warp_size, h100.shared_memory_bytes, h100.hip) == (32, 228 * 1024, False)
    result = generate_variants(MATMUL, h100, budget=10_000)
    staged = [_values(v, result.knobs) for v in result.variants]
    assert {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 4} in staged


def test_amd_only_knobs_are_proposed_for_hip_only():
    cuda = generate_variants(MATMUL, Limits(), budget=10_000)
    assert "waves_per_eu" not in {k.name for k in cuda.knobs}
    assert all(k.name != "waves_per_eu" for v in cuda.variants for k, _ in v.changes)
    hip = generate_variants(MATMUL, Limits(warp_size=64, shared_memory_bytes=64 * 1024, hip=True),
                            budget=10_000)
    assert any(k.name == "waves_per_eu" for v in hip.variants for k, _ in v.changes)


def test_warps_stay_within_the_threads_of_a_block():
    knob = next(k for k in find_knobs(ADD) if k.name == "num_warps")
    assert domain(knob, Limits(warp_size=32)) == [1, 2, 4, 8, 16, 32]
    assert domain(knob, Limits(warp_size=64)) == [1, 2, 4, 8, 16]


def test_a_source_without_knobs_has_no_variants():
    result = generate_variants("import triton\n", Limits())
    assert result.knobs == [] and result.variants == [] and result.considered == 0


def test_the_diff_shows_the_changed_literal_only():
    variant = generate_variants(ADD, Limits(), budget=1).variants[0]
    diff = variant_diff(ADD, variant.source, name="add.py")
    assert diff.splitlines() == [
        "--- a/add.py",
        "+++ b/add.py",
        "@@ -15,3 +15,3 @@",
        '     grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731',
        "-    add_kernel[grid](x, y, out, n, BLOCK_SIZE=256, num_warps=4)",
        "+    add_kernel[grid](x, y, out, n, BLOCK_SIZE=128, num_warps=4)",
        "     return out",
    ]
    assert variant_diff(ADD, ADD) == ""


@pytest.mark.slow
def test_variants_of_a_vector_add_still_add_under_the_interpreter(tmp_path, monkeypatch):
    import importlib.util

    import torch

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    result = generate_variants(ADD, Limits(), budget=100)
    blocks = {}
    for variant in result.variants:
        blocks.setdefault(_values(variant, result.knobs)["BLOCK_SIZE"], variant)
    assert sorted(blocks) == [32, 64, 128, 256, 512, 1024, 2048]
    x, y = torch.arange(1000, dtype=torch.float32), torch.full((1000,), 0.5)
    for block, variant in sorted(blocks.items()):
        path = tmp_path / f"add_{block}.py"
        path.write_text(variant.source)
        spec = importlib.util.spec_from_file_location(f"add_{block}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out = module.add(x, y, torch.empty_like(x))
        assert torch.equal(out, x + y), block


@pytest.mark.slow
def test_a_smaller_block_with_the_grid_literal_tied_still_covers_every_element(tmp_path, monkeypatch):
    import importlib.util

    import torch

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    code = ADD.replace('''grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=256, num_warps=4)''',
                       '''add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256, num_warps=1)''')
    assert "cdiv(n, 256)" in code
    result = generate_variants(code, Limits(), budget=100)
    x, y = torch.arange(1000, dtype=torch.float32), torch.full((1000,), 0.5)
    for block in (32, 64):
        variant = next(v for v in result.variants if _values(v, result.knobs)["BLOCK_SIZE"] == block)
        assert f"cdiv(n, {block})" in variant.source
        path = tmp_path / f"tied_{block}.py"
        path.write_text(variant.source)
        spec = importlib.util.spec_from_file_location(f"tied_{block}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert torch.equal(module.add(x, y, torch.empty_like(x)), x + y), block

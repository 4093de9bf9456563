"""Variants: each knob over the whole range the device allows, ordered coarse to fine by the
cheap model, each a minimal rewrite that still parses and stays within the profile's limits."""

from __future__ import annotations

import ast
import difflib
import math
import textwrap

import pytest
from geak_hw_nvidia_hopper.profiles import PROFILES as HOPPER
from geak_hw_rocm_mi300.profiles import PROFILES as MI300
from geak_tuner_grid.diff import variant_diff
from geak_tuner_grid.knobs import find_knobs
from geak_tuner_grid.model import assess, kernel_facts
from geak_tuner_grid.variants import COARSE_MAX, Limits, Search, domain, generate_variants, rewrite
from tuner_sources import ADD_KERNEL, DETUNED_ADD, DETUNED_MATMUL, MATMUL, ROW_SUM

ADD = ADD_KERNEL + textwrap.dedent('''\


    def add(x, y, out):
        n = out.numel()
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=256, num_warps=4)
        return out
''')
H100 = Limits.from_profile(next(p for p in HOPPER if p.name == "h100"))
MI300X = Limits.from_profile(next(p for p in MI300 if p.name == "mi300x"))
DEVICES = pytest.mark.parametrize("limits", [H100, MI300X], ids=["h100", "mi300x"])


def _values(variant, knobs):
    changed = {k.span: v for k, v in variant.changes}
    return {k.name: changed.get(k.span, k.value) for k in knobs}


def _knob(code, name):
    return next(k for k in find_knobs(code) if k.name == name)


# -- the range of each knob ------------------------------------------------------------------


def test_a_block_spans_every_power_of_two_up_to_what_registers_and_triton_allow():
    """A thread holds at most 255 registers on an H100 (512 on CDNA), 1024 threads a program:
    the largest block a program can hold in registers is 2**17 (2**19 on an MI300X)."""
    block = _knob(DETUNED_ADD, "BLOCK_SIZE")
    facts = kernel_facts(DETUNED_ADD)["add_kernel"]
    assert domain(block, H100, facts) == [2**i for i in range(4, 18)]
    assert domain(block, MI300X, facts) == [2**i for i in range(4, 20)]


def test_a_dot_dimension_spans_16_up_to_what_the_shared_memory_holds():
    """With the other dimensions at 16 and one stage of fp16: 228 KiB of shared memory hold an
    M of 4096 and a K of 2048; 64 KiB of LDS, 1024 of either."""
    facts = kernel_facts(DETUNED_MATMUL)["mm_kernel"]
    m, k = _knob(DETUNED_MATMUL, "BLOCK_M"), _knob(DETUNED_MATMUL, "BLOCK_K")
    assert domain(m, H100, facts) == [2**i for i in range(4, 13)]
    assert domain(k, H100, facts) == [2**i for i in range(4, 12)]
    assert domain(m, MI300X, facts) == domain(k, MI300X, facts) == [2**i for i in range(4, 11)]


def test_warps_stay_within_the_threads_of_a_block():
    knob = _knob(ADD, "num_warps")
    assert domain(knob, Limits(warp_size=32)) == [1, 2, 4, 8, 16, 32]
    assert domain(knob, Limits(warp_size=64)) == [1, 2, 4, 8, 16]


def test_the_cheap_model_prunes_idle_threads_and_register_overflow():
    """BLOCK_SIZE 16..2**17 (14 rungs) times num_warps 1..32 (6): 84 configurations. A tile
    smaller than its threads: 1+2+3+4+5+6 = 21; more than 255 elements a thread: 5+4+3+2+1 = 15."""
    result = generate_variants(ADD, Limits(), budget=100)
    assert result.considered == 84
    assert result.pruned == {"idle threads": 21, "registers": 15}
    assert len(result.variants) == 84 - 21 - 15 - 1 and result.over_budget == 0  # all but its own


# -- what is varied --------------------------------------------------------------------------


def test_a_loop_free_kernel_gets_no_num_stages_variants():
    result = generate_variants(DETUNED_ADD, H100, budget=64)
    assert "num_stages" not in {k.name for k in result.knobs}
    assert all(k.name != "num_stages" for v in result.variants for k, _ in v.changes)
    assert all("num_stages=1" in v.source for v in result.variants)


def test_a_kernel_with_a_loop_gets_num_stages_variants():
    result = generate_variants(ROW_SUM, H100, budget=16)
    assert "num_stages" in {k.name for k in result.knobs}
    assert any(k.name == "num_stages" for v in result.variants for k, _ in v.changes)


def test_amd_only_knobs_are_proposed_for_hip_only():
    cuda = generate_variants(MATMUL, H100, budget=64)
    assert "waves_per_eu" not in {k.name for k in cuda.knobs}
    assert all(k.name != "waves_per_eu" for v in cuda.variants for k, _ in v.changes)
    hip = generate_variants(MATMUL, MI300X, budget=64)
    assert any(k.name == "waves_per_eu" for v in hip.variants for k, _ in v.changes)


def test_mfma_options_are_varied_for_dot_kernels_only_and_fit_the_tile():
    streaming = DETUNED_ADD.replace("num_stages=1)", "num_stages=1, kpack=1, waves_per_eu=0)")
    varied = {k.name for k in generate_variants(streaming, MI300X).knobs}
    assert varied == {"BLOCK_SIZE", "num_warps", "waves_per_eu"}
    dot = DETUNED_MATMUL.replace("waves_per_eu=2)", "waves_per_eu=2, kpack=1, matrix_instr_nonkdim=16)")
    result = generate_variants(dot, MI300X, budget=64)
    assert {"kpack", "matrix_instr_nonkdim"} <= {k.name for k in result.knobs}
    tried = {(k.name, v) for variant in result.variants for k, v in variant.changes}
    assert {("kpack", 2), ("matrix_instr_nonkdim", 32)} <= tried  # refinements, one step each
    for variant in result.variants:  # an MFMA instruction no larger than the tile
        v = _values(variant, result.knobs)
        assert v["matrix_instr_nonkdim"] <= min(v["BLOCK_M"], v["BLOCK_N"])
        assert v["kpack"] == 1 or v["BLOCK_K"] >= 32


# -- the order: coarse, then refine ----------------------------------------------------------


@DEVICES
def test_from_a_detuned_add_the_first_variants_are_blocks_of_a_reference_s_scale(limits):
    """From a block of 16 and one warp, the first variants judged launch blocks of 512 to 4096
    with several warps, where the nearest-first neighbourhood reached 128 at most."""
    result = generate_variants(DETUNED_ADD, limits, budget=16)
    blocks = [_values(v, result.knobs)["BLOCK_SIZE"] for v in result.variants]
    assert 1024 in blocks[:2] and {512, 1024, 2048, 4096} <= set(blocks[:COARSE_MAX])
    first = _values(result.variants[0], result.knobs)
    assert first["BLOCK_SIZE"] // (first["num_warps"] * limits.warp_size) in (4, 8, 16)  # elements a thread


def test_from_a_detuned_gemm_the_first_variants_are_64_to_128_tiles_with_enough_warps():
    for limits in (H100, MI300X):
        result = generate_variants(DETUNED_MATMUL, limits, budget=16)
        first = _values(result.variants[0], result.knobs)
        assert first["BLOCK_M"] in (64, 128) and first["BLOCK_N"] in (64, 128), first
        assert 32 <= first["BLOCK_K"] <= 128 and first["num_warps"] >= 4 and first["num_stages"] >= 2
    tiles = [(v["BLOCK_M"], v["BLOCK_N"]) for v in
             (_values(v, result.knobs) for v in generate_variants(DETUNED_MATMUL, H100).variants[:COARSE_MAX])]
    assert {(64, 128), (128, 64), (64, 64), (128, 128)} <= set(tiles)


def test_coarse_variants_are_different_tiles_and_refinements_neighbours_of_the_models_best():
    search = Search(DETUNED_ADD, H100)
    plan = search.plan(16)
    coarse, refined = plan[:COARSE_MAX], plan[COARSE_MAX:]
    assert [v.phase for v in plan] == ["coarse"] * COARSE_MAX + ["refine"] * (16 - COARSE_MAX)
    assert len({_values(v, search.knobs)["BLOCK_SIZE"] for v in coarse}) == COARSE_MAX
    best = max(coarse, key=lambda v: v.score)
    first = [v for v in refined if v.point in search.neighbours(best.point)]
    assert refined[:len(first)] == first and len(first) >= 4  # the best's neighbours come first
    for number, variant in enumerate(refined):  # each a neighbour of a better variant before it
        assert any(variant.point in search.neighbours(earlier.point) and earlier.score >= variant.score
                   for earlier in plan[:COARSE_MAX + number])


AUTOTUNED = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 16}, num_warps=1),
                              triton.Config({"BLOCK_SIZE": 32}, num_warps=1)], key=["n"])
    @triton.jit
    def scale_kernel(x_ptr, n, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
''')


def test_the_configs_of_an_autotune_list_take_different_coarse_picks_and_score_as_the_best():
    """The autotuner runs the fastest config: each coarse variant offers it two different
    tiles, and the next variant two more."""
    search = Search(AUTOTUNED, H100)
    facts = kernel_facts(AUTOTUNED)["scale_kernel"]
    coarse = search.plan(4)[:2]
    configs = []
    for variant in coarse:
        values = [{k.name: v for k, v in zip(search.knobs, variant.point, strict=True) if k.config == c}
                  for c in (0, 1)]
        configs.append(values)
        scores = [assess(v, {"BLOCK_SIZE"}, facts, H100, 2).score for v in values]
        assert variant.score == max(scores)
    blocks = [{c["BLOCK_SIZE"] for c in pair} for pair in configs]
    assert [len(pair) for pair in blocks] == [2, 2] and not blocks[0] & blocks[1]


def test_the_budget_bounds_the_plan_and_the_rest_is_counted():
    small = generate_variants(DETUNED_ADD, H100, budget=5)
    every = generate_variants(DETUNED_ADD, H100, budget=1000)
    assert len(small.variants) == 5 and small.over_budget == len(every.variants) - 5
    assert [v.phase for v in small.variants] == ["coarse"] * 3 + ["refine"] * 2


def test_a_source_without_knobs_has_no_variants():
    result = generate_variants("import triton\n", Limits())
    assert result.knobs == [] and result.variants == [] and result.considered == 0


# -- every variant legal ---------------------------------------------------------------------


@DEVICES
@pytest.mark.parametrize("code", [DETUNED_ADD, ADD, ROW_SUM, MATMUL, DETUNED_MATMUL],
                         ids=["detuned-add", "add", "row-sum", "matmul", "detuned-matmul"])
def test_every_variant_parses_and_respects_the_profiles_limits(limits, code):
    result = generate_variants(code, limits, budget=64)
    assert result.variants
    dot = "tl.dot" in code
    for variant in result.variants:
        ast.parse(variant.source)
        v = {k.name: k.value for k in find_knobs(variant.source)}  # read back from the source
        blocks = {name: value for name, value in v.items() if name.startswith("BLOCK")}
        threads = v["num_warps"] * limits.warp_size
        assert threads <= limits.max_threads
        assert all(b & (b - 1) == 0 and b <= 2**20 for b in blocks.values())  # tl.arange's shapes
        if dot:
            assert min(blocks.values()) >= 16
            tiles = (v["BLOCK_M"] * v["BLOCK_K"] + v["BLOCK_K"] * v["BLOCK_N"]) * 2 * v["num_stages"]
            assert tiles <= limits.shared_memory_bytes and variant.shared_memory_bytes == tiles
            assert v["BLOCK_M"] * v["BLOCK_N"] / threads <= limits.max_registers_per_thread
        else:
            assert math.prod(blocks.values()) >= threads
            assert all(b / threads <= limits.max_registers_per_thread for b in blocks.values())
        if not limits.hip:
            assert "waves_per_eu" not in {k.name for k, _ in variant.changes}


def _assess(code, limits, **values):
    search = Search(code, limits)
    point = tuple(values.get(k.name, k.value) for k in search.knobs)
    return search.assessment(point)


def test_128x128x64_tiles_at_3_stages_need_96_kib_more_than_an_mi300x_has_but_an_h100_has():
    tiles = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}
    assert _assess(MATMUL, MI300X, **tiles, num_stages=3).reason == "shared memory"
    assert _assess(MATMUL, MI300X, **tiles, num_stages=2).reason is None
    assert _assess(MATMUL, H100, **tiles, num_stages=4).reason is None
    for variant in generate_variants(MATMUL, MI300X, budget=200).variants:
        v = _values(variant, find_knobs(MATMUL))
        assert not (v["BLOCK_M"] == v["BLOCK_N"] == 128 and v["BLOCK_K"] == 64 and v["num_stages"] >= 3)


def test_a_variant_changes_only_the_literals_and_still_parses():
    for variant in generate_variants(MATMUL, H100, budget=50).variants:
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


def test_the_diff_shows_the_changed_literal_only():
    variant = generate_variants(ADD, Limits(), budget=1).variants[0]
    assert variant.describe() == "add_kernel.BLOCK_SIZE 256->2048, add_kernel.num_warps 4->8"
    diff = variant_diff(ADD, variant.source, name="add.py")
    assert diff.splitlines() == [
        "--- a/add.py",
        "+++ b/add.py",
        "@@ -15,3 +15,3 @@",
        '     grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731',
        "-    add_kernel[grid](x, y, out, n, BLOCK_SIZE=256, num_warps=4)",
        "+    add_kernel[grid](x, y, out, n, BLOCK_SIZE=2048, num_warps=8)",
        "     return out",
    ]
    assert variant_diff(ADD, ADD) == ""


# -- under the interpreter -------------------------------------------------------------------


def _load(path, source):
    import importlib.util

    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_coarse_variants_of_a_detuned_add_still_add_under_the_interpreter(tmp_path, monkeypatch):
    import torch

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    result = generate_variants(DETUNED_ADD, H100, budget=COARSE_MAX)
    x, y = torch.arange(5000, dtype=torch.float32), torch.full((5000,), 0.5)
    for number, variant in enumerate(result.variants):
        block = _values(variant, result.knobs)["BLOCK_SIZE"]
        assert f"cdiv(n, {block})" in variant.source  # the grid follows the block
        module = _load(tmp_path / f"add_{number}.py", variant.source)
        assert torch.equal(module.add(x, y, torch.empty_like(x)), x + y), variant.describe()


@pytest.mark.slow
def test_a_smaller_block_with_the_grid_literal_tied_still_covers_every_element(tmp_path, monkeypatch):
    import torch

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    code = DETUNED_ADD.replace("cdiv(n, 16)", "cdiv(n, 256)").replace("BLOCK_SIZE=16", "BLOCK_SIZE=256")
    result = generate_variants(code, Limits(), budget=1000)
    x, y = torch.arange(1000, dtype=torch.float32), torch.full((1000,), 0.5)
    for block in (32, 64):
        variant = next(v for v in result.variants if _values(v, result.knobs)["BLOCK_SIZE"] == block)
        assert f"cdiv(n, {block})" in variant.source
        module = _load(tmp_path / f"tied_{block}.py", variant.source)
        assert torch.equal(module.add(x, y, torch.empty_like(x)), x + y), block

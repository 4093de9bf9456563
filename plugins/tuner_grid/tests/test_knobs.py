"""Knobs are found by reading the source: which literals, of which kernel, at which spans."""

from __future__ import annotations

import textwrap

from geak_tuner_grid.knobs import Knob, Span, find_knobs


def _text(code: str, span: Span) -> str:
    lines = code.splitlines()
    assert span.line == span.end_line
    return lines[span.line - 1][span.col:span.end_col]


LAUNCHES = textwrap.dedent('''\
    import triton
    import triton.language as tl

    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK_SIZE: tl.constexpr, MASKED: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(out_ptr + offs, x * alpha, mask=offs < n)

    def scale_positional(x, out, alpha):
        n = out.numel()
        scale_kernel[(triton.cdiv(n, 512),)](x, out, n, 3, 512, True, num_warps=4)

    def scale_keyword(x, out, alpha):
        n = out.numel()
        scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](
            x, out, n, alpha, BLOCK_SIZE=1024, MASKED=True, num_stages=2, waves_per_eu=1)
''')


def test_constexpr_literals_and_launch_options_are_found_at_their_exact_spans():
    knobs = find_knobs(LAUNCHES)
    assert [(k.name, k.kind, k.value, k.span) for k in knobs] == [
        ("BLOCK_SIZE", "block", 512, Span(13, 55, 13, 58)),
        ("num_warps", "warps", 4, Span(13, 76, 13, 77)),
        ("BLOCK_SIZE", "block", 1024, Span(18, 37, 18, 41)),
        ("num_stages", "stages", 2, Span(18, 67, 18, 68)),
        ("waves_per_eu", "waves_per_eu", 1, Span(18, 83, 18, 84)),
    ]
    assert all(_text(LAUNCHES, k.span) == str(k.value) for k in knobs)
    assert {k.kernel for k in knobs} == {"scale_kernel"} and {k.site for k in knobs} == {"launch"}


def test_only_the_amd_knobs_are_hip_only():
    assert [k.name for k in find_knobs(LAUNCHES) if k.hip_only] == ["waves_per_eu"]


def test_a_plain_argument_or_a_boolean_constexpr_is_not_a_knob():
    names = [k.name for k in find_knobs(LAUNCHES)]
    assert "alpha" not in names and "MASKED" not in names


BOUND = textwrap.dedent('''\
    import triton
    import triton.language as tl

    TILE = 64

    @triton.jit
    def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)

    def copy_once(src, dst):
        BLOCK = 256
        warps = 8
        copy_kernel[(triton.cdiv(dst.numel(), BLOCK),)](src, dst, dst.numel(), BLOCK, num_warps=warps)

    def copy_rebound(src, dst):
        BLOCK = 128
        if dst.numel() > 4096:
            BLOCK = 2048
        copy_kernel[(triton.cdiv(dst.numel(), BLOCK),)](src, dst, dst.numel(), BLOCK)

    def copy_computed(src, dst):
        BLOCK = triton.next_power_of_2(dst.numel())
        copy_kernel[(1,)](src, dst, dst.numel(), BLOCK)

    def copy_module_tile(src, dst):
        copy_kernel[(triton.cdiv(dst.numel(), TILE),)](src, dst, dst.numel(), BLOCK=TILE)
''')


def test_a_name_bound_once_to_a_literal_is_followed_to_that_literal():
    knobs = find_knobs(BOUND)
    assert [(k.name, k.value, k.span.line) for k in knobs] == [
        ("BLOCK", 64, 4),  # the module's TILE
        ("BLOCK", 256, 12),  # BLOCK = 256, which the grid reads too
        ("num_warps", 8, 13),
    ]
    assert all(_text(BOUND, k.span) == str(k.value) for k in knobs)


def test_a_rebound_or_computed_name_is_not_a_knob():
    lines = {k.span.line for k in find_knobs(BOUND)}
    assert not lines & {17, 19, 23}


AUTOTUNED = textwrap.dedent('''\
    import triton
    import triton.language as tl

    CONFIGS = [
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 32, "GROUP": 8}, num_warps=4, num_stages=2),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "waves_per_eu": 2}, num_warps=8),
    ]

    @triton.autotune(configs=CONFIGS, key=["n"])
    @triton.jit
    def rows_kernel(x, out, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP: tl.constexpr):
        pass

    @triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_stages=3)], key=["n"])
    @triton.jit
    def flat_kernel(x, n, BLOCK: tl.constexpr):
        pass

    def run(x, out, n):
        rows_kernel[(1,)](x, out, n)
        flat_kernel[(1,)](x, n, BLOCK=512)
''')


def test_autotune_configs_give_one_knob_per_value_and_config():
    knobs = find_knobs(AUTOTUNED)
    assert [(k.kernel, k.config, k.name, k.value) for k in knobs] == [
        ("rows_kernel", 0, "BLOCK_M", 64),
        ("rows_kernel", 0, "BLOCK_N", 32),
        ("rows_kernel", 0, "num_warps", 4),
        ("rows_kernel", 0, "num_stages", 2),
        ("rows_kernel", 1, "BLOCK_M", 128),
        ("rows_kernel", 1, "BLOCK_N", 64),
        ("rows_kernel", 1, "waves_per_eu", 2),
        ("rows_kernel", 1, "num_warps", 8),
        ("flat_kernel", 0, "BLOCK", 256),
        ("flat_kernel", 0, "num_stages", 3),
    ]
    assert {k.site for k in knobs} == {"config"}
    assert all(_text(AUTOTUNED, k.span) == str(k.value) for k in knobs)


def test_a_constexpr_the_autotuner_sets_is_not_taken_from_a_launch():
    assert not [k for k in find_knobs(AUTOTUNED) if k.site == "launch"]


def test_columns_count_characters_not_bytes():
    code = LAUNCHES.replace("n = out.numel()\n    scale_kernel[(", "n = out.numel()  # größe\n    s = 'é'; scale_kernel[(")
    knob = find_knobs(code)[0]
    assert isinstance(knob, Knob) and _text(code, knob.span) == "512"


def test_a_source_without_kernels_has_no_knobs():
    assert find_knobs("def f(x, BLOCK=128):\n    return g[1](x, BLOCK=128, num_warps=4)\n") == []


GRIDS = textwrap.dedent('''\
    import triton
    import triton.language as tl

    @triton.jit
    def tile_kernel(x, n, m, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
        pass

    def literal_grid(x, n, m):
        tile_kernel[(triton.cdiv(n, 32), m // 64)](x, n, m, BLOCK_R=32, BLOCK_C=64)

    def named_grid(x, n, m):
        grid = (triton.cdiv(n, 16), triton.cdiv(m, 128))
        tile_kernel[grid](x, n, m, BLOCK_R=16, BLOCK_C=128)

    def repeated_divisor(x, n, m):
        tile_kernel[(triton.cdiv(n, 16), triton.cdiv(m, 16))](x, n, m, BLOCK_R=16, BLOCK_C=128)

    def ambiguous_grid(x, n, m):
        tile_kernel[(triton.cdiv(n, 32), triton.cdiv(m, 32))](x, n, m, BLOCK_R=32, BLOCK_C=32)
''')


def test_a_block_size_repeated_in_the_grid_is_tied_to_its_knob():
    knobs = {(k.span.line, k.name): k for k in find_knobs(GRIDS)}
    rows, cols = knobs[(9, "BLOCK_R")], knobs[(9, "BLOCK_C")]
    assert [_text(GRIDS, s) for s in rows.tied] == ["32"] and rows.tied[0].col < rows.span.col
    assert [_text(GRIDS, s) for s in cols.tied] == ["64"]
    assert cols.tied == (Span(9, 42, 9, 44),)


def test_a_grid_bound_once_to_a_name_is_followed():
    rows, cols = (knob for knob in find_knobs(GRIDS) if knob.span.line == 13)
    assert (rows.name, cols.name) == ("BLOCK_R", "BLOCK_C")
    assert [(s.line, _text(GRIDS, s)) for s in rows.tied] == [(12, "16")]
    assert [(s.line, _text(GRIDS, s)) for s in cols.tied] == [(12, "128")]


def test_a_grid_literal_written_twice_or_shared_by_two_block_knobs_is_tied_to_none():
    assert [k.tied for k in find_knobs(GRIDS) if k.span.line == 16] == [(), ()]
    assert [k.tied for k in find_knobs(GRIDS) if k.span.line == 19] == [(), ()]


def test_launch_options_left_at_their_defaults_are_implicit_knobs_only_when_asked_for():
    explicit = find_knobs(LAUNCHES)
    knobs = find_knobs(LAUNCHES, implicit=True)
    implicit = [k for k in knobs if k.implicit]
    assert [k for k in knobs if not k.implicit] == explicit
    # the first launch gives num_warps, not num_stages; the second num_stages, not num_warps
    assert [(k.name, k.kind, k.value, k.span, k.insert) for k in implicit] == [
        ("num_stages", "stages", 3, Span(13, 77, 13, 77), ", num_stages={}"),
        ("num_warps", "warps", 4, Span(18, 84, 18, 84), ", num_warps={}"),
    ]
    assert [k.value for k in find_knobs(LAUNCHES, implicit=True, hip=True) if k.implicit] == [2, 4]


def test_an_implicit_knob_is_written_after_the_launchs_last_argument():
    from geak_tuner_grid.variants import rewrite

    knobs = {(k.name, k.span.line): k for k in find_knobs(LAUNCHES, implicit=True)}
    code = rewrite(LAUNCHES, [(knobs["num_stages", 13], 2), (knobs["num_warps", 18], 8),
                              (knobs["BLOCK_SIZE", 18], 2048), (knobs["waves_per_eu", 18], 2)])
    lines = code.splitlines()
    assert lines[12].endswith("(x, out, n, 3, 512, True, num_warps=4, num_stages=2)")
    assert lines[17].endswith("BLOCK_SIZE=2048, MASKED=True, num_stages=2, waves_per_eu=2, num_warps=8)")
    assert [line for line in lines if line not in (lines[12], lines[17])] == [
        line for i, line in enumerate(LAUNCHES.splitlines()) if i not in (12, 17)]
    # read back, the written options are plain knobs with the values given
    again = {(k.name, k.span.line): k.value for k in find_knobs(code, implicit=True) if not k.implicit}
    assert again["num_stages", 13] == 2 and again["num_warps", 18] == 8


def test_no_implicit_knob_for_an_autotuned_kernel_a_kwargs_launch_or_a_launch_without_arguments():
    assert not [k for k in find_knobs(AUTOTUNED, implicit=True) if k.implicit]
    code = LAUNCHES + textwrap.dedent('''\

        def scale_options(x, out, options):
            scale_kernel[(1,)](x, out, 1, 2.0, 64, False, **options)
            scale_kernel[(1,)]()
    ''')
    assert [k.span.line for k in find_knobs(code, implicit=True) if k.implicit] == [13, 18]

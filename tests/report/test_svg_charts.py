"""The report's charts as inline SVG: what each draws, where, and what hovering it says."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from geak_core.reporting.svg_charts import (
    Axis,
    Bars,
    Box,
    Point,
    Rule,
    Series,
    bar_chart,
    box_chart,
    line_chart,
    quartiles,
    ticks,
)

SVG = "{http://www.w3.org/2000/svg}"


def _svg(figure: str) -> ET.Element:
    """The chart's <svg>, parsed as XML: a malformed drawing fails here."""
    drawing = figure.split("</figcaption>", 1)[1].split('<ul class="legend">', 1)[0]
    return ET.fromstring(drawing.removesuffix("</figure>"))


def _series(svg: ET.Element) -> list[ET.Element]:
    return [g for g in svg.iter(f"{SVG}g") if g.get("class") == "series"]


def test_a_line_chart_draws_each_series_with_a_tooltip_per_point_and_a_legend_entry():
    figure = line_chart("seq", "Accuracy after i iterations", [
        Series("run: execution", [Point(1, 0.0, "0% after 1"), Point(2, 50.0, "50% after 2"),
                                  Point(3, 100.0, "100% after 3")], "#1f77b4"),
        Series("run: call", [Point(1, 50.0, "a"), Point(2, 100.0, "b"), Point(3, 100.0, "c")], "#1f77b4", "dot"),
    ], Axis("iterations", whole=True), Axis("accuracy (%)", low=0, high=105))
    assert figure.startswith('<figure class="chart" data-chart="seq"><figcaption>Accuracy after i iterations')
    assert "<script" not in figure
    svg = _svg(figure)
    assert svg.get("id") == "chart-seq"
    first, second = _series(svg)
    titles = [c.find(f"{SVG}title").text for c in first.iter(f"{SVG}circle")]
    assert titles == ["0% after 1", "50% after 2", "100% after 3"]
    # higher values are drawn higher up (smaller y), at the same x as their iteration
    ys = [float(c.get("cy")) for c in first.iter(f"{SVG}circle")]
    assert ys[0] > ys[1] > ys[2]
    assert [c.get("cx") for c in first.iter(f"{SVG}circle")] == [c.get("cx") for c in second.iter(f"{SVG}circle")]
    assert second.find(f"{SVG}path").get("stroke-dasharray") == "2 3"  # dotted
    assert re.findall(r'<li data-series="(\d)"[^>]*><svg class="swatch"[^>]*>.*?</svg>([^<]*)</li>', figure) == [
        ("0", "run: execution"), ("1", "run: call")]
    labels = [t.text for t in svg.iter(f"{SVG}text")]
    assert {"1", "2", "3", "0", "50", "100", "iterations", "accuracy (%)"} <= set(labels)


def test_a_missing_value_breaks_the_line_and_a_log_axis_leaves_out_what_it_cannot_place():
    figure = line_chart("gap", "t", [Series("s", [Point(1, 1.0, "a"), Point(2, None, "b"), Point(3, 2.0, "c"),
                                                 Point(4, 4.0, "d"), Point(5, 0.0, "zero")], "#000")],
                        Axis("x"), Axis("y", log=True), rules=[Rule(1.0, "baseline")])
    (series,) = _series(_svg(figure))
    path = series.find(f"{SVG}path").get("d")
    assert path.count("M") == 2 and path.count("L") == 1  # 1 | 3 - 4: no point for None or 0 on a log axis
    assert [c.find(f"{SVG}title").text for c in series.iter(f"{SVG}circle")] == ["a", "c", "d"]
    assert "baseline" in figure


def test_ticks_are_round_numbers_inside_the_range():
    assert ticks(0, 105) == [0, 50, 100]
    assert ticks(0, 1.6) == [0, 0.5, 1, 1.5]
    assert ticks(0.9, 3.1, whole=True) == [1, 2, 3]
    assert ticks(0.03, 4000, log=True) == [0.1, 1, 10, 100, 1000]
    assert ticks(0.4, 2.5, log=True) == [0.5, 1, 2]  # under two decades: 2 and 5 times too
    assert len(ticks(0.8, 1.7, log=True)) >= 3


def test_grouped_bars_carry_their_count_and_tooltip_and_leave_out_missing_groups():
    figure = bar_chart("cat", "Execution accuracy by category", ["GEMM", "Math"], [
        Bars("a: execution", "#1f77b4", [50.0, 100.0], ["2", "1"], ["a, GEMM: 50.0% of 2", "a, Math: 100.0% of 1"]),
        Bars("b: execution", "#d62728", [None, 0.0], ["", "1"], ["", "b, Math: 0.0% of 1"]),
    ], Axis("execution accuracy (%)", low=0, high=105))
    a, b = _series(_svg(figure))
    bars_a = [r for r in a.iter(f"{SVG}rect")]
    assert [r.find(f"{SVG}title").text for r in bars_a] == ["a, GEMM: 50.0% of 2", "a, Math: 100.0% of 1"]
    assert float(bars_a[1].get("height")) == pytest.approx(2 * float(bars_a[0].get("height")), rel=1e-2)
    assert [r.find(f"{SVG}title").text for r in b.iter(f"{SVG}rect")] == ["b, Math: 0.0% of 1"]
    assert [t.text for t in a.iter(f"{SVG}text")] == ["2", "1"]


def test_a_box_spans_the_quartiles_with_every_value_as_a_point():
    assert quartiles([1.0, 2.0, 3.0, 4.0, 5.0]) == (2.0, 3.0, 4.0)
    assert quartiles([1.0, 2.0]) == (1.25, 1.5, 1.75)
    figure = box_chart("speedup", "Speedup", [
        Box("run: all correct", "#1f77b4", [0.5, 1.0, 2.0, 4.0], ["c1", "c2", "c3", "c4"],
            caption=["run", "all correct"]),
        Box("empty", "#000", [], []),
    ], Axis("speedup (x)", log=True), rules=[Rule(1.0, "as fast as the baseline")])
    (series,) = _series(_svg(figure))  # a box without values is left out
    box = next(r for r in series.iter(f"{SVG}rect") if r.get("class") == "box")
    assert "median 1.5" in box.find(f"{SVG}title").text and "4 values" in box.find(f"{SVG}title").text
    assert [c.find(f"{SVG}title").text for c in series.iter(f"{SVG}circle")] == ["c1", "c2", "c3", "c4"]
    assert ">run<" in figure and ">all correct<" in figure and "as fast as the baseline" in figure

"""The simulator's figure, read back from matplotlib's objects and from the files it writes: what
someone looking at a shared plot relies on (the band, the bounds, the scales, the styles, the
driving metric, the key figures, the resolution)."""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from matplotlib import pyplot
from matplotlib.colors import to_rgb

from hpa.sim.engine import SimulationResult, simulate
from hpa.sim.manifest import parse_manifests
from hpa.sim.plot import DPI, KEY_FIGURES, build_figure, plot_result
from hpa.sim.report import summary_columns
from hpa.sim.scenarios import hpa_manifest
from hpa.sim.trace import shape_trace
from tests.hpa.sim.test_commands import EXTERNAL_HPA, FAST_UP


def run(manifests: Sequence[str], shape: str) -> SimulationResult:
    hpas = [
        m for index, text in enumerate(manifests) for m in parse_manifests(text, source=f"{index}")
    ]
    return simulate(hpas, shape_trace(shape))


@pytest.fixture(scope="module")
def cpu_and_queue() -> SimulationResult:
    """Two HPAs, one on cpu and one on an External metric first (tolerance 0.05 up); a 10x step."""
    return run(
        [hpa_manifest("cpu", max_replicas=20), EXTERNAL_HPA],
        "step:base=20,peak=200,at=1m,duration=6m",
    )


@pytest.fixture(scope="module")
def thousandfold() -> SimulationResult:
    """1 -> 1000 replicas: utilization of a lone pod at 50,000 %, then back near 50 %."""
    return run(
        [
            hpa_manifest("fast", behavior=FAST_UP, max_replicas=1000),
            hpa_manifest("default", max_replicas=1000),
        ],
        "step:base=10,peak=25000,at=1m,duration=5m",
    )


@pytest.fixture(scope="module")
def mixed(cpu_and_queue: SimulationResult) -> Iterator[Any]:
    figure = build_figure(cpu_and_queue, title="t")
    yield figure
    pyplot.close(figure)


@pytest.fixture(scope="module")
def wide(thousandfold: SimulationResult) -> Iterator[Any]:
    figure = build_figure(thousandfold, title="t")
    yield figure
    pyplot.close(figure)


def axis(figure: Any, ylabel_start: str) -> Any:
    (found,) = [ax for ax in figure.axes if ax.get_ylabel().startswith(ylabel_start)]
    return found


def line(ax: Any, label: str) -> Any:
    (found,) = [artist for artist in ax.get_lines() if artist.get_label() == label]
    return found


def y_span(patch: Any) -> tuple[float, float]:
    ys = patch.get_path().transformed(patch.get_patch_transform()).vertices[:, 1]
    return float(ys.min()), float(ys.max())


def test_target_with_its_tolerance_band_is_shaded_in_the_hpas_colour(mixed: Any) -> None:
    util = axis(mixed, "cpu utilization")
    target = line(util, "cpu target 50% (band -0.1/+0.1)")
    assert list(target.get_ydata()) == [50, 50]
    bands = [(y_span(patch), patch.get_facecolor()[:3]) for patch in util.patches]
    (colour,) = [colour for span, colour in bands if span == pytest.approx((45.0, 55.0))]
    replicas = line(axis(mixed, "replicas"), "cpu")
    assert colour == pytest.approx(to_rgb(replicas.get_color()))


def test_min_and_max_replicas_are_lines_of_each_hpa(mixed: Any) -> None:
    replicas = axis(mixed, "replicas")
    assert list(line(replicas, "queue minReplicas 2").get_ydata()) == [2, 2]
    assert list(line(replicas, "queue maxReplicas 20").get_ydata()) == [20, 20]
    assert list(line(replicas, "cpu minReplicas 1").get_ydata()) == [1, 1]
    low, high = replicas.get_ylim()
    assert low <= 1  # both HPAs' bounds are on the axis
    assert high >= 20


def test_a_log_axis_only_when_utilization_spans_more_than_two_decades(
    mixed: Any, wide: Any
) -> None:
    assert axis(wide, "cpu utilization").get_yscale() == "log"
    assert axis(wide, "replicas").get_yscale() == "log"  # 1 -> 1000
    assert axis(mixed, "cpu utilization").get_yscale() == "linear"
    assert axis(mixed, "replicas").get_yscale() == "linear"


def test_each_hpa_has_its_own_line_style_on_every_panel(wide: Any) -> None:
    for ylabel in ("replicas", "cpu utilization"):
        ax = axis(wide, ylabel)
        fast, default = line(ax, "fast"), line(ax, "default")
        assert fast.get_linestyle() != default.get_linestyle()
        assert fast.get_color() != default.get_color()


def test_the_metric_that_drove_scaling_has_a_panel_when_it_is_not_cpu(
    cpu_and_queue: SimulationResult, mixed: Any, wide: Any
) -> None:
    metric = axis(mixed, "metric")
    observed = line(metric, "queue: External sqs_queue_depth")
    queue_run = cpu_and_queue.runs[1]
    read = [r.observed for r in queue_run.timeline if r.observed is not None]
    assert max(observed.get_ydata()) == pytest.approx(max(read))
    target = line(metric, "queue target AverageValue 20\n(band -0.1/+0.05)")
    assert list(target.get_ydata()) == [20, 20]
    assert [y_span(patch) for patch in metric.patches] == [pytest.approx((18.0, 21.0))]
    assert not [artist for artist in metric.get_lines() if artist.get_label().startswith("cpu")]
    # cpu only: the utilization panel says it all, no metric panel
    assert not [ax for ax in wide.axes if ax.get_ylabel().startswith("metric")]


def test_the_comparisons_key_figures_are_on_the_figure(
    cpu_and_queue: SimulationResult, mixed: Any
) -> None:
    (table,) = [table for ax in mixed.axes for table in ax.tables]
    cells = {key: cell.get_text().get_text() for key, cell in table.get_celld().items()}
    assert [cells[(0, 1)], cells[(0, 2)]] == ["cpu", "queue"]
    assert [cells[(row, 0)] for row in range(1, len(KEY_FIGURES) + 1)] == list(KEY_FIGURES)
    columns = summary_columns(cpu_and_queue)
    assert cells[(1, 1)] == columns[0][1]  # pod-hours, as in the printed summary
    assert cells[(1, 2)] == columns[1][1]


def png_dpi_and_size(path: Path) -> tuple[float, tuple[int, int]]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    at = data.index(b"pHYs")
    per_metre_x, _, unit = struct.unpack(">IIB", data[at + 4 : at + 13])
    assert unit == 1  # metres
    return per_metre_x * 0.0254, (width, height)


def test_a_150_dpi_png_and_an_svg_with_searchable_text(
    cpu_and_queue: SimulationResult, tmp_path: Path
) -> None:
    written = plot_result(cpu_and_queue, tmp_path / "plot.png", title="cpu vs queue")

    assert written == [tmp_path / "plot.png", tmp_path / "plot.svg"]
    dpi, (width, height) = png_dpi_and_size(tmp_path / "plot.png")
    assert round(dpi) == DPI == 150
    assert width == 12 * DPI
    assert height > 10 * DPI
    svg = ET.parse(tmp_path / "plot.svg").getroot()  # noqa: S314 (our own file)
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    text = " ".join(
        "".join(node.itertext()) for node in svg.iter("{http://www.w3.org/2000/svg}text")
    )
    for expected in ("cpu vs queue", "pod-hours (cost)", "queue minReplicas 2", "cpu target 50%"):
        assert expected in text

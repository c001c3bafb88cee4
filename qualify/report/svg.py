"""The memory timeline of a run as one inline SVG (no script, no external resources).

The timeline can hold hours of 50 ms samples; it is read twice as a stream (time range,
then buckets) and reduced to at most ``2 * buckets`` points, each bucket keeping its lowest
and highest sample so that spikes (the peak, the moment of an OOM kill) survive.

Hovering the plot shows the time, the usage (and its share of the cap) and the phase at that
moment: a transparent slice of the plot per few pixels, each with its ``<title>`` (the
browser's own tooltip, no script), highlighted by the page's CSS.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from html import escape

from qualify.records import frozen_record
from qualify.run.timeline import TimelineSample
from qualify.sizes import format_bytes

WIDTH, HEIGHT = 1000, 340
LEFT, RIGHT, TOP, BOTTOM = 78, 20, 48, 36
DEFAULT_BUCKETS = 400


@frozen_record
class Point:
    """One plotted sample: seconds since the run started, bytes."""

    t: float
    value: int


@frozen_record
class Band:
    """A phase window in seconds since the run started."""

    name: str
    start: float
    end: float
    error: str | None = None


@frozen_record
class Marker:
    """A vertical event line (OOM kill, CUDA OOM) at ``t`` seconds."""

    label: str
    t: float
    css: str


@frozen_record
class Timeline:
    """Everything the chart draws."""

    memory: tuple[Point, ...]
    gpu: tuple[Point, ...] = ()
    bands: tuple[Band, ...] = ()
    markers: tuple[Marker, ...] = ()
    cap_bytes: int | None = None
    peak: Point | None = None
    samples: int = 0


def _gpu_bytes(sample: TimelineSample) -> int | None:
    gpu = sample.gpu
    if not gpu or not gpu.get("devices"):
        return None
    try:
        return sum(int(device[1]) for device in gpu["devices"])
    except (TypeError, ValueError, IndexError):
        return None


def _reduce(points: Iterable[Point], start: float, end: float, buckets: int) -> list[Point]:
    """Lowest and highest point of each of ``buckets`` equal time slices, in time order."""
    span = max(end - start, 1e-9)
    lowest: dict[int, Point] = {}
    highest: dict[int, Point] = {}
    for point in points:
        index = min(int((point.t - start) / span * buckets), buckets - 1)
        if index not in lowest or point.value < lowest[index].value:
            lowest[index] = point
        if index not in highest or point.value > highest[index].value:
            highest[index] = point
    kept = {id(p): p for p in (*lowest.values(), *highest.values())}
    return sorted(kept.values(), key=lambda p: p.t)


def read_series(
    samples: Callable[[], Iterable[TimelineSample]],
    origin_wall: float | None,
    buckets: int = DEFAULT_BUCKETS,
) -> tuple[list[Point], list[Point], list[float], int]:
    """(memory, gpu, oom-kill times, samples) of the timeline, downsampled; ``samples`` gives
    a fresh iterator over it each call (it is read twice, as a stream).

    An OOM kill is a sample whose ``oom_kill`` counter is higher than the sample before.
    """
    first = last = None
    count = 0
    for sample in samples():
        first = sample.t if first is None else first
        last = sample.t
        count += 1
    if first is None or last is None:
        return [], [], [], 0
    origin = origin_wall if origin_wall is not None else first
    kills: list[float] = []

    def memory() -> Iterable[Point]:
        previous = None
        for sample in samples():
            counter = sample.oom_kill
            if counter is not None:
                if previous is not None and counter > previous:
                    kills.append(sample.t - origin)
                previous = counter
            if sample.usage is not None:
                yield Point(sample.t - origin, sample.usage)

    def gpu() -> Iterable[Point]:
        for sample in samples():
            value = _gpu_bytes(sample)
            if value is not None:
                yield Point(sample.t - origin, value)

    start, end = first - origin, last - origin
    memory_points = _reduce(memory(), start, end, buckets)
    gpu_points = _reduce(gpu(), start, end, buckets)
    return memory_points, gpu_points, kills, count


def _nice_step(raw: float) -> float:
    """The smallest of 1, 2, 2.5 and 5 times a power of ten that is at least ``raw``."""
    if raw <= 0:
        return 1.0
    base = 10.0 ** math.floor(math.log10(raw))
    return next(m * base for m in (1, 2, 2.5, 5, 10) if raw <= m * base * (1 + 1e-9))


def _ticks(maximum: float, count: int = 5, unit: float = 1.0) -> list[float]:
    """Round ticks from 0 to at most ``maximum``, about ``count`` steps, each a round number of
    ``unit`` (a MiB or a GiB for memory, a second for time)."""
    step = _nice_step(maximum / unit / count) * unit
    return [i * step for i in range(int(maximum / step + 1e-9) + 1)]


def _memory_unit(maximum: float) -> float:
    return float(1 << 30) if maximum >= 1 << 30 else float(1 << 20)


class _Scale:
    def __init__(self, t_max: float, y_max: float):
        self.t_max = max(t_max, 1e-3)
        self.y_max = max(y_max, 1.0)

    def x(self, t: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * max(0.0, min(t, self.t_max)) / self.t_max

    def y(self, value: float) -> float:
        return HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * min(value, self.y_max) / self.y_max

    def points(self, series: Sequence[Point]) -> str:
        return " ".join(f"{self.x(p.t):.1f},{self.y(p.value):.1f}" for p in series)


def _axes(scale: _Scale) -> list[str]:
    parts = []
    for value in _ticks(scale.y_max, unit=_memory_unit(scale.y_max)):
        y = scale.y(value)
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
        )
        parts.append(
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(format_bytes(value))}</text>"
        )
    for t in _ticks(scale.t_max):
        x = scale.x(t)
        parts.append(
            f'<text class="tick" x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">'
            f"{t:g}s</text>"
        )
    return parts


CHAR_PX = 6.5
"""The width of a character of an 11 px label, a little over system-ui's average."""
LANES = 3
LANE_PX = 13
"""Rows of phase labels above the plot, a line of 11 px text apart (TOP leaves room for three)."""


def _lay_out_labels(starts: Sequence[float], names: Sequence[str]) -> list[tuple[int, str]]:
    """(lane, text) of each band label: the first lane where it clears the labels before it,
    the text cut to fit before the right edge ("…"); "" (no label) where no lane has room."""
    ends = [float("-inf")] * LANES
    placed = []
    for x, name in zip(starts, names, strict=True):
        width = len(name) * CHAR_PX
        lane = next((i for i in range(LANES) if ends[i] + 4 <= x), None)
        text = name
        if lane is None:
            lane = min(range(LANES), key=lambda i: ends[i])
        room = WIDTH - RIGHT - x if ends[lane] + 4 <= x else 0.0
        if width > room:
            keep = int(room / CHAR_PX) - 1
            # No room for a letter and the ellipsis: no label (the band's title still names it).
            text = name[:keep] + "…" if keep >= 1 else ""
        if text:
            ends[lane] = x + len(text) * CHAR_PX
        placed.append((lane, text))
    return placed


def _bands(scale: _Scale, bands: Sequence[Band]) -> list[str]:
    parts = []
    starts = [scale.x(band.start) + 3 for band in bands]
    labels = _lay_out_labels(starts, [band.name for band in bands])
    for index, band in enumerate(bands):
        x0, x1 = scale.x(band.start), scale.x(band.end)
        css = "band band-error" if band.error else f"band band{index % 2}"
        title = escape(band.name + (f" ({band.error})" if band.error else ""))
        parts.append(
            f'<rect class="{css}" x="{x0:.1f}" y="{TOP}" width="{max(x1 - x0, 1):.1f}" '
            f'height="{HEIGHT - TOP - BOTTOM}"><title>{title}</title></rect>'
        )
        lane, text = labels[index]
        if text:
            parts.append(
                f'<text class="band-label" x="{starts[index]:.1f}" '
                f'y="{TOP - 6 - LANE_PX * lane}">{escape(text)}</text>'
            )
    return parts


def _label(x: float, offset: float) -> str:
    """x and anchor of a label beside ``x``: to the left near the right edge, so it stays in."""
    if x > WIDTH * 0.7:
        return f'x="{x - offset:.1f}" text-anchor="end"'
    return f'x="{x + offset:.1f}"'


def _markers(scale: _Scale, timeline: Timeline) -> list[str]:
    parts = []
    if timeline.cap_bytes is not None:
        y = scale.y(timeline.cap_bytes)
        parts.append(
            f'<line class="cap" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="cap-label" x="{LEFT + 4}" y="{y - 4:.1f}">'
            f"cap {escape(format_bytes(timeline.cap_bytes))}</text>"
        )
    for marker in timeline.markers:
        x = scale.x(marker.t)
        parts.append(
            f'<line class="{marker.css}" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" '
            f'y2="{HEIGHT - BOTTOM}"><title>{escape(marker.label)} at {marker.t:.2f}s</title>'
            f'</line><text class="{marker.css}-label" {_label(x, 4)} y="{TOP + 12}">'
            f"{escape(marker.label)}</text>"
        )
    if timeline.peak is not None:
        x, y = scale.x(timeline.peak.t), scale.y(timeline.peak.value)
        label = f"peak {format_bytes(timeline.peak.value)}"
        parts.append(
            f'<circle class="peak" cx="{x:.1f}" cy="{y:.1f}" r="5"><title>{escape(label)} '
            f'at {timeline.peak.t:.2f}s</title></circle><text class="peak-label" '
            f'{_label(x, 8)} y="{y + 16:.1f}">{escape(label)}</text>'
        )
    return parts


SLICE_PX = 4.0
"""The narrowest hover slice: at most about 225 across the plot."""


def _hover(scale: _Scale, timeline: Timeline) -> list[str]:
    """The hover slices: for each run of memory points at least ``SLICE_PX`` wide, a
    transparent rect over the plot's height titled with its time, highest usage, share of the
    cap and phase."""
    points = list(timeline.memory)
    if not points:
        return []
    if timeline.peak is not None:  # the kernel's peak, above every sample when a spike was killed
        points = sorted([*points, timeline.peak], key=lambda p: p.t)
    groups: list[list[Point]] = [[points[0]]]
    for point in points[1:]:
        if scale.x(point.t) - scale.x(groups[-1][0].t) < SLICE_PX:
            groups[-1].append(point)
        else:
            groups.append([point])
    parts = ['<g class="hover">']
    edges = [scale.x(group[0].t) for group in groups] + [float(WIDTH - RIGHT)]
    for index, group in enumerate(groups):
        left = LEFT if index == 0 else (edges[index - 1] + edges[index]) / 2
        right = WIDTH - RIGHT if index == len(groups) - 1 else (edges[index] + edges[index + 1]) / 2
        top = max(group, key=lambda p: p.value)
        parts.append(
            f'<rect x="{left:.1f}" y="{TOP}" width="{max(right - left, 0.5):.1f}" '
            f'height="{HEIGHT - TOP - BOTTOM}"><title>{escape(_hover_text(top, timeline))}'
            "</title></rect>"
        )
    parts.append("</g>")
    return parts


def _hover_text(point: Point, timeline: Timeline) -> str:
    """``12.40 s: 812 MiB, 95% of the cap; phase build:decode``."""
    text = f"{point.t:.2f} s: {format_bytes(point.value)}"
    if timeline.cap_bytes:
        text += f", {100 * point.value / timeline.cap_bytes:.0f}% of the cap"
    open_bands = [band for band in timeline.bands if band.start <= point.t <= band.end]
    if open_bands:  # the innermost: the latest started
        text += f"; phase {max(open_bands, key=lambda band: band.start).name}"
    return text


def render_timeline(timeline: Timeline) -> str:
    """The ``<svg id="timeline">`` element (a placeholder text when nothing was sampled)."""
    every = [*timeline.memory, *timeline.gpu]
    t_max = max([p.t for p in every] + [b.end for b in timeline.bands] + [0.0])
    values = [p.value for p in every] + [timeline.cap_bytes or 0]
    values += [timeline.peak.value] if timeline.peak else []
    scale = _Scale(t_max, max(values) * 1.08)
    parts = [
        f'<svg id="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="100%" role="img" aria-label="memory timeline">',
        *_bands(scale, timeline.bands),
        *_axes(scale),
    ]
    if timeline.memory:
        parts.append(f'<polyline class="memory" points="{scale.points(timeline.memory)}"/>')
    else:
        parts.append(f'<text class="empty" x="{WIDTH / 2}" y="{HEIGHT / 2}">no samples</text>')
    if timeline.gpu:
        parts.append(f'<polyline class="gpu" points="{scale.points(timeline.gpu)}"/>')
    parts += _markers(scale, timeline)
    parts += _hover(scale, timeline)
    parts.append("</svg>")
    return "\n".join(parts)

"""The report's bar charts: axis labels never overlap or leave the picture (issue 23 item 15:
the tasks-per-environment chart printed eleven environment names over each other)."""

from __future__ import annotations

import itertools
import math
import re

import pytest

from envcraft.core import builtin_ids
from envcraft.tasks.corpus.svg import CHAR_WIDTH, bar_chart_svg

FONT = 11  # the charts' font size


def labels(svg: str) -> list[tuple[float, float, float | None, str]]:
    """(x, y, rotation or None, text) of each axis label (the texts anchored under the bars)."""
    found = []
    for attrs, text in re.findall(r"<text ([^>]*)>([^<]*)</text>", svg):
        if 'font-size="9"' in attrs or 'font-weight="bold"' in attrs:
            continue  # a bar's value, the title
        x = float(re.search(r'x="([-\d.]+)"', attrs).group(1))  # type: ignore[union-attr]
        y = float(re.search(r'y="([-\d.]+)"', attrs).group(1))  # type: ignore[union-attr]
        turn = re.search(r"rotate\((-?[\d.]+)", attrs)
        found.append((x, y, float(turn.group(1)) if turn else None, text))
    return found


@pytest.mark.parametrize(
    ("counts", "width"),
    [
        ({env: 20 + i for i, env in enumerate(builtin_ids())}, 520),  # the tasks-per-environment chart
        ({str(n): n for n in range(1, 9)}, 320),  # a histogram of small numbers stays upright
    ],
)
def test_axis_labels_do_not_overlap_and_stay_inside(counts: dict[str, int], width: int) -> None:
    svg = bar_chart_svg("tasks per environment", counts, width=width)
    height = float(re.search(r'height="([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
    found = labels(svg)
    assert [text for *_, text in found] == list(counts)
    for (x1, _, turn, a), (x2, _, _, b) in itertools.pairwise(found):
        if turn is None:  # upright: the two half-widths fit between the centres
            assert x2 - x1 >= (len(a) + len(b)) * CHAR_WIDTH / 2, (a, b)
        else:  # slanted alike: parallel lines of text one font height apart at least
            assert (x2 - x1) * math.sin(math.radians(-turn)) >= FONT, (a, b)
    for x, y, turn, text in found:
        extent = len(text) * CHAR_WIDTH
        if turn is None:
            assert x - extent / 2 >= 0 and x + extent / 2 <= width and y <= height
        else:
            angle = math.radians(-turn)
            assert x - extent * math.cos(angle) >= 0, text  # runs down-left from its anchor
            assert y + extent * math.sin(angle) <= height, text
    assert any(turn is not None for *_, turn, _ in found) == (width == 520)

"""The shared pieces of the three HTML reports: one frame and style, one escaping table."""

from __future__ import annotations

from envcraft.core.html import STYLE, page, table


def test_page_escapes_the_title_and_carries_the_shared_and_own_style() -> None:
    html = page("a <b> & c", ["<h1>x</h1>"], ".own { color: red; }")
    assert "<title>a &lt;b&gt; &amp; c</title>" in html
    assert f"<style>{STYLE}.own {{ color: red; }}</style>" in html
    assert html.startswith("<!DOCTYPE html>") and html.endswith("</body></html>")
    assert "<h1>x</h1>" in html


def test_table_escapes_cells_unless_they_are_html() -> None:
    assert table(["<h>"], [["<i>x</i>", 3]]) == (
        "<table><tr><th>&lt;h&gt;</th></tr><tr><td>&lt;i&gt;x&lt;/i&gt;</td><td>3</td></tr></table>"
    )
    assert "<td><i>x</i></td>" in table(["h"], [["<i>x</i>"]], raw=True)

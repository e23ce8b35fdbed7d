"""Scenario specs: catalog entries and user files (TOML, Markdown), parsed strictly."""

from __future__ import annotations

import json
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from envcraft.synth.catalog import load_catalog, target_envs
from envcraft.synth.engine import spec_key
from envcraft.synth.job import load_specs
from envcraft.synth.spec import SpecError, env_id_for, load_spec

TOML = """\
title = "Library loans"
kind = "tool"
description = "A branch library lends books to members."
entities = ["book: a title with copies", "member: a card holder"]
operations = ["borrow a copy", "return it"]
rules = ["a member holds at most 3 loans"]
"""

MARKDOWN = """\
# Library loans
kind: claw
keywords: library, loans

A branch library lends books to members.
Loans are tracked in a ledger file.

## Entities
- book: a title
  with copies
- member: a card holder

## Rules
- a member holds at most 3 loans
"""


def test_a_catalog_entry_is_a_spec() -> None:
    spec = load_spec("messaging-communication")
    assert spec.id == "messaging_communication" and spec.kind == "tool"
    assert spec.source == "catalog:messaging-communication" and spec.archetypes
    assert load_spec("office-email-automation").kind == "claw"


def test_toml_and_markdown_specs(tmp_path: Path) -> None:
    (tmp_path / "loans.toml").write_text(TOML, encoding="utf-8")
    (tmp_path / "loans.md").write_text(MARKDOWN, encoding="utf-8")
    toml = load_spec(tmp_path / "loans.toml")
    assert toml.id == "library_loans" and toml.kind == "tool"
    assert toml.entities == ("book: a title with copies", "member: a card holder")
    md = load_spec(tmp_path / "loans.md")
    assert md.kind == "claw" and md.keywords == ("library", "loans")
    assert md.description == "A branch library lends books to members.\nLoans are tracked in a ledger file."
    assert md.entities == ("book: a title with copies", "member: a card holder")
    assert md.rules == ("a member holds at most 3 loans",) and md.operations == ()
    assert "Rules:\n- a member holds at most 3 loans" in md.render()


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("a.toml", TOML + 'colour = "red"\n', "colour: Extra inputs are not permitted"),
        ("b.toml", TOML.replace('"tool"', '"robot"'), "kind: Input should be 'tool' or 'claw'"),
        ("c.toml", "title = [", "invalid TOML"),
        ("d.toml", TOML.replace('title = "Library loans"', 'title = "Library"\nid = "9lives"'), "id"),
        ("e.md", MARKDOWN.replace("## Rules", "## Extras"), "e.md:13: unknown section 'Extras'"),
        ("f.md", "kind: tool\n", "starts with a '# Title' line"),
        ("g.md", MARKDOWN.replace("- member: a card holder", "member"), "expected a '- ' bullet"),
        ("h.md", "# Only a title\nkind: tool\n", "description"),
    ],
)
def test_bad_specs_say_what_is_wrong(tmp_path: Path, name: str, text: str, message: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path / name)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_unknown_references_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="neither a spec file"):
        load_spec("no-such-scenario")
    with pytest.raises(SpecError, match="no such file"):
        load_spec(tmp_path / "missing.toml")


def test_env_ids_from_titles() -> None:
    assert env_id_for("Library Loans!") == "library_loans"
    assert env_id_for("3D printing farm") == "env_3d_printing_farm"


def test_a_catalog_variant_is_built_around_one_keyword_of_its_scenario() -> None:
    first, second = load_spec("messaging-communication@1"), load_spec("messaging-communication@2")
    assert first == load_spec("messaging-communication") and not first.focus
    assert second.focus == "email" and second.id == "messaging_communication_email"
    assert second.source == "catalog:messaging-communication@2"
    assert "Focus: email." in second.render() and "Focus" not in first.render()
    assert "email" in second.text().splitlines()


@pytest.mark.parametrize(
    "ref", ["messaging-communication@0", "messaging-communication@7", "messaging-communication@x"]
)
def test_a_variant_out_of_range_is_one_line_that_says_the_range(ref: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(ref)
    assert "messaging-communication@" in str(caught.value) and "\n" not in str(caught.value)


def test_catalog_paper_makes_the_papers_139_environments_with_its_per_scenario_counts() -> None:
    specs = load_specs(["catalog:paper"])
    assert len(specs) == 139 and len({s.id for s in specs}) == 139
    assert sum(s.kind == "tool" for s in specs) == 70 and sum(s.kind == "claw" for s in specs) == 69
    per_scenario = Counter(s.source.removeprefix("catalog:").partition("@")[0] for s in specs)
    assert set(per_scenario) == {s.id for s in load_catalog()}
    for scenario in load_catalog():
        if scenario.n_envs is not None:
            assert per_scenario[scenario.id] == scenario.n_envs == target_envs()[scenario.id]
        else:
            assert per_scenario[scenario.id] >= 1


def test_a_spec_without_a_focus_hashes_as_the_library_recorded_it() -> None:
    """The library's records were made before `focus` existed; their spec hashes still match."""
    archive = Path(__file__).parents[2] / "library" / "envs" / "banking_trading.tar.xz"
    with tarfile.open(archive) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("record.json"))
        handle = tar.extractfile(member)
        assert handle is not None
        record = json.load(handle)
    assert spec_key(load_spec("banking-trading"), record["options"]) == record["spec_hash"]
    assert spec_key(load_spec("banking-trading@2"), record["options"]) != record["spec_hash"]

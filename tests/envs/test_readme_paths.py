"""A Claw environment's README names only workspace files that exist (issue 23 item 15:
event_stream cited `data/pipeline_policy.json` and `data/schemas.json`, which are the package's
reference data, not files an agent can read)."""

from __future__ import annotations

import re

import pytest

from envcraft.core import Session, builtin_ids, load_package

CLAW = [env for env in builtin_ids() if load_package(env).kind == "claw"]


@pytest.mark.parametrize("env", CLAW)
def test_the_files_a_claw_readme_names_are_in_the_workspace(env: str) -> None:
    package = load_package(env)
    with Session.memory(package, seed=0) as session:
        files = set(session.files())
    cited = set(re.findall(r"\bdata/[\w.-]+(?:/[\w.-]+)*/?", package.readme or ""))
    named_files = {path.rstrip(".") for path in cited if not path.endswith("/")}  # a folder it writes into
    assert named_files <= files, sorted(named_files - files)

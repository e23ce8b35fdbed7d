"""Repeat guards: an asked write made again is work nobody asked for, even where the end state
cannot tell.

"Run the next scheduling wave" run twice starts a job a second time; a slower correct run,
whose single wave finds the slot a backup job freed meanwhile, ends in the same state
(job_scheduler-2140850c08d1, round 17). No state guard separates the two, so the action log
does: for each write of the golden run, the data engine replays the run up to it and makes
it once more. Where the repeat succeeds and changes records without making one (not a log
entry, a counter or a timestamp; a repeat that makes a second record is what ``no_extra``
counts, as one harm), the verifier allows that tool on those very arguments no more
successful calls than the golden run made, plus one per successful call of a tool that
undoes it (booking, cancelling and booking again is the work done once). A repeat the
environment refuses, or that changes nothing, is free; so is a health check run again (it
only adds a log entry).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envcraft.core.errors import is_error
from envcraft.core.package import EnvPackage, load_package
from envcraft.core.state import diff
from envcraft.tasks.phrasing.phrasebook import phrasebook
from envcraft.tasks.play.execute import run_calls
from envcraft.tasks.play.outcome import Outcome
from envcraft.tasks.verifier import runtime as vr
from envcraft.tasks.verifier.checks import is_timestamp, split_path


def repeat_guards(golden: Outcome) -> list[dict[str, Any]]:
    """One ``repeats`` spec per distinct write of ``golden`` whose repeat changes a record."""
    packages = {env: load_package(path) for env, path in golden.packages.items()}
    found: list[dict[str, Any]] = []
    seen: list[tuple[str, str, Any]] = []
    calls = [{"env": a.env, "tool": a.tool, "args": a.args} for a in golden.actions]
    for i, action in enumerate(golden.actions):
        package = packages.get(action.env)
        if package is None:
            continue
        spec = package.env_class.tools.get(action.tool)
        if spec is None or spec.annotations.read_only or is_error(action.result):
            continue
        key = (action.env, action.tool, action.args)
        if key in seen:
            continue
        seen.append(key)
        if not _repeat_acts(packages, golden, calls[: i + 1]):
            continue
        undone_by = sorted(
            n for n, s in package.env_class.tools.items() if action.tool in s.annotations.undoes
        )
        count = sum(
            1
            for a in golden.actions
            if (a.env, a.tool) == key[:2] and vr.same(a.args, action.args) and not is_error(a.result)
        )
        found.append(
            {
                "env": action.env,
                "tool": action.tool,
                "args": action.args,
                "count": count,
                **({"undone_by": undone_by} if undone_by else {}),
            }
        )
    return found


def _repeat_acts(packages: Mapping[str, EnvPackage], golden: Outcome, prefix: list[dict[str, Any]]) -> bool:
    """Whether the last call of ``prefix``, made once more right after it, succeeds and changes
    a record of some environment that is no log entry (its timestamps and the top-level
    counters aside)."""
    once = run_calls(packages, golden.initial, golden.initial_files, [prefix])
    twice = run_calls(packages, golden.initial, golden.initial_files, [[*prefix, prefix[-1]]])
    if is_error(twice.actions[-1].result):
        return False
    changed = False
    for env, state in once.final.items():
        book = phrasebook(packages[env])
        for change in diff(state, twice.final.get(env, {})):
            collection, _, rest = split_path(change["path"])
            if collection is None or is_timestamp(change) or book.is_log(collection):
                continue
            if not rest:
                return False  # a second new record: the no_extra guards count it, as one harm
            changed = True
    return changed

"""Prompt size and audit time of the synthesis engine, measured in one run. No assertions.

* **Prompt tokens**: for every catalog scenario, the first request (system + the two
  retrieved references + the spec) in o200k tokens (``bpe-openai``; chars/4 without it),
  against what the same two references' whole ``env.py`` files cost.
* **Audit time per candidate**: the full audit (static on the host, then every confined
  stage in one sandbox run: load, S0, skills, exploration with its replay, data-engine
  yield) of the hand-written ``library_loans`` package of the tests and of its four broken
  variants, each ``--repeat`` times; wall seconds per candidate and per stage.

Run: ``.venv/bin/python bench/bench_synth.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from envcraft.synth.audit import audit_package
from envcraft.synth.catalog import load_catalog
from envcraft.synth.filemap import write_files
from envcraft.synth.prompt import first_messages
from envcraft.synth.references import render_reference
from envcraft.synth.retrieval import rank_archetypes, reference_roots
from envcraft.synth.spec import from_scenario
from envcraft.synth.tokens import count_tokens, tokenizer_name

TESTS = Path(__file__).resolve().parents[1] / "tests"


def prompt_sizes() -> None:
    roots = reference_roots()
    prompts, whole = [], []
    for scenario in load_catalog():
        spec = from_scenario(scenario)
        top = rank_archetypes(spec.text())[:2]
        refs = [render_reference(roots[s.archetype], s.archetype) for s in top]
        prompts.append(sum(count_tokens(str(m["content"])) for m in first_messages(spec, refs)))
        whole.append(
            sum(count_tokens((roots[s.archetype] / "env.py").read_text(encoding="utf-8")) for s in top)
        )
    print(
        f"prompt tokens ({tokenizer_name()}) over {len(prompts)} catalog scenarios, "
        "first request with two references:"
    )
    print(f"  min {min(prompts)}  median {statistics.median(prompts):.0f}  max {max(prompts)}")
    print(
        f"  the same two references' whole env.py files alone: median {statistics.median(whole):.0f} "
        f"(max {max(whole)}); prompt / whole files = "
        f"{statistics.median(prompts) / statistics.median(whole):.2f}"
    )


def audit_times(repeat: int) -> None:
    sys.path.insert(0, str(TESTS.parent))
    from tests.synth.variants import BREAKS, broken_files, good_files

    cases = {"correct": good_files(), **{name: broken_files(name) for name in BREAKS}}
    print(f"\naudit wall seconds per candidate ({repeat} runs each):")
    per_stage: dict[str, list[float]] = defaultdict(list)
    for name, files in cases.items():
        walls = []
        for _ in range(repeat):
            root = Path(tempfile.mkdtemp(prefix="bench-synth-")) / "library_loans"
            write_files(root, files)
            start = time.perf_counter()
            report = audit_package(root)
            walls.append(time.perf_counter() - start)
            for stage in report.stages:
                per_stage[stage.stage].append(stage.seconds)
        outcome = "passed" if report.passed else f"failed {report.failed_stage}"
        print(
            f"  {name:<26} {statistics.median(walls):6.2f}s median "
            f"(min {min(walls):.2f}, max {max(walls):.2f})  {outcome}"
        )
    print(
        "  seconds per stage (median over the runs that reached it): "
        + ", ".join(f"{stage} {statistics.median(values):.2f}" for stage, values in per_stage.items())
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    prompt_sizes()
    audit_times(args.repeat)


if __name__ == "__main__":
    main()

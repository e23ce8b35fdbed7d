"""The synthesis prompt: the contract, the error categories, the authoring API, two
references, the spec, and the one response format; plus the repair prompt.

The system message is the same for every candidate (a provider's prompt cache can reuse
it): what an environment package is, paper Table 15 (the code-level constraints) as the
runtime enforces them, paper Table 16 (the structured error categories) with the general
ones the runtime adds, the authoring API, what may be imported, how skills and their
worked examples are written, what the audits check, and the file-map format. The first
user message holds the two retrieved references (:mod:`envcraft.synth.references`) and the
spec. A repair message holds the spec, the current files and the audit's findings,
de-duplicated and summarized; it leaves the references out (the model has its contract in
the system message and the failing files in front of it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from envcraft.llm.types import Message
from envcraft.synth.audit.findings import STAGE_SUMMARIES, STAGES, AuditReport, Finding, dedupe
from envcraft.synth.audit.skillcheck import EXAMPLE_SEED, EXAMPLE_SIZE, EXAMPLE_TAG
from envcraft.synth.audit.static import ENVCRAFT_ALLOWED, STDLIB_ALLOWED, THIRD_PARTY_ALLOWED
from envcraft.synth.filemap import render_file_map
from envcraft.synth.references import Reference
from envcraft.synth.spec import ScenarioSpec

MAX_REPAIR_FINDINGS = 12

CONTRACT = """\
## The runtime contract (paper Table 15) and how envcraft enforces it
1. Every tool returns a dict and reports failure with `self.fail(category, message, **details)`,
   never by raising. The runtime turns any other exception into `internal_error` (an audit failure)
   and rolls the call back; a failed call changes nothing.
2. No mutable module-level or class-level state. All mutable data lives in `self.state` (a pydantic
   `StateModel`); module-level constants are tuples, frozensets, strings, numbers or
   `types.MappingProxyType`.
3. `data/` is immutable reference data, read only through `self.data` (`self.data.json("x.json")`,
   `.text(name)`, `.csv(name)`; values come back frozen: copy before changing). Claw environments
   read and write the agent's files only through `self.workspace` (`read_text`, `write_text`,
   `exists`, `list`, `delete`). No `open()`, `os`, `pathlib` I/O, `shutil`, processes or network.
4./5. Atomic session writes and bounded file locks are the runtime's job: never persist anything.
6. Time is `self.now()` (base_time + tick * action_index, UTC); never the wall clock. Randomness is
   `self.rng` in tools and `random.Random(seed)` in generators; never module `random.*` calls,
   `uuid4`, `hash()` of strings, `id()` or the iteration order of a set of strings. The same calls
   on the same S0 must give the same results and state in any process.
Every new state must pass the State model's validators (they are the environment's invariants);
a state a tool leaves must load again unchanged (no validator may rewrite values on load)."""

ERRORS = """\
## Structured errors (paper Table 16, plus the general categories)
| category | when | what the message must say |
|---|---|---|
| permission_denied | the actor may not change this entity | the entity; that write permission is absent |
| invalid_transition | its state forbids it (e.g. already terminal) | its current state and why |
| missing_field | a required argument is absent or empty | the field and its requirement |
| not_found | an id or name does not exist | what was looked up; how to find valid ones |
| invalid_argument | a value is malformed or out of range | the field and the accepted range or format |
| conflict | the request clashes with other state (duplicate, overlap, capacity) | what it clashes with |
missing_binding, session_not_found and lock_timeout are the runtime's; internal_error is a bug.
Pass the facts as details: `self.fail("invalid_transition", "order O-7 is already shipped",
current_state="shipped")`."""

AUTHORING = """\
## The authoring API
```python
from __future__ import annotations
from typing import Any, Literal
from envcraft import Environment, Initial, StateModel, tool
from envcraft.core import Repository, dangling, misfiled
from envcraft.core.clock import DEFAULT_BASE_TIME, IsoDate, IsoTime, iso, parse_time
from envcraft.sandbox import ClawEnvironment   # kind = "claw" only

class Order(StateModel):                 # StateModel: unknown fields refused, assignments validated
    order_id: str
    status: Literal["placed", "shipped", "cancelled"] = "placed"
    placed_at: IsoTime                   # an ISO-8601 text field refused at load when it does not parse

class ShopState(StateModel):             # the whole explicit state S, JSON-serializable
    orders: dict[str, Order] = {}        # collections are dicts keyed by the entity's id
    next_order: int = 1

class Shop(Environment):                 # ClawEnvironment for kind = "claw" (adds shell and file tools)
    \"\"\"One paragraph the agent reads: what this is, ids, units, time zone.\"\"\"

    State = ShopState
    state: ShopState

    @tool(consumes=["order_id"])         # annotations: produces / consumes entity kinds, read_only=True
    def cancel_order(self, order_id: str, reason: str = "") -> dict[str, Any]:
        \"\"\"Cancel a placed order.

        Args:
            order_id: The order, e.g. O-1042.
            reason: Why, in a few words.

        Returns:
            The order with its new status.
        \"\"\"
        order = self.state.orders.get(order_id)
        if order is None:
            self.fail("not_found", f"no order {order_id!r}; list_orders shows them", order_id=order_id)
        if order.status != "placed":
            self.fail("invalid_transition", f"{order_id} is {order.status}", current_state=order.status)
        order.status = "cancelled"
        return {"order_id": order_id, "status": order.status, "at": iso(self.now())}

    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        \"\"\"A seeded S0 (size scales the number of entities); only random.Random(seed).\"\"\"
        ...
        return Initial(state=ShopState(...), files={"notes/readme.md": "..."})  # files: claw only
```
* Tool parameters are flat: str, int, float, bool, `Literal[...]`, or lists of these, each
  documented under `Args:`, with a `Returns:` section. Tool names are snake_case verbs and never
  reset, step, state, close, now, fail, data or workspace. Private helpers start with `_`.
* `generate()` must give a valid S0 for every seed and size 1-3, deterministic in its arguments,
  varied across seeds, quick (well under a second), with the entities tasks act on. `data` is the
  package's `data/` repository (None only outside a session: fall back to `Repository(None)`).
* A State model validator (`@model_validator(mode="after")` from pydantic) should refuse states
  tools could not work on: `misfiled(self.orders, "order_id")` lists records filed under a key
  that is not their id, `dangling(o.order_id, "customer", [o.customer_id], self.customers)` the
  links to records that do not exist.
* Split the package into modules when it grows: `env.py` (State and the Environment class with the
  tools), `rules.py` (domain logic as pure functions over plain values), `generate.py` (the S0
  generator); import siblings relatively (`from .rules import price`, `from . import rules`).
* Results are JSON objects: ids, statuses and the values the agent needs for its next step."""

SKILLS = f"""\
## Skills (skills/<name>/SKILL.md, agentskills.io)
Write one to three skills: front matter with `name` (equal to the folder name, lower-case words
joined by hyphens) and `description` (what it does and when to use it), then numbered steps
naming tools as `tool_name(arg, other="value")`. Name only tools that exist, with their real
parameter names. Each skill ends with a worked example: a fenced block tagged `{EXAMPLE_TAG}` of
`envcraft-tool TOOL '{{"json": "arguments"}}'` (or `envcraft-tool TOOL --name value`) lines. The
audit runs them in order on `generate(seed={EXAMPLE_SEED}, size={EXAMPLE_SIZE})` and every call must
succeed, so use ids your generator really makes for that seed. Tools that only succeed after
earlier steps are best shown this way."""

RESPONSE_FORMAT = """\
## Response format (parsed strictly)
Answer with file blocks and nothing else: no prose, no Markdown fences around or inside them.
<file path="envcraft.toml">
id = "..."
...
</file>
<file path="env.py">
...
</file>
Each opening tag and each </file> stands on its own line; the content between them is the file,
verbatim. Paths: envcraft.toml, README.md, modules at the root (env.py, rules.py, generate.py),
data/<name>.json|jsonl|csv|md|txt, skills/<name>/SKILL.md, workspace/<path> (claw templates).
When repairing, give only the files you change (complete contents), and `<delete path="..."/>`
for a file to remove."""


def system_prompt() -> str:
    """The instructions every synthesis request starts with."""
    stdlib = ", ".join(sorted(STDLIB_ALLOWED))
    third = ", ".join(sorted(THIRD_PARTY_ALLOWED))
    envcraft = ", ".join(sorted(ENVCRAFT_ALLOWED))
    stages = "\n".join(f"{i}. {stage}: {STAGE_SUMMARIES[stage]}" for i, stage in enumerate(STAGES, start=1))
    return "\n\n".join(
        [
            "You write one environment package for envcraft, a framework whose environments train "
            "tool-using LLM agents with reinforcement learning. An environment is documentation (README.md), "
            "tools, an explicit state and a deterministic transition function; a data engine then "
            "samples tool chains on it and turns them into verified tasks, so tools must compose into "
            "realistic multi-step work whose effects show in the state.",
            "## The package\n"
            'envcraft.toml: `id` (given below), `title`, `kind` ("tool" or "claw"), `archetypes` (ids), '
            "`scenario` (one sentence), `base_time` (ISO-8601 UTC), `tick_seconds` (default 60), and "
            "`requirements` (PEP 508 names with versions of third-party wheels the code imports; "
            "usually none).\n"
            "README.md: what the agent reads first: the domain, the entities and their ids, the "
            "rules that make calls fail, the tools by purpose.\n"
            "env.py (+ rules.py, generate.py), data/, skills/, and for claw environments workspace/ "
            "(template files copied into every session's workspace; the agent also has shell, "
            "read_file, write_file, edit_file and list_files).",
            CONTRACT,
            ERRORS,
            AUTHORING,
            "## Imports\n"
            f"Only: the standard-library modules {stdlib}; {third}; the authoring API ({envcraft}); "
            "your own modules by relative import; and modules of your declared requirements. Never "
            "assign to attributes of imported modules or classes, and no introspection "
            "(`__globals__`, `__subclasses__`, frames, `globals()`).",
            SKILLS,
            "## What the audits check, in order (the first failure stops them)\n" + stages,
            RESPONSE_FORMAT,
        ]
    )


def first_messages(spec: ScenarioSpec, references: Sequence[Reference]) -> list[Message]:
    """The first request for a candidate: system + references + the spec."""
    refs = "\n\n".join(ref.render() for ref in references)
    names = " and ".join(f"`{ref.archetype}` ({ref.env_id})" for ref in references) or "none"
    user = (
        f"# Reference environments\nThe two archetypes closest to this scenario are {names}. "
        "Learn the contract, the State and tool design and the documentation style from them; "
        "do not copy their domain.\n\n"
        f"{refs}\n\n# Your scenario\n{spec.render()}\n\n"
        f"Write the complete package for environment id `{spec.id}` (kind `{spec.kind}`), "
        "as a file map."
    )
    return [{"role": "system", "content": system_prompt()}, {"role": "user", "content": user}]


def repair_messages(spec: ScenarioSpec, files: Mapping[str, str], report: AuditReport) -> list[Message]:
    """A repair request: the current files and what the audits found."""
    user = (
        f"# Your scenario\n{spec.render()}\n\n# The package as it stands\n{render_file_map(files)}\n"
        f"# What the audits found\n{summarize_findings(report)}\n\n"
        "Fix every problem above. Answer with the files you change (complete contents) as a file map."
    )
    return [{"role": "system", "content": system_prompt()}, {"role": "user", "content": user}]


def summarize_findings(report: AuditReport, limit: int = MAX_REPAIR_FINDINGS) -> str:
    """The failing stage and its errors, de-duplicated, most frequent first, each with its place."""
    failed = next((s for s in report.stages if not s.ok), None)
    if failed is None:
        return "No stage failed."
    passed = [s.stage for s in report.stages if s.ok]
    head = (
        f"Passed: {', '.join(passed) or 'nothing'}. Failed: {failed.stage} ({STAGE_SUMMARIES[failed.stage]})."
    )
    errors = sorted(dedupe(failed.errors), key=lambda f: -f.count)
    lines = [head, *(_line(f) for f in errors[:limit])]
    if len(errors) > limit:
        lines.append(f"... and {len(errors) - limit} more problems of the same stage.")
    warnings = [f for f in failed.findings if f.severity == "warning"][:3]
    lines += [f"(warning) {_line(f)}" for f in warnings]
    return "\n".join(lines)


def _line(item: Finding) -> str:
    where = f" [{item.location}]" if item.location else ""
    tool = f" (tool {item.tool})" if item.tool and item.tool not in item.message else ""
    times = f" ({item.count}x)" if item.count > 1 else ""
    text = f"- {item.code}{where}{tool}: {item.message}{times}"
    frames = item.detail.get("traceback")
    if frames:
        text += "\n  " + "\n  ".join(frames)
    calls = item.detail.get("calls")
    if calls:
        shown = "; ".join(f"{c['tool']}({c['args']})" for c in calls[-4:])
        text += f"\n  calls from S0: {shown[:600]}"
    return text

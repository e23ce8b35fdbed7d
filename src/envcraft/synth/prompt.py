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
Everything comes from one import: `from envcraft import ...` (pydantic's `Field`,
`model_validator` and `field_validator` may be used too).
```python
# state.py: the explicit state space S (imports nothing of the package)
from __future__ import annotations
from typing import Literal
from envcraft import IsoTime, StateModel, invariant

class Customer(StateModel):
    customer_id: str
    name: str
    email: str

class Order(StateModel):                 # StateModel: unknown fields refused, assignments validated
    order_id: str
    customer_id: str
    status: Literal["placed", "shipped", "cancelled"] = "placed"
    placed_at: IsoTime                   # ISO-8601 text, refused at load when it does not parse
    cancel_reason: str = ""

class ShopState(StateModel):             # the whole state, JSON-serializable
    customers: dict[str, Customer] = {}  # collections are dicts keyed by the record's id
    orders: dict[str, Order] = {}
    next_order: int = 1

    @invariant("orders")                 # checked per record whenever a call touches it
    def _order_links(self, key: str, order: Order) -> None:
        if order.order_id != key or order.customer_id not in self.customers:
            raise ValueError(f"{key} is misfiled or names an unknown customer")

# rules.py: domain logic over the State (imports state.py only)
def refundable_cents(order: Order) -> int: ...

# generate.py: the seeded S0 (imports state.py and rules.py, never env.py)
def build_state(rng: random.Random, size: int, data: Repository, base: datetime) -> ShopState: ...

# env.py: the Environment class (imports the three)
import random
from collections.abc import Mapping
from typing import Any
from envcraft import Entity, Environment, Initial, Job, Repository, iso, tool
from .generate import build_state
from .rules import refundable_cents
from .state import ShopState

class Shop(Environment):                 # ClawEnvironment for kind = "claw" (adds shell and file tools)
    \"\"\"One paragraph the agent reads: what this is, ids, units, time zone.\"\"\"

    State = ShopState
    state: ShopState
    entities = (
        Entity("customers", "customer", ("{name} ({email})",), id_known=True),
        Entity("orders", "order", ("the order {customer_id} placed on {placed_at:date}",),
               vary=("placed_at",), free=("note",)),
    )

    @tool(consumes=["order_id"], goal="cancel {order_id}[; the reason is {reason}]")
    def cancel_order(self, order_id: str, reason: str = "") -> dict[str, Any]:
        \"\"\"Cancel a placed order.

        Args:
            order_id: The order, e.g. O-1042.
            reason: Why, in a few words.

        Returns:
            The order with its new status.
        \"\"\"
        order = self.lookup(self.state.orders, order_id, "order", order_id=order_id)
        if order.status != "placed":
            self.fail("invalid_transition", f"{order_id} is {order.status}", current_state=order.status)
        order.status, order.cancel_reason = "cancelled", reason
        return {"order_id": order_id, "status": order.status, "at": iso(self.now())}

    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        \"\"\"A seeded S0 (size scales the number of records).\"\"\"
        state = build_state(random.Random(seed), size, cls.repository(data), cls.base_time())
        return Initial(state=state, files={"notes/readme.md": "..."})  # files: claw only

    @classmethod
    def rule_violations(cls, state: ShopState, files: Mapping[str, str]) -> list[str]:
        return [f"{o.order_id} cancelled without a reason" for o in state.orders.values()
                if o.status == "cancelled" and not o.cancel_reason]
```
**Modules.** A package's Python modules sit at its root and import each other relatively
(`from .rules import price`, `from . import rules`), one way only: `state.py` <- `rules.py` <-
`generate.py` <- `env.py` (an import cycle is an audit error). Only `env.py` holds the
Environment class; a small package may keep everything in `env.py`. Names another module uses are
public; a leading `_` means private to its module.
**What tool code uses.** `self.state` (the State, mutate it in place), `self.lookup(records, key,
noun, **details)` (the record, or `not_found` "no {noun} '{key}'" with the details),
`self.fail(category, message, **details)`, `self.now()` (deterministic UTC clock: `base_time +
tick_seconds * action_index`; every call, failed or not, advances it), `self.rng` (a
`random.Random` seeded per call), `self.data` (the package's `data/`, read-only:
`.json(name)`, `.text(name)`, `.csv(name)` -> frozen rows, `.files()`; a missing file raises
`FileNotFoundError`), and in Claw environments `self.workspace` (paths relative to the workspace:
`read_text(path)`, `write_text(path, text)`, `exists(path)`, `list(path=".", recursive=True)` ->
sorted file paths, `delete(path)`, `normalize(path)`; a missing file, an absolute path, `..` or a
link out of the workspace fail the call as `not_found` / `permission_denied`, and writes are
committed only if the call succeeds). Tool parameters are flat: str, int, float, bool,
`Literal[...]` or lists of these, each documented under `Args:`, with a `Returns:` section. Tool
names are snake_case verbs and never reset, step, state, close, now, fail, lookup, data, workspace,
repository or base_time.
**`@tool(...)`.** `read_only=True` for a tool that changes nothing (it fires no clock-driven
event and advances no counter: apply those in the tools that write); `produces=[...]` /
`consumes=[...]` the id parameters a tool creates or needs (they shape the tool graph);
`undoes=[...]` the tools whose effect this one takes back (no task asks for both on one record);
`inspects=True` for a tool that only writes down what it found looking at one record (a
profile): done unasked on a record the work is about, it is a look, not a change;
`fetches=True` for a tool without required parameters that only brings in what the world has
already decided (send/receive delivering the replies that arrived): what it delivers after the
work is the world's doing, not the agent's;
`examples={"reason": [...]}` three texts a user of this desk would dictate for each free-text
parameter (a reason, a note, a message body), fitting the desk and free of ids;
`goal="..."` how a user asks for what the tool does, never naming a tool or parameter. A goal
phrase is a template: `{param}` shows an argument as a person says it (a record id becomes the
record's name from `entities`, free text is quoted, numbers and dates as written);
`{param:fmt}` picks a format (`date`, `time`, `when` = date and time, `cents` = an integer amount
in cents shown in units, `words` = a code said as words, `boxing-fit` as "boxing fit",
`plain` = as is); `{param|a=text|b=text|*=text}` chooses literal text by the value (booleans
are `true`/`false`, `*` any other value); `[ ... ]` is dropped when a placeholder inside has no
value (an optional argument left out). A record id already comes with its noun, so do not say it
again: `cancel {order_id}`, not `cancel the order {order_id}` (the audit
reads the turns it yields). On a read-only tool the phrase
states the facts the lookup needs ("the customer's email address is {email}").
**`Entity(collection, noun, names, id_known=False, vary=(), free=(), log=False, labels={})`** declares how a
user names the records of a `dict[str, Record]` field: `names` are templates over the record's
fields, tried in order until one tells the record apart from all others; `id_known=True` when users
hold these ids (order numbers on a receipt); `vary` the fields in which a look-alike record (a
distractor the data engine adds to S0) may differ (none: no look-alikes); `free` fields a user
leaves to the agent (never pinned; `"lines/*/note"` names a field of each item of a list);
`log=True` for records the environment writes as a
by-product (health checks, events), which an agent may add to without harm; `labels` what a person
calls a field whose name alone says it badly (`{"committed": "committed offset"}`).
**`jobs = (Job(name, steps, goal), ...)`** declares the work the desk exists for, asked as one
outcome: `steps` are 2-5 tools that change state, in the order they run on one record's way (each
after the first acting on what an earlier one made or touched: open a journal, stage a line on it,
post it), a read-only tool only right before a step that needs its answer; `goal` is how a person
asks for the whole, in their terms, with the steps' parameters as placeholders (`{tool.param}` for
one step's own where two share a name). The agent is then left to find the steps and their order.
Where the last step can go through and still not bring the outcome about (a rider declines the
fare), `reaches={"status": "dispatched"}` says what it answers when it did.
**`generate()`** builds a valid S0 for every seed and size 1-3: deterministic in its arguments
(only `random.Random(seed)`), varied across seeds, quick (well under a second), holding the records
tasks act on. `cls.repository(data)` is the reference data to read (`data` when the caller passes
one, else the package's `data/`; outside a package an empty `Repository(None)` that has no files),
`cls.base_time()` the clock's start from `envcraft.toml`: generated timestamps lie before it.
A generator may make history by running the environment's own tools: `env = cls(state,
data=repo, clock=Clock(start, timedelta(minutes=1)))` then `env.invoke(tool_name, args)` (check
results with `is_error`), or a whole session on the package, `Session.memory(cls.package,
state=..., files=...)` (`cls.package` is the loaded `EnvPackage`; `load_package(path)` loads one).
**Invariants and rules.** `@invariant("collection")` methods on the State model check each record
of a collection (raise `ValueError` with the reason); `misfiled(records, "order_id")` and
`dangling(owner_id, "customer", [ids], records)` list misfiled records and links to missing ones
for a whole-state `@model_validator(mode="after")`. `rule_violations(state, files)` returns the
semantic rules of the world that the models do not enforce, as messages; every S0 (look-alikes
included) must have none. Other helpers: `IsoDate` (date text), `iso(datetime)` and
`parse_time(text)`, `DEFAULT_BASE_TIME`, `thaw(frozen)` (a mutable copy of reference data),
`is_error(result)` and `ToolFailure` (what `self.fail` raises) for code that calls tools itself.
**Results** are JSON objects: ids, statuses and the values the agent needs for its next step."""

SKILLS = f"""\
## Skills (skills/<name>/SKILL.md, agentskills.io)
Write one to three skills: front matter with `name` (equal to the folder name, lower-case words
joined by hyphens) and `description` (what it does and when to use it), then numbered steps
naming tools as `tool_name(arg, other="value")`. Name only tools that exist, with their real
parameter names. Each skill ends with a worked example: a fenced block tagged `{EXAMPLE_TAG}` of
`envcraft-tool TOOL '{{"json": "arguments"}}'` (or `envcraft-tool TOOL --name value`) lines. The
audit runs them in order on `generate(seed={EXAMPLE_SEED}, size={EXAMPLE_SIZE})`, each skill's example in a
fresh session of its own (skills share no state), and every call must succeed, so use ids your
generator really makes for that seed. Tools that only succeed after earlier steps are best shown
this way. The front matter is YAML: quote a `description` that holds `: ` or `#`. A JSON argument
sits in single quotes, so it holds no apostrophe (write around it, or use `--name value`)."""

RESPONSE_FORMAT = """\
## Response format (parsed strictly)
Answer with file blocks and nothing else: no prose and no Markdown fences around a block. Between
its tags a file is verbatim, so a SKILL.md keeps its own fenced worked-example block.
<file path="envcraft.toml">
id = "..."
...
</file>
<file path="env.py">
...
</file>
Each opening tag and each </file> stands on its own line; the content between them is the file,
verbatim. Paths: envcraft.toml, README.md, modules at the root (state.py, rules.py, generate.py, env.py),
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
            "state.py, rules.py, generate.py and env.py (see Modules below), data/, skills/, and for claw "
            "environments workspace/ "
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
            "## What the audits check, in order (the first failure stops them)\n"
            + stages
            + "\nExploration calls tools with arguments drawn from their schemas and from values a "
            "user could name (ids, names and paths in the current state and in earlier results), plus "
            "edge values the schema admits (empty strings, zero, negative and huge numbers, odd "
            "Unicode): every one must get a result or a structured error, never an exception.",
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

"""The skills audit: a skill names only real tools, with their real arguments, and its worked
example succeeds on a generated S0.

A skill mentions tools the way the reference skills do: ``tool_name(arg, other="x")`` in
backticks, ``envcraft-tool TOOL '{"json": "args"}'`` or ``envcraft-tool TOOL --name value``
(the in-sandbox command of Claw environments), or a system tool (``read_file path``). A
call names a tool when the name is one; a backticked ``snake_case(...)`` that is no tool is
reported as a missing tool (plain functions such as ``ceil(x)`` have no underscore and are
left alone). Arguments are checked when the call parses as Python: keywords must be
parameters, positionals at most as many as the parameters, and the required ones covered
(``tool(...)`` leaves them unchecked).

Each synthesized skill carries a worked example: a fenced block tagged ``worked-example``
whose lines are ``envcraft-tool`` commands (``#`` comments allowed). They run in order in a
fresh in-memory session on ``generate(seed=0, size=1)``; every call must succeed.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envcraft.core.errors import is_error
from envcraft.core.lint.skills import FrontMatterError, parse_front_matter
from envcraft.core.package import EnvPackage
from envcraft.core.session import Session
from envcraft.core.tool import ToolSpec
from envcraft.sandbox.domain_cli import UsageError, parse_request
from envcraft.sandbox.domain_server import coerce_options
from envcraft.synth.audit.findings import Finding

CLI = "envcraft-tool"
EXAMPLE_TAG = "worked-example"
EXAMPLE_SEED, EXAMPLE_SIZE = 0, 1
_SPAN = re.compile(r"`([^`\n]+)`")
_CALL = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\((.*)\)$", re.DOTALL)
_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w-]*)\s*$")


@dataclass(frozen=True)
class Mention:
    """One place a skill names a tool."""

    tool: str
    line: int
    text: str
    call: ast.Call | None = None  # parsed arguments of a ``tool(...)`` mention
    cli: tuple[str, ...] = ()  # the argv after ``envcraft-tool`` of a command mention
    loose: bool = False  # ``read_file path``: a tool only if the word is one (``a_field == 1`` is not)


def mentions(text: str) -> list[Mention]:
    """Tool mentions in backticks and ``envcraft-tool`` commands (code blocks included)."""
    found: list[Mention] = []
    for number, line in enumerate(text.splitlines(), start=1):
        for span in _SPAN.findall(line):
            found += _span_mentions(span.strip(), number)
        if CLI in line and "`" not in line:
            found += _cli_mentions(line, number)
    return found


def _span_mentions(span: str, number: int) -> list[Mention]:
    if span.startswith(CLI):
        return _cli_mentions(span, number)
    match = _CALL.match(span)
    if match:
        try:
            node = ast.parse(span, mode="eval").body
        except SyntaxError:
            node = None
        return [Mention(match.group(1), number, span, node if isinstance(node, ast.Call) else None)]
    words = span.split()
    if len(words) > 1 and re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)+", words[0]):
        return [Mention(words[0], number, span, loose=True)]
    return []


def _cli_mentions(text: str, number: int) -> list[Mention]:
    try:
        tokens = shlex.split(text, comments=True)
    except ValueError:
        return []
    out = []
    for i, token in enumerate(tokens):
        if token == CLI and i + 1 < len(tokens) and tokens[i + 1] != "list":
            rest = tokens[i + 1 :]
            end = next((j for j, t in enumerate(rest) if t in ("|", "&&", ";", "||")), len(rest))
            out.append(Mention(rest[0], number, text.strip(), cli=tuple(rest[:end])))
    return out


def check_mentions(
    rel: str, text: str, tools: Mapping[str, ToolSpec], system: frozenset[str]
) -> list[Finding]:
    """Every mention names an existing tool with arguments it has."""
    findings = []
    for mention in mentions(text):
        spec = tools.get(mention.tool)
        if spec is None:
            if mention.tool in system or mention.loose:
                continue
            if mention.cli or "_" in mention.tool:
                known = ", ".join(sorted(tools))
                message = f"names tool {mention.tool}, which does not exist (tools: {known})"
                findings.append(_finding("skill-unknown-tool", message, rel, mention.line, mention.tool))
            continue
        problem = _argument_problem(spec, mention)
        if problem:
            findings.append(
                _finding("skill-arguments", f"{mention.text}: {problem}", rel, mention.line, spec.name)
            )
    return findings


def _argument_problem(spec: ToolSpec, mention: Mention) -> str:
    params = list(spec.parameters.get("properties", {}))
    required = set(spec.parameters.get("required", []))
    if mention.cli:
        try:
            request = parse_request(list(mention.cli))
        except UsageError as exc:
            return f"not a valid {CLI} command ({str(exc).splitlines()[0]})"
        given = set(request.get("args") or request.get("cli") or {})
        unknown = sorted(given - set(params))
        return (
            f"{spec.name} has no parameter {', '.join(unknown)} (parameters: {', '.join(params)})"
            if unknown
            else ""
        )
    call = mention.call
    if call is None:
        return ""
    if any(isinstance(a, ast.Constant) and a.value is Ellipsis for a in call.args):
        return ""
    keywords = {k.arg for k in call.keywords if k.arg}
    unknown = sorted(keywords - set(params))
    if unknown:
        return (
            f"{spec.name} has no parameter {', '.join(unknown)} (parameters: {', '.join(params) or 'none'})"
        )
    if len(call.args) > len(params):
        return f"{spec.name} takes {len(params)} arguments, the skill passes {len(call.args)}"
    covered = set(params[: len(call.args)]) | keywords
    missing = [p for p in params if p in required and p not in covered]
    if missing:
        return f"{spec.name} requires {', '.join(missing)}"
    return ""


def example_commands(text: str) -> list[tuple[int, list[str]]]:
    """``(line, argv after envcraft-tool)`` of every command in ``worked-example`` blocks."""
    commands: list[tuple[int, list[str]]] = []
    inside = False
    for number, line in enumerate(text.splitlines(), start=1):
        fence = _FENCE.match(line)
        if fence:
            inside = not inside and fence.group(2) == EXAMPLE_TAG
            continue
        if inside and line.strip() and not line.strip().startswith("#"):
            try:
                tokens = shlex.split(line, comments=True)
            except ValueError:
                tokens = []
            commands.append((number, tokens[1:] if tokens[:1] == [CLI] else ["\0" + line.strip()]))
    return commands


def run_example(package: EnvPackage, rel: str, text: str) -> tuple[list[Finding], list[dict[str, Any]]]:
    """Run a skill's worked example on S0; the findings and the calls that succeeded."""
    commands = example_commands(text)
    if not commands:
        message = f"no worked example: add a ```{EXAMPLE_TAG} block of {CLI} commands that succeed on S0"
        return [_finding("skill-example-missing", message, rel, 0)], []
    findings: list[Finding] = []
    succeeded: list[dict[str, Any]] = []
    tools = package.env_class.tools
    with Session.memory(package, seed=EXAMPLE_SEED, size=EXAMPLE_SIZE) as session:
        for number, argv in commands:
            if argv and argv[0].startswith("\0"):
                message = f"worked-example lines are `{CLI} TOOL ...` commands, got {argv[0][1:]!r}"
                findings.append(_finding("skill-example", message, rel, number))
                break
            try:
                request = parse_request(argv)
            except UsageError as exc:
                findings.append(_finding("skill-example", str(exc).splitlines()[0], rel, number))
                break
            name = str(request.get("tool", ""))
            spec = tools.get(name)
            if spec is None:
                findings.append(_finding("skill-example", f"{name} is not a tool", rel, number, name))
                break
            options = request.get("cli")
            args = coerce_options(spec, options) if isinstance(options, dict) else request.get("args") or {}
            result = session.call(name, args)
            if is_error(result):
                error = result["error"]
                shown = json.dumps(args, ensure_ascii=False)[:200]
                message = (
                    f"step {name} {shown} fails on generate(seed={EXAMPLE_SEED}, size={EXAMPLE_SIZE}): "
                    f"{error.get('category')}: {str(error.get('message'))[:300]}"
                )
                findings.append(_finding("skill-example", message, rel, number, name))
                break
            succeeded.append({"tool": name, "args": args})
    return findings, succeeded


def check_front_matter(rel: str, text: str) -> list[Finding]:
    """The linter checks the fields; here only that the file starts like a skill at all."""
    try:
        parse_front_matter(text)
    except FrontMatterError as exc:
        return [_finding("skill-frontmatter", str(exc), rel, exc.line)]
    return []


def _finding(code: str, message: str, file: str, line: int, tool: str = "") -> Finding:
    return Finding(stage="skills", code=code, message=message, file=file, line=line, tool=tool)

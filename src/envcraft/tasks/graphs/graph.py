"""Tool dependency graphs (one per environment) and the workflow graph across environments.

An edge ``A -> B`` says "B can meaningfully follow A"; it records every source of evidence:

* ``state`` — A writes a state field that B reads (static AST analysis, :mod:`effects`);
* ``name`` — an output field of A can feed a parameter of B by name, type and entity kind
  (outputs are observed by probing each tool on a generated S0, plus literal return keys);
* ``annotation`` — ``@tool(produces=...)`` of A meets ``@tool(consumes=...)`` of B;
* ``workspace`` — A writes a workspace file under a path pattern that B reads.

The workflow graph links tools of *different* environments that share an entity kind or a
workspace artifact; walks cross environments along those edges. Both graphs serialize to
JSON (``to_json``) and draw as self-contained SVG (:mod:`envcraft.tasks.corpus.svg`).
"""

from __future__ import annotations

import ast
import fnmatch
import inspect
import random
import textwrap
from dataclasses import dataclass, field
from typing import Any

from envcraft.core.errors import ErrorCategory, is_error
from envcraft.core.package import EnvPackage
from envcraft.core.session import Session
from envcraft.core.tool import ToolSpec
from envcraft.tasks.graphs.effects import Effects, tool_effects
from envcraft.tasks.values.args import (
    StateIndex,
    flatten,
    id_kind,
    json_type,
    output_kind,
    param_matches,
    schema_path,
    user_values,
)

PROBE_ATTEMPTS = 24
SYSTEM_MODULE = "envcraft.sandbox"  # where the built-in workspace and shell tools live


@dataclass
class ToolNode:
    """One tool as the engine sees it: effects, parameters, observed outputs."""

    env: str
    name: str
    summary: str
    params: dict[str, dict[str, Any]]
    required: list[str]
    read_only: bool
    system: bool
    reads: list[str]
    writes: list[str]
    ws_reads: list[str]
    ws_writes: list[str]
    outputs: dict[str, str | None] = field(default_factory=dict)  # schema path -> JSON type
    produces: list[str] = field(default_factory=list)
    consumes: list[str] = field(default_factory=list)
    executable: bool = False

    @property
    def key(self) -> str:
        return f"{self.env}.{self.name}"

    @property
    def mutates(self) -> bool:
        """True when a successful call can change state or files (what a verifier can see)."""
        return bool(self.writes or self.ws_writes) and not self.read_only

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.name,
            "summary": self.summary,
            "params": self.params,
            "required": self.required,
            "read_only": self.read_only,
            "system": self.system,
            "reads": self.reads,
            "writes": self.writes,
            "workspace_reads": self.ws_reads,
            "workspace_writes": self.ws_writes,
            "outputs": self.outputs,
            "produces": self.produces,
            "consumes": self.consumes,
            "executable": self.executable,
        }


@dataclass
class Edge:
    """``src -> dst`` with the evidence for it (``via``: one dict per reason)."""

    src: str
    dst: str
    via: list[dict[str, Any]] = field(default_factory=list)

    @property
    def sources(self) -> list[str]:
        return sorted({v["source"] for v in self.via})

    def to_json(self) -> dict[str, Any]:
        return {"src": self.src, "dst": self.dst, "sources": self.sources, "via": self.via}


@dataclass
class ToolGraph:
    """The tool dependency graph of one environment."""

    env: str
    kind: str
    title: str
    nodes: dict[str, ToolNode]
    edges: dict[tuple[str, str], Edge]

    def successors(self, tool: str) -> list[Edge]:
        return [e for (src, _), e in sorted(self.edges.items()) if src == tool]

    def to_json(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "kind": self.kind,
            "title": self.title,
            "nodes": [n.to_json() for n in self.nodes.values()],
            "edges": [e.to_json() for _, e in sorted(self.edges.items())],
        }


@dataclass
class CrossEdge:
    """A workflow edge: a tool of one environment feeds a tool of another."""

    src_env: str
    src: str
    dst_env: str
    dst: str
    via: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {
            "src_env": self.src_env,
            "src": self.src,
            "dst_env": self.dst_env,
            "dst": self.dst,
            "via": self.via,
        }


@dataclass
class WorkflowGraph:
    """Environments linked by shared entity kinds and workspace artifacts."""

    envs: list[str]
    edges: list[CrossEdge]

    def env_edges(self) -> dict[tuple[str, str], list[str]]:
        """Environment-level edges with the entity kinds / artifacts that justify them."""
        found: dict[tuple[str, str], set[str]] = {}
        for edge in self.edges:
            labels = found.setdefault((edge.src_env, edge.dst_env), set())
            labels.update(str(v.get("kind") or v.get("pattern")) for v in edge.via)
        return {k: sorted(v) for k, v in sorted(found.items())}

    def to_json(self) -> dict[str, Any]:
        return {
            "envs": self.envs,
            "env_edges": [{"src": s, "dst": d, "via": via} for (s, d), via in self.env_edges().items()],
            "edges": [e.to_json() for e in self.edges],
        }


# -- building -------------------------------------------------------------------------------------
def build_tool_graph(package: EnvPackage, probe_seed: int = 0) -> ToolGraph:
    """Analyze, probe and link the tools of one environment package."""
    env_class = package.env_class
    effects = tool_effects(env_class)
    nodes = {name: _node(package.id, spec, effects[name]) for name, spec in env_class.tools.items()}
    _probe(package, nodes, probe_seed)
    for name, spec in env_class.tools.items():
        outputs = nodes[name].outputs
        for key in _literal_return_keys(spec):
            if key.endswith("_ids") and not any(p.startswith(key) for p in outputs):
                outputs[key + "[]"] = "string"
            elif not any(p == key or p.startswith((key + ".", key + "[]")) for p in outputs):
                outputs[key] = "string" if key.endswith("_id") else None
        _entity_kinds(nodes[name], spec)
    edges: dict[tuple[str, str], Edge] = {}
    for a in nodes.values():
        for b in nodes.values():
            via = _evidence(a, b)
            if via:
                edges[(a.name, b.name)] = Edge(a.name, b.name, via)
    return ToolGraph(package.id, package.kind, package.manifest.title, nodes, edges)


def build_workflow_graph(graphs: list[ToolGraph]) -> WorkflowGraph:
    """Cross-environment edges: shared entity kinds and workspace artifacts (claw envs share one)."""
    edges: list[CrossEdge] = []
    for ga in graphs:
        for gb in graphs:
            if ga.env == gb.env:
                continue
            for a in ga.nodes.values():
                if not a.executable:
                    continue
                for b in gb.nodes.values():
                    if not b.executable:
                        continue
                    via = [{"source": "entity", "kind": k} for k in sorted(set(a.produces) & set(b.consumes))]
                    if ga.kind == "claw" and gb.kind == "claw":
                        via += _workspace_links(a, b)
                    if via:
                        edges.append(CrossEdge(ga.env, a.name, gb.env, b.name, via))
    return WorkflowGraph(sorted(g.env for g in graphs), edges)


def _node(env: str, spec: ToolSpec, eff: Effects) -> ToolNode:
    read_only = spec.annotations.read_only
    if read_only is None:
        read_only = not (eff.writes or eff.ws_writes)
    return ToolNode(
        env=env,
        name=spec.name,
        summary=spec.description.split("\n", 1)[0],
        params=spec.parameters["properties"],
        required=list(spec.parameters["required"]),
        read_only=read_only,
        system=getattr(spec.function, "__module__", "").startswith(SYSTEM_MODULE),
        reads=sorted(eff.reads),
        writes=sorted(eff.writes),
        ws_reads=sorted(eff.ws_reads),
        ws_writes=sorted(eff.ws_writes),
    )


def _evidence(a: ToolNode, b: ToolNode) -> list[dict[str, Any]]:
    via: list[dict[str, Any]] = []
    if not a.read_only:
        via += [{"source": "state", "field": f} for f in sorted(set(a.writes) & set(b.reads))]
        via += _workspace_links(a, b)
    for param, prop in b.params.items():
        for path, kind in sorted(a.outputs.items()):
            if param_matches(param, prop, path, kind):
                via.append({"source": "name", "output": path, "param": param})
    produced = {_kind_key(k) for k in a.produces}
    for kind in sorted(produced & {_kind_key(k) for k in b.consumes}):
        via.append({"source": "annotation", "kind": kind})
    return via


def _workspace_links(a: ToolNode, b: ToolNode) -> list[dict[str, Any]]:
    links = []
    for written in a.ws_writes:
        for read in b.ws_reads:
            if fnmatch.fnmatch(written, read) or fnmatch.fnmatch(read, written):
                links.append({"source": "workspace", "pattern": written if written != "*" else read})
    return links


def _kind_key(kind: str) -> str:
    return id_kind(kind) or kind


def _entity_kinds(node: ToolNode, spec: ToolSpec) -> None:
    """Entity kinds a tool produces/consumes: its annotations plus id-like outputs and parameters."""
    produces = {_kind_key(k) for k in spec.annotations.produces}
    produces |= {k for path in node.outputs if path.count(".") <= 1 and (k := output_kind(path))}
    consumes = {_kind_key(k) for k in spec.annotations.consumes}
    consumes |= {k for p in node.params if (k := id_kind(p))}
    node.produces = sorted(produces)
    node.consumes = sorted(consumes)


def _probe(package: EnvPackage, nodes: dict[str, ToolNode], seed: int) -> None:
    """Call each tool on a generated S0 to observe its output fields (two rounds: the second
    may feed parameters from the first round's outputs)."""
    rng = random.Random(f"probe:{package.id}:{seed}")
    with Session.memory(package, seed=seed) as session:
        index = StateIndex.build(session.state(), session.files())
        observed: list[dict[str, Any]] = []
        for round_no in range(2):
            for name in sorted(nodes):
                node = nodes[name]
                if node.executable or name == "shell":
                    continue
                for _ in range(PROBE_ATTEMPTS):
                    args = _probe_args(node, index, observed if round_no else [], rng)
                    if args is None:
                        break
                    result = session.call(name, args)
                    if is_error(result) and result["error"]["category"] == ErrorCategory.INTERNAL_ERROR:
                        break
                    if not is_error(result):
                        node.executable = True
                        observed.append(result)
                        for path, value in flatten(result):
                            node.outputs.setdefault(schema_path(path), json_type(value))
                        break


def _probe_args(
    node: ToolNode, index: StateIndex, observed: list[dict[str, Any]], rng: random.Random
) -> dict[str, Any] | None:
    args: dict[str, Any] = {}
    near: set[str] = set()
    for param, prop in node.params.items():
        if param not in node.required and rng.random() < 0.7:
            continue
        fed = [
            v
            for result in observed
            for path, v in flatten(result)
            if param_matches(param, prop, schema_path(path), json_type(v))
        ]
        options = fed or user_values(param, prop, index, rng, near=near)
        if not options:
            if param in node.required:
                return None
            continue
        value = options[0] if near and not fed else rng.choice(options)
        if isinstance(value, str | int | float):
            near |= index.owners.get(value, set())
        args[param] = [value] if prop.get("type") == "array" and not isinstance(value, list) else value
    return args


def _literal_return_keys(spec: ToolSpec) -> list[str]:
    """String keys of dict literals a tool returns directly (outputs the probe may have missed)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(spec.function)))
    except (OSError, TypeError, SyntaxError):
        return []
    keys: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            keys += [
                k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
            ]
    return keys

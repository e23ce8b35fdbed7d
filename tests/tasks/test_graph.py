"""Tool dependency graphs: AST read/write edges, name-matching edges, annotations, workspace links."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from envcraft.core import load_package
from envcraft.tasks.corpus.svg import tool_graph_svg, workflow_svg
from envcraft.tasks.graphs.effects import tool_effects
from envcraft.tasks.graphs.graph import build_tool_graph, build_workflow_graph

COUNTER = Path(__file__).resolve().parents[1] / "fixtures" / "counter"


def _sources(graph, src: str, dst: str) -> set[str]:
    return set(graph.edges[(src, dst)].sources) if (src, dst) in graph.edges else set()


def test_counter_effects_come_from_the_ast() -> None:
    effects = tool_effects(load_package(COUNTER).env_class)
    assert effects["increment"].reads == {"counters"}
    assert effects["increment"].writes == {"counters", "history"}
    assert effects["get"].reads == {"counters"} and not effects["get"].writes
    assert effects["explode"].writes == {"counters"}  # seen statically even though the tool raises


def test_counter_edges_by_state_and_by_name() -> None:
    graph = build_tool_graph(load_package(COUNTER))
    # increment writes counters, get reads it; get's output "name" also feeds increment's parameter
    assert _sources(graph, "increment", "get") == {"state", "name"}
    state = [v for v in graph.edges[("increment", "get")].via if v["source"] == "state"]
    assert state == [{"source": "state", "field": "counters"}]
    # a read-only tool feeds nothing through state; the name match remains
    assert _sources(graph, "get", "increment") == {"name"}
    assert graph.nodes["get"].read_only and not graph.nodes["increment"].read_only
    assert graph.nodes["increment"].executable and not graph.nodes["explode"].executable
    # explode writes counters but never returns: no output can feed anything by name
    assert _sources(graph, "explode", "get") == {"state"}


def test_returns_desk_effects_follow_aliases_through_helpers() -> None:
    effects = tool_effects(load_package("returns_desk").env_class)
    # cancel_order: order = self._order(...); order.status = ...; _make_refund(self.data, self.state, ...)
    assert {"orders", "refunds", "customers", "next_refund_number"} <= effects["cancel_order"].writes
    # receive_return: request = self._return(...); request.status = "received"
    assert effects["receive_return"].writes == {"returns"}
    assert not effects["get_order"].writes
    assert effects["get_order"].reads >= {"orders", "returns", "refunds"}
    assert not effects["search_catalog"].reads  # reference data only


def test_returns_desk_name_and_annotation_edges() -> None:
    graph = build_tool_graph(load_package("returns_desk"))
    via = graph.edges[("list_orders", "get_order")].via
    assert {"source": "name", "output": "orders[].order_id", "param": "order_id"} in via
    assert {"source": "name", "output": "customer_id", "param": "customer_id"} in graph.edges[
        ("get_customer", "list_orders")
    ].via
    assert "annotation" in _sources(graph, "open_return", "receive_return")
    assert "name" in _sources(graph, "open_return", "receive_return")  # return_id feeds return_id
    assert "state" in _sources(graph, "open_return", "receive_return")  # writes returns, reads returns
    # enums never match by name (a status is chosen by the user, not derived)
    assert not any(v.get("param") == "status" for e in graph.edges.values() for v in e.via)
    assert ("search_catalog", "get_customer") not in graph.edges


def test_graph_json_round_trips_and_svg_is_well_formed() -> None:
    graph = build_tool_graph(load_package("returns_desk"))
    data = json.loads(json.dumps(graph.to_json()))
    assert {n["tool"] for n in data["nodes"]} == set(graph.nodes)
    assert all(e["sources"] for e in data["edges"])
    picture = tool_graph_svg(graph, {("list_orders", "get_order"): 3})
    root = ET.fromstring(picture)
    assert root.tag.endswith("svg")
    assert "get_order" in picture and "list_orders -&gt; get_order" in picture


CLAW_ENV = '''
from typing import Any
from envcraft import StateModel, tool
from envcraft.sandbox.claw import ClawEnvironment


class ReportState(StateModel):
    reports: dict[str, str] = {{}}


class {cls}(ClawEnvironment):
    """{doc}"""

    State = ReportState

    @tool
    def {writer}(self, name: str) -> dict[str, Any]:
        """Write a report file.

        Args:
            name: Report name.

        Returns:
            The path written.
        """
        path = f"{folder}/{{name}}.md"
        self.workspace.write_text(path, "# " + name)
        self.state.reports[name] = path
        return {{"path": path}}

    @tool
    def {reader}(self, path: str) -> dict[str, Any]:
        """Read a report file.

        Args:
            path: File path.

        Returns:
            The content.
        """
        return {{"content": self.workspace.read_text(path)}}
'''


def _claw_package(root: Path, env_id: str, cls: str, writer: str, reader: str, folder: str) -> Path:
    package = root / env_id
    package.mkdir()
    (package / "envcraft.toml").write_text(f'id = "{env_id}"\ntitle = "{cls}"\nkind = "claw"\n')
    (package / "README.md").write_text(f"# {cls}\n")
    source = CLAW_ENV.format(cls=cls, doc=cls, writer=writer, reader=reader, folder=folder)
    (package / "env.py").write_text(textwrap.dedent(source))
    return package


@pytest.fixture
def claw_pair(tmp_path: Path) -> tuple[Path, Path]:
    return (
        _claw_package(tmp_path, "reports_a", "ReportsA", "write_report", "read_report", "reports"),
        _claw_package(tmp_path, "exports_b", "ExportsB", "export_csv", "import_file", "exports"),
    )


def test_workspace_paths_and_system_tools(claw_pair: tuple[Path, Path]) -> None:
    graph = build_tool_graph(load_package(claw_pair[0]))
    node = graph.nodes["write_report"]
    assert node.ws_writes == ["reports/*.md"] and node.writes == ["reports"]
    assert graph.nodes["read_report"].ws_reads == ["*"]
    links = [v for v in graph.edges[("write_report", "read_report")].via if v["source"] == "workspace"]
    assert links == [{"source": "workspace", "pattern": "reports/*.md"}]
    # the built-in file tools are nodes too, marked as system tools, linked through the workspace
    assert graph.nodes["write_file"].system and not graph.nodes["write_report"].system
    assert "workspace" in _sources(graph, "write_file", "read_file")
    assert "name" in _sources(graph, "write_report", "read_file")  # output "path" feeds parameter "path"


def test_workflow_graph_links_environments_through_the_workspace(claw_pair: tuple[Path, Path]) -> None:
    graphs = [build_tool_graph(load_package(p)) for p in claw_pair]
    workflow = build_workflow_graph(graphs)
    crossing = [
        e
        for e in workflow.edges
        if (e.src_env, e.src, e.dst_env, e.dst) == ("reports_a", "write_report", "exports_b", "import_file")
    ]
    assert crossing and {"source": "workspace", "pattern": "reports/*.md"} in crossing[0].via
    assert ("exports_b", "reports_a") in workflow.env_edges()
    assert json.loads(json.dumps(workflow.to_json()))["env_edges"]
    ET.fromstring(workflow_svg(workflow))


def test_workflow_graph_links_tool_environments_by_entity_kind() -> None:
    graphs = [build_tool_graph(load_package(e)) for e in ("returns_desk", "inventory_ledger")]
    workflow = build_workflow_graph(graphs)
    kinds = workflow.env_edges()[("returns_desk", "inventory_ledger")]
    assert "order" in kinds  # returns_desk produces order ids, the ledger's order tools consume them
    assert all(e.src_env != e.dst_env for e in workflow.edges)


LEDGER_ENV = '''
"""A ledger whose writes all happen in rules.py helpers."""

from typing import Any

from envcraft import Environment, StateModel, tool

from . import rules
from .rules import close_account as shut, post


class LedgerState(StateModel):
    accounts: dict[str, int] = {}
    journal: list[str] = []
    closed: list[str] = []


class Ledger(Environment):
    """Accounts and a journal."""

    State = LedgerState

    @tool
    def deposit(self, account: str, amount: int) -> dict[str, Any]:
        """Deposit into an account.

        Args:
            account: Account id.
            amount: Amount.

        Returns:
            The new balance.
        """
        return {"balance": post(self.state, account, amount)}

    @tool
    def retire(self, account: str) -> dict[str, Any]:
        """Close an account.

        Args:
            account: Account id.

        Returns:
            The account closed.
        """
        shut(self.state.closed, account)
        return {"account": account}

    @tool
    def audit(self, account: str) -> dict[str, Any]:
        """Flag an account in the journal.

        Args:
            account: Account id.

        Returns:
            The journal length.
        """
        rules.flag(self.state, account)
        return {"entries": len(self.state.journal)}

    @tool
    def balance(self, account: str) -> dict[str, Any]:
        """Read a balance.

        Args:
            account: Account id.

        Returns:
            The balance.
        """
        return {"balance": rules.balance_of(self.state, account)}
'''

LEDGER_RULES = '''
"""Domain rules: every write of the ledger happens here, one or two calls away from a tool."""

from typing import Any

from .journal import note


def post(state: Any, account: str, amount: int) -> int:
    state.accounts[account] = state.accounts.get(account, 0) + amount
    note(state.journal, f"{account} +{amount}")
    return state.accounts[account]


def close_account(closed: list[str], account: str) -> None:
    closed.append(account)


def flag(state: Any, account: str) -> None:
    _write(state, f"flag {account}")


def _write(state: Any, line: str) -> None:
    note(state.journal, line)


def balance_of(state: Any, account: str) -> int:
    return int(state.accounts.get(account, 0))
'''

LEDGER_JOURNAL = """
def note(journal: list[str], line: str) -> None:
    journal.append(line)
"""


def test_split_builtin_reads_through_rules_module() -> None:
    """inventory_ledger's get_stock reads cycle counts and journals only inside rules.py helpers
    (_frozen_pairs, _pending_in_drafts): the split must not hide those reads from the graph."""
    effects = tool_effects(load_package("inventory_ledger").env_class)
    assert {"cycle_counts", "journals"} <= effects["get_stock"].reads


def test_effects_follow_functions_imported_from_sibling_modules(tmp_path: Path) -> None:
    """Writes done in rules.py (and in a module rules.py imports) reach the tool graph."""
    package = tmp_path / "ledger"
    package.mkdir()
    (package / "envcraft.toml").write_text('id = "ledger"\ntitle = "Ledger"\nkind = "tool"\n')
    (package / "README.md").write_text("# Ledger\n")
    (package / "env.py").write_text(LEDGER_ENV)
    (package / "rules.py").write_text(LEDGER_RULES)
    (package / "journal.py").write_text(LEDGER_JOURNAL)
    effects = tool_effects(load_package(package).env_class)
    # from .rules import post; post writes accounts and (through journal.note) the journal
    assert effects["deposit"].writes == {"accounts", "journal"}
    assert effects["deposit"].reads >= {"accounts", "journal"}
    # an alias (close_account as shut) with a state field passed in: the field is written
    assert effects["retire"].writes == {"closed"}
    # from . import rules; rules.flag -> rules._write -> journal.note
    assert effects["audit"].writes == {"journal"}
    # reading through a sibling function is a read, not a write
    assert effects["balance"].reads == {"accounts"} and not effects["balance"].writes
    graph = build_tool_graph(load_package(package))
    assert "state" in _sources(graph, "deposit", "balance")
    assert "state" in _sources(graph, "audit", "deposit")  # both touch the journal; deposit reads it


LOOKUP_ENV = '''
from typing import Any

from envcraft import Environment, StateModel, tool


class Account(StateModel):
    balance: int = 0


class LookupState(StateModel):
    accounts: dict[str, Account] = {}
    log: list[str] = []


class Bank(Environment):
    """Accounts found with the base class's lookup."""

    State = LookupState
    state: LookupState

    @tool
    def deposit(self, account_id: str, amount: int) -> dict[str, Any]:
        """Add money to an account."""
        account = self.lookup(self.state.accounts, account_id, "account", account_id=account_id)
        account.balance += amount
        return {"balance": account.balance}

    @tool(read_only=True)
    def balance(self, account_id: str) -> dict[str, Any]:
        """An account's balance."""
        return {"balance": self.lookup(self.state.accounts, account_id, "account").balance}
'''


def test_effects_see_writes_to_a_record_found_with_lookup(tmp_path: Path) -> None:
    """``self.lookup(self.state.accounts, ...)`` returns a record of ``accounts``: writing to it
    writes ``accounts`` (the base class's method is not in the package, so it is not followed)."""
    package = tmp_path / "bank"
    package.mkdir()
    (package / "envcraft.toml").write_text('id = "bank"\ntitle = "Bank"\nkind = "tool"\n')
    (package / "README.md").write_text("# Bank\n")
    (package / "env.py").write_text(LOOKUP_ENV)
    effects = tool_effects(load_package(package).env_class)
    assert effects["deposit"].writes == {"accounts"}
    assert effects["balance"].reads == {"accounts"} and not effects["balance"].writes

"""sheet_analytics: the pipeline stages on real workspace files, their error categories,
freshness after edits made outside the tools, invariants under random call sequences, and
determinism of the generated workspace."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from envcraft import Session
from envcraft.core import is_error, load_package

ENV = "sheet_analytics"
HEADER = "order_id,order_date,region,rep,product_code,channel,units,unit_price,discount\n"
Q1 = HEADER + (
    "SO-1,2025-01-05,North,Ana,HW-1,Online,2,100,\n"
    'SO-2,01/20/2025,north ,Ben,HW-2,web,1,"$1,000.00",10%\n'
    "SO-3,2025-02-30,South,Chen,HW-1,Retail,,100,0.1\n"
    "SO-4,2025-03-01,South,,HW-2,Retail,3,1000,\n"
    "SO-1,2025-01-05,North,Ana,HW-1,Online,2,100,\n"
)
Q2 = HEADER + (
    "SO-4,2025-03-01,South,Dara,HW-2,Retail,3,1000,\n"
    "SO-5,2025-04-02,East,Eli,HW-1,Partner,4,100,0.5\n"
    "SO-6,02.05.2025,East,Eli,HW-2,Online,1,1000,\n"
)
PRODUCTS = (
    "product_code,product_name,category,unit_cost\n"
    "HW-1,Router,Hardware,60\nHW-2,Server,Hardware,700\nHW-2,Server,Hardware,700\n"
)
REGIONS = (
    "region,manager,quarterly_target\nNorth,Marta,5000\nSouth,Omar,5000\nEast,Lena,3000\nWest,Raj,2000\n"
)
FILES = {"data/q1.csv": Q1, "data/q2.csv": Q2, "data/products.csv": PRODUCTS, "data/regions.csv": REGIONS}
RULES = [
    ("trim", "*", ""),
    ("normalize_case", "region", "title"),
    ("map_values", "channel", "web=Online"),
    ("parse_date", "order_date", ""),
    ("drop_invalid", "order_date", ""),
    ("parse_number", "unit_price", ""),
    ("parse_number", "discount", ""),
    ("fill_missing", "discount", "zero"),
    ("fill_missing", "rep", "value=Unassigned"),
    ("dedupe", "*", ""),
    ("derive", "revenue", "units * unit_price * (1 - discount)"),
]


@pytest.fixture
def s() -> Iterator[Session]:
    with Session.memory(ENV, state={}, files=dict(FILES)) as session:
        for path, schema in [
            ("data/q1.csv", "sales"),
            ("data/q2.csv", "sales"),
            ("data/products.csv", "products"),
            ("data/regions.csv", "regions"),
        ]:
            ok(session, "register_dataset", path=path, schema_name=schema)
        yield session


def ok(session: Session, tool: str, **args: Any) -> dict[str, Any]:
    result = session.call(tool, args)
    assert not is_error(result), result
    check_invariants(session.state(), session.files())
    return result


def err(session: Session, tool: str, category: str, **args: Any) -> dict[str, Any]:
    before = (session.state_hash(), session.files())
    result = session.call(tool, args)
    assert is_error(result), result
    assert result["error"]["category"] == category, result
    assert (session.state_hash(), session.files()) == before
    return dict(result["error"])


def recipe(session: Session, rules: list[tuple[str, str, str]] = RULES) -> str:
    rid = str(ok(session, "create_recipe", name="cleanup")["recipe_id"])
    for operation, column, option in rules:
        ok(session, "add_cleaning_rule", recipe_id=rid, operation=operation, column=column, option=option)
    return rid


def cleaned(session: Session) -> tuple[str, str, str]:
    """Clean both quarters with RULES; returns (recipe id, clean Q1 id, clean Q2 id)."""
    rid = recipe(session)
    ids = []
    for raw, out in (("DS-001", "data/clean/q1.csv"), ("DS-002", "data/clean/q2.csv")):
        ok(session, "profile_dataset", dataset_id=raw)
        result = ok(session, "clean_dataset", dataset_id=raw, recipe_id=rid, output_path=out)
        assert result["certified"], result["issues"]
        ids.append(result["dataset_id"])
    return rid, ids[0], ids[1]


def status(session: Session, dataset_id: str) -> str:
    rows = {d["dataset_id"]: d for d in ok(session, "list_datasets")["datasets"]}
    return str(rows[dataset_id]["status"])


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- invariants ----------------------------------------------------------------------------------
ALLOWED_INPUTS = {
    "clean": {"raw", "clean", "merged", "joined"},
    "merged": {"raw", "clean", "merged", "joined"},
    "joined": {"raw", "clean", "merged", "joined"},
    "stats": {"clean", "merged", "joined"},
    "pivot": {"clean", "merged", "joined"},
    "chart": {"stats", "pivot"},
    "report": {"stats", "pivot", "chart"},
}


def check_invariants(state: dict[str, Any], files: dict[str, str]) -> None:
    """Lineage is a DAG over existing datasets, kinds chain legally, runs and manifest agree."""
    datasets = state["datasets"]
    for ds_id, ds in datasets.items():
        assert ds["version"] >= 1
        if ds["kind"] == "raw":
            assert ds["inputs"] == {} and ds["stage"] == "register"
            continue
        assert ds["inputs"], ds_id
        for input_id in ds["inputs"]:
            assert input_id in datasets, (ds_id, input_id)
            assert datasets[input_id]["kind"] in ALLOWED_INPUTS[ds["kind"]], (ds_id, input_id)
        assert any(r["output"] == ds_id for r in state["runs"].values()), ds_id
        if ds["kind"] in ("clean", "merged", "joined"):
            assert ds["validated"]
    visiting: set[str] = set()
    done: set[str] = set()

    def visit(node: str) -> None:
        assert node not in visiting, f"lineage cycle through {node}"
        if node in done:
            return
        visiting.add(node)
        for parent in datasets[node]["inputs"]:
            visit(parent)
        visiting.discard(node)
        done.add(node)

    for node in datasets:
        visit(node)
    paths = [d["path"] for d in datasets.values()]
    assert len(paths) == len(set(paths)), "two datasets share a path"
    manifest = json.loads(files["pipeline/lineage.json"])
    assert {k: v["sha256"] for k, v in manifest["datasets"].items()} == {
        k: v["sha256"] for k, v in datasets.items()
    }
    assert [r["run_id"] for r in manifest["runs"]] == sorted(state["runs"])


# -- sources and profiles ------------------------------------------------------------------------
def test_register_and_reregister(s: Session) -> None:
    listed = ok(s, "list_datasets", kind="raw")["datasets"]
    assert [d["dataset_id"] for d in listed] == ["DS-001", "DS-002", "DS-003", "DS-004"]
    assert listed[0] == {
        "dataset_id": "DS-001",
        "path": "data/q1.csv",
        "kind": "raw",
        "schema": "sales",
        "rows": 5,
        "version": 1,
        "status": "fresh",
        "certified": False,
        "issues": None,
        "inputs": [],
        "columns": HEADER.strip().split(","),
    }
    again = ok(s, "register_dataset", path="data/q1.csv", schema_name="sales")
    assert again["dataset_id"] == "DS-001" and again["version"] == 1 and again["changed"] is False
    ok(s, "write_file", path="data/q1.csv", content=Q1 + "SO-9,2025-03-30,West,Raj,HW-1,Online,1,100,\n")
    assert status(s, "DS-001") == "modified"
    bumped = ok(s, "register_dataset", path="data/q1.csv", schema_name="sales")
    assert bumped["version"] == 2 and bumped["changed"] and bumped["rows"] == 6
    assert status(s, "DS-001") == "fresh"


def test_a_path_written_another_way_is_the_same_file(s: Session) -> None:
    """ "./data/q1.csv" names data/q1.csv: the same dataset, and an output stored as the
    workspace path it is, so a verifier that asks for out/... finds it."""
    again = ok(s, "register_dataset", path="./data/q1.csv", schema_name="sales")
    assert again["dataset_id"] == "DS-001" and again["changed"] is False
    rid = recipe(s)
    ok(s, "profile_dataset", dataset_id="DS-001")
    made = ok(s, "clean_dataset", dataset_id="DS-001", recipe_id=rid, output_path="./out//q1_clean.csv")
    assert s.state()["datasets"][made["dataset_id"]]["path"] == "out/q1_clean.csv"


def test_read_tool_errors(s: Session) -> None:
    err(s, "show_lineage", "not_found", dataset_id="DS-404")
    err(s, "list_datasets", "invalid_argument", kind="spreadsheet")
    _, q1, _ = cleaned(s)
    err(
        s,
        "join_datasets",
        "not_found",
        left_id=q1,
        right_id="DS-404",
        key="product_code",
        output_path="c/j.csv",
    )
    err(
        s,
        "build_pivot",
        "not_found",
        dataset_id="DS-404",
        index="region",
        values="units",
        output_path="p.csv",
    )
    stats = ok(
        s, "compute_statistics", dataset_id=q1, column="units", group_by="region", output_path="r/s.csv"
    )
    shell_edit = s.files()["r/s.csv"].replace("North", "Nord")
    assert not is_error(s.call("write_file", {"path": "r/s.csv", "content": shell_edit}))
    modified = err(
        s,
        "create_chart_spec",
        "invalid_transition",
        dataset_id=stats["dataset_id"],
        chart_type="bar",
        x="region",
        y="sum",
        title="t",
        output_path="r/c.json",
    )
    assert modified["status"] == "modified"


def test_register_errors(s: Session) -> None:
    err(s, "register_dataset", "invalid_argument", path="data/README.md", schema_name="sales")
    err(s, "register_dataset", "not_found", path="data/q9.csv", schema_name="sales")
    err(s, "register_dataset", "invalid_argument", path="data/products.csv", schema_name="sales")
    err(s, "register_dataset", "invalid_argument", path="data/q1.csv", schema_name="ledger")
    err(s, "register_dataset", "permission_denied", path="../outside.csv", schema_name="sales")
    err(s, "register_dataset", "missing_field", path="data/q1.csv")
    _, clean_q1, _ = cleaned(s)
    produced = err(s, "register_dataset", "conflict", path="data/clean/q1.csv", schema_name="sales")
    assert produced["dataset_id"] == clean_q1


def test_profile_finds_every_kind_of_mess(s: Session) -> None:
    profile = ok(s, "profile_dataset", dataset_id="DS-001")
    found = {(i["column"], i["problem"]): i["rows"] for i in profile["issues"]}
    assert found == {
        ("order_date", "invalid_date"): 2,
        ("region", "unknown_category"): 1,
        ("rep", "missing"): 1,
        ("channel", "unknown_category"): 1,
        ("units", "missing"): 1,
        ("unit_price", "invalid_number"): 1,
        ("discount", "invalid_percent"): 1,
        ("*", "duplicate_row"): 1,
    }
    assert profile["columns"]["region"]["value_counts"] == {"North": 2, "South": 2, "north ": 1}
    assert all(i["fix"] for i in profile["issues"]) and profile["certified"] is False
    assert ok(s, "profile_dataset", dataset_id="DS-004")["certified"] is True
    products = ok(s, "profile_dataset", dataset_id="DS-003")["issues"]
    assert [(i["problem"], i["rows"]) for i in products] == [("duplicate_row", 1)]
    err(s, "profile_dataset", "not_found", dataset_id="DS-404")


def test_profile_refuses_modified_and_summary_artifacts(s: Session) -> None:
    ok(s, "write_file", path="data/q2.csv", content=Q2.replace("East", "Eest"))
    assert err(s, "profile_dataset", "invalid_transition", dataset_id="DS-002")["status"] == "modified"
    ok(s, "write_file", path="data/q2.csv", content=Q2)
    _, clean_q1, _ = cleaned(s)
    stats = ok(s, "compute_statistics", dataset_id=clean_q1, column="revenue", output_path="r/s.csv")
    err(s, "profile_dataset", "invalid_argument", dataset_id=stats["dataset_id"])


# -- recipes -------------------------------------------------------------------------------------
def test_recipe_rules_and_versions(s: Session) -> None:
    rid = ok(s, "create_recipe", name=" Sales cleanup ")["recipe_id"]
    assert rid == "RCP-01"
    first = ok(s, "add_cleaning_rule", recipe_id=rid, operation="trim", column="*")
    assert first["rule"] == {"rule_no": 1, "operation": "trim", "column": "*", "option": ""}
    ok(s, "add_cleaning_rule", recipe_id=rid, operation="dedupe", column="order_id", option="last")
    ok(
        s,
        "add_cleaning_rule",
        recipe_id=rid,
        operation="derive",
        column="net",
        option="units * (1 - discount)",
    )
    removed = ok(s, "remove_cleaning_rule", recipe_id=rid, rule_no=2)
    assert removed["removed"]["operation"] == "dedupe" and removed["version"] == 4
    shown = ok(s, "show_recipe", recipe_id=rid)
    assert [r["rule_no"] for r in shown["rules"]] == [1, 2] and shown["name"] == "Sales cleanup"
    assert shown["used_by"] == []


@pytest.mark.parametrize(
    ("operation", "column", "option"),
    [
        ("normalize_case", "region", "camel"),
        ("map_values", "channel", "web"),
        ("fill_missing", "units", "average"),
        ("dedupe", "*", "middle"),
        ("derive", "net revenue", "units"),
        ("derive", "net", "units * (1 - "),
        ("derive", "net", "units ^ 2"),
        ("parse_date", "order_date", "dmy"),
        ("parse_number", "*", ""),
        ("trim", " ", ""),
    ],
)
def test_malformed_rules_are_refused(s: Session, operation: str, column: str, option: str) -> None:
    rid = ok(s, "create_recipe", name="r")["recipe_id"]
    err(
        s,
        "add_cleaning_rule",
        "invalid_argument",
        recipe_id=rid,
        operation=operation,
        column=column,
        option=option,
    )


def test_recipe_errors(s: Session) -> None:
    err(s, "create_recipe", "invalid_argument", name=" ")
    err(s, "add_cleaning_rule", "not_found", recipe_id="RCP-99", operation="trim", column="*")
    err(s, "add_cleaning_rule", "invalid_argument", recipe_id="RCP-99", operation="polish", column="*")
    rid = ok(s, "create_recipe", name="r")["recipe_id"]
    err(s, "remove_cleaning_rule", "not_found", recipe_id=rid, rule_no=1)
    err(s, "remove_cleaning_rule", "not_found", recipe_id="RCP-99", rule_no=1)
    err(s, "show_recipe", "not_found", recipe_id="RCP-99")


# -- cleaning ------------------------------------------------------------------------------------
def test_clean_certifies_and_writes_the_file(s: Session) -> None:
    rid = recipe(s)
    err(s, "clean_dataset", "invalid_transition", dataset_id="DS-001", recipe_id=rid, output_path="c/q1.csv")
    ok(s, "profile_dataset", dataset_id="DS-001")
    result = ok(s, "clean_dataset", dataset_id="DS-001", recipe_id=rid, output_path="c/q1.csv")
    assert result["certified"] and result["summary"]["rows_in"] == 5 and result["summary"]["rows_out"] == 3
    assert result["summary"]["rule_5_drop_invalid"] == 1 and result["summary"]["rule_10_dedupe"] == 1
    assert s.files()["c/q1.csv"] == (
        HEADER.strip() + ",revenue\n"
        "SO-1,2025-01-05,North,Ana,HW-1,Online,2,100,0,200\n"
        "SO-2,2025-01-20,North,Ben,HW-2,Online,1,1000,0.1,900\n"
        "SO-4,2025-03-01,South,Unassigned,HW-2,Retail,3,1000,0,3000\n"
    )
    lineage = ok(s, "show_lineage", dataset_id=result["dataset_id"])
    assert lineage["dataset"]["inputs"] == {"DS-001": sha(Q1)} and lineage["recipe"]["recipe_id"] == rid
    assert lineage["ancestors"][0]["dataset_id"] == "DS-001" and lineage["runs"][0]["stage"] == "clean"
    assert ok(s, "show_recipe", recipe_id=rid)["used_by"] == [
        {"dataset_id": result["dataset_id"], "recipe_version": len(RULES), "status": "fresh"}
    ]


def test_clean_reports_remaining_issues_and_rebuilds_in_place(s: Session) -> None:
    rid = recipe(s, [("trim", "*", "")])
    ok(s, "profile_dataset", dataset_id="DS-001")
    partial = ok(s, "clean_dataset", dataset_id="DS-001", recipe_id=rid, output_path="c/q1.csv")
    assert not partial["certified"] and {i["column"] for i in partial["issues"]} >= {"order_date", "units"}
    err(
        s,
        "compute_statistics",
        "invalid_transition",
        dataset_id=partial["dataset_id"],
        column="units",
        output_path="r/s.csv",
    )
    assert status(s, partial["dataset_id"]) == "fresh"
    for operation, column, option in RULES[1:]:
        ok(s, "add_cleaning_rule", recipe_id=rid, operation=operation, column=column, option=option)
    assert status(s, partial["dataset_id"]) == "stale"  # the recipe moved on
    again = ok(s, "clean_dataset", dataset_id="DS-001", recipe_id=rid, output_path="c/q1.csv")
    assert again["dataset_id"] == partial["dataset_id"] and again["version"] == 2 and again["certified"]


def test_a_clean_artifact_is_rebuilt_in_place_only_from_its_own_schema(s: Session) -> None:
    """A clean sales artifact rebuilt from the regions sheet would be no sales data any more
    (a task asked for that, and its verifier required the overwrite; round 41, R4)."""
    rid = recipe(s, [("trim", "*", "")])
    ok(s, "profile_dataset", dataset_id="DS-001")
    ok(s, "profile_dataset", dataset_id="DS-004")
    sales = ok(s, "clean_dataset", dataset_id="DS-001", recipe_id=rid, output_path="c/q1.csv")
    other = err(s, "clean_dataset", "conflict", dataset_id="DS-004", recipe_id=rid, output_path="c/q1.csv")
    assert other["dataset_id"] == sales["dataset_id"] and other["schema"] == "sales"
    regions = ok(s, "clean_dataset", dataset_id="DS-004", recipe_id=rid, output_path="c/regions.csv")
    assert regions["dataset_id"] != sales["dataset_id"]


def test_a_derive_rule_reads_only_columns_a_sheet_has_or_an_earlier_rule_derives(s: Session) -> None:
    """ "derive unit_price with option zero" took "zero" for a column, and broke the recipe only
    when a stage next ran it (round 50, R1): a name no dataset has is refused when it is added."""
    rid = recipe(s, [("derive", "net", "units * (1 - discount)"), ("derive", "half", "net / 2")])
    derive = {"recipe_id": rid, "operation": "derive", "column": "x", "option": "zero"}
    bad = err(s, "add_cleaning_rule", "invalid_argument", **derive)
    assert "zero" in bad["message"]


def test_clean_errors(s: Session) -> None:
    rid = recipe(s, [("derive", "margin", "unit_price - unit_cost")])
    ok(s, "profile_dataset", dataset_id="DS-001")
    err(s, "clean_dataset", "not_found", dataset_id="DS-009", recipe_id=rid, output_path="c.csv")
    err(s, "clean_dataset", "not_found", dataset_id="DS-001", recipe_id="RCP-77", output_path="c.csv")
    bad = err(s, "clean_dataset", "invalid_argument", dataset_id="DS-001", recipe_id=rid, output_path="c.csv")
    assert bad["rule_no"] == 1
    other = recipe(s, [("normalize_case", "colour", "lower")])
    err(s, "clean_dataset", "invalid_argument", dataset_id="DS-001", recipe_id=other, output_path="c.csv")
    err(s, "clean_dataset", "invalid_argument", dataset_id="DS-001", recipe_id=rid, output_path="c.xlsx")
    err(
        s,
        "clean_dataset",
        "invalid_argument",
        dataset_id="DS-001",
        recipe_id=rid,
        output_path="pipeline/x.csv",
    )
    err(s, "clean_dataset", "conflict", dataset_id="DS-001", recipe_id=other, output_path="data/q2.csv")
    err(s, "clean_dataset", "conflict", dataset_id="DS-001", recipe_id=other, output_path="data/q1.csv")
    err(
        s,
        "clean_dataset",
        "permission_denied",
        dataset_id="DS-001",
        recipe_id=other,
        output_path="/tmp/x.csv",
    )


# -- merge and join ------------------------------------------------------------------------------
def test_merge_surfaces_cross_file_duplicates(s: Session) -> None:
    _, q1, q2 = cleaned(s)
    merged = ok(s, "merge_datasets", dataset_ids=[q1, q2], output_path="c/all.csv")
    assert merged["rows"] == 6 and not merged["certified"]
    assert [(i["problem"], i["examples"]) for i in merged["issues"]] == [("duplicate_key", ["SO-4"])]
    dedupe = recipe(s, [("dedupe", "order_id", "last")])
    year = ok(s, "clean_dataset", dataset_id=merged["dataset_id"], recipe_id=dedupe, output_path="c/year.csv")
    assert year["certified"] and year["rows"] == 5
    assert "SO-4,2025-03-01,South,Dara" in s.files()["c/year.csv"]


def test_merge_errors(s: Session) -> None:
    _, q1, _ = cleaned(s)
    err(s, "merge_datasets", "invalid_argument", dataset_ids=[q1], output_path="c/all.csv")
    err(s, "merge_datasets", "invalid_argument", dataset_ids=[q1, q1], output_path="c/all.csv")
    err(s, "merge_datasets", "invalid_transition", dataset_ids=[q1, "DS-001"], output_path="c/all.csv")
    err(s, "merge_datasets", "not_found", dataset_ids=[q1, "DS-099"], output_path="c/all.csv")
    ok(s, "profile_dataset", dataset_id="DS-004")  # the regions sheet is already clean: certified raw
    mixed = err(s, "merge_datasets", "conflict", dataset_ids=[q1, "DS-004"], output_path="c/all.csv")
    assert mixed["dataset_id"] == "DS-004"


def test_join_needs_unique_lookup_keys(s: Session) -> None:
    _, q1, _ = cleaned(s)
    ok(s, "profile_dataset", dataset_id="DS-003")
    err(
        s,
        "join_datasets",
        "invalid_transition",
        left_id=q1,
        right_id="DS-003",
        key="product_code",
        output_path="c/j.csv",
    )
    products = ok(
        s,
        "clean_dataset",
        dataset_id="DS-003",
        recipe_id=recipe(s, [("dedupe", "*", "")]),
        output_path="c/products.csv",
    )["dataset_id"]
    joined = ok(s, "join_datasets", left_id=q1, right_id=products, key="product_code", output_path="c/j.csv")
    assert joined["columns"][-3:] == ["product_name", "category", "unit_cost"] and joined["certified"]
    assert joined["summary"] == {"rows_in": 3, "unmatched": 0}
    err(
        s,
        "join_datasets",
        "invalid_argument",
        left_id=q1,
        right_id=products,
        key="sku",
        output_path="c/j2.csv",
    )
    err(
        s,
        "join_datasets",
        "invalid_argument",
        left_id=q1,
        right_id=q1,
        key="order_id",
        output_path="c/j2.csv",
    )
    err(
        s,
        "join_datasets",
        "invalid_argument",
        left_id=q1,
        right_id=products,
        key="product_code",
        output_path="c/j2.csv",
        how="outer",
    )


def test_join_conflicts_on_duplicate_keys_of_a_certified_sheet(s: Session) -> None:
    _, q1, q2 = cleaned(s)
    dupe = err(s, "join_datasets", "conflict", left_id=q2, right_id=q1, key="region", output_path="c/j.csv")
    assert dupe["duplicate_keys"] == ["North"]


# -- analysis ------------------------------------------------------------------------------------
def test_statistics_values(s: Session) -> None:
    _, q1, q2 = cleaned(s)
    merged = ok(s, "merge_datasets", dataset_ids=[q1, q2], output_path="c/all.csv")["dataset_id"]
    year = ok(
        s,
        "clean_dataset",
        dataset_id=merged,
        recipe_id=recipe(s, [("dedupe", "order_id", "last")]),
        output_path="c/year.csv",
    )["dataset_id"]
    result = ok(
        s,
        "compute_statistics",
        dataset_id=year,
        column="revenue",
        group_by="region",
        output_path="reports/by_region.csv",
    )
    assert result["table"] == [
        {
            "region": "East",
            "count": "2",
            "sum": "1200",
            "mean": "600",
            "median": "600",
            "min": "200",
            "max": "1000",
            "stdev": "565.6854",
        },
        {
            "region": "North",
            "count": "2",
            "sum": "1100",
            "mean": "550",
            "median": "550",
            "min": "200",
            "max": "900",
            "stdev": "494.9747",
        },
        {
            "region": "South",
            "count": "1",
            "sum": "3000",
            "mean": "3000",
            "median": "3000",
            "min": "3000",
            "max": "3000",
            "stdev": "0",
        },
    ]
    assert s.files()["reports/by_region.csv"].startswith(
        "region,count,sum,mean,median,min,max,stdev\nEast,2,1200"
    )
    overall = ok(s, "compute_statistics", dataset_id=year, column="units", output_path="reports/units.csv")
    assert overall["table"][0]["group"] == "all" and overall["table"][0]["sum"] == "11"


def test_date_part_groups_keep_a_left_joins_unmatched_rows_apart(s: Session) -> None:
    _, q1, _ = cleaned(s)
    ok(s, "profile_dataset", dataset_id="DS-003")
    dedupe = recipe(s, [("dedupe", "*", "")])
    products = ok(s, "clean_dataset", dataset_id="DS-003", recipe_id=dedupe, output_path="c/products.csv")
    one_per_product = recipe(s, [("map_values", "product_code", "HW-1=HW-9"), ("dedupe", "product_code", "")])
    sales = ok(s, "clean_dataset", dataset_id=q1, recipe_id=one_per_product, output_path="c/sales.csv")
    joined = ok(
        s,
        "join_datasets",
        left_id=products["dataset_id"],
        right_id=sales["dataset_id"],
        key="product_code",
        output_path="c/j.csv",
        how="left",
    )
    assert joined["summary"]["unmatched"] == 1  # HW-1 sold nothing: its order_date is empty
    table = ok(
        s,
        "compute_statistics",
        dataset_id=joined["dataset_id"],
        column="unit_cost",
        group_by="order_date:quarter",
        output_path="reports/by_quarter.csv",
    )["table"]
    assert [(row["order_date_quarter"], row["count"]) for row in table] == [("", "1"), ("2025-Q1", "1")]


def test_statistics_errors(s: Session) -> None:
    _, q1, _ = cleaned(s)
    err(s, "compute_statistics", "invalid_argument", dataset_id=q1, column="region", output_path="r.csv")
    err(s, "compute_statistics", "invalid_argument", dataset_id=q1, column="profit", output_path="r.csv")
    err(
        s,
        "compute_statistics",
        "invalid_argument",
        dataset_id=q1,
        column="units",
        group_by="region:month",
        output_path="r.csv",
    )
    err(
        s,
        "compute_statistics",
        "invalid_argument",
        dataset_id=q1,
        column="units",
        group_by="colour",
        output_path="r.csv",
    )
    ok(s, "profile_dataset", dataset_id="DS-004")
    err(
        s,
        "compute_statistics",
        "invalid_transition",
        dataset_id="DS-004",
        column="quarterly_target",
        output_path="r.csv",
    )
    err(s, "compute_statistics", "not_found", dataset_id="DS-050", column="units", output_path="r.csv")


def test_pivot_by_quarter_with_totals(s: Session) -> None:
    _, q1, q2 = cleaned(s)
    merged = ok(s, "merge_datasets", dataset_ids=[q1, q2], output_path="c/all.csv")["dataset_id"]
    year = ok(
        s,
        "clean_dataset",
        dataset_id=merged,
        recipe_id=recipe(s, [("dedupe", "order_id", "last")]),
        output_path="c/year.csv",
    )["dataset_id"]
    pivot = ok(
        s,
        "build_pivot",
        dataset_id=year,
        index="region",
        columns="order_date:quarter",
        values="revenue",
        output_path="reports/pivot.csv",
    )
    assert pivot["columns"] == ["region", "2025-Q1", "2025-Q2", "total"]
    assert pivot["table"][0] == {"region": "East", "2025-Q1": "0", "2025-Q2": "1200", "total": "1200"}
    means = ok(
        s,
        "build_pivot",
        dataset_id=year,
        index="channel",
        values="units",
        aggregation="mean",
        output_path="reports/units.csv",
    )
    assert means["columns"] == ["channel", "units"] and means["table"][0] == {
        "channel": "Online",
        "units": "1.3333",
    }
    err(
        s,
        "build_pivot",
        "invalid_argument",
        dataset_id=year,
        index="region",
        columns="region",
        values="revenue",
        output_path="reports/p2.csv",
    )
    err(
        s,
        "build_pivot",
        "invalid_argument",
        dataset_id=year,
        index="region",
        values="rep",
        output_path="reports/p2.csv",
    )
    err(
        s,
        "build_pivot",
        "invalid_argument",
        dataset_id=year,
        index="region",
        values="revenue",
        output_path="reports/p2.csv",
        aggregation="median",
    )
    err(
        s,
        "build_pivot",
        "invalid_transition",
        dataset_id=pivot["dataset_id"],
        index="region",
        values="total",
        output_path="reports/p2.csv",
    )


def test_chart_spec(s: Session) -> None:
    _, q1, _ = cleaned(s)
    stats = ok(
        s,
        "compute_statistics",
        dataset_id=q1,
        column="revenue",
        group_by="order_date",
        output_path="reports/daily.csv",
    )["dataset_id"]
    chart = ok(
        s,
        "create_chart_spec",
        dataset_id=stats,
        chart_type="line",
        x="order_date",
        y="sum",
        title="Daily revenue",
        output_path="reports/daily.vl.json",
    )
    assert chart["encoding"]["x"] == {"field": "order_date", "type": "temporal"}
    spec = json.loads(s.files()["reports/daily.vl.json"])
    assert spec["mark"] == "line" and spec["data"]["values"][0] == {"order_date": "2025-01-05", "sum": 200.0}
    assert spec["usermeta"]["source"] == stats
    err(
        s,
        "create_chart_spec",
        "invalid_argument",
        dataset_id=q1,
        chart_type="bar",
        x="region",
        y="units",
        title="t",
        output_path="reports/c.json",
    )
    err(
        s,
        "create_chart_spec",
        "invalid_argument",
        dataset_id=stats,
        chart_type="bar",
        x="region",
        y="sum",
        title="t",
        output_path="reports/c.json",
    )
    err(
        s,
        "create_chart_spec",
        "invalid_argument",
        dataset_id=stats,
        chart_type="bar",
        x="order_date",
        y="order_date",
        title="t",
        output_path="reports/c.json",
    )
    err(
        s,
        "create_chart_spec",
        "invalid_argument",
        dataset_id=stats,
        chart_type="bar",
        x="order_date",
        y="sum",
        title=" ",
        output_path="reports/c.json",
    )
    err(
        s,
        "create_chart_spec",
        "invalid_argument",
        dataset_id=stats,
        chart_type="bar",
        x="order_date",
        y="sum",
        title="t",
        output_path="reports/c.csv",
    )
    err(
        s,
        "create_chart_spec",
        "invalid_argument",
        dataset_id=stats,
        chart_type="donut",
        x="order_date",
        y="sum",
        title="t",
        output_path="reports/c.json",
    )
    err(
        s,
        "create_chart_spec",
        "not_found",
        dataset_id="DS-404",
        chart_type="bar",
        x="a",
        y="b",
        title="t",
        output_path="reports/c.json",
    )


def test_report_embeds_tables_and_lineage(s: Session) -> None:
    rid, q1, _ = cleaned(s)
    stats = ok(
        s,
        "compute_statistics",
        dataset_id=q1,
        column="revenue",
        group_by="region",
        output_path="reports/r.csv",
    )["dataset_id"]
    chart = ok(
        s,
        "create_chart_spec",
        dataset_id=stats,
        chart_type="bar",
        x="region",
        y="sum",
        title="By region",
        output_path="reports/r.vl.json",
    )["dataset_id"]
    report = ok(
        s,
        "write_report",
        title="Q1 review",
        artifact_ids=[stats, chart],
        output_path="reports/q1.md",
        summary="South leads.",
    )
    text = s.files()["reports/q1.md"]
    assert text.startswith("# Q1 review\n\nSouth leads.\n")
    assert "| North | 2 | 1100 |" in text and "`reports/r.vl.json`" in text
    assert f"- {q1} `data/clean/q1.csv` (clean, v1) <- DS-001" in text
    assert f'Cleaning recipe {rid} "cleanup" (version {len(RULES)})' in text
    assert "11. derive revenue units * unit_price * (1 - discount)" in text
    assert report["sections"] == [stats, chart]
    err(s, "write_report", "invalid_argument", title="x", artifact_ids=[q1], output_path="reports/x.md")
    err(s, "write_report", "invalid_argument", title="x", artifact_ids=[], output_path="reports/x.md")
    err(
        s,
        "write_report",
        "invalid_argument",
        title="x",
        artifact_ids=[stats, stats],
        output_path="reports/x.md",
    )
    err(s, "write_report", "invalid_argument", title=" ", artifact_ids=[stats], output_path="reports/x.md")
    err(s, "write_report", "invalid_argument", title="x", artifact_ids=[stats], output_path="reports/x.txt")
    err(s, "write_report", "not_found", title="x", artifact_ids=["DS-404"], output_path="reports/x.md")
    ok(s, "write_file", path="reports/r.csv", content="region,sum\nNorth,1\n")
    err(s, "write_report", "invalid_transition", title="x", artifact_ids=[chart], output_path="reports/x.md")


# -- freshness and re-runs -----------------------------------------------------------------------
def test_shell_edit_makes_downstream_stale_until_rerun(s: Session) -> None:
    _, q1, _ = cleaned(s)
    stats = ok(s, "compute_statistics", dataset_id=q1, column="revenue", output_path="r/s.csv")
    report = ok(s, "write_report", title="t", artifact_ids=[stats["dataset_id"]], output_path="r/t.md")
    ok(s, "write_file", path="data/q1.csv", content=Q1.replace("Ana,HW-1,Online,2", "Ana,HW-1,Online,4"))
    assert [status(s, d) for d in ("DS-001", q1, stats["dataset_id"], report["dataset_id"])] == [
        "modified",
        "stale",
        "stale",
        "stale",
    ]
    blocked = err(s, "rerun_stage", "invalid_transition", dataset_id=q1)
    assert blocked["status"] == "modified" and blocked["dataset_id"] == "DS-001"
    err(
        s,
        "compute_statistics",
        "invalid_transition",
        dataset_id=q1,
        column="units",
        output_path="r/u.csv",
    )
    ok(s, "register_dataset", path="data/q1.csv", schema_name="sales")
    err(s, "rerun_stage", "invalid_transition", dataset_id=q1)  # the new version is not profiled yet
    ok(s, "profile_dataset", dataset_id="DS-001")
    order = [d["dataset_id"] for d in ok(s, "show_lineage", dataset_id="DS-001")["descendants"]]
    assert order == [q1, stats["dataset_id"], report["dataset_id"]]
    err(s, "rerun_stage", "invalid_transition", dataset_id=stats["dataset_id"])  # q1 first
    results = [ok(s, "rerun_stage", dataset_id=d) for d in order]
    assert [r["changed"] for r in results] == [True, True, True]
    assert results[1]["table"][0]["sum"] == "4300"
    assert all(status(s, d) == "fresh" for d in order)


def test_rerun_restores_hand_edits_and_unchanged_outputs_stay_fresh(s: Session) -> None:
    _, q1, q2 = cleaned(s)
    stats = ok(s, "compute_statistics", dataset_id=q1, column="revenue", output_path="r/s.csv")["dataset_id"]
    original = s.files()["r/s.csv"]
    ok(s, "write_file", path="r/s.csv", content=original.replace("4100", "9999"))
    assert status(s, stats) == "modified"
    restored = ok(s, "rerun_stage", dataset_id=stats)
    assert restored["changed"] is False and s.files()["r/s.csv"] == original and status(s, stats) == "fresh"
    ok(s, "write_file", path="data/q2.csv", content=Q2 + "\n")  # same rows, different bytes
    ok(s, "register_dataset", path="data/q2.csv", schema_name="sales")
    ok(s, "profile_dataset", dataset_id="DS-002")
    assert ok(s, "rerun_stage", dataset_id=q2)["changed"] is False
    err(s, "rerun_stage", "invalid_argument", dataset_id="DS-001")
    err(s, "rerun_stage", "not_found", dataset_id="DS-404")


def test_missing_file_and_cycles(s: Session) -> None:
    rid, q1, _ = cleaned(s)
    again = ok(s, "clean_dataset", dataset_id=q1, recipe_id=rid, output_path="c/q1_twice.csv")["dataset_id"]
    cycle = err(
        s, "clean_dataset", "conflict", dataset_id=again, recipe_id=rid, output_path="data/clean/q1.csv"
    )
    assert cycle["dataset_id"] == q1
    ok(s, "write_file", path="data/clean/q1.csv", content="")
    assert status(s, q1) == "modified"
    s.workspace_root.joinpath("data/clean/q1.csv").unlink()  # type: ignore[union-attr]
    assert status(s, q1) == "missing" and status(s, again) == "stale"
    assert ok(s, "rerun_stage", dataset_id=q1)["changed"] is False and status(s, again) == "fresh"


# -- generated workspaces ------------------------------------------------------------------------
SKILL_RULES = [
    ("trim", "*", ""),
    ("normalize_case", "region", "title"),
    ("map_values", "channel", "web=Online;online=Online;retail=Retail;partner=Partner"),
    ("parse_date", "order_date", ""),
    ("drop_invalid", "order_date", ""),
    ("parse_number", "unit_price", ""),
    ("parse_number", "units", ""),
    ("parse_number", "discount", ""),
    ("fill_missing", "units", "median"),
    ("fill_missing", "rep", "value=Unassigned"),
    ("fill_missing", "discount", "zero"),
    ("dedupe", "order_id", "last"),
    ("derive", "revenue", "units * unit_price * (1 - discount)"),
]


@pytest.mark.parametrize("seed", [0, 7])
def test_generated_workspace_follows_the_skill_to_a_report(seed: int) -> None:
    """The procedure in skills/clean-and-summarize-sales works on generated data end to end."""
    with Session.memory(ENV, seed=seed, size=1) as session:
        files = session.files()
        assert sorted(p for p in files if p.count("/") == 1 and p.startswith("data/")) == [
            "data/README.md",
            "data/products.csv",
            "data/regions.csv",
            "data/sales_2025Q1.csv",
            "data/sales_2025Q2.csv",
            "data/sales_2025Q3.csv",
            "data/sales_2025Q4.csv",
        ]
        check_invariants(session.state(), files)
        rid = recipe(session, SKILL_RULES)
        ok(
            session, "register_dataset", path="data/sales_2025Q2.csv", schema_name="sales"
        )  # the corrected export
        clean_ids = []
        for raw in ("DS-001", "DS-002", "DS-003", "DS-004"):
            assert not ok(session, "profile_dataset", dataset_id=raw)["certified"]
            out = ok(
                session, "clean_dataset", dataset_id=raw, recipe_id=rid, output_path=f"data/clean/{raw}.csv"
            )
            assert out["certified"], out["issues"]
            clean_ids.append(out["dataset_id"])
        merged = ok(session, "merge_datasets", dataset_ids=clean_ids, output_path="data/clean/sales_2025.csv")
        assert [i["problem"] for i in merged["issues"]] in (["duplicate_row"], ["duplicate_key"])
        year = ok(
            session,
            "clean_dataset",
            dataset_id=merged["dataset_id"],
            recipe_id=recipe(session, [("dedupe", "order_id", "")]),
            output_path="data/clean/year.csv",
        )
        products = ok(session, "profile_dataset", dataset_id="DS-005")
        assert [i["problem"] for i in products["issues"]] == ["duplicate_row"]
        lookup = ok(
            session,
            "clean_dataset",
            dataset_id="DS-005",
            recipe_id=recipe(session, [("dedupe", "*", "")]),
            output_path="data/clean/products.csv",
        )
        joined = ok(
            session,
            "join_datasets",
            left_id=year["dataset_id"],
            right_id=lookup["dataset_id"],
            key="product_code",
            output_path="data/clean/joined.csv",
        )
        assert joined["certified"] and joined["summary"]["unmatched"] == 0
        pivot = ok(
            session,
            "build_pivot",
            dataset_id=joined["dataset_id"],
            index="category",
            values="revenue",
            columns="order_date:quarter",
            output_path="reports/category_quarter.csv",
        )
        assert pivot["columns"] == ["category", "2025-Q1", "2025-Q2", "2025-Q3", "2025-Q4", "total"]
        chart = ok(
            session,
            "create_chart_spec",
            dataset_id=pivot["dataset_id"],
            chart_type="bar",
            x="category",
            y="total",
            title="Revenue by category",
            output_path="reports/category.vl.json",
        )
        ok(
            session,
            "write_report",
            title="2025",
            artifact_ids=[pivot["dataset_id"], chart["dataset_id"]],
            output_path="reports/2025.md",
        )


def test_generated_workspace_holds_last_months_analysis_half_stale() -> None:
    """S0 carries a real Q1-Q3 pipeline; the corrected Q2 export made everything below it stale,
    and following skills/refresh-stale-pipeline brings the report up to date."""
    with Session.memory(ENV, seed=1) as session:
        rows = {d["dataset_id"]: d for d in ok(session, "list_datasets")["datasets"]}
        assert rows["DS-002"]["status"] == "modified" and rows["DS-004"]["status"] == "fresh"
        assert rows["DS-007"]["status"] == "fresh" and rows["DS-007"]["certified"]  # clean Q1
        report = next(d for d in rows.values() if d["kind"] == "report")
        assert report["status"] == "stale" and report["path"] == "reports/sales_review_q1_q3.md"
        assert ok(session, "show_recipe", recipe_id="RCP-01")["name"] == "Quarterly sales cleanup"
        state = session.state()
        assert state["datasets"]["DS-007"]["created_at"] < "2026-01-01"  # built last month
        before = session.files()[report["path"]]
        ok(session, "register_dataset", path="data/sales_2025Q2.csv", schema_name="sales")
        ok(session, "profile_dataset", dataset_id="DS-002")
        order = [d["dataset_id"] for d in ok(session, "show_lineage", dataset_id="DS-002")["descendants"]]
        assert order[-1] == report["dataset_id"]
        for dataset_id in order:
            ok(session, "rerun_stage", dataset_id=dataset_id)
        assert all(d["status"] == "fresh" for d in ok(session, "list_datasets")["datasets"])
        assert session.files()[report["path"]] != before


def test_generated_workspaces_are_deterministic_and_scale() -> None:
    hashes = []
    for _ in range(2):
        with Session.memory(ENV, seed=3) as session:
            hashes.append(session.snapshot_hash())
    with Session.memory(ENV, seed=4) as other:
        assert other.snapshot_hash() != hashes[0]
    assert hashes[0] == hashes[1]
    with Session.memory(ENV, seed=3, size=3) as big:
        rows = sum(d["rows"] for d in big.state()["datasets"].values() if d["kind"] == "raw")
        assert rows > 130


def test_replay_gives_the_same_final_snapshot() -> None:
    calls = [
        ("profile_dataset", {"dataset_id": "DS-002"}),
        ("create_recipe", {"name": "r"}),
        ("add_cleaning_rule", {"recipe_id": "RCP-01", "operation": "trim", "column": "*"}),
        ("clean_dataset", {"dataset_id": "DS-002", "recipe_id": "RCP-01", "output_path": "c/q2.csv"}),
        ("list_datasets", {}),
    ]
    outcomes = []
    for _ in range(2):
        with Session.memory(ENV, seed=5) as session:
            results = [session.call(tool, args) for tool, args in calls]
            outcomes.append((session.snapshot_hash(), json.dumps(results, sort_keys=True)))
    assert outcomes[0] == outcomes[1]


# -- random call sequences -----------------------------------------------------------------------
class Chooser:
    """Draws values from hypothesis (property tests) or from a seeded Random (walk statistics)."""

    def __init__(self, data: st.DataObject | None = None, rng: random.Random | None = None) -> None:
        self.data, self.rng = data, rng

    def pick(self, pool: list[Any]) -> Any:
        if self.data is not None:
            return self.data.draw(st.sampled_from(pool))
        assert self.rng is not None
        return self.rng.choice(pool)

    def ids(self, pool: list[str], bogus: str) -> str:
        if not pool or self.pick(range(10)) == 0:
            return bogus
        return str(self.pick(pool))


COLUMNS = ["order_id", "order_date", "region", "units", "unit_price", "discount", "revenue", "product_code"]


def random_args(c: Chooser, tool: str, state: dict[str, Any], files: dict[str, str]) -> dict[str, Any]:
    """Arguments drawn mostly from live ids of the kind a stage needs, so that walks go deep."""
    recipes = sorted(state["recipes"])
    paths = sorted(p for p in files if p.endswith(".csv"))
    out = c.pick(["out/a.csv", "out/b.csv", "reports/c.csv", "data/q1.csv"])

    def ds(*kinds: str) -> str:
        pool = sorted(k for k, v in state["datasets"].items() if not kinds or v["kind"] in kinds)
        return c.ids(pool or sorted(state["datasets"]), "DS-999")

    def rule() -> dict[str, Any]:
        operation, column, option = c.pick(
            [*RULES, ("dedupe", "order_id", "last"), ("fill_missing", "units", "mean")]
        )
        return {
            "recipe_id": c.ids(recipes, "RCP-99"),
            "operation": operation,
            "column": column,
            "option": option,
        }

    tabular = ("clean", "merged", "joined")
    table: dict[str, Any] = {
        "list_datasets": lambda: {},
        "show_lineage": lambda: {"dataset_id": ds()},
        "show_recipe": lambda: {"recipe_id": c.ids(recipes, "RCP-99")},
        "register_dataset": lambda: {
            "path": c.ids(paths, "data/nope.csv"),
            "schema_name": c.pick(["sales", "products"]),
        },
        "profile_dataset": lambda: {"dataset_id": ds("raw", *tabular)},
        "create_recipe": lambda: {"name": c.pick(["r", "r", ""])},
        "add_cleaning_rule": rule,
        "remove_cleaning_rule": lambda: {"recipe_id": c.ids(recipes, "RCP-99"), "rule_no": c.pick([1, 2, 5])},
        "clean_dataset": lambda: {
            "dataset_id": ds("raw", *tabular),
            "recipe_id": c.ids(recipes, "RCP-99"),
            "output_path": out,
        },
        "merge_datasets": lambda: {"dataset_ids": [ds(*tabular), ds(*tabular)], "output_path": out},
        "join_datasets": lambda: {
            "left_id": ds(*tabular),
            "right_id": ds(*tabular),
            "key": "product_code",
            "output_path": out,
        },
        "compute_statistics": lambda: {
            "dataset_id": ds(*tabular),
            "column": c.pick(COLUMNS),
            "output_path": out,
            "group_by": c.pick(["", "region", "order_date:quarter"]),
        },
        "build_pivot": lambda: {
            "dataset_id": ds(*tabular),
            "index": c.pick(["region", "channel"]),
            "values": c.pick(COLUMNS),
            "output_path": out,
        },
        "create_chart_spec": lambda: {
            "dataset_id": ds("stats", "pivot"),
            "chart_type": "bar",
            "x": c.pick(["region", "group"]),
            "y": c.pick(["sum", "total", "units"]),
            "title": "t",
            "output_path": c.pick(["out/c.json", "out/a.csv"]),
        },
        "write_report": lambda: {
            "title": "t",
            "artifact_ids": [ds("stats", "pivot", "chart")],
            "output_path": c.pick(["out/r.md", "x.csv"]),
        },
        "rerun_stage": lambda: {"dataset_id": ds(*tabular, "stats", "pivot", "chart", "report")},
        "write_file": lambda: {
            "path": c.ids(paths, "data/new.csv"),
            "content": c.pick([Q1, Q2, HEADER, "order_id\n1\n"]),
        },
        "edit_file": lambda: {
            "path": c.ids(paths, "x.csv"),
            "old": "North",
            "new": "north",
            "replace_all": True,
        },
        "read_file": lambda: {"path": c.ids(paths, "x.csv")},
        "list_files": lambda: {},
    }
    args: dict[str, Any] = table[tool]()
    return args


with Session.memory(ENV, state={}, files=dict(FILES)) as _probe:
    TOOLS = sorted(t for t in _probe.package.env_class.tools if t != "shell")
# Stage work is weighted up so that walks often build on earlier artifacts.
WALK_TOOLS = [
    *TOOLS,
    *["clean_dataset", "compute_statistics", "build_pivot", "create_chart_spec", "rerun_stage"] * 2,
]


def run_step(session: Session, c: Chooser, tools: list[str] = WALK_TOOLS) -> bool:
    tool = c.pick(tools)
    args = random_args(c, tool, session.state(), session.files())
    before = (session.state_hash(), session.files())
    result = session.call(tool, args)
    assert isinstance(result, dict)
    if is_error(result):
        assert result["error"]["category"] != "internal_error", (tool, args, result)
        assert (session.state_hash(), session.files()) == before
        return False
    check_invariants(session.state(), session.files())
    return True


def test_random_args_cover_every_tool() -> None:
    c = Chooser(rng=random.Random(0))
    with Session.memory(ENV, seed=0) as session:
        for tool in TOOLS:  # a tool missing from the table raises KeyError here
            assert isinstance(random_args(c, tool, session.state(), session.files()), dict)


def primed(session: Session) -> Session:
    """A recipe that certifies the sales sheets and profiled raw sheets: walks can go deep from here."""
    recipe(session, SKILL_RULES)
    changed = []
    for row in ok(session, "list_datasets", kind="raw")["datasets"]:
        if row["status"] == "modified":
            ok(session, "register_dataset", path=row["path"], schema_name=row["schema"])
            changed.append(row["dataset_id"])
        ok(session, "profile_dataset", dataset_id=row["dataset_id"])
    for dataset_id in changed:
        for below in ok(session, "show_lineage", dataset_id=dataset_id)["descendants"]:
            ok(session, "rerun_stage", dataset_id=below["dataset_id"])
    return session


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_sequences_keep_invariants(data: st.DataObject) -> None:
    with Session.memory(ENV, state={}, files=dict(FILES)) as session:
        ok(session, "register_dataset", path="data/q1.csv", schema_name="sales")
        ok(session, "register_dataset", path="data/q2.csv", schema_name="sales")
        ok(session, "register_dataset", path="data/products.csv", schema_name="products")
        primed(session)
        for _ in range(20):
            run_step(session, Chooser(data=data))


def test_random_walks_succeed_often_and_go_deep() -> None:
    """Walks through the pipeline tools alone (no edits behind its back) reach analysis stages."""
    disruptive = {"write_file", "edit_file", "add_cleaning_rule", "remove_cleaning_rule"}
    tools = [t for t in WALK_TOOLS if t not in disruptive]
    succeeded = total = 0
    kinds: set[str] = set()
    for seed in range(3):
        c = Chooser(rng=random.Random(seed))
        with Session.memory(ENV, seed=seed) as session:
            primed(session)
            for _ in range(40):
                succeeded += run_step(session, c, tools)
                total += 1
            kinds |= {d["kind"] for d in session.state()["datasets"].values()}
    assert succeeded / total > 0.35, (succeeded, total)
    assert {"clean", "stats"} <= kinds, kinds


# -- state invariants -----------------------------------------------------------------------------
def _unknown_stage(state: dict[str, Any]) -> None:
    next(iter(state["datasets"].values()))["stage"] = "bogus"


def _stage_without_its_parameters(state: dict[str, Any]) -> None:
    cleaned = next(d for d in state["datasets"].values() if d["stage"] == "clean")
    cleaned["params"] = {}


def _misfiled_recipe(state: dict[str, Any]) -> None:
    recipe_id, recipe = next(iter(state["recipes"].items()))
    state["recipes"]["RCP-99"] = recipe
    del state["recipes"][recipe_id]


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (_unknown_stage, "has unknown stage 'bogus'"),
        (_stage_without_its_parameters, "stage clean makes a clean artifact with parameters ['recipe_id']"),
        (_misfiled_recipe, "RCP-99 holds 'RCP-"),
    ],
)
def test_a_state_rerun_stage_could_not_replay_is_refused_when_it_loads(breakage: Any, message: str) -> None:
    """The per-record @invariant checks of SheetState refuse a hand-made S0 with an artifact whose
    recorded stage rerun_stage could not replay, or a record filed under another id."""
    with Session.memory(ENV, seed=0) as session:
        state = session.state()
    breakage(state)
    with pytest.raises(ValidationError, match=re.escape(message)):
        load_package(ENV).env_class.State.model_validate(state)

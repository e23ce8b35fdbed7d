"""Sheet analytics: a spreadsheet cleaning and statistics pipeline over real workspace CSV files.

The reference environment of the *cross-tool pipeline* archetype: each stage reads artifacts
and writes a new one (profile -> clean -> merge/join -> statistics/pivot -> chart -> report),
and the state records the lineage: which artifact derives from which input version, under
which recipe. Files are content-addressed, so an input changed from the shell makes every
downstream artifact stale, and stages refuse stale, modified, missing or uncertified inputs.
"""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from envcraft import ClawEnvironment, Entity, Initial, Job, Repository, iso, load_package, tool

from .generate import PRIOR_ANALYSIS_DAYS, generate_sheets, prior_analysis
from .rules import (
    DATE_PARTS,
    FIXES,
    MANIFEST,
    REPORT_ROWS,
    REPORTABLE,
    TABULAR,
    Status,
    Table,
    ancestors_of,
    apply_rule,
    certified,
    chart_spec,
    check_rule,
    column_profile,
    column_spec,
    dataset_at,
    descendants_of,
    expression_names,
    join_tables,
    key_columns,
    next_dataset_id,
    parse_csv,
    pivot_table,
    render_manifest,
    render_report,
    schema_of,
    sha256_of,
    statistics_table,
    to_float,
    validate_rows,
    write_csv,
)
from .state import (
    Aggregation,
    ChartType,
    CleanOp,
    Dataset,
    DatasetKind,
    ExtraColumn,
    Recipe,
    Rule,
    Run,
    SchemaName,
    SheetState,
)


class SheetAnalytics(ClawEnvironment):
    """Spreadsheet analytics workspace: CSV sheets under data/, outputs under reports/.

    Register and profile sheets, clean them with recorded recipes (ordered rules), merge
    quarters, join reference sheets, compute statistics and pivot tables, write Vega-Lite
    chart specs and a Markdown report. Every artifact records the exact input versions it
    came from: edit an input with the shell and everything downstream turns stale until you
    re-register the input and re-run the stages (rerun_stage). Stages refuse stale, modified
    or uncertified inputs; pipeline/lineage.json mirrors the lineage for inspection.
    """

    State = SheetState
    state: SheetState
    entities = (
        Entity("datasets", "dataset", ("the {kind} dataset {path}",), id_known=True),
        Entity(
            "recipes", "cleaning recipe", ("the cleaning recipe “{name}”",), id_known=True, vary=("name",)
        ),
        Entity("runs", "pipeline run", (), log=True),
    )

    jobs = (
        Job(
            "clean a raw sheet with a new recipe",
            ("profile_dataset", "create_recipe", "add_cleaning_rule", "clean_dataset"),
            "clean {dataset_id} into {output_path} with a new recipe called {name} that has a {operation} "
            "rule for the {column} column[ with the option {option}]",
        ),
    )

    # -- reads ---------------------------------------------------------------------------------
    @tool(read_only=True, produces=["dataset_id", "recipe_id"])
    def list_datasets(self, kind: DatasetKind | None = None) -> dict[str, Any]:
        """List registered datasets and artifacts with their freshness, plus the cleaning recipes.

        Args:
            kind: Only datasets of this kind; all when omitted.

        Returns:
            Datasets (id, path, kind, rows, version, status fresh/stale/modified/missing,
            certified, number of issues, inputs, columns) and recipes (id, name, version, rule count).
        """
        rows = []
        for ds in sorted(self.state.datasets.values(), key=lambda d: d.dataset_id):
            if kind is not None and ds.kind != kind:
                continue
            rows.append(
                {
                    "dataset_id": ds.dataset_id,
                    "path": ds.path,
                    "kind": ds.kind,
                    "schema": ds.schema_name,
                    "rows": ds.rows,
                    "version": ds.version,
                    "status": self._status(ds),
                    "certified": certified(ds),
                    "issues": len(ds.issues) if ds.validated else None,
                    "inputs": sorted(ds.inputs),
                    "columns": ds.columns,
                }
            )
        recipes = [
            {"recipe_id": r.recipe_id, "name": r.name, "version": r.version, "rules": len(r.rules)}
            for r in sorted(self.state.recipes.values(), key=lambda r: r.recipe_id)
        ]
        return {"datasets": rows, "recipes": recipes}

    @tool(read_only=True, consumes=["dataset_id"], produces=["dataset_id", "recipe_id", "run_id"])
    def show_lineage(self, dataset_id: str) -> dict[str, Any]:
        """Show where a dataset comes from and what depends on it, with each node's freshness.

        Args:
            dataset_id: The dataset id, e.g. DS-005.

        Returns:
            The dataset, its ancestors (each with stage, status and the input version it used),
            its descendants in the order they can be re-run, its recipe rules (clean stage) and
            the runs that produced it.
        """
        ds = self._dataset(dataset_id)
        ancestors = []
        for ancestor_id in ancestors_of(self.state, dataset_id):
            node = self.state.datasets[ancestor_id]
            ancestors.append(
                {
                    "dataset_id": ancestor_id,
                    "path": node.path,
                    "stage": node.stage,
                    "status": self._status(node),
                }
            )
        descendants = [
            {
                "dataset_id": d,
                "path": self.state.datasets[d].path,
                "status": self._status(self.state.datasets[d]),
            }
            for d in descendants_of(self.state, dataset_id)
        ]
        recipe = self.state.recipes.get(ds.params.get("recipe_id", ""))
        runs = [r.model_dump() for r in self.state.runs.values() if r.output == dataset_id]
        return {
            "dataset": {**ds.model_dump(exclude={"issues"}), "status": self._status(ds)},
            "ancestors": ancestors,
            "descendants": descendants,
            "recipe": recipe.model_dump() if recipe else None,
            "runs": runs,
        }

    @tool(read_only=True, consumes=["recipe_id"])
    def show_recipe(self, recipe_id: str) -> dict[str, Any]:
        """Show a cleaning recipe's ordered rules and which datasets were cleaned with it.

        Args:
            recipe_id: The recipe id, e.g. RCP-01.

        Returns:
            The recipe (name, version, rules) and the clean datasets made with it, each with the
            recipe version it used.
        """
        recipe = self.lookup(self.state.recipes, recipe_id, "recipe", recipe_id=recipe_id)
        used = [
            {"dataset_id": d.dataset_id, "recipe_version": d.recipe_version, "status": self._status(d)}
            for d in sorted(self.state.datasets.values(), key=lambda d: d.dataset_id)
            if d.params.get("recipe_id") == recipe_id
        ]
        return {**recipe.model_dump(), "used_by": used}

    # -- sources -------------------------------------------------------------------------------
    @tool(goal="register {path} as a {schema_name} dataset", produces=["dataset_id"])
    def register_dataset(self, path: str, schema_name: SchemaName) -> dict[str, Any]:
        """Register a CSV sheet from the workspace as a raw dataset, or accept a new version of one.

        Re-registering a raw dataset's path records its current content as a new version;
        artifacts made from the old version become stale.

        Args:
            path: Workspace path of the CSV file, e.g. data/sales_2025Q1.csv.
            schema_name: The schema its columns must follow: sales, products or regions.

        Returns:
            The dataset id, version, columns, row count and whether the content changed.
        """
        path = self.workspace.normalize(path)  # one dataset per file, however the path is written
        if not path.endswith(".csv"):
            self.fail("invalid_argument", f"'{path}' is not a .csv file", field="path")
        text = self.workspace.read_text(path)
        columns, rows = parse_csv(text)
        expected = list(schema_of(self.data, schema_name)["columns"])
        missing = [c for c in expected if c not in columns]
        if missing:
            self.fail(
                "invalid_argument",
                f"'{path}' lacks columns {missing} of schema {schema_name}",
                field="schema_name",
                columns=columns,
                missing=missing,
            )
        existing = dataset_at(self.state, path)
        sha = sha256_of(text)
        now = iso(self.now())
        if existing is not None and existing.kind != "raw":
            self.fail(
                "conflict",
                f"'{path}' is the output of {existing.dataset_id} ({existing.stage}); "
                f"use rerun_stage({existing.dataset_id}) to rebuild it",
                dataset_id=existing.dataset_id,
            )
        if existing is not None:
            changed = existing.sha256 != sha
            if changed or existing.schema_name != schema_name:
                existing.version += 1
                existing.sha256 = sha
                existing.schema_name = schema_name
                existing.columns, existing.rows = columns, len(rows)
                existing.issues, existing.validated, existing.profiled_sha = [], False, ""
                existing.updated_at = now
            self._sync_manifest()
            return {
                "dataset_id": existing.dataset_id,
                "version": existing.version,
                "changed": changed,
                "columns": columns,
                "rows": len(rows),
            }
        ds = Dataset(
            dataset_id=next_dataset_id(self.state),
            path=path,
            kind="raw",
            schema_name=schema_name,
            columns=columns,
            rows=len(rows),
            sha256=sha,
            created_at=now,
            updated_at=now,
        )
        self.state.datasets[ds.dataset_id] = ds
        self._sync_manifest()
        return {
            "dataset_id": ds.dataset_id,
            "version": 1,
            "changed": True,
            "columns": columns,
            "rows": len(rows),
        }

    @tool(goal="profile {dataset_id}", consumes=["dataset_id"], inspects=True)
    def profile_dataset(self, dataset_id: str) -> dict[str, Any]:
        """Profile a dataset against its schema: blanks, invalid values, case variants and duplicates.

        A dataset must be profiled (at its current version) before it is cleaned.

        Args:
            dataset_id: A dataset with a schema (raw, clean, merged or joined).

        Returns:
            Per-column profile (type, blanks, distinct values, invalid count, examples and
            variant counts) and the list of issues with the cleaning operation that usually fixes each.
        """
        ds = self._dataset(dataset_id)
        if not ds.schema_name:
            self.fail(
                "invalid_argument",
                f"{dataset_id} is a {ds.kind} artifact without a schema; only sheets are profiled",
                field="dataset_id",
            )
        self._require_current(ds)
        columns, rows = self._load(ds)
        spec = column_spec(self.data, ds)
        issues = validate_rows(columns, rows, spec, key_columns(self.data, ds))
        ds.issues, ds.validated, ds.profiled_sha = issues, True, ds.sha256
        ds.updated_at = iso(self.now())
        self._sync_manifest()
        return {
            "dataset_id": dataset_id,
            "rows": len(rows),
            "columns": {c: column_profile(c, rows, spec[c]) for c in columns},
            "issues": [{**i.model_dump(), "fix": FIXES.get(i.problem.split("_")[0], "")} for i in issues],
            "certified": not issues,
        }

    # -- recipes -------------------------------------------------------------------------------
    @tool(goal="create a cleaning recipe called {name}", produces=["recipe_id"])
    def create_recipe(self, name: str) -> dict[str, Any]:
        """Create an empty cleaning recipe: an ordered, recorded list of cleaning rules.

        Args:
            name: A short name, e.g. "Quarterly sales cleanup".

        Returns:
            The recipe id and version 0.
        """
        if not name.strip():
            self.fail("invalid_argument", "name must not be empty", field="name")
        recipe_id = f"RCP-{self.state.next_recipe:02d}"
        self.state.next_recipe += 1
        self.state.recipes[recipe_id] = Recipe(
            recipe_id=recipe_id, name=name.strip(), created_at=iso(self.now())
        )
        self._sync_manifest()
        return {"recipe_id": recipe_id, "name": name.strip(), "version": 0}

    @tool(
        goal="add a {operation} rule for the {column} column[ with the option {option}] to {recipe_id}",
        consumes=["recipe_id"],
    )
    def add_cleaning_rule(
        self, recipe_id: str, operation: CleanOp, column: str, option: str = ""
    ) -> dict[str, Any]:
        """Append a rule to a recipe; rules run in order. Each change bumps the recipe version.

        Operations and options: trim (column or *); normalize_case (title, upper, lower);
        map_values ("from=to;from=to"); parse_date; parse_number; fill_missing (zero, mean,
        median, mode, drop_row or value=<literal>); drop_invalid; dedupe (column * or key
        columns "a,b"; option first or last); derive (column = new column name, option = an
        arithmetic expression such as "units * unit_price * (1 - discount)" over columns some
        dataset has or an earlier rule derives).

        Args:
            recipe_id: The recipe to extend.
            operation: The cleaning operation.
            column: The column it applies to (see the operation for * and key lists).
            option: The operation's option; empty when it takes none.

        Returns:
            The recipe id, the new rule with its number, and the recipe's new version.
        """
        recipe = self.lookup(self.state.recipes, recipe_id, "recipe", recipe_id=recipe_id)
        column = column.strip()
        if not column:
            self.fail("invalid_argument", "column must not be empty", field="column")
        problem = check_rule(operation, column, option.strip())
        if problem:
            self.fail("invalid_argument", problem, field="option", operation=operation)
        if operation == "derive":  # a name no sheet has is a typo, not a column ("option zero")
            unknown = sorted(expression_names(option) - self._known_columns(recipe))
            if unknown:
                self.fail(
                    "invalid_argument",
                    f"derive expression uses {unknown}, which no dataset has and no earlier rule derives",
                    field="option",
                    operation=operation,
                )
        rule = Rule(rule_no=len(recipe.rules) + 1, operation=operation, column=column, option=option.strip())
        recipe.rules.append(rule)
        recipe.version += 1
        self._sync_manifest()
        return {"recipe_id": recipe_id, "rule": rule.model_dump(), "version": recipe.version}

    def _known_columns(self, recipe: Recipe) -> set[str]:
        """The columns a derive rule of ``recipe`` may read: any schema's or dataset's, and those
        its earlier rules derive."""
        known = {c for schema in self.data.json("schemas.json").values() for c in schema["columns"]}
        known |= {c for ds in self.state.datasets.values() for c in [*ds.columns, *ds.extra_columns]}
        return known | {r.column for r in recipe.rules if r.operation == "derive"}

    @tool(goal="remove rule {rule_no} from {recipe_id}", undoes=["add_cleaning_rule"], consumes=["recipe_id"])
    def remove_cleaning_rule(self, recipe_id: str, rule_no: int) -> dict[str, Any]:
        """Remove a rule from a recipe (later rules are renumbered); bumps the recipe version.

        Args:
            recipe_id: The recipe.
            rule_no: The rule number shown by show_recipe.

        Returns:
            The recipe id, the removed rule and the recipe's new version.
        """
        recipe = self.lookup(self.state.recipes, recipe_id, "recipe", recipe_id=recipe_id)
        if not 1 <= rule_no <= len(recipe.rules):
            self.fail(
                "not_found",
                f"recipe {recipe_id} has no rule {rule_no}",
                recipe_id=recipe_id,
                rule_count=len(recipe.rules),
            )
        removed = recipe.rules.pop(rule_no - 1)
        for number, rule in enumerate(recipe.rules, start=1):
            rule.rule_no = number
        recipe.version += 1
        self._sync_manifest()
        return {"recipe_id": recipe_id, "removed": removed.model_dump(), "version": recipe.version}

    # -- stages --------------------------------------------------------------------------------
    @tool(
        goal="clean {dataset_id} with {recipe_id} into {output_path}",
        consumes=["dataset_id", "recipe_id"],
        produces=["dataset_id", "run_id"],
    )
    def clean_dataset(self, dataset_id: str, recipe_id: str, output_path: str) -> dict[str, Any]:
        """Apply a recipe to a profiled dataset and write the cleaned CSV, validated against the schema.

        Args:
            dataset_id: The dataset to clean; a raw sheet must be profiled at its current version.
            recipe_id: The recipe to apply (its current version).
            output_path: Where to write the cleaned CSV, e.g. data/clean/sales_2025Q1.csv.

        Returns:
            The output dataset id, rows in and out, what each rule changed, and the issues that
            remain (an empty list means the output is certified for analysis).
        """
        ds = self._dataset(dataset_id)
        self.lookup(self.state.recipes, recipe_id, "recipe", recipe_id=recipe_id)
        if not ds.schema_name:
            self.fail(
                "invalid_argument", f"{dataset_id} has no schema and cannot be cleaned", field="dataset_id"
            )
        self._require_current(ds)
        if ds.kind == "raw" and ds.profiled_sha != ds.sha256:
            self.fail(
                "invalid_transition",
                f"raw sheet {dataset_id} (version {ds.version}) is not profiled; run profile_dataset first",
                dataset_id=dataset_id,
                status="unprofiled",
            )
        return self._run_stage("clean", "clean", [dataset_id], {"recipe_id": recipe_id}, output_path)

    @tool(
        goal="merge {dataset_ids} into {output_path}",
        consumes=["dataset_id"],
        produces=["dataset_id", "run_id"],
    )
    def merge_datasets(self, dataset_ids: list[str], output_path: str) -> dict[str, Any]:
        """Append certified datasets of the same schema and columns into one sheet (rows in input order).

        Args:
            dataset_ids: Two or more certified datasets, e.g. the four cleaned quarters.
            output_path: Where to write the merged CSV.

        Returns:
            The output dataset id, row count and the issues of the merged sheet (duplicates across
            inputs show up here).
        """
        if len(dataset_ids) < 2 or len(set(dataset_ids)) != len(dataset_ids):
            self.fail(
                "invalid_argument", "dataset_ids must list two or more distinct datasets", field="dataset_ids"
            )
        inputs = [self._certified_input(d) for d in dataset_ids]
        first = inputs[0]
        for other in inputs[1:]:
            if other.schema_name != first.schema_name or other.columns != first.columns:
                self.fail(
                    "conflict",
                    f"{other.dataset_id} does not have the schema and columns of {first.dataset_id}",
                    dataset_id=other.dataset_id,
                    expected_columns=first.columns,
                    columns=other.columns,
                )
        return self._run_stage("merge", "merged", dataset_ids, {}, output_path)

    @tool(
        goal="join {right_id} onto {left_id} by {key} into {output_path}[ as {how|left=a left "
        "join|inner=an inner join}]",
        consumes=["dataset_id"],
        produces=["dataset_id", "run_id"],
    )
    def join_datasets(
        self, left_id: str, right_id: str, key: str, output_path: str, how: Literal["left", "inner"] = "left"
    ) -> dict[str, Any]:
        """Join a reference sheet's columns onto a dataset by a key column.

        Args:
            left_id: The certified dataset whose rows are kept (e.g. merged sales).
            right_id: The certified lookup dataset (e.g. products); its key values must be unique.
            key: The column both datasets share, e.g. product_code.
            output_path: Where to write the joined CSV.
            how: left keeps unmatched left rows with blank lookup columns; inner drops them.

        Returns:
            The output dataset id, row count, columns added and how many left rows found no match.
        """
        left = self._certified_input(left_id)
        right = self._certified_input(right_id)
        if left_id == right_id:
            self.fail("invalid_argument", "left_id and right_id must differ", field="right_id")
        for ds in (left, right):
            if key not in ds.columns:
                self.fail(
                    "invalid_argument",
                    f"key '{key}' is not a column of {ds.dataset_id}",
                    field="key",
                    columns=ds.columns,
                )
        _, right_rows = self._load(right)
        counts: dict[str, int] = {}
        for row in right_rows:
            counts[row[key]] = counts.get(row[key], 0) + 1
        dupes = sorted(value for value, n in counts.items() if n > 1)
        if dupes:
            self.fail(
                "conflict",
                f"key '{key}' is not unique in {right_id}: {dupes[:5]}; dedupe the lookup sheet first",
                dataset_id=right_id,
                duplicate_keys=dupes[:10],
            )
        return self._run_stage("join", "joined", [left_id, right_id], {"key": key, "how": how}, output_path)

    @tool(
        goal="compute statistics of the {column} column of {dataset_id}[ per {group_by}] into {output_path}",
        consumes=["dataset_id"],
        produces=["dataset_id", "run_id"],
    )
    def compute_statistics(
        self, dataset_id: str, column: str, output_path: str, group_by: str = ""
    ) -> dict[str, Any]:
        """Summary statistics of a numeric column, overall or per group, written as a CSV.

        Args:
            dataset_id: A certified dataset (clean, merged or joined).
            column: A numeric column (number, integer, percent or derived).
            output_path: Where to write the statistics CSV, e.g. reports/revenue_by_region.csv.
            group_by: A column to group by; a date column may take :month, :quarter or :year
                (e.g. order_date:quarter). Empty for one overall row.

        Returns:
            The output dataset id and the statistics rows (count, sum, mean, median, min, max, stdev).
        """
        ds = self._certified_input(dataset_id, tabular=True)
        self._require_numeric(ds, column, "column")
        if group_by:
            self._require_grouping(ds, group_by, "group_by")
        params = {"column": column, "group_by": group_by}
        return self._run_stage("stats", "stats", [dataset_id], params, output_path)

    @tool(
        goal="pivot {dataset_id} with one row per {index} and the {values} values[ by {columns}][ using "
        "{aggregation}] into {output_path}",
        consumes=["dataset_id"],
        produces=["dataset_id", "run_id"],
    )
    def build_pivot(
        self,
        dataset_id: str,
        index: str,
        values: str,
        output_path: str,
        columns: str = "",
        aggregation: Aggregation = "sum",
    ) -> dict[str, Any]:
        """Pivot a certified dataset: one row per index value, one column per columns value.

        Args:
            dataset_id: A certified dataset (clean, merged or joined).
            index: Row grouping column (a date column may take :month, :quarter or :year).
            values: The numeric column to aggregate (ignored values for count still must exist).
            output_path: Where to write the pivot CSV, e.g. reports/revenue_region_quarter.csv.
            columns: Column grouping (same suffixes allowed); empty for a single value column.
            aggregation: How values are combined.

        Returns:
            The output dataset id, its header and its rows (a total column is added for sum and count).
        """
        ds = self._certified_input(dataset_id, tabular=True)
        self._require_grouping(ds, index, "index")
        if columns:
            self._require_grouping(ds, columns, "columns")
            if columns == index:
                self.fail("invalid_argument", "columns must differ from index", field="columns")
        self._require_numeric(ds, values, "values")
        params = {"index": index, "columns": columns, "values": values, "aggregation": aggregation}
        return self._run_stage("pivot", "pivot", [dataset_id], params, output_path)

    @tool(
        goal="chart {dataset_id} as a {chart_type} chart of {y} by {x} titled {title} into "
        "{output_path}[, colored by {color}]",
        consumes=["dataset_id"],
        produces=["dataset_id", "run_id"],
    )
    def create_chart_spec(
        self,
        dataset_id: str,
        chart_type: ChartType,
        x: str,
        y: str,
        title: str,
        output_path: str,
        color: str = "",
    ) -> dict[str, Any]:
        """Write a Vega-Lite chart spec (JSON, data inlined) from a statistics or pivot artifact.

        Args:
            dataset_id: A fresh stats or pivot dataset.
            chart_type: bar, line, point, or arc (pie).
            x: Category or time column for the x axis (for arc: the slice labels).
            y: Numeric column for the y axis (for arc: the slice sizes).
            title: The chart title.
            output_path: Where to write the spec, ending in .json, e.g. reports/revenue.vl.json.
            color: Optional column for colour grouping.

        Returns:
            The output dataset id, the number of data points and the encoding used.
        """
        ds = self._dataset(dataset_id)
        if ds.kind not in ("stats", "pivot"):
            self.fail(
                "invalid_argument",
                f"{dataset_id} is a {ds.kind} dataset; charts are made from stats or pivot artifacts",
                field="dataset_id",
            )
        self._require_current(ds)
        if not title.strip():
            self.fail("invalid_argument", "title must not be empty", field="title")
        for name, column in (("x", x), ("y", y), ("color", color)):
            if column and column not in ds.columns:
                self.fail(
                    "invalid_argument",
                    f"{name} column '{column}' is not in {dataset_id}",
                    field=name,
                    columns=ds.columns,
                )
        _, rows = self._load(ds)
        if any(r[y] and to_float(r[y]) is None for r in rows):
            self.fail("invalid_argument", f"y column '{y}' is not numeric", field="y")
        params = {"chart_type": chart_type, "x": x, "y": y, "title": title.strip(), "color": color}
        return self._run_stage("chart", "chart", [dataset_id], params, output_path)

    @tool(
        goal="write a report titled {title} on {artifact_ids} to {output_path}[ with the summary {summary}]",
        consumes=["dataset_id"],
        produces=["dataset_id", "run_id"],
    )
    def write_report(
        self, title: str, artifact_ids: list[str], output_path: str, summary: str = ""
    ) -> dict[str, Any]:
        """Write a Markdown report embedding statistics and pivot tables, chart references and lineage.

        Args:
            title: The report title.
            artifact_ids: Fresh stats, pivot or chart datasets, in the order they should appear.
            output_path: Where to write the report, ending in .md, e.g. reports/q_sales_review.md.
            summary: An optional paragraph of findings placed under the title.

        Returns:
            The output dataset id, the sections written and the ancestors cited in the lineage.
        """
        if not title.strip():
            self.fail("invalid_argument", "title must not be empty", field="title")
        if not artifact_ids or len(set(artifact_ids)) != len(artifact_ids):
            self.fail("invalid_argument", "artifact_ids must list distinct artifacts", field="artifact_ids")
        for artifact_id in artifact_ids:
            ds = self._dataset(artifact_id)
            if ds.kind not in REPORTABLE:
                self.fail(
                    "invalid_argument",
                    f"{artifact_id} is a {ds.kind} dataset; reports embed stats, pivot and chart artifacts",
                    field="artifact_ids",
                )
            self._require_current(ds)
        params = {"title": title.strip(), "summary": summary.strip()}
        return self._run_stage("report", "report", artifact_ids, params, output_path)

    @tool(goal="re-run the stage that produced {dataset_id}", consumes=["dataset_id"], produces=["run_id"])
    def rerun_stage(self, dataset_id: str) -> dict[str, Any]:
        """Re-run the stage that produced an artifact, with its recorded parameters and current inputs.

        Use it after re-registering a changed input, after changing a recipe, or to restore an
        artifact edited by hand. Inputs must be fresh: re-run upstream stages first.

        Args:
            dataset_id: A produced (not raw) dataset.

        Returns:
            The stage result and whether the artifact's content changed.
        """
        ds = self._dataset(dataset_id)
        if ds.kind == "raw":
            self.fail(
                "invalid_argument",
                f"{dataset_id} is a raw sheet; use register_dataset to accept a new version",
                field="dataset_id",
            )
        for input_id in ds.inputs:
            self._require_current(self._dataset(input_id), for_dataset=dataset_id)
        before = ds.sha256
        result = self._rerun(ds)
        return {**result, "changed": result["sha256"] != before}

    def _rerun(self, ds: Dataset) -> dict[str, Any]:
        """Call the stage tool again with the recorded parameters, so every precondition holds again."""
        p: dict[str, Any] = dict(ds.params)
        inputs, path = list(ds.inputs), ds.path
        if ds.stage == "clean":
            return self.clean_dataset(inputs[0], p["recipe_id"], path)
        if ds.stage == "merge":
            return self.merge_datasets(inputs, path)
        if ds.stage == "join":
            return self.join_datasets(inputs[0], inputs[1], p["key"], path, p["how"])
        if ds.stage == "stats":
            return self.compute_statistics(inputs[0], p["column"], path, p["group_by"])
        if ds.stage == "pivot":
            return self.build_pivot(inputs[0], p["index"], p["values"], path, p["columns"], p["aggregation"])
        if ds.stage == "chart":
            return self.create_chart_spec(
                inputs[0], p["chart_type"], p["x"], p["y"], p["title"], path, p["color"]
            )
        return self.write_report(p["title"], inputs, path, p["summary"])

    # -- stage execution -----------------------------------------------------------------------
    def _run_stage(
        self,
        stage: str,
        kind: DatasetKind,
        input_ids: list[str],
        params: dict[str, str],
        output_path: str,
    ) -> dict[str, Any]:
        """Compute a stage from its inputs, write its file and record the artifact and the run.

        An output path that already holds an artifact of the same kind is rebuilt in place
        (same id, next version), from inputs of its schema; any other existing artifact there is
        a conflict.
        """
        output_path = self.workspace.normalize(output_path)  # "./out/x.csv" is the artifact at out/x.csv
        suffix = {"chart": ".json", "report": ".md"}.get(kind, ".csv")
        if not output_path.endswith(suffix):
            self.fail("invalid_argument", f"the {stage} output must be a {suffix} file", field="output_path")
        if output_path.startswith("pipeline/"):
            self.fail(
                "invalid_argument", "pipeline/ is reserved for the lineage manifest", field="output_path"
            )
        target = dataset_at(self.state, output_path)
        if target is not None and target.kind != kind:
            self.fail(
                "conflict",
                f"'{output_path}' already holds {target.dataset_id} ({target.kind}); choose another path",
                dataset_id=target.dataset_id,
                kind=target.kind,
            )
        schema = self.state.datasets[input_ids[0]].schema_name if kind in TABULAR else ""
        if target is not None and target.schema_name and schema and target.schema_name != schema:
            # a clean sales artifact rebuilt from a products sheet is no sales data any more
            self.fail(
                "conflict",
                f"'{output_path}' holds {target.dataset_id}, a {target.schema_name} dataset; a {schema} "
                "dataset cannot replace it: choose another output_path",
                dataset_id=target.dataset_id,
                schema=target.schema_name,
            )
        upstream = {a for i in input_ids for a in (i, *ancestors_of(self.state, i))}
        if target is not None and target.dataset_id in upstream:
            self.fail(
                "conflict",
                f"'{output_path}' holds {target.dataset_id}, which this stage reads (directly or upstream); "
                "choose another output_path",
                dataset_id=target.dataset_id,
            )
        inputs = [self.state.datasets[i] for i in input_ids]
        text, meta = self._compute(stage, inputs, params)
        summary = meta.pop("summary", {})
        self.workspace.write_text(output_path, text)
        now = iso(self.now())
        ds = target or Dataset(
            dataset_id=next_dataset_id(self.state),
            path=output_path,
            kind=kind,
            sha256="",
            created_at=now,
            updated_at=now,
        )
        recipe = self.state.recipes.get(params.get("recipe_id", ""))
        sha = sha256_of(text)
        if ds.sha256 != sha or ds.inputs != {i.dataset_id: i.sha256 for i in inputs} or ds.params != params:
            ds.version += 1 if target is not None else 0
        ds.kind, ds.stage, ds.params = kind, stage, params
        ds.schema_name = inputs[0].schema_name if kind in TABULAR else ""
        ds.extra_columns = meta["extra_columns"]
        ds.columns, ds.rows, ds.sha256 = meta["columns"], meta["rows"], sha
        ds.inputs = {i.dataset_id: i.sha256 for i in inputs}
        ds.recipe_version = recipe.version if recipe else 0
        ds.issues, ds.validated = meta["issues"], kind in TABULAR
        ds.profiled_sha, ds.updated_at = "", now
        self.state.datasets[ds.dataset_id] = ds
        run_id = f"RUN-{self.state.next_run:04d}"
        self.state.next_run += 1
        self.state.runs[run_id] = Run(
            run_id=run_id, stage=stage, output=ds.dataset_id, inputs=input_ids, at=now, summary=summary
        )
        self._sync_manifest()
        result: dict[str, Any] = {
            "dataset_id": ds.dataset_id,
            "path": output_path,
            "run_id": run_id,
            "version": ds.version,
            "rows": ds.rows,
            "columns": ds.columns,
            "sha256": sha,
            "summary": summary,
        }
        if kind in TABULAR:
            result["issues"] = [i.model_dump() for i in ds.issues]
            result["certified"] = not ds.issues
        result.update(meta.get("preview", {}))
        return result

    def _compute(
        self, stage: str, inputs: list[Dataset], params: dict[str, str]
    ) -> tuple[str, dict[str, Any]]:
        """The pure part of a stage: input tables and parameters in, output text and metadata out."""
        tables = [self._load(ds) for ds in inputs]
        if stage == "clean":
            return self._compute_clean(inputs[0], tables[0], params)
        if stage == "merge":
            columns = tables[0][0]
            rows = [row for _, table_rows in tables for row in table_rows]
            return self._tabular(
                inputs[0], columns, rows, dict(inputs[0].extra_columns), {"rows_in": len(rows)}
            )
        if stage == "join":
            columns, rows, extra, unmatched = join_tables(
                inputs[0], tables[0], inputs[1], tables[1], params, column_spec(self.data, inputs[1])
            )
            summary = {"rows_in": len(tables[0][1]), "unmatched": unmatched}
            return self._tabular(inputs[0], columns, rows, extra, summary)
        if stage in ("stats", "pivot"):
            spec = column_spec(self.data, inputs[0])
            if stage == "stats":
                columns, rows = statistics_table(tables[0][1], params["column"], params["group_by"], spec)
            else:
                columns, rows = pivot_table(tables[0][1], params, spec)
            meta = {"columns": columns, "rows": len(rows), "extra_columns": {}, "issues": [], "summary": {}}
            meta["preview"] = {"table": rows[:REPORT_ROWS]}
            return write_csv(columns, rows), meta
        if stage == "chart":
            spec_doc = chart_spec(inputs[0], tables[0][1], params)
            meta = {"columns": [], "rows": len(spec_doc["data"]["values"]), "extra_columns": {}, "issues": []}
            meta["preview"] = {"encoding": spec_doc["encoding"]}
            return json.dumps(spec_doc, indent=2) + "\n", meta
        text = render_report(self.state, inputs, tables, params, iso(self.now()))
        meta = {"columns": [], "rows": 0, "extra_columns": {}, "issues": []}
        meta["preview"] = {"sections": [ds.dataset_id for ds in inputs]}
        return text, meta

    def _compute_clean(
        self, source: Dataset, table: Table, params: dict[str, str]
    ) -> tuple[str, dict[str, Any]]:
        recipe = self.lookup(self.state.recipes, params["recipe_id"], "recipe", recipe_id=params["recipe_id"])
        columns, rows = list(table[0]), [dict(r) for r in table[1]]
        extra = dict(source.extra_columns)
        spec = column_spec(self.data, source)
        changes: dict[str, int] = {}
        for rule in recipe.rules:
            targets = columns if rule.column == "*" else [c.strip() for c in rule.column.split(",")]
            if rule.operation != "derive":
                unknown = [c for c in targets if c not in columns]
                if unknown:
                    self.fail(
                        "invalid_argument",
                        f"rule {rule.rule_no} of {recipe.recipe_id} names columns {unknown} "
                        f"that {source.dataset_id} does not have",
                        field="recipe_id",
                        rule_no=rule.rule_no,
                        columns=columns,
                    )
            else:
                missing = sorted(expression_names(rule.option) - set(columns))
                if missing:
                    self.fail(
                        "invalid_argument",
                        f"rule {rule.rule_no} of {recipe.recipe_id} uses columns {missing} that do not exist",
                        field="recipe_id",
                        rule_no=rule.rule_no,
                        columns=columns,
                    )
                if rule.column not in columns:
                    columns.append(rule.column)
                extra[rule.column] = ExtraColumn(type="number", required=True)
                spec[rule.column] = {"type": "number", "required": True}
            rows, changed = apply_rule(rule, targets, rows, spec)
            changes[f"rule_{rule.rule_no}_{rule.operation}"] = changed
        summary = {"rows_in": len(table[1]), "rows_out": len(rows), **changes}
        return self._tabular(source, columns, rows, extra, summary)

    def _tabular(
        self,
        source: Dataset,
        columns: list[str],
        rows: list[dict[str, str]],
        extra: dict[str, ExtraColumn],
        summary: dict[str, int],
    ) -> tuple[str, dict[str, Any]]:
        """Output of a tabular stage: the CSV and its validation against the source's schema."""
        probe = source.model_copy(update={"extra_columns": extra, "columns": columns})
        issues = validate_rows(columns, rows, column_spec(self.data, probe), key_columns(self.data, probe))
        meta = {
            "columns": columns,
            "rows": len(rows),
            "extra_columns": extra,
            "issues": issues,
            "summary": summary,
        }
        return write_csv(columns, rows), meta

    # -- helpers -------------------------------------------------------------------------------
    def _dataset(self, dataset_id: str) -> Dataset:
        """The dataset, or not_found with a hint to list_datasets (more than :meth:`lookup` says)."""
        ds = self.state.datasets.get(dataset_id)
        if ds is None:
            self.fail(
                "not_found", f"no dataset '{dataset_id}'; list_datasets shows them", dataset_id=dataset_id
            )
        return ds

    def _load(self, ds: Dataset) -> Table:
        """The dataset's rows; a sheet's header must be its recorded columns (their types come from them)."""
        columns, rows = parse_csv(self.workspace.read_text(ds.path))
        if (ds.kind == "raw" or ds.kind in TABULAR) and columns != ds.columns:
            self.fail(
                "conflict",
                f"{ds.path} has columns {columns}, but {ds.dataset_id} records {ds.columns}; "
                "register the file again (or re-run the stage that wrote it)",
                dataset_id=ds.dataset_id,
            )
        return columns, rows

    def _status(self, ds: Dataset, seen: frozenset[str] = frozenset()) -> Status:
        """fresh, modified (file differs from the recorded version), missing, or stale (an input moved on)."""
        if not self.workspace.exists(ds.path):
            return "missing"
        if sha256_of(self.workspace.read_text(ds.path)) != ds.sha256:
            return "modified"
        recipe = self.state.recipes.get(ds.params.get("recipe_id", ""))
        if recipe is not None and recipe.version != ds.recipe_version:
            return "stale"
        for input_id, used_sha in ds.inputs.items():
            source = self.state.datasets.get(input_id)
            if source is None or source.sha256 != used_sha or input_id in seen:
                return "stale"
            if self._status(source, seen | {ds.dataset_id}) != "fresh":
                return "stale"
        return "fresh"

    def _require_current(self, ds: Dataset, for_dataset: str = "") -> None:
        status = self._status(ds)
        if status == "fresh":
            return
        advice = {
            "missing": "its file is gone; re-run the stage that made it or register the sheet again",
            "modified": (
                "its file was edited outside the pipeline; register_dataset accepts a new raw version"
                if ds.kind == "raw"
                else "its file was edited outside the pipeline; rerun_stage restores it"
            ),
            "stale": "an input changed since it was made; rerun_stage rebuilds it",
        }[status]
        who = f" (input of {for_dataset})" if for_dataset else ""
        self.fail(
            "invalid_transition",
            f"{ds.dataset_id}{who} is {status}: {advice}",
            dataset_id=ds.dataset_id,
            status=status,
        )

    def _certified_input(self, dataset_id: str, tabular: bool = False) -> Dataset:
        ds = self._dataset(dataset_id)
        self._require_current(ds)
        if tabular and ds.kind not in TABULAR:
            self.fail(
                "invalid_transition",
                f"{dataset_id} is a {ds.kind} dataset; analyse a cleaned, merged or joined dataset",
                dataset_id=dataset_id,
                status=ds.kind,
            )
        if not certified(ds):
            state = "not profiled" if not ds.validated else f"has {len(ds.issues)} open issues"
            self.fail(
                "invalid_transition",
                f"{dataset_id} is not certified ({state}); clean it with a recipe until no issues remain",
                dataset_id=dataset_id,
                status="uncertified",
                issues=[i.model_dump() for i in ds.issues][:10],
            )
        return ds

    def _require_numeric(self, ds: Dataset, column: str, field: str) -> None:
        spec = column_spec(self.data, ds)
        if column not in spec:
            self.fail("invalid_argument", f"'{column}' is not a column of {ds.dataset_id}", field=field)
        if spec[column]["type"] not in ("number", "integer", "percent"):
            self.fail(
                "invalid_argument",
                f"'{column}' holds {spec[column]['type']} values; a numeric column is needed",
                field=field,
            )

    def _require_grouping(self, ds: Dataset, column: str, field: str) -> None:
        base, _, part = column.partition(":")
        spec = column_spec(self.data, ds)
        if base not in spec:
            self.fail("invalid_argument", f"'{base}' is not a column of {ds.dataset_id}", field=field)
        if part and (part not in DATE_PARTS or spec[base]["type"] != "date"):
            self.fail(
                "invalid_argument",
                f"'{column}': only date columns take a :month, :quarter or :year suffix",
                field=field,
            )

    def _sync_manifest(self) -> None:
        """Mirror the lineage into pipeline/lineage.json so it can be inspected from the shell."""
        self.workspace.write_text(MANIFEST, render_manifest(self.state))

    # -- initial states ------------------------------------------------------------------------
    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """Four messy quarterly sales sheets (duplicates, blanks, case and date variants, currency and
        percent strings, a cross-quarter duplicate), a products sheet with a duplicated code, a
        regions sheet and a data dictionary; last month's Q1-Q3 analysis built on them with the
        house recipe; and a corrected Q2 export dropped in since, which left part of it stale."""
        del data  # the package's own data/ is read through the session that replays the analysis
        package = cls.package or load_package(Path(__file__).resolve().parent)
        earlier = package.clock.base_time - timedelta(days=PRIOR_ANALYSIS_DAYS)
        raw, corrected_q2 = generate_sheets(random.Random(seed), max(1, size), iso(earlier))
        return prior_analysis(package, raw, earlier, corrected_q2)

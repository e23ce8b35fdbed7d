"""Sheet analytics: the State models (datasets and artifacts with their lineage, cleaning
recipes, pipeline runs) and the stages an artifact can be replayed by, checked record by record."""

from __future__ import annotations

from types import MappingProxyType
from typing import Literal

from pydantic import Field

from envcraft import StateModel, invariant, misfiled

DatasetKind = Literal["raw", "clean", "merged", "joined", "stats", "pivot", "chart", "report"]
SchemaName = Literal["sales", "products", "regions"]
CleanOp = Literal[
    "trim", "normalize_case", "map_values", "parse_date", "parse_number",
    "fill_missing", "drop_invalid", "dedupe", "derive",
]  # fmt: skip
Aggregation = Literal["sum", "mean", "count", "min", "max"]
ChartType = Literal["bar", "line", "point", "arc"]


# stage -> (the kind of artifact it makes, the parameters rerun_stage replays, its fewest inputs)
STAGES: MappingProxyType[str, tuple[str, frozenset[str], int]] = MappingProxyType(
    {
        "register": ("raw", frozenset(), 0),
        "clean": ("clean", frozenset({"recipe_id"}), 1),
        "merge": ("merged", frozenset(), 1),
        "join": ("joined", frozenset({"key", "how"}), 2),
        "stats": ("stats", frozenset({"column", "group_by"}), 1),
        "pivot": ("pivot", frozenset({"index", "columns", "values", "aggregation"}), 1),
        "chart": ("chart", frozenset({"chart_type", "x", "y", "title", "color"}), 1),
        "report": ("report", frozenset({"title", "summary"}), 1),
    }
)


class Issue(StateModel):
    column: str
    problem: str  # missing, invalid_<type>, unknown_category, duplicate_row, duplicate_key
    rows: int
    examples: list[str] = Field(default_factory=list)


class ExtraColumn(StateModel):
    type: str
    required: bool
    values: list[str] = Field(default_factory=list)  # allowed values of a category column


class Dataset(StateModel):
    dataset_id: str
    path: str
    kind: DatasetKind
    schema_name: SchemaName | Literal[""] = ""  # validation schema; "" for summaries
    extra_columns: dict[str, ExtraColumn] = Field(default_factory=dict)  # derived or joined columns
    columns: list[str] = Field(default_factory=list)
    rows: int = 0
    sha256: str
    version: int = 1
    stage: str = "register"
    params: dict[str, str] = Field(default_factory=dict)  # how to re-run the stage
    inputs: dict[str, str] = Field(default_factory=dict)  # input dataset id -> its sha256 when used
    recipe_version: int = 0
    issues: list[Issue] = Field(default_factory=list)
    validated: bool = False  # issues reflect the current content (profile or stage output)
    profiled_sha: str = ""
    created_at: str
    updated_at: str

    def stage_problem(self) -> str:
        """Why rerun_stage could not replay this artifact's recorded stage ('' when it can)."""
        if self.stage not in STAGES:
            return f"{self.dataset_id} has unknown stage {self.stage!r}"
        kind, params, inputs = STAGES[self.stage]
        if self.kind != kind or not params <= set(self.params) or len(self.inputs) < inputs:
            return (
                f"stage {self.stage} makes a {kind} artifact with parameters {sorted(params)} from at "
                f"least {inputs} input(s); {self.dataset_id} is {self.kind} with {sorted(self.params)} "
                f"from {len(self.inputs)}"
            )
        return ""


class Rule(StateModel):
    rule_no: int
    operation: CleanOp
    column: str
    option: str = ""


class Recipe(StateModel):
    recipe_id: str
    name: str
    version: int = 0
    rules: list[Rule] = Field(default_factory=list)
    created_at: str


class Run(StateModel):
    run_id: str
    stage: str
    output: str
    inputs: list[str]
    at: str
    summary: dict[str, int] = Field(default_factory=dict)


class SheetState(StateModel):
    datasets: dict[str, Dataset] = Field(default_factory=dict)
    recipes: dict[str, Recipe] = Field(default_factory=dict)
    runs: dict[str, Run] = Field(default_factory=dict)
    next_dataset: int = 1
    next_recipe: int = 1
    next_run: int = 1

    # Checked per record after each call that touched it (envcraft.core.invariants), never per
    # assignment: a stage rewrites kind, stage and params of an artifact one assignment at a time.
    @invariant("datasets")
    def _dataset_stage_replays(self, key: str, ds: Dataset) -> None:
        _refuse([*misfiled({key: ds}, "dataset_id"), *filter(None, [ds.stage_problem()])])

    @invariant("recipes")
    def _recipe_filed(self, key: str, recipe: Recipe) -> None:
        _refuse(misfiled({key: recipe}, "recipe_id"))

    @invariant("runs")
    def _run_filed(self, key: str, run: Run) -> None:
        _refuse(misfiled({key: run}, "run_id"))


def _refuse(problems: list[str]) -> None:
    if problems:
        raise ValueError("; ".join(problems[:3]))

"""Domain rules of :class:`~.env.SheetAnalytics`: what its tools check, compute and render.

Sheet analytics (spreadsheet cleaning and statistics pipeline). The State lives in ``state.py``
and the tool surface in ``env.py``; this module holds the logic tool bodies call (the S0
generator shares it, so S0 is built by the same rules the tools enforce).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import re
import statistics
from collections.abc import Callable
from datetime import date
from types import MappingProxyType
from typing import Any, Literal

from envcraft import Repository

from .state import Dataset, ExtraColumn, Issue, Rule, SheetState

Status = Literal["fresh", "stale", "modified", "missing"]

TABULAR: frozenset[str] = frozenset({"clean", "merged", "joined"})
REPORTABLE: frozenset[str] = frozenset({"stats", "pivot", "chart"})
MANIFEST = "pipeline/lineage.json"
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
DATE_PARTS = ("month", "quarter", "year")
REPORT_ROWS = 30


Table = tuple[list[str], list[dict[str, str]]]


# -- tables ---------------------------------------------------------------------------------------
def sha256_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_csv(text: str) -> Table:
    reader = csv.reader(io.StringIO(text))
    lines = [row for row in reader if row]
    if not lines:
        return [], []
    header = lines[0]
    rows = [{c: (row[i] if i < len(row) else "") for i, c in enumerate(header)} for row in lines[1:]]
    return header, rows


def write_csv(columns: list[str], rows: list[dict[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([row.get(c, "") for c in columns])
    return out.getvalue()


def dataset_at(state: SheetState, path: str) -> Dataset | None:
    return next((d for d in state.datasets.values() if d.path == path), None)


def ancestors_of(state: SheetState, dataset_id: str) -> list[str]:
    found: list[str] = []
    frontier = list(state.datasets[dataset_id].inputs)
    while frontier:
        current = frontier.pop(0)
        if current in found or current not in state.datasets:
            continue
        found.append(current)
        frontier.extend(state.datasets[current].inputs)
    return found


def descendants_of(state: SheetState, dataset_id: str) -> list[str]:
    """Everything downstream of ``dataset_id``, in an order that re-runs cleanly (inputs first)."""
    below: set[str] = set()
    frontier = [dataset_id]
    while frontier:
        current = frontier.pop()
        for ds in state.datasets.values():
            if current in ds.inputs and ds.dataset_id not in below:
                below.add(ds.dataset_id)
                frontier.append(ds.dataset_id)
    ordered: list[str] = []
    while len(ordered) < len(below):
        ready = sorted(
            d for d in below - set(ordered) if not (set(state.datasets[d].inputs) & below) - set(ordered)
        )
        if not ready:  # a cycle cannot be built through the tools; never loop on a hand-made one
            break
        ordered.append(ready[0])
    return ordered


def render_manifest(state: SheetState) -> str:
    doc = {
        "datasets": {
            d.dataset_id: {
                "path": d.path,
                "kind": d.kind,
                "version": d.version,
                "sha256": d.sha256,
                "inputs": d.inputs,
                "stage": d.stage,
                "params": d.params,
            }
            for d in sorted(state.datasets.values(), key=lambda d: d.dataset_id)
        },
        "recipes": {r.recipe_id: r.model_dump() for r in state.recipes.values()},
        "runs": [r.model_dump() for r in sorted(state.runs.values(), key=lambda r: r.run_id)],
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


# -- values ---------------------------------------------------------------------------------------
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_INTEGER = re.compile(r"^-?\d+$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def to_float(value: str) -> float | None:
    return float(value) if _NUMBER.match(value) else None


def format_number(value: float) -> str:
    text = f"{round(value, 4):.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def is_valid(value: str, spec: dict[str, Any]) -> bool:
    """Is a non-blank cell in the canonical form of its column type?"""
    kind = spec["type"]
    if value != value.strip():
        return False
    if kind == "date":
        return bool(_ISO_DATE.match(value)) and _parse_date(value) == value
    if kind == "integer":
        return bool(_INTEGER.match(value))
    if kind == "number":
        return bool(_NUMBER.match(value))
    if kind == "percent":
        number = to_float(value)
        return number is not None and 0 <= number <= 1
    if kind == "category":
        return value in spec.get("values", ())
    return True


def _parse_date(value: str) -> str | None:
    """Any accepted spelling of a date -> YYYY-MM-DD, or None."""
    text = value.strip().replace(",", "")
    parts: tuple[int, int, int] | None = None
    if m := re.match(r"^(\d{4})[-/](\d{1,2})[-/](\d{1,2})$", text):
        parts = (int(m[1]), int(m[2]), int(m[3]))
    elif m := re.match(r"^(\d{1,2})/(\d{1,2})/(\d{4})$", text):
        parts = (int(m[3]), int(m[1]), int(m[2]))
    elif m := re.match(r"^(\d{1,2})\.(\d{1,2})\.(\d{4})$", text):
        parts = (int(m[3]), int(m[2]), int(m[1]))
    elif m := re.match(r"^([A-Za-z]{3})[a-z]* (\d{1,2}) (\d{4})$", text):
        month = m[1].title()
        parts = (int(m[3]), MONTHS.index(month) + 1, int(m[2])) if month in MONTHS else None
    elif m := re.match(r"^(\d{1,2}) ([A-Za-z]{3})[a-z]* (\d{4})$", text):
        month = m[2].title()
        parts = (int(m[3]), MONTHS.index(month) + 1, int(m[1])) if month in MONTHS else None
    if parts is None:
        return None
    try:
        return date(*parts).isoformat()
    except ValueError:
        return None


def _parse_number(value: str, kind: str) -> str | None:
    text = value.strip()
    for token in ("USD", "EUR", "$", "€", " "):
        text = text.replace(token, "")
    percent = text.endswith("%")
    text = text.rstrip("%").replace(",", "")
    number = to_float(text)
    if number is None:
        return None
    if percent:
        number /= 100
    if kind == "integer":
        return str(int(number)) if number == int(number) else None
    if kind == "percent" and not 0 <= number <= 1:
        return None
    return format_number(number)


def _date_part(value: str, part: str) -> str:
    if not part or not value:  # an empty optional date (a left join's unmatched row) groups as empty
        return value
    if part == "year":
        return value[:4]
    if part == "month":
        return value[:7]
    return f"{value[:4]}-Q{(int(value[5:7]) - 1) // 3 + 1}"


# -- validation and profiles ---------------------------------------------------------------------
FIXES: MappingProxyType[str, str] = MappingProxyType(
    {
        "missing": "fill_missing (or drop_invalid)",
        "invalid": "parse_date / parse_number, then drop_invalid for what cannot be parsed",
        "unknown": "trim, normalize_case, map_values",
        "duplicate": "dedupe (* for identical rows, the key column for repeated keys)",
    }
)


def column_profile(column: str, rows: list[dict[str, str]], rule: dict[str, Any]) -> dict[str, Any]:
    values = [r[column] for r in rows]
    filled = [v for v in values if v.strip()]
    invalid = [v for v in filled if not is_valid(v, rule)]
    profile: dict[str, Any] = {
        "type": rule["type"],
        "required": rule["required"],
        "blanks": len(values) - len(filled),
        "distinct": len(set(filled)),
        "invalid": len(invalid),
        "invalid_examples": sorted(set(invalid))[:5],
    }
    if rule["type"] == "category":
        counts: dict[str, int] = {}
        for value in filled:
            counts[value] = counts.get(value, 0) + 1
        profile["value_counts"] = dict(sorted(counts.items()))
        profile["allowed"] = list(rule.get("values", ()))
    return profile


# -- cleaning rules -------------------------------------------------------------------------------
_FILL = ("zero", "mean", "median", "mode", "drop_row")
_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|(.))")


def check_rule(operation: str, column: str, option: str) -> str:
    """Why a rule is malformed, or "" when it is fine (columns are checked when it runs)."""
    if operation == "normalize_case" and option not in ("title", "upper", "lower"):
        return "normalize_case takes option title, upper or lower"
    if operation == "map_values" and not _parse_mapping(option):
        return "map_values takes option 'from=to;from=to'"
    if operation == "fill_missing" and option not in _FILL and not option.startswith("value="):
        return f"fill_missing takes option {', '.join(_FILL)} or value=<literal>"
    if operation == "dedupe" and option not in ("", "first", "last"):
        return "dedupe takes option first or last"
    if operation == "derive":
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", column):
            return "derive needs a new column name made of letters, digits and _"
        try:
            _Expression(option)
        except ValueError as exc:
            return f"derive expression: {exc}"
    elif operation in ("trim", "parse_date", "parse_number", "drop_invalid") and option:
        return f"{operation} takes no option"
    if column == "*" and operation not in ("trim", "dedupe"):
        return f"{operation} needs a column, not *"
    return ""


def _parse_mapping(option: str) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for pair in option.split(";"):
        source, sep, target = pair.partition("=")
        if not sep or not source.strip() or not target.strip():
            return {}
        mapping[source.strip().lower()] = target.strip()
    return mapping


def apply_rule(
    rule: Rule, targets: list[str], rows: list[dict[str, str]], spec: dict[str, dict[str, Any]]
) -> tuple[list[dict[str, str]], int]:
    """Apply one rule; returns the new rows and how many cells or rows it changed."""
    op, option = rule.operation, rule.option
    if op == "dedupe":
        keys = targets
        ordered = rows if option != "last" else list(reversed(rows))
        seen: set[tuple[str, ...]] = set()
        kept = []
        for row in ordered:
            ident = tuple(row[k] for k in keys)
            if ident not in seen:
                seen.add(ident)
                kept.append(row)
        kept = kept if option != "last" else list(reversed(kept))
        return kept, len(rows) - len(kept)
    if op == "drop_invalid":
        column = targets[0]
        kept = [r for r in rows if (r[column].strip() and is_valid(r[column], spec[column]))]
        return kept, len(rows) - len(kept)
    if op == "fill_missing" and option == "drop_row":
        column = targets[0]
        kept = [r for r in rows if r[column].strip()]
        return kept, len(rows) - len(kept)
    changed = 0
    transform = _cell_transform(rule, targets, rows, spec)
    for row in rows:
        for column in targets if op != "derive" else [rule.column]:
            new = transform(row, column)
            changed += new != row.get(column)
            row[column] = new
    return rows, changed


def _cell_transform(
    rule: Rule, targets: list[str], rows: list[dict[str, str]], spec: dict[str, dict[str, Any]]
) -> Callable[[dict[str, str], str], str]:
    op, option = rule.operation, rule.option
    if op == "trim":
        return lambda row, c: row[c].strip()
    if op == "normalize_case":
        method = {"title": str.title, "upper": str.upper, "lower": str.lower}[option]
        return lambda row, c: method(row[c])
    if op == "map_values":
        mapping = _parse_mapping(option)
        return lambda row, c: mapping.get(row[c].strip().lower(), row[c])
    if op == "parse_date":
        return lambda row, c: _parse_date(row[c]) or row[c]
    if op == "parse_number":
        return lambda row, c: (_parse_number(row[c], spec[c]["type"]) or row[c]) if row[c].strip() else row[c]
    if op == "derive":
        expression = _Expression(option)
        return lambda row, c: expression.evaluate(row)
    fill = _fill_value(option, targets[0], rows, spec[targets[0]])
    return lambda row, c: row[c] if row[c].strip() else fill


def _fill_value(option: str, column: str, rows: list[dict[str, str]], rule: dict[str, Any]) -> str:
    if option.startswith("value="):
        return option[len("value=") :]
    if option == "zero":
        return "0"
    filled = [r[column] for r in rows if r[column].strip() and is_valid(r[column], rule)]
    if option == "mode":
        return statistics.mode(sorted(filled)) if filled else ""
    numbers = [float(v) for v in filled if to_float(v) is not None]
    if not numbers:
        return ""
    value = statistics.fmean(numbers) if option == "mean" else statistics.median(numbers)
    return str(round(value)) if rule["type"] == "integer" else format_number(value)


class _Expression:
    """A tiny arithmetic language over column names: + - * / parentheses and numbers."""

    def __init__(self, source: str) -> None:
        self.tokens = self._tokenize(source)
        self.pos = 0
        if not self.tokens:
            raise ValueError("empty expression")
        with contextlib.suppress(ZeroDivisionError):  # a literal division by zero is still valid syntax
            self._sum(lambda name: 1.0)
        if self.pos != len(self.tokens):
            raise ValueError(f"unexpected '{self.tokens[self.pos][1]}'")

    @staticmethod
    def _tokenize(source: str) -> list[tuple[str, str]]:
        tokens: list[tuple[str, str]] = []
        for match in _TOKEN.finditer(source.strip()):
            number, name, other = match.groups()
            if number:
                tokens.append(("num", number))
            elif name:
                tokens.append(("name", name))
            elif other:
                if other not in "+-*/()":
                    raise ValueError(f"unsupported character '{other}'")
                tokens.append(("op", other))
        return tokens

    def evaluate(self, row: dict[str, str]) -> str:
        def lookup(name: str) -> float:
            number = to_float(row.get(name, ""))
            if number is None:
                raise ArithmeticError(name)
            return number

        self.pos = 0
        try:
            return format_number(self._sum(lookup))
        except (ArithmeticError, ZeroDivisionError):
            return ""

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _sum(self, lookup: Callable[[str], float]) -> float:
        value = self._product(lookup)
        while (token := self._peek()) and token[1] in "+-" and token[0] == "op":
            self.pos += 1
            other = self._product(lookup)
            value = value + other if token[1] == "+" else value - other
        return value

    def _product(self, lookup: Callable[[str], float]) -> float:
        value = self._atom(lookup)
        while (token := self._peek()) and token[1] in "*/" and token[0] == "op":
            self.pos += 1
            other = self._atom(lookup)
            value = value * other if token[1] == "*" else value / other
        return value

    def _atom(self, lookup: Callable[[str], float]) -> float:
        token = self._peek()
        if token is None:
            raise ValueError("expression ends early")
        self.pos += 1
        kind, text = token
        if kind == "num":
            return float(text)
        if kind == "name":
            return lookup(text)
        if text == "-":
            return -self._atom(lookup)
        if text == "(":
            value = self._sum(lookup)
            closing = self._peek()
            if closing != ("op", ")"):
                raise ValueError("missing ')'")
            self.pos += 1
            return value
        raise ValueError(f"unexpected '{text}'")


def expression_names(source: str) -> set[str]:
    return {text for kind, text in _Expression(source).tokens if kind == "name"}


def _group_value(row: dict[str, str], column: str) -> str:
    base, _, part = column.partition(":")
    return _date_part(row[base], part)


def statistics_table(
    rows: list[dict[str, str]], column: str, group_by: str, spec: dict[str, dict[str, Any]]
) -> tuple[list[str], list[dict[str, str]]]:
    del spec
    groups: dict[str, list[float]] = {}
    for row in rows:
        number = to_float(row[column])
        if number is None:
            continue
        groups.setdefault(_group_value(row, group_by) if group_by else "all", []).append(number)
    label = group_by.replace(":", "_") if group_by else "group"
    columns = [label, "count", "sum", "mean", "median", "min", "max", "stdev"]
    out = []
    for group, numbers in sorted(groups.items()):
        out.append(
            {
                label: group,
                "count": str(len(numbers)),
                "sum": format_number(sum(numbers)),
                "mean": format_number(statistics.fmean(numbers)),
                "median": format_number(statistics.median(numbers)),
                "min": format_number(min(numbers)),
                "max": format_number(max(numbers)),
                "stdev": format_number(statistics.stdev(numbers)) if len(numbers) > 1 else "0",
            }
        )
    return columns, out


def pivot_table(
    rows: list[dict[str, str]], params: dict[str, str], spec: dict[str, dict[str, Any]]
) -> tuple[list[str], list[dict[str, str]]]:
    del spec
    index, columns, values, how = params["index"], params["columns"], params["values"], params["aggregation"]
    cells: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        number = to_float(row[values])
        if number is None:
            continue
        column_value = _group_value(row, columns) if columns else values
        cells.setdefault((_group_value(row, index), column_value), []).append(number)
    row_keys = sorted({r for r, _ in cells})
    column_keys = sorted({c for _, c in cells})
    aggregate: dict[str, Callable[[list[float]], float]] = {
        "sum": sum,
        "mean": statistics.fmean,
        "count": lambda xs: float(len(xs)),
        "min": min,
        "max": max,
    }
    label = index.replace(":", "_")
    header = [label, *column_keys]
    with_total = how in ("sum", "count") and bool(columns)
    if with_total:
        header.append("total")
    out = []
    for r in row_keys:
        record = {label: r}
        for c in column_keys:
            numbers = cells.get((r, c))
            record[c] = (
                format_number(aggregate[how](numbers))
                if numbers
                else ("0" if how in ("sum", "count") else "")
            )
        if with_total:
            record["total"] = format_number(sum(float(record[c]) for c in column_keys))
        out.append(record)
    return header, out


def chart_spec(source: Dataset, rows: list[dict[str, str]], params: dict[str, str]) -> dict[str, Any]:
    x, y, color, chart = params["x"], params["y"], params["color"], params["chart_type"]
    values = []
    for row in rows:
        point: dict[str, Any] = {x: row[x], y: to_float(row[y]) if row[y] else None}
        if color:
            point[color] = row[color]
        values.append(point)
    temporal = all(_ISO_DATE.match(str(p[x])) for p in values) and bool(values)
    if chart == "arc":
        encoding: dict[str, Any] = {
            "theta": {"field": y, "type": "quantitative"},
            "color": {"field": x, "type": "nominal"},
        }
    else:
        encoding = {
            "x": {"field": x, "type": "temporal" if temporal else "ordinal"},
            "y": {"field": y, "type": "quantitative"},
        }
        if color:
            encoding["color"] = {"field": color, "type": "nominal"}
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": params["title"],
        "mark": chart,
        "data": {"values": values},
        "encoding": encoding,
        "usermeta": {"source": source.dataset_id, "source_path": source.path, "source_sha256": source.sha256},
    }


def _markdown_table(columns: list[str], rows: list[dict[str, str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(r.get(c, "") for c in columns) + " |" for r in rows[:REPORT_ROWS]]
    if len(rows) > REPORT_ROWS:
        lines.append(f"\n_{len(rows) - REPORT_ROWS} more rows in the CSV._")
    return "\n".join(lines)


def render_report(
    state: SheetState, inputs: list[Dataset], tables: list[Table], params: dict[str, str], when: str
) -> str:
    parts = [f"# {params['title']}", ""]
    if params["summary"]:
        parts += [params["summary"], ""]
    parts += [f"_Generated {when} by the sheet_analytics pipeline._", ""]
    for ds, (columns, rows) in zip(inputs, tables, strict=True):
        parts += [f"## {ds.path}", "", f"{ds.kind} artifact {ds.dataset_id}, version {ds.version}.", ""]
        if ds.kind == "chart":
            parts += [f"Chart spec (Vega-Lite): `{ds.path}`, {ds.rows} data points.", ""]
        else:
            parts += [_markdown_table(columns, rows), ""]
    parts += ["## Lineage", ""]
    cited: list[str] = []
    for ds in inputs:
        for ancestor in [ds.dataset_id, *ancestors_of(state, ds.dataset_id)]:
            if ancestor in cited:
                continue
            cited.append(ancestor)
            node = state.datasets[ancestor]
            sources = ", ".join(sorted(node.inputs)) or "workspace sheet"
            parts.append(f"- {ancestor} `{node.path}` ({node.stage}, v{node.version}) <- {sources}")
    recipes = sorted({state.datasets[a].params.get("recipe_id", "") for a in cited} - {""})
    for recipe_id in recipes:
        recipe = state.recipes[recipe_id]
        parts += ["", f'Cleaning recipe {recipe_id} "{recipe.name}" (version {recipe.version}):']
        parts += [f"{r.rule_no}. {r.operation} {r.column} {r.option}".rstrip() for r in recipe.rules]
    return "\n".join(parts) + "\n"


# -- schemas and datasets -------------------------------------------------------------------------
def schema_of(data: Repository, name: str) -> Any:
    return data.json("schemas.json")[name]


def column_spec(data: Repository, ds: Dataset) -> dict[str, dict[str, Any]]:
    """Column name -> {type, required, values} for every column of ``ds``."""
    schema = schema_of(data, ds.schema_name)["columns"] if ds.schema_name else {}
    spec: dict[str, dict[str, Any]] = {}
    for column in ds.columns:
        if column in ds.extra_columns:
            extra = ds.extra_columns[column]
            spec[column] = {"type": extra.type, "required": extra.required, "values": extra.values}
        elif column in schema:
            spec[column] = dict(schema[column])
        else:
            spec[column] = {"type": "text", "required": False}
    return spec


def key_columns(data: Repository, ds: Dataset) -> list[str]:
    return list(schema_of(data, ds.schema_name)["key"]) if ds.schema_name else []


def certified(ds: Dataset) -> bool:
    """Validated at its current content with no issues: fit for analysis."""
    if ds.kind == "raw":
        return ds.validated and not ds.issues and ds.profiled_sha == ds.sha256
    return ds.kind in TABULAR and ds.validated and not ds.issues


def next_dataset_id(state: SheetState) -> str:
    dataset_id = f"DS-{state.next_dataset:03d}"
    state.next_dataset += 1
    return dataset_id


def validate_rows(
    columns: list[str], rows: list[dict[str, str]], spec: dict[str, dict[str, Any]], key: list[str]
) -> list[Issue]:
    issues: list[Issue] = []
    for column in columns:
        rule = spec[column]
        blanks = [i for i, r in enumerate(rows) if not r[column].strip()]
        if rule["required"] and blanks:
            issues.append(Issue(column=column, problem="missing", rows=len(blanks)))
        bad = [r[column] for r in rows if r[column].strip() and not is_valid(r[column], rule)]
        if bad:
            problem = "unknown_category" if rule["type"] == "category" else f"invalid_{rule['type']}"
            examples = sorted(set(bad))[:5]
            issues.append(Issue(column=column, problem=problem, rows=len(bad), examples=examples))
    rows_seen: set[tuple[str, ...]] = set()
    keys_seen: set[tuple[str, ...]] = set()
    duplicate_rows, duplicate_keys = 0, []
    for row in rows:
        whole = tuple(row[c] for c in columns)
        if whole in rows_seen:
            duplicate_rows += 1
            continue
        rows_seen.add(whole)
        if key and all(k in row for k in key):
            ident = tuple(row[k] for k in key)
            if ident in keys_seen:
                duplicate_keys.append(",".join(ident))
            keys_seen.add(ident)
    if duplicate_rows:
        issues.append(Issue(column="*", problem="duplicate_row", rows=duplicate_rows))
    if duplicate_keys:
        issues.append(
            Issue(
                column=",".join(key),
                problem="duplicate_key",
                rows=len(duplicate_keys),
                examples=duplicate_keys[:5],
            )
        )
    return issues


# -- analysis stages ------------------------------------------------------------------------------
def join_tables(
    left: Dataset,
    left_table: Table,
    right: Dataset,
    right_table: Table,
    params: dict[str, str],
    right_spec: dict[str, dict[str, Any]],
) -> tuple[list[str], list[dict[str, str]], dict[str, ExtraColumn], int]:
    key, how = params["key"], params["how"]
    left_columns, left_rows = left_table
    right_columns, right_rows = right_table
    added = {c: (c if c not in left_columns else f"{c}_right") for c in right_columns if c != key}
    extra = dict(left.extra_columns)
    for source, name in added.items():
        extra[name] = ExtraColumn(
            type=right_spec[source]["type"],
            required=how == "inner",
            values=list(right_spec[source].get("values", ())),
        )
    lookup = {r[key]: r for r in right_rows}
    rows, unmatched = [], 0
    for row in left_rows:
        match = lookup.get(row[key])
        if match is None:
            unmatched += 1
            if how == "inner":
                continue
        rows.append({**row, **{name: (match[source] if match else "") for source, name in added.items()}})
    return [*left_columns, *added.values()], rows, extra, unmatched

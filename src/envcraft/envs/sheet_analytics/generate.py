"""The seeded S0 generator behind :meth:`~.env.SheetAnalytics.generate`.

Sheet analytics (spreadsheet cleaning and statistics pipeline). Runs once per initial state
(seed, size), never during a tool call; it builds the State models of ``state.py`` with the
rules of ``rules.py``, and replays last month's analysis through a session of the package.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from types import MappingProxyType
from typing import Any

from envcraft import EnvPackage, Initial, Session, is_error

from .rules import MANIFEST, MONTHS, format_number, parse_csv, render_manifest, sha256_of, to_float, write_csv
from .state import Dataset, SheetState

PRIOR_ANALYSIS_DAYS = 20


# -- generator ------------------------------------------------------------------------------------
REGIONS = ("North", "South", "East", "West")
CHANNELS = ("Online", "Retail", "Partner")
REPS = (
    "Ana Souza", "Ben Carter", "Chen Wei", "Dara Okafor", "Eli Novak", "Fatima Zahra",
    "Gus Lindholm", "Hana Ito", "Ivan Petrov", "Jo Mensah",
)  # fmt: skip
MANAGERS = ("Marta Klein", "Omar Haddad", "Lena Fischer", "Raj Patel")
PRODUCTS = (
    ("HW-100", "Edge Router 8-port", "Hardware", 212.0),
    ("HW-101", "Edge Router 16-port", "Hardware", 348.0),
    ("HW-210", "Rack Server 1U", "Hardware", 1890.0),
    ("SW-300", "Analytics Suite (annual)", "Software", 0.0),
    ("SW-301", "Analytics Suite Pro (annual)", "Software", 0.0),
    ("SV-400", "Onsite Installation", "Services", 140.0),
    ("SV-410", "Support Plan Gold", "Services", 95.0),
    ("AC-500", "Rack Rails", "Accessories", 18.5),
    ("AC-510", "Patch Cable 2m (10-pack)", "Accessories", 9.4),
)  # fmt: skip
PRICES: MappingProxyType[str, float] = MappingProxyType(
    {
        "HW-100": 329.0, "HW-101": 519.0, "HW-210": 2650.0, "SW-300": 1200.0, "SW-301": 2400.0,
        "SV-400": 260.0, "SV-410": 180.0, "AC-500": 39.0, "AC-510": 24.9,
    }
)  # fmt: skip
SHEET_COLUMNS = (
    "order_id",
    "order_date",
    "region",
    "rep",
    "product_code",
    "channel",
    "units",
    "unit_price",
    "discount",
)

DATA_DICTIONARY = """# Sales data dictionary

Quarterly exports from the order system, one file per quarter: `data/sales_2025Q1.csv` ...
`data/sales_2025Q4.csv`. Reference sheets: `data/products.csv` (product master) and
`data/regions.csv` (regional managers and quarterly revenue targets).

| column | meaning | canonical form |
|---|---|---|
| order_id | order number, unique across the year | SO-25-00042 |
| order_date | date the order was booked | YYYY-MM-DD |
| region | sales region | North, South, East, West |
| rep | sales representative | full name |
| product_code | product master code | HW-100 |
| channel | sales channel | Online, Retail, Partner |
| units | units sold | whole number |
| unit_price | list price per unit, USD | plain decimal, no currency sign |
| discount | discount granted, as a fraction | 0.05 for 5%; blank means no discount |

Known quirks of the exports:

* Some regional offices type regions and channels by hand (case, stray spaces, "Web" for Online).
* The EU office exports dates day-first with dots (31.08.2025); the US office month-first with
  slashes (08/31/2025).
* Prices are sometimes exported with a currency sign and thousands separators, discounts as "5%".
* Re-exports repeat rows, and an order booked at a quarter boundary can appear in both files.
* Net revenue = units * unit_price * (1 - discount). Margin uses unit_cost from the product master.
"""


def generate_sheets(rng: random.Random, size: int, now: str) -> tuple[Initial, str]:
    """The raw workspace as it was last month, and the corrected Q2 export that arrived since."""
    state = SheetState()
    files: dict[str, str] = {"data/README.md": DATA_DICTIONARY}
    numbers = iter(rng.sample(range(10, 9999), 200 * size))
    quarters: list[list[list[str]]] = []
    for quarter in range(4):
        rows = [_clean_row(rng, quarter, f"SO-25-{next(numbers):05d}") for _ in range(14 + 6 * size)]
        quarters.append(rows)
    # An order booked at the Q1/Q2 boundary is exported in both files (a cross-file duplicate key).
    boundary = list(quarters[0][-1])
    boundary[1] = "2025-03-31"
    quarters[0][-1] = boundary
    quarters[1].append(list(boundary))
    for quarter, rows in enumerate(quarters):
        messy = _make_messy(rng, quarter, rows)
        files[f"data/sales_2025Q{quarter + 1}.csv"] = write_csv(
            list(SHEET_COLUMNS), [dict(zip(SHEET_COLUMNS, r, strict=True)) for r in messy]
        )
    products = [[code, name, category, format_number(cost)] for code, name, category, cost in PRODUCTS]
    products.insert(rng.randint(1, len(products)), list(products[rng.randrange(len(products))]))
    files["data/products.csv"] = write_csv(
        ["product_code", "product_name", "category", "unit_cost"],
        [
            dict(zip(("product_code", "product_name", "category", "unit_cost"), p, strict=True))
            for p in products
        ],
    )
    managers = rng.sample(MANAGERS, 4)
    files["data/regions.csv"] = write_csv(
        ["region", "manager", "quarterly_target"],
        [
            {"region": r, "manager": m, "quarterly_target": str(rng.randrange(40, 120) * 1000 * size)}
            for r, m in zip(REGIONS, managers, strict=True)
        ],
    )
    sheets = [(f"data/sales_2025Q{q}.csv", "sales") for q in range(1, 5)]
    sheets += [("data/products.csv", "products"), ("data/regions.csv", "regions")]
    for path, schema in sheets:
        columns, table_rows = parse_csv(files[path])
        dataset_id = f"DS-{state.next_dataset:03d}"
        state.next_dataset += 1
        state.datasets[dataset_id] = Dataset(
            dataset_id=dataset_id,
            path=path,
            kind="raw",
            schema_name=schema,
            columns=columns,
            rows=len(table_rows),
            sha256=sha256_of(files[path]),
            created_at=now,
            updated_at=now,
        )
    files[MANIFEST] = render_manifest(state)
    return Initial(state=state, files=files), _correct_export(rng, files["data/sales_2025Q2.csv"])


def _correct_export(rng: random.Random, text: str) -> str:
    """A re-export of a sheet in which one order's unit count was corrected."""
    columns, rows = parse_csv(text)
    target = rows[rng.randrange(len(rows) - 1)]
    target["units"] = str(int(to_float(target["units"].strip()) or 0) + rng.randint(1, 3))
    return write_csv(columns, rows)


def prior_analysis(package: EnvPackage, raw: Initial, when: datetime, corrected_q2: str) -> Initial:
    """Replay last month's Q1-Q3 analysis with this environment's own tools, then drop in the
    corrected Q2 export: the artifacts are real, and the ones downstream of Q2 are stale."""
    earlier = EnvPackage(
        root=package.root,
        manifest=package.manifest.model_copy(update={"base_time": when}),
        env_class=package.env_class,
    )
    with Session.memory(earlier, state=raw.state.model_dump(mode="json"), files=raw.files) as session:

        def run(tool: str, **args: Any) -> str:
            result = session.call(tool, args)
            if is_error(result):
                raise RuntimeError(f"prior analysis: {tool} failed: {result['error']['message']}")
            return str(result.get("dataset_id") or result.get("recipe_id"))

        house = package.data.json("house_recipe.json")
        recipe_id = run("create_recipe", name=house["name"])
        for operation, column, option in house["rules"]:
            run("add_cleaning_rule", recipe_id=recipe_id, operation=operation, column=column, option=option)
        cleaned = []
        for quarter, raw_id in enumerate(("DS-001", "DS-002", "DS-003"), start=1):
            run("profile_dataset", dataset_id=raw_id)
            out = f"data/clean/sales_2025Q{quarter}.csv"
            cleaned.append(run("clean_dataset", dataset_id=raw_id, recipe_id=recipe_id, output_path=out))
        merged = run(
            "merge_datasets", dataset_ids=cleaned, output_path="data/clean/sales_2025_q1_q3_merged.csv"
        )
        dedupe = run("create_recipe", name="Drop orders exported twice")
        run("add_cleaning_rule", recipe_id=dedupe, operation="dedupe", column="order_id", option="last")
        year = run(
            "clean_dataset",
            dataset_id=merged,
            recipe_id=dedupe,
            output_path="data/clean/sales_2025_q1_q3.csv",
        )
        stats = run(
            "compute_statistics",
            dataset_id=year,
            column="revenue",
            group_by="region",
            output_path="reports/revenue_by_region_q1_q3.csv",
        )
        pivot = run(
            "build_pivot",
            dataset_id=year,
            index="region",
            columns="order_date:quarter",
            values="revenue",
            output_path="reports/revenue_region_quarter_q1_q3.csv",
        )
        chart = run(
            "create_chart_spec",
            dataset_id=pivot,
            chart_type="bar",
            x="region",
            y="total",
            title="Revenue by region, Q1-Q3 2025",
            output_path="reports/revenue_by_region_q1_q3.vl.json",
        )
        run(
            "write_report",
            title="Sales review Q1-Q3 2025",
            artifact_ids=[stats, pivot, chart],
            output_path="reports/sales_review_q1_q3.md",
            summary="Net revenue by region for the first three quarters; Q4 follows when its export is in.",
        )
        state = package.env_class.State.model_validate(session.state())
        files = session.files()
    files["data/sales_2025Q2.csv"] = corrected_q2
    return Initial(state=state, files=files)


def _clean_row(rng: random.Random, quarter: int, order_id: str) -> list[str]:
    day = date(2025, 1 + 3 * quarter, 1) + timedelta(days=rng.randrange(0, 90))
    code = rng.choice(PRODUCTS)[0]
    units = (
        rng.choice((1, 1, 2, 3, 4, 5, 8, 10, 12, 20)) if code.startswith(("AC", "HW")) else rng.randint(1, 4)
    )
    discount = rng.choice(("", "", "0.05", "0.1", "0.15"))
    return [
        order_id,
        day.isoformat(),
        rng.choice(REGIONS),
        rng.choice(REPS),
        code,
        rng.choice(CHANNELS),
        str(units),
        format_number(PRICES[code]),
        discount,
    ]


def _make_messy(rng: random.Random, quarter: int, rows: list[list[str]]) -> list[list[str]]:
    """Each quarter has its own export habits, as real regional exports do."""
    out = [list(r) for r in rows]
    picks = rng.sample(range(len(out) - 1), 8)
    # Everyone: hand-typed regions and channels.
    out[picks[0]][2] = out[picks[0]][2].lower()
    out[picks[1]][2] = f" {out[picks[1]][2].upper()} "
    if out[picks[2]][5] == "Online":
        out[picks[2]][5] = rng.choice(("Web", "web", "online"))
    else:
        out[picks[2]][5] = out[picks[2]][5].upper()
    if quarter == 0:  # US office: month-first dates, a blank unit count, exact re-exported rows
        for i in picks[3:5]:
            d = date.fromisoformat(out[i][1])
            out[i][1] = f"{d.month:02d}/{d.day:02d}/{d.year}"
        out[picks[5]][6] = ""
        out += [list(out[picks[6]]), list(out[picks[7]])]
    elif quarter == 1:  # currency strings and percent discounts; a corrected re-export of one order
        for i in picks[3:6]:
            out[i][7] = f"${float(out[i][7]):,.2f}"
        out[picks[6]][8] = "10%"
        corrected = list(out[picks[7]])
        corrected[6] = str(int(corrected[6]) + 1)
        out.append(corrected)
    elif quarter == 2:  # EU office: day-first dotted dates, one impossible date
        for i in picks[3:6]:
            d = date.fromisoformat(out[i][1])
            out[i][1] = f"{d.day:02d}.{d.month:02d}.{d.year}"
        out[picks[6]][1] = "2025-09-31"
        out[picks[7]][8] = "5%"
    else:  # year end: missing reps, units exported as decimals, spelled-out dates
        out[picks[3]][3] = ""
        out[picks[4]][6] = f"{out[picks[4]][6]}.0"
        d = date.fromisoformat(out[picks[5]][1])
        out[picks[5]][1] = f"{MONTHS[d.month - 1]} {d.day} {d.year}"
        out[picks[6]][7] = f"USD {out[picks[6]][7]}"
        out.append(list(out[picks[7]]))
    return out

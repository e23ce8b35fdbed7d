"""The scenario catalog: 41 general tool-use + 42 Claw-specific scenarios, the numbers the paper
gives. 40 rows are the paper's own (its appendix tables); 43 were written here to complete the set.

The data lives in ``scenarios.toml`` next to this module (shipped in the wheel); each row
says whether it comes from the paper's appendix tables or was added to complete the set.
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from envcraft.core.package import ARCHETYPES

Category = Literal["general", "claw"]
SLUG = r"^[a-z0-9]+(-[a-z0-9]+)*$"
# Environments the paper built per category (its Table 2): what `target_envs` spreads over the catalog.
PAPER_ENVS: dict[str, int] = {"general": 70, "claw": 69}


class Scenario(BaseModel):
    """One fine-grained scenario: the seed a synthesized environment is written from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=SLUG)
    category: Category
    number: int | None = Field(default=None, ge=1)  # the paper's row number, where known
    title: str = Field(min_length=1)
    description: str = Field(min_length=1)
    keywords: tuple[str, ...] = Field(min_length=1)
    archetypes: tuple[str, ...] = Field(min_length=1, max_length=2)
    source: Literal["paper", "added"]
    n_envs: int | None = Field(default=None, ge=1)  # environments the paper built, where known

    @field_validator("archetypes")
    @classmethod
    def _known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [a for a in value if a not in ARCHETYPES]
        if unknown or len(set(value)) != len(value):
            raise ValueError(f"archetypes must be distinct ids from {ARCHETYPES}; got {list(value)}")
        return value

    def spec_text(self) -> str:
        """The text a synthesis prompt (and archetype retrieval) starts from."""
        return f"{self.title}. {self.description} Keywords: {', '.join(self.keywords)}."


class CatalogError(ValueError):
    """The shipped catalog is inconsistent (a packaging bug, not a user error)."""


@cache
def load_catalog() -> tuple[Scenario, ...]:
    """Every scenario, in catalog order (general first, then claw)."""
    text = resources.files("envcraft.synth").joinpath("scenarios.toml").read_text(encoding="utf-8")
    rows = tomllib.loads(text)["scenario"]
    scenarios = tuple(Scenario.model_validate(row) for row in rows)
    ids = [s.id for s in scenarios]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise CatalogError(f"duplicate scenario ids: {duplicates}")
    return scenarios


def scenarios(category: Category | None = None) -> list[Scenario]:
    """The catalog, optionally restricted to one category."""
    return [s for s in load_catalog() if category is None or s.category == category]


def get_scenario(scenario_id: str) -> Scenario:
    """Look a scenario up by id; ``KeyError`` names the unknown id."""
    for scenario in load_catalog():
        if scenario.id == scenario_id:
            return scenario
    raise KeyError(f"no scenario '{scenario_id}'")


@cache
def target_envs() -> dict[str, int]:
    """How many environments to build per scenario so the catalog totals the paper's 70 + 69.

    A row the paper gives a count for keeps it; the rest of its category's total is spread over
    the rows without one, one each and then one more to the earliest rows, in catalog order (the
    paper does not say how its remaining environments fall; an even spread is the least claim).
    """
    targets: dict[str, int] = {}
    for category, total in PAPER_ENVS.items():
        rows = scenarios(category)  # type: ignore[arg-type]
        unknown = [s for s in rows if s.n_envs is None]
        left = total - sum(s.n_envs for s in rows if s.n_envs is not None)
        if unknown and left < len(unknown):
            raise CatalogError(
                f"{category}: {left} environments left for {len(unknown)} rows without a count"
            )
        for row in rows:
            targets[row.id] = row.n_envs if row.n_envs is not None else 0
        for index, row in enumerate(unknown):
            targets[row.id] = left // len(unknown) + (1 if index < left % len(unknown) else 0)
    return targets

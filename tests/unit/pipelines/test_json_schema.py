"""The published JSON Schema (docs/pipeline.schema.json) is the model's, every shipped
declaration names it on its first line for editors, and it accepts them and refuses a typo."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from boardstream.pipelines import SHIPPED
from boardstream.pipelines.json_schema import json_schema, text
from boardstream.settings import PROJECT_ROOT

PUBLISHED = PROJECT_ROOT / "docs" / "pipeline.schema.json"
DECLARATIONS = sorted(SHIPPED.glob("*.yml"))


def test_the_published_schema_is_the_model_s() -> None:
    assert PUBLISHED.read_text() == text(), (
        "stale: python -m boardstream.pipelines.json_schema > docs/pipeline.schema.json"
    )


@pytest.mark.parametrize("declaration", DECLARATIONS, ids=lambda path: path.name)
def test_each_shipped_declaration_names_the_schema_for_editors(declaration) -> None:
    first = declaration.read_text().splitlines()[0]
    prefix = "# yaml-language-server: $schema="
    assert first.startswith(prefix)
    assert (declaration.parent / first.removeprefix(prefix)).resolve() == PUBLISHED


@pytest.mark.parametrize("declaration", DECLARATIONS, ids=lambda path: path.name)
def test_the_schema_accepts_each_shipped_declaration(declaration) -> None:
    jsonschema.validate(yaml.safe_load(declaration.read_text()), json.loads(PUBLISHED.read_text()))


def test_the_schema_refuses_an_unknown_key() -> None:
    declaration = yaml.safe_load((SHIPPED / "orders.yml").read_text())
    declaration["join"]["grace_ms"] = 1000
    with pytest.raises(jsonschema.ValidationError, match="'grace_ms' was unexpected"):
        jsonschema.validate(declaration, json_schema())

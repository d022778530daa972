"""The declaration's JSON Schema, generated from the model: docs/pipeline.schema.json, which
each declaration names on its first line so an editor checks it as it is typed.

Regenerate it with ``python -m boardstream.pipelines.json_schema > docs/pipeline.schema.json``
(a unit test fails while it is stale).
"""

from __future__ import annotations

import json
from typing import Any

from boardstream.pipelines.model import Pipeline

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def json_schema() -> dict[str, Any]:
    return {"$schema": DIALECT, **Pipeline.model_json_schema()}


def text() -> str:
    return json.dumps(json_schema(), indent=2) + "\n"


if __name__ == "__main__":
    print(text(), end="")

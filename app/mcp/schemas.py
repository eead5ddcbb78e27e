"""Checking what a tool returned against what it promised (outputSchema). Pure: the console and the lint share it."""

from __future__ import annotations

from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError, ValidationError


def validate_structured(tool: dict[str, Any] | None, result: dict[str, Any] | None) -> dict[str, Any] | None:
    """None when there is nothing to check; else {"valid": bool, "message": str}.

    Network $refs are never fetched: jsonschema resolves only what is inside the schema.
    """
    if tool is None or result is None or not isinstance(tool.get("outputSchema"), dict):
        return None
    if result.get("resultType", "complete") != "complete" or result.get("isError") is True:
        return None
    if "structuredContent" not in result:
        return {"valid": False, "message": "The tool declares an outputSchema but sent no structuredContent."}
    try:
        schema = tool["outputSchema"]
        validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator_cls(schema).validate(result["structuredContent"])
    except ValidationError as exc:
        path = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return {"valid": False, "message": f"structuredContent does not match outputSchema at {path}: {exc.message}"}
    except SchemaError as exc:
        return {"valid": False, "message": f"The tool's outputSchema is not a valid schema: {exc.message}"}
    except Exception as exc:  # a remote $ref or an exotic keyword: say so instead of crashing the page
        return {"valid": False, "message": f"Could not check structuredContent: {exc}"}
    return {"valid": True, "message": "structuredContent matches outputSchema."}

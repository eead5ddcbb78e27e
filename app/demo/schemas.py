"""Hand-written elicitation schemas used by the demo's MRTR tools, prompts and resources.

They are plain dicts on purpose: the SDK renders pydantic models through its own schema
generator, which cannot express every spec shape (legacy `enumNames`, titled multi-select
`anyOf`, per-field formats) and would coerce answers on the way back. The profile form
exercises every `PrimitiveSchemaDefinition` kind the 2026-07-28 spec allows so a client's
form renderer can be checked field by field.
"""

from __future__ import annotations

from typing import Any

# Every field kind from spec section "Elicitation / form mode". Titles are present on all
# fields except `nickname`, so a renderer's fall-back-to-the-property-name path is exercised.
PROFILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        # StringSchema with length bounds.
        "name": {
            "type": "string",
            "title": "Full name",
            "description": "How should we address you? 2 to 40 characters.",
            "minLength": 2,
            "maxLength": 40,
        },
        # StringSchema with each of the four allowed formats.
        "email": {
            "type": "string",
            "title": "Email address",
            "format": "email",
            "description": "We will never send you anything; this is a demo.",
        },
        "homepage": {
            "type": "string",
            "title": "Homepage",
            "format": "uri",
            "default": "https://example.com/",
        },
        "birthday": {
            "type": "string",
            "title": "Birthday",
            "format": "date",
        },
        "next_meeting": {
            "type": "string",
            "title": "Next meeting",
            "format": "date-time",
            "description": "An RFC 3339 timestamp.",
        },
        # NumberSchema (type number) with bounds.
        "height_m": {
            "type": "number",
            "title": "Height (m)",
            "minimum": 0.5,
            "maximum": 2.5,
            "description": "Metres, decimals allowed.",
        },
        # NumberSchema (type integer) with bounds and a default.
        "age": {
            "type": "integer",
            "title": "Age",
            "minimum": 0,
            "maximum": 150,
            "default": 30,
        },
        # BooleanSchema with a default.
        "subscribe": {
            "type": "boolean",
            "title": "Subscribe to the newsletter",
            "default": True,
        },
        # UntitledSingleSelectEnumSchema.
        "color": {
            "type": "string",
            "title": "Favourite colour",
            "enum": ["red", "green", "blue"],
            "default": "green",
        },
        # TitledSingleSelectEnumSchema.
        "size": {
            "type": "string",
            "title": "T-shirt size",
            "oneOf": [
                {"const": "s", "title": "Small"},
                {"const": "m", "title": "Medium"},
                {"const": "l", "title": "Large"},
            ],
            "default": "m",
        },
        # LegacyTitledEnumSchema (enumNames) - still in 2026-07-28, slated for removal.
        "tier": {
            "type": "string",
            "title": "Plan",
            "enum": ["free", "pro"],
            "enumNames": ["Free tier", "Pro tier"],
            "description": "Legacy enumNames labels.",
        },
        # UntitledMultiSelectEnumSchema with item-count bounds.
        "tags": {
            "type": "array",
            "title": "Tags",
            "description": "Pick one to three.",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["alpha", "beta", "gamma", "delta"]},
            "default": ["alpha"],
        },
        # TitledMultiSelectEnumSchema.
        "toppings": {
            "type": "array",
            "title": "Pizza toppings",
            "items": {
                "anyOf": [
                    {"const": "cheese", "title": "Extra cheese"},
                    {"const": "mushroom", "title": "Mushrooms"},
                    {"const": "olive", "title": "Olives"},
                ]
            },
        },
        # Deliberately untitled: the label must fall back to "nickname".
        "nickname": {
            "type": "string",
            "description": "No title on purpose: clients should label this field with its name.",
        },
    },
    "required": ["name", "email", "age", "color"],
}

LINK_URL = "https://example.com/demo-auth?step=1"

GUARDED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {
            "type": "string",
            "title": "Why do you need the guarded resource?",
            "minLength": 3,
        },
    },
    "required": ["reason"],
}

PROMPT_CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "proceed": {
            "type": "boolean",
            "title": "Build this prompt?",
            "default": True,
        },
    },
    "required": ["proceed"],
}

COLOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "color": {
            "type": "string",
            "title": "Favourite colour",
            "enum": ["red", "green", "blue"],
        },
    },
    "required": ["color"],
}


def more_schema(round_no: int) -> dict[str, Any]:
    """The tiny form `always_more` sends every round; the round number shows in the title."""
    return {
        "type": "object",
        "properties": {
            "note": {
                "type": "string",
                "title": f"Round {round_no}: anything to add?",
            },
        },
    }

"""Sizes of the huge forms in tools_forms.py, importable without that module (it raises the recursion limit to
encode its deep schema, which changes what the stdlib's JSON decoder reads in the process that imports it)."""

HUGE = 3000  # fields of huge_schema and of each ask_huge question
ASKED = 64  # questions ask_huge asks by default

"""Tools whose names are written to break out of a copied command: each says back the bytes of the request as
they arrived (as `wire_echo` does), so a test can hold what a copied cURL sent beside what the console sent.

- `PASTE_NAME`: a quote, then DEL. Pasted into a shell that reads it as typed keys (no bracketed paste), DEL
  rubs out the quote that reopens the string after an escaped `'`, and what follows runs as a command.
- `SHELL_NAME`: `$(...)`, backticks, a newline-ish C1 control, a bidi override and non-ASCII text.
"""

from __future__ import annotations

from tests.hostile.target import Tool
from tests.hostile.tools_wire import wire_echo

RAN = "PWNED-BY-A-TOOL-NAME"  # what the shell prints if it ran the name's command: $((6*7)) reads 42 then
PASTE_NAME = "paste'\x7f; echo $((6*7))" + RAN + " #"
SHELL_NAME = "shell $(echo $((6*7))" + RAN + ") `echo " + RAN + "` \u009b31m \u202eexe.pdf caf\u00e9"

TOOLS = [
    Tool(PASTE_NAME, wire_echo, {"description": "Says back the request's bytes; its name rubs out a quote."}),
    Tool(SHELL_NAME, wire_echo, {"description": "Says back the request's bytes; its name holds shell syntax."}),
]

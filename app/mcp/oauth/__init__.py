"""OAuth 2.1 for protected MCP servers (the 2026-07-28 `basic/authorization` pages, and 2025-11-25's).

- `challenge`: the `WWW-Authenticate: Bearer` challenge of a 401 or 403, parsed;
- `urls`: the canonical resource URI (RFC 8707) and the discovery URL orders (RFC 9728, RFC 8414, OIDC);
- `grant`: what a flow leaves behind (a registered client, a token grant) and a JWT decoded for showing;
- `machine`: the flow itself, sans I/O: discovery, registration, authorization, token, refresh, step-up;
- `driver`: the I/O that runs the machine's commands for the console and the command line alike.
"""

"""The web layer: FastAPI routes, security, templating and the websocket feed."""

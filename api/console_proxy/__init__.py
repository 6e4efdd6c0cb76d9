"""``tristate-console-proxy``: serial consoles over WebSocket (issue 24)."""

"""hypatia-lite: a Hypatia-compatible store on SQLite + FTS5 with the same CLI and MCP."""

"""The interfaces: CLI, MCP server, web view and HTTP API, client installers
and the demo. They call the public API only."""

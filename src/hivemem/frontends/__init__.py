"""The front ends: the CLI, the MCP server, the HTTP API and the demo. They only translate;
the tool table (``hivemem.tools``) and the Mem0 adapter (``hivemem.compat``) are front ends
too, kept at the package root because their import paths are public."""

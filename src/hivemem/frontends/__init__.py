"""The front ends: CLI, MCP, HTTP, the tool table and the Mem0 adapter. They only translate."""

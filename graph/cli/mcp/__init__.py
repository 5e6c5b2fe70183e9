"""`engram mcp`: a user's memories served to MCP clients (desktop assistants, IDEs) over stdio or
streamable HTTP: the command (`command`), and the server with its tools (`server`), which
loads the MCP SDK only when the command runs."""

"""The `create_agent` agent the deployment test serves beside the graph, as an app would deploy
one: engram's middleware and memory tools, its model named by `ENGRAM_AGENT_MODEL`."""

from langchain.agents import create_agent

from engram.graph import Context, EngramMiddleware, memory_tools
from engram.graph.models import load_studio_model

agent = create_agent(
    load_studio_model("ENGRAM_AGENT_MODEL"),
    tools=memory_tools(),
    middleware=[EngramMiddleware()],
    context_schema=Context,
)

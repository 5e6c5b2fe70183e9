"""deploy/compose.yaml stays in step with what engram runs against.

No Docker engine runs on the project's machines, so the services of the compose file are tested
through their own binaries (`chroma run`, PostgreSQL's `initdb`/`pg_ctl`: tests/graph/test_scale_out.py);
this file checks that the compose file describes those same services.
"""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text(encoding="utf-8"))
DEPLOYMENT = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")


def test_the_chroma_server_image_is_the_installed_client_version():
    image = COMPOSE["services"]["chroma"]["image"]
    assert image == f"chromadb/chroma:{version('chromadb')}", (
        "the Chroma server in deploy/compose.yaml must run the chromadb version engram installs"
    )


def test_the_documented_urls_reach_the_compose_services():
    postgres = COMPOSE["services"]["postgres"]
    env = postgres["environment"]
    url = re.search(r"ENGRAM_POSTGRES_URL=postgresql://(\w+):\S*@[\w.-]+:(\d+)/(\w+)", DEPLOYMENT)
    assert url is not None, "docs/deployment.md must show ENGRAM_POSTGRES_URL for the services host"
    user, port, database = url.groups()
    assert (user, database) == (env["POSTGRES_USER"], env["POSTGRES_DB"])
    assert f"{port}:5432" in postgres["ports"]
    chroma_port = re.search(r"ENGRAM_CHROMA_URL=http://[\w.-]+:(\d+)", DEPLOYMENT)
    assert chroma_port is not None, "docs/deployment.md must show ENGRAM_CHROMA_URL for the services host"
    assert f"{chroma_port.group(1)}:8000" in COMPOSE["services"]["chroma"]["ports"]


def test_the_database_password_is_never_a_default():
    password = COMPOSE["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"]
    assert password.startswith("${") and ":?" in password, (
        "compose must refuse to start without ENGRAM_POSTGRES_PASSWORD, not ship a default"
    )

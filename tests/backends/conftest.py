"""The backend tests' real servers (tests/fixtures/servers.py)."""

from tests.fixtures.servers import python_server, start_llama_server  # noqa: F401  (fixtures)

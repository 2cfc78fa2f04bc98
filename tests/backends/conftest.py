"""The backend tests' real servers (tests/servers.py)."""

from tests.servers import python_server, start_llama_server  # noqa: F401  (fixtures)

"""Models and backends in the window: the models on this computer, the hub, servers, the engine settings, status."""

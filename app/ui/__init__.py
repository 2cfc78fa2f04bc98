"""Chorus's Qt window: panes, the engine bridge, the stats panel. Reaches the engine only via app.engine."""

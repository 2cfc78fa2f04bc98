"""Headless entry points (`python -m app run`), built on app.session and app.backends, never on app.ui."""

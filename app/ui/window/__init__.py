"""The main window: its actions and menus, its docks, the File menu's work, the status bar."""
